package jit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Forgetter drops memoized identities: Forget those that depend on path,
// ForgetAll every one. toolchain.InstallationIdentityCache is one.
type Forgetter interface {
	Forget(path string) int
	ForgetAll()
}

// maxWatches bounds the directories and files one daemon watches; past it,
// reads are no longer memoized (inotify watches are a per-user kernel
// resource).
const maxWatches = 200000

// Watcher keeps memoized installation identities true to the files: its
// BeforeDir, called before every directory of a memoized read is listed,
// adds an inotify watch there and on each regular file in it, and any
// event under a watched directory or on a watched file drops the memos
// that depend on it. Because the watch exists before the
// directory is read, a change during the read is seen too, and the
// identity cache then declines to memoize that read. When a directory
// cannot be watched, or the kernel's event queue overflows, every memo is
// dropped, so an unwatched read is never served from memory; both are
// counted in Status. It also keeps the directory listings of Listings
// (see DirListings), which watch their directories themselves, and
// watches the headers a daemon checks through them (watchFile).
//
// A Watcher is safe for concurrent use.
type Watcher struct {
	fs       *fsnotify.Watcher
	memos    []Forgetter
	listings *DirListings

	mu          sync.Mutex // guards the fields below
	dirs        map[string]struct{}
	files       map[string]struct{} // files watched themselves (watchFile, BeforeDir)
	armed       map[string]struct{} // directories whose files BeforeDir watched
	events      int64
	forgotten   int64
	drops       []MemoDrop // the latest maxDrops events that dropped memos, oldest first
	overflows   int64
	unwatchable map[string]string // dir -> why it could not be watched
	closed      bool
	syncDir     string               // a private watched directory for Sync
	syncSeq     int64                // names Sync's marker files
	syncWait    map[string]chan bool // marker path -> its waiter (true: its event came)
	syncFree    []string             // markers no Sync uses, and no event of theirs is pending
}

// NewWatcher starts a watcher that drops memos from each of memos.
// syncDir is a private directory the watcher creates for Sync's markers.
func NewWatcher(syncDir string, memos ...Forgetter) (*Watcher, error) {
	fw, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(syncDir, 0o700); err != nil {
		fw.Close()
		return nil, err
	}
	if err := fw.Add(syncDir); err != nil {
		fw.Close()
		return nil, err
	}
	w := &Watcher{fs: fw, memos: memos, dirs: map[string]struct{}{}, files: map[string]struct{}{}, armed: map[string]struct{}{}, unwatchable: map[string]string{},
		syncDir: syncDir, syncWait: map[string]chan bool{}}
	w.listings = newDirListings(w)
	w.memos = append(slices.Clip(w.memos), w.listings)
	go w.loop()
	return w, nil
}

// syncTimeout bounds Sync's wait; past it every memo is dropped instead.
const syncTimeout = 2 * time.Second

// Sync returns once every change made to watched files before Sync was
// called has dropped the memos it affects. The kernel queues inotify events
// in order, so Sync changes the mode of a marker file in its own watched
// directory (a chmod is a few microseconds; creating and removing a file
// costs a journal commit on disk file systems) and waits for the marker's
// event: every earlier event has been handled by then. Without it a
// request could arrive before the event of a change that finished just
// before it. If the marker's event does not come (a queue overflow lost
// it), every memo is dropped instead.
//
// Each Sync uses a marker of its own, taken from a pool: a marker goes back
// to the pool only after its event arrived, so a later Sync can never be
// released by an earlier one's event; a marker whose event did not come is
// removed. A new marker's creation event is not a marker event.
func (w *Watcher) Sync() { w.BeginSync()() }

