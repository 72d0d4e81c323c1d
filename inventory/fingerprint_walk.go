package inventory

import (
	"crypto/sha256"
	"errors"
	"hash"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The walk has two phases, each spread over Workers goroutines:
//
//  1. Read: tasks on a stack list directories, building a tree of nodes
//     whose children are in sorted order (symlinks are resolved and every
//     entry is classified here), and read files: a directory's own
//     regular files of up to smallFile bytes through its descriptor
//     (openat resolves one name, not a whole path), batchSize files a
//     task, the rest of a larger one by a task of its own; files reached
//     through symlinks or given as roots by path, one a task. A racily clean file read in
//     one chunk costs openat, read, fstat and close (openFile). The tree
//     is then flattened into walk order.
//  2. Verify: every symlink and root is resolved again, every file reached
//     by resolution stat'ed again, and every directory stat'ed again, in
//     parallel, and compared. A directory whose mtime or ctime moved, or
//     that had changed less than recentWindow before it was listed (so a
//     change within the filesystem's clock tick might not move them), is
//     listed again, and the names that contribute (not .git, __pycache__,
//     skipped files) must be the same, with the same inodes and types.
//
// A problem is recorded at its node. Work that comes after the first
// problem found so far in walk order is skipped, but work before it is
// always done, so the problem reported is the first in walk order: the
// one a sequential walk would meet.

// node is a directory, a file or a problem in the tree of the walk. Most
// nodes are files read through their directory, so what only directories
// and nodes reached through a symlink need is in *nodeExt, nil for the
// others: a smaller node for every file.
type node struct {
	parent *node
	root   *ContentRoot
	idx    int32 // among parent's children (among the roots for a root)
	depth  int32

	rel      string
	name     string
	resolved string
	kind     fileKind // kindDir or kindReg; kindUnknown for a problem
	// listed: a directory was listed. recent says the directory changed
	// so shortly before it was listed that a change in the same clock
	// tick could leave its timestamps as they were: verify lists it again
	// instead of trusting them. link: reached through a symlink (or a
	// root), see nodeExt. hashed: a file's results are in.
	listed, recent, link, hashed bool
	err                          *UnavailableError

	// A file: its results, once hashed.
	size int64
	sum  Sum

	*nodeExt // a directory's or a linked node's; nil for other files
}

// nodeExt is the part of a node only directories and nodes reached through
// a symlink (or roots) have.
type nodeExt struct {
	// A directory: children in walk order, its metadata when listed, and
	// its filtered listing for verify. Until it is listed, st of a
	// directory reached through a symlink (or a root) holds the metadata
	// resolution found, which the opened directory must match.
	children []*node
	st       fileStat
	listing  []dirent

	// Reached through a symlink (or a root): resolution starts at linkBase
	// with linkRest. A file reached so keeps its resolution metadata in st.
	linkBase, linkRest string
}

// precedes reports whether a comes before b in walk order. A directory
// precedes what is below it.
func precedes(a, b *node) bool {
	if a == b {
		return false
	}
	for a.depth > b.depth {
		a = a.parent
		if a == b {
			return false
		}
	}
	for b.depth > a.depth {
		b = b.parent
		if a == b {
			return true
		}
	}
	for a.parent != b.parent {
		a, b = a.parent, b.parent
	}
	return a.idx < b.idx
}

// walker holds the state shared by the goroutines of a walk. Its methods
// are safe for concurrent use by the walk's own goroutines.
type walker struct {
	opt     FingerprintOptions
	workers int
	start   int64 // wall clock (ns) when the walk started
	// cleanBefore is start less recentWindow: a file whose ctime and
	// mtime are older is racily clean (openFile).
	cleanBefore int64

	queue scheduler // directories to list and batches of files to read

	// failed is set once any problem is found, so that skip needs no lock
	// until then. mu guards firstErr, the earliest problem in walk order
	// found so far.
	failed   atomic.Bool
	mu       sync.Mutex
	firstErr *node

	// nodes counts the nodes made below the roots, to size the walk order.
	nodes atomic.Int64

	// over is set once the walk passed opt.Budget: every task then stops.
	over atomic.Bool

	// beforeDirMu serializes calls of opt.BeforeDir.
	beforeDirMu sync.Mutex
}

// readBufs holds *[]byte of readChunk bytes, shared by every walk: a daemon
// fingerprints a few small sources per request, and a pool per walk would
// allocate (and zero) a fresh megabyte per worker each time.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// hashers holds SHA-256 hash.Hashes for files, shared by every walk too.
var hashers = sync.Pool{New: func() any { return sha256.New() }}

// newWalker returns a walker whose tasks run on sched, or on a taskQueue
// of workers when sched is nil.
func newWalker(opt FingerprintOptions, workers int, sched scheduler) *walker {
	if sched == nil {
		sched = newTaskQueue(workers)
	}
	start := time.Now().UnixNano()
	return &walker{opt: opt, workers: workers, start: start, cleanBefore: start - int64(recentWindow), queue: sched}
}

// problem records err at n.
func (w *walker) problem(n *node, reason string) {
	n.err = &UnavailableError{Root: n.root.path, Rel: n.rel, Reason: reason}
	w.mu.Lock()
	if w.firstErr == nil || precedes(n, w.firstErr) {
		w.firstErr = n
	}
	w.mu.Unlock()
	w.failed.Store(true)
}

// skip reports whether n comes after a problem already found.
func (w *walker) skip(n *node) bool {
	if w.opt.Budget != nil {
		return w.over.Load() // a budgeted walk reads on past a problem
	}
	if !w.failed.Load() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr != nil && precedes(w.firstErr, n)
}

// charge charges files and bytes to the walk's budget and reports whether
// the walk may go on.
func (w *walker) charge(files, bytes int64) bool {
	if w.opt.Budget.Charge(files, bytes) {
		return true
	}
	w.over.Store(true)
	w.failed.Store(true)
	return false
}

// spawn queues f for the workers.
func (w *walker) spawn(f func()) { w.queue.push(f) }

// scheduler runs the walk's tasks: push queues a task (tasks may push
// more), run returns when every task has run.
type scheduler interface {
	push(f func())
	run()
}

// taskQueue is a stack of tasks run by up to a fixed number of
// goroutines; tasks may queue more tasks. Last in, first out keeps the
// walk depth first, so few listings wait in memory. A goroutine is
// started only when a task is queued and none is waiting for one, so a
// walk of one file does not start a goroutine per processor.
//
// It replaced groupScheduler (an errgroup with SetLimit, a task queued
// while every worker was busy run in place by the pusher), which is kept
// as the baseline of BenchmarkWalkScheduler: over 100,000 small files in
// 16,677 directories the errgroup started a goroutine per directory and
// took 1.08x the queue's time (go test -bench, two interleaved runs:
// 548 and 537 ms against 507 and 495 ms).
type taskQueue struct {
	// mu guards the fields below; cond signals a new task or the end.
	mu   sync.Mutex
	cond sync.Cond
	// tasks holds the queued tasks; pending counts them and the running
	// ones.
	tasks   []func()
	pending int
	// workers is the most goroutines to start, 0 until run; started
	// counts those started; idle those waiting for a task that no push
	// has signalled yet.
	workers, started, idle int
	wg                     sync.WaitGroup // the started goroutines
	limit                  int            // workers, set before run
}

func (q *taskQueue) push(f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tasks = append(q.tasks, f)
	q.pending++
	switch {
	case q.idle > 0:
		q.idle--
		q.cond.Signal()
	case q.started < q.workers:
		q.started++
		q.wg.Go(q.work)
	}
}

func newTaskQueue(workers int) *taskQueue {
	q := &taskQueue{limit: workers}
	q.cond.L = &q.mu
	return q
}

// run runs the queued tasks, and those they queue, on at most limit
// goroutines, the calling one among them, and returns when none is left.
func (q *taskQueue) run() {
	q.mu.Lock()
	q.workers = q.limit
	q.started = min(q.limit, len(q.tasks))
	for range q.started - 1 {
		q.wg.Go(q.work)
	}
	q.mu.Unlock()
	if q.started > 0 {
		q.work()
	}
	q.wg.Wait()
}

// work runs tasks until none is queued or running.
func (q *taskQueue) work() {
	q.mu.Lock()
	for {
		for len(q.tasks) == 0 && q.pending > 0 {
			q.idle++
			q.cond.Wait()
		}
		if q.pending == 0 {
			q.mu.Unlock()
			q.cond.Broadcast()
			return
		}
		f := q.tasks[len(q.tasks)-1]
		q.tasks[len(q.tasks)-1] = nil
		q.tasks = q.tasks[:len(q.tasks)-1]
		q.mu.Unlock()
		f()
		q.mu.Lock()
		q.pending--
	}
}

// list runs phase 1 for the roots and returns their nodes.
func (w *walker) list(roots []ContentRoot) []*node {
	tops := make([]*node, len(roots))
	for i := range roots {
		n := &node{idx: int32(i), root: &roots[i], nodeExt: &nodeExt{}}
		tops[i] = n
		resolved, st, reason := resolve("/", n.root.path, nil)
		if reason != "" {
			w.problem(n, reason)
			continue
		}
		n.resolved, n.st, n.link, n.linkBase, n.linkRest = resolved, st, true, "/", n.root.path
		switch st.kind {
		case kindDir:
			n.kind = kindDir
			w.spawn(func() { w.walkDir(n) })
		case kindReg:
			n.kind = kindReg
			if !w.charge(1, 0) {
				continue
			}
			w.spawn(func() { w.hashPath(n) })
		default:
			w.problem(n, "not a regular file or directory ("+st.kind.String()+")")
		}
	}
	w.queue.run()
	return tops
}

// openDir is a directory descriptor shared by the batches hashing the
// directory's files; the last to release it closes it.
type openDir struct {
	fd   int
	refs atomic.Int32
}

func (d *openDir) release() {
	if d.refs.Add(-1) == 0 {
		closeFD(d.fd)
	}
}

func (w *walker) walkDir(n *node) {
	if w.skip(n) {
		return
	}
	if w.opt.BeforeDir != nil {
		w.beforeDirMu.Lock()
		err := w.opt.BeforeDir(n.resolved)
		w.beforeDirMu.Unlock()
		if err != nil {
			w.problem(n, "cannot watch directory: "+err.Error())
			return
		}
	}
	fd, st, err := openDirectory(n.resolved)
	if err != nil {
		w.problem(n, dirErrReason(err))
		return
	}
	dir := &openDir{fd: fd}
	dir.refs.Store(1)
	defer dir.release()
	if n.link && !st.sameInode(n.st) {
		w.problem(n, "directory replaced while read")
		return
	}
	n.st = st
	n.recent = max(st.mtime, st.ctime) > w.start-int64(recentWindow)
	for a := n.parent; a != nil; a = a.parent {
		if a.st.sameInode(st) {
			w.problem(n, "directory cycle: a symlink leads back to an enclosing directory")
			return
		}
	}
	bp := readBufs.Get().(*[]byte)
	ents, err := readDir(fd, (*bp)[:dirBufSize])
	readBufs.Put(bp)
	if err != nil {
		w.problem(n, dirErrReason(err))
		return
	}
	if testHookDirListed != nil {
		testHookDirListed(n.resolved)
	}
	sortDirents(ents)
	pythonOnly := n.root.pythonOnly
	n.listing = recheckFilter(ents, pythonOnly)
	n.listed = true

	local := w.classifyChildren(n)
	w.nodes.Add(int64(len(n.children)))

	// Read the small files, batchSize at a time on separate goroutines
	// so a large directory still uses every worker.
	for len(local) > batchSize {
		batch := local[len(local)-batchSize:]
		local = local[:len(local)-batchSize]
		dir.refs.Add(1)
		w.spawn(func() {
			defer dir.release()
			w.hashLocal(dir.fd, batch)
		})
	}
	w.hashLocal(fd, local)
}

// beforeLink calls opt.BeforeDir, before a target reached through symlinks
// is read, with each of dirs (readDirs) but listed, the directory being
// listed, which has had its call: a change there (a link retargeted, the
// file written or replaced) then drops what the read is remembered by, as
// a change in the tree itself does. It returns a problem's reason, or "".
func (w *walker) beforeLink(listed string, dirs []string) string {
	w.beforeDirMu.Lock()
	defer w.beforeDirMu.Unlock()
	for _, d := range dirs {
		if d == listed {
			continue
		}
		if err := w.opt.BeforeDir(d); err != nil {
			return "cannot watch directory: " + err.Error()
		}
	}
	return ""
}

// readDirs returns the directories whose change can change what a read of
// resolved, reached through symlinks, reads: each of linkDirs (those that
// hold a symlink followed, as resolve reports them) and, with holder, the
// one that holds resolved; in order, each once.
func readDirs(linkDirs []string, resolved string, holder bool) []string {
	if holder {
		dir := "/"
		if i := strings.LastIndexByte(resolved, '/'); i > 0 {
			dir = resolved[:i]
		}
		linkDirs = append(linkDirs, dir)
	}
	out := linkDirs[:0]
	for _, d := range linkDirs {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// classifyChildren makes the children of the listed directory n, up to
// the first problem, and starts the walk of its subdirectories and the
// reads of its files reached through a link. It returns the other regular
// files, which the caller reads through the directory's descriptor. The
// listing already leaves out the names that never contribute.
func (w *walker) classifyChildren(n *node) []*node {
	pythonOnly := n.root.pythonOnly
	n.children = make([]*node, 0, len(n.listing))
	// One allocation for the children's nodes, not one each: most of the
	// walk's nodes are files in small directories.
	slab := make([]node, len(n.listing))
	paths, prefix := childPaths(n.resolved, n.listing)
	off := 0
	var local []*node
classify:
	for i, d := range n.listing {
		c := &slab[i]
		end := off + prefix + len(d.name)
		*c = node{parent: n, idx: int32(len(n.children)), depth: n.depth + 1, root: n.root,
			name: d.name, resolved: paths[off:end]}
		off = end
		c.rel = childRel(n, c.resolved, d.name)
		kind := d.kind
		if kind == kindUnknown {
			s, err := lstat(c.resolved)
			if err != nil {
				n.children = append(n.children, c)
				w.problem(c, "directory changed while read: "+errReason(err))
				if w.opt.Budget != nil {
					continue // a budgeted walk reads on past a problem
				}
				break
			}
			kind = s.kind
		}
		if kind == kindLink {
			var reason string
			if kind, reason = w.followLink(n, c, d.name); reason != "" {
				n.children = append(n.children, c)
				w.problem(c, reason)
				if w.opt.Budget != nil {
					continue
				}
				break
			}
		}
		switch kind {
		case kindReg:
			if skippedFile(d.name, pythonOnly) {
				continue
			}
			c.kind = kindReg
			n.children = append(n.children, c)
			if !w.charge(1, 0) {
				break classify
			}
			if c.link {
				w.spawn(func() { w.hashPath(c) })
			} else {
				local = append(local, c)
			}
		case kindDir:
			c.kind = kindDir
			if c.nodeExt == nil {
				c.nodeExt = &nodeExt{}
			}
			n.children = append(n.children, c)
			w.spawn(func() { w.walkDir(c) })
		default:
			n.children = append(n.children, c)
			w.problem(c, "not a regular file or directory ("+kind.String()+")")
			if w.opt.Budget != nil {
				continue
			}
			break classify
		}
	}
	return local
}

// followLink resolves the symbolic link name, child c of the directory n,
// into c and returns the kind of its target, or a problem's reason.
func (w *walker) followLink(n, c *node, name string) (fileKind, string) {
	var linkDirs *[]string
	if w.opt.BeforeDir != nil {
		linkDirs = new([]string)
	}
	resolved, s, reason := resolve(n.resolved, name, linkDirs)
	if reason == "" && linkDirs != nil {
		// A directory target is watched by its own walk.
		reason = w.beforeLink(n.resolved, readDirs(*linkDirs, resolved, s.kind == kindReg))
	}
	if reason != "" {
		return kindLink, reason
	}
	c.nodeExt = &nodeExt{st: s, linkBase: n.resolved, linkRest: name}
	c.resolved, c.link = resolved, true
	return s.kind, ""
}

// childPaths returns joinPath(dir, name) for the names of listing, one
// after another in one string (one allocation for the paths of a
// directory's children rather than one each), and the length of the
// prefix each path has before its name.
func childPaths(dir string, listing []dirent) (string, int) {
	sep := "/"
	if strings.HasSuffix(dir, "/") {
		sep = ""
	}
	prefix := len(dir) + len(sep)
	size := 0
	for _, d := range listing {
		size += prefix + len(d.name)
	}
	var b strings.Builder
	b.Grow(size)
	for _, d := range listing {
		b.WriteString(dir)
		b.WriteString(sep)
		b.WriteString(d.name)
	}
	return b.String(), prefix
}

// hashLocal reads the files of one directory through its descriptor; a
// file larger than smallFile is finished by a task of its own on the
// descriptor it was opened with, and looked up by its path only to tell a
// removed file from a replaced one (the directory's descriptor may be
// closed by then).
func (w *walker) hashLocal(dirfd int, files []*node) {
	if len(files) == 0 {
		return
	}
	bp := readBufs.Get().(*[]byte)
	h := hashers.Get().(hash.Hash)
	defer func() { readBufs.Put(bp); hashers.Put(h) }()
	for _, c := range files {
		if w.skip(c) {
			return
		}
		size, large, reason := hashFileAt(dirfd, c.name, c.resolved, *bp, h, &c.sum, smallFile, w.cleanBefore)
		if reason != "" {
			w.problem(c, reason)
			return
		}
		if large != nil && !w.charge(0, large.size()) {
			closeFD(large.fd)
			return
		}
		if large == nil && !w.charge(0, size) {
			return
		}
		if large != nil {
			large.dirfd, large.name = atFDCWD, c.resolved
			lh := h
			h = hashers.Get().(hash.Hash)
			w.spawn(func() { w.finishLarge(c, large, lh) })
			continue
		}
		c.size, c.hashed = size, true
	}
}

// finishLarge finishes the large file c, opened and started in h by
// hashLocal.
func (w *walker) finishLarge(c *node, f *openedFile, h hash.Hash) {
	bp := readBufs.Get().(*[]byte)
	defer func() { readBufs.Put(bp); hashers.Put(h) }()
	if w.skip(c) {
		closeFD(f.fd)
		return
	}
	size, reason := f.finish(*bp, h, &c.sum)
	if reason != "" {
		w.problem(c, reason)
		return
	}
	c.size, c.hashed = size, true
}

// hashPath reads the file n by its resolved path.
func (w *walker) hashPath(n *node) {
	if w.skip(n) {
		return
	}
	bp := readBufs.Get().(*[]byte)
	h := hashers.Get().(hash.Hash)
	defer func() { readBufs.Put(bp); hashers.Put(h) }()
	maxSize := int64(math.MaxInt64)
	if w.opt.Budget != nil {
		maxSize = smallFile // the size is charged before the rest is read
	}
	size, large, reason := hashFileAt(atFDCWD, n.resolved, n.resolved, *bp, h, &n.sum, maxSize, w.cleanBefore)
	if reason == "" && large != nil {
		if !w.charge(0, large.size()) {
			closeFD(large.fd)
			return
		}
		size, reason = large.finish(*bp, h, &n.sum)
	} else if reason == "" && !w.charge(0, size) {
		return
	}
	if reason != "" {
		w.problem(n, reason)
		return
	}
	n.size, n.hashed = size, true
}

// flatten appends the nodes of the tree in walk order to order, up to the
// first problem, which it returns.
func flatten(n *node, order []*node) ([]*node, *node) {
	if n.err != nil {
		return order, n
	}
	// Work is skipped only after a problem, so before the first one every
	// directory was listed and every file read.
	if n.kind == kindReg && !n.hashed || n.kind == kindDir && !n.listed {
		n.err = &UnavailableError{Root: n.root.path, Rel: n.rel, Reason: "internal error: left unread"}
		return order, n
	}
	order = append(order, n)
	if n.kind != kindDir {
		return order, nil
	}
	for _, c := range n.children {
		var bad *node
		if order, bad = flatten(c, order); bad != nil {
			return order, bad
		}
	}
	return order, nil
}

// parallel runs f(0..n-1) on up to Workers goroutines, each taking the next
// index; f returns false to record a problem at its index, after which
// indexes beyond the earliest problem are not run. It returns the earliest
// index that failed, or -1.
func (w *walker) parallel(n int, f func(i int, buf []byte) bool) int {
	var next atomic.Int64
	var first atomic.Int64
	first.Store(int64(n))
	work := func() {
		bp := readBufs.Get().(*[]byte)
		defer readBufs.Put(bp)
		for {
			i := next.Add(1) - 1
			if i >= int64(n) || i > first.Load() {
				return
			}
			if !f(int(i), *bp) {
				for {
					cur := first.Load()
					if i >= cur || first.CompareAndSwap(cur, i) {
						break
					}
				}
			}
		}
	}
	// The calling goroutine is one of the workers.
	var wg sync.WaitGroup
	for range min(w.workers, n) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if f := first.Load(); f < int64(n) {
		return int(f)
	}
	return -1
}

// verify runs phase 2 on the nodes of order and returns the first problem.
func (w *walker) verify(order []*node) *UnavailableError {
	if testHookBeforeVerify != nil {
		testHookBeforeVerify()
	}
	errs := make([]*UnavailableError, len(order))
	bad := w.parallel(len(order), func(i int, buf []byte) bool {
		errs[i] = verifyNode(order[i], buf)
		return errs[i] == nil
	})
	if bad >= 0 {
		return errs[bad]
	}
	return nil
}

// verifyNode checks one node again and says what changed, or nil.
func verifyNode(n *node, buf []byte) *UnavailableError {
	bad := func(rel, reason string) *UnavailableError {
		return &UnavailableError{Root: n.root.path, Rel: rel, Reason: reason}
	}
	if n.link {
		res, _, reason := resolve(n.linkBase, n.linkRest, nil)
		if reason != "" || res != n.resolved {
			return bad(n.rel, "symlink resolution changed while read")
		}
	}
	switch {
	case n.kind == kindDir:
		st, err := lstat(n.resolved)
		if err != nil || st.kind != kindDir || !st.sameInode(n.st) {
			return bad(n.rel, "directory replaced while read")
		}
		if !n.recent && st.mtime == n.st.mtime && st.ctime == n.st.ctime {
			return nil
		}
		st, ents, err := listDir(n.resolved, buf[:dirBufSize])
		if err != nil || !st.sameInode(n.st) {
			return bad(n.rel, "directory replaced while read")
		}
		sortDirents(ents)
		if name, reason := listingChange(n.listing, recheckFilter(ents, n.root.pythonOnly)); reason != "" {
			return bad(joinRel(n.rel, name), reason)
		}
	case n.link: // a file reached by resolution
		st, err := lstat(n.resolved)
		if err != nil || !st.sameInode(n.st) {
			return bad(n.rel, "file replaced while read")
		}
		if st.size != n.st.size || st.mtime != n.st.mtime || st.ctime != n.st.ctime {
			return bad(n.rel, "file changed while read")
		}
	}
	return nil
}

// childRel returns joinRel(dir.rel, name) for the child of dir whose
// resolved path is resolved (dir's resolved path, "/" and name). When
// dir's resolved path ends with "/" and its rel, as it does when no
// symlink was followed below the root, the child's rel is the end of
// resolved, and takes no string of its own.
func childRel(dir *node, resolved, name string) string {
	if dir.rel == "" {
		return resolved[len(resolved)-len(name):]
	}
	n := len(dir.resolved) - len(dir.rel)
	if n > 0 && dir.resolved[n-1] == '/' && dir.resolved[n:] == dir.rel {
		return resolved[len(resolved)-len(dir.rel)-1-len(name):]
	}
	return joinRel(dir.rel, name)
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
// not contribute, by pathlib's suffix of the name: a file named ".pyc"
// contributes, and with python_only a file named ".py" does not.
func skippedFile(name string, pythonOnly bool) bool {
	switch Suffix(name) {
	case ".pyc", ".pyo":
		return true
	case ".py":
		return false
	}
	return pythonOnly
}

// recheckFilter keeps the names of a listing whose change could change the
// fingerprint: not skipped names, and not regular files skipped by name.
//
// ents itself is returned when it keeps every name, the usual case; else
// a new slice, so ents is never changed.
func recheckFilter(ents []dirent, pythonOnly bool) []dirent {
	skipped := func(d *dirent) bool {
		return skippedName(d.name) || d.kind == kindReg && skippedFile(d.name, pythonOnly)
	}
	i := 0
	for i < len(ents) && !skipped(&ents[i]) {
		i++
	}
	if i == len(ents) {
		return ents
	}
	out := make([]dirent, i, len(ents)-1)
	copy(out, ents[:i])
	for j := i + 1; j < len(ents); j++ {
		if !skipped(&ents[j]) {
			out = append(out, ents[j])
		}
	}
	return out
}

// listingChange returns the first name whose entry differs between two
// sorted listings, and how; reason is "" when they are the same.
func listingChange(before, after []dirent) (name, reason string) {
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || i < len(before) && before[i].key < after[j].key:
			return before[i].name, "removed from its directory while read"
		case i == len(before) || after[j].key < before[i].key:
			return after[j].name, "added to its directory while read"
		case before[i].ino != after[j].ino || before[i].kind != after[j].kind:
			if before[i].kind == kindReg {
				return before[i].name, "file replaced while read"
			}
			return before[i].name, "replaced while read"
		}
		i++
		j++
	}
	return "", ""
}

func sortDirents(ents []dirent) {
	for i := range ents {
		ents[i].key = string(StrFromOSBytes(ents[i].name))
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.key, b.key) })
}

