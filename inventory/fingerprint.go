package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

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
	// before the directory is listed (the daemon adds a watch there), and
	// before a file or directory reached through symlinks is read, with
	// each other directory that held one of those symlinks and, for a
	// file, with the directory that holds it. An error makes the
	// fingerprint unavailable. It is called from one goroutine at a time.
	BeforeDir func(resolvedDir string) error
	// DigestOnly leaves Content.Roots nil: the digest (and Files and
	// Bytes) are the same, but no record is built for an entry, which
	// saves an allocation or more per file when nobody reads them.
	DigestOnly bool
	// Budget, when set, bounds the regular files and bytes the walk reads
	// (see Budget): a walk that passes it stops and returns a *BudgetError,
	// whatever else it met. Meanwhile a problem does not stop the walk
	// early, so that an input over the budget is refused for the budget
	// whatever else it holds; the work past a problem is bounded by the
	// budget.
	Budget *Budget
}

// Fingerprint returns the content fingerprint of roots, or an
// *UnavailableError saying why there is none. It is safe for concurrent
// use.
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
// sorted by name in code-point order, depth first; so a root's entries
// form one flat list in walk order. rel is "" for the root itself, else
// the slash-joined names below the root; resolved is the fully resolved
// absolute path (symlinks followed, so a symlink contributes its target's
// resolved path and content). Names that are not valid UTF-8 become Strs
// as Python sees them (StrFromOSBytes). Directories skip entries named
// ".git" and "__pycache__" (whatever they are) and files whose suffix is
// ".pyc" or ".pyo"; with python_only they keep only files whose suffix is
// ".py". The suffix is pathlib's (see Suffix): a file named ".pyc" has
// none and contributes, a file named ".py" has none and is not a Python
// file. A root that is itself a file always contributes.
//
// There is no partial digest. The fingerprint is unavailable for no
// roots, a missing path, a broken symlink, a symlink loop, a directory
// that contains itself through a symlink, anything that is neither a
// regular file nor a directory, an unreadable file or directory, a file
// whose size, mtime or ctime changed while it was read, a file removed or
// replaced by another while it was read, and a directory whose entries or
// resolution changed before the fingerprint was complete. When several
// inputs are unavailable, the one reported is the first in walk order, as
// a sequential walk would meet it, however the work was spread.
//
// Each file is opened without following a final symlink, its first chunk
// (up to 1 MiB) read, and stat'ed. A file whose ctime and mtime are older
// than the start of the walk less recentWindow is racily clean (git's
// rule): nothing has changed it since before it was opened, since ctime
// moves with every change, so the chunk is its content, and when the
// chunk is the whole file it is done. Any other file is read to exactly
// the size that stat found (from the start again unless racily clean) and
// stat'ed again: size, mtime and ctime must not move and the file must
// keep its name. A non-regular file that took a listed file's name is
// refused after its first read. When all files are read, every root
// and symlink is resolved again and every directory is stat'ed again; a
// directory whose mtime or ctime moved, or whose timestamps were less than
// recentWindow old when it was listed (a change within the filesystem's
// clock tick might not move them), is listed again, and the names that
// contribute must have the same inodes and types. Names that never
// contribute (.git, __pycache__, skipped files) may change meanwhile.
// File metadata detects races; it never replaces content in the identity.
func Fingerprint(roots []ContentRoot) (*Content, error) {
	return FingerprintWith(roots, FingerprintOptions{})
}

// FingerprintExtraSources returns digest(("extra_sources", content,
// extraFingerprint)) where content is the hex digest (a Str) of the content
// fingerprint of paths as python-only roots, or of ("content", []) when
// paths is empty. extraFingerprint is None (nil means None) or a Str. An
// unavailable input is an *UnavailableError.
func FingerprintExtraSources(paths []string, extraFingerprint Value) (Sum, error) {
	return FingerprintExtraSourcesWith(paths, extraFingerprint, nil)
}

