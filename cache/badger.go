package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
)

// Badger database layout. Every key starts with a one-byte kind:
//
//	'e' key(32)     -> entry (see Stored formats)
//	'u' key(32)     -> last use, 8 bytes big-endian Unix nanoseconds
//	'b' digest(32)  -> blob bytes, for a blob of at most one chunk
//	'l' digest(32)  -> chunk list of a larger blob (see Stored formats)
//	'c' upload(16) index(4, big-endian) -> one chunk of a chunked blob
//	's' name        -> counter, 8 bytes big-endian; names are hits, misses,
//	                   uncached, errors, corrupt, evictions, damaged and
//	                   "uncached:" + reason
//	'z'             -> nothing; written and dropped by Trim
//	'g'             -> nothing; present while deleted values await compaction
//
// An entry and its last use are written in one transaction, after the blobs.
const (
	kindEntry    = 'e'
	kindLastUsed = 'u'
	kindBlob     = 'b'
	kindChunked  = 'l'
	kindChunk    = 'c'
	kindCounter  = 's'
	kindFlush    = 'z' // a sentinel key, see compact
	kindGarbage  = 'g' // the garbage mark, see noteGarbage
)

// Tuning. Values of valueThreshold bytes or more (blobs: shared objects,
// callables) live in Badger's value log; entries and small blobs stay in
// the LSM tree. Tables are not compressed (badgerOptions): a lookup then
// reads its block in place from the mapped table, with no decompressed
// copy to allocate and cache, and compactions build no compressed copy of
// each block; the values worth compressing, the blobs, are mostly over
// valueThreshold, where Badger never compresses. Two compactors, not
// Badger's four, bound the table builders in memory at once. (With both,
// a daemon's anonymous memory after hits on 100,000 entries fell from
// about 240 to 120-155 MiB, most of it a compaction under way.)
const (
	valueThreshold = 4 << 10
	memTableSize   = 4 << 20
	// valueLogFileSize is small so that the free space kept in reserve
	// (spaceReserve) is small: Badger maps each value-log file at twice
	// this size.
	valueLogFileSize = 16 << 20
	blockCacheSize   = 16 << 20
	// flushInterval bounds how long last-use times and counters stay in
	// memory only.
	flushInterval = 2 * time.Second
	// gcDiscardRatio is the share of a value-log file that must be garbage
	// before Trim rewrites it.
	gcDiscardRatio = 0.5
	// maxTxnRetries bounds retries of a transaction that conflicted.
	maxTxnRetries = 8
)

func dbKey(kind byte, id []byte) []byte {
	k := make([]byte, 1+len(id))
	k[0] = kind
	copy(k[1:], id)
	return k
}

// OpenError is a failure to open a cache directory. It matches ErrLocked
// when another process holds the directory. Immutable once returned.
type OpenError struct {
	Dir string
	Err error
}

func (e *OpenError) Error() string { return fmt.Sprintf("cache: open %s: %v", e.Dir, e.Err) }

func (e *OpenError) Unwrap() error { return e.Err }

// Badger is a store in a Badger database directory: the uncounted store
// (badgerDB) in a Counting store whose counters it persists; its methods
// are those of the Counting store, with Dir, Healthy and FaultInjector's.
// It is safe for concurrent use by multiple goroutines; only one process
// may open a directory at a time (read-only stores share it with other
// read-only stores, not with a writer).
type Badger struct {
	*Counting
	uncountedBadger
}

// uncountedBadger holds the badgerDB of a Badger one level below its
// Counting store, so that the Counting store's methods are Badger's.
type uncountedBadger struct{ *badgerDB }

// badgerDB is the store in a Badger database directory without the event
// counts of a Counting store (it counts only its own evictions); it keeps
// the counters of the Counting store that wraps it (see face). Safe for
// concurrent use.
type badgerDB struct {
	opt Options
	dir string
	db  *badger.DB
	// mapDir is dir as /proc/self/maps names it (absolute, no symbolic
	// links), for pageOut.
	mapDir string
	stats  counters // counts not yet added to the database (all counts when read-only)
	// evicted counts evictions not yet taken by the Counting store.
	evicted atomic.Int64
	// flushMu serializes flushes, and a flush with the read of Stats: a
	// flush takes the counts from stats before it commits them, so a
	// reader between the two would see them in neither place.
	flushMu sync.Mutex

	stop chan struct{} // closed by Close to stop the flusher
	done chan struct{} // closed when the flusher returns

	// Operations in flight, so that Close waits for them.
	lifeMu   sync.Mutex // guards the fields below
	lifeCond *sync.Cond // signalled when inFlight drops to 0
	inFlight int
	closed   bool

	// broken is set by the first recovered panic; every later operation
	// fails with it.
	broken atomic.Pointer[UnhealthyError]

	noteMu sync.Mutex // guards notes
	notes  []string   // health notes of Stats: value-log truncation

	// vlogSize is Badger's value-log file size; the free space a write
	// needs in reserve derives from it.
	vlogSize int64
	// roCause is why a store opened for writing is read-only (too little
	// free space, a read-only file system), or nil.
	roCause error

	// Lock order: mu, then touchMu.
	mu  sync.Mutex // guards idx and every deletion of blobs
	idx *index     // nil until first needed
	// garbage is set when values were deleted since Trim last compacted
	// (at Open: when the garbage mark is stored), so that Trim
	// skips the compaction and value-log GC when there is nothing to win.
	garbage bool

	touchMu sync.Mutex // guards touches
	touches map[Key]time.Time

	// testHookAfterBlobs, when set, runs between the blob writes and the
	// entry write of Put; an error aborts the Put as a crash would.
	testHookAfterBlobs func() error
	// testHookLocked, when set, runs with b.mu held in Put, Delete and
	// Verify (tests panic there).
	testHookLocked func(op string)
}

