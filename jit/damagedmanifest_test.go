package jit

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// A manifest whose JSON does not parse is damage: the build is a miss that
// says so, the store counts it as damaged, and the manifest is replaced by
// a readable one (not merged with the unreadable bytes).
func TestDamagedManifestIsCountedAndRemoved(t *testing.T) {
	ctx := context.Background()
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	r := build(t, d, req, api.StatusMiss)
	var key cache.Key
	if _, err := hex.Decode(key[:], []byte(r.Key)); err != nil {
		t.Fatal(err)
	}
	e, err := store.Entry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	bad := *e
	bad.Outputs = nil // the form written before: the manifest in the meta
	bad.Meta = map[string]string{"kind": "manifest", "manifest": `{"variants": [`}
	if err := store.Put(ctx, &bad, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := cache.ReadStats(ctx, store)
	r = build(t, d, req, api.StatusMiss)
	if !strings.Contains(r.MissReason, cache.ReasonDamaged) {
		t.Errorf("miss reason %q does not say the manifest is damaged", r.MissReason)
	}
	after, _ := cache.ReadStats(ctx, store)
	if after.Damaged != before.Damaged+1 {
		t.Errorf("damaged %d -> %d, want one more", before.Damaged, after.Damaged)
	}
	if m := manifestIn(t, store, key); len(m.Variants) != 1 {
		t.Errorf("manifest after the rebuild has %d variants, want one readable variant", len(m.Variants))
	}
	build(t, d, req, api.StatusHit)
}

// A manifest blob whose bytes are damaged is never decoded: the build is
// a miss that says so, the store removes the entry and counts it as
// damaged, and the rebuild stores a readable manifest.
func TestDamagedManifestBlobIsAMiss(t *testing.T) {
	ctx := context.Background()
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	first := build(t, d, req, api.StatusMiss)
	key, err := cache.ParseKey(first.Key)
	if err != nil {
		t.Fatal(err)
	}
	e, err := store.Entry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Outputs) != 1 || e.Outputs[0].Name != ManifestOutput || e.Meta["manifest"] != "" {
		t.Fatalf("manifest entry outputs %+v meta %v, want one %s output", e.Outputs, e.Meta, ManifestOutput)
	}
	if err := cache.FaultInjector(store).CorruptBlob(ctx, e.Outputs[0].Digest); err != nil {
		t.Fatal(err)
	}
	decodedManifests.forget(e.Outputs[0].Digest) // as a fresh process
	before, _ := cache.ReadStats(ctx, store)
	r := build(t, d, req, api.StatusMiss)
	if !strings.Contains(r.MissReason, "manifest "+cache.ReasonDamaged) || r.Hashid != first.Hashid {
		t.Errorf("miss reason %q, hashid %s; want a damaged manifest and hashid %s", r.MissReason, r.Hashid, first.Hashid)
	}
	after, _ := cache.ReadStats(ctx, store)
	if after.Damaged != before.Damaged+1 || after.Hits != before.Hits {
		t.Errorf("damaged %d -> %d, hits %d -> %d; want one more damaged, no hit", before.Damaged, after.Damaged, before.Hits, after.Hits)
	}
	build(t, d, req, api.StatusHit)
}
