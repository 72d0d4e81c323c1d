package cache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// bigBlobBytes is the size of TestBigBlobMemory's output: 1 GiB with
// PTOJIT_BIG_BLOB_MIB=1024, 256 MiB by default, 48 MiB with -short.
func bigBlobBytes(t *testing.T) int64 {
	if s := os.Getenv("PTOJIT_BIG_BLOB_MIB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("PTOJIT_BIG_BLOB_MIB=%q: want a positive number of MiB", s)
		}
		return n << 20
	}
	if testing.Short() {
		return 48 << 20
	}
	return 256 << 20
}

// memStatus returns the process's resident set and its anonymous part, in
// bytes, from /proc/self/status.
func memStatus(t *testing.T) (rss, anon int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v int64
		line := sc.Bytes()
		field := func(name string) bool {
			if !bytes.HasPrefix(line, []byte(name)) {
				return false
			}
			f := bytes.Fields(line[len(name):])
			if len(f) > 0 {
				v, _ = strconv.ParseInt(string(f[0]), 10, 64)
			}
			return true
		}
		switch {
		case field("VmRSS:"):
			rss = v << 10
		case field("RssAnon:"):
			anon = v << 10
		}
	}
	return rss, anon
}

// peakSampler records the largest growth of the resident set over a base,
// sampled every 4 MiB that a stream passes.
type peakSampler struct {
	t               *testing.T
	baseRSS, base   int64
	peakRSS, peak   int64
	since, interval int64
}

func newPeakSampler(t *testing.T) *peakSampler {
	runtime.GC()
	debug.FreeOSMemory()
	rss, anon := memStatus(t)
	return &peakSampler{t: t, baseRSS: rss, base: anon, interval: 4 << 20}
}

func (p *peakSampler) passed(n int) {
	if p.since += int64(n); p.since >= p.interval {
		p.since = 0
		p.sample()
	}
}

func (p *peakSampler) sample() {
	rss, anon := memStatus(p.t)
	p.peakRSS = max(p.peakRSS, rss-p.baseRSS)
	p.peak = max(p.peak, anon-p.base)
}

// genReader yields n deterministic pseudo-random bytes, reporting each
// read to a sampler.
type genReader struct {
	r    *rand.ChaCha8
	left int64
	p    *peakSampler
}

func (g *genReader) Read(b []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > g.left {
		b = b[:g.left]
	}
	n, _ := g.r.Read(b)
	g.left -= int64(n)
	g.p.passed(n)
	return n, nil
}

// digestOf returns the SHA-256 of what genReader yields for seed.
func digestOf(seed [32]byte, n int64) Digest {
	h := sha256.New()
	_, _ = io.Copy(h, &genReader{r: rand.NewChaCha8(seed), left: n, p: &peakSampler{interval: 1 << 62}})
	return Digest(h.Sum(nil))
}

// hashWriter hashes what it is written, reporting each write to a sampler.
type hashWriter struct {
	h interface{ Write([]byte) (int, error) }
	p *peakSampler
}

func (w hashWriter) Write(b []byte) (int, error) {
	w.p.passed(len(b))
	return w.h.Write(b)
}

// TestBigBlobMemory streams a large output into a Badger store and back
// out: the resident set must not grow by more than 64 MiB either way,
// whatever the output's size. It logs the growth measured (run with
// PTOJIT_BIG_BLOB_MIB=1024 -v for the 1 GiB figure), of anonymous memory
// (what the store allocates) and of the whole resident set, which also
// holds the pages of the value-log files Badger maps (see pageOut).
func TestBigBlobMemory(t *testing.T) {
	size := bigBlobBytes(t)
	seed := [32]byte{7}
	want := digestOf(seed, size)
	b := open(t, t.TempDir(), Options{})
	e := entry(key("big"), 1)
	e.Outputs[0].Name = "big.bin"

	put := newPeakSampler(t)
	if err := b.Put(ctx, e, []io.Reader{&genReader{r: rand.NewChaCha8(seed), left: size, p: put}}); err != nil {
		t.Fatal(err)
	}
	put.sample()

	get := newPeakSampler(t)
	hit, err := b.Get(ctx, key("big"))
	if err != nil {
		t.Fatal(err)
	}
	if o := hit.Entry.Outputs[0]; o.Size != size || o.Digest != want {
		t.Fatalf("stored output %+v, want %d bytes with the digest of the stream", o, size)
	}
	r := hit.Open(0)
	h := sha256.New()
	if _, err := io.Copy(hashWriter{h: h, p: get}, r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	get.sample()
	if Digest(h.Sum(nil)) != want {
		t.Fatal("the streamed output differs from what was put")
	}
	t.Logf("%d MiB output: Put grew anonymous memory by at most %.1f MiB (resident set %.1f MiB), Get by %.1f MiB (%.1f MiB)",
		size>>20, mib(put.peak), mib(put.peakRSS), mib(get.peak), mib(get.peakRSS))
	const limit = 64 << 20
	if max(put.peak, put.peakRSS, get.peak, get.peakRSS) > limit {
		t.Errorf("the resident set grew by %.1f MiB (Put) and %.1f MiB (Get), want at most 64", mib(put.peakRSS), mib(get.peakRSS))
	}

	// The chunked blob counts once, verifies, and trims away whole.
	if s, err := ReadStats(ctx, b); err != nil || s.Bytes != size || s.Entries != 1 {
		t.Fatalf("Stats = %+v, %v", s, err)
	}
	if !testing.Short() {
		if v, err := Verify(ctx, b, false); err != nil || !v.OK() || v.Bytes != size {
			t.Fatalf("Verify = %+v, %v", v, err)
		}
	}
	if _, err := Trim(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	if n := countChunks(t, b); n != 0 {
		t.Fatalf("%d chunks left after the entry was evicted", n)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// countChunks counts the chunks stored in b.
func countChunks(t *testing.T, b *Badger) int {
	n := 0
	err := b.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindChunk}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestChunksOfFailedPut: a Put that fails while streaming (its reader
// fails, or its bytes miss their digest) leaves no chunk behind, and the
// chunks a killed Put left are deleted by the next Trim.
func TestChunksOfFailedPut(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{ChunkBytes: MinChunkBytes})
	big := blob("big", 10*MinChunkBytes+3)
	e := entry(key("a"), 1)
	fail := io.MultiReader(bytes.NewReader(big), iotestErrReader{})
	if err := b.Put(ctx, e, []io.Reader{fail}); !errors.Is(err, errReader) {
		t.Fatalf("Put with a failing reader = %v", err)
	}
	e.Outputs[0].Digest = sha256.Sum256([]byte("other"))
	var de *DataError
	if err := b.Put(ctx, e, Readers(big)); !errors.As(err, &de) {
		t.Fatalf("Put with a wrong digest = %v", err)
	}
	if n := countChunks(t, b); n != 0 {
		t.Fatalf("%d chunks left by failed Puts", n)
	}
	// A killed Put: chunks written, no list.
	up := newUploadID()
	for j := range 3 {
		if err := b.update(func(txn *badger.Txn) error { return txn.Set(chunkKey(up, j), big[:MinChunkBytes]) }); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	b = open(t, dir, Options{ChunkBytes: MinChunkBytes})
	if _, err := Trim(ctx, b, 1<<40); err != nil {
		t.Fatal(err)
	}
	if n := countChunks(t, b); n != 0 {
		t.Fatalf("%d chunks of a killed Put left after Trim", n)
	}
}

var errReader = errors.New("reader failed")

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errReader }