// FingerprintExtraSourcesWith is FingerprintExtraSources whose walk is
// bounded by budget (nil: none); past it, the error is a *BudgetError.
func FingerprintExtraSourcesWith(paths []string, extraFingerprint Value, budget *Budget) (Sum, error) {
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
		c, err := FingerprintWith(roots, FingerprintOptions{DigestOnly: true, Budget: budget})
		if err != nil {
			return Sum{}, err
		}
		content = c.Digest
	}
	return Digest(T(Str("extra_sources"), Str(content.String()), extraFingerprint))
}

// FingerprintWith is Fingerprint with options.
func FingerprintWith(roots []ContentRoot, opt FingerprintOptions) (*Content, error) {
	return fingerprintWith(roots, opt, nil)
}

// fingerprintWith is FingerprintWith with the walk's tasks run on sched
// (nil: a taskQueue of the walk's workers).
func fingerprintWith(roots []ContentRoot, opt FingerprintOptions, sched scheduler) (*Content, error) {
	if len(roots) == 0 {
		return nil, &UnavailableError{Reason: "no content inputs"}
	}
	for _, r := range roots {
		if !strings.HasPrefix(r.path, "/") {
			return nil, &UnavailableError{Root: r.path, Reason: "not a root made by NewContentRoot"}
		}
	}
	roots = slices.Clone(roots)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	w := newWalker(opt, workers, sched)

	// 1. List the directories and read the files.
	tops := w.list(roots)
	if w.over.Load() {
		return nil, opt.Budget.Err()
	}
	order := make([]*node, 0, int(w.nodes.Load())+len(tops))
	var bad *node
	ends := make([]int, 0, len(tops))
	for _, n := range tops {
		if order, bad = flatten(n, order); bad != nil {
			return nil, bad.err
		}
		ends = append(ends, len(order))
	}
	// 2. Check that nothing changed meanwhile, and meanwhile take the
	// digest of what was read (thrown away when the check fails).
	var vals []Value
	if !opt.DigestOnly {
		vals = make([]Value, len(order))
	}
	var d Sum
	digested := make(chan struct{})
	go func() {
		defer close(digested)
		d = digestContent(roots, order, ends, vals, workers)
	}()
	err := w.verify(order)
	<-digested
	if err != nil {
		return nil, err
	}
	c := &Content{Digest: d}
	for _, n := range order {
		if n.kind == kindReg {
			c.Files++
			c.Bytes += n.size
		}
	}
	if vals != nil {
		c.Roots = rootRecords(roots, ends, vals)
	}
	return c, nil
}

// rootRecords returns the records of the roots, whose entries are vals
// (ends delimits the roots; nil for an entry that is left out).
func rootRecords(roots []ContentRoot, ends []int, vals []Value) List {
	out := make(List, len(roots))
	start := 0
	for i, r := range roots {
		// A root's entries are its part of vals, the nils (directories of
		// a python-only root) squeezed out in place.
		entries := List(vals[start:start:ends[i]])
		for _, v := range vals[start:ends[i]] {
			if v != nil {
				entries = append(entries, v)
			}
		}
		out[i] = T(StrFromOSBytes(r.path), Bool(r.pythonOnly), entries)
		start = ends[i]
	}
	return out
}

// encodeChunk is the number of entries encoded together by digestContent.
const encodeChunk = 256

// encodeBufs holds *[]byte buffers for the encoded chunks of
// digestContent, shared by every walk.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// digestContent returns Digest(T(Str("content"), roots)) for the entries
// of order (ends delimits the roots), writing the encoding of each entry
// directly (it knows their shapes, and their strings come from
// StrFromOSBytes, so they need no validation). Chunks of encodeChunk
// entries are encoded on workers goroutines into pooled buffers, a
// bounded number ahead, and hashed in order by the calling goroutine. It
// sets vals[i] to the entry of order[i] (nil for none), unless vals is
// nil: then it builds no record at all. Tests compare the
// digest with Digest of the record.
func digestContent(roots []ContentRoot, order []*node, ends []int, vals []Value, workers int) Sum {
	enc := newContentEncoder(roots, order, ends)
	chunks := (len(order) + encodeChunk - 1) / encodeChunk
	bufs := make([]*[]byte, chunks)
	ready := make([]chan struct{}, chunks)
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	// ahead bounds the chunks encoded but not yet hashed.
	ahead := make(chan struct{}, 4*workers)
	var next atomic.Int64
	work := func() {
		for {
			ahead <- struct{}{}
			i := int(next.Add(1)) - 1
			if i >= chunks {
				<-ahead
				return
			}
			bp := encodeBufs.Get().(*[]byte)
			lo := i * encodeChunk
			hi := min(lo+encodeChunk, len(order))
			*bp = enc.appendRange((*bp)[:0], lo, hi, vals)
			bufs[i] = bp
			close(ready[i])
		}
	}
	var wg sync.WaitGroup
	for range min(workers, chunks) {
		wg.Go(work)
	}

	h := sha256.New()
	// Encode(v) is the wire prefix, T(v) and "]".
	h.Write([]byte(wirePrefix))
	h.Write([]byte(`["tuple",[["str","636f6e74656e74"],["list",[`)) // "content"
	for i := range chunks {
		<-ready[i]
		h.Write(*bufs[i])
		encodeBufs.Put(bufs[i])
		bufs[i] = nil
		<-ahead
	}
	wg.Wait()
	h.Write([]byte(`]]]]]`))
	var sum Sum
	h.Sum(sum[:0])
	return sum
}

