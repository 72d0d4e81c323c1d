package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Badger database layout. Every key starts with a one-byte kind:
//
//	'e' key(32)     -> entry (see entry.go)
//	'u' key(32)     -> last use, 8 bytes big-endian Unix nanoseconds
//	'b' digest(32)  -> blob bytes
//	's' name        -> counter, 8 bytes big-endian; names are hits, misses,
//	                   uncached, errors, corrupt, evictions, damaged and
//	                   "uncached:" + reason
//	'z'             -> nothing; written and dropped by Trim
//
// An entry and its last use are written in one transaction, after the blobs.
const (
	kindEntry    = 'e'
	kindLastUsed = 'u'
	kindBlob     = 'b'
	kindCounter  = 's'
	kindFlush    = 'z' // a sentinel key, see compact
)

// Tuning. Values of valueThreshold bytes or more (blobs: shared objects,
// callables) live in Badger's value log; entries and small blobs stay in
// the LSM tree.
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

// Badger is a Store in a Badger database directory. It is safe for
// concurrent use by multiple goroutines; only one process may open a
// directory at a time (read-only stores share it with other read-only
// stores, not with a writer).
type Badger struct {
	opt   Options
	dir   string
	db    *badger.DB
	stats counters // counts not yet added to the database (all counts when read-only)
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
	// (and at Open: an earlier process may have deleted), so that Trim
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

// testFreeSpace, when set, replaces the file-system query of the free space
// of a store's directory.
var testFreeSpace func(dir string) (int64, error)

var (
	_ Store         = (*Badger)(nil)
	_ Checker       = (*Badger)(nil)
	_ FaultInjector = (*Badger)(nil)
)

type badgerLogger struct{ Logger }

func (l badgerLogger) Errorf(f string, a ...interface{})   { l.Logger.Errorf(f, a...) }
func (l badgerLogger) Warningf(f string, a ...interface{}) { l.Logger.Warningf(f, a...) }
func (l badgerLogger) Infof(f string, a ...interface{})    { l.Logger.Infof(f, a...) }
func (l badgerLogger) Debugf(f string, a ...interface{})   { l.Logger.Debugf(f, a...) }

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
	bo := badger.DefaultOptions(dir).
		WithValueThreshold(valueThreshold).
		WithMemTableSize(memTableSize).
		WithValueLogFileSize(testValueLogFileSize).
		WithBlockCacheSize(blockCacheSize).
		WithNumVersionsToKeep(1).
		WithVerifyValueChecksum(true).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithLogger(nil)
	if opt.Logger != nil {
		bo = bo.WithLogger(badgerLogger{opt.Logger})
	}
	var notes []string
	var roCause error
	if !opt.ReadOnly {
		// Too little space to write: open read-only, so that hits are
		// still served and nothing grows a mapped file.
		need := spaceReserve(testValueLogFileSize)
		if free, err := freeSpace(dir); err == nil && free >= 0 && free < need {
			opt.ReadOnly = true
			roCause = &SpaceError{Dir: dir, Free: free, Need: need}
			notes = append(notes, roCause.Error()+": opened read-only")
		} else if err := writable(dir); err != nil {
			// A read-only file system: serve hits, and say why nothing
			// is stored.
			opt.ReadOnly = true
			roCause = &os.PathError{Op: "write", Path: dir, Err: err}
			notes = append(notes, roCause.Error()+": opened read-only")
		}
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
	if lastVlog != "" {
		// Badger truncates the last value log at its first unreadable
		// record, silently: a value after it is lost. Say so.
		if fi, err := os.Stat(lastVlog); err == nil && fi.Size() < lastData {
			n := fmt.Sprintf("value log %s truncated to %d bytes on open, dropping data up to byte %d: a damaged or partly written value log; entries whose values were there are misses",
				filepath.Base(lastVlog), fi.Size(), lastData)
			notes = append(notes, n)
			if opt.Logger != nil {
				opt.Logger.Errorf("%s", n)
			}
		}
	}
	b := &Badger{
		opt:      opt,
		dir:      dir,
		db:       db,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		touches:  make(map[Key]time.Time),
		garbage:  true,
		notes:    notes,
		vlogSize: testValueLogFileSize,
		roCause:  roCause,
	}
	b.lifeCond = sync.NewCond(&b.lifeMu)
	if opt.ReadOnly {
		close(b.done)
	} else {
		tightenFiles(dir) // what Badger created while opening
		go b.flusher()
	}
	return b, nil
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
func (b *Badger) Dir() string { return b.dir }

func (b *Badger) flusher() {
	defer close(b.done)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			_ = b.op("flush", b.flush)
			tightenFiles(b.dir)
		}
	}
}

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

// spaceReserve is the free space a store keeps: Badger writes its value
// log, its write-ahead log and new tables through mmap, where a full file
// system is a SIGBUS instead of an error. A value-log file is mapped at
// twice its size, the write-ahead log at twice the memtable's, and a flush
// writes a table of about a memtable.
func spaceReserve(vlogSize int64) int64 {
	return 2*vlogSize + 4*memTableSize
}

