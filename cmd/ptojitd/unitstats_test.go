package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// cache stats shows the units request misses found and compiled apart
// from the request hits and misses, and --json has them as unit_hits and
// unit_misses.
func TestCacheStatsUnits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := cache.Key{0x77}
	e := &cache.Entry{Key: k, Record: []byte("r"), Outputs: []cache.Output{{Name: "unit.o"}}, Meta: map[string]string{"kind": "unit"}}
	if err := s.Put(ctx, e, cache.Readers([]byte("object"))); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Count(ctx, cache.EventUnitMiss, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PTOJIT_CACHE_DIR": dir}
	r := runCache(t, ctx, env, "cache", "stats")
	if r.code != 0 || !strings.Contains(r.stdout, "units            2 found, 1 compiled") || !strings.Contains(r.stdout, "hits             0 (local 0") {
		t.Fatalf("cache stats: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCache(t, ctx, env, "cache", "stats", "--json")
	var st struct {
		Hits       int64 `json:"hits"`
		UnitHits   int64 `json:"unit_hits"`
		UnitMisses int64 `json:"unit_misses"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Hits != 0 || st.UnitHits != 2 || st.UnitMisses != 1 {
		t.Fatalf("cache stats --json: %+v (%v)\n%s", st, err, r.stdout)
	}
}
