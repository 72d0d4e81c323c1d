package toolchain

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ptojit/ptojit/inventory"
)

// Build policy
//
// Under PolicyBuild a component's evidence is PyPTO's:
//
//	{"reported_version": digest(("build-identity-v1", epoch, value))}
//
// epoch None when PYPTO_CACHE_EPOCH is unset, else its value, and value
// the component's record as PyPTO's _build_identity builds it (see
// doc.go). A component for which PyPTO would have no identity because
// ptojit's installation lacks what PyPTO reads (no native extension, no
// runtime revision, an unverified PTO-ISA pin, a ptoas launcher that is
// a shell script) is identified by its contents instead: value
// ("ptojit-content", content digest).

// ntGNUBuildID is the note type of a GNU build-id.
const ntGNUBuildID = 3

// buildSpec is what resolution found for the build policy: key describes
// the selection (for the memo), read computes the value from the files,
// calling before with each directory it reads from. A record with digests
// over paths is read by readRecord instead, which also says how to
// compute them again (see RelocatedBuildDigest).
type buildSpec struct {
	key        inventory.Value
	read       func(before func(string) error) (inventory.Value, string)
	readRecord func(before func(string) error) (buildRecord, string)
}

// record reads the build record of s.
func (s *buildSpec) record(before func(string) error) (buildRecord, string) {
	if s.readRecord != nil {
		return s.readRecord(before)
	}
	v, reason := s.read(before)
	return buildRecord{value: v}, reason
}

// buildIdentity is the build-policy identity of one component.
func buildIdentity(name string, ci ComponentInputs, in *ToolchainInputs, before func(string) error) ComponentIdentity {
	out, rec := buildValue(name, ci, before)
	if out.Unavailable != "" {
		return out
	}
	return withEpoch(out, in, rec)
}

// withEpoch completes out, the result of buildValue, with the reported
// version of rec's value under in's epoch: the only part of a
// build-policy identity that depends on the epoch.
func withEpoch(out ComponentIdentity, in *ToolchainInputs, rec *buildRecord) ComponentIdentity {
	rv, err := ReportedBuild(in.Epoch, in.EpochSet, rec.value)
	if err != nil {
		out.Unavailable = "build record has no identity: " + err.Error()
		return out
	}
	out.Record = recordOf(rec.value)
	out = finish(out, inventory.Dict{"reported_version": inventory.Str(rv)})
	if out.Unavailable == "" {
		out.build = rec
	}
	return out
}

// recordOf says whose record value is: ptojit's when it is the content
// fallback or a list of compiler records (the device toolchain) holding a
// clang record, else PyPTO's.
func recordOf(value inventory.Value) string {
	tag := func(v inventory.Value) inventory.Value {
		if t, ok := v.(inventory.Tuple); ok && len(t) > 0 {
			return t[0]
		}
		return nil
	}
	if tag(value) == inventory.Str(RecordContents) {
		return RecordContents
	}
	if l, ok := value.(inventory.List); ok {
		for _, v := range l {
			if tag(v) == inventory.Str(RecordClang) {
				return RecordClang
			}
		}
	}
	return RecordPyPTO
}

// buildValue reads the value of one component's build-policy identity
// (the build record's, or the content fallback's), which no epoch enters;
// out carries its name, file count and, when there is no value, the
// reason.
func buildValue(name string, ci ComponentInputs, before func(string) error) (out ComponentIdentity, rec *buildRecord) {
	out = ComponentIdentity{Name: name}
	if before == nil {
		before = func(string) error { return nil }
	}
	// Each root directory is watched itself, so that renaming it away
	// drops what was read under it (the records read below watch the
	// directories they list).
	for _, r := range ci.Roots {
		if fi, err := os.Stat(r.Path()); err == nil && fi.IsDir() {
			if err := before(r.Path()); err != nil {
				out.Unavailable = "cannot watch " + r.Path() + ": " + err.Error()
				return out, nil
			}
		}
	}
	if ci.build != nil {
		r, reason := ci.build.record(before)
		if reason != "" {
			out.Unavailable = reason
			return out, nil
		}
		return out, &r
	}
	r, files, reason := contentFallback(ci, before)
	if reason != "" {
		out.Unavailable = reason
		return out, nil
	}
	out.Files = files
	return out, &r
}

