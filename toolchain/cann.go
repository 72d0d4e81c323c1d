package toolchain

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ptojit/ptojit/inventory"
)

// CannInfoFile is the name of the file in which a CANN toolkit states its
// build.
const CannInfoFile = "ascend_toolkit_install.info"

// maxInfoFile bounds the size of an info file worth parsing.
const maxInfoFile = 64 << 10

// resolveCann identifies a CANN installation: by the innerversion (else
// version) of the one info file its root reaches, or, when anything about
// that is unexpected, by every file of the root. Declared roots are read in
// every case, and so are the host-side files the compiler driver ccec
// loads from outside the installation (see ccecHostRoots): the version
// covers the installation's own files, never the host's.
func resolveCann(ctx context.Context, cfg *Config) ComponentInputs {
	root := cfg.CannRoot
	if root == "" {
		root = cfg.getenv(CannRootEnv)
	}
	if root == "" {
		return Unavailable("no CANN root: set " + rootHint("--cann-root", CannRootEnv))
	}
	ci := rootInputs(root, "CANN", "--cann-root")
	if ci.UnavailableReason != "" {
		return ci
	}
	declared, reason := declaredRoots(cfg.DeviceRoots)
	if reason != "" {
		return Unavailable(reason)
	}
	host, reason := ccecHostRoots(ctx, cfg, root)
	if reason != "" {
		return Unavailable(reason)
	}
	declared = append(declared, host...)
	version, why := CannVersion(root)
	if version == "" {
		ci.Roots = append(ci.Roots, declared...)
		ci.FallbackReason = why
		return proven(ci)
	}
	return proven(ComponentInputs{Roots: declared, ReportedVersion: version})
}

// ccecCandidates are where a CANN installation keeps its compiler driver,
// relative to its root; "*" matches the <arch>-linux directories.
var ccecCandidates = []string{
	"compiler/ccec_compiler/bin/ccec",
	"compiler/bin/ccec",
	"*-linux/ccec_compiler/bin/ccec",
	"bin/ccec",
}

// FindCcec returns the ccec driver of the installation at root: the first
// executable candidate under it, else ccec on the compilation path's PATH.
func FindCcec(cfg *Config, root string) (string, error) {
	for _, c := range ccecCandidates {
		matches, _ := filepath.Glob(filepath.Join(root, c))
		sort.Strings(matches)
		for _, m := range matches {
			if isExecutableFile(m) {
				return filepath.Abs(m)
			}
		}
	}
	p, err := lookPath(cfg, "ccec")
	if err != nil {
		return "", errors.New("no ccec compiler in the CANN installation (" + strings.Join(ccecCandidates, ", ") + ") or on PATH")
	}
	return p, nil
}

// ccecHostRoots discovers the files ccec loads from the host, asking the
// driver exactly as the sim platforms ask gcc (ProbeHostCompiler: the
// programs it runs, its search and include directories, its link inputs,
// and the shared libraries ldd lists for it and its programs), and
// returns those that lie outside the installation root. A driver that
// cannot be found or probed, or a tool resolution variable set, makes the
// component unavailable: what it loads cannot be accounted for.
func ccecHostRoots(ctx context.Context, cfg *Config, root string) ([]inventory.ContentRoot, string) {
	ccec, err := FindCcec(cfg, root)
	if err != nil {
		return nil, err.Error()
	}
	for _, v := range ToolResolutionVars {
		if cfg.getenv(v) != "" {
			return nil, v + " is set: the tool resolution of ccec cannot be accounted for"
		}
	}
	hc, err := ProbeHostCompiler(ctx, cfg, ccec, ccec)
	if err != nil {
		return nil, "ccec: " + err.Error()
	}
	roots, reason := hc.roots()
	if reason != "" {
		return nil, "ccec: " + reason
	}
	resRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, "CANN root: " + errText(err)
	}
	var out []inventory.ContentRoot
	for _, r := range roots {
		res, err := filepath.EvalSymlinks(r.Path())
		if err != nil {
			return nil, "ccec input " + r.Path() + ": " + errText(err)
		}
		if !within(res, resRoot) {
			out = append(out, r)
		}
	}
	return out, ""
}

