package jit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/test/fixture"
	"github.com/ptojit/ptojit/toolchain"
)

// copyExamples copies testdata/examples (the vadd example and its fixture
// toolchain) into a temporary directory and returns the request there.
func copyExamples(t *testing.T) (dir string, req *api.Request) {
	t.Helper()
	dir = t.TempDir()
	if err := fixture.CopyExamples(dir); err != nil {
		t.Fatal(err)
	}
	return dir, loadRequest(t, filepath.Join(dir, "vadd", "request.json"))
}

func loadRequest(t testing.TB, path string) *api.Request {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	req, err := api.ParseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Resolve(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	// These tests were written for the content policy, and many run a
	// shell wrapper as CC, which the build policy (the default, as
	// PyPTO's) refuses: the example's request names no policy, so name it
	// here (policy_test.go tests the default).
	if req.Toolchain.Policy == "" {
		req.Toolchain.Policy = "content"
	}
	return req
}

// env is a clean build environment: PATH only, plus vars.
func env(vars ...string) (func(string) string, []string) {
	environ := append([]string{"PATH=" + os.Getenv("PATH")}, vars...)
	return func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}, environ
}

// identities is shared by the tests: reading the host compiler's
// installation is the slow part of an identity.
var identities = toolchain.NewInstallationIdentityCache(toolchain.Options{})

func newDriver(t *testing.T, store testStore, vars ...string) *Driver {
	getenv, environ := env(vars...)
	return New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
}

func build(t *testing.T, d *Driver, req *api.Request, want api.Status) *api.Response {
	t.Helper()
	r, err := d.Build(context.Background(), req)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if r.Status != want {
		t.Fatalf("status %s (miss reason %q, unavailable %q), want %s", r.Status, r.MissReason, r.Unavailable, want)
	}
	checkOutputs(t, r)
	return r
}

