package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// Content fingerprints
//
// A content fingerprint identifies a list of ContentRoots by the bytes of
// their files, as pypto._identity.fingerprint_content does:
//
//	digest(("content", [root, ...]))
//	root      = (str(path), python_only, [entry, ...])
//	entry     = ("directory", rel, resolved)            omitted when python_only
//	          | ("file", rel, resolved, size, sha256hex)
//
// A directory contributes its own entry, then the entries of its children,
// sorted by name in code-point order, depth first; so a root's entries form
// one flat list in walk order. rel is "" for the root itself, else the
// slash-joined names below the root; resolved is the fully resolved absolute
// path (symlinks followed, so a symlink contributes its target's resolved
// path and content). Names that are not valid UTF-8 become Strs as Python
// sees them (StrFromOSBytes). Directories skip entries named ".git" and
// "__pycache__" and regular files whose names end ".pyc" or ".pyo"; with
// python_only they keep only files whose names end ".py". A root that is
// itself a file always contributes.
//
// There is no partial digest. Fingerprint reports an *UnavailableError for
// no roots, a missing path, a broken symlink, a symlink loop, a directory
// that contains itself through a symlink, anything that is neither a
// regular file nor a directory, an unreadable file or directory, a file
// whose size, mtime or ctime changed while it was read, a file replaced
// (another device or inode) while it was read, and a directory whose
// listing or resolution changed before the fingerprint was complete.
//
// Files are hashed by a bounded pool of workers while one goroutine walks
// the directories; the result is the same as a sequential walk's, and when
// several inputs are unavailable the one reported is the first in walk
// order. When all files are read, every directory is listed again, and
// every symlink and root resolved again, and compared: a change anywhere in
// between makes the result unavailable. File metadata detects races; it
// never replaces content in the identity.

// Content is a content fingerprint. It is plain data, safe for concurrent
// reads.
type Content struct {
	// Digest is digest(("content", Roots)).
	Digest Sum
	// Roots holds the root records, one per ContentRoot, in order.
	Roots List
	// Files is the number of files read; Bytes the number of bytes hashed.
	Files int
	Bytes int64
}

// Record returns the record whose digest is c.Digest: ("content", Roots).
func (c *Content) Record() Tuple { return T(Str("content"), c.Roots) }

// UnavailableError says why a content fingerprint does not exist. Root is
// the root's path as captured, Rel the slash-joined path below it ("" for
// the root itself), Reason what is wrong there.
type UnavailableError struct{ Root, Rel, Reason string }

func (e *UnavailableError) Error() string {
	switch {
	case e.Root == "":
		return "content unavailable: " + e.Reason
	case e.Rel == "":
		return "content unavailable: root " + quoteName(e.Root) + ": " + e.Reason
	default:
		return "content unavailable: root " + quoteName(e.Root) + ": " + quoteName(e.Rel) + ": " + e.Reason
	}
}

