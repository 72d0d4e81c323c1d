package toolchain

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/inventory"
)

// PythonSourceRecords returns what PyPTO's python_sources hashes under
// root: (path relative to root, sha256 hex) for every .py and .in file, in
// os.walk order with sorted names, skipping directories named __pycache__,
// .git and _assets. A symlinked directory, a file that changes while it is
// read, or no source at all is an error. root is used as given: its ".."
// components are left to the file system (seed 003), which may refuse
// them, and each file is read as root + "/" + its relative path.
func PythonSourceRecords(root string) (inventory.List, error) {
	var out inventory.List
	if err := walkSources(root, "", &out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("Python package has no sources: " + root)
	}
	return out, nil
}

// PythonSources returns digest((root, records)) as PyPTO's python_sources.
func PythonSources(root string) (string, error) {
	recs, err := PythonSourceRecords(root)
	if err != nil {
		return "", err
	}
	return PythonSourcesDigest(root, recs), nil
}

// PythonSourcesDigest is the digest of records found under base.
func PythonSourcesDigest(base string, recs inventory.List) string {
	return inventory.MustDigest(inventory.T(inventory.StrFromOSBytes(base), recs)).String()
}

// walkSources visits root/rel as os.walk visits it top-down: this
// directory's files first, then each kept subdirectory in name order. rel
// is "" for root itself, else slash-terminated; paths are joined without
// cleaning, so that ".." in root stays for the file system to resolve.
func walkSources(root, rel string, out *inventory.List) error {
	dir := joinRaw(root, rel)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var dirs, files []string
	for _, e := range ents {
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			fi, err := os.Stat(joinRaw(dir, e.Name()))
			isDir = err == nil && fi.IsDir()
		}
		if isDir {
			dirs = append(dirs, e.Name())
		} else {
			files = append(files, e.Name())
		}
	}
	dirs = slices.DeleteFunc(dirs, func(n string) bool { return n == "__pycache__" || n == ".git" || n == "_assets" })
	slices.Sort(dirs)
	for _, n := range dirs {
		if fi, err := os.Lstat(joinRaw(dir, n)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return errors.New("Python package has an unsupported directory symlink: " + joinRaw(dir, n))
		}
	}
	slices.Sort(files)
	for _, n := range files {
		if !strings.HasSuffix(n, ".py") && !strings.HasSuffix(n, ".in") {
			continue
		}
		sum, err := stableSHA256(joinRaw(dir, n))
		if err != nil {
			return err
		}
		*out = append(*out, inventory.T(inventory.StrFromOSBytes(rel+n), inventory.Str(sum)))
	}
	for _, n := range dirs {
		if err := walkSources(root, rel+n+"/", out); err != nil {
			return err
		}
	}
	return nil
}

// joinRaw joins dir and name with one slash, cleaning nothing (unlike
// filepath.Join, which would resolve ".." by its text).
func joinRaw(dir, name string) string {
	switch {
	case name == "":
		return dir
	case strings.HasSuffix(dir, "/"):
		return dir + name
	}
	return dir + "/" + name
}

// stableSHA256 hashes a file and fails when its device, inode, size, mtime
// or ctime differ before, after, or by path afterwards, as PyPTO checks.
func stableSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	after, err := f.Stat()
	if err != nil {
		return "", err
	}
	current, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if stamp(before) != stamp(after) || stamp(after) != stamp(current) {
		return "", errors.New("Python source changed while reading: " + p)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
