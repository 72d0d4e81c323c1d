package jit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/registry"
)

// TestOutputMemo: a hit into an output directory that holds the outputs
// checks them by stat data once they are remembered, leaves them alone,
// and rewrites one whose bytes changed in place or that was replaced.
func TestOutputMemo(t *testing.T) {
	defer func(a time.Duration) { outputStableAge = a }(outputStableAge)
	outputStableAge = 0 // the files are written just now
	_, req := copyExamples(t)
	d := newDriver(t, cache.NewMemory(cache.Options{}))
	first := build(t, d, req, api.StatusMiss)
	build(t, d, req, api.StatusHit) // reads the outputs and remembers them
	p := first.Callable
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	_, remembered := outputMemo.get(p)
	if !remembered {
		t.Fatalf("%s is not remembered after a hit found it in place", p)
	}
	ino := func() uint64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	before := ino()
	build(t, d, req, api.StatusHit)
	if ino() != before {
		t.Fatal("an unchanged output was rewritten")
	}

	check := func(what string) {
		t.Helper()
		build(t, d, req, api.StatusHit)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the hit left the changed output in place", what)
		}
	}
	// The same size, other bytes, written in place: the status change
	// time moves.
	bad := bytes.Repeat([]byte{0x5a}, len(want))
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bad); err != nil {
		t.Fatal(err)
	}
	f.Close()
	check("rewritten in place")
	// Replaced by another file (another inode) with other bytes and the
	// old modification time.
	fi, _ := os.Stat(p)
	tmp := p + ".other"
	if err := os.WriteFile(tmp, bad, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	check("replaced")
	// Truncated.
	if err := os.Truncate(p, int64(len(want)/2)); err != nil {
		t.Fatal(err)
	}
	check("truncated")
}

// TestSweepStaleTemps: writing outputs removes the temporary files of those
// outputs that a killed writer left over an hour ago, and nothing else: a
// user's file that merely looks alike is kept.
func TestSweepStaleTemps(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * staleTempAge)
	const recent = ".kernel_0.so.tmp-fedcba9876543210"
	files := map[string]bool{ // name -> removed
		".kernel_0.so.tmp-0123456789abcdef": true,
		recent:                              false, // recent: a writer may be at work
		".other.so.tmp-0123456789abcdef":    false, // not an output of this build
		".kernel_0.so.tmp-123":              false, // not a name writeTemp makes
		".kernel_0.so.tmp-old":              false,
		"kernel_0.so.tmp-0123456789abcdef":  false, // no leading dot: not a temporary file
		"notes.txt":                         false,
	}
	for n := range files {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if n != recent {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := []byte("kernel bytes")
	outs := []cache.Output{{Name: "kernel_0.so", Mode: 0o755, Size: int64(len(b)), Digest: sha256.Sum256(b)}}
	if _, err := writeOutputs(dir, outs, fileBlobs(t, [][]byte{b})); err != nil {
		t.Fatal(err)
	}
	for n, removed := range files {
		_, err := os.Stat(filepath.Join(dir, n))
		if gone := os.IsNotExist(err); gone != removed {
			t.Errorf("%s: removed = %v, want %v", n, gone, removed)
		}
	}
}

// TestChipHashidMemo: the remembered hashid is registry.ChipHashid's, and a
// blob's hashid under another platform or runtime is not taken from it.
func TestChipHashidMemo(t *testing.T) {
	blob, err := (&registry.ChipCallable{FuncName: "f", Binary: []byte("orchestration")}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	for range 2 {
		for _, rt := range []string{"tensormap_and_ringbuffer", "host_build_graph"} {
			got, err := chipHashid("a2a3sim", rt, sum, int64(len(blob)), func() io.ReadCloser { return io.NopCloser(bytes.NewReader(blob)) })
			want, werr := registry.ChipHashid("a2a3sim", rt, blob)
			if err != nil || werr != nil || got != want.String() {
				t.Fatalf("runtime %s: chipHashid = %s, %v; want %s, %v", rt, got, err, want, werr)
			}
		}
	}
}

// TestHitInPlaceReadsNoBlob: a hit into an output directory whose outputs
// the memo knows reads none of the entry's blobs from the store (every
// blob is corrupted in the store first, so a read of any byte would find
// the damage), yet counts as a hit; an output then missing is read, and
// its damage found, so the build compiles and answers right.
func TestHitInPlaceReadsNoBlob(t *testing.T) {
	defer func(a time.Duration) { outputStableAge = a }(outputStableAge)
	outputStableAge = 0 // the files are written just now
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	ctx := context.Background()
	first := build(t, d, req, api.StatusMiss)
	build(t, d, req, api.StatusHit) // reads the outputs and remembers them
	want := map[string][]byte{}
	for _, o := range first.Outputs {
		var digest [32]byte
		if _, err := hex.Decode(digest[:], []byte(o.Digest)); err != nil {
			t.Fatal(err)
		}
		if err := cache.FaultInjector(store).CorruptBlob(ctx, digest); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		want[o.Path] = b
	}
	before, err := cache.ReadStats(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	r := build(t, d, req, api.StatusHit)
	after, err := cache.ReadStats(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if after.Hits != before.Hits+1 || after.Damaged != before.Damaged || r.Hashid != first.Hashid {
		t.Fatalf("a hit into unchanged outputs: hits %d -> %d, damaged %d -> %d, hashid %s want %s; want one more hit, no blob read",
			before.Hits, after.Hits, before.Damaged, after.Damaged, r.Hashid, first.Hashid)
	}
	kernel := first.Outputs[1].Path
	if err := os.Remove(kernel); err != nil {
		t.Fatal(err)
	}
	r = build(t, d, req, api.StatusMiss)
	if !strings.Contains(r.MissReason, "corrupt") {
		t.Errorf("miss reason %q, want the damaged blob", r.MissReason)
	}
	for p, b := range want {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s after the damaged hit: %v, or other bytes", p, err)
		}
	}
}

// fileBlobs returns the blobs of outputs whose bytes are data, each in a
// file of a temporary directory, as a compile's are.
func fileBlobs(t *testing.T, data [][]byte) *blobs {
	t.Helper()
	dir := t.TempDir()
	b := &blobs{}
	for i, d := range data {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, d, 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := fileObject(p)
		if err != nil {
			t.Fatal(err)
		}
		b.objs = append(b.objs, o)
	}
	return b
}
