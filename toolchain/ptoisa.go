package toolchain

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// PtoIsaCheck is the outcome of CheckPtoIsa. Plain data, safe for
// concurrent reads.
type PtoIsaCheck struct {
	// Verified reports that HEAD == pin and the worktree holds exactly the
	// pinned tree.
	Verified bool
	// Head is the commit HEAD names ("" when unreadable).
	Head string
	// Reason says why the checkout is not verified ("" when it is).
	Reason string
}

// CheckPtoIsa decides whether the git checkout at dir is byte-for-byte the
// tree of commit pin, without reading its files' contents where git would
// not. It is the equivalent of asking `git status --porcelain --ignored`
// for an empty answer, with no ignore rules at all:
//
//  1. HEAD resolves to pin (a full 40-hex commit id);
//  2. the index holds, at stage 0, exactly the entries of the HEAD tree
//     (path, mode, blob id), no submodules, no skip-worktree or
//     intent-to-add entries;
//  3. the worktree (all but the top-level .git) holds exactly the index's
//     files and the directories leading to them: any other file or
//     directory — untracked or ignored, whatever .gitignore,
//     .git/info/exclude or core.excludesFile say — disqualifies it;
//  4. each file has the index's type and executable bit, and either its
//     stat data (mtime, ctime, inode, uid, gid, size) matches the index
//     entry and the entry is not racily clean (mtime older than the index
//     file), or its blob id, recomputed from its bytes, equals the entry's.
//
// beforeDir, when non-nil, is called with every directory walked, and
// before anything of the repository is read with the directories whose
// files decide HEAD: the checkout's root (a .git file), .git (HEAD,
// packed-refs, the index) and the directory of the ref HEAD names. A
// checkout that fails any step is reported with the reason; the error is
// non-nil only when beforeDir fails.
func CheckPtoIsa(dir, pin string, beforeDir func(string) error) (PtoIsaCheck, error) {
	return checkWorktree(dir, pin, beforeDir, nil)
}

// checkWorktree is CheckPtoIsa; with allow set, a file that is not in the
// index is passed to allow (with its slash path and full path), which
// accounts for it by returning "" or disqualifies the worktree with a
// reason, and untracked directories are walked instead of disqualifying.
// allow may be called concurrently.
func checkWorktree(dir, pin string, beforeDir func(string) error, allow func(rel, full string) string) (PtoIsaCheck, error) {
	var res PtoIsaCheck
	if !isFullHash(pin) {
		res.Reason = "pin is not a full commit id"
		return res, nil
	}
	pin = strings.ToLower(pin)
	if beforeDir != nil {
		if err := watchGitDir(dir, beforeDir); err != nil {
			return res, err
		}
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		res.Reason = "not a git checkout: " + err.Error()
		return res, nil
	}
	head, err := repo.Head()
	if err != nil {
		res.Reason = "cannot read HEAD: " + err.Error()
		return res, nil
	}
	res.Head = head.Hash().String()
	if res.Head != pin {
		res.Reason = "HEAD " + res.Head + " is not the pin " + pin
		return res, nil
	}
	fsys, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		res.Reason = "repository storage is not on disk"
		return res, nil
	}
	// The index's mtime decides which entries are racily clean: take it
	// from the file that is read.
	raw, fi, err := readWithInfo(filepath.Join(fsys.Filesystem().Root(), "index"))
	if err != nil {
		res.Reason = "cannot read the index: " + errText(err)
		return res, nil
	}
	idx, err := parseIndex(raw)
	if err != nil {
		res.Reason = err.Error()
		return res, nil
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		res.Reason = "cannot read the pinned commit: " + err.Error()
		return res, nil
	}
	entries, dirs, reason := indexEntries(idx)
	if reason != "" {
		res.Reason = reason
		return res, nil
	}
	// The pinned tree and the worktree are compared with the index at the
	// same time: one reads git objects, the other stats files.
	treeReason := make(chan string, 1)
	trees := &treeReader{storer: repo.Storer}
	go func() { treeReason <- matchTree(trees, commit.TreeHash, entries) }()
	w := worktreeCheck{
		root: dir, entries: entries, dirs: dirs,
		indexMtime: fi.ModTime(), beforeDir: beforeDir, allow: allow,
	}
	reason, err = w.run()
	if tr := <-treeReason; tr != "" {
		res.Reason = tr
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if reason != "" {
		res.Reason = reason
		return res, nil
	}
	res.Verified = true
	return res, nil
}

