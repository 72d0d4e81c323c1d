package cache

import (
	"context"
	"testing"
)

// Verify reports a manifest entry whose meta is not JSON as a bad entry
// and removes it; a readable manifest is kept.
func TestVerifyReportsDamagedManifest(t *testing.T) {
	ctx := context.Background()
	b, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for name, s := range map[string]Store{"memory": NewMemory(Options{}), "badger": b} {
		t.Run(name, func(t *testing.T) {
			bad, good := Key{1}, Key{2}
			for k, meta := range map[Key]string{bad: `{"variants": [`, good: `{"variants": []}`} {
				if err := s.Put(ctx, &Entry{Key: k, Record: []byte("r"), Meta: map[string]string{"kind": "manifest", "manifest": meta}}, nil); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := r.BadEntries[bad]; !ok || len(r.BadEntries) != 1 {
				t.Errorf("bad entries %v, want the damaged manifest only", r.BadEntries)
			}
			if _, err := s.Entry(ctx, bad); err == nil {
				t.Error("the damaged manifest was not removed")
			}
			if _, err := s.Entry(ctx, good); err != nil {
				t.Errorf("the readable manifest: %v", err)
			}
		})
	}
}
