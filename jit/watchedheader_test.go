package jit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ptojit/ptojit/api"
)

// agedHeader writes a header with content into a new directory, its times
// made older than stableAge, and returns its path.
func agedHeader(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "include", "tool.h")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantDigest(t *testing.T, l *DirListings, p, content string) {
	t.Helper()
	got, err := watchedDigestOf(l, p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	if want := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("%s: digest %s, want that of %q (%s)", p, got, content, want)
	}
}

// A checked header is answered from the watcher while its directory's
// listing stays current: the remembered digest is what a later check
// returns, with no read of the file. (The test plants a digest the file
// never had; a check that read the file would not return it.)
func TestWatchedHeaderAnsweredWithoutAStat(t *testing.T) {
	_, l := newListings(t, new(countMemo))
	p := agedHeader(t, "int a;\n")
	wantDigest(t, l, p, "int a;\n")
	e, ok := watchedHeaders.get(p)
	if !ok || !l.isCurrent(filepath.Dir(p), e.listing) {
		t.Fatalf("the checked header is not remembered under its directory's current listing")
	}
	watchedHeaders.put(p, watchedHeader{listing: e.listing, digest: "planted"})
	if got, err := watchedDigestOf(l, p); err != nil || got != "planted" {
		t.Fatalf("second check: %q, %v; want the remembered digest", got, err)
	}
}

