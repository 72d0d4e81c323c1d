package toolchain

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/inventory"
)

// PythonSourceRecords returns what PyPTO's python_sources hashes under
// root: (path relative to root, sha256 hex) for every .py and .in file, in
// os.walk order with sorted names, skipping directories named __pycache__,
// .git and _assets. A symlinked directory, a file that changes while it is
// read, or no source at all is an error.
func PythonSourceRecords(root string) (inventory.List, error) {
	var out inventory.List
	if err := walkSources(root, root, &out); err != nil {
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

// walkSources visits dir as os.walk visits it top-down: this directory's
// files first, then each kept subdirectory in name order.
func walkSources(base, dir string, out *inventory.List) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var dirs, files []string
	for _, e := range ents {
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
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
		if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return errors.New("Python package has an unsupported directory symlink: " + dir + "/" + n)
		}
	}
	slices.Sort(files)
	for _, n := range files {
		if !strings.HasSuffix(n, ".py") && !strings.HasSuffix(n, ".in") {
			continue
		}
		p := filepath.Join(dir, n)
		sum, err := stableSHA256(p)
		if err != nil {
			return err
		}
		*out = append(*out, inventory.T(inventory.StrFromOSBytes(p[len(base)+1:]), inventory.Str(sum)))
	}
	for _, n := range dirs {
		if err := walkSources(base, filepath.Join(dir, n), out); err != nil {
			return err
		}
	}
	return nil
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
