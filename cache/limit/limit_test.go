package limit

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// A request's limit bounds the shared store for that request only, and
// a read-only request changes nothing.
func TestLimitedAppliesTheRequestsLimit(t *testing.T) {
	ctx := context.Background()
	shared := cache.NewMemory(cache.Options{})
	put := func(s Shared, k byte, n int) error {
		e := &cache.Entry{Key: cache.Key{k}, Outputs: []cache.Output{{Name: "out"}}}
		return s.Put(ctx, e, cache.Readers(bytes.Repeat([]byte{k}, n)))
	}
	big := New(shared, 1<<20, false)
	for k := range byte(7) {
		if err := put(big, k+1, 100<<10); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := cache.ReadStats(ctx, shared); st.Bytes != 700<<10 {
		t.Fatalf("a 1 MiB cap trimmed 700 KiB: %+v", st)
	}
	small := New(shared, 200<<10, false)
	if err := put(small, 9, 100<<10); err != nil {
		t.Fatal(err)
	}
	st, _ := cache.ReadStats(ctx, shared)
	if st.Bytes > 200<<10 {
		t.Fatalf("a 200 KiB request left %d bytes", st.Bytes)
	}
	if _, err := shared.Entry(ctx, cache.Key{9}); err != nil {
		t.Fatalf("the trim evicted the entry just stored: %v", err)
	}
	if s, _ := cache.ReadStats(ctx, small); s.MaxBytes != 200<<10 {
		t.Fatalf("stats show cap %d", s.MaxBytes)
	}
	if err := put(small, 10, 300<<10); !errors.Is(err, cache.ErrTooLarge) {
		t.Fatalf("an entry over the request's cap: %v", err)
	}
	ro := New(shared, 0, true)
	if err := put(ro, 11, 10); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatalf("read-only put: %v", err)
	}
	if _, err := cache.Trim(ctx, ro, 0); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatalf("read-only trim: %v", err)
	}
	if err := cache.Clear(ctx, ro); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatalf("read-only clear: %v", err)
	}
}
