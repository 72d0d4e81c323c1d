package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
	"time"
)

// scaleEntry returns entry i of TestScale's cache and its output: about
// the shape of a build's result entry (a record, a hashid, one output of
// a few hundred bytes).
func scaleEntry(i int) (*Entry, []byte) {
	k := Key(sha256.Sum256(binary.BigEndian.AppendUint64([]byte("scale"), uint64(i))))
	data := blob(k.String(), 256+i%512)
	e := &Entry{
		Key:         k,
		Record:      []byte(fmt.Sprintf(`["pypto.identity",1,["str","%x"],["int",%d]]`, k[:24], i)),
		Outputs:     []Output{{Name: "kernel_0.so", Mode: 0o755}},
		Meta:        map[string]string{"kind": "result", "hashid": "h-" + k.String()[:16], "platform": "a2a3sim"},
		CompileTime: time.Duration(i%977) * time.Millisecond,
	}
	return e, data
}

// scaleFigures are what TestScale measures of a store of n entries.
type scaleFigures struct {
	n                      int
	putRate                float64 // Puts per second, the last 1,000 of the fill
	open                   time.Duration
	indexBytesPerEntry     float64
	hitP50, warmP50        time.Duration // the first hit of each entry, and the second
	stats, trim            time.Duration
	lsFirst, lsAll, verify time.Duration
	rssHits, rssAfter      int64
	anonHits, anonAfter    int64
}

// TestScale fills a Badger store with PTOJIT_SCALE_N entries and prints
// its figures on one line (bench/scale.sh compares them with a store of
// 1,000): Put throughput over the last 500 Puts, the open and index load,
// the in-memory index per entry, the p50 of a hit (Get and read) of 1,000
// entries read for the first time and read again, the resident set after
// the hits and at the end, and the time of Stats, a Trim with nothing to evict, the
// first entry of ListRecent (limit 20), a whole ListRecent and Verify.
func TestScale(t *testing.T) {
	s := os.Getenv("PTOJIT_SCALE_N")
	if s == "" {
		t.Skip("set PTOJIT_SCALE_N to the number of entries (bench/scale.sh)")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1000 {
		t.Fatalf("PTOJIT_SCALE_N=%q: want at least 1000", s)
	}
	// PTOJIT_SCALE_DIR keeps the filled store there (bench/scale.sh
	// then serves it from a daemon); it must not exist yet.
	dir := os.Getenv("PTOJIT_SCALE_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if _, err := os.Lstat(dir); err == nil {
		t.Fatalf("PTOJIT_SCALE_DIR=%s exists: want a new directory", dir)
	}
	f := measureScale(t, dir, n)
	t.Logf("scale n=%d put_per_s=%.0f open_ms=%.1f index_b_per_entry=%.0f hit_p50_us=%.1f hit_warm_p50_us=%.1f stats_ms=%.2f trim_ms=%.2f ls_first_ms=%.2f ls_all_ms=%.1f verify_ms=%.1f verify_us_per_entry=%.2f rss_hits_mb=%.1f rss_end_mb=%.1f anon_hits_mb=%.1f anon_end_mb=%.1f",
		f.n, f.putRate, ms(f.open), f.indexBytesPerEntry, us(f.hitP50), us(f.warmP50), ms(f.stats), ms(f.trim),
		ms(f.lsFirst), ms(f.lsAll), ms(f.verify), float64(f.verify.Nanoseconds())/1e3/float64(n), mib(f.rssHits), mib(f.rssAfter), mib(f.anonHits), mib(f.anonAfter))
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func measureScale(t *testing.T, dir string, n int) *scaleFigures {
	f := &scaleFigures{n: n}
	b := open(t, dir, Options{})
	var last time.Time
	for i := range n {
		if i == n-500 {
			last = time.Now()
		}
		e, d := scaleEntry(i)
		if err := b.Put(ctx, e, Readers(d)); err != nil {
			t.Fatal(err)
		}
	}
	f.putRate = 500 / time.Since(last).Seconds()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The rest measures the store as a process that opens it finds it:
	// the fill's freed memory goes back to the system first.
	debug.FreeOSMemory()

	t0 := time.Now()
	b = open(t, dir, Options{})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := b.Stats(ctx); err != nil { // loads the index
		t.Fatal(err)
	}
	f.open = time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&after)
	f.indexBytesPerEntry = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)

	// 1,000 hits of distinct entries, then the same again: the first
	// finds their blocks on disk, the second (a working set hit again, as
	// a developer's kernels are) in Badger's block cache.
	f.hitP50 = hitP50(t, b, n)
	f.warmP50 = hitP50(t, b, n)
	f.rssHits, f.anonHits = memStatus(t)

	_ = b.flush() // the last uses of the hits: their cost, not Stats'
	f.stats = timed(t, func() error { _, err := b.Stats(ctx); return err })
	f.trim = timed(t, func() error { _, err := b.Trim(ctx, 1<<50); return err })
	f.lsFirst = timed(t, func() error {
		return ListRecent(ctx, b, 20, func(*Entry) error { return errStopList })
	})
	f.lsAll = timed(t, func() error { return ListRecent(ctx, b, 0, func(*Entry) error { return nil }) })
	f.verify = timed(t, func() error {
		r, err := b.Verify(ctx)
		if err == nil && (r.Entries != n || !r.OK()) {
			err = fmt.Errorf("verify: %d entries, %+v", r.Entries, r.Corrupt)
		}
		return err
	})
	f.rssAfter, f.anonAfter = memStatus(t)
	return f
}

// hitP50 is the median time of a Get and ReadAll of 1,000 entries of a
// store of n, spread over its keys.
func hitP50(t *testing.T, b *Badger, n int) time.Duration {
	lat := make([]time.Duration, 0, 1000)
	for j := range 1000 {
		e, d := scaleEntry(j * 7919 % n)
		t0 := time.Now()
		hit, err := b.Get(ctx, e.Key)
		if err == nil {
			_, err = hit.ReadAll()
		}
		lat = append(lat, time.Since(t0))
		if err != nil || hit.Entry.Outputs[0].Size != int64(len(d)) {
			t.Fatalf("hit %d: %v", j, err)
		}
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// errStopList stops a listing after its first entry.
var errStopList = fmt.Errorf("stop")

// timed returns how long fn took; its error fails the test, errStopList
// excepted.
func timed(t *testing.T, fn func() error) time.Duration {
	t0 := time.Now()
	err := fn()
	d := time.Since(t0)
	if err != nil && err != errStopList {
		t.Fatal(err)
	}
	return d
}
