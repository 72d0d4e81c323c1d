package jit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// A header created beside a source, where a quoted include looks first,
// shadows the runtime's header of that name: the next build is a miss that
// names it, and compiles other outputs; once it is removed the old variant
// matches again.
func TestHeaderBesideSourceIsAMiss(t *testing.T) {
	dir, req := copyExamples(t)
	d := newDriver(t, cache.NewMemory(cache.Options{}))
	first := build(t, d, req, api.StatusMiss)
	build(t, d, req, api.StatusHit)

	rt, err := os.ReadFile(filepath.Join(dir, "toolchain", "runtime", "include", "ptojit_sim.h"))
	if err != nil {
		t.Fatal(err)
	}
	shadow := filepath.Join(dir, "vadd", "ptojit_sim.h")
	marked := append(bytes.Clone(rt), "\n__attribute__((used)) static const char marker[] = \"x\";\n"...)
	if err := os.WriteFile(shadow, marked, 0o644); err != nil {
		t.Fatal(err)
	}
	r := build(t, d, req, api.StatusMiss)
	if !strings.Contains(r.MissReason, "ptojit_sim.h") || !strings.Contains(r.MissReason, "appeared") {
		t.Errorf("miss reason %q does not name the new header", r.MissReason)
	}
	if r.Hashid == first.Hashid {
		t.Errorf("the shadowing header did not change the callable: the compile did not use it")
	}
	build(t, d, req, api.StatusHit)

	if err := os.Remove(shadow); err != nil {
		t.Fatal(err)
	}
	back := build(t, d, req, api.StatusHit)
	if back.Hashid != first.Hashid {
		t.Errorf("hashid %s after removing the header, want the first build's %s", back.Hashid, first.Hashid)
	}
}

// A system header was absent from the -I directories searched before the
// system ones: a file of its name appearing in the runtime's include
// directory is a miss that names it.
func TestHeaderShadowingASystemHeaderIsAMiss(t *testing.T) {
	dir, req := copyExamples(t)
	d := newDriver(t, cache.NewMemory(cache.Options{}))
	build(t, d, req, api.StatusMiss)
	build(t, d, req, api.StatusHit)
	shadow := filepath.Join(dir, "toolchain", "runtime", "include", "string.h")
	if err := os.WriteFile(shadow, []byte("#include_next <string.h>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := build(t, d, req, api.StatusMiss)
	if !strings.Contains(r.MissReason, "string.h") {
		t.Errorf("miss reason %q does not name the new header", r.MissReason)
	}
	if err := os.Remove(shadow); err != nil {
		t.Fatal(err)
	}
	build(t, d, req, api.StatusHit)
}

func TestParseSearchList(t *testing.T) {
	out := "ignoring nonexistent directory \"/x\"\n#include \"...\" search starts here:\n#include <...> search starts here:\n /usr/lib/gcc/x86_64-linux-gnu/13/include\n /usr/local/include\n /usr/include\nEnd of search list.\n # 0 \"/dev/null\"\n"
	got := parseSearchList([]byte(out))
	want := []string{"/usr/lib/gcc/x86_64-linux-gnu/13/include", "/usr/local/include", "/usr/include"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAbsentCandidates(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(a, "present.h"), nil, 0o644)
	deps := []string{filepath.Join(b, "x.h"), filepath.Join(b, "present.h"), filepath.Join(a, "y.h")}
	got := absentCandidates([]string{a, b}, deps)
	if len(got) != 1 || got[0] != filepath.Join(a, "x.h") {
		t.Errorf("got %q, want only %s", got, filepath.Join(a, "x.h"))
	}
	// A header whose name starts with two dots is inside its directory.
	got = absentCandidates([]string{a, b}, []string{filepath.Join(b, "..x.h")})
	if len(got) != 1 || got[0] != filepath.Join(a, "..x.h") {
		t.Errorf("got %q, want only %s", got, filepath.Join(a, "..x.h"))
	}
}
