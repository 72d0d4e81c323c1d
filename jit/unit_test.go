package jit

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// unitLogger writes a C compiler wrapper that logs the source of every
// shared-object compile (its last argument) to log.
func unitLogger(t *testing.T, log string) string {
	t.Helper()
	cc := filepath.Join(t.TempDir(), "cc")
	script := "#!/bin/sh\nfor a; do last=$a; done\ncase \" $* \" in\n*\" -shared \"*) echo \"${last##*/}\" >> \"" + log + "\" ;;\nesac\nexec gcc \"$@\"\n"
	if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cc
}

// compiled returns the sources log names, sorted, and empties it.
func compiled(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(log)
	out := strings.Fields(string(b))
	slices.Sort(out)
	return out
}

// unitStatuses returns "name status reason" for every unit of r.
func unitStatuses(r *api.Response) []string {
	var out []string
	for _, u := range r.Units {
		out = append(out, strings.TrimSpace(u.Name+" "+u.Status+" "+u.Reason))
	}
	return out
}

// TestOneEditedKernelCompilesOneKernel is the example with a counting
// wrapper on CC: an edited kernel_add.c compiles exactly that kernel and
// gives the hashid a fresh build on an empty cache gives; reverted, the
// request hits with no compile; an edited vadd.h compiles exactly the two
// kernels that include it.
func TestOneEditedKernelCompilesOneKernel(t *testing.T) {
	dir, req := copyExamples(t)
	req.File = filepath.Join(dir, "vadd", "request.json") // its builds are recorded
	log := filepath.Join(t.TempDir(), "log")
	cc := unitLogger(t, log)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store, "CC="+cc)
	first := build(t, d, req, api.StatusMiss)
	if got := compiled(t, log); len(got) != 3 {
		t.Fatalf("first build compiled %q, want 3 units", got)
	}
	wantUnitCounts(t, store, "first build", 0, 1, 0, 3)
	if got, want := UnitsLine(first.Units), "3 of 3 units compiled"; !strings.HasPrefix(got, want) {
		t.Errorf("units line %q, want %q...", got, want)
	}

	add := filepath.Join(dir, "vadd", "kernel_add.c")
	orig, err := os.ReadFile(add)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, add, "int kernel_add_edited(void) { return 1; }\n")
	r := build(t, d, req, api.StatusMiss)
	if got := compiled(t, log); !slices.Equal(got, []string{"kernel_add.c"}) {
		t.Fatalf("an edited kernel_add.c compiled %q, want only kernel_add.c", got)
	}
	want := []string{"orchestration orchestration.c hit", "kernels[0] kernel_add.c compiled source changed", "kernels[1] kernel_scale.c hit"}
	if got := unitStatuses(r); !slices.Equal(got, want) {
		t.Errorf("units %q, want %q", got, want)
	}
	if got, want := UnitsLine(r.Units), "1 of 3 units compiled (kernels[0] kernel_add.c: source changed)"; got != want {
		t.Errorf("units line %q, want %q", got, want)
	}
	wantUnitCounts(t, store, "kernel_add.c edited", 0, 2, 2, 4)
	fresh := build(t, newDriver(t, cache.NewMemory(cache.Options{}), "CC="+cc), req, api.StatusMiss)
	if n := len(compiled(t, log)); n != 3 {
		t.Fatalf("a build on an empty cache compiled %d units, want 3", n)
	}
	if r.Hashid != fresh.Hashid || r.Hashid == first.Hashid {
		t.Fatalf("hashid %s after the edit, %s fresh on an empty cache, %s before the edit", r.Hashid, fresh.Hashid, first.Hashid)
	}

	if err := os.WriteFile(add, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := build(t, d, req, api.StatusHit); r.Hashid != first.Hashid {
		t.Fatalf("reverted: hashid %s, want %s", r.Hashid, first.Hashid)
	}
	if got := compiled(t, log); len(got) != 0 {
		t.Fatalf("reverted: compiled %q, want nothing", got)
	}
	wantUnitCounts(t, store, "reverted", 1, 2, 2, 4)

	appendTo(t, filepath.Join(dir, "vadd", "vadd.h"), "/* edited */\n")
	r = build(t, d, req, api.StatusMiss)
	if got := compiled(t, log); !slices.Equal(got, []string{"kernel_add.c", "kernel_scale.c"}) {
		t.Fatalf("an edited vadd.h compiled %q, want the two kernels that include it", got)
	}
	for _, u := range r.Units {
		if u.Status == unitCompiled && !strings.Contains(u.Reason, "vadd.h") {
			t.Errorf("unit %s compiled for %q, want the header named", u.Name, u.Reason)
		}
	}
	wantUnitCounts(t, store, "vadd.h edited", 1, 3, 3, 6)
}

