package jit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ptojit/ptojit/test/fixture"
)

// fakeMemo records what the watcher asks it to forget.
type fakeMemo struct {
	mu      sync.Mutex
	paths   []string
	all     int
	changed chan struct{}
}

func newFakeMemo() *fakeMemo { return &fakeMemo{changed: make(chan struct{}, 100)} }

func (m *fakeMemo) Forget(p string) int {
	m.mu.Lock()
	m.paths = append(m.paths, p)
	m.mu.Unlock()
	m.changed <- struct{}{}
	return 1
}

func (m *fakeMemo) ForgetAll() {
	m.mu.Lock()
	m.all++
	m.mu.Unlock()
	m.changed <- struct{}{}
}

func TestWatcherForgetsOnChange(t *testing.T) {
	guard(t)
	dir := t.TempDir()
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeforeDir(dir); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "tool")
	if err := os.WriteFile(f, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-m.changed
	m.mu.Lock()
	got := append([]string(nil), m.paths...)
	m.mu.Unlock()
	if len(got) == 0 || got[0] != f {
		t.Fatalf("forgot %v, want %s first", got, f)
	}
	// The memo hears of the event before the watcher counts it; Sync's
	// marker event comes after, so once it returns the counts are in.
	w.Sync()
	if st := w.Status(); st.WatchedDirs != 1 || st.Events == 0 || st.Forgotten == 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestWatcherUnwatchableDirDisablesMemo(t *testing.T) {
	guard(t)
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	old := addWatch
	addWatch = func(*fsnotify.Watcher, string) error { return errors.New("no space left on device") }
	defer func() { addWatch = old }()
	if err := w.BeforeDir("/unwatchable"); err != nil {
		t.Fatalf("BeforeDir failed the read: %v", err)
	}
	<-m.changed
	if m.all != 1 {
		t.Fatalf("ForgetAll called %d times, want 1", m.all)
	}
	st := w.Status()
	if st.Unwatchable["/unwatchable"] == "" || st.Note == "" {
		t.Fatalf("status does not say so: %+v", st)
	}
}

func TestWatcherOverflowForgetsAll(t *testing.T) {
	guard(t)
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.fs.Errors <- fsnotify.ErrEventOverflow
	<-m.changed // the overflow is counted before the memos forget
	if st := w.Status(); st.Overflows != 1 || m.all != 1 {
		t.Fatalf("status %+v, ForgetAll %d", st, m.all)
	}
}

// TestWatcherSyncSeesEarlierChanges proves the barrier: a change made before
// Sync has dropped its memo when Sync returns, with no waiting in the test.
func TestWatcherSyncSeesEarlierChanges(t *testing.T) {
	guard(t)
	dir := t.TempDir()
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.BeforeDir(dir)
	for i := range 20 {
		f := filepath.Join(dir, "f"+strconv.Itoa(i))
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Every other change: a Sync begun now and completed through
		// the context a request carries, then completed again (which
		// waits for nothing more).
		var wait func()
		if i%2 == 0 {
			w.Sync()
		} else {
			wait = w.BeginSync()
			AwaitSync(WithSync(context.Background(), wait))
		}
		m.mu.Lock()
		seen := slices.Contains(m.paths, f)
		m.mu.Unlock()
		if !seen {
			t.Fatalf("change %d not forgotten when Sync returned", i)
		}
		if wait != nil {
			wait()
		}
	}
	AwaitSync(context.Background()) // no Sync carried: nothing to wait for
	w.mu.Lock()
	free, waiting := len(w.syncFree), len(w.syncWait)
	w.mu.Unlock()
	if free != 1 || waiting != 0 {
		t.Fatalf("markers: %d free, %d waited for; want 1 and 0 (one marker, reused)", free, waiting)
	}
}

// TestWatcherMissingDirWatchesParent: a directory that does not exist is
// covered by a watch on its parent, without dropping memos, and its
// creation is seen.
func TestWatcherMissingDirWatchesParent(t *testing.T) {
	guard(t)
	parent := t.TempDir()
	missing := filepath.Join(parent, ".git")
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeforeDir(missing); err != nil {
		t.Fatal(err)
	}
	if st := w.Status(); len(st.Unwatchable) != 0 || m.all != 0 {
		t.Fatalf("a missing directory disabled the memo: %+v", st)
	}
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.paths, missing) {
		t.Fatalf("creating %s was not seen: %v", missing, m.paths)
	}
}

