package cache

import (
	"context"
	"sync"
	"testing"
)

// TestStatsDuringFlush: Stats never misses counts that a concurrent flush
// has taken from memory but not yet committed (a frontend saw "0 hits"
// after three hits when the periodic flush ran at the same moment).
func TestStatsDuringFlush(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := key("stats")
	if err := b.Put(ctx, entry(k, 1), Readers([]byte("abc"))); err != nil {
		t.Fatal(err)
	}
	var hits int64
	for round := range 50 {
		if _, err := b.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
		hits++
		var wg sync.WaitGroup
		wg.Go(func() { _ = b.flush() })
		st, err := ReadStats(ctx, b)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if st.Hits != hits {
			t.Fatalf("round %d: Stats says %d hits, want %d", round, st.Hits, hits)
		}
	}
}
