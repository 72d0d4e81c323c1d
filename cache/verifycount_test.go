package cache

import (
	"context"
	"path/filepath"
	"testing"
)

// A verify mismatch counted with Count is in Stats as VerifyMismatch, apart
// from every other counter, and a Badger store keeps it across a reopen.
func TestCountVerifyMismatch(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "c")
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]testStore{"memory": NewMemory(Options{}), "badger": b} {
		for range 2 {
			if err := s.Count(ctx, EventVerifyMismatch, ""); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		st, err := ReadStats(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if st.VerifyMismatch != 2 || st.Errors|st.Damaged|st.Corrupt|st.Hits|st.Misses|st.Uncached != 0 {
			t.Errorf("%s: stats %+v, want 2 verify mismatches and nothing else", name, st)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, dir, Options{})
	st, err := ReadStats(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if st.VerifyMismatch != 2 {
		t.Errorf("after a reopen: %d verify mismatches, want 2", st.VerifyMismatch)
	}
}
