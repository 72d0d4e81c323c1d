package jit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// DirListings answers the negative-dependency checks of a hit (does a
// searched-and-absent path exist now?) from memoized directory listings
// instead of a stat per path: one memo per directory, its set of names,
// kept valid by the Watcher that owns it. A daemon serves about a hundred
// such paths per hit of the example from some twenty directories.
//
// The rule that keeps a listing true: before a directory is listed, every
// directory from the root down to it is watched, each one before its
// child is looked at, so any later creation, removal, rename or mode
// change of the directory, of a name in it or of a directory above it is
// an event that drops the memo. A directory that does not exist is
// remembered as empty while its nearest existing ancestor is watched: its
// creation (or that of a directory between) is an event there. A memo is
// entered as pending before the first watch is armed and filled only if
// no event dropped it meanwhile, so a change between the read and the
// store is never lost (the racily-clean case of a listing). A directory
// with a symbolic link on its path, one that is not a directory, one that
// cannot be read and one that cannot be watched are not memoized: their
// paths are checked with a stat, as a client without the daemon does.
//
// A DirListings is safe for concurrent use.
type DirListings struct {
	w *Watcher

	mu sync.Mutex // guards m; never held while the Watcher is called
	m  map[string]*listing
}

// listing is the memo of one directory. pending: being read; names: nil
// when the directory does not exist.
type listing struct {
	pending bool
	names   map[string]struct{}
}

// listingHook, when set, runs after a directory was read and before its
// listing is stored (tests change the directory there).
var listingHook func(dir string)

func newDirListings(w *Watcher) *DirListings {
	return &DirListings{w: w, m: map[string]*listing{}}
}

// Len returns the number of directories memoized.
func (l *DirListings) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// Forget drops the listings an event at path affects: that of the
// directory holding path, and those of path and every directory under
// it.
func (l *DirListings) Forget(path string) int {
	parent := filepath.Dir(path)
	prefix := path + string(filepath.Separator)
	if path == string(filepath.Separator) {
		prefix = path
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for d := range l.m {
		if d == parent || d == path || strings.HasPrefix(d, prefix) {
			delete(l.m, d)
			n++
		}
	}
	return n
}

// ForgetAll drops every listing.
func (l *DirListings) ForgetAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.m)
}

// exists reports whether the absolute, clean path p exists (as Lstat
// would find it), from the listing of its directory. known is false when
// the listing cannot be had: the caller stats p.
func (l *DirListings) exists(p string) (exists, known bool) {
	dir, name := filepath.Dir(p), filepath.Base(p)
	if dir == p {
		return false, false
	}
	names, ok := l.names(dir)
	if !ok {
		return false, false
	}
	_, ok = names[name]
	return ok, true
}

// names returns the memoized names of dir (nil when it does not exist),
// reading them when dir has no listing yet; false when it cannot be
// memoized or is being read by another request. The map returned is never
// modified.
func (l *DirListings) names(dir string) (map[string]struct{}, bool) {
	e := l.current(dir)
	if e == nil {
		return nil, false
	}
	return e.names, true // set before the entry stopped pending, never after
}

// current returns the listing of dir, filling it when there is none: a
// token that stays dir's listing exactly while no event has happened in
// dir or a directory above it since its watches were armed (see
// isCurrent). Nil when dir cannot be memoized or another request is
// reading it.
func (l *DirListings) current(dir string) *listing {
	l.mu.Lock()
	e := l.m[dir]
	pending := e != nil && e.pending
	l.mu.Unlock()
	switch {
	case e == nil:
		return l.fill(dir)
	case pending:
		return nil
	}
	return e
}

// isCurrent reports whether e, a listing current returned, is still the
// listing of dir: no event dropped it since.
func (l *DirListings) isCurrent(dir string, e *listing) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return e != nil && l.m[dir] == e
}

// allAbsent reports whether the listings say that every path of p is
// absent; false when one exists or some cannot be answered (the caller
// then checks them in order, with stats where needed).
func (l *DirListings) allAbsent(p *absentPlan) bool {
	if !p.ok {
		return false
	}
	for i, dir := range p.dirs {
		names, ok := l.names(dir)
		if !ok {
			return false
		}
		for _, n := range p.names[i] {
			if _, ok := names[n]; ok {
				return false
			}
		}
	}
	return true
}

// fill reads and memoizes the listing of dir (see the type's doc); nil
// when dir cannot be memoized.
func (l *DirListings) fill(dir string) *listing {
	e := &listing{pending: true}
	l.mu.Lock()
	if l.m[dir] != nil {
		l.mu.Unlock()
		return nil // another fill is under way
	}
	if len(l.m) >= maxMemo {
		clear(l.m)
	}
	l.m[dir] = e
	l.mu.Unlock()
	names, ok := l.read(dir)
	if ok && listingHook != nil {
		listingHook(dir)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m[dir] != e {
		return nil // an event dropped it while it was read
	}
	if !ok {
		delete(l.m, dir)
		return nil
	}
	e.names, e.pending = names, false
	return e
}

// read watches every directory from the root down to dir, each before
// its child is looked at, then lists dir. It returns nil names when dir
// (or a directory above it) does not exist, and false when dir cannot be
// memoized.
func (l *DirListings) read(dir string) (map[string]struct{}, bool) {
	if !filepath.IsAbs(dir) {
		return nil, false
	}
	var chain []string
	for p := dir; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if l.w.watchDir(chain[i]) != nil {
			return nil, false
		}
		if i == 0 {
			break
		}
		fi, err := os.Lstat(chain[i-1])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, true // its creation is an event in chain[i]
		case err != nil || !fi.IsDir():
			return nil, false // a symbolic link, a file, unreadable
		}
	}
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	list, err := f.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	names := make(map[string]struct{}, len(list))
	for _, n := range list {
		names[n] = struct{}{}
	}
	return names, true
}