// SymlinkDirs resolves the absolute path p as a fingerprint resolves a
// root (symlinks and ".." followed as the kernel does) and returns the
// directories whose change can change what a read of p reads: each that
// holds a symlink followed on the way, and the one that holds what p
// resolves to; in order, each once. An error says why p does not resolve.
func SymlinkDirs(p string) ([]string, error) {
	var linkDirs []string
	resolved, _, reason := resolve("/", p, &linkDirs)
	if reason != "" {
		return nil, errors.New(p + ": " + reason)
	}
	return readDirs(linkDirs, resolved, true), nil
}

// resolve resolves rest relative to the resolved directory base (an
// absolute path rest is resolved from "/"), following symlinks and ".."
// as the kernel does, and returns the resolved path and its metadata, or a
// reason why it does not resolve. When linkDirs is not nil, the directory
// holding each symlink it follows is appended to it.
func resolve(base, rest string, linkDirs *[]string) (string, fileStat, string) {
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
			// The kernel looks ".." up inside dest: dest must be a
			// directory the caller may search (seed 003: ".." is left to
			// the file system, which refuses "t/.git/.." when t/.git
			// cannot be entered).
			if dest != "/" {
				if _, err := lstat(dest + "/."); err != nil {
					return "", st, errReason(err)
				}
			}
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
			if linkDirs != nil {
				*linkDirs = append(*linkDirs, dest)
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
	nlink        uint64
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
