// Package storetest is the conformance suite of the stores of package
// cache (their core face, capabilities and maintenance functions): every
// implementation runs RunStoreTests, as restic's backends run
// internal/backend/test.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
)

// Tested is a store the suite runs on: the core face with the capabilities
// the stores of package cache have, which the maintenance functions
// (cache.Verify, cache.Trim, ...) reach, and the counts when it is also a
// cache.EventCounter (a Counting store). The suite checks the counters
// only of a store that counts.
type Tested interface {
	cache.Core
	cache.EntryReader
	cache.Deleter
}

// NewStore returns an empty store with the given options. The suite closes
// it.
type NewStore func(t *testing.T, opt cache.Options) Tested

// Clock is a manual clock for Options.Now. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// K returns a key derived from a name.
func K(name string) cache.Key { return sha256.Sum256([]byte("key:" + name)) }

// Blob returns n deterministic bytes derived from a seed.
func Blob(seed string, n int) []byte {
	b := make([]byte, 0, n+32)
	h := sha256.Sum256([]byte(seed))
	for len(b) < n {
		b = append(b, h[:]...)
		h = sha256.Sum256(h[:])
	}
	return b[:n]
}

// NewEntry returns an entry with one output per data slice, named out0,
// out1, ..., with Size and Digest left for Put to fill.
func NewEntry(key cache.Key, data ...[]byte) *cache.Entry {
	e := &cache.Entry{
		Key:         key,
		Record:      []byte(`["pypto.identity",1,["str","6b6579"]]`),
		Meta:        map[string]string{"hashid": "h-" + key.String()[:8], "platform": "a2a3sim"},
		CompileTime: 1500 * time.Millisecond,
	}
	for i := range data {
		e.Outputs = append(e.Outputs, cache.Output{Name: fmt.Sprintf("out%d", i), Mode: 0o644})
	}
	return e
}

type harness struct {
	t     *testing.T
	ctx   context.Context
	s     Tested
	clock *Clock
	// counter is s as an event counter, nil when s counts nothing.
	counter cache.EventCounter
}

func (h *harness) put(e *cache.Entry, data ...[]byte) {
	h.t.Helper()
	if err := h.s.Put(h.ctx, e, cache.Readers(data...)); err != nil {
		h.t.Fatalf("Put %s: %v", e.Key.String()[:8], err)
	}
}

