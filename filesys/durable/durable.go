// Package durable writes files so that a crash (power loss, kill -9) leaves
// either the old or the new content at the target name, never a mixture or
// an empty file, and so that a finished write survives the crash.
//
// WriteFile is the one durable write of ptojit:
//
//  1. create a temporary file in the target's directory, named
//     ".<base>.tmp-<random>" (a leading dot and the ".tmp-" infix, so no
//     reader of the directory mistakes it for a target),
//  2. write the data and fsync the file,
//  3. rename it over the target (atomic on POSIX file systems),
//  4. fsync the directory, so the rename itself is on disk.
//
// A failure at any step removes the temporary file; a crash can leave one
// behind, which CleanTemp removes (the stores call it when they open).
// Rename and Remove are the same operations for a name that already exists:
// the change, then an fsync of the directory (of both directories for a
// Rename between two).
//
// The package imports only the standard library. Its functions are safe for
// concurrent use on different targets; writers of one target must agree on
// an order among themselves (a lock).
package durable

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The steps of a write, in order, as a Seam sees them.
const (
	StepCreate    = "create"     // before the temporary file is created
	StepWrite     = "write"      // before the data is written
	StepSync      = "sync"       // before the temporary file is fsynced
	StepRename    = "rename"     // before the rename over the target
	StepSyncDir   = "sync-dir"   // before the directory is fsynced
	StepRemove    = "remove"     // before a Remove's unlink
	StepRenameOld = "rename-old" // before a Rename's rename
)

// Seam is called before each step of an operation with the operation's
// target path and the step's name. A non-nil error aborts the operation at
// that step as a crash would: nothing after it runs, not even the removal of
// the temporary file. It exists for tests (crash points); production code
// uses the zero FS, whose Seam is nil.
type Seam func(path, step string) error

// FS performs durable writes. The zero FS is ready to use.
type FS struct {
	// Seam, when set, is called before each step (see Seam).
	Seam Seam
}

func (d FS) at(path, step string) error {
	if d.Seam == nil {
		return nil
	}
	return d.Seam(path, step)
}

// WriteFile writes data to path durably with the permission bits perm (see
// the package doc).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return FS{}.WriteFile(path, data, perm)
}

// Rename renames oldpath to newpath durably.
func Rename(oldpath, newpath string) error { return FS{}.Rename(oldpath, newpath) }

// Remove removes path durably; a path that does not exist is no error.
func Remove(path string) error { return FS{}.Remove(path) }

// TempPrefix returns the prefix of the temporary files of target's
// writes: "." + base + ".tmp-".
func TempPrefix(target string) string { return "." + filepath.Base(target) + ".tmp-" }

// tempSuffixLen is the length of the random part of a temporary name:
// 8 bytes in lower-case hex.
const tempSuffixLen = 16

// IsTemp reports whether name (a base name) is a temporary file of this
// package: exactly "." + base + ".tmp-" + 16 lower-case hex digits, with a
// non-empty base. A user's file that merely looks alike (".notes.tmp-old",
// ".a.tmp-1") is not one, so CleanTemp never removes it.
func IsTemp(name string) bool {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok || len(rest) <= tempSuffixLen {
		return false
	}
	head, rnd := rest[:len(rest)-tempSuffixLen], rest[len(rest)-tempSuffixLen:]
	base, ok := strings.CutSuffix(head, ".tmp-")
	if !ok || base == "" {
		return false
	}
	for i := 0; i < len(rnd); i++ {
		if c := rnd[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// CreateTemp creates a new temporary file for a write of target, in
// target's directory, named as IsTemp expects (TempPrefix(target) and 16
// random lower-case hex digits), opened for writing with perm (less the
// umask). The caller writes it, renames it over target and removes it on
// failure; CleanTemp finds it when a crash left it behind.
func CreateTemp(target string, perm fs.FileMode) (*os.File, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	tmp := filepath.Join(filepath.Dir(target), TempPrefix(target)+hex.EncodeToString(rnd[:])) // tempSuffixLen digits
	return os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// WriteFile is the package's WriteFile through d's seam.
func (d FS) WriteFile(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := d.at(path, StepCreate); err != nil {
		return err
	}
	f, err := CreateTemp(path, perm)
	if err != nil {
		return fmt.Errorf("durable write of %s: %w", path, err)
	}
	tmp := f.Name()
	crashed := false
	defer func() {
		if err != nil && !crashed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	step := func(name string) error {
		if e := d.at(path, name); e != nil {
			crashed = true
			return e
		}
		return nil
	}
	if err := step(StepWrite); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("durable write of %s: %w", path, err)
	}
	// OpenFile applies the umask; the target gets exactly perm.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("durable write of %s: %w", path, err)
	}
	if err := step(StepSync); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("durable write of %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("durable write of %s: %w", path, err)
	}
	if err := step(StepRename); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("durable write of %s: %w", path, err)
	}
	if err := step(StepSyncDir); err != nil {
		return err
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("durable write of %s: %w", path, err)
	}
	return nil
}

// Rename is the package's Rename through d's seam.
func (d FS) Rename(oldpath, newpath string) error {
	if err := d.at(newpath, StepRenameOld); err != nil {
		return err
	}
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	if err := d.at(newpath, StepSyncDir); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(newpath)); err != nil {
		return err
	}
	if od := filepath.Dir(oldpath); od != filepath.Dir(newpath) {
		return SyncDir(od)
	}
	return nil
}

// Remove is the package's Remove through d's seam.
func (d FS) Remove(path string) error {
	if err := d.at(path, StepRemove); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := d.at(path, StepSyncDir); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// MkdirAll creates dir and its missing parents with perm and fsyncs every
// directory whose entries it changed.
func (d FS) MkdirAll(dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := d.MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

// SyncDir fsyncs a directory, so that the creations, renames and removals
// of its entries are on disk.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync of directory %s: %w", dir, err)
	}
	return nil
}

// CleanTemp removes the temporary files a crashed write left in dir and
// returns their names.
func CleanTemp(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if e.Type().IsRegular() && IsTemp(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return removed, err
			}
			removed = append(removed, e.Name())
		}
	}
	if len(removed) > 0 {
		return removed, SyncDir(dir)
	}
	return nil, nil
}
