package cache

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// A request's limit bounds the shared store for that request only, and
// a read-only request changes nothing.
func TestLimitedAppliesTheRequestsLimit(t *testing.T) {
	ctx := context.Background()
	shared := NewMemory(Options{})
	put := func(s Shared, k byte, n int) error {
		e := &Entry{Key: Key{k}, Outputs: []Output{{Name: "out"}}}
		return s.Put(ctx, e, Readers(bytes.Repeat([]byte{k}, n)))
	}
	big := NewLimited(shared, 1<<20, false)
	for k := range byte(7) {
		if err := put(big, k+1, 100<<10); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := ReadStats(ctx, shared); st.Bytes != 700<<10 {
		t.Fatalf("a 1 MiB cap trimmed 700 KiB: %+v", st)
	}
	small := NewLimited(shared, 200<<10, false)
	if err := put(small, 9, 100<<10); err != nil {
		t.Fatal(err)
	}
	st, _ := ReadStats(ctx, shared)
	if st.Bytes > 200<<10 {
		t.Fatalf("a 200 KiB request left %d bytes", st.Bytes)
	}
	if _, err := shared.Entry(ctx, Key{9}); err != nil {
		t.Fatalf("the trim evicted the entry just stored: %v", err)
	}
	if s, _ := ReadStats(ctx, small); s.MaxBytes != 200<<10 {
		t.Fatalf("stats show cap %d", s.MaxBytes)
	}
	if err := put(small, 10, 300<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an entry over the request's cap: %v", err)
	}
	ro := NewLimited(shared, 0, true)
	if err := put(ro, 11, 10); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only put: %v", err)
	}
	if _, err := Trim(ctx, ro, 0); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only trim: %v", err)
	}
	if err := Clear(ctx, ro); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only clear: %v", err)
	}
}
