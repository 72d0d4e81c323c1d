package jit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// headerSequence builds the example, edits vadd.h, reverts it, and then
// creates a string.h beside the sources, which vadd.h includes as
// <string.h> or, with quoted, as "string.h". It returns the last build's
// response and the explanation of key why after it.
func headerSequence(t *testing.T, quoted bool, want api.Status) (*api.Response, *Why) {
	t.Helper()
	ctx := context.Background()
	dir, req := copyExamples(t)
	req.File = filepath.Join(dir, "vadd", "request.json")
	req.BaseDir = dir
	vh := filepath.Join(dir, "vadd", "vadd.h")
	orig, err := os.ReadFile(vh)
	if err != nil {
		t.Fatal(err)
	}
	if quoted {
		if !bytes.Contains(orig, []byte("#include <string.h>")) {
			t.Fatal("vadd.h does not include <string.h>")
		}
		orig = bytes.Replace(orig, []byte("#include <string.h>"), []byte(`#include "string.h"`), 1)
		writeSettled(t, vh, orig)
	}
	d := newDriver(t, cache.NewMemory(cache.Options{}))
	build(t, d, req, api.StatusMiss)
	appendTo(t, vh, "/* edited */\n")
	r := build(t, d, req, api.StatusMiss)
	checkChanged(t, r, "header vadd/vadd.h", "header vadd/vadd.h")
	writeSettled(t, vh, orig)
	build(t, d, req, api.StatusHit)

	writeSettled(t, filepath.Join(dir, "vadd", "string.h"), []byte("#include_next <string.h>\n"))
	r = build(t, d, req, want)
	w, err := d.Why(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

func writeSettled(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fixture.Settle(p); err != nil {
		t.Fatal(err)
	}
}

// An angle include never searches the including file's directory: a
// string.h created beside vadd.h, which includes <string.h>, is no
// change: after an edit and its revert, the build is a hit.
func TestAngleIncludeIgnoresHeaderBesideSource(t *testing.T) {
	r, w := headerSequence(t, false, api.StatusHit)
	if r.MissReason != "" || len(r.Changed) != 0 {
		t.Errorf("hit with miss reason %q, changed %+v", r.MissReason, r.Changed)
	}
	// key why explains the hit against the build before it, the edit's:
	// the revert of vadd.h is what changed, and string.h is no change.
	for _, c := range w.Changed {
		if strings.Contains(c.Name, "string.h") {
			t.Errorf("key why names %s: %+v", c.Name, w.Changed)
		}
	}
}

// A quoted include searches the including file's directory first: the
// same string.h is a miss, and the miss line and key why name string.h,
// not the reverted vadd.h edit.
func TestQuotedIncludeHeaderBesideSourceIsAMiss(t *testing.T) {
	r, w := headerSequence(t, true, api.StatusMiss)
	if !strings.Contains(r.MissReason, "string.h") || strings.Contains(r.MissReason, "vadd.h") {
		t.Errorf("miss reason %q, want string.h named and not vadd.h", r.MissReason)
	}
	for _, c := range r.Changed {
		if strings.Contains(c.Name, "vadd.h") {
			t.Errorf("miss names %s: %+v", c.Name, r.Changed)
		}
	}
	// Per unit: the kernels that read vadd.h name string.h too.
	unitNamed := false
	for _, u := range r.Units {
		if strings.Contains(u.Reason, "vadd.h") {
			t.Errorf("unit %+v names vadd.h", u)
		}
		unitNamed = unitNamed || strings.Contains(u.Reason, "string.h")
	}
	if !unitNamed {
		t.Errorf("no unit names string.h: %+v", r.Units)
	}
	named := false
	for _, c := range w.Changed {
		if strings.Contains(c.Name, "vadd.h") {
			t.Errorf("key why names %s: %+v", c.Name, w.Changed)
		}
		if strings.Contains(c.Name, "string.h") {
			named = true
			if c.Was != "" || !strings.HasPrefix(c.Now, `"`) {
				t.Errorf("key why %+v: want no value before and a JSON string now", c)
			}
		}
	}
	if !named {
		t.Errorf("key why %+v does not name string.h", w.Changed)
	}
}
