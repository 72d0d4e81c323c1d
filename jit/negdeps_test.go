package jit

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	for _, h := range deps {
		os.WriteFile(h, nil, 0o644) // read, and including nothing
	}
	// A compile that started well after present.h was created: it was
	// there when the compiler searched a, and skipped.
	later := time.Now().Add(2 * stableAge)
	got, appeared := absentCandidates([]string{a, b}, deps, "", later)
	if len(got) != 1 || got[0] != filepath.Join(a, "x.h") || len(appeared) != 0 {
		t.Errorf("got %q and appeared %q, want only %s absent", got, appeared, filepath.Join(a, "x.h"))
	}
	// A compile that started before present.h was created may have
	// searched a before it appeared.
	got, appeared = absentCandidates([]string{a, b}, deps, "", time.Now().Add(-time.Minute))
	if len(got) != 1 || len(appeared) != 1 || appeared[0] != filepath.Join(a, "present.h") {
		t.Errorf("got %q and appeared %q, want %s appeared", got, appeared, filepath.Join(a, "present.h"))
	}
	// A candidate the compiler read (an #include_next chain) is not one
	// that appeared unseen.
	_, appeared = absentCandidates([]string{a, b}, append(deps, filepath.Join(a, "present.h")), "", time.Now().Add(-time.Minute))
	if len(appeared) != 0 {
		t.Errorf("appeared %q, want none: the compiler read the candidate", appeared)
	}
	// A header whose name starts with two dots is inside its directory.
	got, _ = absentCandidates([]string{a, b}, []string{filepath.Join(b, "..x.h")}, "", later)
	if len(got) != 1 || got[0] != filepath.Join(a, "..x.h") {
		t.Errorf("got %q, want only %s", got, filepath.Join(a, "..x.h"))
	}
}

// shadowHeader is the runtime's ptojit_sim.h with a marker, so that a
// compile that reads it produces other outputs.
func shadowHeader(t *testing.T, dir string) []byte {
	t.Helper()
	rt, err := os.ReadFile(filepath.Join(dir, "toolchain", "runtime", "include", "ptojit_sim.h"))
	if err != nil {
		t.Fatal(err)
	}
	return append(bytes.Clone(rt), "\n__attribute__((used)) static const char marker[] = \"x\";\n"...)
}

// daemonDriver returns a copy of the examples, its request, and a driver
// that checks through the listings of a new watcher, as a daemon's does.
func daemonDriver(t *testing.T) (dir string, req *api.Request, w *Watcher, l *DirListings, d *Driver) {
	t.Helper()
	dir, req = copyExamples(t)
	w, l = newListings(t, new(countMemo))
	getenv, environ := env()
	d = New(Options{Store: cache.NewMemory(cache.Options{}), Identities: identities, Getenv: getenv, Environ: environ,
		TempDir: t.TempDir(), Listings: l})
	return dir, req, w, l, d
}

