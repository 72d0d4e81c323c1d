package jit

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// manifestIn returns the decoded manifest of the build key k in store.
func manifestIn(t *testing.T, store cache.Core, k cache.Key) *manifest {
	t.Helper()
	ctx := context.Background()
	e, err := cache.Lookup(ctx, store, k)
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

// A manifest written before, in the entry's meta, is still read: a hit,
// from the local store and from a remote tier; the next publish writes
// the blob form.
func TestManifestInMetaIsRead(t *testing.T) {
	ctx := context.Background()
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	first := build(t, d, req, api.StatusMiss)
	key, err := cache.ParseKey(first.Key)
	if err != nil {
		t.Fatal(err)
	}
	e, err := cache.Lookup(ctx, store, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := ManifestJSON(ctx, store, e)
	if err != nil {
		t.Fatal(err)
	}
	decodedManifests.forget(e.Outputs[0].Digest)
	old := &cache.Entry{Key: key, Record: e.Record, Meta: map[string]string{"kind": ManifestKind, "manifest": string(b)}}
	if err := store.Put(ctx, old, nil); err != nil {
		t.Fatal(err)
	}
	if r := build(t, d, req, api.StatusHit); r.Hashid != first.Hashid {
		t.Errorf("hashid %s from the manifest in meta, want %s", r.Hashid, first.Hashid)
	}
	getenv, environ := env()
	remote := New(Options{Store: cache.NewMemory(cache.Options{}), Identities: identities, Getenv: getenv, Environ: environ,
		TempDir: t.TempDir()})
	remote.opt.Store = withTiers(remote.opt.Store, false, readOnlyTier{store})
	if r := build(t, remote, req, api.StatusHit); r.HitTier != TierRemote || r.Hashid != first.Hashid {
		t.Errorf("tier %q hashid %s from a remote manifest in meta, want a remote hit of %s", r.HitTier, r.Hashid, first.Hashid)
	}
	if e, err := cache.Lookup(ctx, remote.opt.Store, key); err != nil || len(e.Outputs) != 1 || e.Meta["manifest"] != "" {
		t.Errorf("the remote hit stored the manifest as %+v (%v), want the blob form", e, err)
	}
}

// readOnlyTier is a remote tier that reads a store and takes no write.
type readOnlyTier struct{ cache.Core }

func (readOnlyTier) Publish(*cache.Entry, [][]byte) bool { return false }

// The memo of decoded manifests is bounded in bytes: the least recently
// used manifests go first, and one larger than the bound is not kept.
func TestManifestMemoIsBoundedInBytes(t *testing.T) {
	c := manifestMemo{max: 100}
	m := func() *manifest { return new(manifest) }
	a, b, big := m(), m(), m()
	c.put([32]byte{1}, a, 60)
	c.put([32]byte{2}, b, 30)
	if c.get([32]byte{1}) != a { // a is now the most recently used
		t.Fatal("a was not kept")
	}
	c.put([32]byte{3}, m(), 30) // 120 bytes: b goes
	if c.get([32]byte{2}) != nil || c.get([32]byte{1}) != a || c.bytes != 90 {
		t.Errorf("after the third put: b kept %v, a kept %v, %d bytes; want b dropped, a kept, 90 bytes",
			c.get([32]byte{2}) != nil, c.get([32]byte{1}) == a, c.bytes)
	}
	c.put([32]byte{4}, big, 101)
	if c.get([32]byte{4}) != nil || c.bytes != 90 {
		t.Errorf("a manifest over the bound was kept (%d bytes)", c.bytes)
	}
}
