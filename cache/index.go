package cache

import (
	"bytes"
	"cmp"
	"slices"
	"sync"
	"time"
)

// index is the in-memory view of a store's entries and blobs that size
// accounting, reference counting and eviction need. It is not safe for
// concurrent use; its owner guards it.
type index struct {
	entries map[Key]*indexEntry
	blobs   map[Digest]*indexBlob
	bytes   int64 // sum of blobs' sizes
	// pins counts the in-flight Puts that are writing or have written a
	// blob whose entry is not yet stored: such a blob is not an orphan.
	pins map[Digest]int
	// strays are uploads whose chunks no chunk list names, with their
	// chunk counts (a Put that did not finish), found when the index was
	// loaded.
	strays map[uploadID]int
	// unnamed holds the blobs no entry names (refs <= 0), kept as refs
	// change, so that finding orphans does not scan every blob.
	unnamed map[Digest]struct{}
}

type indexEntry struct {
	lastUsed int64    // Unix nanoseconds
	digests  []Digest // distinct
}

type indexBlob struct {
	size int64
	refs int // entries naming the blob
	// chunks, for a chunked blob, names its chunks (nil: stored whole).
	chunks *chunkRef
}

// chunkRef names the chunks of a chunked blob: its upload and their count.
type chunkRef struct {
	upload uploadID
	n      int
}

func newIndex() *index {
	return &index{
		entries: make(map[Key]*indexEntry),
		blobs:   make(map[Digest]*indexBlob),
		pins:    make(map[Digest]int),
		strays:  make(map[uploadID]int),
		unnamed: make(map[Digest]struct{}),
	}
}

func distinctDigests(e *Entry) []Digest {
	ds := make([]Digest, 0, len(e.Outputs))
	for _, o := range e.Outputs {
		if !slices.Contains(ds, o.Digest) {
			ds = append(ds, o.Digest)
		}
	}
	return ds
}

// addBlob records a stored blob; it is a no-op for a known blob.
func (x *index) addBlob(d Digest, size int64) {
	if _, ok := x.blobs[d]; ok {
		return
	}
	x.blobs[d] = &indexBlob{size: size}
	x.bytes += size
	x.unnamed[d] = struct{}{}
}

// addChunked records a stored chunked blob; it is a no-op for a known
// blob.
func (x *index) addChunked(d Digest, size int64, l *chunkList) {
	if _, ok := x.blobs[d]; ok {
		return
	}
	x.addBlob(d, size)
	x.blobs[d].chunks = &chunkRef{upload: l.upload, n: len(l.sums)}
}

// chunksOf returns the chunks of the blobs ds that are chunked.
func (x *index) chunksOf(ds []Digest) []chunkRef {
	var cs []chunkRef
	for _, d := range ds {
		if b := x.blobs[d]; b != nil && b.chunks != nil {
			cs = append(cs, *b.chunks)
		}
	}
	return cs
}

// takeStrays returns the stray uploads and forgets them.
func (x *index) takeStrays() []chunkRef {
	var cs []chunkRef
	for up, n := range x.strays {
		cs = append(cs, chunkRef{upload: up, n: n})
	}
	clear(x.strays)
	return cs
}

// removeBlob forgets a blob, whatever its references.
func (x *index) removeBlob(d Digest) {
	if b, ok := x.blobs[d]; ok {
		x.bytes -= b.size
		delete(x.blobs, d)
		delete(x.unnamed, d)
	}
}

// addEntry records an entry whose blobs are recorded (a blob the index does
// not know is added with its output size) and returns the blobs that a
// replaced entry left unreferenced.
func (x *index) addEntry(e *Entry) []Digest {
	var orphans []Digest
	if _, ok := x.entries[e.Key]; ok {
		orphans = x.removeEntry(e.Key)
	}
	ds := distinctDigests(e)
	for _, o := range e.Outputs {
		x.addBlob(o.Digest, o.Size)
	}
	for _, d := range ds {
		x.blobs[d].refs++
		delete(x.unnamed, d)
	}
	x.entries[e.Key] = &indexEntry{lastUsed: e.LastUsed.UnixNano(), digests: ds}
	return slices.DeleteFunc(orphans, func(d Digest) bool { return x.blobs[d] != nil && x.blobs[d].refs > 0 })
}

// removeEntry forgets an entry and returns the blobs it left unreferenced
// and unpinned.
func (x *index) removeEntry(k Key) []Digest {
	ie, ok := x.entries[k]
	if !ok {
		return nil
	}
	delete(x.entries, k)
	var orphans []Digest
	for _, d := range ie.digests {
		if b := x.blobs[d]; b != nil {
			b.refs--
			if b.refs <= 0 {
				x.unnamed[d] = struct{}{}
				if x.pins[d] == 0 {
					orphans = append(orphans, d)
				}
			}
		}
	}
	return orphans
}

