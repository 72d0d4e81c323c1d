package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fullCloseChild names, in the environment of the test binary run by
// TestCloseOnFullDisk, the store directory its child fills and closes.
const fullCloseChild = "PTOJIT_TEST_FULL_CLOSE_DIR"

// fullCloseEntries is how many entries the child stores.
const fullCloseEntries = 20

// TestCloseOnFullDisk: a store whose file system filled up to 0 bytes
// free after it opened closes with an error naming the free space, not a
// SIGBUS in Badger's flush of its memtable (the child process that closes
// it exits normally); every file of the store is 0600; and the entries it
// stored are all there at the next open, once space is free again.
func TestCloseOnFullDisk(t *testing.T) {
	if dir := os.Getenv(fullCloseChild); dir != "" {
		fillAndClose(t, dir)
		return
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=128m,mode=0700"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs: %v (the test needs root)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "c")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCloseOnFullDisk$", "-test.v")
	cmd.Env = append(os.Environ(), fullCloseChild+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child that closed the store on a full disk: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "close on a full disk:") {
		t.Fatalf("the child did not close the store:\n%s", out)
	}
	t.Logf("%s", out)
	if err := os.Remove(filepath.Join(mnt, "ballast")); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir)
	b := open(t, dir, Options{})
	for i := range fullCloseEntries {
		if _, err := b.Get(ctx, key(fmt.Sprint(i))); err != nil {
			t.Errorf("entry %d after the full-disk close: %v", i, err)
		}
	}
}

// fillAndClose is TestCloseOnFullDisk's child: it stores entries in dir,
// fills its file system, and closes the store.
func fillAndClose(t *testing.T, dir string) {
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range fullCloseEntries {
		if err := b.Put(ctx, entry(key(fmt.Sprint(i)), 1), Readers(blob(fmt.Sprint(i), 100))); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(dir), "ballast"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for n := 4096; n > 0; n /= 2 { // the last pages
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	f.Close()
	err = b.Close()
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("close on a full disk: %v, want an error matching ErrNoSpace", err)
	}
	fmt.Printf("close on a full disk: %v\n", err)
	checkPrivate(t, dir)
}

// checkPrivate fails t for every file of dir that others could read.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
		return nil
	})
}
