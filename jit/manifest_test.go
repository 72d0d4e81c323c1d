package jit

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// manifestIn returns the decoded manifest of the build key k in store.
func manifestIn(t *testing.T, store cache.Core, k cache.Key) *manifest {
	t.Helper()
	ctx := context.Background()
	e, err := store.Entry(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	b, ok, err := ManifestJSON(ctx, store, e)
	if !ok || err != nil {
		t.Fatalf("manifest of %s: %v (a manifest entry: %v)", k, err, ok)
	}
	m := new(manifest)
	if err := json.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// forget drops the manifest remembered for sum.
func (c *manifestMemo) forget(sum [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.m[sum]; el != nil {
		c.lru.Remove(el)
		delete(c.m, sum)
		c.bytes -= el.Value.(*memoManifest).size
	}
}