var (
	_ EventCounter  = (*Badger)(nil)
	_ FaultInjector = (*Badger)(nil)
	_ face          = (*badgerDB)(nil)
	_ badger.Logger = Logger(nil) // Options.Logger goes to Badger as it is
)

// Open opens or creates the store in dir (created with mode 0700, see
// prepareDir). A store whose file system has less free space than the
// reserve (see spaceReserve) or is read-only is opened read-only; its Put
// returns an error matching ErrReadOnly that wraps the cause. When
// another process holds dir it fails at once with an *OpenError matching
// ErrLocked; OpenWait waits instead. A read-only store of a directory that
// does not exist yet is empty and creates nothing.
func Open(dir string, opt Options) (*Badger, error) {
	if dir == "" {
		return nil, &OpenError{Dir: dir, Err: errors.New("empty directory name")}
	}
	// Nothing of another user's is read, not even to check free space.
	if err := CheckOwned(dir); err != nil {
		return nil, &OpenError{Dir: dir, Err: err}
	}
	bo := badgerOptions(dir, opt.Logger)
	var notes []string
	roCause := readOnlyCause(dir, opt.ReadOnly)
	if roCause != nil {
		opt.ReadOnly = true
		notes = append(notes, roCause.Error()+": opened read-only")
	}
	var lastVlog string
	var lastData int64 = -1
	if opt.ReadOnly {
		if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); errors.Is(err, os.ErrNotExist) {
			bo = bo.WithDir("").WithValueDir("").WithInMemory(true)
		} else {
			bo = bo.WithReadOnly(true)
		}
	} else if err := prepareDir(dir); err != nil {
		return nil, &OpenError{Dir: dir, Err: err}
	} else if err := CheckOwned(dir); err != nil {
		// Created by another user between the check and MkdirAll.
		return nil, &OpenError{Dir: dir, Err: err}
	} else {
		lastVlog, lastData = lastValueLog(dir)
	}
	db, err := openBadger(bo)
	if err != nil {
		if dirLocked(dir, opt.ReadOnly) {
			err = ErrLocked
		}
		if roCause != nil {
			// Opened read-only for a reason: that reason comes first.
			err = fmt.Errorf("%w; read-only: %v", roCause, err)
		}
		return nil, &OpenError{Dir: dir, Err: err}
	}
	if n := truncationNote(lastVlog, lastData); n != "" {
		notes = append(notes, n)
		if opt.Logger != nil {
			opt.Logger.Errorf("%s", n)
		}
	}
	b := &badgerDB{
		opt:      opt,
		dir:      dir,
		db:       db,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		touches:  make(map[Key]time.Time),
		garbage:  hasGarbageMark(db),
		notes:    notes,
		vlogSize: testValueLogFileSize,
		roCause:  roCause,
	}
	b.lifeCond = sync.NewCond(&b.lifeMu)
	b.mapDir = mappedDir(dir)
	if opt.ReadOnly {
		close(b.done)
	} else {
		tightenFiles(dir) // what Badger created while opening
		go b.flusher()
	}
	return &Badger{Counting: &Counting{s: b, c: b}, uncountedBadger: uncountedBadger{b}}, nil
}

// mappedDir returns dir as the kernel names the files mapped from it.
func mappedDir(dir string) string {
	if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	return dir
}

// releaseTables drops the pages of the store's tables from the resident
// set after a scan of the whole store (loading the index, a full listing,
// Verify, a compaction) touched every page of them (see dropTables). The
// advice would discard the data of whatever the kernel mapped at a table's
// address range if Badger unmapped the table meanwhile (a compaction
// deletes tables), so it covers only tables an open iterator holds: a
// table listed before and after the iterator was made was in the levels
// when it was made (table ids are never reused), and an iterator keeps a
// reference to every table, which Badger unmaps only when the last one
// goes.
func (b *badgerDB) releaseTables() {
	before := make(map[uint64]bool)
	for _, t := range b.db.Tables() {
		before[t.ID] = true
	}
	txn := b.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{}) // every table of every level
	defer it.Close()
	held := make(map[string]bool)
	for _, t := range b.db.Tables() {
		if before[t.ID] {
			held[table.IDToFilename(t.ID)] = true
		}
	}
	dropTables(b.mapDir, held)
}

// pageOutEvery is how many bytes of chunks a Put, a reader or Verify
// moves between two calls of pageOut: about one value-log file.
const pageOutEvery = valueLogFileSize

