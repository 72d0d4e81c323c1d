package cache

import (
	"errors"
	"testing"
)

func TestMemoryCrashBetweenBlobsAndEntry(t *testing.T) {
	m := NewMemory(Options{})
	crash := errors.New("crash")
	m.testHookAfterBlobs = func() error { return crash }
	d := blob("m", 300)
	if err := m.Put(ctx, entry(key("a"), 1), Readers(d)); !errors.Is(err, crash) {
		t.Fatalf("Put = %v", err)
	}
	if _, err := m.Get(ctx, key("a")); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get after a crashed Put = %v", err)
	}
	if s, _ := ReadStats(ctx, m); s.Entries != 0 || s.Bytes != 300 {
		t.Fatalf("stats = %+v, want an orphan blob", s)
	}
	r, err := Trim(ctx, m, DefaultMaxBytes)
	if err != nil || r.Orphans != 1 || r.BytesAfter != 0 || len(m.blobs) != 0 {
		t.Fatalf("Trim = %+v, %v", r, err)
	}
}