func readWithInfo(p string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(f)
	return b, fi, err
}

func isFullHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// indexEntries maps the index's paths to their entries and lists the
// directories they imply, or says why the index cannot be verified.
func indexEntries(idx *gitIndex) (map[string]*indexEntry, map[string]struct{}, string) {
	entries := make(map[string]*indexEntry, len(idx.entries))
	dirs := map[string]struct{}{"": {}}
	for i := range idx.entries {
		e := &idx.entries[i]
		switch {
		case e.stage != 0:
			return nil, nil, "unmerged index entry " + strconv.Quote(e.name)
		case e.skipWorktree:
			return nil, nil, "skip-worktree index entry " + strconv.Quote(e.name)
		case e.intent:
			return nil, nil, "intent-to-add index entry " + strconv.Quote(e.name)
		case filemode.FileMode(e.mode) == filemode.Submodule:
			return nil, nil, "submodule " + strconv.Quote(e.name) + " is not verified"
		case !validIndexMode(e.mode):
			return nil, nil, fmt.Sprintf("index entry %q has mode %o", e.name, e.mode)
		}
		if _, dup := entries[e.name]; dup {
			return nil, nil, "duplicate index entry " + strconv.Quote(e.name)
		}
		entries[e.name] = e
		for d := e.name; ; {
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				break
			}
			d = d[:i]
			if _, ok := dirs[d]; ok {
				break
			}
			dirs[d] = struct{}{}
		}
	}
	return entries, dirs, ""
}

func validIndexMode(m uint32) bool {
	switch filemode.FileMode(m) {
	case filemode.Regular, filemode.Executable, filemode.Symlink:
		return true
	}
	return false
}

// matchTree checks that the tree treeHash holds exactly entries.
func matchTree(trees *treeReader, treeHash plumbing.Hash, entries map[string]*indexEntry) string {
	n := 0
	var walk func(h plumbing.Hash, prefix string) string
	walk = func(h plumbing.Hash, prefix string) string {
		t, err := trees.read(h)
		if err != nil {
			return "cannot read the pinned tree: " + err.Error()
		}
		for _, te := range t {
			p := prefix + te.name
			if te.mode == filemode.Dir {
				if r := walk(te.hash, p+"/"); r != "" {
					return r
				}
				continue
			}
			e, ok := entries[p]
			switch {
			case !ok:
				return "pinned file " + strconv.Quote(p) + " is not in the index"
			case filemode.FileMode(e.mode) != te.mode && !(te.mode == filemode.Deprecated && filemode.FileMode(e.mode) == filemode.Regular):
				return "index mode of " + strconv.Quote(p) + " differs from the pinned tree"
			case e.hash != te.hash:
				return "index blob of " + strconv.Quote(p) + " differs from the pinned tree"
			}
			n++
		}
		return ""
	}
	if r := walk(treeHash, ""); r != "" {
		return r
	}
	if n != len(entries) {
		return "the index holds files that are not in the pinned tree"
	}
	return ""
}

// worktreeCheck walks a worktree against the index, directories in
// parallel.
type worktreeCheck struct {
	root       string
	entries    map[string]*indexEntry
	dirs       map[string]struct{}
	indexMtime time.Time // of the index file; zero when unknown
	beforeDir  func(string) error
	allow      func(rel, full string) string

	indexSec, indexNsec int64

	files  atomic.Int64
	failed atomic.Bool
	mu     sync.Mutex // guards reason and err
	reason string
	err    error
}

// maxWalkers bounds the goroutines that walk a worktree.
const maxWalkers = 4

func (w *worktreeCheck) fail(reason string, err error) {
	w.mu.Lock()
	if w.reason == "" && w.err == nil {
		w.reason, w.err = reason, err
	}
	w.mu.Unlock()
	w.failed.Store(true)
}

func (w *worktreeCheck) run() (string, error) {
	w.setIndexTime()
	// A subdirectory goes to a new goroutine while one of the slots is
	// free, else it is walked inline.
	slots := make(chan struct{}, min(maxWalkers, max(2, runtime.GOMAXPROCS(0)))-1)
	var wg sync.WaitGroup
	var push func(rel string)
	push = func(rel string) {
		select {
		case slots <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.dir(rel, push)
				<-slots
			}()
		default:
			w.dir(rel, push)
		}
	}
	w.dir("", push)
	wg.Wait()
	if w.reason != "" || w.err != nil {
		return w.reason, w.err
	}
	if n := w.files.Load(); n != int64(len(w.entries)) {
		return fmt.Sprintf("%d tracked files are missing from the worktree", int64(len(w.entries))-n), nil
	}
	return "", nil
}

