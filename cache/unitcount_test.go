package cache

import (
	"context"
	"path/filepath"
	"testing"
)

// The Get of a compiled unit's object entry (kind "unit") counts a unit
// hit and EventUnitMiss a unit miss, apart from the request counters; a
// Badger store keeps both across a reopen and ZeroCounts zeroes them.
func TestCountUnits(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "c")
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]testStore{"memory": NewMemory(Options{}), "badger": b} {
		k := Key{7}
		e := &Entry{Key: k, Record: []byte("r"), Outputs: []Output{{Name: "unit.o"}}, Meta: map[string]string{"kind": "unit"}}
		if err := s.Put(ctx, e, Readers([]byte("object"))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for range 3 {
			if _, err := s.Get(ctx, k); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for range 2 {
			if err := s.Count(ctx, EventUnitMiss, ""); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		st, err := ReadStats(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if st.UnitHits != 3 || st.UnitMisses != 2 || st.Hits|st.Misses|st.Damaged|st.Errors|st.RemoteHits|st.TimeSaved|st.BytesServed != 0 {
			t.Errorf("%s: stats %+v, want 3 unit hits, 2 unit misses and no request counts", name, st)
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
	if st.UnitHits != 3 || st.UnitMisses != 2 {
		t.Errorf("after a reopen: %d unit hits, %d unit misses; want 3 and 2", st.UnitHits, st.UnitMisses)
	}
	if err := b.ZeroCounts(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ = ReadStats(ctx, b); st.UnitHits|st.UnitMisses != 0 {
		t.Errorf("after ZeroCounts: %d unit hits, %d unit misses; want 0", st.UnitHits, st.UnitMisses)
	}
}
