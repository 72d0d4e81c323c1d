package toolchain

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/ptojit/ptojit/inventory"
)

// cannBuild is PyPTO's device record of a CANN platform: [the
// orchestration compiler's record, (ccec's real path, the build the
// installation states), (the linker's real path, its evidence)]. ccec is
// root/bin/ccec and the linker root/bin/ld.lld (else both under
// root/tools/bisheng_compiler/bin), as the runtime's CCEC toolchain
// selects them; the orchestration compiler is the host C++ compiler (CXX,
// else c++). nil when root is "" or holds ccec in neither place: such an
// installation is identified by its contents.
func cannBuild(cfg *Config, root string) *buildSpec {
	if root == "" {
		return nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil
	}
	bin := filepath.Join(abs, "bin")
	if _, err := os.Stat(filepath.Join(bin, "ccec")); err != nil {
		bin = filepath.Join(abs, "tools", "bisheng_compiler", "bin")
		if _, err := os.Stat(filepath.Join(bin, "ccec")); err != nil {
			return nil // not a layout the runtime selects ccec from
		}
	}
	ccec, linker := filepath.Join(bin, "ccec"), filepath.Join(bin, "ld.lld")
	cxx, reason := selectCompiler(cfg, "CXX", "c++")
	env := *cfg
	key := inventory.T(inventory.Str("cann"), inventory.StrFromOSBytes(ccec), inventory.StrFromOSBytes(cxx))
	return &buildSpec{key: key, read: func(before func(string) error) (inventory.Value, string) {
		if reason != "" {
			return nil, reason
		}
		orchestration, reason := compilerRecord(&env, cxx, before)
		if reason != "" {
			return nil, reason
		}
		entries, reason := cannEntries(ccec, linker, before)
		if reason != "" {
			return nil, reason
		}
		return append(inventory.List{orchestration}, entries...), ""
	}}
}

// cannEntries are the CANN entries of the device record: (ccec's real
// path, PyPTO's CANN build version) when ccec lies at
// <cann>/tools/bisheng_compiler/bin, and (the linker's real path, its
// evidence).
func cannEntries(ccec, linker string, before func(string) error) (inventory.List, string) {
	real, err := filepath.EvalSymlinks(ccec)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return nil, errReason(err)
	}
	bin := filepath.Dir(real)
	version := ""
	if filepath.Base(bin) == "bin" && filepath.Base(filepath.Dir(bin)) == "bisheng_compiler" &&
		filepath.Base(filepath.Dir(filepath.Dir(bin))) == "tools" {
		version = cannInstallVersion(filepath.Dir(filepath.Dir(filepath.Dir(bin))))
	}
	if version == "" {
		return nil, "CANN installation build version is unavailable: " + real
	}
	ld, err := filepath.EvalSymlinks(linker)
	if err == nil {
		ld, err = filepath.Abs(ld)
	}
	if err != nil {
		return nil, errReason(err)
	}
	rec, err := fileRecord(ld, before)
	if err != nil {
		return nil, errReason(err)
	}
	return inventory.List{
		inventory.T(inventory.StrFromOSBytes(real), inventory.StrFromOSBytes(version)),
		inventory.T(inventory.StrFromOSBytes(ld), rec),
	}, ""
}

// cannInstallVersion is the build a CANN installation states about itself
// as PyPTO reads it: the one <root>/*/ascend_toolkit_install.info (counted
// by the file it resolves to), its innerversion, else its version ("key =
// value" lines, the last of a key winning); "" when there is not exactly
// one such file or neither value.
func cannInstallVersion(root string) string {
	matches, _ := filepath.Glob(filepath.Join(root, "*", CannInfoFile))
	found := map[string]bool{}
	for _, m := range matches {
		real, err := filepath.EvalSymlinks(m)
		if err != nil {
			return ""
		}
		found[real] = true
	}
	if len(found) != 1 {
		return ""
	}
	var path string
	for p := range found {
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	fields := map[string]string{}
	for _, line := range strings.FieldsFunc(string(b), isLineBreak) {
		if k, v, ok := strings.Cut(line, "="); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if v := fields["innerversion"]; v != "" {
		return v
	}
	return fields["version"]
}

// isLineBreak reports the characters at which Python's str.splitlines
// breaks.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}