// BeginSync is Sync in two halves: it changes the marker's mode now and
// returns the function that waits for the marker's event (the rest of
// Sync), so that a caller can do work that uses no memo in between. The
// returned function may be called more than once; only the first call
// waits. Every BeginSync must be completed.
func (w *Watcher) BeginSync() (wait func()) {
	w.mu.Lock()
	var marker string
	fresh := len(w.syncFree) == 0
	if fresh {
		w.syncSeq++
		marker = filepath.Join(w.syncDir, "sync-"+strconv.FormatInt(w.syncSeq, 10))
	} else {
		marker = w.syncFree[len(w.syncFree)-1]
		w.syncFree = w.syncFree[:len(w.syncFree)-1]
	}
	ch := make(chan bool, 1)
	w.syncWait[marker] = ch
	w.mu.Unlock()
	var err error
	if fresh {
		err = createMarker(marker)
	}
	if err == nil {
		err = touchMarker(marker)
	}
	return sync.OnceFunc(func() { w.endSync(marker, ch, err) })
}

// endSync waits for the event of marker on ch (unless touching it failed
// with err), then returns the marker to the pool, or removes it and drops
// every memo.
func (w *Watcher) endSync(marker string, ch chan bool, err error) {
	if err == nil {
		select {
		case ok := <-ch:
			if !ok {
				err = errors.New("the event queue failed")
			}
		case <-time.After(syncTimeout):
			err = errors.New("timeout")
		}
	}
	w.mu.Lock()
	delete(w.syncWait, marker)
	if err == nil {
		w.syncFree = append(w.syncFree, marker)
	}
	w.mu.Unlock()
	if err != nil {
		os.Remove(marker)
		w.forgetAll()
	}
}

type syncKey struct{}

// WithSync returns ctx carrying wait, the second half of a BeginSync:
// AwaitSync(ctx) completes it. A daemon begins the Sync of a request when
// it arrives and completes it once the request's first memo use is due.
func WithSync(ctx context.Context, wait func()) context.Context {
	return context.WithValue(ctx, syncKey{}, wait)
}

// AwaitSync completes the Sync ctx carries (WithSync), if any: once it
// returns, every change made before the Sync began has dropped its memos.
func AwaitSync(ctx context.Context) {
	if wait, ok := ctx.Value(syncKey{}).(func()); ok {
		wait()
	}
}

// createMarker creates a marker file; touchMarker changes its mode, which
// the watcher sees as a Chmod event. Tests replace touchMarker to hold a
// Sync waiting.
var (
	createMarker = func(name string) error { return os.WriteFile(name, nil, 0o600) }
	touchMarker  = func(name string) error { return os.Chmod(name, 0o600) }
)

// addWatch is fsnotify's Add; tests replace it to inject failures.
var addWatch = func(fw *fsnotify.Watcher, dir string) error { return fw.Add(dir) }

// BeforeDir watches dir, and each regular file in it itself (its inode):
// a read of an installation that a memo keeps calls it before it lists
// dir or reads a file there, so a write to such a file through another
// of its names, or through a hard link made later in a directory no watch
// covers, is an event too (the link count, then the write), as a write
// through dir is. A file created in dir, or renamed into it, is an event
// in dir that also makes the next BeforeDir of dir watch the files again.
// It never fails the read: a directory or file that cannot be watched
// makes the memo forget everything, which discards the read in flight, so
// it is served but not remembered.
func (w *Watcher) BeforeDir(dir string) error {
	w.mu.Lock()
	if _, ok := w.armed[dir]; ok || w.closed {
		w.mu.Unlock()
		return nil
	}
	var err error
	_, watched := w.dirs[dir]
	switch {
	case watched:
		// A listing's, or armed before a file came: its files remain.
	case len(w.dirs)+len(w.files) >= maxWatches:
		err = errors.New("too many watched directories")
	default:
		err = addWatch(w.fs, dir)
		// A directory that does not exist (a checkout's .git, looked for
		// and absent) cannot change; its creation is an event in the
		// nearest existing parent, so that is watched instead. The
		// directory itself is not marked watched: once it exists, the
		// next read of it adds its own watch.
		missing := false
		for p := dir; errors.Is(err, fs.ErrNotExist) && filepath.Dir(p) != p; {
			missing = true
			p = filepath.Dir(p)
			if _, ok := w.dirs[p]; ok {
				err = nil
				break
			}
			if err = addWatch(w.fs, p); err == nil {
				w.dirs[p] = struct{}{}
			}
		}
		if missing && err == nil {
			w.mu.Unlock()
			return nil
		}
	}
	if err == nil {
		w.dirs[dir] = struct{}{}
		err = w.watchFilesIn(dir)
	}
	if err == nil {
		w.armed[dir] = struct{}{}
		w.mu.Unlock()
		return nil
	}
	if len(w.unwatchable) < 100 {
		why := err.Error()
		if errors.Is(err, syscall.ENOSPC) {
			why += " (the kernel's limit of inotify watches, fs.inotify.max_user_watches, is reached)"
		}
		w.unwatchable[dir] = why
	}
	w.mu.Unlock()
	w.forgetAll()
	return nil
}

