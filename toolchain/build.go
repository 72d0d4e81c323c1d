package toolchain

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"

	"github.com/ptojit/ptojit/inventory"
)

// Build policy
//
// Under PolicyBuild a component's evidence is {"build": B}, B a Dict with
//
//	"epoch"     Str   PYPTO_CACHE_EPOCH ("" when unset), always present
//	"revision"  Str   the verified revision, when there is one (roots unread)
//	"version"   Str   the reported version, when there is one
//	"roots"     List  one record per root, unless a revision covers them:
//	    ("git", path, head, [extra...])   a clean git checkout at HEAD head;
//	                                       extra lists its untracked ELF files
//	    ("tree", path, [entry...])         any other root
//	  entry = ("elf", rel, build_id_hex)   an ELF file with a GNU build-id
//	        | ("file", rel, size, sha256)  any other file
//	        | ("symlink", rel, target)     a symlink (not followed)
//
// A git checkout is dirty, and the component unavailable, when HEAD's tree,
// the index and the worktree's tracked files disagree, or when an untracked
// file is anything but an ELF file with a build-id or Python bytecode
// (__pycache__, .pyc, .pyo). Build-ids, revisions and versions are claims a
// build makes about itself; the policy trusts them to avoid reading large
// binaries and source trees.

// ntGNUBuildID is the note type of a GNU build-id.
const ntGNUBuildID = 3

// maxNoteBytes bounds the ELF note data read for a build-id.
const maxNoteBytes = 1 << 16

// buildIdentity is the build-policy identity of one component.
func buildIdentity(name string, ci ComponentInputs, epoch string, before func(string) error) ComponentIdentity {
	out := ComponentIdentity{Name: name}
	b := inventory.Dict{"epoch": inventory.StrFromOSBytes(epoch)}
	if ci.VerifiedRevision != "" {
		b["revision"] = inventory.Str(ci.VerifiedRevision)
	}
	if ci.ReportedVersion != "" {
		b["version"] = inventory.StrFromOSBytes(ci.ReportedVersion)
	}
	if ci.VerifiedRevision == "" && len(ci.Roots) > 0 {
		var roots inventory.List
		for _, r := range ci.Roots {
			rec, files, reason := buildRoot(r.Path(), before)
			if reason != "" {
				out.Unavailable = reason
				return out
			}
			out.Files += files
			roots = append(roots, rec)
		}
		b["roots"] = roots
	}
	if len(b) == 1 {
		out.Unavailable = "no evidence: no content inputs, revision or version"
		return out
	}
	return finish(out, inventory.Dict{"build": b})
}

// buildRoot returns the build-policy record of one root.
func buildRoot(root string, before func(string) error) (inventory.Value, int, string) {
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && fi.IsDir() {
		return sourceCheckout(root, before)
	}
	var entries inventory.List
	files := 0
	fi, err := os.Stat(root)
	if err != nil {
		return nil, 0, "root " + root + ": " + errText(err)
	}
	if !fi.IsDir() {
		e, reason := buildFile(root, "")
		if reason != "" {
			return nil, 0, reason
		}
		return inventory.T(inventory.Str("tree"), inventory.StrFromOSBytes(root), inventory.List{e}), 1, ""
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := relSlash(root, p)
		switch {
		case d.IsDir():
			if rel != "" && (d.Name() == ".git" || d.Name() == "__pycache__") {
				return filepath.SkipDir
			}
			if before != nil {
				return before(p)
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			entries = append(entries, inventory.T(inventory.Str("symlink"), inventory.StrFromOSBytes(rel), inventory.StrFromOSBytes(target)))
			return nil
		case isBytecode(d.Name()):
			return nil
		case !d.Type().IsRegular():
			return errors.New(rel + " is not a regular file")
		}
		e, reason := buildFile(p, rel)
		if reason != "" {
			return errors.New(reason)
		}
		entries = append(entries, e)
		files++
		return nil
	})
	if err != nil {
		return nil, 0, "root " + root + ": " + errText(err)
	}
	if len(entries) == 0 {
		// An empty required installation inventory is unavailable.
		return nil, 0, "empty inventory: root " + root + " holds no file"
	}
	return inventory.T(inventory.Str("tree"), inventory.StrFromOSBytes(root), entries), files, ""
}

