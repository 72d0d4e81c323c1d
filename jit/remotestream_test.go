package jit

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestRemoteHitDamagedChunk: a remote result whose chunked output has a
// damaged chunk (found only as the hit streams, after the tier answered)
// is a miss: the build compiles and succeeds, from a read-only tier (which
// keeps the damage) twice in a row, and nothing damaged reaches the local
// store.
func TestRemoteHitDamagedChunk(t *testing.T) {
	ctx := context.Background()
	node := fixture.StartRedis(t, false)
	open := func(readOnly bool) *remote.Remote {
		r, err := remote.New(remote.Config{Target: &remote.Target{Addrs: []string{node.Addr}}, ChunkBytes: 4 << 10, ReadOnly: readOnly, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	_, req := copyExamples(t)
	first := cache.NewMemory(cache.Options{})
	resp := build(t, newDriver(t, first), req, api.StatusMiss)
	k, err := cache.ParseKey(resp.Key)
	if err != nil {
		t.Fatal(err)
	}
	w := open(false)
	r := resultOf(t, first, resp.Key)
	damaged := ""
	for _, o := range r.Entry.Outputs {
		if o.Size > 4<<10 && damaged == "" {
			damaged = fmt.Sprintf("ptojit:1:b:%s:0", hex.EncodeToString(o.Digest[:]))
		}
	}
	if damaged == "" {
		t.Fatal("no output larger than a chunk")
	}
	if err := w.Put(ctx, r.Entry, cache.Readers(r.Data...)); err != nil {
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
	if err := w.Put(ctx, mh.Entry, cache.Readers(mdata...)); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.RedisCommand(node.Addr, "SET", damaged, "damaged"); err != nil {
		t.Fatal(err)
	}

	store := cache.NewMemory(cache.Options{})
	getenv, environ := env()
	d := New(Options{Store: withRemote(store, open(true)), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	for range 2 {
		got := build(t, d, req, api.StatusMiss)
		if got.HitTier != "" {
			t.Fatalf("a hit of tier %s from a damaged remote entry", got.HitTier)
		}
		if err := store.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
}