// quoteName returns s as is when it is printable UTF-8 without spaces at
// its ends, else Go-quoted.
func quoteName(s string) string {
	if s == "" || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// FingerprintOptions tune FingerprintWith.
type FingerprintOptions struct {
	// Workers bounds the goroutines hashing files; 0 means GOMAXPROCS.
	Workers int
	// BeforeDir, when set, is called with each directory's resolved path
	// before the directory is listed (the daemon adds a watch there). An
	// error makes the fingerprint unavailable. It is called from one
	// goroutine at a time.
	BeforeDir func(resolvedDir string) error
}

// Fingerprint returns the content fingerprint of roots, or an
// *UnavailableError saying why there is none.
func Fingerprint(roots []ContentRoot) (*Content, error) {
	return FingerprintWith(roots, FingerprintOptions{})
}

// FingerprintExtraSources returns digest(("extra_sources", content,
// extraFingerprint)) where content is the hex digest (a Str) of the content
// fingerprint of paths as python-only roots, or of ("content", []) when
// paths is empty. extraFingerprint is None (nil means None) or a Str. An
// unavailable input is an *UnavailableError.
func FingerprintExtraSources(paths []string, extraFingerprint Value) (Sum, error) {
	switch extraFingerprint.(type) {
	case nil:
		extraFingerprint = None{}
	case None, Str:
	default:
		return Sum{}, fmt.Errorf("extra fingerprint: want None or str, have %s", extraFingerprint.Kind())
	}
	var content Sum
	if len(paths) == 0 {
		content = MustDigest(T(Str("content"), List{}))
	} else {
		roots := make([]ContentRoot, 0, len(paths))
		for _, p := range paths {
			r, err := NewContentRoot(p, true)
			if err != nil {
				return Sum{}, err
			}
			roots = append(roots, r)
		}
		c, err := Fingerprint(roots)
		if err != nil {
			return Sum{}, err
		}
		content = c.Digest
	}
	return Digest(T(Str("extra_sources"), Str(content.String()), extraFingerprint))
}

// FingerprintWith is Fingerprint with options.
func FingerprintWith(roots []ContentRoot, opt FingerprintOptions) (*Content, error) {
	if len(roots) == 0 {
		return nil, &UnavailableError{Reason: "no content inputs"}
	}
	for _, r := range roots {
		if !strings.HasPrefix(r.path, "/") {
			return nil, &UnavailableError{Root: r.path, Reason: "not a root made by NewContentRoot"}
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	w := &walker{opt: opt, jobs: make(chan *entry, 4*workers), buf: make([]byte, dirBufSize)}
	w.firstErr.Store(math.MaxInt64)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(w.hashWorker)
	}
	rootEnds := make([]int, 0, len(roots))
	for _, r := range roots {
		if w.stopped() {
			break
		}
		w.root = r
		w.walkRoot()
		rootEnds = append(rootEnds, len(w.order))
	}
	close(w.jobs)
	wg.Wait()
	if err := w.firstError(); err != nil {
		return nil, err
	}
	if err := w.verify(); err != nil {
		return nil, err
	}

	c := &Content{Roots: make(List, len(roots))}
	start := 0
	for i, r := range roots {
		end := rootEnds[i]
		entries := make(List, 0, end-start)
		for _, e := range w.order[start:end] {
			if e.dir {
				entries = append(entries, T(Str("directory"), StrFromOSBytes(e.rel), StrFromOSBytes(e.resolved)))
				continue
			}
			entries = append(entries, T(Str("file"), StrFromOSBytes(e.rel), StrFromOSBytes(e.resolved),
				IntOf(e.size), Str(hex.EncodeToString(e.sum[:]))))
			c.Files++
			c.Bytes += e.size
		}
		c.Roots[i] = T(StrFromOSBytes(r.path), Bool(r.pythonOnly), entries)
		start = end
	}
	d, err := Digest(c.Record())
	if err != nil {
		return nil, err
	}
	c.Digest = d
	return c, nil
}

// Limits and sizes of the walk.
const (
	// maxSymlinks is the number of symlinks one resolution may follow, as
	// Linux's MAXSYMLINKS.
	maxSymlinks = 40
	// readChunk is the size of each worker's read buffer: small files are
	// read in one call, large ones in chunks of this size.
	readChunk = 1 << 20
	// dirBufSize is the getdents buffer of the walker.
	dirBufSize = 32 << 10
)

// Test hooks, set only by tests to inject races at exact points.
var (
	// testHookFileRead runs after a file's bytes are read, before its
	// metadata is checked again.
	testHookFileRead func(resolved string)
	// testHookDirListed runs after a directory is listed.
	testHookDirListed func(resolved string)
	// testHookBeforeVerify runs after all files are read, before the
	// directories and symlinks are checked again.
	testHookBeforeVerify func()
	// testHookOpen, when it returns an error, replaces the result of
	// opening path (a file or a directory).
	testHookOpen func(path string) error
)

// fileKind is the type of a directory entry or inode.
type fileKind uint8

const (
	kindUnknown fileKind = iota
	kindReg
	kindDir
	kindLink
	kindFIFO
	kindSocket
	kindCharDev
	kindBlockDev
)

func (k fileKind) String() string {
	switch k {
	case kindReg:
		return "regular file"
	case kindDir:
		return "directory"
	case kindLink:
		return "symlink"
	case kindFIFO:
		return "named pipe"
	case kindSocket:
		return "socket"
	case kindCharDev:
		return "character device"
	case kindBlockDev:
		return "block device"
	}
	return "unknown file type"
}

// fileStat is the part of an inode's metadata the walk uses.
type fileStat struct {
	kind         fileKind
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

func (s fileStat) sameInode(t fileStat) bool { return s.dev == t.dev && s.ino == t.ino }

// dirent is one name of a directory listing.
type dirent struct {
	name string // OS bytes
	key  string // the name's Str form, which sorts in code-point order
	ino  uint64
	kind fileKind // kindUnknown when the filesystem does not say
}

// entry is one directory or file of the walk, in walk order.
type entry struct {
	idx      int
	dir      bool
	rel      string
	resolved string
	root     string
	// Set by a hash worker.
	size int64
	sum  Sum
	err  *UnavailableError
}

// check is a recheck made after all files are read.
type check struct {
	idx      int
	root     string
	rel      string
	resolved string
	st       fileStat
	// A directory: its filtered listing.
	dir     bool
	listing []dirent
	python  bool
	// A symlink (or a root): where resolution starts.
	link       bool
	base, rest string
	// A file reached by resolution (a root or a symlink): its metadata.
	file bool
}

// walker walks the roots in one goroutine and hands files to workers.
type walker struct {
	opt  FingerprintOptions
	root ContentRoot
	buf  []byte

	order  []*entry // the walker's; workers see only their entries
	checks []check
	jobs   chan *entry

	// firstErr is the smallest walk index that failed so far; entries
	// after it need not be read.
	firstErr atomic.Int64
	walkErr  *UnavailableError // the walker's own failure, at index walkIdx
	walkIdx  int
}

func (w *walker) noteErr(idx int) {
	for {
		cur := w.firstErr.Load()
		if int64(idx) >= cur || w.firstErr.CompareAndSwap(cur, int64(idx)) {
			return
		}
	}
}

func (w *walker) stopped() bool { return w.firstErr.Load() != math.MaxInt64 }

// fail records the walker's failure at the current position.
func (w *walker) fail(rel, reason string) {
	w.walkErr = &UnavailableError{Root: w.root.path, Rel: rel, Reason: reason}
	w.walkIdx = len(w.order)
	w.noteErr(w.walkIdx)
}

// firstError returns the failure first in walk order, as a sequential walk
// would have met it.
func (w *walker) firstError() error {
	best, bestIdx := w.walkErr, w.walkIdx
	for _, e := range w.order {
		if e.err != nil && (best == nil || e.idx < bestIdx) {
			best, bestIdx = e.err, e.idx
			break
		}
	}
	if best == nil {
		return nil
	}
	return best
}

func (w *walker) add(dir bool, rel, resolved string) *entry {
	e := &entry{idx: len(w.order), dir: dir, rel: rel, resolved: resolved, root: w.root.path}
	w.order = append(w.order, e)
	return e
}

func (w *walker) addFile(rel, resolved string) {
	w.jobs <- w.add(false, rel, resolved)
}

func (w *walker) hashWorker() {
	buf := make([]byte, readChunk)
	h := sha256.New()
	for e := range w.jobs {
		if int64(e.idx) > w.firstErr.Load() {
			continue // a sequential walk would have stopped before it
		}
		size, reason := hashFile(e.resolved, buf, h, &e.sum)
		if reason != "" {
			e.err = &UnavailableError{Root: e.root, Rel: e.rel, Reason: reason}
			w.noteErr(e.idx)
			continue
		}
		e.size = size
	}
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// skippedName reports names a directory never contributes, whatever they
// are.
func skippedName(name string) bool { return name == ".git" || name == "__pycache__" }

// skippedFile reports regular files (or symlinks to them) a directory does
// not contribute.
func skippedFile(name string, pythonOnly bool) bool {
	if strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".pyo") {
		return true
	}
	return pythonOnly && !strings.HasSuffix(name, ".py")
}

// recheckFilter keeps the names of a listing whose change could change the
// fingerprint: not skipped names, and not regular files skipped by name.
func recheckFilter(ents []dirent, pythonOnly bool) []dirent {
	out := ents[:0:0]
	for _, d := range ents {
		if skippedName(d.name) || d.kind == kindReg && skippedFile(d.name, pythonOnly) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func sameListing(a, b []dirent) bool {
	return slices.EqualFunc(a, b, func(x, y dirent) bool {
		return x.name == y.name && x.ino == y.ino && x.kind == y.kind
	})
}

func sortDirents(ents []dirent) {
	for i := range ents {
		ents[i].key = string(StrFromOSBytes(ents[i].name))
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.key, b.key) })
}

func (w *walker) walkRoot() {
	resolved, st, reason := resolve("/", w.root.path)
	if reason != "" {
		w.fail("", reason)
		return
	}
	w.checks = append(w.checks, check{idx: len(w.order), root: w.root.path, resolved: resolved,
		link: true, base: "/", rest: w.root.path})
	switch st.kind {
	case kindDir:
		w.walkDir("", resolved, st, nil)
	case kindReg:
		w.checks = append(w.checks, check{idx: len(w.order), root: w.root.path, resolved: resolved, st: st, file: true})
		w.addFile("", resolved)
	default:
		w.fail("", "not a regular file or directory ("+st.kind.String()+")")
	}
}

func (w *walker) walkDir(rel, resolved string, st fileStat, ancestors []fileStat) {
	for _, a := range ancestors {
		if a.sameInode(st) {
			w.fail(rel, "directory cycle: a symlink leads back to an enclosing directory")
			return
		}
	}
	if w.opt.BeforeDir != nil {
		if err := w.opt.BeforeDir(resolved); err != nil {
			w.fail(rel, "cannot watch directory: "+err.Error())
			return
		}
	}
	dst, ents, err := listDir(resolved, w.buf)
	if err != nil {
		w.fail(rel, dirErrReason(err))
		return
	}
	if !dst.sameInode(st) {
		w.fail(rel, "directory replaced while read")
		return
	}
	if testHookDirListed != nil {
		testHookDirListed(resolved)
	}
	sortDirents(ents)
	if !w.root.pythonOnly {
		w.add(true, rel, resolved)
	}
	w.checks = append(w.checks, check{idx: len(w.order), root: w.root.path, rel: rel, resolved: resolved,
		st: dst, dir: true, listing: recheckFilter(ents, w.root.pythonOnly), python: w.root.pythonOnly})
	ancestors = append(ancestors[:len(ancestors):len(ancestors)], dst)

	for _, d := range ents {
		if w.stopped() {
			return
		}
		if skippedName(d.name) {
			continue
		}
		crel := joinRel(rel, d.name)
		cpath := joinPath(resolved, d.name)
		kind := d.kind
		if kind == kindUnknown {
			s, err := lstat(cpath)
			if err != nil {
				w.fail(crel, "directory changed while read: "+errReason(err))
				return
			}
			kind = s.kind
		}
		cres := cpath
		var cst fileStat
		switch kind {
		case kindLink:
			var reason string
			cres, cst, reason = resolve(resolved, d.name)
			if reason != "" {
				w.fail(crel, reason)
				return
			}
			w.checks = append(w.checks, check{idx: len(w.order), root: w.root.path, rel: crel, resolved: cres,
				link: true, base: resolved, rest: d.name})
			kind = cst.kind
		case kindDir:
			s, err := lstat(cpath)
			if err != nil || s.kind != kindDir {
				w.fail(crel, "directory changed while read")
				return
			}
			cst = s
		}
		switch kind {
		case kindReg:
			if skippedFile(d.name, w.root.pythonOnly) {
				continue
			}
			if d.kind == kindLink {
				w.checks = append(w.checks, check{idx: len(w.order), root: w.root.path, rel: crel, resolved: cres, st: cst, file: true})
			}
			w.addFile(crel, cres)
		case kindDir:
			w.walkDir(crel, cres, cst, ancestors)
		default:
			w.fail(crel, "not a regular file or directory ("+kind.String()+")")
			return
		}
	}
}

// verify checks, after every file was read, that no directory listing, no
// symlink resolution and no file reached by resolution changed meanwhile.
func (w *walker) verify() error {
	if testHookBeforeVerify != nil {
		testHookBeforeVerify()
	}
	buf := w.buf
	for _, c := range w.checks {
		bad := func(reason string) error { return &UnavailableError{Root: c.root, Rel: c.rel, Reason: reason} }
		switch {
		case c.dir:
			st, ents, err := listDir(c.resolved, buf)
			if err != nil || !st.sameInode(c.st) {
				return bad("directory replaced while read")
			}
			sortDirents(ents)
			if !sameListing(recheckFilter(ents, c.python), c.listing) {
				return bad("directory listing changed while read")
			}
		case c.link:
			res, _, reason := resolve(c.base, c.rest)
			if reason != "" || res != c.resolved {
				return bad("symlink resolution changed while read")
			}
		case c.file:
			st, err := lstat(c.resolved)
			if err != nil || !st.sameInode(c.st) {
				return bad("file replaced while read")
			}
			if st.size != c.st.size || st.mtime != c.st.mtime || st.ctime != c.st.ctime {
				return bad("file changed while read")
			}
		}
	}
	return nil
}

// resolve resolves rest relative to the resolved directory base (an
// absolute path rest is resolved from "/"), following symlinks and ".."
// as the kernel does, and returns the resolved path and its metadata, or a
// reason why it does not resolve.
func resolve(base, rest string) (string, fileStat, string) {
	dest := base
	if strings.HasPrefix(rest, "/") {
		dest = "/"
	}
	links := 0
	var st fileStat
	have := false
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			if i := strings.LastIndexByte(dest, '/'); i > 0 {
				dest = dest[:i]
			} else {
				dest = "/"
			}
			have = false
			continue
		}
		next := joinPath(dest, comp)
		s, err := lstat(next)
		if err != nil {
			if links > 0 && isNotExist(err) {
				return "", st, "broken symlink"
			}
			return "", st, errReason(err)
		}
		if s.kind == kindLink {
			links++
			if links > maxSymlinks {
				return "", st, "symlink loop"
			}
			target, err := readlink(next)
			if err != nil {
				return "", st, errReason(err)
			}
			if strings.HasPrefix(target, "/") {
				dest = "/"
			}
			if rest == "" {
				rest = target
			} else {
				rest = target + "/" + rest
			}
			have = false
			continue
		}
		if s.kind != kindDir && strings.Trim(rest, "/") != "" {
			return "", st, "not a directory"
		}
		dest, st, have = next, s, true
	}
	if !have {
		s, err := lstat(dest)
		if err != nil {
			return "", st, errReason(err)
		}
		st = s
	}
	return dest, st, ""
}