func (w *worktreeCheck) setIndexTime() {
	w.indexSec, w.indexNsec = w.indexMtime.Unix(), int64(w.indexMtime.Nanosecond())
	if w.indexMtime.IsZero() {
		w.indexSec = math.MinInt64 // every entry is racy: re-hash all
	}
}

// dir checks one worktree directory (rel is "" for the root).
func (w *worktreeCheck) dir(rel string, push func(string)) {
	if w.failed.Load() {
		return
	}
	abs := w.root
	if rel != "" {
		abs = filepath.Join(w.root, filepath.FromSlash(rel))
	}
	if w.beforeDir != nil {
		if err := w.beforeDir(abs); err != nil {
			w.fail("", err)
			return
		}
	}
	d, err := openDir(abs)
	if err != nil {
		w.fail("cannot read directory "+strconv.Quote(rel)+": "+errText(err), nil)
		return
	}
	defer d.close()
	names, err := d.names()
	if err != nil {
		w.fail("cannot read directory "+strconv.Quote(rel)+": "+errText(err), nil)
		return
	}
	for _, name := range names {
		if w.failed.Load() {
			return
		}
		if rel == "" && name == ".git" {
			continue
		}
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		st, err := d.lstat(name)
		if err != nil {
			w.fail("cannot stat "+strconv.Quote(p)+": "+errText(err), nil)
			return
		}
		if st.kind == kindDir {
			if _, ok := w.dirs[p]; !ok && w.allow == nil {
				w.fail("directory "+strconv.Quote(p)+" is not in the index (untracked or ignored)", nil)
				return
			}
			push(p)
			continue
		}
		e, ok := w.entries[p]
		if !ok && w.allow != nil {
			if r := w.allow(p, abs+string(os.PathSeparator)+name); r != "" {
				w.fail(r, nil)
				return
			}
			continue
		}
		if !ok {
			w.fail("file "+strconv.Quote(p)+" is not in the index (untracked or ignored)", nil)
			return
		}
		if r := w.file(abs+string(os.PathSeparator)+name, p, e, &st); r != "" {
			w.fail(r, nil)
			return
		}
		w.files.Add(1)
	}
}

// statData is what the check needs of lstat(2).
type statData struct {
	kind                fileKind
	exec                bool // owner execute bit
	mtimeSec, mtimeNsec int64
	ctimeSec, ctimeNsec int64
	ino                 uint64
	uid, gid            uint32
	size                int64
}

type fileKind uint8

const (
	kindOther fileKind = iota
	kindRegular
	kindDir
	kindSymlink
)

// file checks one worktree file against its index entry.
func (w *worktreeCheck) file(full, p string, e *indexEntry, st *statData) string {
	var mode filemode.FileMode
	switch st.kind {
	case kindRegular:
		mode = filemode.Regular
		if st.exec {
			mode = filemode.Executable
		}
	case kindSymlink:
		mode = filemode.Symlink
	default:
		return strconv.Quote(p) + " is not a regular file or symlink"
	}
	if mode != filemode.FileMode(e.mode) {
		return strconv.Quote(p) + " has a different mode than the index"
	}
	if w.statClean(e, st) {
		return ""
	}
	sum, err := blobID(full, mode)
	if err != nil {
		return "cannot read " + strconv.Quote(p) + ": " + errText(err)
	}
	if sum != e.hash {
		return strconv.Quote(p) + " is modified"
	}
	return ""
}

// statClean reports whether st matches e's stat data and e is not racily
// clean, so that git would not look at the file's bytes either. The index
// holds seconds, inode and size truncated to 32 bits.
func (w *worktreeCheck) statClean(e *indexEntry, st *statData) bool {
	if e.mtimeSec != uint32(st.mtimeSec) || int64(e.mtimeNsec) != st.mtimeNsec ||
		e.ctimeSec != uint32(st.ctimeSec) || int64(e.ctimeNsec) != st.ctimeNsec ||
		e.ino != uint32(st.ino) || e.uid != st.uid || e.gid != st.gid ||
		e.size != uint32(st.size) {
		return false
	}
	// Racily clean: the file may have changed within the index's
	// timestamp granularity after the index was written.
	if w.indexSec < st.mtimeSec || w.indexSec == st.mtimeSec && w.indexNsec <= st.mtimeNsec {
		return false
	}
	return true
}

