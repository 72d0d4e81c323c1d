package owned

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// base returns a fresh directory of the test's own, mode 0700, below a
// directory chain that passes.
func base(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdir(t *testing.T, p string, mode fs.FileMode) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// refused fails t unless err is an *Error naming want.
func refused(t *testing.T, err error, want string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrUntrusted) {
		t.Fatalf("got %v, want a refusal of %s", err, want)
	}
	if e.Path != want {
		t.Fatalf("refusal %q names %s, want %s", err, e.Path, want)
	}
	return e
}

func TestCheckModes(t *testing.T) {
	b := base(t)
	r := Rule{UID: os.Geteuid(), Strict: true}
	good := mkdir(t, filepath.Join(b, "good"), 0o700)
	if err := Check(good, r); err != nil {
		t.Fatalf("own 0700 directory: %v", err)
	}
	refused(t, Check(mkdir(t, filepath.Join(b, "groupw"), 0o770), r), filepath.Join(b, "groupw"))
	open := mkdir(t, filepath.Join(b, "open"), 0o777)
	refused(t, Check(mkdir(t, filepath.Join(open, "d"), 0o700), r), open)
	sticky := mkdir(t, filepath.Join(b, "sticky"), 0o777|fs.ModeSticky)
	if err := Check(mkdir(t, filepath.Join(sticky, "d"), 0o700), r); err != nil {
		t.Fatalf("directory in a sticky one: %v", err)
	}
	if err := Check(filepath.Join(b, "missing", "x"), r); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing directory: %v", err)
	}
	file := filepath.Join(b, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, Check(file, r), file)
}

// TestCheckLinks: a final link of the user's is followed only when the
// rule says so, and its target is checked; ".." is resolved physically,
// from the directory a link leads to.
func TestCheckLinks(t *testing.T) {
	b := base(t)
	r := Rule{UID: os.Geteuid(), Strict: true}
	good := mkdir(t, filepath.Join(b, "good"), 0o700)
	link := symlink(t, good, filepath.Join(b, "link"))
	refused(t, Check(link, r), link)
	follow := r
	follow.FollowFinal = true
	if err := Check(link, follow); err != nil {
		t.Fatalf("own link to own directory: %v", err)
	}
	open := mkdir(t, filepath.Join(b, "open"), 0o777)
	refused(t, Check(symlink(t, open, filepath.Join(b, "toopen")), follow), open)
	// b/deep/inner -> b/good/sub; b/deep/inner/.. is b/good, not b/deep.
	mkdir(t, filepath.Join(good, "sub"), 0o700)
	deep := mkdir(t, filepath.Join(b, "deep"), 0o700)
	symlink(t, filepath.Join(good, "sub"), filepath.Join(deep, "inner"))
	if err := os.Chmod(good, 0o770); err != nil {
		t.Fatal(err)
	}
	refused(t, Check(deep+"/inner/..", follow), good) // not Join: it would clean ".." away
	loop := symlink(t, "loop", filepath.Join(b, "loop"))
	if err := Check(loop, follow); err == nil {
		t.Fatal("a link loop passed")
	}
}

// TestEnsure creates what is missing, mode as asked, and refuses through
// a directory that fails.
func TestEnsure(t *testing.T) {
	b := base(t)
	r := Rule{UID: os.Geteuid(), Strict: true}
	d := filepath.Join(b, "a", "b")
	if err := Ensure(d, 0o700, r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %v (%v), want a 0700 directory", fi, err)
	}
	open := mkdir(t, filepath.Join(b, "open"), 0o777)
	refused(t, Ensure(filepath.Join(open, "x"), 0o700, r), open)
	if _, err := os.Lstat(filepath.Join(open, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Ensure made a directory in a refused one: %v", err)
	}
}

// TestOtherUsersRefused runs as root with uid 65534 as the other user: a
// directory, a link and an entry of theirs are refused, and nothing is
// made through their link.
func TestOtherUsersRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make another user's files")
	}
	b := base(t)
	r := Rule{UID: 0}
	theirs := mkdir(t, filepath.Join(b, "theirs"), 0o755)
	chown(t, theirs)
	if e := refused(t, Check(theirs, r), theirs); e.UID != 65534 {
		t.Fatalf("owner %d named, want 65534", e.UID)
	}
	refused(t, Check(mkdir(t, filepath.Join(theirs, "d"), 0o700), r), theirs)
	// In a sticky directory anyone can write, another user's link to a
	// directory of the user's is refused, and nothing is made through it.
	tmp := mkdir(t, filepath.Join(b, "tmp"), 0o777|fs.ModeSticky)
	victim := mkdir(t, filepath.Join(b, "victim"), 0o700)
	link := symlink(t, victim, filepath.Join(tmp, "cache-link"))
	lchown(t, link)
	follow := Rule{UID: 0, FollowFinal: true}
	refused(t, Check(link, follow), link)
	refused(t, Ensure(filepath.Join(link, "made"), 0o700, follow), link)
	if _, err := os.Lstat(filepath.Join(victim, "made")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Ensure made a directory through another user's link: %v", err)
	}
	own := symlink(t, victim, filepath.Join(tmp, "own-link"))
	if err := Check(own, follow); err != nil {
		t.Fatalf("own link: %v", err)
	}
	entry := filepath.Join(victim, "state.json")
	if err := os.WriteFile(entry, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckEntry(entry, r); err != nil {
		t.Fatal(err)
	}
	chown(t, entry)
	refused(t, CheckEntry(entry, r), entry)
}

func chown(t *testing.T, p string) {
	t.Helper()
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

func lchown(t *testing.T, p string) {
	t.Helper()
	if err := os.Lchown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}
