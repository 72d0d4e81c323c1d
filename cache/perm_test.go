package cache

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenTightensModes opens a cache that an older version left readable
// by everyone: the directory becomes 0700 and its files 0600, and another
// user can read none of them.
func TestOpenTightensModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
			err = os.Chmod(p, 0o644)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in the store (%v)", err)
	}
	b, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, p := range append([]string{dir}, files...) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %04o, want nothing for group or others", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if os.Getuid() != 0 {
		return
	}
	// Another uid cannot read a file of the store, even with the way to
	// the cache directory open.
	for _, p := range []string{filepath.Dir(dir), filepath.Dir(filepath.Dir(dir))} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cat := exec.Command("cat", files[0])
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cat.CombinedOutput(); err == nil {
		t.Errorf("uid 65534 read %s: %q", files[0], out)
	}
}

// TestNewStoreFilesPrivate: the files Badger creates for a new store (its
// value log, memtable, discard stats, lock) are 0600 as soon as Open
// returns, not only from the next open on.
func TestNewStoreFilesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no files in the new store (%v)", err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %04o, want nothing for group or others", e.Name(), fi.Mode().Perm())
		}
	}
}
