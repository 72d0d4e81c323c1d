package cache

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyFileSystem: a store on a file system remounted read-only
// opens read-only, serves its hits, and refuses writes with an error that
// names the cause, so that the warning names the remedy.
func TestReadOnlyFileSystem(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=128m,mode=0700"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs: %v (the test needs root)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "c")
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := blob("a", 100)
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	b = open(t, dir, Options{})
	if _, err := b.Get(ctx, key("a")); err != nil {
		t.Fatalf("Get = %v", err)
	}
	err = b.Put(ctx, entry(key("b"), 1), Readers(d))
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Put = %v, want ErrReadOnly and EROFS", err)
	}
	if w := StoreWarning(dir, err); !strings.Contains(w, EnvReadOnly+"=1") {
		t.Fatalf("warning %q does not name %s", w, EnvReadOnly)
	}
}