// Every change a stat would see is an event that makes the next check read
// the file: a write in place whose size and times are restored, a rename
// over it, its removal.
func TestWatchedHeaderSeesEveryChange(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	p := agedHeader(t, "int a;\n")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		change  func() error
		content string
	}{
		{"edited in place, times restored", func() error {
			if err := os.WriteFile(p, []byte("int b;\n"), 0o644); err != nil {
				return err
			}
			return os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, "int b;\n"},
		{"replaced by a rename", func() error {
			q := p + ".new"
			if err := os.WriteFile(q, []byte("int c;\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(q, p)
		}, "int c;\n"},
	}
	wantDigest(t, l, p, "int a;\n")
	for _, s := range steps {
		if err := s.change(); err != nil {
			t.Fatal(err)
		}
		w.Sync()
		wantDigest(t, l, p, s.content)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	if d, err := watchedDigestOf(l, p); err == nil {
		t.Fatalf("removed header: digest %s, want an error", d)
	}
}

// A hard link made after the header was remembered, in a directory no
// watch covers, and a write in place through it with the times restored:
// neither is an event in the header's directory, but both are events on
// the file's own watch, so the next check reads it again. Then the
// header has two names and is checked with a stat every time; once the
// other name is gone, it is remembered again.
func TestWatchedHeaderSeesAWriteThroughALaterLink(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	p := agedHeader(t, "int a;\n")
	wantDigest(t, l, p, "int a;\n")
	other := writeThroughLink(t, p, "int b;\n")
	w.Sync()
	wantDigest(t, l, p, "int b;\n")
	if e, ok := watchedHeaders.get(p); ok && l.isCurrent(filepath.Dir(p), e.listing) {
		t.Fatalf("%s, with a second name, is remembered", p)
	}
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	wantDigest(t, l, p, "int b;\n")
	if e, ok := watchedHeaders.get(p); !ok || !l.isCurrent(filepath.Dir(p), e.listing) {
		t.Fatalf("%s, its only name again, is not remembered", p)
	}
}

// linkElsewhere makes a hard link to p in a new directory no watch covers
// and returns its path.
func linkElsewhere(t *testing.T, p string) string {
	t.Helper()
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Link(p, other); err != nil {
		t.Fatal(err)
	}
	return other
}

// writeInPlace writes content over the start of the file p, in place.
func writeInPlace(t *testing.T, p, content string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte(content), 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// writeThroughLink makes a hard link to p in a new directory no watch
// covers, writes content in place through it, restoring p's times, and
// returns the link's path.
func writeThroughLink(t *testing.T, p, content string) string {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	other := linkElsewhere(t, p)
	writeInPlace(t, other, content)
	if err := os.Chtimes(other, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	return other
}

// The file watch follows the file the name leads to: after a rename over
// the header, the next check watches the new file, so a write through a
// link to it made later is seen too.
func TestWatchedHeaderWatchFollowsAReplacement(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	p := agedHeader(t, "int a;\n")
	wantDigest(t, l, p, "int a;\n")
	q := p + ".new"
	if err := os.WriteFile(q, []byte("int c;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(q, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(q, p); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	wantDigest(t, l, p, "int c;\n")
	if e, ok := watchedHeaders.get(p); !ok || !l.isCurrent(filepath.Dir(p), e.listing) {
		t.Fatalf("%s, replaced, is not remembered", p)
	}
	writeThroughLink(t, p, "int d;\n")
	w.Sync()
	wantDigest(t, l, p, "int d;\n")
}

// A header whose own watch cannot be armed (its directory's can) is
// checked with a stat every time, and its digest is still right.
func TestWatchedHeaderNotRememberedWithoutItsWatch(t *testing.T) {
	_, l := newListings(t, new(countMemo))
	p := agedHeader(t, "int a;\n")
	old := addWatch
	addWatch = func(fw *fsnotify.Watcher, path string) error {
		if path == p {
			return errors.New("no space left on device")
		}
		return old(fw, path)
	}
	t.Cleanup(func() { addWatch = old })
	wantDigest(t, l, p, "int a;\n")
	if _, ok := watchedHeaders.get(p); ok {
		t.Fatalf("%s is remembered without a watch of its own", p)
	}
	if st := l.w.Status(); st.WatchedFiles != 0 || st.WatchedDirs == 0 {
		t.Fatalf("watched: %d files, %d directories; want none and some", st.WatchedFiles, st.WatchedDirs)
	}
}

// A header with a second name is not remembered (a write through the
// other name is an event in the other directory only), nor one reached
// through a symbolic link, nor one in a directory that cannot be watched.
func TestWatchedHeaderOnlyWhereWatched(t *testing.T) {
	_, l := newListings(t, new(countMemo))
	linked := agedHeader(t, "int a;\n")
	if err := os.Link(linked, filepath.Join(t.TempDir(), "other.h")); err != nil {
		t.Fatal(err)
	}
	target := agedHeader(t, "int b;\n")
	link := filepath.Join(filepath.Dir(target), "link.h")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	viaDir := filepath.Join(t.TempDir(), "dirlink")
	if err := os.Symlink(filepath.Dir(target), viaDir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ p, content string }{
		{linked, "int a;\n"},
		{link, "int b;\n"},
		{filepath.Join(viaDir, "tool.h"), "int b;\n"},
	} {
		wantDigest(t, l, c.p, c.content)
		if _, ok := watchedHeaders.get(c.p); ok {
			t.Errorf("%s is remembered, want it checked with a stat every time", c.p)
		}
	}
}

// A daemon's driver checks the headers inside toolchain roots through its
// watcher and the application's own with a stat: each, edited in place with
// its size and times restored, makes the next build a miss naming it.
func TestDriverChecksToolchainHeadersThroughTheWatcher(t *testing.T) {
	dir, req, w, _, d := daemonDriver(t)
	build(t, d, req, api.StatusMiss)
	build(t, d, req, api.StatusHit)
	tool := filepath.Join(dir, "toolchain", "runtime", "include", "ptojit_sim.h")
	app := filepath.Join(dir, "vadd", "vadd.h")
	if _, ok := watchedHeaders.get(tool); !ok {
		t.Errorf("%s, inside the runtime root, is not checked through the watcher", tool)
	}
	if _, ok := watchedHeaders.get(app); ok {
		t.Errorf("%s, the application's own, is checked through the watcher, want a stat", app)
	}
	for _, p := range []string{tool, app} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= ' ' // the same size
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		w.Sync() // as the daemon does before every request
		r := build(t, d, req, api.StatusMiss)
		if !strings.Contains(r.MissReason, filepath.Base(p)) {
			t.Errorf("miss reason %q does not name %s", r.MissReason, filepath.Base(p))
		}
		build(t, d, req, api.StatusHit)
	}
}

// TestInRoot: a path is inside a toolchain content root when it lies
// strictly below it, the root "/" included (a clean path is never below
// "//").
func TestInRoot(t *testing.T) {
	for _, c := range []struct {
		p, root string
		want    bool
	}{
		{"/usr/include/stdio.h", "/usr/include", true},
		{"/usr/include/sys/types.h", "/usr/include", true},
		{"/usr/include", "/usr/include", false},
		{"/usr/includes/a.h", "/usr/include", false},
		{"/usr/a.h", "/usr/include", false},
		{"/a.h", "/", true},
		{"/usr/include/a.h", "/", true},
		{"/", "/", false},
		{"/opt/a.h", "//", false},
	} {
		if got := inRoot(c.p, c.root); got != c.want {
			t.Errorf("inRoot(%q, %q) = %v, want %v", c.p, c.root, got, c.want)
		}
	}
}