// blobID returns git's blob id of the file at full: SHA-1 of "blob <size>\0"
// and the bytes (the link target for a symlink).
func blobID(full string, mode filemode.FileMode) (plumbing.Hash, error) {
	h := sha1.New()
	var sum plumbing.Hash
	if mode == filemode.Symlink {
		target, err := os.Readlink(full)
		if err != nil {
			return sum, err
		}
		fmt.Fprintf(h, "blob %d\x00%s", len(target), target)
		copy(sum[:], h.Sum(nil))
		return sum, nil
	}
	f, err := os.Open(full)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sum, err
	}
	fmt.Fprintf(h, "blob %d\x00", fi.Size())
	n, err := io.Copy(h, f)
	if err != nil {
		return sum, err
	}
	if n != fi.Size() {
		return sum, errors.New("file changed while read")
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// errText is the operating system's message for err, without the path.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// EnsurePtoIsaRoot makes dir a verified checkout of pin: when CheckPtoIsa
// does not verify it (missing, not a checkout, not at the pin, or holding
// anything but the pinned tree), it clones url into a temporary sibling,
// checks out pin, verifies the clone, and only then puts it in dir's place,
// removing whatever was there. It returns the check of the final checkout.
func EnsurePtoIsaRoot(ctx context.Context, url, pin, dir string) (PtoIsaCheck, error) {
	check, err := CheckPtoIsa(dir, pin, nil)
	if err != nil || check.Verified {
		return check, err
	}
	if !isFullHash(pin) {
		return check, &PtoIsaError{Op: "clone", Reason: "pin is not a full commit id"}
	}
	if url == "" {
		return check, &PtoIsaError{Op: "clone", Reason: "checkout is not verified (" + check.Reason + ") and no URL to clone from"}
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return check, &PtoIsaError{Op: "clone", Reason: errText(err)}
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".clone-")
	if err != nil {
		return check, &PtoIsaError{Op: "clone", Reason: errText(err)}
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place
	repo, err := git.PlainCloneContext(ctx, tmp, false, &git.CloneOptions{URL: url, NoCheckout: true, Tags: git.NoTags})
	if err != nil {
		return check, &PtoIsaError{Op: "clone", Reason: err.Error()}
	}
	wt, err := repo.Worktree()
	if err != nil {
		return check, &PtoIsaError{Op: "checkout", Reason: err.Error()}
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(pin), Force: true}); err != nil {
		return check, &PtoIsaError{Op: "checkout", Reason: err.Error()}
	}
	fresh, err := CheckPtoIsa(tmp, pin, nil)
	if err != nil {
		return fresh, err
	}
	if !fresh.Verified {
		return fresh, &PtoIsaError{Op: "verify", Reason: "fresh clone is not the pinned tree: " + fresh.Reason}
	}
	old := ""
	if _, err := os.Lstat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return check, &PtoIsaError{Op: "replace", Reason: errText(err)}
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return check, &PtoIsaError{Op: "replace", Reason: errText(err)}
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return CheckPtoIsa(dir, pin, nil)
}

// PtoIsaError is a failure to obtain a verified PTO-ISA checkout. Plain
// data, safe for concurrent reads.
type PtoIsaError struct {
	Op     string // clone, checkout, verify, replace
	Reason string
}

func (e *PtoIsaError) Error() string { return "PTO-ISA " + e.Op + ": " + e.Reason }

// watchGitDir calls beforeDir with the directories whose files decide what
// the checkout at dir has checked out, before any of them is read: dir
// itself (where a .git file would point elsewhere), its .git directory
// (HEAD, packed-refs, the index) and the directory holding the loose ref
// HEAD names (which may not exist: the ref is then in packed-refs, and the
// watcher watches the nearest existing parent).
func watchGitDir(dir string, beforeDir func(string) error) error {
	if err := beforeDir(dir); err != nil {
		return err
	}
	gitDir := filepath.Join(dir, ".git")
	if err := beforeDir(gitDir); err != nil {
		return err
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return nil // the open below reports it
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok || !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return nil
	}
	return beforeDir(filepath.Dir(filepath.Join(gitDir, filepath.FromSlash(ref))))
}
