package jit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/test/fixture"
)

// hitOutputBytes is the size of TestHitOfLargeOutputMemory's output:
// PTOJIT_HIT_OUTPUT_MIB MiB when set, else 1 GiB in the full suites
// (fixture.FullVar) and 320 MiB in their short form: still over the 256
// MiB bound, so an output held whole in memory fails either.
func hitOutputBytes(t *testing.T) int64 {
	if s := os.Getenv("PTOJIT_HIT_OUTPUT_MIB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("PTOJIT_HIT_OUTPUT_MIB=%q: want a positive number of MiB", s)
		}
		return n << 20
	}
	if !fixture.Full(t) {
		return 320 << 20
	}
	return 1 << 30
}

// freshProcessVar marks the test process that inFreshProcess starts.
const freshProcessVar = "PTOJIT_TEST_FRESH_PROCESS"

// inFreshProcess runs the calling test alone in a new test process and
// reports whether the caller is that process: the parent returns false
// once the child passed (and fails with its output if it did not). A peak
// resident set measured after the package's other tests includes their
// heap and a garbage collector's target grown with it, not the build's.
func inFreshProcess(t *testing.T) bool {
	if os.Getenv(freshProcessVar) == t.Name() {
		return true
	}
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), freshProcessVar+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("%s in a fresh process:\n%s", t.Name(), out)
	if err != nil {
		t.Fatalf("%s in a fresh process: %v", t.Name(), err)
	}
	return false
}

// statusKB returns the fields of /proc/self/status named, in KiB.
func statusKB(t *testing.T, names ...string) []int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	out := make([]int64, len(names))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		if i := slices.Index(names, string(f[0])); i >= 0 {
			out[i], _ = strconv.ParseInt(string(f[1]), 10, 64)
		}
	}
	return out
}

// resetPeakRSS sets the process's resident-set high-water mark (VmHWM) to
// its resident set now (clear_refs 5, Linux 4.0 and later), after giving
// the heap back to the system, and returns that resident set in bytes.
func resetPeakRSS(t *testing.T) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident set: %v", err)
	}
	return statusKB(t, "VmRSS:")[0] << 10
}

// genReader yields n deterministic pseudo-random bytes.
type genReader struct {
	r    *rand.ChaCha8
	left int64
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
	return n, nil
}

// TestHitOfLargeOutputMemory: a local hit whose output is 1 GiB, served by
// the driver into an output directory from a Badger store, keeps the
// process's peak resident set (VmHWM, the kernel's high-water mark, reset
// before each build) under 256 MiB: the output streams from the store's
// verifying reader into its temporary file, and a second hit, the file
// already in place, compares it by digest without reading the store. The
// peaks are logged. Slow (about a minute for 1 GiB: the store is filled
// first), so not in -short mode, and 320 MiB unless PTOJIT_TEST_FULL=1.
func TestHitOfLargeOutputMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1 GiB output into a store and out of it")
	}
	if !inFreshProcess(t) {
		return
	}
	size := hitOutputBytes(t)
	hitLargeOutput(t, OrchestrationName, size, &genReader{r: rand.NewChaCha8([32]byte{47}), left: size}, "")
}

// TestHitOfLargeCallableMemory: a local hit whose chip callable is 1 GiB
// (a valid ChipCallable whose orchestration binary fills it), its hashid
// not yet remembered (a fresh process; the callable's digest is not the
// one compiled), keeps the peak resident set under 256 MiB: the hashid is
// computed as the callable streams from the store, not from a copy of it
// in memory. The hashid answered is the blob's. Slow, so not in short
// mode.
func TestHitOfLargeCallableMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1 GiB callable into a store and out of it")
	}
	if !inFreshProcess(t) {
		return
	}
	size := hitOutputBytes(t)
	want, err := registry.ChipHashidFrom("a2a3sim", "tensormap_and_ringbuffer", largeCallable(t, size), size)
	if err != nil {
		t.Fatalf("the generated callable: %v", err)
	}
	hitLargeOutput(t, CallableName, size, largeCallable(t, size), want.String())
}

