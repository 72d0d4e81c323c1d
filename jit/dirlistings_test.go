package jit

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// countMemo counts what the watcher asks it to forget; unlike fakeMemo it
// never blocks the watcher, whatever the number of events (a build in a
// watched temporary directory raises many).
type countMemo struct{ paths, all atomic.Int64 }

func (m *countMemo) Forget(string) int { m.paths.Add(1); return 0 }
func (m *countMemo) ForgetAll()        { m.all.Add(1) }

// newListings returns the listings of a new watcher that also drops the
// memo m.
func newListings(t *testing.T, m Forgetter) (*Watcher, *DirListings) {
	t.Helper()
	guard(t)
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, w.Listings()
}

// wantExists checks the listings' answer for p, which must be known.
func wantExists(t *testing.T, l *DirListings, p string, want bool) {
	t.Helper()
	got, known := l.exists(p)
	if !known {
		t.Fatalf("%s: the listings cannot say", p)
	}
	if got != want {
		t.Fatalf("%s exists: listings say %v, want %v", p, got, want)
	}
}

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A name created in a listed directory is seen once the change is synced,
// and so is its removal.
func TestListingsSeeANewName(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	dir := t.TempDir()
	p := filepath.Join(dir, "x.h")
	wantExists(t, l, p, false)
	if l.Len() != 1 {
		t.Fatalf("%d listings, want the directory's", l.Len())
	}
	touch(t, p)
	w.Sync()
	wantExists(t, l, p, true)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	wantExists(t, l, p, false)
}

// A directory that does not exist lists nothing until it (and the
// directories above it) are created.
func TestListingsSeeAMissingDirectoryAppear(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "x.h")
	wantExists(t, l, p, false)
	touch(t, p)
	w.Sync()
	wantExists(t, l, p, true)
}

// A directory above a listed one renamed away and made again: the new
// directory's names are seen (the watches of the old inodes do not stand
// for the new ones).
func TestListingsSeeARenamedAncestor(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	dir := t.TempDir()
	inc := filepath.Join(dir, "A", "inc")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(inc, "x.h")
	wantExists(t, l, p, false)
	if err := os.Rename(filepath.Join(dir, "A"), filepath.Join(dir, "A.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	wantExists(t, l, p, false)
	touch(t, p)
	w.Sync()
	wantExists(t, l, p, true)
}

// A name created after the directory was read and before its listing is
// stored (the racily-clean case) is never hidden by that listing.
func TestListingsChangeDuringTheRead(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	dir := t.TempDir()
	p := filepath.Join(dir, "x.h")
	var once sync.Once
	listingHook = func(d string) {
		if d == dir {
			once.Do(func() {
				touch(t, p)
				w.Sync() // the event is handled before the listing would be stored
			})
		}
	}
	t.Cleanup(func() { listingHook = nil })
	if got, known := l.exists(p); known && !got {
		t.Fatalf("the listing read before %s was created says it is absent", p)
	}
	wantExists(t, l, p, true)
}

// Paths through a symbolic link, and directories that cannot be watched,
// are not answered from listings (the caller stats them), and an
// unwatchable directory drops no other memo.
func TestListingsFallBackToStats(t *testing.T) {
	m := new(countMemo)
	_, l := newListings(t, m)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, known := l.exists(filepath.Join(dir, "link", "x.h")); known {
		t.Errorf("a path through a symbolic link was answered from a listing")
	}
	old := addWatch
	addWatch = func(*fsnotify.Watcher, string) error { return errors.New("no space left on device") }
	t.Cleanup(func() { addWatch = old })
	if _, known := l.exists(filepath.Join(t.TempDir(), "x.h")); known {
		t.Errorf("a directory that cannot be watched was answered from a listing")
	}
	if m.all.Load() != 0 {
		t.Errorf("an unwatchable listing dropped every memo")
	}
	if l.Len() != 0 {
		t.Errorf("%d listings kept, want none", l.Len())
	}
}

// appearedHeader with listings agrees with stats, in the order of the
// recorded paths, and the plan of a decoded manifest answers alike.
func TestAppearedHeaderWithListings(t *testing.T) {
	w, l := newListings(t, new(countMemo))
	dir := t.TempDir()
	base := baseDir{dir: dir}
	absent := []string{"a.h", "sub/b.h", filepath.Join(t.TempDir(), "c.h")}
	v := variant{Absent: absent, plans: new(sync.Map)}
	if got := appearedHeader(base, absent, l); got != "" {
		t.Fatalf("appeared %q, want none", got)
	}
	if !l.allAbsent(v.absentPlan(base)) {
		t.Fatalf("the plan finds a path present")
	}
	touch(t, filepath.Join(dir, "sub", "b.h"))
	touch(t, absent[2])
	w.Sync()
	if got := appearedHeader(base, absent, l); got != "sub/b.h" {
		t.Fatalf("appeared %q, want sub/b.h (the first that exists)", got)
	}
	if l.allAbsent(v.absentPlan(base)) {
		t.Fatalf("the plan misses the new header")
	}
	if got := appearedHeader(base, absent, nil); got != "sub/b.h" {
		t.Fatalf("with stats: appeared %q, want sub/b.h", got)
	}
}