// checkSpace returns a *SpaceError when fewer than need bytes beyond the
// reserve are free in the store's directory.
func (b *Badger) checkSpace(need int64) error {
	free, err := freeSpace(b.dir)
	if err != nil {
		return fmt.Errorf("cache: free space of %s: %w", b.dir, err)
	}
	if free < 0 {
		return nil // unknown on this system
	}
	if want := spaceReserve(b.vlogSize) + need; free < want {
		return &SpaceError{Dir: b.dir, Free: free, Need: want}
	}
	return nil
}

// freeSpace returns the free space of the file system of dir, or of its
// nearest existing parent when dir does not exist yet.
func freeSpace(dir string) (int64, error) {
	if testFreeSpace != nil {
		return testFreeSpace(dir)
	}
	for {
		n, err := statFree(dir)
		if !errors.Is(err, os.ErrNotExist) {
			return n, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return n, err
		}
		dir = parent
	}
}

// op runs a store operation: it fails at once on a closed or unhealthy
// store, counts the operation in flight (Close waits for it), and turns a
// panic into an error that marks the store unhealthy. Every lock an
// operation takes is released by a defer, so a panic leaves none held.
func (b *Badger) op(name string, fn func() error) (err error) {
	b.lifeMu.Lock()
	if b.closed {
		b.lifeMu.Unlock()
		return ErrClosed
	}
	if u := b.broken.Load(); u != nil {
		b.lifeMu.Unlock()
		return u
	}
	b.inFlight++
	b.lifeMu.Unlock()
	defer func() {
		b.lifeMu.Lock()
		b.inFlight--
		if b.inFlight == 0 {
			b.lifeCond.Broadcast()
		}
		b.lifeMu.Unlock()
	}()
	defer func() {
		if r := recover(); r != nil {
			err = b.markBroken(name, r)
		}
	}()
	return fn()
}

// markBroken records a recovered panic and returns the error of the
// operation that panicked.
func (b *Badger) markBroken(op string, r any) error {
	u := &UnhealthyError{Dir: b.dir, Op: op, Cause: fmt.Sprint(r)}
	if b.broken.CompareAndSwap(nil, u) && b.opt.Logger != nil {
		b.opt.Logger.Errorf("cache: panic in %s: %v\n%s", op, r, debug.Stack())
	}
	return u
}

// Healthy returns nil, or the error every operation fails with since a
// recovered panic.
func (b *Badger) Healthy() error {
	if u := b.broken.Load(); u != nil {
		return u
	}
	return nil
}

// flush writes the batched last-use times and counters. It is a no-op on a
// read-only store. Errors leave the batch for the next flush.
func (b *Badger) flush() error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	return b.flushLocked()
}

// flushLocked is flush; b.flushMu is held.
func (b *Badger) flushLocked() error {
	if b.opt.ReadOnly {
		return nil
	}
	return errors.Join(b.flushTouches(), b.flushCounters())
}

func (b *Badger) flushTouches() error {
	var ts map[Key]time.Time
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		ts = b.touches
		b.touches = make(map[Key]time.Time)
	}()
	if len(ts) == 0 {
		return nil
	}
	keys := make([]Key, 0, len(ts))
	for k := range ts {
		keys = append(keys, k)
	}
	var err error
	for len(keys) > 0 && err == nil {
		n := min(len(keys), 1000)
		err = b.update(func(txn *badger.Txn) error {
			for _, k := range keys[:n] {
				if _, err := txn.Get(dbKey(kindEntry, k[:])); errors.Is(err, badger.ErrKeyNotFound) {
					continue // deleted since
				} else if err != nil {
					return err
				}
				if err := txn.Set(dbKey(kindLastUsed, k[:]), encodeTime(ts[k])); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			keys = keys[n:]
		}
	}
	if err != nil {
		func() {
			b.touchMu.Lock()
			defer b.touchMu.Unlock()
			for _, k := range keys {
				if t, ok := b.touches[k]; !ok || ts[k].After(t) {
					b.touches[k] = ts[k]
				}
			}
		}()
		return fmt.Errorf("cache: write last-use times: %w", err)
	}
	func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.idx != nil {
			for k, t := range ts {
				b.idx.touch(k, t)
			}
		}
	}()
	return nil
}

var counterNames = []string{"hits", "misses", "uncached", "errors", "corrupt", "evictions", "damaged", "verify_mismatch"}

func counterFields(s *Stats) []*int64 {
	return []*int64{&s.Hits, &s.Misses, &s.Uncached, &s.Errors, &s.Corrupt, &s.Evictions, &s.Damaged, &s.VerifyMismatch}
}

const uncachedPrefix = "uncached:"

