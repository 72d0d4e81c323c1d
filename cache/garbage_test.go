package cache

import (
	"slices"
	"testing"
)

// TestGarbageMark: a deletion leaves the garbage mark in the database, so
// that a Trim of a store opened later compacts; a Trim's compaction
// removes it, and a store opened without it has nothing to compact.
func TestGarbageMark(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	if b.garbage || hasGarbageMark(b.db) {
		t.Fatal("a new store has garbage")
	}
	d := blob("a", 9000)
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, key("a")); err != nil {
		t.Fatal(err)
	}
	if !hasGarbageMark(b.db) {
		t.Fatal("a deletion left no garbage mark")
	}
	b.Close()
	b = open(t, dir, Options{})
	if !b.garbage {
		t.Fatal("a store reopened after a deletion does not know of its garbage")
	}
	if _, err := Trim(ctx, b, 1<<40); err != nil {
		t.Fatal(err)
	}
	if b.garbage || hasGarbageMark(b.db) {
		t.Fatal("Trim compacted and left the garbage mark")
	}
	b.Close()
	b = open(t, dir, Options{})
	defer b.Close()
	if b.garbage {
		t.Fatal("a store reopened after a compaction has garbage")
	}
}

// TestIndexOrphans: the orphan set kept as entries come and go names
// exactly the blobs no entry names and no Put pinned.
func TestIndexOrphans(t *testing.T) {
	x := newIndex()
	scan := func() []Digest {
		var ds []Digest
		for d, b := range x.blobs {
			if b.refs <= 0 && x.pins[d] == 0 {
				ds = append(ds, d)
			}
		}
		slices.SortFunc(ds, func(a, b Digest) int { return slices.Compare(a[:], b[:]) })
		return ds
	}
	check := func(step string) {
		t.Helper()
		if got, want := x.orphans(), scan(); !slices.Equal(got, want) {
			t.Fatalf("%s: orphans %x, want %x", step, got, want)
		}
	}
	a, b, c := Digest{1}, Digest{2}, Digest{3}
	x.addBlob(c, 5)
	check("unnamed blob")
	x.addEntry(&Entry{Key: Key{1}, Outputs: []Output{{Digest: a, Size: 1}, {Digest: b, Size: 2}}})
	x.addEntry(&Entry{Key: Key{2}, Outputs: []Output{{Digest: b, Size: 2}, {Digest: c, Size: 5}}})
	check("two entries")
	x.pin([]Digest{a})
	x.removeEntry(Key{1})
	check("a pinned, its entry removed")
	x.unpin([]Digest{a})
	check("a unpinned")
	x.addEntry(&Entry{Key: Key{2}, Outputs: []Output{{Digest: a, Size: 1}}})
	check("entry 2 replaced")
	x.removeBlob(b)
	x.removeBlob(c)
	check("blobs removed")
}
