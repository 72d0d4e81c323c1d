package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
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
	data := make([][]byte, len(e.Outputs))
	for i, o := range e.Outputs {
		b, ok := m.blobs[o.Digest]
		reason := ""
		if !ok {
			reason = missingReason(o.Digest)
		} else {
			reason = checkBlob(o, b)
		}
		if reason != "" {
			if !m.opt.ReadOnly {
				if ok {
					m.removeBlobLocked(o.Digest)
				}
				m.deleteLocked(key)
			}
			return nil, &MissError{Key: key, Reason: ReasonDamaged + reason, Corrupt: true}
		}
		data[i] = bytes.Clone(b)
	}
	hit := &Hit{Entry: cloneEntry(e), Data: data}
	m.touchLocked(e)
	return hit, nil
}

// Put implements Store.
func (m *memStore) Put(ctx context.Context, e *Entry, data [][]byte) error {
	if m.opt.ReadOnly {
		return ErrReadOnly
	}
	c, blobs, err := prepare(e, data, m.opt.now())
	if err != nil {
		return err
	}
	if m.opt.MaxBytes > 0 && distinctSize(c) > m.opt.MaxBytes {
		return &DataError{Key: e.Key, Reason: fmt.Sprintf("%d bytes exceed the limit of %d", distinctSize(c), m.opt.MaxBytes), Err: ErrTooLarge}
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for d, b := range blobs {
		if _, ok := m.blobs[d]; !ok {
			m.blobs[d] = bytes.Clone(b)
			m.idx.addBlob(d, int64(len(b)))
		}
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
}

// trimLocked deletes orphans, then evicts until the size fits.
func (m *memStore) trimLocked(maxBytes int64, r *TrimReport) {
	for _, d := range m.idx.orphans() {
		m.removeBlobLocked(d)
		if r != nil {
			r.Orphans++
		}
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
	for d, b := range m.blobs {
		r.Blobs++
		r.Bytes += int64(len(b))
		if sha256.Sum256(b) != d {
			bad[d] = fmt.Sprintf("blob %s corrupt: sha256 mismatch", shortHex(d[:]))
		}
	}
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
			if b, ok := m.blobs[o.Digest]; !ok {
				reason, isBad = missingReason(o.Digest), true
			} else if !isBad && int64(len(b)) != o.Size {
				reason, isBad = checkBlob(o, b), true
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
func (m *Memory) Put(ctx context.Context, e *Entry, data [][]byte) error {
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