// watchFilesIn watches each regular file in dir, a watched directory
// (w.mu held). A file gone before its watch is armed is skipped: its
// removal is an event in dir.
func (w *Watcher) watchFilesIn(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if errors.Is(err, syscall.ENOTDIR) {
		return nil // a file: watched itself
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := w.addFile(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Listings returns the directory listings this watcher keeps valid (the
// negative-dependency checks of a daemon's hits, Options.Listings).
func (w *Watcher) Listings() *DirListings { return w.listings }

// watchDir watches dir, an existing directory, unless it is watched
// already. Unlike BeforeDir it forgets nothing when dir cannot be
// watched: it returns the error, and the caller does not memoize.
func (w *Watcher) watchDir(dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.dirs[dir]; ok {
		return nil
	}
	if w.closed {
		return errors.New("the watcher is closed")
	}
	if len(w.dirs)+len(w.files) >= maxWatches {
		return errors.New("too many watched directories")
	}
	if err := addWatch(w.fs, dir); err != nil {
		return err
	}
	w.dirs[dir] = struct{}{}
	return nil
}

// watchFile watches the file p names now, itself: its inode, not its
// directory. A write to that file through any of its names, a change of
// its mode or times, and a name made for it or taken from it (its link
// count) are then events here, each dropping the memos of p as an event
// in p's directory does; without it, a hard link made in a directory no
// watch covers would let a write in place through that name go unseen.
// It arms the watch again on every call, since p may name another file
// than the one watched before (a rename over it): inotify resolves p
// anew and keeps one watch per inode. The error of a watch that cannot
// be armed is returned, and the caller does not memoize.
func (w *Watcher) watchFile(p string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("the watcher is closed")
	}
	return w.addFile(p)
}

// addFile arms the watch of the file p (w.mu held), counted in maxWatches.
func (w *Watcher) addFile(p string) error {
	if _, ok := w.files[p]; !ok && len(w.dirs)+len(w.files) >= maxWatches {
		return errors.New("too many watched files")
	}
	if err := addWatch(w.fs, p); err != nil {
		return err
	}
	w.files[p] = struct{}{}
	return nil
}

func (w *Watcher) forgetAll() {
	for _, m := range w.memos {
		m.ForgetAll()
	}
}

func (w *Watcher) loop() {
	for {
		select {
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if filepath.Dir(ev.Name) == w.syncDir {
				w.mu.Lock()
				if ch := w.syncWait[ev.Name]; ch != nil && ev.Has(fsnotify.Chmod) {
					ch <- true
					delete(w.syncWait, ev.Name)
				}
				w.mu.Unlock()
				continue
			}
			n := 0
			for _, m := range w.memos {
				n += m.Forget(ev.Name)
			}
			w.mu.Lock()
			w.events++
			w.forgotten += int64(n)
			if n > 0 {
				w.noteDrop(MemoDrop{Path: ev.Name, Event: ev.Op.String(), Memos: n, At: time.Now()})
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				// The name no longer leads to the inode watched: the
				// next check arms a watch on what it names then.
				delete(w.files, ev.Name)
			}
			if ev.Has(fsnotify.Create) {
				// A new name in an armed directory (created or renamed
				// in): the next BeforeDir there watches its file.
				delete(w.armed, filepath.Dir(ev.Name))
			}
			if _, ok := w.dirs[ev.Name]; ok && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
				// The kernel drops the watch of a removed directory;
				// watch it again when a read lists it next time. The
				// watches of the directories under a renamed or
				// removed one follow their old inodes, not the names
				// that may be created again: those are watched
				// again too.
				delete(w.dirs, ev.Name)
				delete(w.armed, ev.Name)
				prefix := ev.Name + string(filepath.Separator)
				for d := range w.dirs {
					if strings.HasPrefix(d, prefix) {
						delete(w.dirs, d)
						delete(w.armed, d)
					}
				}
			}
			w.mu.Unlock()
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			// Any error may mean a lost event: forget everything, and
			// only then release the Sync waiters (their markers may be
			// lost with the queue), so that no request that waited can
			// see a memo that should be gone.
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.mu.Lock()
				w.overflows++
				w.mu.Unlock()
			}
			w.forgetAll()
			w.mu.Lock()
			w.noteDrop(MemoDrop{Event: "watch error: " + err.Error() + " (every memo dropped)", At: time.Now()})
			for m, ch := range w.syncWait {
				ch <- false
				delete(w.syncWait, m)
			}
			w.mu.Unlock()
		}
	}
}

// MemoDrop says why memos were dropped: the event (its path and
// operations, as fsnotify names them: CREATE, WRITE, REMOVE, RENAME,
// CHMOD) and how many memos depended on the path, or a watch error that
// dropped every memo (no path).
type MemoDrop struct {
	Path  string    `json:"path,omitempty"`
	Event string    `json:"event"`
	Memos int       `json:"memos,omitempty"`
	At    time.Time `json:"at"`
}

func (d MemoDrop) String() string {
	if d.Path == "" {
		return d.Event
	}
	return fmt.Sprintf("%s %s dropped %d memos", d.Event, d.Path, d.Memos)
}

// maxDrops is how many memo drops the watcher remembers.
const maxDrops = 8

// noteDrop remembers d among the latest drops (w.mu held).
func (w *Watcher) noteDrop(d MemoDrop) {
	if len(w.drops) == maxDrops {
		w.drops = append(w.drops[:0], w.drops[1:]...)
	}
	w.drops = append(w.drops, d)
}

// Drops returns the latest events that dropped memos (at most maxDrops),
// oldest first.
func (w *Watcher) Drops() []MemoDrop {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.drops)
}