// largeCallable returns a reader of a valid ChipCallable blob of size
// bytes: a header naming no signature and no children, and an
// orchestration binary of pseudo-random bytes filling the rest. A small
// one is checked with registry.ParseChipCallable first.
func largeCallable(t *testing.T, size int64) io.Reader {
	t.Helper()
	gen := func(size int64) io.Reader {
		head, err := (&registry.ChipCallable{FuncName: "f"}).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		// binary_size, at byte 1028 of the header (the layout of the
		// registry package doc).
		binary.LittleEndian.PutUint32(head[1028:], uint32(size-registry.ChipHeaderSize))
		return io.MultiReader(bytes.NewReader(head), &genReader{r: rand.NewChaCha8([32]byte{48}), left: size - registry.ChipHeaderSize})
	}
	small, err := io.ReadAll(gen(registry.ChipHeaderSize + 100))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := registry.ParseChipCallable(small); err != nil || len(c.Binary) != 100 {
		t.Fatalf("the generated callable does not parse: %v", err)
	}
	return gen(size)
}

// hitLargeOutput builds the example once (a miss), replaces the result
// entry's output name by size bytes from data, and answers two hits of it,
// into a directory without the output and into one that holds it, each
// with a peak resident set under 256 MiB; hashid, when not "", is the
// hashid each must answer.
func hitLargeOutput(t *testing.T, name string, size int64, data io.Reader, hashid string) {
	ctx := context.Background()
	_, req := copyExamples(t)
	store, err := cache.Open(t.TempDir(), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d := newDriver(t, store)
	first := build(t, d, req, api.StatusMiss)

	// The result entry, its output replaced by size bytes streamed into
	// the store.
	r := resultOf(t, store, first.Key)
	e := *r.Entry
	e.Outputs = slices.Clone(e.Outputs)
	i := slices.IndexFunc(e.Outputs, func(o cache.Output) bool { return o.Name == name })
	if i < 0 {
		t.Fatalf("the entry has no output %s", name)
	}
	e.Outputs[i].Size, e.Outputs[i].Digest = 0, cache.Digest{}
	readers := cache.Readers(r.Data...)
	readers[i] = data
	began := time.Now()
	if err := store.Put(ctx, &e, readers); err != nil {
		t.Fatal(err)
	}
	t.Logf("stored %d MiB in %v", size>>20, time.Since(began).Round(time.Millisecond))

	const limit = 256 << 20
	for _, run := range []string{"into a directory without it", "into a directory that holds it"} {
		base := resetPeakRSS(t)
		began := time.Now()
		resp, err := d.Build(ctx, req) // not build, whose check reads the outputs whole
		took := time.Since(began)
		peak := statusKB(t, "VmHWM:")[0] << 10
		if err != nil || resp.Status != api.StatusHit {
			t.Fatalf("hit %s: %v, %+v", run, err, resp)
		}
		fi, err := os.Stat(filepath.Join(req.OutputDir, name))
		if err != nil || fi.Size() != size || resp.Outputs[i].Size != size {
			t.Fatalf("hit %s: the output in place is %v, %v; want %d bytes", run, fi, err, size)
		}
		if hashid != "" && resp.Hashid != hashid {
			t.Fatalf("hit %s: hashid %s, want %s", run, resp.Hashid, hashid)
		}
		t.Logf("hit of a %d MiB %s %s: %v, peak resident set %.1f MiB (%.1f MiB before the build)",
			size>>20, name, run, took.Round(time.Millisecond), float64(peak)/(1<<20), float64(base)/(1<<20))
		if peak > limit {
			t.Errorf("hit %s: peak resident set %.1f MiB, want under 256 MiB", run, float64(peak)/(1<<20))
		}
	}
}
