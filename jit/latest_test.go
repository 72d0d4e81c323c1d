package jit

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// countingStore counts the writes of a store.
type countingStore struct {
	testStore
	puts atomic.Int64
}

func (s *countingStore) Put(ctx context.Context, e *cache.Entry, data []io.Reader) error {
	s.puts.Add(1)
	return s.testStore.Put(ctx, e, data)
}

// latestOf returns the latest build recorded for req, failing the test
// when there is none.
func latestOf(t *testing.T, d *Driver, req *api.Request) LatestBuild {
	t.Helper()
	lb, ok, err := d.LatestBuild(context.Background(), d.RequestIdentity(req))
	if err != nil || !ok {
		t.Fatalf("latest build of %s: ok %v, %v", d.RequestIdentity(req), ok, err)
	}
	return lb
}

func responseKey(t *testing.T, r *api.Response) cache.Key {
	t.Helper()
	k, err := cache.ParseKey(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The record follows the variant each build used, a hit included: edit a
// header (a miss, a second variant), restore it (a hit of the first); it
// survives closing and reopening the store, as a daemon's idle exit does;
// a name identifies a request apart from its file.
func TestLatestBuildFollowsTheVariantUsed(t *testing.T) {
	ctx := context.Background()
	dir, req := copyExamples(t)
	req.File = filepath.Join(dir, "vadd", "request.json")
	req.BaseDir = dir
	cdir := t.TempDir()
	store, err := cache.Open(cdir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { store.Close() }()
	d := newDriver(t, store)
	if r := d.RequestIdentity(req); r.File != "vadd/request.json" || r.Name != "" {
		t.Fatalf("identity %+v, want the file vadd/request.json", r)
	}
	if _, ok, err := d.LatestBuild(ctx, d.RequestIdentity(req)); ok || err != nil {
		t.Fatalf("before any build: ok %v, %v", ok, err)
	}

	r1 := build(t, d, req, api.StatusMiss)
	first := latestOf(t, d, req)
	if first.Key != responseKey(t, r1) {
		t.Fatalf("recorded key %s, want %s", first.Key, r1.Key)
	}
	h := filepath.Join(dir, "vadd", "vadd.h")
	orig, err := os.ReadFile(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h, append(append([]byte{}, orig...), "/* edited */\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	build(t, d, req, api.StatusMiss)
	second := latestOf(t, d, req)
	if second.Key != first.Key || second.Result == first.Result {
		t.Fatalf("after the header edit: %+v, want the key %s with another variant than %s", second, first.Key, first.Result)
	}
	if err := os.WriteFile(h, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	build(t, d, req, api.StatusHit)
	if lb := latestOf(t, d, req); lb.Key != first.Key || lb.Result != first.Result {
		t.Fatalf("after the hit of the restored header: %+v, want the first variant %s", lb, first.Result)
	}

	// A request with a name has its own record.
	named := *req
	named.Name = "vadd kernel"
	if _, ok, _ := d.LatestBuild(ctx, d.RequestIdentity(&named)); ok {
		t.Fatal("the named request has a record before its first build")
	}
	build(t, d, &named, api.StatusHit)
	if lb := latestOf(t, d, &named); lb.Result != first.Result || lb.Request.Name != "vadd kernel" {
		t.Fatalf("named: %+v", lb)
	}

	// The store closes (the daemon exits) and opens again.
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	store, err = cache.Open(cdir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if lb := latestOf(t, newDriver(t, store), req); lb.Key != first.Key || lb.Result != first.Result {
		t.Fatalf("after reopening the store: %+v, want the first variant %s", lb, first.Result)
	}
}

// A hit of the key and variant already recorded writes nothing; a hit of
// another variant writes the record once.
func TestLatestBuildHitWritesNothing(t *testing.T) {
	dir, req := copyExamples(t)
	req.File = filepath.Join(dir, "vadd", "request.json")
	store := &countingStore{testStore: cache.NewMemory(cache.Options{})}
	d := newDriver(t, store)
	build(t, d, req, api.StatusMiss)
	// The result, the manifest and the record, each of the 3 units'
	// result and manifest, and the pack entry.
	if n := store.puts.Load(); n != 3+2*3+1 {
		t.Fatalf("a miss wrote %d entries, want 10", n)
	}
	// Within latestRecheck (this process's memo), and past it (the record
	// read from the store and compared).
	for _, recheck := range []time.Duration{latestRecheck, 0} {
		defer func(d time.Duration) { latestRecheck = d }(latestRecheck)
		latestRecheck = recheck
		for range 3 {
			store.puts.Store(0)
			build(t, d, req, api.StatusHit)
			if n := store.puts.Load(); n != 0 {
				t.Fatalf("recheck %v: a hit of the recorded variant wrote %d entries", recheck, n)
			}
		}
	}
	h := filepath.Join(dir, "vadd", "vadd.h")
	orig, err := os.ReadFile(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h, append(append([]byte{}, orig...), "/* edited */\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	build(t, d, req, api.StatusMiss)
	if err := os.WriteFile(h, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	store.puts.Store(0)
	build(t, d, req, api.StatusHit)
	if n := store.puts.Load(); n != 1 {
		t.Fatalf("a hit of another variant than the recorded one wrote %d entries, want the record", n)
	}
	store.puts.Store(0)
	build(t, d, req, api.StatusHit)
	if n := store.puts.Load(); n != 0 {
		t.Fatalf("the next hit wrote %d entries", n)
	}
}

// A latest-build record whose meta does not parse is damage: LatestBuild
// finds none, the store counts it as damaged and the record is removed;
// the first build after latestRecheck writes a good one. A request without name or file has no
// record.
func TestDamagedLatestRecord(t *testing.T) {
	ctx := context.Background()
	dir, req := copyExamples(t)
	req.File = filepath.Join(dir, "vadd", "request.json")
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	build(t, d, req, api.StatusMiss)
	ri := d.RequestIdentity(req)
	enc, err := inventory.Encode(ri.record())
	if err != nil {
		t.Fatal(err)
	}
	rk := cache.Key(sha256.Sum256(enc))
	e, err := store.Entry(ctx, rk)
	if err != nil {
		t.Fatal(err)
	}
	e.Meta["result"] = "not a key"
	if err := store.Put(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := cache.ReadStats(ctx, store)
	if _, ok, err := d.LatestBuild(ctx, ri); ok || err != nil {
		t.Fatalf("a damaged record: ok %v, %v", ok, err)
	}
	after, _ := cache.ReadStats(ctx, store)
	if after.Damaged != before.Damaged+1 {
		t.Errorf("damaged %d -> %d, want one more", before.Damaged, after.Damaged)
	}
	if _, err := store.Entry(ctx, rk); err == nil {
		t.Error("the damaged record was not removed")
	}
	// This process saw the record a moment ago: the next build trusts
	// that and writes nothing; once latestRecheck has passed a build reads
	// the record again and writes it.
	build(t, d, req, api.StatusHit)
	if _, ok, _ := d.LatestBuild(ctx, ri); ok {
		t.Fatal("a hit within latestRecheck of the last check wrote the record")
	}
	defer func(d time.Duration) { latestRecheck = d }(latestRecheck)
	latestRecheck = 0
	build(t, d, req, api.StatusHit)
	latestOf(t, d, req)

	stdin := *req
	stdin.File = ""
	if r := d.RequestIdentity(&stdin); !r.IsZero() {
		t.Errorf("a request from standard input: identity %+v", r)
	}
}
