package jit

import (
	"context"
	"encoding/hex"
	"encoding/json"
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
	e, err = store.Entry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal([]byte(e.Meta["manifest"]), &m); err != nil || len(m.Variants) != 1 {
		t.Errorf("manifest after the rebuild %q (%v), want one readable variant", e.Meta["manifest"], err)
	}
	build(t, d, req, api.StatusHit)
}
