package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// newStoreDir makes a store with one entry in a new directory and closes it.
func newStoreDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &Entry{Key: Key{1}, Record: []byte("r"), Outputs: []Output{{Name: "kernel_0.so", Mode: 0o644}}}
	if err := b.Put(context.Background(), e, Readers([]byte("kernel"))); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wantRefused checks that err is the refusal of path in dir.
func wantRefused(t *testing.T, err error, dir, path string) *OwnerError {
	t.Helper()
	var oe *OwnerError
	if !errors.As(err, &oe) || !errors.Is(err, ErrNotOwned) {
		t.Fatalf("err %v, want an *OwnerError", err)
	}
	if oe.Dir != dir || oe.Path != path {
		t.Fatalf("refused %s of %s, want %s of %s", oe.Path, oe.Dir, path, dir)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "uid "+strconv.Itoa(oe.UID)) {
		t.Errorf("message %q does not name %s and its owner", err, path)
	}
	for _, s := range []string{"chown", "chmod 700 " + dir, "remote tier"} {
		if !strings.Contains(Remedy(err), s) {
			t.Errorf("remedy %q does not say %q", Remedy(err), s)
		}
	}
	return oe
}

// TestOpenRefusesOtherUsersDir: a cache directory of another user (here
// the user is made another uid through testEUID) is refused by Open,
// read-only or not, and by Wipe, which removes nothing.
func TestOpenRefusesOtherUsersDir(t *testing.T) {
	dir := newStoreDir(t)
	me := os.Geteuid()
	testEUID = func() int { return me + 1 }
	t.Cleanup(func() { testEUID = nil })
	for _, ro := range []bool{false, true} {
		_, err := Open(dir, Options{ReadOnly: ro})
		oe := wantRefused(t, err, dir, dir)
		if oe.UID != me || oe.Want != me+1 {
			t.Errorf("owner %d, user %d: want %d and %d", oe.UID, oe.Want, me, me+1)
		}
	}
	before, _ := os.ReadDir(dir)
	if n, _, err := Wipe(dir); n != 0 || !errors.Is(err, ErrNotOwned) {
		t.Fatalf("Wipe: %d files, %v; want a refusal", n, err)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Fatalf("Wipe removed files: %d left of %d", len(after), len(before))
	}
}

// TestOpenRefusesWritableDir: a directory of the user that group or others
// can write (0777, 0775) is refused, and nothing in it is adopted: its mode
// and its files' modes stay as they were.
func TestOpenRefusesWritableDir(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o775, 0o757} {
		dir := newStoreDir(t)
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		seeded := filepath.Join(dir, "000001.vlog")
		if err := os.Chmod(seeded, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Options{})
		oe := wantRefused(t, err, dir, dir)
		if oe.Mode != mode {
			t.Errorf("mode %04o named, want %04o", oe.Mode, mode)
		}
		if !strings.Contains(err.Error(), "writable by group or others") {
			t.Errorf("message %q does not say why", err)
		}
		fi, _ := os.Stat(dir)
		si, _ := os.Stat(seeded)
		if fi.Mode().Perm() != mode || si.Mode().Perm() != 0o644 {
			t.Errorf("modes changed to %04o and %04o: the refused directory was adopted", fi.Mode().Perm(), si.Mode().Perm())
		}
	}
}

// TestOpenRefusesWritableFile: a file of the store that group or others
// can write is refused, by name.
func TestOpenRefusesWritableFile(t *testing.T) {
	dir := newStoreDir(t)
	p := filepath.Join(dir, "MANIFEST")
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	wantRefused(t, err, dir, p)
}

// TestOpenAcceptsOwnDir: the user's own store, 0755 as an older version
// left it, with a daemon directory whose files the user's umask made
// group-writable, opens (and is tightened to 0700).
func TestOpenAcceptsOwnDir(t *testing.T) {
	dir := newStoreDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, "daemon")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "daemon.log"), nil, 0o664); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(d, "daemon.log"), 0o664)
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %04o, want 0700", fi.Mode().Perm())
	}
	if err := CheckOwned(filepath.Join(t.TempDir(), "absent")); err != nil {
		t.Errorf("a directory that does not exist: %v", err)
	}
}

// TestOpenRefusesOtherUsersFile: in the user's own 0700 directory, a file
// another uid owns (left there before the directory was tightened), or a
// link to one, is refused. Needs root to give a file away.
func TestOpenRefusesOtherUsersFile(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI must run this test as root")
		}
		t.Skip("needs root to chown a file to another uid")
	}
	dir := newStoreDir(t)
	p := filepath.Join(dir, "000001.vlog")
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if oe := wantRefused(t, err, dir, p); oe.UID != 65534 {
		t.Errorf("owner %d named, want 65534", oe.UID)
	}
	if err := os.Chown(p, 0, 0); err != nil {
		t.Fatal(err)
	}
	// A link of the user's to another user's file.
	foreign := filepath.Join(t.TempDir(), "foreign")
	if err := os.WriteFile(foreign, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "KEYREGISTRY")
	os.Remove(link)
	if err := os.Symlink(foreign, link); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{})
	wantRefused(t, err, dir, link)
}

// TestStoreFilesPrivateAfterClose: the tables Close writes (the memtables
// flushed after the flusher's last pass) are 0600 too, under the usual
// umask 022.
func TestStoreFilesPrivateAfterClose(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := newStoreDir(t)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sst := 0
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".sst") {
			sst++
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if sst == 0 {
		t.Fatal("Close wrote no table: the test checks nothing")
	}
}
