package cache

import (
	"context"
	"testing"
	"time"
)

// After ZeroCounts, three hits and a miss are a 75% hit rate, and the time
// saved is three times the entry's stored compile time; a remote hit is a
// hit, not a miss. The counters and the time of zeroing persist in a
// Badger store across Close and Open.
func TestStatsValue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := NewMemory(Options{})
	for name, s := range map[string]testStore{"memory": mem, "badger": b} {
		t.Run(name, func(t *testing.T) {
			k := Key{1}
			e := &Entry{Key: k, Outputs: []Output{{Name: "a"}}, CompileTime: 1500 * time.Millisecond}
			if err := s.Put(ctx, e, Readers([]byte("12345"))); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, k); err != nil {
				t.Fatal(err)
			}
			_, _ = s.Get(ctx, Key{2})
			before := time.Now()
			if err := s.ZeroCounts(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := ReadStats(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if st.Hits != 0 || st.Misses != 0 || st.TimeSaved != 0 || st.BytesServed != 0 || st.Entries != 1 {
				t.Fatalf("after zeroing: %+v, want no counts and the entry kept", st)
			}
			if at := time.Unix(0, st.ZeroedAt); at.Before(before.Add(-time.Second)) || at.After(time.Now()) {
				t.Fatalf("zeroed at %v, want about %v", at, before)
			}
			for range 3 {
				if _, err := s.Get(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Get(ctx, Key{2}); err == nil {
				t.Fatal("a missing key hit")
			}
			st, _ = ReadStats(ctx, s)
			if r, ok := st.HitRate(); !ok || r != 0.75 {
				t.Fatalf("hit rate %v (%v), want 0.75: %+v", r, ok, st)
			}
			if st.TimeSaved != int64(3*e.CompileTime) || st.BytesServed != 15 {
				t.Fatalf("time saved %v, bytes served %d; want %v and 15", time.Duration(st.TimeSaved), st.BytesServed, 3*e.CompileTime)
			}
			if err := s.CountRemoteHit(ctx, e, false); err != nil {
				t.Fatal(err)
			}
			st, _ = ReadStats(ctx, s)
			if st.Misses != 0 || st.RemoteHits != 1 || st.TimeSaved != int64(4*e.CompileTime) {
				t.Fatalf("after a remote hit: %+v, want the miss turned into a remote hit", st)
			}
			// A remote hit served from its copy in the store: the miss
			// and the Get of the copy are one remote hit.
			if _, err := s.Get(ctx, Key{2}); err == nil {
				t.Fatal("a missing key hit")
			}
			if _, err := s.Get(ctx, k); err != nil {
				t.Fatal(err)
			}
			if err := s.CountRemoteHit(ctx, e, true); err != nil {
				t.Fatal(err)
			}
			st, _ = ReadStats(ctx, s)
			if st.Misses != 0 || st.Hits != 3 || st.RemoteHits != 2 || st.TimeSaved != int64(5*e.CompileTime) || st.BytesServed != 20 {
				t.Fatalf("after a remote hit served from the store: %+v, want a miss and a hit turned into one remote hit", st)
			}
		})
	}
	want, _ := ReadStats(ctx, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, _ := ReadStats(ctx, b)
	if got.Hits != want.Hits || got.RemoteHits != want.RemoteHits || got.TimeSaved != want.TimeSaved || got.BytesServed != want.BytesServed || got.ZeroedAt != want.ZeroedAt {
		t.Fatalf("after reopening: %+v, want %+v", got, want)
	}
}