// wantUnitCounts checks the request hits and misses and the unit hits
// and misses s counted.
func wantUnitCounts(t *testing.T, s cache.Core, when string, hits, misses, unitHits, unitMisses int64) {
	t.Helper()
	st, err := cache.ReadStats(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hits != hits || st.Misses != misses || st.UnitHits != unitHits || st.UnitMisses != unitMisses {
		t.Errorf("%s: %d hits, %d misses, %d unit hits, %d unit misses; want %d, %d, %d, %d",
			when, st.Hits, st.Misses, st.UnitHits, st.UnitMisses, hits, misses, unitHits, unitMisses)
	}
}

// TestKernelSharedAcrossRequests: a second request with the same kernel
// (another func id, another signature) and the same orchestration source
// finds both objects in their entries and compiles nothing.
func TestKernelSharedAcrossRequests(t *testing.T) {
	_, req := copyExamples(t)
	log := filepath.Join(t.TempDir(), "log")
	d := newDriver(t, cache.NewMemory(cache.Options{}), "CC="+unitLogger(t, log))
	build(t, d, req, api.StatusMiss)
	compiled(t, log)
	other := *req
	other.Kernels = []api.Kernel{req.Kernels[0]}
	other.Kernels[0].FuncID = 7
	other.OutputDir = filepath.Join(t.TempDir(), "out")
	r := build(t, d, &other, api.StatusMiss)
	if got := compiled(t, log); len(got) != 0 {
		t.Fatalf("the second request compiled %q, want nothing", got)
	}
	if got, want := UnitsLine(r.Units), "0 of 2 units compiled"; got != want {
		t.Errorf("units line %q, want %q", got, want)
	}
}

// TestOldSchemaRecord: a key record of schema 1 (written before unit
// entries) is refused with an *OldSchemaError that says so, not misread.
func TestOldSchemaRecord(t *testing.T) {
	old := inventory.T(inventory.Str(keyTag), inventory.IntOf(1), inventory.Dict{"platform": inventory.Str("a2a3sim")})
	_, err := FlattenRecord(old)
	var oe *OldSchemaError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "earlier ptojit") {
		t.Fatalf("FlattenRecord of a schema 1 record: %v, want an *OldSchemaError", err)
	}
	if _, err := DiffRecords(old, old); !errors.As(err, &oe) {
		t.Fatalf("DiffRecords: %v, want an *OldSchemaError", err)
	}
}

// TestDamagedUnitObject: a unit's object damaged in the store is a miss
// of that unit alone: it compiles again, the others' objects are read
// from their entries, and the outputs are those of the first build.
func TestDamagedUnitObject(t *testing.T) {
	_, req := copyExamples(t)
	log := filepath.Join(t.TempDir(), "log")
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store, "CC="+unitLogger(t, log))
	first := build(t, d, req, api.StatusMiss)
	compiled(t, log)
	var digest [32]byte
	for _, o := range first.Outputs {
		if o.Name == KernelName(0) {
			hex.Decode(digest[:], []byte(o.Digest))
		}
	}
	if err := cache.FaultInjector(store).CorruptBlob(context.Background(), digest); err != nil {
		t.Fatal(err)
	}
	req.Options = []byte(`{"opt_level": 3}`) // a request miss; no unit's key changes
	r := build(t, d, req, api.StatusMiss)
	if got := compiled(t, log); !slices.Equal(got, []string{"kernel_add.c"}) {
		t.Fatalf("with kernel_add.c's object damaged the build compiled %q, want only kernel_add.c", got)
	}
	if r.Hashid != first.Hashid {
		t.Fatalf("hashid %s, want the first build's %s", r.Hashid, first.Hashid)
	}
	if u := r.Units[1]; u.Status != unitCompiled || !strings.Contains(u.Reason, cache.ReasonDamaged) {
		t.Errorf("unit %s: %s (%s), want compiled for damage", u.Name, u.Status, u.Reason)
	}
	if r := build(t, d, req, api.StatusHit); r.Hashid != first.Hashid {
		t.Fatalf("then a hit: hashid %s, want %s", r.Hashid, first.Hashid)
	}
}

