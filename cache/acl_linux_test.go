package cache

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFilesCreatedLaterPrivate: under the usual umask 022, a file created in
// a store's directory after it opened (as Badger creates a table when it
// flushes a memtable or compacts) is 0600 from its creation, on a file
// system with POSIX ACLs (the default ACL of the directory), not only
// once tightenFiles runs.
func TestFilesCreatedLaterPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "c")
	b := open(t, dir, Options{})
	defer b.Close()
	if _, err := syscall.Getxattr(dir, "system.posix_acl_default", make([]byte, 64)); err != nil {
		t.Skipf("the file system of %s keeps no default ACL: %v", dir, err)
	}
	p := filepath.Join(dir, "000099.sst")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer os.Remove(p)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("a file created 0666 in the store's directory under umask 022 is %v, want 0600", fi.Mode().Perm())
	}
}
