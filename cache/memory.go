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

// Memory is a store that keeps everything in memory, for tests and for
// callers that need no persistence: the uncounted store (memStore) in a
// Counting store whose counters it keeps; its methods are those of the
// Counting store, with FaultInjector's. It is safe for concurrent use.
type Memory struct {
	*Counting
	uncountedMemory
}

// uncountedMemory holds the memStore of a Memory one level below its
// Counting store, so that the Counting store's methods are Memory's.
type uncountedMemory struct{ *memStore }

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
	_ EventCounter  = (*Memory)(nil)
	_ FaultInjector = (*Memory)(nil)
	_ face          = (*memStore)(nil)
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
	return &Memory{Counting: &Counting{s: m, c: m}, uncountedMemory: uncountedMemory{m}}
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

// Get implements Core.
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

// Put implements Core.
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

// Entry implements EntryReader.
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

// walk implements face. fn runs without the store's lock held.
func (m *memStore) walk(ctx context.Context, fn func(*Entry) error) error {
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

// Delete implements Deleter.
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

// verifyAll implements face.
func (m *memStore) verifyAll(ctx context.Context, reportOnly bool) (*VerifyReport, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r := &VerifyReport{Entries: len(m.entries)}
	sc := &verifyScan{r: r, bad: make(map[Digest]string), entries: make(map[Key][]Output, len(m.entries))}
	sc.sizes = m.scanBlobsLocked(r, sc.bad, progressOf(ctx))
	for k, e := range m.entries {
		if why := badManifest(e); why != "" {
			if r.BadEntries == nil {
				r.BadEntries = make(map[Key]string)
			}
			r.BadEntries[k] = why
			continue
		}
		sc.entries[k] = e.Outputs
	}
	removed := sc.damaged()
	if reportOnly || m.opt.ReadOnly {
		return r, nil
	}
	r.Removed = removed
	for _, k := range removed {
		m.deleteLocked(k)
	}
	for d := range sc.bad {
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

// trimTo implements face.
func (m *memStore) trimTo(ctx context.Context, maxBytes int64) (*TrimReport, error) {
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

// clearAll implements face.
func (m *memStore) clearAll(ctx context.Context) error {
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

// size implements face: the size, without counts (the Counting
// store of Memory adds them from Counts).
func (m *memStore) size(ctx context.Context) (*Stats, error) {
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

// addCounts implements face.
func (m *memStore) addCounts(ctx context.Context, d Stats) error {
	m.stats.add(func(s *Stats) { addStats(s, &d) })
	return nil
}

// readCounts implements face.
func (m *memStore) readCounts(ctx context.Context) (Stats, error) { return m.stats.take(false), nil }

// Close implements Core. Closing twice is not an error.
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

// takeEvictions implements face.
func (m *memStore) takeEvictions() int64 { return m.evicted.Swap(0) }
