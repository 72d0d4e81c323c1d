package jit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// drivers returns two Drivers of store and remote with one C compiler,
// which logs every shared-object compile to log (see compiles): plain, and
// in verify mode.
func drivers(t *testing.T, store testStore, tiers ...cache.Core) (plain, verify *Driver, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "cc.log")
	getenv, environ := env("CC=" + ccLogger(t, dir, log))
	o := Options{Store: withTiers(store, false, tiers...), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()}
	plain = New(o)
	o.Store, o.Verify = withTiers(store, true, tiers...), true
	return plain, New(o), log
}

// resultOf returns the result entry that the newest header variant of
// key's manifest names, with its outputs' bytes.
func resultOf(t *testing.T, store testStore, key string) *storedResult {
	t.Helper()
	ctx := context.Background()
	k, err := cache.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	man := manifestIn(t, store, k)
	if len(man.Variants) == 0 {
		t.Fatal("manifest names no variant")
	}
	rk, err := cache.ParseKey(man.Variants[0].Result)
	if err != nil {
		t.Fatal(err)
	}
	h, err := store.Get(ctx, rk)
	if err != nil {
		t.Fatal(err)
	}
	data, err := h.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return &storedResult{Entry: h.Entry, Data: data}
}

// plant replaces output name of the result entry r with other bytes: a
// well-formed entry under the same key, as the cache writes it, whose
// outputs are not what the key's inputs compile to. It returns the new
// bytes.
func plant(t *testing.T, store testStore, r *storedResult, name string) []byte {
	t.Helper()
	e := *r.Entry
	e.Outputs = slices.Clone(e.Outputs)
	data := slices.Clone(r.Data)
	i := slices.IndexFunc(e.Outputs, func(o cache.Output) bool { return o.Name == name })
	if i < 0 {
		t.Fatalf("the entry has no output %s", name)
	}
	data[i] = append(slices.Clone(data[i]), "planted"...)
	e.Outputs[i].Size, e.Outputs[i].Digest = 0, cache.Digest{}
	if err := store.Put(context.Background(), &e, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	return data[i]
}

// TestVerifyHitOfExample: in verify mode a hit of the shipped example is
// compiled again (every unit), its outputs equal the stored ones, and it
// is answered as a hit without a mismatch or a warning.
func TestVerifyHitOfExample(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	plain, d, log := drivers(t, store)
	first := build(t, plain, req, api.StatusMiss)
	compiles(t, log)
	for range 2 {
		r := build(t, d, req, api.StatusHit)
		if n := compiles(t, log); n != 3 {
			t.Fatalf("the verified hit compiled %d units, want 3", n)
		}
		if r.Key != first.Key || r.Hashid != first.Hashid || len(r.Warnings) != 0 {
			t.Fatalf("verified hit: key %s hashid %s warnings %q; first build %s %s", r.Key, r.Hashid, r.Warnings, first.Key, first.Hashid)
		}
		if _, ok := r.Timings.Phases["verify_compile"]; !ok || r.Timings.Compile == 0 {
			t.Errorf("phases %v, compile %v ms: the fresh compile is not timed", r.Timings.Phases, r.Timings.Compile)
		}
	}
	st, err := cache.ReadStats(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if st.VerifyMismatch != 0 || st.Errors != 0 || st.Hits != 2 {
		t.Errorf("stats %+v: want 2 hits, no mismatch, no error", st)
	}
	// A miss in verify mode compiles once, as without it.
	req.Options = []byte(`{"opt_level": 3}`)
	build(t, d, req, api.StatusMiss)
	if n := compiles(t, log); n != 3 {
		t.Errorf("a miss in verify mode compiled %d units, want 3", n)
	}
}

// TestVerifyReportsPlantedMismatch: a stored output replaced by a
// well-formed entry holding other bytes is still a hit without verify; in
// verify mode it fails the build with the key, the output and both
// digests, is counted, writes no output, and leaves the stored entry as it
// was.
func TestVerifyReportsPlantedMismatch(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	plain, d, log := drivers(t, store)
	first := build(t, plain, req, api.StatusMiss)
	orig := resultOf(t, store, first.Key)
	planted := plant(t, store, orig, KernelName(1))
	r := build(t, plain, req, api.StatusHit)
	got, _ := os.ReadFile(filepath.Join(req.OutputDir, KernelName(1)))
	if !bytes.Equal(got, planted) {
		t.Fatal("without verify the planted output is not what the hit answers: the test plants nothing")
	}
	hashid := r.Hashid
	// No output directory, so that a written output would show.
	if err := os.RemoveAll(req.OutputDir); err != nil {
		t.Fatal(err)
	}
	compiles(t, log)
	resp, err := d.Build(context.Background(), req)
	var ve *VerifyError
	if !errors.As(err, &ve) || resp.Status != api.StatusError {
		t.Fatalf("verify build: status %s, error %v; want a *VerifyError", resp.Status, err)
	}
	if n := compiles(t, log); n != 3 {
		t.Errorf("verify compiled %d units, want 3", n)
	}
	i := slices.IndexFunc(orig.Entry.Outputs, func(o cache.Output) bool { return o.Name == KernelName(1) })
	want := OutputDiff{Name: KernelName(1), Stored: digestString(sha256.Sum256(planted)), Fresh: digestString(orig.Entry.Outputs[i].Digest)}
	if ve.Key != first.Key || ve.Tier != TierLocal || len(ve.Diffs) != 1 || ve.Diffs[0] != want {
		t.Errorf("error %+v, want key %s, tier local, one difference %+v", ve, first.Key, want)
	}
	for _, s := range []string{first.Key, KernelName(1), want.Stored, want.Fresh} {
		if !strings.Contains(resp.Error, s) {
			t.Errorf("the error does not name %s: %s", s, resp.Error)
		}
	}
	if _, err := os.Stat(req.OutputDir); !os.IsNotExist(err) {
		t.Errorf("the failed verify wrote the output directory (%v)", err)
	}
	st, err := cache.ReadStats(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if st.VerifyMismatch != 1 || st.Errors != 1 {
		t.Errorf("stats %+v: want one verify mismatch, counted as an error of the build", st)
	}
	after := resultOf(t, store, first.Key)
	if after.Entry.Key != orig.Entry.Key || !bytes.Equal(after.Data[i], planted) {
		t.Error("the stored entry was overwritten by the fresh compile")
	}
	if r := build(t, plain, req, api.StatusHit); r.Hashid != hashid {
		t.Errorf("after the verify: hashid %s, want the stored %s", r.Hashid, hashid)
	}
}

// TestVerifyNamedOutputIsCompared: an output that verifyMayDiffer names is
// compared all the same; its difference is a warning naming it and the
// reason, not an error and not a mismatch.
func TestVerifyNamedOutputIsCompared(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	plain, d, _ := drivers(t, store)
	first := build(t, plain, req, api.StatusMiss)
	plant(t, store, resultOf(t, store, first.Key), KernelName(1))
	verifyMayDiffer[KernelName(1)] = "a test's reason"
	t.Cleanup(func() { delete(verifyMayDiffer, KernelName(1)) })
	r := build(t, d, req, api.StatusHit)
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], KernelName(1)) || !strings.Contains(r.Warnings[0], "a test's reason") {
		t.Errorf("warnings %q, want one naming %s and its reason", r.Warnings, KernelName(1))
	}
	if st, _ := cache.ReadStats(context.Background(), store); st.VerifyMismatch != 0 {
		t.Errorf("%d mismatches counted for a named output", st.VerifyMismatch)
	}
}

// TestVerifyRemoteHit: a remote hit is verified like a local one: a
// faithful one is answered with hit_tier remote after a fresh compile, a
// planted one fails the build, names the remote tier and is counted in the
// local store's stats.
func TestVerifyRemoteHit(t *testing.T) {
	root := t.TempDir()
	remote := cache.NewMemory(cache.Options{}) // a tier that publishes at once
	a, _, log := drivers(t, cache.NewMemory(cache.Options{}), remote)
	first := build(t, a, checkout(t, filepath.Join(root, "a")), api.StatusMiss)
	compiles(t, log)

	// The same compiler (CC names it) on another machine.
	cc := a.opt.Getenv("CC")
	machine := func(local testStore) *Driver {
		getenv, environ := env("CC=" + cc)
		return New(Options{Store: withTiers(local, true, remote), Verify: true, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	}
	d := machine(cache.NewMemory(cache.Options{}))
	r := build(t, d, checkout(t, filepath.Join(root, "b", "deep")), api.StatusHit)
	if r.HitTier != TierRemote || r.Hashid != first.Hashid || len(r.Warnings) != 0 {
		t.Fatalf("tier %q hashid %s warnings %q: want a verified remote hit of %s", r.HitTier, r.Hashid, r.Warnings, first.Hashid)
	}
	if n := compiles(t, log); n != 3 {
		t.Errorf("the verified remote hit compiled %d units, want 3", n)
	}

	plant(t, remote, resultOf(t, remote, first.Key), OrchestrationName)
	local := cache.NewMemory(cache.Options{})
	d = machine(local)
	_, err := d.Build(context.Background(), checkout(t, filepath.Join(root, "c")))
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Tier != TierRemote || len(ve.Diffs) != 1 || ve.Diffs[0].Name != OrchestrationName {
		t.Fatalf("planted remote hit: %v, want a *VerifyError for %s from the remote tier", err, OrchestrationName)
	}
	if st, _ := cache.ReadStats(context.Background(), local); st.VerifyMismatch != 1 {
		t.Errorf("%d mismatches counted, want 1", st.VerifyMismatch)
	}
	// The planted entry never reached the local store: without verify,
	// the same machine compiles (a miss), it does not hit locally.
	getenv, environ := env("CC=" + cc)
	plain := New(Options{Store: local, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	if r := build(t, plain, checkout(t, filepath.Join(root, "d")), api.StatusMiss); r.Hashid == "" {
		t.Errorf("no hashid from the local rebuild")
	}
}

// storedResult is a result entry with its outputs' bytes.
type storedResult struct {
	Entry *cache.Entry
	Data  [][]byte
}
