package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
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
// 1,000), of the store as a process that opens it finds it (filled, its
// compactions finished): the open and index load; the
// in-memory index per entry; the p50 of a hit (Get and read) of 1,000
// entries read for the first time and read again; the resident set after
// the hits and at the end; and the time of Stats, a Trim with nothing to
// evict, the first entry of ListRecent (limit 20), a whole ListRecent and
// Verify (the median of three).
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
	t.Logf("scale n=%d open_ms=%.1f index_b_per_entry=%.0f hit_p50_us=%.1f hit_warm_p50_us=%.1f stats_ms=%.2f trim_ms=%.2f ls_first_ms=%.2f ls_all_ms=%.1f verify_ms=%.1f verify_us_per_entry=%.2f rss_hits_mb=%.1f rss_end_mb=%.1f anon_hits_mb=%.1f anon_end_mb=%.1f",
		f.n, ms(f.open), f.indexBytesPerEntry, us(f.hitP50), us(f.warmP50), ms(f.stats), ms(f.trim),
		ms(f.lsFirst), ms(f.lsAll), ms(f.verify), float64(f.verify.Nanoseconds())/1e3/float64(n), mib(f.rssHits), mib(f.rssAfter), mib(f.anonHits), mib(f.anonAfter))
}

// TestScalePuts compares the Put throughput of the stores
// PTOJIT_SCALE_PUTS names (directories separated by a space, filled by
// TestScale: bench/scale.sh passes the 1,000 and the N store), side by
// side in one process: in each of putRounds rounds, in a new random order,
// a batch of putBatch Puts of new entries into each. It prints, for each
// store, the entries it held and its Puts per second in its median batch
// (one batch that a collection or a memtable flush lands in says little
// of the rate).
func TestScalePuts(t *testing.T) {
	s := os.Getenv("PTOJIT_SCALE_PUTS")
	if s == "" {
		t.Skip("set PTOJIT_SCALE_PUTS to the directories of stores that TestScale filled (bench/scale.sh)")
	}
	dirs := strings.Fields(s)
	stores := make([]*Badger, len(dirs))
	held := make([]int, len(dirs))
	for i, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("PTOJIT_SCALE_PUTS: %v", err)
		}
		stores[i] = open(t, d, Options{})
		st, err := ReadStats(ctx, stores[i]) // loads the index
		if err != nil {
			t.Fatal(err)
		}
		held[i] = int(st.Entries)
	}
	batches := make([][]time.Duration, len(dirs))
	rng := rand.New(rand.NewPCG(1, 2))
	for r := range putRounds {
		for _, i := range rng.Perm(len(dirs)) {
			// Entries TestScale did not make: keys from held[i] on.
			first := held[i] + r*putBatch
			t0 := time.Now()
			for j := first; j < first+putBatch; j++ {
				put(t, stores[i], j)
			}
			batches[i] = append(batches[i], time.Since(t0))
		}
	}
	for i, d := range dirs {
		slices.Sort(batches[i])
		t.Logf("scale n=%d put_per_s=%.0f", held[i], putBatch/batches[i][len(batches[i])/2].Seconds())
		leaveSettled(t, stores[i], d)
	}
}

// putRounds and putBatch are TestScalePuts' rounds and Puts per batch.
const putRounds, putBatch = 40, 50

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func measureScale(t *testing.T, dir string, n int) *scaleFigures {
	f := &scaleFigures{n: n}
	b := open(t, dir, Options{})
	for i := range n {
		put(t, b, i)
	}
	// The fill leaves Badger compacting for a while on a large store; a
	// process that opens the store later finds them done, and the
	// figures are of that store, not of the compactions.
	settle(t, b)
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
	if _, err := ReadStats(ctx, b); err != nil { // loads the index
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
	f.stats = timed(t, func() error { _, err := ReadStats(ctx, b); return err })
	f.trim = timed(t, func() error { _, err := Trim(ctx, b, 1<<50); return err })
	f.lsFirst = timed(t, func() error {
		return ListRecent(ctx, b, 20, func(*Entry) error { return errStopList })
	})
	f.lsAll = timed(t, func() error { return ListRecent(ctx, b, 0, func(*Entry) error { return nil }) })
	// Verify, the median of as many runs as fit in about half a second,
	// three at least and 21 at most: one run of a few milliseconds (at
	// 1,000 entries) says little on a shared machine.
	verify := func() time.Duration {
		return timed(t, func() error {
			r, err := Verify(ctx, b, false)
			if err == nil && (r.Entries != n || !r.OK()) {
				err = fmt.Errorf("verify: %d entries, %+v", r.Entries, r.Corrupt)
			}
			return err
		})
	}
	verifies := []time.Duration{verify()}
	runs := min(max(int(500*time.Millisecond/max(verifies[0], time.Microsecond)), 3), 21)
	for len(verifies) < runs {
		verifies = append(verifies, verify())
	}
	slices.Sort(verifies)
	f.verify = verifies[len(verifies)/2]
	f.rssAfter, f.anonAfter = memStatus(t)
	leaveSettled(t, b, dir)
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

// put stores entry i of TestScale's cache.
func put(t *testing.T, b *Badger, i int) {
	e, d := scaleEntry(i)
	if err := b.Put(ctx, e, Readers(d)); err != nil {
		t.Fatal(err)
	}
}

// settle returns once b's compactions are over: no level but the last
// is over its target, its tables counted whether or not a compaction is
// taking them (L0: fewer tables than start one), and no table was made or
// removed for a second. Badger does not tell when a compaction ends, so
// settle looks five times a second; it fails the test after 20 minutes.
func settle(t *testing.T, b *Badger) {
	deadline := time.Now().Add(20 * time.Minute)
	var last string
	for since := time.Now(); time.Since(since) < time.Second; {
		if time.Now().After(deadline) {
			t.Fatalf("compactions still running after 20 minutes:%s", b.db.LevelsToString())
		}
		time.Sleep(200 * time.Millisecond)
		state, over := "", false
		levels := b.db.Levels()
		for _, l := range levels[:len(levels)-1] {
			if l.Level == 0 {
				over = over || l.NumTables >= b.db.Opts().NumLevelZeroTables
			} else {
				over = over || l.Size > 0 && l.Size >= l.TargetSize
			}
		}
		for _, ti := range b.db.Tables() {
			state += strconv.FormatUint(ti.ID, 10) + " "
		}
		if over || state != last {
			last, since = state, time.Now()
		}
	}
}

// leaveSettled closes b, the store in dir, and leaves it as settled as
// after its fill, for bench/scale.sh's daemon, which opens it next:
// closing writes the memtable out as another L0 table, which may start a
// compaction, so the store is opened again and settled.
func leaveSettled(t *testing.T, b *Badger, dir string) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	settle(t, open(t, dir, Options{}))
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