// contentEncoder writes the encoding of the entries of a walk in ranges
// that, concatenated in order, make the list of roots.
type contentEncoder struct {
	roots []ContentRoot
	order []*node
	// rootOf[i] is the root of order[i]'s index; first[r] is the index
	// in order of root r's first entry that is encoded (none: its end).
	rootOf []int32
	starts []int
	ends   []int
	first  []int
}

func newContentEncoder(roots []ContentRoot, order []*node, ends []int) *contentEncoder {
	e := &contentEncoder{roots: roots, order: order, ends: ends,
		rootOf: make([]int32, len(order)), starts: make([]int, len(roots)), first: make([]int, len(roots))}
	start := 0
	for r, end := range ends {
		e.starts[r] = start
		e.first[r] = end
		for i := start; i < end; i++ {
			e.rootOf[i] = int32(r)
			if e.first[r] == end && !skipsEntry(order[i]) {
				e.first[r] = i
			}
		}
		start = end
	}
	return e
}

// skipsEntry reports whether n contributes no entry: a directory of a
// python-only root.
func skipsEntry(n *node) bool { return n.kind == kindDir && n.root.pythonOnly }

// appendRange appends the encoding of order[lo:hi] with the separators
// and the roots' openings and closings that fall in it, and sets vals
// (unless it is nil).
func (e *contentEncoder) appendRange(dst []byte, lo, hi int, vals []Value) []byte {
	var s *entrySlab
	if vals != nil {
		s = newEntrySlab(e.order[lo:hi])
	}
	for i := lo; i < hi; i++ {
		r := int(e.rootOf[i])
		if i == e.starts[r] {
			dst = e.appendRootOpening(dst, r)
		}
		if n := e.order[i]; !skipsEntry(n) {
			if i != e.first[r] {
				dst = append(dst, ',')
			}
			var v Value
			dst, v = appendEntry(dst, n, s)
			if vals != nil {
				vals[i] = v
			}
		}
		if i == e.ends[r]-1 {
			dst = append(dst, `]]]]`...)
		}
	}
	return dst
}

// appendRootOpening appends the encoding of root r up to the opening of
// its list of entries, after a separator unless it is the first root.
func (e *contentEncoder) appendRootOpening(dst []byte, r int) []byte {
	if r > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `["tuple",[`...)
	dst = appendStrT(dst, string(StrFromOSBytes(e.roots[r].path)))
	if e.roots[r].pythonOnly {
		return append(dst, `,["bool",true],["list",[`...)
	}
	return append(dst, `,["bool",false],["list",[`...)
}

// entrySlab holds what appendEntry takes its records from: room for
// their items, and the hex digests of the files still to come, in order.
type entrySlab struct {
	items []Value
	sums  string
}

// newEntrySlab returns a slab for the records of nodes: the entries'
// tuples share one backing array, and their digests one string of hex, a
// few allocations per chunk rather than per entry.
func newEntrySlab(nodes []*node) *entrySlab {
	var sums strings.Builder
	sums.Grow(2 * len(Sum{}) * len(nodes))
	var hexSum [2 * len(Sum{})]byte
	for _, n := range nodes {
		if n.kind == kindReg {
			hex.Encode(hexSum[:], n.sum[:])
			sums.Write(hexSum[:])
		}
	}
	return &entrySlab{items: make([]Value, 0, 5*len(nodes)), sums: sums.String()}
}

