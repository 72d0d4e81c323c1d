package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
)

// testStore is a memory store holding n entries of one 100-byte output
// each.
func testStore(t *testing.T, n int) *cache.Memory {
	t.Helper()
	m := cache.NewMemory(cache.Options{})
	for i := range n {
		k := cache.Key(sha256.Sum256([]byte{byte(i)}))
		e := &cache.Entry{Key: k, Outputs: []cache.Output{{Name: "o", Mode: 0o644}}}
		if err := m.Put(context.Background(), e, cache.Readers(bytes.Repeat([]byte{byte(i)}, 100))); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestMaintenanceReports runs verify, trim and clear on a store and
// checks both forms of each report.
func TestMaintenanceReports(t *testing.T) {
	ctx := context.Background()
	m := testStore(t, 3)
	v, err := RunVerify(ctx, m, false, false)
	if err != nil || !v.OK || v.Entries != 3 {
		t.Fatalf("RunVerify = %+v, %v", v, err)
	}
	var b strings.Builder
	if err := v.WriteText(&b); err != nil || !strings.Contains(b.String(), "verified 3 entries") || !strings.Contains(b.String(), "no damage found") {
		t.Fatalf("verify text %q, %v", b.String(), err)
	}
	tr, err := RunTrim(ctx, m, 150)
	if err != nil || len(tr.Evicted) != 2 || tr.MaxBytes != 150 {
		t.Fatalf("RunTrim = %+v, %v", tr, err)
	}
	c, err := RunClear(ctx, m)
	if err != nil || c.Entries != 1 || c.Bytes != 100 {
		t.Fatalf("RunClear = %+v, %v", c, err)
	}
	// The document cache clear --json printed before it had a type.
	if j, _ := json.Marshal(c); string(j) != `{"bytes":100,"entries":1}` {
		t.Errorf("clear JSON %s", j)
	}
	if errors.Is(err, ErrWipe) {
		t.Error("a clear that worked matches ErrWipe")
	}
}

// TestStatsReport checks the stats report's derived figures and that its
// text names each remote tier.
func TestStatsReport(t *testing.T) {
	st := &cache.Stats{Entries: 2, Bytes: 200, Hits: 3, Misses: 1, TimeSaved: int64(2 * time.Second)}
	rs := []remote.Stats{{Target: "redis://a"}, {Target: "s3://b"}}
	r := NewStats("/c", st, rs, time.Now())
	if r.Derived.HitRate == nil || *r.Derived.HitRate != 0.75 || r.TimeSavedSeconds != 2 || r.Remote == nil || len(r.Remotes) != 2 {
		t.Fatalf("NewStats = %+v", r)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cache directory  /c", "hit rate", "75.0%", "redis://a", "s3://b"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stats text lacks %q:\n%s", want, b.String())
		}
	}
	if one := NewStats("/c", st, rs[:1], time.Now()); one.Remotes != nil {
		t.Errorf("one tier: Remotes = %v, want only Remote", one.Remotes)
	}
}
