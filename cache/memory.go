package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// Memory is a Store that keeps everything in memory, for tests and for
// callers that need no persistence: the uncounted store (memStore) wrapped
// in a Counting store whose counters it keeps. It is safe for concurrent
// use.
type Memory struct {
	*memStore
	counted *Counting
}

// memStore is the in-memory store without the event counts of a Counting
// store (it counts only its own evictions); it keeps the counters of the
// Counting store that wraps it (Counters). Safe for concurrent use.
type memStore struct {
	opt   Options
	stats counters
	// evicted counts evictions not yet taken by the Counting store.
	evicted atomic.Int64

	mu      sync.Mutex // guards the fields below; held for whole operations
	idx     *index
	entries map[Key]*Entry
	blobs   map[Digest][]byte
	// chunked holds the blobs larger than a chunk, as chunks.
	chunked map[Digest]*memChunked
	closed  bool

	// testHookAfterBlobs, when set, runs between the blob writes and the
	// entry write of Put; an error aborts the Put as a crash would.
	testHookAfterBlobs func() error
}

var (
	_ Store         = (*Memory)(nil)
	_ Checker       = (*Memory)(nil)
	_ FaultInjector = (*Memory)(nil)
	_ Counters      = (*memStore)(nil)
	_ Evicter       = (*memStore)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory(opt Options) *Memory {
	m := &memStore{
		opt:     opt,
		idx:     newIndex(),
		entries: make(map[Key]*Entry),
		blobs:   make(map[Digest][]byte),
		chunked: make(map[Digest]*memChunked),
	}
	return &Memory{memStore: m, counted: Counted(m, m)}
}

func cloneEntry(e *Entry) *Entry {
	c := *e
	c.Record = bytes.Clone(e.Record)
	c.Outputs = slices.Clone(e.Outputs)
	c.Meta = maps.Clone(e.Meta)
	return &c
}

func (m *memStore) lock() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// memChunked is a chunked blob of a Memory store: its list and chunks.
type memChunked struct {
	list   *chunkList
	chunks [][]byte
}

// Get implements Store.
func (m *memStore) Get(ctx context.Context, key Key) (*Hit, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return nil, &MissError{Key: key, Reason: ReasonNoEntry}
	}
	hit := &Hit{Entry: cloneEntry(e), srcs: make([]*source, len(e.Outputs))}
	for i, o := range e.Outputs {
		src, reason := m.sourceLocked(o)
		if reason != "" {
			m.removeDamagedLocked(key, &o.Digest)
			return nil, &MissError{Key: key, Reason: ReasonDamaged + reason, Corrupt: true}
		}
		hit.srcs[i] = src
	}
	hit.whenDamaged(func(me *MissError) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.removeDamagedLocked(key, me.blob)
	})
	m.touchLocked(e)
	hit.Entry.LastUsed = e.LastUsed // this use
	return hit, nil
}

// removeDamagedLocked removes a damaged entry and its damaged blob, unless
// the store is read-only. m.mu is held.
func (m *memStore) removeDamagedLocked(key Key, bad *Digest) {
	if m.opt.ReadOnly {
		return
	}
	if bad != nil {
		m.removeBlobLocked(*bad)
	}
	m.deleteLocked(key)
}

// sourceLocked returns the source of output o, or why its blob is damaged
// or missing. m.mu is held.
func (m *memStore) sourceLocked(o Output) (*source, string) {
	if _, ok := m.blobs[o.Digest]; ok {
		load := func() ([]byte, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.closed {
				return nil, ErrClosed
			}
			// The blob as it is now, checked by the reader.
			b, ok := m.blobs[o.Digest]
			if !ok {
				return nil, errBlobMissing
			}
			return bytes.Clone(b), nil
		}
		return &source{out: o, load: load}, ""
	}
	c, ok := m.chunked[o.Digest]
	if !ok {
		return nil, missingReason(o.Digest)
	}
	if c.list.size != o.Size {
		return nil, fmt.Sprintf("blob %s corrupt: size %d, want %d", shortHex(o.Digest[:]), c.list.size, o.Size)
	}
	fetch := func(j int, buf []byte) ([]byte, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed {
			return nil, ErrClosed
		}
		// The blob's chunks as they are now: removed or damaged since
		// Get, they fail the reader's checks.
		if c := m.chunked[o.Digest]; c != nil && j < len(c.chunks) {
			return append(buf[:0], c.chunks[j]...), nil
		}
		return nil, errChunkMissing
	}
	return &source{out: o, list: c.list, fetch: fetch}, ""
}