// A daemon's driver answers the searched-and-absent checks from its
// watcher's listings: a header created beside the source after a hit is
// still a miss naming it, and its removal a hit again.
func TestListingsSeeAHeaderBesideTheSource(t *testing.T) {
	dir, req, w, l, d := daemonDriver(t)
	first := build(t, d, req, api.StatusMiss)
	build(t, d, req, api.StatusHit)
	if l.Len() == 0 {
		t.Fatalf("the hit listed no directory: the listings were not used")
	}
	shadow := filepath.Join(dir, "vadd", "ptojit_sim.h")
	if err := os.WriteFile(shadow, shadowHeader(t, dir), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Sync() // as the daemon does before every request
	r := build(t, d, req, api.StatusMiss)
	if !strings.Contains(r.MissReason, "ptojit_sim.h") || !strings.Contains(r.MissReason, "appeared") {
		t.Errorf("miss reason %q does not name the new header", r.MissReason)
	}
	if err := os.Remove(shadow); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	if back := build(t, d, req, api.StatusHit); back.Hashid != first.Hashid {
		t.Errorf("hashid %s after removing the header, want the first build's %s", back.Hashid, first.Hashid)
	}
}

// A header that appears in a searched directory while the compilers run,
// after they searched there (the test hook creates it once they all
// finished), is in neither the headers nor the absent paths
// of that compile: the build answers but publishes nothing, and the next
// build compiles with the header.
func TestHeaderAppearingDuringTheCompileIsNotPublished(t *testing.T) {
	dir, req := copyExamples(t)
	d := newDriver(t, cache.NewMemory(cache.Options{}))
	shadow := filepath.Join(dir, "vadd", "ptojit_sim.h")
	marked := shadowHeader(t, dir)
	unitsCompiled = func() {
		if err := os.WriteFile(shadow, marked, 0o644); err != nil {
			t.Error(err)
		}
	}
	r := build(t, d, req, api.StatusUncached)
	unitsCompiled = nil
	if len(r.Unavailable) == 0 || !strings.Contains(r.Unavailable[0], "ptojit_sim.h") || !strings.Contains(r.Unavailable[0], "while the compilers ran") {
		t.Errorf("unavailable %q, want the header that appeared during the compile", r.Unavailable)
	}
	with := build(t, d, req, api.StatusMiss)
	if with.Hashid == r.Hashid {
		t.Errorf("the build after the header appeared did not compile with it")
	}
	build(t, d, req, api.StatusHit)
}

// A candidate in the directory only quoted includes search is recorded
// only for a name a file there includes in the quoted form, or for any
// name when a directive's form is not known.
func TestAbsentCandidatesByIncludeForm(t *testing.T) {
	src, sys := t.TempDir(), t.TempDir()
	source := filepath.Join(src, "k.c")
	deps := []string{source, filepath.Join(sys, "string.h"), filepath.Join(sys, "q.h")}
	for _, h := range deps[1:] {
		if err := os.WriteFile(h, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(2 * stableAge)
	for _, c := range []struct {
		text string
		want []string
	}{
		{"#include <string.h>\n#include \"q.h\"\n", []string{filepath.Join(src, "q.h")}},
		{"# include <string.h>\n%:include \"./q.h\"\n", []string{filepath.Join(src, "q.h")}},
		{"#include \\\n \"string.h\"\n", []string{filepath.Join(src, "string.h")}},
		{"#define H \"string.h\"\n#include <q.h>\n", nil},
		{"#include H\n", []string{filepath.Join(src, "q.h"), filepath.Join(src, "string.h")}},
		{"/* c */ #include <string.h>\n", []string{filepath.Join(src, "q.h"), filepath.Join(src, "string.h")}},
		{"#if __has_include(\"x.h\")\n#endif\n", []string{filepath.Join(src, "q.h"), filepath.Join(src, "string.h")}},
		{"#include \"../" + filepath.Base(src) + "/q.h\"\n", []string{filepath.Join(src, "q.h"), filepath.Join(src, "string.h")}},
		{"// include \"string.h\" in a comment\n", []string{filepath.Join(src, "string.h")}},
	} {
		if err := os.WriteFile(source, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := absentCandidates([]string{src, sys}, deps, src, later)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: absent %q, want %q", c.text, got, c.want)
		}
		// Named by -I, the directory is searched for every name.
		if got, _ := absentCandidates([]string{src, sys}, deps, "", later); len(got) != 2 {
			t.Errorf("%q: absent %q without the quote-only directory, want both", c.text, got)
		}
	}
}

func TestQuoteOnlyDir(t *testing.T) {
	u := unit{source: "/s/k.c"}
	if got := quoteOnlyDir(u, "/w"); got != "/s" {
		t.Errorf("got %q, want /s", got)
	}
	u.recipe.includes = []string{"/s/"}
	if got := quoteOnlyDir(u, "/w"); got != "" {
		t.Errorf("got %q with -I /s, want none", got)
	}
	u.recipe.includes, u.recipe.quote = nil, "/s"
	if got := quoteOnlyDir(u, "/w"); got != "" {
		t.Errorf("got %q with -iquote /s, want none", got)
	}
	u.recipe.quote, u.recipe.forced = "", []string{"f.h"}
	if got := quoteOnlyDir(u, "/s"); got != "" {
		t.Errorf("got %q with a forced header name and /s the working directory, want none", got)
	}
}

// A quoted include in a header looks in that header's own directory
// first, wherever the header is: vadd/sub/extra.h's "ptojit_sim.h" is
// looked for as vadd/sub/ptojit_sim.h before the runtime's. A file
// created there is a miss that names it, and the callable changes.
func TestQuotedIncludeInAHeaderSearchesItsDirectory(t *testing.T) {
	dir, req := copyExamples(t)
	sub := filepath.Join(dir, "vadd", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "extra.h"), []byte("#include \"ptojit_sim.h\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(dir, "vadd", "kernel_add.c")
	kb, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k, append([]byte("#include \"sub/extra.h\"\n"), kb...), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, cache.NewMemory(cache.Options{}))
	first := build(t, d, req, api.StatusMiss)
	build(t, d, req, api.StatusHit)

	shadow := filepath.Join(sub, "ptojit_sim.h")
	if err := os.WriteFile(shadow, []byte("__attribute__((used)) static const char marker[] = \"x\";\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := build(t, d, req, api.StatusMiss)
	if !strings.Contains(r.MissReason, "ptojit_sim.h") {
		t.Errorf("miss reason %q does not name the new header", r.MissReason)
	}
	if r.Hashid == first.Hashid {
		t.Errorf("the header beside extra.h did not change the callable: the compile did not use it")
	}
	if err := os.Remove(shadow); err != nil {
		t.Fatal(err)
	}
	if back := build(t, d, req, api.StatusHit); back.Hashid != first.Hashid {
		t.Errorf("hashid %s after removing the header, want the first build's %s", back.Hashid, first.Hashid)
	}
}