// WatchStatus is the watcher's part of `daemon status`.
type WatchStatus struct {
	WatchedDirs  int64             `json:"watched_dirs"`
	WatchedFiles int64             `json:"watched_files"`
	ListedDirs   int64             `json:"listed_dirs"`
	Events       int64             `json:"events"`
	Forgotten    int64             `json:"memos_dropped"`
	Overflows    int64             `json:"queue_overflows"`
	RecentDrops  []MemoDrop        `json:"recent_drops,omitempty"`
	Unwatchable  map[string]string `json:"unwatchable,omitempty"`
	Note         string            `json:"note,omitempty"`
}

// Status reports what the watcher has seen.
func (w *Watcher) Status() WatchStatus {
	listed := int64(w.listings.Len())
	w.mu.Lock()
	defer w.mu.Unlock()
	st := WatchStatus{WatchedDirs: int64(len(w.dirs)), WatchedFiles: int64(len(w.files)), ListedDirs: listed, Events: w.events, Forgotten: w.forgotten, Overflows: w.overflows,
		RecentDrops: slices.Clone(w.drops)}
	if len(w.unwatchable) > 0 {
		st.Unwatchable = map[string]string{}
		keys := make([]string, 0, len(w.unwatchable))
		for k := range w.unwatchable {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			st.Unwatchable[k] = w.unwatchable[k]
		}
		st.Note = "reads under unwatchable directories are not memoized"
	}
	if w.overflows > 0 {
		st.Note += "; the event queue overflowed, so every memo was dropped"
	}
	return st
}

// Close stops watching.
func (w *Watcher) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return w.fs.Close()
}