// A directory missing when first looked for is watched once it appears:
// the next BeforeDir adds a real watch, and a change inside it is seen.
func TestWatcherDirThatAppearsIsWatched(t *testing.T) {
	guard(t)
	parent := t.TempDir()
	missing := filepath.Join(parent, "cann")
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeforeDir(missing); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	if err := w.BeforeDir(missing); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(missing, "tool")
	if err := os.WriteFile(inside, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.paths, inside) {
		t.Fatalf("writing %s inside the directory that appeared was not seen: %v", inside, m.paths)
	}
}

// A watched directory renamed away and replaced by another one renamed in
// at its path: the directories below the new one are watched at the next
// read, not taken as watched because the old ones were (their watches went
// with the old directory).
func TestWatcherDirRenamedInIsWatchedBelowItsTop(t *testing.T) {
	guard(t)
	parent := t.TempDir()
	root := filepath.Join(parent, "pypto")
	for _, d := range []string{filepath.Join(root, "pkg"), filepath.Join(parent, "new", "pkg")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	read := func() {
		for _, d := range []string{root, filepath.Join(root, "pkg")} {
			if err := w.BeforeDir(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	read()
	if err := os.Rename(root, filepath.Join(parent, "away")); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	if err := os.Rename(filepath.Join(parent, "new"), root); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	read()
	inside := filepath.Join(root, "pkg", "extra")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.paths, inside) {
		t.Fatalf("creating %s below the directory renamed in was not seen: %v", inside, m.paths)
	}
}

// orderMemo checks, when the watcher drops every memo, that the Sync
// waiter is still waiting: a request released by Sync must never see a memo
// an overflow should have dropped.
type orderMemo struct {
	w       *Watcher
	checked chan bool // true: the waiter was still waiting
}

func (m *orderMemo) Forget(string) int { return 0 }

func (m *orderMemo) ForgetAll() {
	m.w.mu.Lock()
	waiting := len(m.w.syncWait) == 1
	m.w.mu.Unlock()
	m.checked <- waiting
}

func TestWatcherOverflowForgetsBeforeReleasingSync(t *testing.T) {
	registered := make(chan struct{})
	old := touchMarker
	// The marker is never touched, so only the overflow releases Sync.
	touchMarker = func(string) error { close(registered); return nil }
	defer func() { touchMarker = old }()
	m := &orderMemo{checked: make(chan bool, 4)}
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	m.w = w
	synced := make(chan struct{})
	go func() {
		w.Sync()
		close(synced)
	}()
	<-registered
	w.fs.Errors <- fsnotify.ErrEventOverflow
	deadline := time.After(syncTimeout / 2)
	select {
	case waiting := <-m.checked:
		if !waiting {
			t.Fatal("Sync's waiter was released before the memos were dropped")
		}
	case <-deadline:
		t.Fatal("the overflow did not drop the memos")
	}
	select {
	case <-synced:
	case <-deadline:
		t.Fatal("the overflow did not release Sync")
	}
	if st := w.Status(); st.Overflows != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestWatcherSyncReusesMarkers: sequential Syncs share one marker file; a
// Sync that an overflow released (its marker's event may still come)
// removes its marker instead of handing it to a later Sync, which that late
// event could release too early.
func TestWatcherSyncReusesMarkers(t *testing.T) {
	guard(t)
	syncDir := filepath.Join(t.TempDir(), "sync")
	w, err := NewWatcher(syncDir, newFakeMemo())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	markers := func() []string {
		ents, err := os.ReadDir(syncDir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	for range 50 {
		w.Sync()
	}
	first := markers()
	if len(first) != 1 {
		t.Fatalf("after 50 Syncs the sync directory holds %q, want one marker", first)
	}
	old := touchMarker
	registered := make(chan struct{})
	touchMarker = func(string) error { close(registered); return nil }
	synced := make(chan struct{})
	go func() { w.Sync(); close(synced) }()
	<-registered
	touchMarker = old
	w.fs.Errors <- fsnotify.ErrEventOverflow
	<-synced
	if left := markers(); len(left) != 0 {
		t.Fatalf("the marker of a Sync released by an overflow is kept: %q", left)
	}
	w.mu.Lock()
	free := len(w.syncFree)
	w.mu.Unlock()
	if free != 0 {
		t.Fatalf("%d markers in the pool after the overflow, want none", free)
	}
	w.Sync()
	if now := markers(); len(now) != 1 || now[0] == first[0] {
		t.Fatalf("after the overflow Sync uses %q, want a new marker (the old one was %q)", now, first)
	}
}

// watchDeadline bounds each watcher test: one that has not finished by then
// prints every goroutine and ends the test binary, so a hang fails fast.
const watchDeadline = 60 * time.Second

// guard arms watchDeadline for t.
func guard(t *testing.T) {
	t.Helper()
	fixture.Guard(t, watchDeadline)
}

// BeforeDir watches the files of its directory too: a write in place
// through a hard link made later in a directory no watch covers is an
// event that names the file, and so is one to a file that came into the
// directory afterwards, once the next BeforeDir there has run.
func TestWatcherSeesWritesThroughOtherNames(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	if err := os.WriteFile(tool, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newFakeMemo()
	w, _ := newListings(t, m)
	// forgot reports whether, since the last call, an event named p.
	forgot := func(p string) bool {
		w.Sync()
		m.mu.Lock()
		defer m.mu.Unlock()
		ok := slices.Contains(m.paths, p)
		m.paths = nil
		for len(m.changed) > 0 {
			<-m.changed
		}
		return ok
	}
	// writeThroughLink links p from a directory no watch covers, then
	// writes through the link; it reports whether the write was seen.
	writeThroughLink := func(p string) bool {
		other := linkElsewhere(t, p)
		forgot(p) // the link itself: the file's link count
		writeInPlace(t, other, "v2")
		return forgot(p)
	}
	if err := w.BeforeDir(dir); err != nil {
		t.Fatal(err)
	}
	if !writeThroughLink(tool) {
		t.Errorf("a write through a later link to %s was no event", tool)
	}
	late := filepath.Join(dir, "late")
	if err := os.WriteFile(late, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	forgot(late)
	if err := w.BeforeDir(dir); err != nil {
		t.Fatal(err)
	}
	if !writeThroughLink(late) {
		t.Errorf("a write through a later link to %s, which came after the first BeforeDir, was no event", late)
	}
	if st := w.Status(); st.WatchedFiles != 2 {
		t.Errorf("%d files watched, want 2", st.WatchedFiles)
	}
}

// A file whose watch the kernel refuses (its limit of watches reached)
// leaves the directory's reads unmemoized, and the status says which
// limit to raise.
func TestWatcherFileWatchLimitIsNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newFakeMemo()
	w, _ := newListings(t, m)
	old := addWatch
	addWatch = func(fw *fsnotify.Watcher, p string) error {
		if p != dir {
			return syscall.ENOSPC
		}
		return old(fw, p)
	}
	defer func() { addWatch = old }()
	if err := w.BeforeDir(dir); err != nil {
		t.Fatalf("BeforeDir failed the read: %v", err)
	}
	<-m.changed
	m.mu.Lock()
	all := m.all
	m.mu.Unlock()
	if all != 1 {
		t.Fatalf("ForgetAll called %d times, want 1", all)
	}
	if why := w.Status().Unwatchable[dir]; !strings.Contains(why, "max_user_watches") {
		t.Fatalf("unwatchable %s: %q, want the limit named", dir, why)
	}
}

// TestWatcherSaysWhyMemosDropped: an event that drops memos is kept with
// its path, its operations and the number of memos, for daemon status and
// --trace; a watch error that drops every memo is kept too.
func TestWatcherSaysWhyMemosDropped(t *testing.T) {
	guard(t)
	dir := t.TempDir()
	m := newFakeMemo()
	w, err := NewWatcher(filepath.Join(t.TempDir(), "sync"), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeforeDir(dir); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "ptojit_sim.h")
	if err := os.WriteFile(f, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	drops := w.Status().RecentDrops
	if len(drops) == 0 || drops[0].Path != f || !strings.Contains(drops[0].Event, "CREATE") || drops[0].Memos != 1 {
		t.Fatalf("recent drops %+v, want the creation of %s first, 1 memo", drops, f)
	}
	if s := drops[0].String(); !strings.Contains(s, f) || !strings.Contains(s, "dropped 1 memos") {
		t.Errorf("drop says %q", s)
	}
	w.fs.Errors <- fsnotify.ErrEventOverflow
	<-m.changed
	w.Sync()
	drops = w.Drops()
	if last := drops[len(drops)-1]; last.Path != "" || !strings.Contains(last.Event, "overflow") {
		t.Fatalf("last drop %+v, want the overflow", last)
	}
}
