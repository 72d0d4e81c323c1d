package jit

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// TestSameObjectRepacksNothing: a comment appended to kernel_add.c
// compiles that kernel again, to the same object, so the pack entry keyed
// by the objects holds the callable: nothing is packed and the hashid is
// the first build's. In verify mode the callable is packed again and
// compared with the pack entry's.
func TestSameObjectRepacksNothing(t *testing.T) {
	dir, req := copyExamples(t)
	log := filepath.Join(t.TempDir(), "log")
	cc := unitLogger(t, log)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store, "CC="+cc)
	first := build(t, d, req, api.StatusMiss)
	if got := compiled(t, log); len(got) != 3 {
		t.Fatalf("first build compiled %q, want 3 units", got)
	}

	add := filepath.Join(dir, "vadd", "kernel_add.c")
	appendTo(t, add, "/* a comment */\n")
	before := packs.Load()
	r := build(t, d, req, api.StatusMiss)
	if got := compiled(t, log); !slices.Equal(got, []string{"kernel_add.c"}) {
		t.Fatalf("a comment in kernel_add.c compiled %q, want only kernel_add.c", got)
	}
	if n := packs.Load() - before; n != 0 {
		t.Errorf("a kernel compiled to the same object packed %d callables, want 0", n)
	}
	if r.Hashid != first.Hashid {
		t.Errorf("hashid %s after a comment, want %s", r.Hashid, first.Hashid)
	}

	appendTo(t, add, "/* another comment */\n")
	getenv, environ := env("CC=" + cc)
	verify := New(Options{Store: store, Verify: true, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	before = packs.Load()
	r = build(t, verify, req, api.StatusMiss)
	if got := compiled(t, log); len(got) != 3 {
		t.Fatalf("verify mode compiled %q, want 3 units", got)
	}
	if n := packs.Load() - before; n != 1 {
		t.Errorf("verify mode packed %d callables, want 1", n)
	}
	if r.Hashid != first.Hashid {
		t.Errorf("verify mode: hashid %s, want %s", r.Hashid, first.Hashid)
	}
}

// TestPackEntryChangesWithShape: a request of the same objects and another
// func id packs its own callable, with its own hashid.
func TestPackEntryChangesWithShape(t *testing.T) {
	_, req := copyExamples(t)
	d := newDriver(t, cache.NewMemory(cache.Options{}))
	first := build(t, d, req, api.StatusMiss)
	other := *req
	other.Kernels = slices.Clone(req.Kernels)
	other.Kernels[1].FuncID = 9
	other.OutputDir = filepath.Join(t.TempDir(), "out")
	before := packs.Load()
	r := build(t, d, &other, api.StatusMiss)
	if n := packs.Load() - before; n != 1 {
		t.Errorf("another func id packed %d callables, want 1", n)
	}
	if r.Hashid == first.Hashid {
		t.Errorf("another func id gave the same hashid %s", r.Hashid)
	}
}

// TestVerifyComparesPackEntry: verify mode packs the callable again and a
// pack entry whose callable differs from the fresh pack is a
// *VerifyError naming the callable, not a callable served.
func TestVerifyComparesPackEntry(t *testing.T) {
	dir, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	plain, verify, _ := drivers(t, store)
	build(t, plain, req, api.StatusMiss)
	var pk cache.Key
	err := cache.ListRecent(context.Background(), store, 0, func(e *cache.Entry) error {
		if e.Meta["kind"] == PackKind {
			pk = e.Key
		}
		return nil
	})
	if err != nil || pk == (cache.Key{}) {
		t.Fatalf("no pack entry listed (%v)", err)
	}
	h, err := store.Get(context.Background(), pk)
	if err != nil {
		t.Fatal(err)
	}
	data, err := h.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	plant(t, store, &storedResult{Entry: h.Entry, Data: data}, CallableName)
	appendTo(t, filepath.Join(dir, "vadd", "kernel_add.c"), "/* a comment */\n")
	_, err = verify.Build(context.Background(), req)
	var ve *VerifyError
	if !errors.As(err, &ve) || len(ve.Diffs) != 1 || ve.Diffs[0].Name != CallableName {
		t.Fatalf("verify over a planted pack entry: %v, want a *VerifyError naming %s", err, CallableName)
	}
}