// tuple returns a tuple of the items, in s's items.
func (s *entrySlab) tuple(items ...Value) Tuple {
	start := len(s.items)
	s.items = append(s.items, items...)
	return Tuple(s.items[start:len(s.items):len(s.items)])
}

// appendEntry appends T of n's entry and returns the entry as a record,
// converting its strings once for both, and taking its items and digest
// from s. With s nil it returns no record (nil).
func appendEntry(dst []byte, n *node, s *entrySlab) ([]byte, Value) {
	rel, resolved := StrFromOSBytes(n.rel), StrFromOSBytes(n.resolved)
	if n.kind == kindDir {
		dst = append(dst, `["tuple",[["str","6469726563746f7279"],`...) // "directory"
		dst = appendStrT(dst, string(rel))
		dst = append(dst, ',')
		dst = appendStrT(dst, string(resolved))
		dst = append(dst, "]]"...)
		if s == nil {
			return dst, nil
		}
		return dst, s.tuple(Str("directory"), rel, resolved)
	}
	dst = append(dst, `["tuple",[["str","66696c65"],`...) // "file"
	dst = appendStrT(dst, string(rel))
	dst = append(dst, ',')
	dst = appendStrT(dst, string(resolved))
	dst = append(dst, `,["int","`...)
	dst = strconv.AppendInt(dst, n.size, 10)
	dst = append(dst, `"],`...)
	dst = appendSumT(dst, &n.sum)
	dst = append(dst, "]]"...)
	if s == nil {
		return dst, nil
	}
	sum := Str(s.sums[:2*len(n.sum)])
	s.sums = s.sums[2*len(n.sum):]
	return dst, s.tuple(Str("file"), rel, resolved, IntOf(n.size), sum)
}

// hexOfHex maps a byte to the hex of its two lowercase hex digits.
var hexOfHex = func() (t [256][4]byte) {
	const digits = "0123456789abcdef"
	for b := range t {
		hi, lo := digits[b>>4], digits[b&15]
		t[b] = [4]byte{digits[hi>>4], digits[hi&15], digits[lo>>4], digits[lo&15]}
	}
	return t
}()

// appendSumT appends T of the Str of sum's lowercase hex, as appendStrT
// of hex.EncodeToString(sum[:]) does, without the string between.
func appendSumT(dst []byte, sum *Sum) []byte {
	dst = append(dst, `["str","`...)
	for _, b := range sum {
		dst = append(dst, hexOfHex[b][:]...)
	}
	return append(dst, `"]`...)
}

// Limits and sizes of the walk.
const (
	// maxSymlinks is the number of symlinks one resolution may follow, as
	// Linux's MAXSYMLINKS.
	maxSymlinks = 40
	// readChunk is the size of the read buffers: a file of up to this
	// size is read in one call, larger ones in chunks of this size.
	readChunk = 1 << 20
	// dirBufSize is the getdents buffer of the walker.
	dirBufSize = 32 << 10
	// smallFile is the largest file read through its directory's
	// descriptor, in a batch; a larger one is a task of its own.
	smallFile = 256 << 10
	// batchSize is the number of a directory's small files one task
	// reads.
	batchSize = 32
)

// recentWindow: a directory whose mtime or ctime is less than this older
// than the start of the walk is listed a second time to verify it, rather
// than trusted when its timestamps did not move; a file whose mtime or
// ctime is that recent is read and stat'ed again, rather than taken as racily clean
// from its first chunk. Filesystem timestamps
// follow a coarse clock (a few milliseconds) on kernels without
// fine-grained timestamps, and a server's clock on network filesystems.
// Tests set it.
var recentWindow = 2 * time.Second

// Test hooks, set only by tests to inject races at exact points.
var (
	// testHookFirstRead runs after a file's first chunk is read, before
	// the stat that decides whether it is racily clean.
	testHookFirstRead func(resolved string)
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
