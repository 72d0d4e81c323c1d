package cache

import (
	"context"
	"testing"
)

// Verify reports a manifest entry whose meta is not JSON, or that has
// neither that meta nor one output (the manifest's blob), as a bad entry
// and removes it; a readable manifest of either form is kept.
func TestVerifyReportsDamagedManifest(t *testing.T) {
	ctx := context.Background()
	b, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for name, s := range map[string]testStore{"memory": NewMemory(Options{}), "badger": b} {
		t.Run(name, func(t *testing.T) {
			bad, good := Key{1}, Key{2}
			for k, meta := range map[Key]string{bad: `{"variants": [`, good: `{"variants": []}`} {
				if err := s.Put(ctx, &Entry{Key: k, Record: []byte("r"), Meta: map[string]string{"kind": "manifest", "manifest": meta}}, nil); err != nil {
					t.Fatal(err)
				}
			}
			blob, empty := Key{3}, Key{4}
			if err := s.Put(ctx, &Entry{Key: blob, Record: []byte("r"), Outputs: []Output{{Name: "manifest.json"}}, Meta: map[string]string{"kind": "manifest"}},
				Readers([]byte(`{"variants": []}`))); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, &Entry{Key: empty, Record: []byte("r"), Meta: map[string]string{"kind": "manifest"}}, nil); err != nil {
				t.Fatal(err)
			}
			r, err := Verify(ctx, s, false)
			if err != nil {
				t.Fatal(err)
			}
			_, bad1 := r.BadEntries[bad]
			_, bad2 := r.BadEntries[empty]
			if !bad1 || !bad2 || len(r.BadEntries) != 2 {
				t.Errorf("bad entries %v, want the two damaged manifests", r.BadEntries)
			}
			for _, k := range []Key{bad, empty} {
				if _, err := s.Entry(ctx, k); err == nil {
					t.Errorf("the damaged manifest %x was not removed", k[:1])
				}
			}
			for _, k := range []Key{good, blob} {
				if _, err := s.Entry(ctx, k); err != nil {
					t.Errorf("the readable manifest %x: %v", k[:1], err)
				}
			}
		})
	}
}

// Verify reports a latest-build record (kind "latest") whose key or
// result meta is not a key as a bad entry and removes it; an intact one is
// kept.
func TestVerifyReportsDamagedLatestRecord(t *testing.T) {
	ctx := context.Background()
	b, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k := Key{7}.String()
	for name, s := range map[string]testStore{"memory": NewMemory(Options{}), "badger": b} {
		t.Run(name, func(t *testing.T) {
			recs := map[Key]map[string]string{
				{1}: {"kind": "latest", "key": k, "result": "zz"},
				{2}: {"kind": "latest", "result": k},
				{3}: {"kind": "latest", "key": k, "result": k},
			}
			for key, meta := range recs {
				if err := s.Put(ctx, &Entry{Key: key, Record: []byte("r"), Meta: meta}, nil); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Verify(ctx, s, false)
			if err != nil {
				t.Fatal(err)
			}
			_, bad1 := r.BadEntries[Key{1}]
			_, bad2 := r.BadEntries[Key{2}]
			if !bad1 || !bad2 || len(r.BadEntries) != 2 {
				t.Errorf("bad entries %v, want the two damaged records", r.BadEntries)
			}
			for _, key := range []Key{{1}, {2}} {
				if _, err := s.Entry(ctx, key); err == nil {
					t.Errorf("the damaged record %x was not removed", key[:1])
				}
			}
			if _, err := s.Entry(ctx, Key{3}); err != nil {
				t.Errorf("the intact record: %v", err)
			}
		})
	}
}

// The Get of a manifest entry reads a build key's manifest, not a build's
// outputs: it counts no hit; damage it meets is counted as damage.
func TestManifestGetCountsNoHit(t *testing.T) {
	ctx := context.Background()
	s := NewMemory(Options{})
	k := Key{5}
	if err := s.Put(ctx, &Entry{Key: k, Record: []byte("r"), Outputs: []Output{{Name: "manifest.json"}}, Meta: map[string]string{"kind": "manifest"}},
		Readers([]byte(`{"variants": []}`))); err != nil {
		t.Fatal(err)
	}
	h, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Read(0); err != nil {
		t.Fatal(err)
	}
	if st, err := ReadStats(ctx, s); err != nil || st.Hits != 0 || st.Misses != 0 || st.Damaged != 0 {
		t.Errorf("stats %+v (%v) after reading a manifest, want nothing counted", st, err)
	}
}
