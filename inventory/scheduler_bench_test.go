package inventory

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// groupScheduler runs tasks on an errgroup limited to the walk's workers.
// A task pushed while every worker is busy runs in place, in the pushing
// goroutine: errgroup's Go would block it until a worker is free, and
// with every worker pushing, none would be. Running in place keeps the
// walk depth first, so few listings wait in memory.
//
// The walk used it before taskQueue; it stays here as the baseline of
// BenchmarkWalkScheduler. On a tree of 6,500 files and 60 MB it took
// 0.76-1.12x the queue's time, on a walk of three files 1.03-1.05x.
type groupScheduler struct{ g errgroup.Group }

func newGroupScheduler(workers int) *groupScheduler {
	s := &groupScheduler{}
	s.g.SetLimit(workers)
	return s
}

func (s *groupScheduler) push(f func()) {
	if !s.g.TryGo(func() error { f(); return nil }) {
		f()
	}
}

func (s *groupScheduler) run() { _ = s.g.Wait() }

// TestGroupSchedulerDigest checks that the task queue the benchmark
// compares with walks to the same digest, so the comparison is between
// two correct walks.
func TestGroupSchedulerDigest(t *testing.T) {
	dir := t.TempDir()
	genBenchTree(t, dir, 300, 1<<20)
	r, err := NewContentRoot(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Fingerprint([]ContentRoot{r})
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2, 8} {
		got, err := fingerprintWith([]ContentRoot{r}, FingerprintOptions{Workers: workers}, newTaskQueue(workers))
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != want.Digest || got.Files != want.Files {
			t.Fatalf("workers %d: task queue walk %x (%d files), errgroup %x (%d files)", workers, got.Digest, got.Files, want.Digest, want.Files)
		}
	}
}

// genBenchTree writes files files of bytes in all under dir, shaped like
// an installation: directories of 5 to 40 entries, nested up to four
// deep, file sizes skewed small, with a fixed seed.
func genBenchTree(tb testing.TB, dir string, files int, bytes int64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(20261201, 1))
	avg := bytes / int64(files)
	buf := make([]byte, 4*avg+1)
	for i := range buf {
		buf[i] = byte(rng.IntN(256))
	}
	cur, inDir, depth := dir, 0, 0
	for i := range files {
		if inDir == 0 || inDir > 5+rng.IntN(35) {
			if depth < 4 && rng.IntN(2) == 0 {
				depth++
			} else {
				cur, depth = dir, 1
			}
			cur = filepath.Join(cur, fmt.Sprintf("d%d", i))
			if err := os.MkdirAll(cur, 0o755); err != nil {
				tb.Fatal(err)
			}
			inDir = 0
		}
		size := int64(rng.ExpFloat64() * float64(avg))
		size = min(size, int64(len(buf)))
		if err := os.WriteFile(filepath.Join(cur, fmt.Sprintf("f%d.py", i)), buf[:size], 0o644); err != nil {
			tb.Fatal(err)
		}
		inDir++
	}
}

// BenchmarkWalkScheduler fingerprints, in every iteration and in turn, two
// trees with the errgroup.SetLimit scheduler the walk used before (TryGo,
// the task run in place when the pool is full) and with the task queue
// the walk uses (taskQueue), and reports each median (ms
// for the tree of 6,500 files and 60 MB as bench/fingerprint.sh makes, µs
// for a daemon-sized walk of three sources) and the median per-iteration
// ratio errgroup/queue. Interleaving keeps the comparison fair on a shared
// machine.
func BenchmarkWalkScheduler(b *testing.B) {
	big, small := b.TempDir(), b.TempDir()
	genBenchTree(b, big, 6500, 60_000_000)
	genBenchTree(b, small, 3, 30_000)
	workers := runtime.GOMAXPROCS(0)
	roots := func(dir string) []ContentRoot {
		r, err := NewContentRoot(dir, false)
		if err != nil {
			b.Fatal(err)
		}
		return []ContentRoot{r}
	}
	bigRoots, smallRoots := roots(big), roots(small)
	walk := func(r []ContentRoot, group bool) float64 {
		var s scheduler = newTaskQueue(workers)
		if group {
			s = newGroupScheduler(workers)
		}
		t := time.Now()
		if _, err := fingerprintWith(r, FingerprintOptions{}, s); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(t).Nanoseconds())
	}
	walk(bigRoots, false) // warm the page cache
	var qBig, gBig, rBig, qSmall, gSmall, rSmall []float64
	i := 0
	for b.Loop() {
		// Alternate which goes first, so neither always meets the cache
		// state the other leaves.
		i++
		var q, g float64
		if i%2 == 0 {
			q, g = walk(bigRoots, false)/1e6, walk(bigRoots, true)/1e6
		} else {
			g, q = walk(bigRoots, true)/1e6, walk(bigRoots, false)/1e6
		}
		qBig, gBig, rBig = append(qBig, q), append(gBig, g), append(rBig, g/q)
		// The small walk is short: take the median of a few for each
		// sample.
		var qs, gs []float64
		for range 21 {
			qs, gs = append(qs, walk(smallRoots, false)/1e3), append(gs, walk(smallRoots, true)/1e3)
		}
		q, g = median(qs), median(gs)
		qSmall, gSmall, rSmall = append(qSmall, q), append(gSmall, g), append(rSmall, g/q)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(qBig), "queue-tree-ms")
	b.ReportMetric(median(gBig), "errgroup-tree-ms")
	b.ReportMetric(median(rBig), "errgroup/queue-tree")
	b.ReportMetric(median(qSmall), "queue-3files-us")
	b.ReportMetric(median(gSmall), "errgroup-3files-us")
	b.ReportMetric(median(rSmall), "errgroup/queue-3files")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