// checkOutputs proves every output in the output directory has the digest
// the response names, and that the callable parses and has the hashid.
func checkOutputs(t *testing.T, r *api.Response) {
	t.Helper()
	if len(r.Outputs) == 0 {
		t.Fatal("no outputs")
	}
	for _, o := range r.Outputs {
		b, err := os.ReadFile(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != o.Digest || int64(len(b)) != o.Size {
			t.Errorf("output %s does not match its digest", o.Name)
		}
	}
	blob, err := os.ReadFile(r.Callable)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.ParseChipCallable(blob); err != nil {
		t.Fatalf("callable: %v", err)
	}
	h, err := registry.ChipHashid("a2a3sim", "tensormap_and_ringbuffer", blob)
	if err != nil || h.String() != r.Hashid {
		t.Errorf("hashid %s, want %s (%v)", r.Hashid, h, err)
	}
}

func TestBuildMissThenHit(t *testing.T) {
	dir, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	first := build(t, d, req, api.StatusMiss)
	second := build(t, d, req, api.StatusHit)
	if first.Key != second.Key || first.Hashid != second.Hashid || len(first.Key) != 64 {
		t.Errorf("keys %s/%s hashids %s/%s", first.Key, second.Key, first.Hashid, second.Hashid)
	}
	if second.Timings.Compile != 0 {
		t.Errorf("a hit spent %v ms compiling", second.Timings.Compile)
	}

	// Editing an included header that is no key input: a miss that names
	// the header, then a hit again; restoring it finds the first variant.
	hdr := filepath.Join(dir, "vadd", "vadd.h")
	orig, _ := os.ReadFile(hdr)
	if err := fixture.WriteFile(hdr, append(slices.Clone(orig), "\n/* edited */\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := build(t, d, req, api.StatusMiss)
	if r.Key != first.Key || !strings.Contains(r.MissReason, "vadd.h") {
		t.Errorf("header edit: key %s (want %s), reason %q", r.Key, first.Key, r.MissReason)
	}
	build(t, d, req, api.StatusHit)
	if err := fixture.WriteFile(hdr, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := build(t, d, req, api.StatusHit); r.Hashid != first.Hashid {
		t.Errorf("restored header: hashid %s, want %s", r.Hashid, first.Hashid)
	}

	// Editing a kernel changes the key.
	k := filepath.Join(dir, "vadd", "kernel_scale.c")
	b, _ := os.ReadFile(k)
	fixture.WriteFile(k, append(b, "\n"...), 0o644)
	if r := build(t, d, req, api.StatusMiss); r.Key == first.Key {
		t.Error("kernel edit kept the key")
	}
	fixture.WriteFile(k, b, 0o644)

	// An option changes the key; a semantic variable too.
	req2 := *req
	req2.Options = []byte(`{"opt_level": 3}`)
	if r := build(t, d, &req2, api.StatusMiss); r.Key == first.Key {
		t.Error("option change kept the key")
	}
	if r := build(t, newDriver(t, store, "PYPTO_OPT_LEVEL=3"), req, api.StatusMiss); r.Key == first.Key {
		t.Error("semantic variable kept the key")
	}
	if r := build(t, newDriver(t, store, "PYPTO_CACHE_EPOCH=2"), req, api.StatusMiss); r.Key == first.Key {
		t.Error("epoch kept the key")
	}
	build(t, d, req, api.StatusHit)
}

func TestFreshRequest(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	build(t, newDriver(t, store), req, api.StatusMiss)
	r := build(t, newDriver(t, store, "PYPTO_JIT_FORCE_RECOMPILE=1"), req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "PYPTO_JIT_FORCE_RECOMPILE") {
		t.Errorf("unavailable %q", r.Unavailable)
	}
	if r.Timings.Lookup != 0 || r.Timings.Compile == 0 {
		t.Errorf("fresh request looked up (%v ms) or did not compile (%v ms)", r.Timings.Lookup, r.Timings.Compile)
	}
	// Counted under the variable, not under the reason's whole text.
	st, _ := cache.ReadStats(context.Background(), store)
	if want := map[string]int64{"PYPTO_JIT_FORCE_RECOMPILE is set": 1}; !maps.Equal(st.UncachedReasons, want) {
		t.Errorf("uncached reasons %v, want %v", st.UncachedReasons, want)
	}
}

func TestUnavailableIdentity(t *testing.T) {
	_, req := copyExamples(t)
	req.Toolchain.PtoasRoot = ""
	req.Toolchain.PyptoRoot = filepath.Join(filepath.Dir(req.Toolchain.PyptoRoot), "missing")
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	for range 2 {
		r := build(t, d, req, api.StatusUncached)
		if r.Key != "" || len(r.Unavailable) != 2 {
			t.Fatalf("key %q, unavailable %q: want no key and two reasons", r.Key, r.Unavailable)
		}
	}
	st, _ := cache.ReadStats(context.Background(), store)
	if st.Entries != 0 || st.Uncached != 2 {
		t.Errorf("stats %+v: want no entry and two uncached builds", st)
	}
	// Counted under the first unavailable component's name.
	if want := map[string]int64{"pypto": 2}; !maps.Equal(st.UncachedReasons, want) {
		t.Errorf("uncached reasons %v, want %v (unavailable %q)", st.UncachedReasons, want, build(t, d, req, api.StatusUncached).Unavailable)
	}
}

func TestSourceChangedDuringCompile(t *testing.T) {
	dir, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	getenv, environ := env()
	k := filepath.Join(dir, "vadd", "kernel_add.c")
	d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir(), BeforeRevalidate: func() {
		b, _ := os.ReadFile(k)
		os.WriteFile(k, append(b, "\n/* changed while compiling */\n"...), 0o644)
	}})
	r := build(t, d, req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "kernel.0 changed during the compile") {
		t.Errorf("unavailable %q", r.Unavailable)
	}
	// The units, each compiled and stored before the edit, are entries
	// of the sources they read; the request is not.
	if kinds := storedKinds(t, store); kinds["result"] != 0 || kinds[PackKind] != 0 || kinds[UnitKind] != len(req.Kernels)+1 {
		t.Errorf("entries by kind %v: want no result and no pack entry, and %d units", kinds, len(req.Kernels)+1)
	}
	// The edited kernel misses; the others are found.
	r = build(t, newDriver(t, store), req, api.StatusMiss)
	if compiled := compiledUnits(r); len(compiled) != 1 || !strings.Contains(compiled[0], "kernel_add.c") {
		t.Errorf("after the edit, compiled %q: want the edited kernel only", compiled)
	}
}

// storedKinds counts the entries of store by their kind.
func storedKinds(t *testing.T, store cache.Core) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	if err := cache.List(context.Background(), store, func(e *cache.Entry) error {
		kinds[e.Meta["kind"]]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return kinds
}

// unitsReading counts the unit entries of store whose header variant
// names a header of file name name (the record writes strings in hex).
func unitsReading(t *testing.T, store cache.Core, name string) int {
	t.Helper()
	n := 0
	if err := cache.List(context.Background(), store, func(e *cache.Entry) error {
		if e.Meta["kind"] == UnitKind && bytes.Contains(e.Record, []byte(hex.EncodeToString([]byte("/"+name)))) {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCorruptBlobIsAMiss(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	first := build(t, d, req, api.StatusMiss)
	var digest [32]byte
	for _, o := range first.Outputs {
		if o.Name == CallableName {
			hex.Decode(digest[:], []byte(o.Digest))
		}
	}
	if err := cache.FaultInjector(store).CorruptBlob(context.Background(), digest); err != nil {
		t.Fatal(err)
	}
	// A hit whose output is in place reads no blob (the file has the
	// output's digest); one whose output is gone reads it and meets the
	// damage.
	if err := os.Remove(filepath.Join(req.OutputDir, CallableName)); err != nil {
		t.Fatal(err)
	}
	r := build(t, d, req, api.StatusMiss)
	if r.MissReason == "" || r.Hashid != first.Hashid {
		t.Errorf("miss reason %q, hashid %s want %s", r.MissReason, r.Hashid, first.Hashid)
	}
	build(t, d, req, api.StatusHit)
}

func TestRequestErrors(t *testing.T) {
	_, req := copyExamples(t)
	d := newDriver(t, nil)
	bad := *req
	bad.Kernels = slices.Clone(req.Kernels)
	bad.Kernels[1].Source += ".missing"
	r, err := d.Build(context.Background(), &bad)
	if err == nil || r.Status != api.StatusError || !strings.Contains(err.Error(), "kernels[1].source") {
		t.Errorf("missing source: %v, %s", err, r.Status)
	}
	bad = *req
	bad.OutputDir = "out"
	if _, err := d.Build(context.Background(), &bad); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Errorf("relative output dir: %v", err)
	}
	// A compile error names the unit and carries the compiler's message.
	dir := t.TempDir()
	src := filepath.Join(dir, "broken.c")
	fixture.WriteFile(src, []byte("int ptojit_kernel(void) { return undeclared; }\n"), 0o644)
	bad = *req
	bad.Kernels = []api.Kernel{{FuncID: 7, Source: src}}
	_, err = d.Build(context.Background(), &bad)
	if err == nil || !strings.Contains(err.Error(), "compile kernel.7 (broken.c)") || !strings.Contains(err.Error(), "undeclared") {
		t.Errorf("compile error: %v", err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte("gcc")) && !strings.Contains(err.Error(), "cc") {
		t.Errorf("compile error names no tool: %v", err)
	}
}

// A header edited while the compilers ran is not published: its digest
// after the compile may not be what the compiler read.
func TestHeaderChangedDuringCompile(t *testing.T) {
	dir, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	getenv, environ := env()
	hdr := filepath.Join(dir, "vadd", "vadd.h")
	d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir(), BeforeRevalidate: func() {
		b, _ := os.ReadFile(hdr)
		os.WriteFile(hdr, append(b, "\n/* changed while compiling */\n"...), 0o644)
	}})
	r := build(t, d, req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "header vadd.h changed during the compile") {
		t.Errorf("unavailable %q", r.Unavailable)
	}
	// The units were stored before the edit, with the digest of the
	// header they read; the request is not.
	if kinds := storedKinds(t, store); kinds["result"] != 0 || kinds[PackKind] != 0 {
		t.Errorf("entries by kind %v: want no result and no pack entry", kinds)
	}
	// Once the edit is in the past, the next build publishes.
	if err := fixture.Settle(hdr); err != nil {
		t.Fatal(err)
	}
	build(t, newDriver(t, store), req, api.StatusMiss)
}

// Hits keep the manifest in use (the store's Entry is a use), so that
// least-recently-used trimming keeps the manifests of keys in use.
func TestHitsUseTheManifest(t *testing.T) {
	_, req := copyExamples(t)
	now := time.Now()
	store := cache.NewMemory(cache.Options{Now: func() time.Time { return now }})
	d := newDriver(t, store)
	r := build(t, d, req, api.StatusMiss)
	var key cache.Key
	hex.Decode(key[:], []byte(r.Key))
	now = now.Add(time.Hour)
	build(t, d, req, api.StatusHit)
	var m *cache.Entry
	cache.List(context.Background(), store, func(e *cache.Entry) error {
		if e.Key == key {
			m = e
		}
		return nil
	})
	if m == nil || !m.LastUsed.Equal(now) {
		t.Errorf("manifest %+v: want last use %v", m, now)
	}
}

// testStore is what the tests use of a store of package cache.
type testStore interface {
	cache.Core
	cache.EntryReader
	cache.Deleter
	cache.EventCounter
}

// compiledUnits names the units build response r compiled.
func compiledUnits(r *api.Response) []string {
	var out []string
	for _, u := range r.Units {
		if u.Status == unitCompiled || u.Status == unitShared {
			out = append(out, u.Name)
		}
	}
	return out
}