func (x *index) pin(ds []Digest) {
	for _, d := range ds {
		x.pins[d]++
	}
}

func (x *index) unpin(ds []Digest) {
	for _, d := range ds {
		if x.pins[d]--; x.pins[d] <= 0 {
			delete(x.pins, d)
		}
	}
}

// orphans returns the blobs no entry names and no Put has pinned, in
// digest order; its cost is in the blobs no entry names, not in all.
func (x *index) orphans() []Digest {
	var ds []Digest
	for d := range x.unnamed {
		if x.pins[d] == 0 {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(a, b Digest) int { return bytes.Compare(a[:], b[:]) })
	return ds
}

// touch sets an entry's last use if t is later.
func (x *index) touch(k Key, t time.Time) {
	if ie, ok := x.entries[k]; ok && t.UnixNano() > ie.lastUsed {
		ie.lastUsed = t.UnixNano()
	}
}

// recent returns up to limit entries (every entry when limit <= 0), most
// recently used first, ties broken by key. With a limit it keeps only the
// limit most recent as it goes: O(entries * log limit).
func (x *index) recent(limit int) []Key {
	newer := func(a, b Key) int {
		if c := cmp.Compare(x.entries[b].lastUsed, x.entries[a].lastUsed); c != 0 {
			return c
		}
		return bytes.Compare(a[:], b[:])
	}
	if limit <= 0 || limit >= len(x.entries) {
		keys := make([]Key, 0, len(x.entries))
		for k := range x.entries {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, newer)
		return keys
	}
	// keys is a sorted window of the limit most recent so far; oldest
	// is the last use of its last.
	keys := make([]Key, 0, limit+1)
	var oldest int64
	for k, ie := range x.entries {
		if len(keys) == limit && ie.lastUsed < oldest {
			continue
		}
		if len(keys) == limit && newer(k, keys[limit-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(keys, k, newer)
		keys = slices.Insert(keys, i, k)
		if len(keys) > limit {
			keys = keys[:limit]
		}
		oldest = x.entries[keys[len(keys)-1]].lastUsed
	}
	return keys
}

// lru returns the entries in least-recently-used order, ties broken by key.
func (x *index) lru() []Key {
	keys := make([]Key, 0, len(x.entries))
	for k := range x.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(x.entries[a].lastUsed, x.entries[b].lastUsed); c != 0 {
			return c
		}
		return bytes.Compare(a[:], b[:])
	})
	return keys
}

// counters are a store's event counts. They are safe for concurrent use.
type counters struct {
	mu sync.Mutex // guards the fields below
	c  Stats
	// dirty is set when c changed since the last flush (Badger).
	dirty bool
}

func (c *counters) add(f func(s *Stats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.c)
	c.dirty = true
}

// take returns the counts and, with reset, zeroes them (Badger flushes
// deltas).
func (c *counters) take(reset bool) Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.c
	s.UncachedReasons = make(map[string]int64, len(c.c.UncachedReasons))
	for k, v := range c.c.UncachedReasons {
		s.UncachedReasons[k] = v
	}
	if reset {
		c.c = Stats{}
		c.dirty = false
	}
	return s
}

// restore adds back deltas that could not be flushed.
func (c *counters) restore(s Stats) {
	c.add(func(t *Stats) { addStats(t, &s) })
}

func addStats(t, s *Stats) {
	t.Hits += s.Hits
	t.Misses += s.Misses
	t.Uncached += s.Uncached
	t.Errors += s.Errors
	t.Corrupt += s.Corrupt
	t.Damaged += s.Damaged
	t.Evictions += s.Evictions
	t.VerifyMismatch += s.VerifyMismatch
	t.RemoteHits += s.RemoteHits
	t.TimeSaved += s.TimeSaved
	t.BytesServed += s.BytesServed
	t.ZeroedAt += s.ZeroedAt
	t.UnitHits += s.UnitHits
	t.UnitMisses += s.UnitMisses
	for k, v := range s.UncachedReasons {
		if t.UncachedReasons == nil {
			t.UncachedReasons = make(map[string]int64)
		}
		t.UncachedReasons[k] += v
	}
}

// any reports whether s counts any event.
func (s *Stats) any() bool {
	return s.Hits|s.Misses|s.Uncached|s.Errors|s.Corrupt|s.Damaged|s.Evictions|s.VerifyMismatch|s.RemoteHits|s.TimeSaved|s.BytesServed|s.ZeroedAt|s.UnitHits|s.UnitMisses != 0 || len(s.UncachedReasons) > 0
}