// contentFallback is ("ptojit-content", hex of the roots' fingerprint or
// None, the reported version or None).
func contentFallback(ci ComponentInputs, before func(string) error) (buildRecord, int, string) {
	var version inventory.Value = inventory.None{}
	if ci.ReportedVersion != "" {
		version = inventory.StrFromOSBytes(ci.ReportedVersion)
	}
	if len(ci.Roots) == 0 {
		if ci.ReportedVersion == "" {
			return buildRecord{}, 0, "no evidence: no content inputs, revision or version"
		}
		return buildRecord{value: inventory.T(inventory.Str("ptojit-content"), inventory.None{}, version)}, 0, ""
	}
	content, err := inventory.FingerprintWith(ci.Roots, inventory.FingerprintOptions{BeforeDir: before})
	if err != nil {
		return buildRecord{}, 0, readFailure(err)
	}
	if content.Files == 0 {
		return buildRecord{}, 0, "empty inventory: its roots hold no file"
	}
	hex := content.Digest.String()
	rec := buildRecord{value: inventory.T(inventory.Str("ptojit-content"), inventory.Str(hex), version)}
	rec.addDigest(hex, contentDigest(hex, content.Roots))
	return rec, content.Files, ""
}

// fileRecord is NativeBuildID(path) as a value, after watchPath.
func fileRecord(path string, before func(string) error) (inventory.Value, error) {
	if err := watchPath(path, before); err != nil {
		return nil, err
	}
	e, err := NativeBuildID(path)
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

// optionalFile is fileRecord, or (None, None) for path "" (the pair
// PyPTO's records hold for a native file: its path and its evidence).
func optionalFile(path string, before func(string) error) (inventory.Value, inventory.Value, error) {
	if path == "" {
		return inventory.None{}, inventory.None{}, nil
	}
	rec, err := fileRecord(path, before)
	if err != nil {
		return nil, nil, err
	}
	return inventory.StrFromOSBytes(path), rec, nil
}

// sourcePackages is PyPTO's _python_package list [(root, digest)] for one
// package directory, or None when dir is "". The digest, which covers
// dir, is added to rec's digests.
func sourcePackages(dir string, before func(string) error, rec *buildRecord) (inventory.Value, error) {
	if dir == "" {
		return inventory.None{}, nil
	}
	if err := watchDirs(dir, before); err != nil {
		return nil, err
	}
	recs, err := PythonSourceRecords(dir)
	if err != nil {
		return nil, err
	}
	d := PythonSourcesDigest(dir, recs)
	rec.addDigest(d, sourcesDigest(d, dir, recs))
	return inventory.List{inventory.T(inventory.StrFromOSBytes(dir), inventory.Str(d))}, nil
}

// watchPath calls before, ahead of a read of the file path, with the
// directory that holds what path resolves to and with each directory that
// holds a symlink on the way (the first is path's own): a change in any of
// them (the file written or replaced, a link retargeted) then drops what
// the read is remembered by. A path that does not resolve has its own
// directory watched; its read reports the failure.
func watchPath(path string, before func(string) error) error {
	if !filepath.IsAbs(path) {
		return before(filepath.Dir(path))
	}
	dirs, err := inventory.SymlinkDirs(path)
	if err != nil {
		return before(filepath.Dir(path))
	}
	for _, d := range dirs {
		if err := before(d); err != nil {
			return err
		}
	}
	return nil
}

// watchDirs calls before with every directory under root, .git excluded,
// and watchPath with every symlink there that does not lead to a
// directory (a Python package's file may be one).
func watchDirs(root string, before func(string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return watchPath(p, before)
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" && p != root {
			return filepath.SkipDir
		}
		return before(p)
	})
}

// firstMatch returns the first sorted match of pattern under dir whose
// real path is a regular file, resolved as PyPTO's
// Path.resolve(strict=True); "" when none.
func firstMatch(dir, pattern string) string {
	ms, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, m := range ms {
		real, err := filepath.EvalSymlinks(m)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
			abs, err := filepath.Abs(real)
			if err == nil {
				return abs
			}
		}
	}
	return ""
}

func errReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + errText(pe.Err)
	}
	return err.Error()
}