// Put implements Store.
func (m *memStore) Put(ctx context.Context, e *Entry, data []io.Reader) error {
	if m.opt.ReadOnly {
		return ErrReadOnly
	}
	c, err := prepare(e, len(data), m.opt.now())
	if err != nil {
		return err
	}
	if size := givenSize(c); m.opt.MaxBytes > 0 && size > m.opt.MaxBytes {
		return &DataError{Key: e.Key, Reason: fmt.Sprintf("%d bytes exceed the limit of %d", size, m.opt.MaxBytes), Err: ErrTooLarge}
	}
	blobs, err := m.readOutputs(ctx, c, data)
	if err != nil {
		return err
	}
	if size := distinctSize(c); m.opt.MaxBytes > 0 && size > m.opt.MaxBytes {
		return &DataError{Key: e.Key, Reason: fmt.Sprintf("%d bytes exceed the limit of %d", size, m.opt.MaxBytes), Err: ErrTooLarge}
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for d, b := range blobs {
		m.storeBlobLocked(d, b)
	}
	if m.testHookAfterBlobs != nil {
		if err := m.testHookAfterBlobs(); err != nil {
			return err
		}
	}
	if old, ok := m.entries[c.Key]; ok && old.LastUsed.After(c.LastUsed) {
		c.LastUsed = old.LastUsed
	}
	m.entries[c.Key] = c
	for _, d := range m.idx.addEntry(c) {
		m.removeBlobLocked(d)
	}
	if m.opt.MaxBytes > 0 && m.idx.bytes > m.opt.MaxBytes {
		m.trimLocked(m.opt.MaxBytes, nil)
	}
	return nil
}

// memBlob is one output as a Memory store's Put read it.
type memBlob struct {
	st     *streamed
	chunks [][]byte
}

// readOutputs reads every output of c from data, filling or checking its
// size and digest, and returns the distinct blobs.
func (m *memStore) readOutputs(ctx context.Context, c *Entry, data []io.Reader) (map[Digest]*memBlob, error) {
	buf, done := getChunkBuffer(chunkSize(&m.opt))
	defer done()
	blobs := make(map[Digest]*memBlob, len(data))
	for i := range c.Outputs {
		o := &c.Outputs[i]
		if data[i] == nil {
			return nil, &DataError{Key: c.Key, Output: o.Name, Reason: "no data"}
		}
		var chunks [][]byte
		put := func(_ uploadID, _ int, b []byte) error { chunks = append(chunks, bytes.Clone(b)); return nil }
		limit, tooBig := outputLimit(c.Key, *o, m.opt.MaxBytes)
		st, err := streamBlob(ctx, data[i], buf, limit, put, tooBig)
		if err != nil {
			return nil, err
		}
		if err := checkStreamed(c.Key, o, st); err != nil {
			return nil, err
		}
		blobs[o.Digest] = &memBlob{st: st, chunks: chunks}
	}
	return blobs, nil
}

// storeBlobLocked stores the blob d unless it is stored. m.mu is held.
func (m *memStore) storeBlobLocked(d Digest, b *memBlob) {
	if _, ok := m.blobs[d]; ok {
		return
	}
	if _, ok := m.chunked[d]; ok {
		return
	}
	if b.st.list == nil {
		m.blobs[d] = b.st.whole
		m.idx.addBlob(d, b.st.size)
		return
	}
	m.chunked[d] = &memChunked{list: b.st.list, chunks: b.chunks}
	m.idx.addChunked(d, b.st.size, b.st.list)
}

// deleteLocked removes an entry and its unreferenced blobs.
func (m *memStore) deleteLocked(key Key) bool {
	if _, ok := m.entries[key]; !ok {
		return false
	}
	delete(m.entries, key)
	for _, d := range m.idx.removeEntry(key) {
		m.removeBlobLocked(d)
	}
	return true
}

// removeBlobLocked removes a blob from the index and the blob map. m.mu
// is held.
func (m *memStore) removeBlobLocked(d Digest) {
	m.idx.removeBlob(d)
	delete(m.blobs, d)
	delete(m.chunked, d)
}

// trimLocked deletes orphans, then evicts until the size fits.
func (m *memStore) trimLocked(maxBytes int64, r *TrimReport) {
	for _, d := range m.idx.orphans() {
		m.removeBlobLocked(d)
		if r != nil {
			r.Orphans++
		}
	}
	if m.idx.bytes <= maxBytes {
		return
	}
	for _, k := range m.idx.lru() {
		if m.idx.bytes <= maxBytes {
			break
		}
		m.deleteLocked(k)
		m.evicted.Add(1)
		if r != nil {
			r.Evicted = append(r.Evicted, k)
		}
	}
}

// Entry implements Store.
func (m *memStore) Entry(ctx context.Context, key Key) (*Entry, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return nil, &MissError{Key: key, Reason: ReasonNoEntry}
	}
	c := cloneEntry(e)
	m.touchLocked(e)
	return c, nil
}

