package jit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// TestWriteThenBuild is a frontend that writes its sources and a header and
// asks for the build at once, 20 times: every build is a miss that
// publishes, then a hit.
func TestWriteThenBuild(t *testing.T) {
	dir, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	k := filepath.Join(dir, "vadd", "kernel_add.c")
	hdr := filepath.Join(dir, "vadd", "vadd.h")
	kb, _ := os.ReadFile(k)
	hb, _ := os.ReadFile(hdr)
	const runs = 20
	cached := 0
	for i := range runs {
		mark := fmt.Sprintf("\n/* run %d */\n", i)
		if err := os.WriteFile(hdr, append(hb[:len(hb):len(hb)], mark...), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(k, append(kb[:len(kb):len(kb)], mark...), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := d.Build(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != api.StatusMiss {
			t.Errorf("run %d: first build %s (unavailable %q), want miss", i, r.Status, r.Unavailable)
			continue
		}
		checkOutputs(t, r)
		if r2 := build(t, d, req, api.StatusHit); r2.Hashid != r.Hashid {
			t.Errorf("run %d: hit hashid %s, miss %s", i, r2.Hashid, r.Hashid)
			continue
		}
		cached++
	}
	t.Logf("%d of %d write-then-build runs were miss then hit", cached, runs)
}

// TestRewriteHeaderThenBuild rewrites only a header (in place: no source
// and no directory changes) and builds at once: the manifest names the
// header, so the build waits out the clock and publishes.
func TestRewriteHeaderThenBuild(t *testing.T) {
	dir, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	build(t, d, req, api.StatusMiss)
	hdr := filepath.Join(dir, "vadd", "vadd.h")
	hb, _ := os.ReadFile(hdr)
	for i := range 5 {
		if err := os.WriteFile(hdr, append(hb[:len(hb):len(hb)], fmt.Sprintf("\n/* edit %d */\n", i)...), 0o644); err != nil {
			t.Fatal(err)
		}
		build(t, d, req, api.StatusMiss)
		build(t, d, req, api.StatusHit)
	}
}

// TestHeaderChangedByCompiler runs a compiler wrapper that appends to a
// header after the real compiler read it, while the build runs: the build
// is never published, however fresh the inputs were before it.
func TestHeaderChangedByCompiler(t *testing.T) {
	realCC, err := exec.LookPath("gcc")
	if err != nil {
		realCC, err = exec.LookPath("cc")
	}
	if err != nil {
		t.Skip("no gcc or cc")
	}
	dir, req := copyExamples(t)
	hdr := filepath.Join(dir, "vadd", "vadd.h")
	wrapper := filepath.Join(t.TempDir(), "cc")
	script := fmt.Sprintf("#!/bin/sh\n%q \"$@\"\nrc=$?\nprintf '/* edited while compiling */\\n' >> %q\nexit $rc\n", realCC, hdr)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store, "CC="+wrapper)
	for i := range 3 {
		// Fresh inputs, as a frontend writes them, or settled ones.
		k := filepath.Join(dir, "vadd", "kernel_add.c")
		kb, _ := os.ReadFile(k)
		if err := os.WriteFile(k, append(kb, fmt.Sprintf("\n/* run %d */\n", i)...), 0o644); err != nil {
			t.Fatal(err)
		}
		r := build(t, d, req, api.StatusUncached)
		if len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "header vadd.h changed during the compile") {
			t.Errorf("run %d: unavailable %q", i, r.Unavailable)
		}
	}
	// No unit that read the header is stored, and no request; a unit
	// that did not read it is.
	if kinds := storedKinds(t, store); kinds["result"] != 0 || kinds[PackKind] != 0 {
		t.Errorf("entries by kind %v: want no result and no pack entry", kinds)
	}
	if n := unitsReading(t, store, "vadd.h"); n != 0 {
		t.Errorf("%d unit entries read vadd.h: want none", n)
	}
}