// pager calls pageOut for a store once every pageOutEvery bytes it is
// told of. Used by one goroutine.
type pager struct {
	dir   string
	since int64
}

// moved counts n bytes moved through the value log.
func (p *pager) moved(n int) {
	if p.since += int64(n); p.since >= pageOutEvery {
		p.since = 0
		pageOut(p.dir)
	}
}

// badgerOptions are the Badger options of a store in dir (see Tuning).
func badgerOptions(dir string, l Logger) badger.Options {
	bo := badger.DefaultOptions(dir).
		WithValueThreshold(valueThreshold).
		WithMemTableSize(memTableSize).
		WithValueLogFileSize(testValueLogFileSize).
		WithBlockCacheSize(blockCacheSize).
		WithNumVersionsToKeep(1).
		WithCompression(options.None).
		WithNumCompactors(2).
		WithVerifyValueChecksum(true).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithLogger(nil)
	if l != nil {
		bo = bo.WithLogger(l)
	}
	return bo
}

// readOnlyCause is why a store in dir opened for writing must be opened
// read-only, or nil: too little free space to write (so that hits are
// still served and nothing grows a mapped file), or a read-only file
// system (hits are served, and Put says why nothing is stored). It is nil
// for a store opened read-only on purpose.
func readOnlyCause(dir string, readOnly bool) error {
	if readOnly {
		return nil
	}
	need := spaceReserve(testValueLogFileSize)
	if free, err := freeSpace(dir); err == nil && free >= 0 && free < need {
		return &SpaceError{Dir: dir, Free: free, Need: need}
	}
	if err := writable(dir); err != nil {
		return &os.PathError{Op: "write", Path: dir, Err: err}
	}
	return nil
}

// truncationNote says that Badger truncated the last value log, of lastData
// bytes before Open, at its first unreadable record: Badger does so
// silently, and a value after it is lost. It is "" when nothing was
// truncated or lastVlog is "".
func truncationNote(lastVlog string, lastData int64) string {
	if lastVlog == "" {
		return ""
	}
	fi, err := os.Stat(lastVlog)
	if err != nil || fi.Size() >= lastData {
		return ""
	}
	return fmt.Sprintf("value log %s truncated to %d bytes on open, dropping data up to byte %d: a damaged or partly written value log; entries whose values were there are misses",
		filepath.Base(lastVlog), fi.Size(), lastData)
}

// testValueLogFileSize is valueLogFileSize, smaller in tests of the
// value-log GC.
var testValueLogFileSize int64 = valueLogFileSize

// Backoff of OpenWait.
const (
	openWaitFirst = 5 * time.Millisecond
	openWaitMax   = 250 * time.Millisecond
)

// testHookOpenWait, when set, runs each time OpenWait finds the directory
// locked, before it waits.
var testHookOpenWait func()

// OpenWait is Open that waits while another process holds dir: it retries
// with exponential backoff from 5 ms up to 250 ms between attempts, until
// Open succeeds, fails for another reason, or ctx ends (then it returns the
// last *OpenError joined with ctx's error). Polling is used because Badger
// takes its flock without blocking.
func OpenWait(ctx context.Context, dir string, opt Options) (*Badger, error) {
	wait := openWaitFirst
	for {
		b, err := Open(dir, opt)
		if err == nil || !errors.Is(err, ErrLocked) {
			return b, err
		}
		if testHookOpenWait != nil {
			testHookOpenWait()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, openWaitMax)
	}
}

// Dir returns the store's directory.
func (b *badgerDB) Dir() string { return b.dir }

// dirLocked reports whether another process holds the lock badger takes
// on dir (flock, shared for a read-only store, else exclusive): after a
// failed open, it tells a held directory from other failures, which
// badger's error says only in its text.
func dirLocked(dir string, readOnly bool) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	how := syscall.LOCK_EX
	if readOnly {
		how = syscall.LOCK_SH
	}
	return errors.Is(syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB), syscall.EWOULDBLOCK)
}

// openBadger is badger.Open that returns a panic as an error: a damaged
// table can make Badger panic while it opens.
func openBadger(bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("badger panicked: %v", r)
		}
	}()
	return badger.Open(bo)
}

// lastValueLog returns the path of the value-log file Badger will check
// (and truncate) when it opens dir, and the offset just past its last
// non-zero byte; "" when there is none. A crash leaves zeros after the
// last record; non-zero bytes past the length Badger keeps are lost data.
func lastValueLog(dir string) (string, int64) {
	names, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if len(names) == 0 {
		return "", -1
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmpFid(filepath.Base(a), filepath.Base(b))
	})
	p := names[len(names)-1]
	f, err := os.Open(p)
	if err != nil {
		return "", -1
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", -1
	}
	buf := make([]byte, 64<<10)
	for end := fi.Size(); end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return "", -1
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return p, start + int64(i) + 1
			}
		}
		end = start
	}
	return p, 0
}

// cmpFid orders value-log file names by their number.
func cmpFid(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// takeEvictions implements face.
func (b *badgerDB) takeEvictions() int64 { return b.evicted.Swap(0) }