// Read reads output i of hit through its reader, in reads of odd sizes.
func Read(hit *cache.Hit, i int) ([]byte, error) {
	r := hit.Open(i)
	defer r.Close()
	var out []byte
	buf := make([]byte, 1021)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func (h *harness) hit(k cache.Key, want ...[]byte) *cache.Hit {
	h.t.Helper()
	hit, err := h.s.Get(h.ctx, k)
	if err != nil {
		h.t.Fatalf("Get %s: %v", k.String()[:8], err)
	}
	if len(hit.Entry.Outputs) != len(want) {
		h.t.Fatalf("Get %s: %d outputs, want %d", k.String()[:8], len(hit.Entry.Outputs), len(want))
	}
	for i := range want {
		got, err := Read(hit, i)
		if err != nil {
			h.t.Fatalf("Get %s: read output %d: %v", k.String()[:8], i, err)
		}
		if !bytes.Equal(got, want[i]) {
			h.t.Fatalf("Get %s: output %d differs", k.String()[:8], i)
		}
	}
	return hit
}

func (h *harness) miss(k cache.Key, reason string) *cache.MissError {
	h.t.Helper()
	hit, err := h.s.Get(h.ctx, k)
	if err == nil {
		h.t.Fatalf("Get %s: hit %+v, want a miss", k.String()[:8], hit.Entry)
	}
	var me *cache.MissError
	if !errors.As(err, &me) || !errors.Is(err, cache.ErrMiss) {
		h.t.Fatalf("Get %s: %v (%T), want a *MissError matching ErrMiss", k.String()[:8], err, err)
	}
	if !strings.Contains(me.Reason, reason) {
		h.t.Fatalf("Get %s: reason %q, want it to contain %q", k.String()[:8], me.Reason, reason)
	}
	return me
}

// damaged gets k and reads every output: it returns the damage Get or a
// reader found, which must be a *MissError matching ErrDamaged.
func (h *harness) damaged(k cache.Key, reason string) *cache.MissError {
	h.t.Helper()
	hit, err := h.s.Get(h.ctx, k)
	if err == nil {
		_, err = hit.ReadAll()
	}
	var me *cache.MissError
	if !errors.As(err, &me) || !errors.Is(err, cache.ErrDamaged) {
		h.t.Fatalf("Get and read %s: %v (%T), want a *MissError matching ErrDamaged", k.String()[:8], err, err)
	}
	if !strings.Contains(me.Reason, reason) {
		h.t.Fatalf("Get and read %s: reason %q, want it to contain %q", k.String()[:8], me.Reason, reason)
	}
	return me
}

func (h *harness) stats() *cache.Stats {
	h.t.Helper()
	s, err := cache.ReadStats(h.ctx, h.s)
	if err != nil {
		h.t.Fatalf("Stats: %v", err)
	}
	return s
}

// counts reports whether the store counts events, so that its counters
// are checked.
func (h *harness) counts() bool { return h.counter != nil }

func (h *harness) absent(k cache.Key) {
	h.t.Helper()
	if e, err := h.s.Entry(h.ctx, k); !errors.Is(err, cache.ErrMiss) {
		h.t.Fatalf("Entry %s: %v, %v; want a miss", k.String()[:8], e, err)
	}
}

// RunStoreTests runs the conformance suite against stores made by
// newStore: one subtest per property (see properties), each on a new store.
func RunStoreTests(t *testing.T, newStore NewStore) {
	for _, p := range properties {
		t.Run(p.name, func(t *testing.T) {
			clock := NewClock()
			opt := p.options
			if opt.Now == nil {
				opt.Now = clock.Now
			}
			s := newStore(t, opt)
			t.Cleanup(func() { s.Close() })
			counter, _ := s.(cache.EventCounter)
			p.test(&harness{t: t, ctx: context.Background(), s: s, clock: clock, counter: counter})
		})
	}
}

// property is one property of the suite: its name (the subtest's), the
// options of the store it runs on, and its test.
type property struct {
	name    string
	options cache.Options
	test    func(h *harness)
}

// properties lists the suite's properties, one short test each.
var properties = []property{
	{"PutGet", cache.Options{}, testPutGet},
	{"Miss", cache.Options{}, testMiss},
	{"PutRejectsBadData", cache.Options{}, testPutRejectsBadData},
	{"PutIdempotentAndReplace", cache.Options{}, testPutIdempotentAndReplace},
	{"NoAliasing", cache.Options{}, testNoAliasing},
	{"SharedBlobs", cache.Options{}, testSharedBlobs},
	{"CorruptBlobIsMissAndRemoved", cache.Options{}, testCorruptBlobIsMissAndRemoved},
	{"MissingBlob", cache.Options{}, testMissingBlob},
	{"Verify", cache.Options{}, testVerify},
	{"TrimLRU", cache.Options{}, testTrimLRU},
	{"MaxBytes", cache.Options{MaxBytes: 250}, testMaxBytes},
	{"Count", cache.Options{}, testCount},
	{"List", cache.Options{}, testList},
	{"Clear", cache.Options{}, testClear},
	{"ReadOnly", cache.Options{ReadOnly: true}, testReadOnly},
	{"Closed", cache.Options{}, testClosed},
	{"Concurrent", cache.Options{}, testConcurrent},
	{"ListRecent", cache.Options{}, testListRecent},
	{"ChunkedPutGet", cache.Options{ChunkBytes: cache.MinChunkBytes}, testChunkedPutGet},
	{"ChunkedRejectsBadData", cache.Options{ChunkBytes: cache.MinChunkBytes}, testChunkedRejectsBadData},
	{"DamagedChunkIsMissAndRemoved", cache.Options{ChunkBytes: cache.MinChunkBytes}, testDamagedChunk},
	{"MissingChunkedBlob", cache.Options{ChunkBytes: cache.MinChunkBytes}, testMissingChunkedBlob},
	{"ChunkedVerifyAndTrim", cache.Options{ChunkBytes: cache.MinChunkBytes}, testChunkedVerifyAndTrim},
	{"ChunkedMaxBytes", cache.Options{ChunkBytes: cache.MinChunkBytes, MaxBytes: 5000}, testChunkedMaxBytes},
}

func testPutGet(h *harness) {
	a, b, empty := Blob("a", 5000), Blob("b", 70000), []byte{}
	e := NewEntry(K("x"), a, b, a, empty)
	e.Outputs[1].Mode = 0o755
	h.put(e, a, b, a, empty)
	if e.Outputs[0].Size != 0 || e.Outputs[0].Digest != ([32]byte{}) {
		h.t.Fatalf("Put modified its argument: %+v", e.Outputs[0])
	}
	hit := h.hit(K("x"), a, b, a, empty)
	g := hit.Entry
	if g.Key != K("x") || string(g.Record) != string(e.Record) || g.CompileTime != e.CompileTime ||
		g.Meta["hashid"] != e.Meta["hashid"] || len(g.Meta) != 2 {
		h.t.Fatalf("entry = %+v, want fields of %+v", g, e)
	}
	if !g.Created.Equal(h.clock.Now()) {
		h.t.Fatalf("Created = %v, want %v", g.Created, h.clock.Now())
	}
	for i, d := range [][]byte{a, b, a, empty} {
		o := g.Outputs[i]
		if o.Name != e.Outputs[i].Name || o.Size != int64(len(d)) || o.Digest != sha256.Sum256(d) || o.Mode != e.Outputs[i].Mode {
			h.t.Fatalf("output %d = %+v", i, o)
		}
	}
	s := h.stats()
	if s.Entries != 1 || s.Bytes != int64(len(a)+len(b)) || h.counts() && (s.Hits != 1 || s.Misses != 0) {
		h.t.Fatalf("stats = %+v, want 1 hit, 1 entry, %d bytes (distinct blobs)", s, len(a)+len(b))
	}
}

func testMiss(h *harness) {
	me := h.miss(K("nothing"), cache.ReasonNoEntry)
	if me.Key != K("nothing") || me.Corrupt {
		h.t.Fatalf("miss = %+v", me)
	}
	if s := h.stats(); h.counts() && (s.Misses != 1 || s.Hits != 0 || s.Corrupt != 0) {
		h.t.Fatalf("stats = %+v, want 1 miss", s)
	}
	h.absent(K("nothing"))
	if s := h.stats(); h.counts() && s.Misses != 1 {
		h.t.Fatalf("Entry counted: stats = %+v", s)
	}
}

func testPutRejectsBadData(h *harness) {
	a := Blob("a", 100)
	cases := map[string]func() (*cache.Entry, [][]byte){
		"count": func() (*cache.Entry, [][]byte) { return NewEntry(K("x"), a, a), [][]byte{a} },
		"size": func() (*cache.Entry, [][]byte) {
			e := NewEntry(K("x"), a)
			e.Outputs[0].Size = 99
			return e, [][]byte{a}
		},
		"digest": func() (*cache.Entry, [][]byte) {
			e := NewEntry(K("x"), a)
			e.Outputs[0].Digest = sha256.Sum256([]byte("other"))
			return e, [][]byte{a}
		},
		"dup name": func() (*cache.Entry, [][]byte) {
			e := NewEntry(K("x"), a, a)
			e.Outputs[1].Name = e.Outputs[0].Name
			return e, [][]byte{a, a}
		},
		"empty name": func() (*cache.Entry, [][]byte) {
			e := NewEntry(K("x"), a)
			e.Outputs[0].Name = ""
			return e, [][]byte{a}
		},
		"record": func() (*cache.Entry, [][]byte) {
			e := NewEntry(K("x"), a)
			e.Record = make([]byte, cache.MaxRecordBytes+1)
			return e, [][]byte{a}
		},
		"compile time": func() (*cache.Entry, [][]byte) {
			e := NewEntry(K("x"), a)
			e.CompileTime = -1
			return e, [][]byte{a}
		},
	}
	for name, c := range cases {
		e, data := c()
		var de *cache.DataError
		if err := h.s.Put(h.ctx, e, cache.Readers(data...)); !errors.As(err, &de) {
			h.t.Errorf("%s: Put = %v, want a *DataError", name, err)
		}
	}
	if s := h.stats(); s.Entries != 0 || s.Bytes != 0 {
		h.t.Fatalf("rejected Puts stored something: %+v", s)
	}
	// Correct Size and Digest given by the caller are accepted.
	e := NewEntry(K("x"), a)
	e.Outputs[0].Size, e.Outputs[0].Digest = int64(len(a)), sha256.Sum256(a)
	h.put(e, a)
	h.hit(K("x"), a)
}

func testPutIdempotentAndReplace(h *harness) {
	a, b := Blob("a", 3000), Blob("b", 9000)
	h.put(NewEntry(K("x"), a), a)
	h.put(NewEntry(K("x"), a), a)
	if s := h.stats(); s.Entries != 1 || s.Bytes != int64(len(a)) {
		h.t.Fatalf("after two equal Puts: %+v", s)
	}
	h.put(NewEntry(K("x"), b), b)
	h.hit(K("x"), b)
	if s := h.stats(); s.Entries != 1 || s.Bytes != int64(len(b)) {
		h.t.Fatalf("after replacing: %+v, want the old blob gone", s)
	}
}

func testNoAliasing(h *harness) {
	a := Blob("a", 1000)
	in := bytes.Clone(a)
	e := NewEntry(K("x"), in)
	h.put(e, in)
	in[0] ^= 0xff
	e.Meta["hashid"] = "changed"
	hit := h.hit(K("x"), a)
	if data, err := hit.ReadAll(); err != nil {
		h.t.Fatal(err)
	} else {
		data[0][1] ^= 0xff
	}
	hit.Entry.Outputs[0].Name = "changed"
	hit = h.hit(K("x"), a)
	if hit.Entry.Outputs[0].Name != "out0" || hit.Entry.Meta["hashid"] == "changed" {
		h.t.Fatalf("store shares memory with its callers: %+v", hit.Entry)
	}
}

func testSharedBlobs(h *harness) {
	a, b := Blob("a", 4000), Blob("b", 4000)
	h.put(NewEntry(K("x"), a, b), a, b)
	h.put(NewEntry(K("y"), a), a)
	if s := h.stats(); s.Bytes != 8000 || s.Entries != 2 {
		h.t.Fatalf("stats = %+v, want 8000 bytes", s)
	}
	if err := h.s.Delete(h.ctx, K("x")); err != nil {
		h.t.Fatal(err)
	}
	h.absent(K("x"))
	h.hit(K("y"), a)
	if s := h.stats(); s.Bytes != 4000 || s.Entries != 1 {
		h.t.Fatalf("after Delete: %+v, want the unshared blob gone", s)
	}
	if err := h.s.Delete(h.ctx, K("x")); err != nil {
		h.t.Fatalf("deleting a missing key: %v", err)
	}
}

func testCorruptBlobIsMissAndRemoved(h *harness) {
	fi, ok := h.s.(cache.FaultInjector)
	if !ok {
		h.t.Skip("store is not a FaultInjector")
	}
	a, b := Blob("a", 6000), Blob("b", 6000)
	h.put(NewEntry(K("x"), a, b), a, b)
	h.put(NewEntry(K("y"), b), b)
	if err := fi.CorruptBlob(h.ctx, sha256.Sum256(b)); err != nil {
		h.t.Fatal(err)
	}
	// Get reads no blob; the reader of the corrupt one finds it.
	me := h.damaged(K("x"), "corrupt: sha256 mismatch")
	if !me.Corrupt || !strings.HasPrefix(me.Reason, cache.ReasonDamaged) || !strings.Contains(me.Reason, fmt.Sprintf("%x", sha256.Sum256(b))[:12]) {
		h.t.Fatalf("miss = %+v, want corrupt naming the blob", me)
	}
	h.absent(K("x"))
	// The corrupt blob is gone, so the other entry naming it misses
	// as missing, never as a hit.
	h.miss(K("y"), "missing")
	h.absent(K("y"))
	h.miss(K("x"), cache.ReasonNoEntry)
	s := h.stats()
	if s.Entries != 0 || h.counts() && (s.Corrupt != 2 || s.Damaged != 2 || s.Misses != 1 || s.Hits != 0) {
		h.t.Fatalf("stats = %+v, want 2 damaged lookups and 1 miss", s)
	}
	// A new Put repairs.
	h.put(NewEntry(K("x"), a, b), a, b)
	h.hit(K("x"), a, b)
}

func testMissingBlob(h *harness) {
	fi, ok := h.s.(cache.FaultInjector)
	if !ok {
		h.t.Skip("store is not a FaultInjector")
	}
	a := Blob("a", 100)
	h.put(NewEntry(K("x"), a), a)
	if err := fi.RemoveBlob(h.ctx, sha256.Sum256(a)); err != nil {
		h.t.Fatal(err)
	}
	h.miss(K("x"), "missing")
	h.absent(K("x"))
	if s := h.stats(); h.counts() && s.Corrupt != 1 {
		h.t.Fatalf("stats = %+v, want 1 corrupt", s)
	}
}

func testVerify(h *harness) {
	fi, ok := h.s.(cache.FaultInjector)
	if !ok {
		h.t.Skip("store is not a FaultInjector")
	}
	a, b, c := Blob("a", 5000), Blob("b", 5000), Blob("c", 50)
	h.put(NewEntry(K("x"), a), a)
	h.put(NewEntry(K("y"), b, c), b, c)
	h.put(NewEntry(K("z"), c), c)
	r, err := cache.Verify(h.ctx, h.s, false)
	if err != nil || !r.OK() || r.Entries != 3 || r.Blobs != 3 || r.Bytes != 10050 || len(r.Removed) != 0 {
		h.t.Fatalf("Verify of an intact store = %+v, %v", r, err)
	}
	if err := fi.CorruptBlob(h.ctx, sha256.Sum256(b)); err != nil {
		h.t.Fatal(err)
	}
	{
		r, err := cache.Verify(h.ctx, h.s, true)
		if err != nil || r.OK() || len(r.Corrupt) != 1 || len(r.Removed) != 0 {
			h.t.Fatalf("Check = %+v, %v; want the damage reported, nothing removed", r, err)
		}
		if _, err := h.s.Entry(h.ctx, K("y")); err != nil {
			h.t.Fatalf("Check removed an entry: %v", err)
		}
	}
	r, err = cache.Verify(h.ctx, h.s, false)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.OK() || len(r.Corrupt) != 1 || r.Corrupt[0].Digest != sha256.Sum256(b) ||
		!strings.Contains(r.Corrupt[0].Reason, "sha256 mismatch") ||
		len(r.Corrupt[0].Entries) != 1 || r.Corrupt[0].Entries[0] != K("y") ||
		len(r.Removed) != 1 || r.Removed[0] != K("y") {
		h.t.Fatalf("Verify = %+v, want blob b corrupt and entry y removed", r)
	}
	h.absent(K("y"))
	h.hit(K("x"), a)
	h.hit(K("z"), c)
	if s := h.stats(); s.Entries != 2 || s.Bytes != 5050 || h.counts() && s.Corrupt != 1 {
		h.t.Fatalf("stats = %+v", s)
	}
	r, err = cache.Verify(h.ctx, h.s, false)
	if err != nil || !r.OK() {
		h.t.Fatalf("second Verify = %+v, %v", r, err)
	}
}

func testTrimLRU(h *harness) {
	for _, n := range []string{"a", "b", "c"} {
		h.clock.Advance(time.Minute)
		d := Blob(n, 100)
		h.put(NewEntry(K(n), d), d)
	}
	h.clock.Advance(time.Minute)
	hit := h.hit(K("a"), Blob("a", 100)) // a is now the most recently used
	used := h.clock.Now()
	if !hit.Entry.LastUsed.Equal(used) {
		h.t.Fatalf("Get(a): Entry.LastUsed = %v, want this use at %v", hit.Entry.LastUsed, used)
	}
	if e, err := h.s.Entry(h.ctx, K("a")); err != nil || !e.LastUsed.Equal(used) {
		h.t.Fatalf("Entry(a).LastUsed = %v, %v; want %v", e, err, used)
	}
	r, err := cache.Trim(h.ctx, h.s, 250)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(r.Evicted) != 1 || r.Evicted[0] != K("b") || r.BytesBefore != 300 || r.BytesAfter != 200 {
		h.t.Fatalf("Trim(250) = %+v, want b evicted", r)
	}
	// A metadata lookup is a use too: c becomes more recent than a.
	h.clock.Advance(time.Minute)
	if _, err := h.s.Entry(h.ctx, K("c")); err != nil {
		h.t.Fatal(err)
	}
	if r, err = cache.Trim(h.ctx, h.s, 150); err != nil || len(r.Evicted) != 1 || r.Evicted[0] != K("a") {
		h.t.Fatalf("Trim(150) = %+v, %v; want a evicted", r, err)
	}
	h.hit(K("c"), Blob("c", 100))
	h.absent(K("b"))
	h.absent(K("a"))
	if s := h.stats(); s.Bytes != 100 || h.counts() && s.Evictions != 2 {
		h.t.Fatalf("stats = %+v", s)
	}
	r, err = cache.Trim(h.ctx, h.s, 0)
	if err != nil || len(r.Evicted) != 1 || r.BytesAfter != 0 {
		h.t.Fatalf("Trim(0) = %+v, %v", r, err)
	}
}

func testMaxBytes(h *harness) {
	for _, n := range []string{"a", "b", "c"} {
		h.clock.Advance(time.Minute)
		d := Blob(n, 100)
		h.put(NewEntry(K(n), d), d)
	}
	h.absent(K("a"))
	h.hit(K("b"), Blob("b", 100))
	h.hit(K("c"), Blob("c", 100))
	s := h.stats()
	if s.Bytes != 200 || s.MaxBytes != 250 || h.counts() && s.Evictions != 1 {
		h.t.Fatalf("stats = %+v", s)
	}
	big := Blob("big", 251)
	err := h.s.Put(h.ctx, NewEntry(K("big"), big), cache.Readers(big))
	if !errors.Is(err, cache.ErrTooLarge) {
		h.t.Fatalf("Put of 251 bytes under a 250-byte limit = %v, want ErrTooLarge", err)
	}
	if s := h.stats(); s.Entries != 2 {
		h.t.Fatalf("a rejected Put evicted: %+v", s)
	}
}

func testCount(h *harness) {
	if !h.counts() {
		h.t.Skip("the store counts nothing")
	}
	for _, r := range []string{"ptoas: not found", "ptoas: not found", "cann: unreadable"} {
		if err := h.counter.Count(h.ctx, cache.EventUncached, r); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.counter.Count(h.ctx, cache.EventError, "cc exited 1"); err != nil {
		h.t.Fatal(err)
	}
	for _, c := range [][2]string{{"uncached", ""}, {"bogus", "x"}} {
		var ce *cache.CountError
		if err := h.counter.Count(h.ctx, c[0], c[1]); !errors.As(err, &ce) {
			h.t.Errorf("Count(%q, %q) = %v, want a *CountError", c[0], c[1], err)
		}
	}
	s := h.stats()
	if s.Uncached != 3 || s.Errors != 1 || len(s.UncachedReasons) != 2 ||
		s.UncachedReasons["ptoas: not found"] != 2 || s.UncachedReasons["cann: unreadable"] != 1 {
		h.t.Fatalf("stats = %+v", s)
	}
}

func testList(h *harness) {
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		d := Blob(n, 10)
		h.put(NewEntry(K(n), d), d)
	}
	var got []cache.Key
	if err := cache.List(h.ctx, h.s, func(e *cache.Entry) error {
		got = append(got, e.Key)
		if len(e.Outputs) != 1 || e.Outputs[0].Size != 10 {
			return fmt.Errorf("entry %s: outputs %+v", e.Key, e.Outputs)
		}
		return nil
	}); err != nil {
		h.t.Fatal(err)
	}
	if len(got) != len(names) {
		h.t.Fatalf("List gave %d entries, want %d", len(got), len(names))
	}
	for i := 1; i < len(got); i++ {
		if bytes.Compare(got[i-1][:], got[i][:]) >= 0 {
			h.t.Fatalf("List not in key order: %v", got)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := cache.List(h.ctx, h.s, func(*cache.Entry) error { n++; return stop }); err != stop || n != 1 {
		h.t.Fatalf("List did not stop at fn's error: %v after %d calls", err, n)
	}
}

func testClear(h *harness) {
	a := Blob("a", 10)
	h.put(NewEntry(K("a"), a), a)
	h.hit(K("a"), a)
	if err := cache.Clear(h.ctx, h.s); err != nil {
		h.t.Fatal(err)
	}
	h.absent(K("a"))
	if s := h.stats(); s.Entries != 0 || s.Bytes != 0 || h.counts() && s.Hits != 1 {
		h.t.Fatalf("after Clear: %+v, want empty with counters kept", s)
	}
	h.put(NewEntry(K("a"), a), a)
	h.hit(K("a"), a)
}

func testReadOnly(h *harness) {
	a := Blob("a", 10)
	if err := h.s.Put(h.ctx, NewEntry(K("a"), a), cache.Readers(a)); !errors.Is(err, cache.ErrReadOnly) {
		h.t.Fatalf("Put = %v, want ErrReadOnly", err)
	}
	if err := h.s.Delete(h.ctx, K("a")); !errors.Is(err, cache.ErrReadOnly) {
		h.t.Fatalf("Delete = %v, want ErrReadOnly", err)
	}
	if _, err := cache.Trim(h.ctx, h.s, 0); !errors.Is(err, cache.ErrReadOnly) {
		h.t.Fatalf("Trim = %v, want ErrReadOnly", err)
	}
	if err := cache.Clear(h.ctx, h.s); !errors.Is(err, cache.ErrReadOnly) {
		h.t.Fatalf("Clear = %v, want ErrReadOnly", err)
	}
	h.miss(K("a"), cache.ReasonNoEntry)
	if h.counts() {
		if err := h.counter.Count(h.ctx, cache.EventUncached, "r"); err != nil {
			h.t.Fatal(err)
		}
		if s := h.stats(); s.Misses != 1 || s.Uncached != 1 {
			h.t.Fatalf("read-only counters = %+v", s)
		}
	}
	if r, err := cache.Verify(h.ctx, h.s, false); err != nil || !r.OK() {
		h.t.Fatalf("Verify = %+v, %v", r, err)
	}
}

func testClosed(h *harness) {
	if err := h.s.Close(); err != nil {
		h.t.Fatal(err)
	}
	if err := h.s.Close(); err != nil {
		h.t.Fatalf("second Close: %v", err)
	}
	a := Blob("a", 10)
	if _, err := h.s.Get(h.ctx, K("a")); !errors.Is(err, cache.ErrClosed) {
		h.t.Fatalf("Get after Close = %v", err)
	}
	if err := h.s.Put(h.ctx, NewEntry(K("a"), a), cache.Readers(a)); !errors.Is(err, cache.ErrClosed) {
		h.t.Fatalf("Put after Close = %v", err)
	}
}

func testConcurrent(h *harness) {
	// Writers, readers and deleters share keys and blobs. Every Get
	// is a hit with the right data or a miss, never an error or
	// wrong data.
	const workers, rounds, keys = 8, 40, 6
	blob := func(i int) []byte { return Blob(fmt.Sprint("shared", i%3), 3000+i%3) }
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				i := (w + r) % keys
				k := K(fmt.Sprint(i))
				switch (w + r) % 4 {
				case 0, 1:
					d0, d1 := blob(i), blob(i+1)
					if err := h.s.Put(h.ctx, NewEntry(k, d0, d1), cache.Readers(d0, d1)); err != nil {
						errs <- err
					}
				case 2:
					hit, err := h.s.Get(h.ctx, k)
					var data [][]byte
					if err == nil {
						data, err = hit.ReadAll()
					}
					if err == nil && (!bytes.Equal(data[0], blob(i)) || !bytes.Equal(data[1], blob(i+1))) {
						errs <- fmt.Errorf("key %d: wrong data", i)
					} else if err != nil && !errors.Is(err, cache.ErrMiss) {
						errs <- err
					} else if me := (*cache.MissError)(nil); errors.As(err, &me) && me.Corrupt {
						errs <- fmt.Errorf("key %d: a whole entry was damaged: %v", i, err)
					}
				case 3:
					if err := h.s.Delete(h.ctx, k); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Error(err)
	}
	// Every remaining entry is whole.
	var ks []cache.Key
	cache.List(h.ctx, h.s, func(e *cache.Entry) error { ks = append(ks, e.Key); return nil })
	for _, k := range ks {
		if _, err := h.s.Get(h.ctx, k); err != nil {
			h.t.Errorf("after the storm: %v", err)
		}
	}
	r, err := cache.Verify(h.ctx, h.s, false)
	if err != nil || !r.OK() || len(r.Removed) != 0 {
		h.t.Fatalf("Verify after the storm = %+v, %v", r, err)
	}
}

// chunk is the chunk size of the chunked properties.
const chunk = cache.MinChunkBytes

func testChunkedPutGet(h *harness) {
	one, two, odd, plus := Blob("one", chunk), Blob("two", 2*chunk), Blob("odd", 3*chunk+7), Blob("plus", chunk+1)
	h.put(NewEntry(K("x"), one, two, odd, plus, odd), one, two, odd, plus, odd)
	h.put(NewEntry(K("y"), odd), odd)
	h.hit(K("x"), one, two, odd, plus, odd)
	h.hit(K("y"), odd)
	want := int64(len(one) + len(two) + len(odd) + len(plus))
	if s := h.stats(); s.Entries != 2 || s.Bytes != want || h.counts() && s.Hits != 2 {
		h.t.Fatalf("stats = %+v, want 2 entries of %d distinct bytes, 2 hits", s, want)
	}
	// A chunked blob given with its size and digest is checked as it
	// streams and accepted.
	e := NewEntry(K("z"), odd)
	e.Outputs[0].Size, e.Outputs[0].Digest = int64(len(odd)), sha256.Sum256(odd)
	h.put(e, odd)
	h.hit(K("z"), odd)
	for _, k := range []string{"x", "z"} {
		if err := h.s.Delete(h.ctx, K(k)); err != nil {
			h.t.Fatal(err)
		}
	}
	h.hit(K("y"), odd) // still named by y
	if s := h.stats(); s.Bytes != int64(len(odd)) {
		h.t.Fatalf("after deleting x and z: %+v, want only the shared blob", s)
	}
	if r, err := cache.Verify(h.ctx, h.s, false); err != nil || !r.OK() || r.Orphans != 0 || r.Bytes != int64(len(odd)) {
		h.t.Fatalf("Verify = %+v, %v; want the shared blob re-hashed and nothing else", r, err)
	}
}

func testChunkedRejectsBadData(h *harness) {
	big := Blob("big", 4*chunk+3)
	for name, set := range map[string]func(o *cache.Output){
		"size short": func(o *cache.Output) { o.Size = int64(len(big)) - 1 },
		"size long":  func(o *cache.Output) { o.Size = int64(len(big)) + 1 },
		"digest":     func(o *cache.Output) { o.Digest = sha256.Sum256([]byte("other")) },
	} {
		e := NewEntry(K("x"), big)
		set(&e.Outputs[0])
		var de *cache.DataError
		if err := h.s.Put(h.ctx, e, cache.Readers(big)); !errors.As(err, &de) {
			h.t.Errorf("%s: Put = %v, want a *DataError", name, err)
		}
	}
	if s := h.stats(); s.Entries != 0 || s.Bytes != 0 {
		h.t.Fatalf("rejected Puts stored something: %+v", s)
	}
	if r, err := cache.Verify(h.ctx, h.s, false); err != nil || r.Blobs != 0 || r.Orphans != 0 {
		h.t.Fatalf("Verify after rejected Puts = %+v, %v; want no blob left", r, err)
	}
}

func testDamagedChunk(h *harness) {
	fi, ok := h.s.(cache.FaultInjector)
	if !ok {
		h.t.Skip("store is not a FaultInjector")
	}
	big, small := Blob("big", 5*chunk+1), Blob("small", 10)
	h.put(NewEntry(K("x"), small, big), small, big)
	if err := fi.CorruptBlob(h.ctx, sha256.Sum256(big)); err != nil {
		h.t.Fatal(err)
	}
	hit, err := h.s.Get(h.ctx, K("x"))
	if err != nil {
		h.t.Fatalf("Get = %v, want a hit whose reader finds the damage", err)
	}
	got, err := Read(hit, 1)
	var me *cache.MissError
	if !errors.As(err, &me) || !me.Corrupt || !errors.Is(err, cache.ErrDamaged) || !strings.Contains(me.Reason, "chunk 3 corrupt") {
		h.t.Fatalf("read of a damaged chunk = %v, want a damaged miss naming chunk 3", err)
	}
	if len(got) > 3*chunk {
		h.t.Fatalf("reader yielded %d bytes, beyond the damaged chunk", len(got))
	}
	if _, err := hit.ReadAll(); !errors.Is(err, cache.ErrDamaged) {
		h.t.Fatalf("ReadAll of the damaged hit = %v, want ErrDamaged", err)
	}
	h.absent(K("x"))
	if s := h.stats(); s.Entries != 0 || h.counts() && (s.Damaged != 1 || s.Corrupt != 1 || s.Hits != 0) {
		h.t.Fatalf("stats = %+v, want one damaged lookup, no hit", s)
	}
	h.put(NewEntry(K("x"), small, big), small, big)
	h.hit(K("x"), small, big)
}

func testMissingChunkedBlob(h *harness) {
	fi, ok := h.s.(cache.FaultInjector)
	if !ok {
		h.t.Skip("store is not a FaultInjector")
	}
	big := Blob("big", 3*chunk)
	h.put(NewEntry(K("x"), big), big)
	if err := fi.RemoveBlob(h.ctx, sha256.Sum256(big)); err != nil {
		h.t.Fatal(err)
	}
	h.miss(K("x"), "missing")
	h.absent(K("x"))
}

func testChunkedVerifyAndTrim(h *harness) {
	fi, ok := h.s.(cache.FaultInjector)
	if !ok {
		h.t.Skip("store is not a FaultInjector")
	}
	a, b := Blob("a", 3*chunk+1), Blob("b", 2*chunk+5)
	h.put(NewEntry(K("a"), a), a)
	h.clock.Advance(time.Minute)
	h.put(NewEntry(K("b"), b), b)
	if err := fi.CorruptBlob(h.ctx, sha256.Sum256(a)); err != nil {
		h.t.Fatal(err)
	}
	r, err := cache.Verify(h.ctx, h.s, false)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(r.Corrupt) != 1 || r.Corrupt[0].Digest != sha256.Sum256(a) || !strings.Contains(r.Corrupt[0].Reason, "chunk") ||
		len(r.Removed) != 1 || r.Removed[0] != K("a") || r.Bytes < int64(len(b)) {
		h.t.Fatalf("Verify = %+v, want the damaged chunk of a found and a removed", r)
	}
	h.absent(K("a"))
	h.hit(K("b"), b)
	tr, err := cache.Trim(h.ctx, h.s, 0)
	if err != nil || len(tr.Evicted) != 1 || tr.BytesAfter != 0 {
		h.t.Fatalf("Trim(0) = %+v, %v; want b evicted", tr, err)
	}
	if r, err := cache.Verify(h.ctx, h.s, false); err != nil || r.Blobs != 0 || !r.OK() {
		h.t.Fatalf("Verify after Trim = %+v, %v; want an empty store", r, err)
	}
}

func testChunkedMaxBytes(h *harness) {
	big := Blob("big", 6000)
	err := h.s.Put(h.ctx, NewEntry(K("big"), big), []io.Reader{bytes.NewReader(big)})
	if !errors.Is(err, cache.ErrTooLarge) {
		h.t.Fatalf("Put of 6000 streamed bytes under a 5000-byte limit = %v, want ErrTooLarge", err)
	}
	if s := h.stats(); s.Entries != 0 || s.Bytes != 0 {
		h.t.Fatalf("a rejected Put stored something: %+v", s)
	}
	fits := Blob("fits", 4000)
	h.put(NewEntry(K("fits"), fits), fits)
	h.hit(K("fits"), fits)
}

func testListRecent(h *harness) {
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		h.clock.Advance(time.Minute)
		d := Blob(n, 10)
		h.put(NewEntry(K(n), d), d)
	}
	h.clock.Advance(time.Minute)
	h.hit(K("b"), Blob("b", 10)) // b is the most recent now
	list := func(limit int) []cache.Key {
		var got []cache.Key
		if err := cache.ListRecent(h.ctx, h.s, limit, func(e *cache.Entry) error { got = append(got, e.Key); return nil }); err != nil {
			h.t.Fatal(err)
		}
		return got
	}
	want := []cache.Key{K("b"), K("e"), K("d"), K("c"), K("a")}
	if got := list(0); !slices.Equal(got, want) {
		h.t.Fatalf("ListRecent(0) = %v, want most recently used first %v", got, want)
	}
	if got := list(2); !slices.Equal(got, want[:2]) {
		h.t.Fatalf("ListRecent(2) = %v, want %v", got, want[:2])
	}
	stop := errors.New("stop")
	n := 0
	if err := cache.ListRecent(h.ctx, h.s, 0, func(*cache.Entry) error { n++; return stop }); err != stop || n != 1 {
		h.t.Fatalf("ListRecent did not stop at fn's error: %v after %d calls", err, n)
	}
}
