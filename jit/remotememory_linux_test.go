package jit

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestRemoteHitOfLargeOutputMemory: a remote hit whose output is 1 GiB
// (PTOJIT_HIT_OUTPUT_MIB), served from a Redis tier to a driver on an
// empty Badger store, keeps the process's peak resident set (VmHWM, reset
// before the build) under 256 MiB: the tier's hit streams a chunk at a
// time into the local store (backfill) and into the output's temporary
// file. The backfilled entry then answers a local hit. The peak is
// logged. Slow, so not in short mode.
func TestRemoteHitOfLargeOutputMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1 GiB output into a Redis tier and out of it")
	}
	if !inFreshProcess(t) {
		return
	}
	node := fixture.StartRedis(t, false)
	tier, err := remote.New(remote.Config{Target: &remote.Target{Addrs: []string{node.Addr}}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	largeRemoteHit(t, tier)
}

// TestRemoteHitOfLargeOutputMemoryS3 is TestRemoteHitOfLargeOutputMemory
// with an S3 tier (versitygw), whose chunks are 16 MiB objects.
func TestRemoteHitOfLargeOutputMemoryS3(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1 GiB output into an S3 tier and out of it")
	}
	if !inFreshProcess(t) {
		return
	}
	largeRemoteHit(t, bigTiers["s3"](t)(false))
}

// largeRemoteHit is TestRemoteHitOfLargeOutputMemory's build, through
// tier.
func largeRemoteHit(t *testing.T, tier *remote.Remote) {
	size := hitOutputBytes(t)
	ctx := context.Background()

	// A's build, its result's orchestration output replaced by size
	// bytes, published to the tier with its manifest.
	_, req := copyExamples(t)
	first := cache.NewMemory(cache.Options{})
	resp := build(t, newDriver(t, first), req, api.StatusMiss)
	r := resultOf(t, first, resp.Key)
	e := *r.Entry
	e.Outputs = slices.Clone(e.Outputs)
	i := slices.IndexFunc(e.Outputs, func(o cache.Output) bool { return o.Name == OrchestrationName })
	if i < 0 {
		t.Fatalf("the entry has no output %s", OrchestrationName)
	}
	gen := func() io.Reader { return &genReader{r: rand.NewChaCha8([32]byte{47}), left: size} }
	sum := sha256.New()
	if _, err := io.Copy(sum, gen()); err != nil {
		t.Fatal(err)
	}
	e.Outputs[i].Size, e.Outputs[i].Digest = size, cache.Digest(sum.Sum(nil))
	data := cache.Readers(r.Data...)
	data[i] = gen()
	began := time.Now()
	if err := tier.Put(ctx, &e, data); err != nil {
		t.Fatal(err)
	}
	k, err := cache.ParseKey(resp.Key)
	if err != nil {
		t.Fatal(err)
	}
	mh, err := first.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	mdata, err := mh.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if err := tier.Put(ctx, mh.Entry, cache.Readers(mdata...)); err != nil {
		t.Fatal(err)
	}
	t.Logf("put %d MiB into the tier in %v", size>>20, time.Since(began).Round(time.Millisecond))

	store, err := cache.Open(t.TempDir(), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	getenv, environ := env()
	d := New(Options{Store: withRemote(store, tier), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	for _, want := range []string{TierRemote, TierLocal} {
		os.Remove(filepath.Join(req.OutputDir, OrchestrationName))
		base := resetPeakRSS(t)
		began := time.Now()
		got, err := d.Build(ctx, req)
		took := time.Since(began)
		peak := statusKB(t, "VmHWM:")[0] << 10
		if err != nil || got.Status != api.StatusHit || got.HitTier != want {
			t.Fatalf("build: %v, status %s tier %q; want a hit of tier %s", err, got.Status, got.HitTier, want)
		}
		fi, err := os.Stat(filepath.Join(req.OutputDir, OrchestrationName))
		if err != nil || fi.Size() != size {
			t.Fatalf("the output in place is %v, %v; want %d bytes", fi, err, size)
		}
		t.Logf("%s hit of a %d MiB output: %v, peak resident set %.1f MiB (%.1f MiB before the build)",
			want, size>>20, took.Round(time.Millisecond), float64(peak)/(1<<20), float64(base)/(1<<20))
		if peak > 256<<20 {
			t.Errorf("%s hit: peak resident set %.1f MiB, want under 256 MiB", want, float64(peak)/(1<<20))
		}
	}
}