// touchLocked records a use of e now. m.mu is held.
func (m *memStore) touchLocked(e *Entry) {
	if m.opt.ReadOnly {
		return
	}
	now := m.opt.now()
	if now.After(e.LastUsed) {
		e.LastUsed = now
	}
	m.idx.touch(e.Key, now)
}

// List implements Store. fn runs without the store's lock held.
func (m *memStore) List(ctx context.Context, fn func(*Entry) error) error {
	if err := m.lock(); err != nil {
		return err
	}
	keys := slices.SortedFunc(maps.Keys(m.entries), func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	es := make([]*Entry, len(keys))
	for i, k := range keys {
		es[i] = cloneEntry(m.entries[k])
	}
	m.mu.Unlock()
	return visitEntries(ctx, es, fn)
}

// Delete implements Store.
func (m *memStore) Delete(ctx context.Context, key Key) error {
	if m.opt.ReadOnly {
		return ErrReadOnly
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.deleteLocked(key)
	return nil
}

// Verify implements Store.
func (m *memStore) Verify(ctx context.Context) (*VerifyReport, error) {
	return m.verify(ctx, m.opt.ReadOnly)
}

// Check implements Checker.
func (m *memStore) Check(ctx context.Context) (*VerifyReport, error) { return m.verify(ctx, true) }

func (m *memStore) verify(ctx context.Context, reportOnly bool) (*VerifyReport, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r := &VerifyReport{Entries: len(m.entries)}
	bad := make(map[Digest]string)
	sizes := m.scanBlobsLocked(r, bad, progressOf(ctx))
	byDigest := make(map[Digest]*CorruptBlob)
	keys := slices.SortedFunc(maps.Keys(m.entries), func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	for _, k := range keys {
		if why := badManifest(m.entries[k]); why != "" {
			if r.BadEntries == nil {
				r.BadEntries = make(map[Key]string)
			}
			r.BadEntries[k] = why
			r.Removed = append(r.Removed, k)
			continue
		}
		for _, o := range m.entries[k].Outputs {
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
			if !slices.Contains(r.Removed, k) {
				r.Removed = append(r.Removed, k)
			}
		}
	}
	for d, reason := range bad {
		if byDigest[d] == nil {
			byDigest[d] = &CorruptBlob{Digest: d, Reason: reason}
		}
	}
	r.Corrupt = sortCorrupt(byDigest)
	if reportOnly {
		r.Removed = nil
		return r, nil
	}
	for _, k := range r.Removed {
		m.deleteLocked(k)
	}
	for d := range bad {
		m.removeBlobLocked(d)
	}
	for _, d := range m.idx.orphans() {
		r.Orphans++
		r.OrphanBytes += m.idx.blobs[d].size
		m.removeBlobLocked(d)
	}
	return r, nil
}

// scanBlobsLocked re-hashes every blob into r, recording the damaged ones
// in bad, reporting the blobs done to progress, and returns the size of
// each. m.mu is held.
func (m *memStore) scanBlobsLocked(r *VerifyReport, bad map[Digest]string, progress ProgressFunc) map[Digest]int64 {
	total := len(m.blobs) + len(m.chunked)
	sizes := make(map[Digest]int64, total)
	progress(0, total)
	for d, b := range m.blobs {
		r.Blobs++
		progress(r.Blobs, total)
		r.Bytes += int64(len(b))
		sizes[d] = int64(len(b))
		if sha256.Sum256(b) != d {
			bad[d] = fmt.Sprintf("blob %s corrupt: sha256 mismatch", shortHex(d[:]))
		}
	}
	for d, c := range m.chunked {
		r.Blobs++
		progress(r.Blobs, total)
		n, reason, _ := checkChunks(d, c.list, func(j int, _ []byte) ([]byte, error) {
			if j < len(c.chunks) {
				return c.chunks[j], nil
			}
			return nil, errChunkMissing
		})
		r.Bytes += n
		sizes[d] = c.list.size
		if reason != "" {
			bad[d] = reason
		}
	}
	return sizes
}

func sortCorrupt(m map[Digest]*CorruptBlob) []CorruptBlob {
	out := make([]CorruptBlob, 0, len(m))
	for _, cb := range m {
		out = append(out, *cb)
	}
	slices.SortFunc(out, func(a, b CorruptBlob) int { return bytes.Compare(a.Digest[:], b.Digest[:]) })
	return out
}

// Trim implements Store.
func (m *memStore) Trim(ctx context.Context, maxBytes int64) (*TrimReport, error) {
	if m.opt.ReadOnly {
		return nil, ErrReadOnly
	}
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r := &TrimReport{BytesBefore: m.idx.bytes, MaxBytes: maxBytes}
	m.trimLocked(maxBytes, r)
	r.BytesAfter = m.idx.bytes
	return r, nil
}

// Clear implements Store.
func (m *memStore) Clear(ctx context.Context) error {
	if m.opt.ReadOnly {
		return ErrReadOnly
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	pins := m.idx.pins
	m.idx = newIndex()
	m.idx.pins = pins
	m.entries = make(map[Key]*Entry)
	m.blobs = make(map[Digest][]byte)
	m.chunked = make(map[Digest]*memChunked)
	return nil
}

// Stats implements Maintenance: the size, without counts (the Counting
// store of Memory adds them from Counts).
func (m *memStore) Stats(ctx context.Context) (*Stats, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	s := Stats{UncachedReasons: make(map[string]int64)}
	s.Entries = int64(len(m.entries))
	s.Bytes = m.idx.bytes
	s.MaxBytes = m.opt.MaxBytes
	return &s, nil
}

// AddCounts implements Counters.
func (m *memStore) AddCounts(ctx context.Context, d Stats) error {
	m.stats.add(func(s *Stats) { addStats(s, &d) })
	return nil
}

// Counts implements Counters.
func (m *memStore) Counts(ctx context.Context) (Stats, error) { return m.stats.take(false), nil }

// Close implements Store. Closing twice is not an error.
func (m *memStore) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

// CorruptBlob implements FaultInjector.
func (m *memStore) CorruptBlob(ctx context.Context, d Digest) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if c, ok := m.chunked[d]; ok {
		// One bit of the middle chunk.
		b := c.chunks[len(c.chunks)/2]
		b[len(b)/2] ^= 1
		return nil
	}
	b, ok := m.blobs[d]
	if !ok {
		return fmt.Errorf("cache: corrupt blob %s: no such blob", shortHex(d[:]))
	}
	if len(b) == 0 {
		m.blobs[d] = []byte{0}
		return nil
	}
	b[len(b)/2] ^= 1
	return nil
}

// RemoveBlob implements FaultInjector.
func (m *memStore) RemoveBlob(ctx context.Context, d Digest) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.removeBlobLocked(d)
	return nil
}

// The faces of Memory are those of its Counting store.

// Get implements Core.
func (m *Memory) Get(ctx context.Context, key Key) (*Hit, error) { return m.counted.Get(ctx, key) }

// Put implements Core.
func (m *Memory) Put(ctx context.Context, e *Entry, data []io.Reader) error {
	return m.counted.Put(ctx, e, data)
}

// Entry implements Core.
func (m *Memory) Entry(ctx context.Context, key Key) (*Entry, error) {
	return m.counted.Entry(ctx, key)
}

// Delete implements Core.
func (m *Memory) Delete(ctx context.Context, key Key) error { return m.counted.Delete(ctx, key) }

// Close implements Core.
func (m *Memory) Close() error { return m.counted.Close() }

// List implements Maintenance.
func (m *Memory) List(ctx context.Context, fn func(*Entry) error) error {
	return m.counted.List(ctx, fn)
}

// Verify implements Maintenance.
func (m *Memory) Verify(ctx context.Context) (*VerifyReport, error) { return m.counted.Verify(ctx) }

// Trim implements Maintenance.
func (m *Memory) Trim(ctx context.Context, maxBytes int64) (*TrimReport, error) {
	return m.counted.Trim(ctx, maxBytes)
}

// Clear implements Maintenance.
func (m *Memory) Clear(ctx context.Context) error { return m.counted.Clear(ctx) }

// Stats implements Maintenance.
func (m *Memory) Stats(ctx context.Context) (*Stats, error) { return m.counted.Stats(ctx) }

// Count implements EventCounter.
func (m *Memory) Count(ctx context.Context, event, reason string) error {
	return m.counted.Count(ctx, event, reason)
}

// TakeEvictions implements Evicter.
func (m *memStore) TakeEvictions() int64 { return m.evicted.Swap(0) }

// CountRemoteHit implements EventCounter.
func (m *Memory) CountRemoteHit(ctx context.Context, e *Entry) error {
	return m.counted.CountRemoteHit(ctx, e)
}

// ZeroCounts implements EventCounter.
func (m *Memory) ZeroCounts(ctx context.Context) error { return m.counted.ZeroCounts(ctx) }
