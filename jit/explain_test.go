package jit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
	"github.com/ptojit/ptojit/toolchain"
)

// appendTo appends a line to the file p.
func appendTo(t *testing.T, p, line string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(b, line...), 0o644); err != nil {
		t.Fatal(err)
	}
	// The edit is in the past for the next build, which then publishes.
	if err := fixture.Settle(p); err != nil {
		t.Fatal(err)
	}
}

// checkChanged fails unless r is a miss explained against an earlier build
// with exactly one changed input, named name (key diff's form) and input
// (the one-line form).
func checkChanged(t *testing.T, r *api.Response, name, input string) {
	t.Helper()
	p := r.ChangedSince
	if p == nil || p.First || p.Note != "" || p.Key == "" {
		t.Fatalf("changed since %+v, want an earlier build", p)
	}
	if len(r.Changed) != 1 || r.Changed[0].Name != name || r.Changed[0].Input != input {
		t.Fatalf("changed %+v, want exactly %s (%s)", r.Changed, name, input)
	}
	if r.Changed[0].Was == r.Changed[0].Now {
		t.Fatalf("changed %+v: the values before and now are equal", r.Changed[0])
	}
}

// Each miss names exactly the input that changed since the request's
// previous build: one source, one header (same key, another header
// variant), one semantic variable, one toolchain file; the first build
// says it has no predecessor, and Why gives the same answer after the
// build as the miss did.
func TestMissSaysWhatChanged(t *testing.T) {
	ctx := context.Background()
	dir, req := copyExamples(t)
	req.File = filepath.Join(dir, "vadd", "request.json")
	req.BaseDir = dir
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)

	r := build(t, d, req, api.StatusMiss)
	if p := r.ChangedSince; p == nil || !p.First || p.Request != "vadd/request.json" || len(r.Changed) != 0 {
		t.Fatalf("first build: changed since %+v, changed %+v, want the first build of vadd/request.json", p, r.Changed)
	}
	if w, err := d.Why(ctx, req); err != nil || !w.Predecessor.First {
		t.Fatalf("why after the first build: %+v, %v; want first", w, err)
	}
	if r := build(t, d, req, api.StatusHit); r.ChangedSince != nil || r.Changed != nil {
		t.Fatalf("a hit explains itself as a miss: %+v %+v", r.ChangedSince, r.Changed)
	}

	appendTo(t, filepath.Join(dir, "vadd", "kernel_scale.c"), "/* edited */\n")
	r = build(t, d, req, api.StatusMiss)
	checkChanged(t, r, "sources.kernel.1", "sources[kernel_scale.c]")
	w, err := d.Why(ctx, req)
	if err != nil || w.Key != r.Key || len(w.Changed) != 1 || w.Changed[0] != r.Changed[0] || w.Predecessor.Key != r.ChangedSince.Key {
		t.Fatalf("why after the source edit: %+v, %v; want the miss's %+v", w, err, r.Changed)
	}

	appendTo(t, filepath.Join(dir, "vadd", "vadd.h"), "/* edited */\n")
	before := r.Key
	r = build(t, d, req, api.StatusMiss)
	if r.Key != before {
		t.Fatalf("a header edit changed the key")
	}
	checkChanged(t, r, "header vadd/vadd.h", "header vadd/vadd.h")
	if w, err := d.Why(ctx, req); err != nil || len(w.Changed) != 1 || w.Changed[0].Name != "header vadd/vadd.h" || w.Predecessor.Key != before {
		t.Fatalf("why after the header edit: %+v, %v", w, err)
	}

	d = newDriver(t, store, "PYPTO_OPT_LEVEL=3")
	r = build(t, d, req, api.StatusMiss)
	checkChanged(t, r, "environment.PYPTO_OPT_LEVEL", "env PYPTO_OPT_LEVEL")

	appendTo(t, filepath.Join(dir, "toolchain", "pypto", "pypto", "jit.py"), "# edited\n")
	getenv, environ := env("PYPTO_OPT_LEVEL=3")
	d = New(Options{Store: store, Identities: toolchain.NewInstallationIdentityCache(toolchain.Options{}), Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	r = build(t, d, req, api.StatusMiss)
	checkChanged(t, r, "toolchain.pypto", "toolchain pypto")
}

// A miss whose earlier build's key record is gone says so instead of
// listing nothing; a request without name or file is not explained.
func TestMissWithoutPredecessorRecord(t *testing.T) {
	ctx := context.Background()
	dir, req := copyExamples(t)
	req.File = filepath.Join(dir, "vadd", "request.json")
	req.BaseDir = dir
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	r := build(t, d, req, api.StatusMiss)
	if err := store.Delete(ctx, responseKey(t, r)); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(dir, "vadd", "kernel_add.c"), "/* edited */\n")
	r = build(t, d, req, api.StatusMiss)
	if p := r.ChangedSince; p == nil || p.Note == "" || len(r.Changed) != 0 {
		t.Fatalf("changed since %+v, changed %+v, want a note that the record is gone", p, r.Changed)
	}

	anon := *req
	anon.File = ""
	appendTo(t, filepath.Join(dir, "vadd", "kernel_add.c"), "/* again */\n")
	if r := build(t, d, &anon, api.StatusMiss); r.ChangedSince != nil {
		t.Fatalf("a request without identity: changed since %+v", r.ChangedSince)
	}
	if _, err := d.Why(ctx, &anon); err != ErrNoRequestIdentity {
		t.Fatalf("why of a request without identity: %v", err)
	}
}
