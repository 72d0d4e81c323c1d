package flock_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ptojit/ptojit/filesys/flock"
)

func TestOpenModeAndNoFollow(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lock")
	f, err := flock.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new lock file: %v %v, want mode 0600", fi.Mode(), err)
	}
	// An older lock file of mode 0644 is narrowed.
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(old, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err = flock.Open(old)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, _ := os.Stat(old); fi.Mode().Perm() != 0o600 {
		t.Fatalf("old lock file kept mode %v", fi.Mode())
	}
	// A symbolic link is refused, and its target is neither created nor
	// opened.
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, err := flock.Open(link); err == nil {
		f.Close()
		t.Fatal("a symbolic link was opened")
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the link's target was created: %v", err)
	}
	if _, err := flock.OpenExisting(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenExisting of a missing file: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if f, err := flock.Open(filepath.Join(dir, "d")); err == nil {
		f.Close()
		t.Fatal("a directory was opened as a lock file")
	}
}

func TestTryLockConflicts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, err := flock.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := flock.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := flock.TryLock(a, syscall.LOCK_SH); !ok || err != nil {
		t.Fatalf("shared: %v %v", ok, err)
	}
	if ok, err := flock.TryLock(b, syscall.LOCK_SH); !ok || err != nil {
		t.Fatalf("second shared: %v %v", ok, err)
	}
	if err := flock.Unlock(b); err != nil {
		t.Fatal(err)
	}
	if ok, err := flock.TryLock(b, syscall.LOCK_EX); ok || err != nil {
		t.Fatalf("exclusive while shared is held: %v %v, want false, nil", ok, err)
	}
	if err := flock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if ok, err := flock.TryLock(b, syscall.LOCK_EX); !ok || err != nil {
		t.Fatalf("exclusive once free: %v %v", ok, err)
	}
	if err := flock.Lock(a, syscall.LOCK_SH|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("LOCK_NB against an exclusive lock: %v", err)
	}
}