// sharedFlights returns how many unit flights at least two builds wait
// for.
func sharedFlights() int {
	unitFlight.mu.Lock()
	defer unitFlight.mu.Unlock()
	n := 0
	for _, f := range unitFlight.m {
		if f.waiters >= 2 {
			n++
		}
	}
	return n
}

// TestConcurrentRequestsShareUnitCompiles: two requests built at once
// that share the orchestration and a kernel compile each shared unit
// once; the second request reports them shared. The compiler waits for a
// gate the test opens once both builds wait for the shared flights.
func TestConcurrentRequestsShareUnitCompiles(t *testing.T) {
	_, req := copyExamples(t)
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "gate")
	cc := filepath.Join(dir, "cc")
	script := "#!/bin/sh\nfor a; do last=$a; done\ncase \" $* \" in\n*\" -shared \"*) echo \"${last##*/}\" >> \"" + log + "\"\n" +
		"  while [ ! -e \"" + gate + "\" ]; do sleep 0.01; done ;;\nesac\nexec gcc \"$@\"\n"
	if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, cache.NewMemory(cache.Options{}), "CC="+cc)
	other := *req
	other.Kernels = []api.Kernel{req.Kernels[0]}
	other.Kernels[0].FuncID = 7
	other.OutputDir = filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		r   *api.Response
		err error
	}
	done := make(chan result, 2)
	for _, r := range []*api.Request{req, &other} {
		go func() {
			resp, err := d.Build(ctx, r)
			done <- result{resp, err}
		}()
	}
	open := func() {
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer open() // a failed wait leaves no compiler waiting
	for waitUntil := time.Now().Add(20 * time.Second); sharedFlights() < 2; {
		if time.Now().After(waitUntil) {
			t.Fatal("in 20 s the two builds never waited for the same two unit flights")
		}
		time.Sleep(5 * time.Millisecond)
	}
	open()
	var shared int
	for range 2 {
		res := <-done
		if res.err != nil {
			t.Fatal(res.err)
		}
		for _, u := range res.r.Units {
			if u.Status == unitShared {
				shared++
			}
		}
	}
	if got := compiled(t, log); !slices.Equal(got, []string{"kernel_add.c", "kernel_scale.c", "orchestration.c"}) {
		t.Fatalf("compiled %q, want each unit once", got)
	}
	if shared != 2 {
		t.Errorf("%d units reported shared, want 2 (the orchestration and kernel_add.c of one build)", shared)
	}
}

// TestUnitFoundOnceItsFlightEnded: a request that needs a unit after the
// flight of another request compiled it, while that request has not yet
// published its own outputs, finds the unit's entry and compiles nothing
// (the flight stored it before it ended). The second request is built
// from the first one's BeforeRevalidate hook, which runs between the two.
func TestUnitFoundOnceItsFlightEnded(t *testing.T) {
	_, req := copyExamples(t)
	log := filepath.Join(t.TempDir(), "log")
	store := cache.NewMemory(cache.Options{})
	cc := "CC=" + unitLogger(t, log)
	other := *req
	other.Kernels = []api.Kernel{req.Kernels[0]}
	other.Kernels[0].FuncID = 7
	other.OutputDir = filepath.Join(t.TempDir(), "out")
	var second *api.Response
	var secondErr error
	var secondCompiled []string
	getenv, environ := env(cc)
	d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir(), BeforeRevalidate: func() {
		if second != nil || secondErr != nil {
			return
		}
		compiled(t, log)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		second, secondErr = newDriver(t, store, cc).Build(ctx, &other)
		secondCompiled = compiled(t, log)
	}})
	build(t, d, req, api.StatusMiss)
	if secondErr != nil {
		t.Fatal(secondErr)
	}
	if second == nil {
		t.Fatal("the hook never built the second request")
	}
	if len(secondCompiled) != 0 {
		t.Errorf("the second request compiled %q (units %q), want nothing", secondCompiled, unitStatuses(second))
	}
	for _, u := range second.Units {
		if u.Status != unitHit {
			t.Errorf("unit %s: %s, want a hit", u.Name, u.Status)
		}
	}
}