// buildFile identifies one file by its build-id, else its content.
func buildFile(p, rel string) (inventory.Value, string) {
	f, err := os.Open(p)
	if err != nil {
		return nil, "cannot read " + rel + ": " + errText(err)
	}
	defer f.Close()
	if id := BuildID(f); id != nil {
		return inventory.T(inventory.Str("elf"), inventory.StrFromOSBytes(rel), inventory.Str(hex.EncodeToString(id))), ""
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, "cannot read " + rel + ": " + errText(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, "cannot read " + rel + ": " + errText(err)
	}
	return inventory.T(inventory.Str("file"), inventory.StrFromOSBytes(rel), inventory.IntOf(n), inventory.Str(hex.EncodeToString(h.Sum(nil)))), ""
}

// BuildID returns the GNU build-id of the ELF file r, or nil when r is not
// an ELF file or has none. It reads the note sections (else the PT_NOTE
// segments), not the whole file.
func BuildID(r io.ReaderAt) []byte {
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != elf.ELFMAG {
		return nil
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return nil
	}
	var readers []io.Reader
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE && s.Size <= maxNoteBytes {
			readers = append(readers, s.Open())
		}
	}
	if len(readers) == 0 {
		for _, p := range f.Progs {
			if p.Type == elf.PT_NOTE && p.Filesz <= maxNoteBytes {
				readers = append(readers, p.Open())
			}
		}
	}
	for _, rd := range readers {
		data, err := io.ReadAll(io.LimitReader(rd, maxNoteBytes))
		if err != nil {
			continue
		}
		if id := gnuBuildID(data, f.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

// gnuBuildID finds the NT_GNU_BUILD_ID note with owner "GNU" in note data.
func gnuBuildID(data []byte, order binary.ByteOrder) []byte {
	for len(data) >= 12 {
		namesz, descsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		data = data[12:]
		nlen, dlen := align4(uint64(namesz)), align4(uint64(descsz))
		if nlen > uint64(len(data)) || dlen > uint64(len(data))-nlen {
			return nil
		}
		name := data[:namesz]
		desc := data[nlen : nlen+uint64(descsz)]
		if typ == ntGNUBuildID && bytes.Equal(name, []byte("GNU\x00")) && len(desc) > 0 {
			return bytes.Clone(desc)
		}
		data = data[nlen+dlen:]
	}
	return nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

func relSlash(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// sourceCheckout identifies a git checkout by its HEAD when it is clean in
// the build policy's sense (see the comment above).
func sourceCheckout(root string, before func(string) error) (inventory.Value, int, string) {
	repo, err := git.PlainOpen(root)
	if err != nil {
		return nil, 0, "source checkout " + root + ": " + err.Error()
	}
	head, err := repo.Head()
	if err != nil {
		return nil, 0, "source checkout " + root + ": cannot read HEAD: " + err.Error()
	}
	var extra inventory.List
	var mu sync.Mutex
	files := 0
	allow := func(rel, full string) string {
		base := rel[strings.LastIndexByte(rel, '/')+1:]
		if isBytecode(base) || strings.Contains("/"+rel, "/__pycache__/") {
			return ""
		}
		f, err := os.Open(full)
		if err != nil {
			return "cannot read " + rel + ": " + errText(err)
		}
		defer f.Close()
		id := BuildID(f)
		if id == nil {
			return "untracked file " + rel + " is not an ELF file with a build-id"
		}
		mu.Lock()
		extra = append(extra, inventory.T(inventory.Str("elf"), inventory.StrFromOSBytes(rel), inventory.Str(hex.EncodeToString(id))))
		files++
		mu.Unlock()
		return ""
	}
	check, err := checkWorktree(root, head.Hash().String(), before, allow)
	if err != nil {
		return nil, 0, err.Error()
	}
	if !check.Verified {
		return nil, 0, "dirty source checkout " + root + ": " + check.Reason
	}
	sortByRel(extra)
	return inventory.T(inventory.Str("git"), inventory.StrFromOSBytes(root), inventory.Str(head.Hash().String()), extra), files, ""
}

// sortByRel sorts ("elf", rel, id) records by rel: the parallel walk finds
// them in no particular order.
func sortByRel(l inventory.List) {
	rel := func(v inventory.Value) string { return string(v.(inventory.Tuple)[1].(inventory.Str)) }
	slices.SortFunc(l, func(a, b inventory.Value) int { return strings.Compare(rel(a), rel(b)) })
}

// isBytecode reports a file named as Python bytecode, by pathlib's suffix
// (inventory.Suffix): a file named ".pyc" is not bytecode.
func isBytecode(name string) bool {
	s := inventory.Suffix(name)
	return s == ".pyc" || s == ".pyo"
}