func (b *Badger) flushCounters() error {
	d := b.stats.take(true)
	if !d.any() {
		return nil
	}
	add := func(txn *badger.Txn, name string, n int64) error {
		if n == 0 {
			return nil
		}
		k := dbKey(kindCounter, []byte(name))
		var v int64
		item, err := txn.Get(k)
		switch {
		case err == nil:
			err = item.Value(func(val []byte) error {
				if len(val) == 8 {
					v = int64(binary.BigEndian.Uint64(val))
				}
				return nil
			})
		case errors.Is(err, badger.ErrKeyNotFound):
			err = nil
		}
		if err != nil {
			return err
		}
		return txn.Set(k, binary.BigEndian.AppendUint64(nil, uint64(v+n)))
	}
	err := b.update(func(txn *badger.Txn) error {
		for i, f := range counterFields(&d) {
			if err := add(txn, counterNames[i], *f); err != nil {
				return err
			}
		}
		for r, n := range d.UncachedReasons {
			if err := add(txn, uncachedPrefix+r, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.stats.restore(d)
		return fmt.Errorf("cache: write counters: %w", err)
	}
	return nil
}

// update runs fn in a read-write transaction, retrying on conflicts. It
// refuses to write when free space is short (see spaceReserve).
func (b *Badger) update(fn func(*badger.Txn) error) error {
	if err := b.checkSpace(0); err != nil {
		return err
	}
	var err error
	for range maxTxnRetries {
		err = b.db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
	return err
}

// iterate calls fn for every key of a kind, in key order, with the key's id
// (the bytes after the kind byte). Keys of entries, last uses and blobs
// whose id is not 32 bytes are skipped. Values are read lazily.
func iterate(txn *badger.Txn, kind byte, fn func(id []byte, item *badger.Item) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kind}})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		id := item.Key()[1:]
		if kind != kindCounter && len(id) != 32 {
			continue
		}
		if err := fn(id, item); err != nil {
			return err
		}
	}
	return nil
}

func encodeTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

func decodeTime(b []byte) (time.Time, bool) {
	if len(b) != 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), true
}

// readEntry reads and decodes an entry and its last use in txn. A missing
// entry returns badger.ErrKeyNotFound; an undecodable one an error wrapping
// errEntry.
func (b *Badger) readEntry(txn *badger.Txn, key Key) (*Entry, error) {
	item, err := txn.Get(dbKey(kindEntry, key[:]))
	if err != nil {
		return nil, err
	}
	var e *Entry
	if err := item.Value(func(v []byte) error {
		var err error
		e, err = decodeEntry(key, v)
		return err
	}); err != nil {
		if !errors.Is(err, errEntry) {
			// A value pointer into a damaged value log, or a failed
			// value checksum.
			err = fmt.Errorf("%w: unreadable: %v", errEntry, err)
		}
		return nil, err
	}
	if item, err := txn.Get(dbKey(kindLastUsed, key[:])); err == nil {
		_ = item.Value(func(v []byte) error {
			if t, ok := decodeTime(v); ok && t.After(e.LastUsed) {
				e.LastUsed = t
			}
			return nil
		})
	} else if !errors.Is(err, badger.ErrKeyNotFound) {
		return nil, err
	}
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		if t, ok := b.touches[key]; ok && t.After(e.LastUsed) {
			e.LastUsed = t
		}
	}()
	return e, nil
}

// Get implements Store.
func (b *Badger) Get(ctx context.Context, key Key) (hit *Hit, err error) {
	err = b.op("get", func() error {
		var err error
		hit, err = b.get(ctx, key)
		return err
	})
	return hit, err
}