func declaredRoots(paths []string) ([]inventory.ContentRoot, string) {
	var out []inventory.ContentRoot
	for _, p := range paths {
		r, err := inventory.NewContentRoot(p, false)
		if err != nil {
			return nil, "declared device root: " + err.Error()
		}
		out = append(out, r)
	}
	return out, ""
}

// cannArchDirs are the directories below a CANN root that may hold its
// info file, besides the root itself: the documented install layouts.
var cannArchDirs = []string{"x86_64-linux", "aarch64-linux", "arm64-linux"}

// CannVersion returns "innerversion=<v>" (or "version=<v>" when the file
// has no innerversion key) from the one ascend_toolkit_install.info that
// root reaches: root/ascend_toolkit_install.info or
// root/{x86_64,aarch64,arm64}-linux/…, candidates counted by the file they
// resolve to, so the arm64-linux symlink to aarch64-linux is one
// candidate. Otherwise it returns "" and why: no info file, two distinct
// ones, one in an unrecognised install layout (any other *-linux
// directory), an unreadable or unparsable one, or an empty value (an
// innerversion key with no value counts, even beside a version).
func CannVersion(root string) (version, reason string) {
	cands := []string{filepath.Join(root, CannInfoFile)}
	for _, d := range cannArchDirs {
		cands = append(cands, filepath.Join(root, d, CannInfoFile))
	}
	others, _ := filepath.Glob(filepath.Join(root, "*-linux", CannInfoFile))
	sort.Strings(others)
	for _, o := range others {
		if !slices.Contains(cannArchDirs, filepath.Base(filepath.Dir(o))) {
			return "", "unrecognised install layout: " + filepath.Base(filepath.Dir(o)) + "/" + CannInfoFile
		}
	}
	var files []os.FileInfo
	var paths []string
	for _, c := range cands {
		fi, err := os.Stat(c)
		if err != nil {
			continue
		}
		if !fi.Mode().IsRegular() {
			return "", "unrecognised install layout: " + CannInfoFile + " is not a regular file"
		}
		dup := false
		for _, f := range files {
			if os.SameFile(f, fi) {
				dup = true
			}
		}
		if !dup {
			files = append(files, fi)
			paths = append(paths, c)
		}
	}
	switch len(files) {
	case 0:
		return "", "no " + CannInfoFile
	case 1:
	default:
		return "", "more than one distinct " + CannInfoFile
	}
	f, err := os.Open(paths[0])
	if err != nil {
		return "", CannInfoFile + ": " + errText(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInfoFile+1))
	if err != nil {
		return "", CannInfoFile + ": " + errText(err)
	}
	if len(b) > maxInfoFile {
		return "", CannInfoFile + " is too large"
	}
	info, err := ParseCannInfo(b)
	if err != nil {
		return "", CannInfoFile + ": " + err.Error()
	}
	if v, ok := info["innerversion"]; ok {
		if v == "" {
			return "", CannInfoFile + ": empty innerversion"
		}
		return "innerversion=" + v, ""
	}
	if v, ok := info["version"]; ok {
		if v == "" {
			return "", CannInfoFile + ": empty version"
		}
		return "version=" + v, ""
	}
	return "", CannInfoFile + " has no innerversion or version"
}

// ParseCannInfo parses the key=value lines of an ascend_toolkit_install.info
// file. Blank lines and lines starting with # are skipped; keys and values
// are trimmed of spaces, and one pair of matching quotes around a value is
// removed. A line without "=", an empty key, a NUL byte, or a key given
// twice with different values is an error.
func ParseCannInfo(b []byte) (map[string]string, error) {
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, errors.New("binary content")
	}
	out := map[string]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, errors.New("line without '='")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" {
			return nil, errors.New("empty key")
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		if old, dup := out[k]; dup && old != v {
			return nil, errors.New("key " + k + " given twice")
		}
		out[k] = v
	}
	return out, nil
}