func (b *Badger) get(ctx context.Context, key Key) (*Hit, error) {
	var (
		hit    *Hit
		reason string
		bad    *Digest // a corrupt blob to delete
	)
	err := b.db.View(func(txn *badger.Txn) error {
		e, err := b.readEntry(txn, key)
		if errors.Is(err, errEntry) {
			reason = err.Error()
			return nil
		}
		if err != nil {
			return err
		}
		data := make([][]byte, len(e.Outputs))
		for i, o := range e.Outputs {
			item, err := txn.Get(dbKey(kindBlob, o.Digest[:]))
			if errors.Is(err, badger.ErrKeyNotFound) {
				reason = missingReason(o.Digest)
				return nil
			}
			if err != nil {
				return err
			}
			if data[i], err = item.ValueCopy(nil); err != nil {
				// A value pointer into a damaged value log.
				reason, bad = fmt.Sprintf("blob %s unreadable: %v", shortHex(o.Digest[:]), err), &o.Digest
				return nil
			}
			if reason = checkBlob(o, data[i]); reason != "" {
				bad = &o.Digest
				return nil
			}
		}
		hit = &Hit{Entry: e, Data: data}
		return nil
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		b.stats.add(func(s *Stats) { s.Misses++ })
		return nil, &MissError{Key: key, Reason: ReasonNoEntry}
	case err != nil:
		return nil, fmt.Errorf("cache: get %s: %w", key.String()[:12], err)
	case reason != "":
		b.stats.add(func(s *Stats) { s.Damaged++; s.Corrupt++ })
		if !b.opt.ReadOnly {
			if err := b.removeDamaged(key, bad); err != nil && b.opt.Logger != nil {
				// Still a miss: the damaged entry is never served, and
				// the next lookup or Verify removes it.
				b.opt.Logger.Warningf("cache: get %s: %s: remove: %v", key.String()[:12], reason, err)
			}
		}
		return nil, &MissError{Key: key, Reason: ReasonDamaged + reason, Corrupt: true}
	}
	b.stats.add(func(s *Stats) { s.Hits++ })
	b.touch(key)
	return hit, nil
}

// loadLocked builds the index from the database. b.mu is held.
func (b *Badger) loadLocked() error {
	if b.idx != nil {
		return nil
	}
	x := newIndex()
	err := b.db.View(func(txn *badger.Txn) error {
		err := iterate(txn, kindEntry, func(id []byte, item *badger.Item) error {
			k := Key(id)
			var e *Entry
			err := item.Value(func(v []byte) error {
				var err error
				e, err = decodeEntry(k, v)
				return err
			})
			if errors.Is(err, errEntry) {
				// Undecodable: an entry without blobs, so that
				// eviction and Verify can still remove it.
				x.entries[k] = &indexEntry{}
				return nil
			} else if err != nil {
				return err
			}
			x.addEntry(e)
			return nil
		})
		if err != nil {
			return err
		}
		err = iterate(txn, kindLastUsed, func(id []byte, item *badger.Item) error {
			return item.Value(func(v []byte) error {
				if t, ok := decodeTime(v); ok {
					x.touch(Key(id), t)
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
		seen := make(map[Digest]bool)
		err = iterate(txn, kindBlob, func(id []byte, item *badger.Item) error {
			d := Digest(id)
			seen[d] = true
			x.addBlob(d, item.ValueSize()) // approximate for blobs no entry names
			return nil
		})
		for d := range x.blobs {
			if !seen[d] {
				x.removeBlob(d)
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cache: read index: %w", err)
	}
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		for k, t := range b.touches {
			x.touch(k, t)
		}
	}()
	b.idx = x
	return nil
}

// deleteLocked removes entries and the blobs they leave unreferenced, in
// one transaction. b.mu is held and the index loaded.
func (b *Badger) deleteLocked(keys []Key, blobs []Digest) error {
	var orphans []Digest
	b.garbage = true
	err := b.update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(dbKey(kindEntry, k[:])); err != nil {
				return err
			}
			if err := txn.Delete(dbKey(kindLastUsed, k[:])); err != nil {
				return err
			}
		}
		for _, d := range blobs {
			if err := txn.Delete(dbKey(kindBlob, d[:])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range blobs {
		b.idx.removeBlob(d)
	}
	for _, k := range keys {
		orphans = append(orphans, b.idx.removeEntry(k)...)
	}
	return b.deleteBlobsLocked(orphans)
}

// deleteBlobsLocked deletes blobs. b.mu is held and the index loaded.
func (b *Badger) deleteBlobsLocked(ds []Digest) error {
	if len(ds) > 0 {
		b.garbage = true
	}
	for len(ds) > 0 {
		n := min(len(ds), 1000)
		err := b.update(func(txn *badger.Txn) error {
			for _, d := range ds[:n] {
				if err := txn.Delete(dbKey(kindBlob, d[:])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, d := range ds[:n] {
			b.idx.removeBlob(d)
		}
		ds = ds[n:]
	}
	return nil
}

// removeDamaged removes a damaged entry and, when known, its corrupt blob.
func (b *Badger) removeDamaged(key Key, bad *Digest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.loadLocked(); err != nil {
		return err
	}
	var blobs []Digest
	if bad != nil {
		blobs = append(blobs, *bad)
	}
	return b.deleteLocked([]Key{key}, blobs)
}

// Put implements Store.
func (b *Badger) Put(ctx context.Context, e *Entry, data [][]byte) error {
	if b.opt.ReadOnly {
		if b.roCause != nil {
			return fmt.Errorf("%w: %w", ErrReadOnly, b.roCause)
		}
		return ErrReadOnly
	}
	return b.op("put", func() error { return b.put(ctx, e, data) })
}

func (b *Badger) put(ctx context.Context, e *Entry, data [][]byte) error {
	c, blobs, err := prepare(e, data, b.opt.now())
	if err != nil {
		return err
	}
	size := distinctSize(c)
	if b.opt.MaxBytes > 0 && size > b.opt.MaxBytes {
		return &DataError{Key: e.Key, Reason: fmt.Sprintf("%d bytes exceed the limit of %d", size, b.opt.MaxBytes), Err: ErrTooLarge}
	}
	wrap := func(err error) error { return fmt.Errorf("cache: put %s: %w", e.Key.String()[:12], err) }
	if err := b.checkSpace(size); err != nil {
		return wrap(err)
	}
	ds := distinctDigests(c)
	if err := b.locked("put", func() error {
		if err := b.loadLocked(); err != nil {
			return err
		}
		b.idx.pin(ds)
		return nil
	}); err != nil {
		return err
	}
	pinned := true
	defer func() {
		if pinned { // the written blobs are orphans now
			b.locked("put", func() error { b.idx.unpin(ds); return nil })
		}
	}()
	if err := b.putBlobs(ctx, ds, blobs); err != nil {
		return wrap(err)
	}

	// The entry last, under b.mu so that the index and the database
	// agree about which entries exist.
	enc := encodeEntry(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	pinned = false
	defer b.idx.unpin(ds) // runs before the Unlock
	if b.testHookLocked != nil {
		b.testHookLocked("put")
	}
	err = b.update(func(txn *badger.Txn) error {
		uk := dbKey(kindLastUsed, c.Key[:])
		last := c.LastUsed
		if item, err := txn.Get(uk); err == nil {
			_ = item.Value(func(v []byte) error {
				if t, ok := decodeTime(v); ok && t.After(last) {
					last = t
				}
				return nil
			})
		}
		c.LastUsed = last
		if err := txn.Set(dbKey(kindEntry, c.Key[:]), enc); err != nil {
			return err
		}
		return txn.Set(uk, encodeTime(last))
	})
	if err != nil {
		return wrap(fmt.Errorf("write entry: %w", err))
	}
	orphans := b.idx.addEntry(c)
	if err := b.deleteBlobsLocked(orphans); err != nil {
		return wrap(fmt.Errorf("delete replaced blobs: %w", err))
	}
	if b.opt.MaxBytes > 0 && b.idx.bytes > b.opt.MaxBytes {
		if err := b.trimLocked(b.opt.MaxBytes, &TrimReport{}); err != nil {
			return wrap(fmt.Errorf("evict: %w", err))
		}
	}
	return nil
}

// putBlobs writes the blobs that are not stored yet, each in its own
// transaction, then runs the crash hook.
func (b *Badger) putBlobs(ctx context.Context, ds []Digest, blobs map[Digest][]byte) error {
	for _, d := range ds {
		if err := ctx.Err(); err != nil {
			return err
		}
		bk := dbKey(kindBlob, d[:])
		err := b.update(func(txn *badger.Txn) error {
			if _, err := txn.Get(bk); err == nil {
				return nil
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
			return txn.Set(bk, blobs[d])
		})
		if err != nil {
			return fmt.Errorf("write blob %s: %w", shortHex(d[:]), err)
		}
		b.locked("put", func() error { b.idx.addBlob(d, int64(len(blobs[d]))); return nil })
	}
	if b.testHookAfterBlobs != nil {
		return b.testHookAfterBlobs()
	}
	return nil
}

// locked runs fn with b.mu held, released even when fn panics.
func (b *Badger) locked(op string, fn func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.testHookLocked != nil {
		b.testHookLocked(op)
	}
	return fn()
}

// trimLocked deletes orphans, then evicts least-recently-used entries until
// the size fits. b.mu is held and the index loaded.
func (b *Badger) trimLocked(maxBytes int64, r *TrimReport) error {
	orphans := b.idx.orphans()
	if err := b.deleteBlobsLocked(orphans); err != nil {
		return err
	}
	r.Orphans += len(orphans)
	for _, k := range b.idx.lru() {
		if b.idx.bytes <= maxBytes {
			break
		}
		if err := b.deleteLocked([]Key{k}, nil); err != nil {
			return err
		}
		b.stats.add(func(s *Stats) { s.Evictions++ })
		r.Evicted = append(r.Evicted, k)
	}
	return nil
}

// Entry implements Store.
func (b *Badger) Entry(ctx context.Context, key Key) (e *Entry, err error) {
	err = b.op("entry", func() error {
		var err error
		e, err = b.entry(ctx, key)
		return err
	})
	return e, err
}

func (b *Badger) entry(ctx context.Context, key Key) (*Entry, error) {
	var e *Entry
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		e, err = b.readEntry(txn, key)
		return err
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, &MissError{Key: key, Reason: ReasonNoEntry}
	case errors.Is(err, errEntry):
		reason := err.Error()
		b.stats.add(func(s *Stats) { s.Damaged++; s.Corrupt++ })
		if !b.opt.ReadOnly {
			if err := b.removeDamaged(key, nil); err != nil && b.opt.Logger != nil {
				b.opt.Logger.Warningf("cache: entry %s: %s: remove: %v", key.String()[:12], reason, err)
			}
		}
		return nil, &MissError{Key: key, Reason: ReasonDamaged + reason, Corrupt: true}
	case err != nil:
		return nil, fmt.Errorf("cache: entry %s: %w", key.String()[:12], err)
	}
	b.touch(key)
	return e, nil
}

// touch records a use of key now, to be written by the next flush.
func (b *Badger) touch(key Key) {
	if b.opt.ReadOnly {
		return
	}
	now := b.opt.now()
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		if t, ok := b.touches[key]; !ok || now.After(t) {
			b.touches[key] = now
		}
	}()
}

// List implements Store. It reads all entries first, then calls fn without
// holding a transaction.
func (b *Badger) List(ctx context.Context, fn func(*Entry) error) error {
	var es []*Entry
	if err := b.op("list", func() error {
		var err error
		es, err = b.list()
		return err
	}); err != nil {
		return err
	}
	// fn runs outside the operation: it may call the store.
	for _, e := range es {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (b *Badger) list() ([]*Entry, error) {
	var es []*Entry
	err := b.db.View(func(txn *badger.Txn) error {
		var keys []Key
		if err := iterate(txn, kindEntry, func(id []byte, _ *badger.Item) error {
			keys = append(keys, Key(id))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			e, err := b.readEntry(txn, k)
			if errors.Is(err, errEntry) {
				continue
			}
			if err != nil {
				return err
			}
			es = append(es, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache: list: %w", err)
	}
	return es, nil
}

// Delete implements Store.
func (b *Badger) Delete(ctx context.Context, key Key) error {
	if b.opt.ReadOnly {
		return ErrReadOnly
	}
	return b.op("delete", func() error {
		return b.locked("delete", func() error {
			if err := b.loadLocked(); err != nil {
				return err
			}
			if err := b.deleteLocked([]Key{key}, nil); err != nil {
				return fmt.Errorf("cache: delete %s: %w", key.String()[:12], err)
			}
			return nil
		})
	})
}

// Verify implements Store. It holds the store's lock while it re-hashes, so
// Puts wait; Gets do not.
func (b *Badger) Verify(ctx context.Context) (*VerifyReport, error) {
	return b.verifyOp(ctx, b.opt.ReadOnly)
}

// Check implements Checker.
func (b *Badger) Check(ctx context.Context) (*VerifyReport, error) { return b.verifyOp(ctx, true) }

func (b *Badger) verifyOp(ctx context.Context, reportOnly bool) (r *VerifyReport, err error) {
	err = b.op("verify", func() error {
		var err error
		r, err = b.verify(ctx, reportOnly)
		return err
	})
	return r, err
}

func (b *Badger) verify(ctx context.Context, reportOnly bool) (*VerifyReport, error) {
	_ = b.flush() // a write refused for lack of space must not stop the check
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.testHookLocked != nil {
		b.testHookLocked("verify")
	}
	if err := b.loadLocked(); err != nil {
		return nil, err
	}
	r := &VerifyReport{}
	// Badger's iterators skip a block that fails its checksum without an
	// error, so the tables are checked first, as a whole.
	if err := verifyTables(b.db); err != nil {
		r.Tables = err.Error()
	}
	bad := make(map[Digest]string)
	sizes := make(map[Digest]int64)
	entries := make(map[Key]*Entry)
	err := b.db.View(func(txn *badger.Txn) error {
		err := iterate(txn, kindBlob, func(id []byte, item *badger.Item) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			d := Digest(id)
			err := item.Value(func(v []byte) error {
				r.Blobs++
				r.Bytes += int64(len(v))
				sizes[d] = int64(len(v))
				if sha256.Sum256(v) != d {
					bad[d] = fmt.Sprintf("blob %s corrupt: sha256 mismatch", shortHex(d[:]))
				}
				return nil
			})
			if err != nil {
				r.Blobs++
				sizes[d] = -1
				bad[d] = fmt.Sprintf("blob %s unreadable: %v", shortHex(d[:]), err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return iterate(txn, kindEntry, func(id []byte, item *badger.Item) error {
			k := Key(id)
			r.Entries++
			err := item.Value(func(v []byte) error {
				e, err := decodeEntry(k, v)
				if err == nil {
					if why := badManifest(e); why != "" {
						return errors.New(why)
					}
					entries[k] = e
				}
				return err
			})
			if err != nil {
				// Undecodable, or unreadable (Badger's checksum of
				// the value failed).
				if r.BadEntries == nil {
					r.BadEntries = make(map[Key]string)
				}
				r.BadEntries[k] = err.Error()
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cache: verify: %w", err)
	}
	byDigest := make(map[Digest]*CorruptBlob)
	var removed []Key
	for k := range r.BadEntries {
		removed = append(removed, k)
	}
	for k, e := range entries {
		for _, o := range e.Outputs {
			reason, isBad := bad[o.Digest]
			if size, ok := sizes[o.Digest]; !ok {
				reason, isBad = missingReason(o.Digest), true
			} else if !isBad && size != o.Size {
				reason, isBad = fmt.Sprintf("blob %s corrupt: size %d, want %d", shortHex(o.Digest[:]), size, o.Size), true
			}
			if !isBad {
				continue
			}
			cb := byDigest[o.Digest]
			if cb == nil {
				cb = &CorruptBlob{Digest: o.Digest, Reason: reason}
				byDigest[o.Digest] = cb
			}
			if !slices.Contains(cb.Entries, k) {
				cb.Entries = append(cb.Entries, k)
			}
			if !slices.Contains(removed, k) {
				removed = append(removed, k)
			}
		}
	}
	for d, reason := range bad {
		if byDigest[d] == nil {
			byDigest[d] = &CorruptBlob{Digest: d, Reason: reason}
		}
	}
	for _, cb := range byDigest {
		slices.SortFunc(cb.Entries, func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	}
	r.Corrupt = sortCorrupt(byDigest)
	slices.SortFunc(removed, func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	if reportOnly {
		return r, nil
	}
	var badBlobs []Digest
	for d := range bad {
		badBlobs = append(badBlobs, d)
	}
	if err := b.deleteLocked(removed, badBlobs); err != nil {
		return nil, fmt.Errorf("cache: verify: remove damaged entries: %w", err)
	}
	r.Removed = removed
	b.stats.add(func(s *Stats) { s.Corrupt += int64(len(removed)) })
	orphans := b.idx.orphans()
	for _, d := range orphans {
		r.OrphanBytes += b.idx.blobs[d].size
	}
	if err := b.deleteBlobsLocked(orphans); err != nil {
		return nil, fmt.Errorf("cache: verify: delete orphan blobs: %w", err)
	}
	r.Orphans = len(orphans)
	return r, nil
}

// verifyTables runs Badger's checksum check of every table. Badger's check
// dereferences a nil block when a block fails its checksum (v4.9.6,
// table.VerifyChecksum) while it holds no lock: that panic is the damage
// being reported, and is returned as an error.
func verifyTables(db *badger.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a table block failed its checksum (%v)", r)
		}
	}()
	return db.VerifyChecksum()
}

// Trim implements Store. After evicting, when anything was deleted since
// the last Trim (or this store was opened), it flushes and compacts the LSM
// tree (see compact) and runs Badger's value-log GC, which rewrites every
// value-log file whose garbage share is at least one half and deletes it,
// returning the space to the file system. The value-log file being written
// is never collected, so up to valueLogFileSize of garbage may remain.
func (b *Badger) Trim(ctx context.Context, maxBytes int64) (r *TrimReport, err error) {
	if b.opt.ReadOnly {
		return nil, ErrReadOnly
	}
	err = b.op("trim", func() error {
		var err error
		r, err = b.trim(ctx, maxBytes)
		return err
	})
	return r, err
}

func (b *Badger) trim(ctx context.Context, maxBytes int64) (*TrimReport, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	var r *TrimReport
	var garbage bool
	err := b.locked("trim", func() error {
		if err := b.loadLocked(); err != nil {
			return err
		}
		r = &TrimReport{BytesBefore: b.idx.bytes, MaxBytes: maxBytes}
		err := b.trimLocked(maxBytes, r)
		r.BytesAfter = b.idx.bytes
		garbage = b.garbage
		b.garbage = false
		return err
	})
	if r == nil {
		return nil, err
	}
	if err != nil {
		return r, fmt.Errorf("cache: trim: %w", err)
	}
	if !garbage {
		return r, b.flush()
	}
	if err := b.compact(); err != nil {
		b.locked("trim", func() error { b.garbage = true; return nil })
		return r, fmt.Errorf("cache: trim: %w", err)
	}
	for ctx.Err() == nil {
		// The GC rewrites the live part of a value-log file into the
		// mapped file being written.
		if err := b.checkSpace(b.vlogSize); err != nil {
			return r, fmt.Errorf("cache: trim: value-log GC: %w", err)
		}
		err := b.db.RunValueLogGC(gcDiscardRatio)
		if err != nil {
			if !errors.Is(err, badger.ErrNoRewrite) && !errors.Is(err, badger.ErrRejected) {
				return r, fmt.Errorf("cache: trim: value-log GC: %w", err)
			}
			break
		}
		r.ValueLogGC++
	}
	return r, b.flush()
}

// compact makes deleted values visible to the value-log GC. Badger learns
// which value-log bytes are garbage when compactions drop the versions that
// point at them; deletions still in memtables count for nothing. So compact
// flushes the memtables (DropPrefix of a sentinel key does that; Badger has
// no other exported flush) and then compacts every level into one
// (Flatten), which drops the deleted and overwritten versions.
func (b *Badger) compact() error {
	sentinel := []byte{kindFlush}
	if err := b.update(func(txn *badger.Txn) error { return txn.Set(sentinel, nil) }); err != nil {
		return err
	}
	if err := b.db.DropPrefix(sentinel); err != nil {
		return fmt.Errorf("flush memtables: %w", err)
	}
	if err := b.db.Flatten(1); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// Clear implements Store.
func (b *Badger) Clear(ctx context.Context) error {
	if b.opt.ReadOnly {
		return ErrReadOnly
	}
	return b.op("clear", b.clear)
}

func (b *Badger) clear() error {
	if err := b.checkSpace(0); err != nil {
		return fmt.Errorf("cache: clear: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.db.DropPrefix([]byte{kindEntry}, []byte{kindLastUsed}, []byte{kindBlob}); err != nil {
		return fmt.Errorf("cache: clear: %w", err)
	}
	x := newIndex()
	if b.idx != nil {
		x.pins = b.idx.pins
	}
	b.idx = x
	b.garbage = true
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		clear(b.touches)
	}()
	return nil
}

// Stats implements Store.
func (b *Badger) Stats(ctx context.Context) (s *Stats, err error) {
	err = b.op("stats", func() error {
		var err error
		s, err = b.statsOp()
		return err
	})
	if err != nil && b.Healthy() != nil {
		// An unhealthy store still says what it is: the counters it holds
		// in memory and why it is unusable.
		s = &Stats{UncachedReasons: map[string]int64{}, MaxBytes: b.opt.MaxBytes}
		d := b.stats.take(false)
		addStats(s, &d)
		s.Health = append(b.healthNotes(), err.Error())
		return s, nil
	}
	return s, err
}

// healthNotes returns the notes of Stats.Health other than a panic.
func (b *Badger) healthNotes() []string {
	b.noteMu.Lock()
	defer b.noteMu.Unlock()
	return slices.Clone(b.notes)
}

func (b *Badger) statsOp() (*Stats, error) {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	flushErr := b.flushLocked()
	s := &Stats{UncachedReasons: make(map[string]int64), MaxBytes: b.opt.MaxBytes}
	err := b.db.View(func(txn *badger.Txn) error {
		fields := counterFields(s)
		return iterate(txn, kindCounter, func(id []byte, item *badger.Item) error {
			var n int64
			if err := item.Value(func(v []byte) error {
				if len(v) == 8 {
					n = int64(binary.BigEndian.Uint64(v))
				}
				return nil
			}); err != nil {
				return err
			}
			if r, ok := strings.CutPrefix(string(id), uncachedPrefix); ok {
				s.UncachedReasons[r] += n
			} else if i := slices.Index(counterNames, string(id)); i >= 0 {
				*fields[i] += n
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cache: stats: %w", err)
	}
	d := b.stats.take(false)
	addStats(s, &d)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.loadLocked(); err != nil {
		return nil, err
	}
	s.Entries = int64(len(b.idx.entries))
	s.Bytes = b.idx.bytes
	s.Health = b.healthNotes()
	if !b.opt.ReadOnly {
		if err := b.checkSpace(0); err != nil {
			s.Health = append(s.Health, err.Error()+": writes are refused, builds run uncached")
		} else if flushErr != nil {
			s.Health = append(s.Health, flushErr.Error())
		}
	}
	return s, nil
}

// Count implements Store.
func (b *Badger) Count(ctx context.Context, event, reason string) error {
	return b.op("count", func() error { return b.stats.countEvent(event, reason) })
}

// Close implements Store: it writes the batched last-use times and counters
// and closes the database. Closing twice is not an error.
//
// It waits for the operations in flight; later ones fail with ErrClosed.
// A store made unhealthy by a panic writes nothing more, and gives Badger
// closeTimeout to close (a panic may have left Badger's own locks held).
func (b *Badger) Close() error {
	b.lifeMu.Lock()
	if b.closed {
		b.lifeMu.Unlock()
		return nil
	}
	b.closed = true
	for b.inFlight > 0 {
		b.lifeCond.Wait()
	}
	b.lifeMu.Unlock()
	if !b.opt.ReadOnly {
		close(b.stop)
	}
	<-b.done
	if u := b.broken.Load(); u != nil {
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("badger panicked: %v", r)
				}
			}()
			done <- b.db.Close()
		}()
		t := time.NewTimer(closeTimeout)
		defer t.Stop()
		select {
		case err := <-done:
			return errors.Join(u, err)
		case <-t.C:
			return fmt.Errorf("%w; the database did not close within %s", u, closeTimeout)
		}
	}
	ferr := b.safe("close", b.flush)
	if errors.Is(ferr, ErrNoSpace) {
		// Lost counts and last uses are no reason to fail the caller.
		if b.opt.Logger != nil {
			b.opt.Logger.Warningf("cache: close: %v", ferr)
		}
		ferr = nil
	}
	err := b.safe("close", b.db.Close)
	if !b.opt.ReadOnly {
		// Closing wrote the memtables to new tables, 0644 under the
		// usual umask, after the flusher's last pass.
		tightenFiles(b.dir)
	}
	if err != nil {
		return errors.Join(ferr, fmt.Errorf("cache: close: %w", err))
	}
	return ferr
}

// closeTimeout bounds the close of an unhealthy store's database.
const closeTimeout = 5 * time.Second

// safe runs fn, turning a panic into an error that marks the store
// unhealthy.
func (b *Badger) safe(op string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = b.markBroken(op, r)
		}
	}()
	return fn()
}

// CorruptBlob implements FaultInjector: it rewrites the stored blob with one
// bit flipped (an empty blob becomes one zero byte), bypassing Put's checks.
func (b *Badger) CorruptBlob(ctx context.Context, d Digest) error {
	k := dbKey(kindBlob, d[:])
	return b.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return fmt.Errorf("cache: corrupt blob %s: %w", shortHex(d[:]), err)
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		if len(v) == 0 {
			v = []byte{0}
		} else {
			v[len(v)/2] ^= 1
		}
		return txn.Set(k, v)
	})
}

// RemoveBlob implements FaultInjector.
func (b *Badger) RemoveBlob(ctx context.Context, d Digest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.update(func(txn *badger.Txn) error { return txn.Delete(dbKey(kindBlob, d[:])) }); err != nil {
		return err
	}
	b.garbage = true
	if b.idx != nil {
		b.idx.removeBlob(d)
	}
	return nil
}
