package toolchain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

func mustRoot(t testing.TB, p string) inventory.ContentRoot {
	t.Helper()
	r, err := inventory.NewContentRoot(p, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fiveRoots makes five small installation directories and inputs that read
// them all.
func fiveRoots(t *testing.T) (string, *ToolchainInputs) {
	t.Helper()
	dir := t.TempDir()
	in := &ToolchainInputs{Policy: PolicyContent}
	for _, n := range Names {
		p := filepath.Join(dir, n)
		writeFiles(t, p, map[string]string{"a.txt": n, "sub/b.h": "// " + n})
		// Proven as an adapter would (inputs start unavailable).
		*in.Component(n) = proven(ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, p)}})
	}
	return dir, in
}

func TestCaptureDigests(t *testing.T) {
	_, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	id, err := c.Capture(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !id.Usable || id.Digest.IsZero() || len(id.Components) != 5 || id.Policy != PolicyContent {
		t.Fatalf("identity %+v", id)
	}
	var sums [5]inventory.Sum
	for i, ci := range id.Components {
		if ci.Name != Names[i] {
			t.Fatalf("component %d is %q", i, ci.Name)
		}
		content, err := inventory.Fingerprint(in.Component(ci.Name).Roots)
		if err != nil {
			t.Fatal(err)
		}
		// digest(("component", name, {"content": hex}))
		want := inventory.MustDigest(inventory.T(inventory.Str("component"), inventory.Str(ci.Name),
			inventory.Dict{"content": inventory.Str(content.Digest.String())}))
		if ci.Digest != want {
			t.Errorf("%s: digest %s, want %s", ci.Name, ci.Digest, want)
		}
		if ci.Files != 2 {
			t.Errorf("%s: %d files read", ci.Name, ci.Files)
		}
		sums[i] = want
	}
	d := inventory.Dict{}
	for i, n := range Names {
		d[inventory.Str(n)] = inventory.Str(sums[i].String())
	}
	if want := inventory.MustDigest(inventory.T(inventory.Str("toolchain"), inventory.IntOf(1), d)); id.Digest != want {
		t.Errorf("toolchain digest %s, want %s", id.Digest, want)
	}
}

func TestCaptureUnavailable(t *testing.T) {
	_, in := fiveRoots(t)
	in.Ptoas = Unavailable("no ptoas root")
	in.Runtime.Roots = append(in.Runtime.Roots, mustRoot(t, filepath.Join(t.TempDir(), "missing")))
	id, err := NewInstallationIdentityCache(Options{}).Capture(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if id.Usable || !id.Digest.IsZero() {
		t.Fatal("usable with unavailable components")
	}
	got := map[string]string{}
	for _, ci := range id.Components {
		got[ci.Name] = ci.Unavailable
		if (ci.Unavailable == "") == ci.Digest.IsZero() {
			t.Errorf("%s: digest and reason disagree: %+v", ci.Name, ci)
		}
	}
	if got[Ptoas] != "no ptoas root" || !strings.Contains(got[Runtime], "missing") {
		t.Errorf("reasons %v", got)
	}
	for _, n := range []string{Pypto, PtoIsa, DeviceToolchain} {
		if got[n] != "" {
			t.Errorf("%s unavailable: %s", n, got[n])
		}
	}
	if r := id.Reasons(); len(r) != 2 {
		t.Errorf("reasons %v", r)
	}
	// An unavailable reason outranks a revision and a version.
	in.PtoIsa.VerifiedRevision = strings.Repeat("a", 40)
	in.PtoIsa.UnavailableReason = "broken"
	in.PtoIsa.ReportedVersion = "1.0"
	id, _ = NewInstallationIdentityCache(Options{}).Capture(context.Background(), in)
	if id.Components[2].Unavailable != "broken" {
		t.Errorf("pto_isa: %+v", id.Components[2])
	}
	// No evidence at all.
	id, _ = NewInstallationIdentityCache(Options{}).Capture(context.Background(), &ToolchainInputs{})
	for _, ci := range id.Components {
		if ci.Unavailable == "" {
			t.Errorf("%s available without evidence", ci.Name)
		}
	}
}

// TestEvidenceTags: a verified revision, a reported version and a content
// digest with the same string never share a digest, and neither do two
// components with the same evidence.
func TestEvidenceTags(t *testing.T) {
	s := strings.Repeat("ab", 20)
	digest := func(name string, ci ComponentInputs) inventory.Sum {
		out := contentIdentity(name, ci, inventory.FingerprintOptions{})
		if out.Unavailable != "" {
			t.Fatal(out.Unavailable)
		}
		return out.Digest
	}
	rev := digest(PtoIsa, ComponentInputs{VerifiedRevision: s})
	ver := digest(PtoIsa, ComponentInputs{ReportedVersion: s})
	if rev == ver {
		t.Fatal("verified revision and reported version with the same string share a digest")
	}
	if digest(Ptoas, ComponentInputs{ReportedVersion: s}) == ver {
		t.Fatal("two components share a digest")
	}
	// A dev build's suffix in --version is part of the identity.
	if digest(Ptoas, ComponentInputs{ReportedVersion: "ptoas 0.9.1\n"}) == digest(Ptoas, ComponentInputs{ReportedVersion: "ptoas 0.9.1.dev3+g1234abc\n"}) {
		t.Fatal("dev suffix ignored")
	}
	// A version does not stand in for declared roots: both are covered.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"x": "1"})
	both := contentIdentity(DeviceToolchain, ComponentInputs{ReportedVersion: "v", Roots: []inventory.ContentRoot{mustRoot(t, dir)}}, inventory.FingerprintOptions{})
	if both.Evidence["reported_version"] == nil || both.Evidence["content"] == nil {
		t.Fatalf("evidence %v", both.Evidence)
	}
	os.Remove(filepath.Join(dir, "x"))
	os.Symlink("nowhere", filepath.Join(dir, "x"))
	broken := contentIdentity(DeviceToolchain, ComponentInputs{ReportedVersion: "v", Roots: []inventory.ContentRoot{mustRoot(t, dir)}}, inventory.FingerprintOptions{})
	if broken.Unavailable == "" {
		t.Fatal("unreadable declared root covered by a version")
	}
}

func TestCaptureMemo(t *testing.T) {
	dir, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	var reads atomic.Int32
	c.readHook = func(string) { reads.Add(1) }
	ctx := context.Background()
	first, _ := c.Capture(ctx, in)
	if reads.Load() != 5 || c.Len() != 5 {
		t.Fatalf("%d reads, %d memos", reads.Load(), c.Len())
	}
	// Files change, the memo answers: installations are immutable until
	// Forget says otherwise.
	writeFiles(t, filepath.Join(dir, Runtime), map[string]string{"sub/new.h": "x"})
	again, _ := c.Capture(ctx, in)
	if reads.Load() != 5 || again.Digest != first.Digest {
		t.Fatal("memo not used")
	}
	// A changed selection is a new key.
	alt := *in
	alt.Pypto.Roots = []inventory.ContentRoot{mustRoot(t, filepath.Join(dir, Runtime))}
	c.Capture(ctx, &alt)
	if reads.Load() != 6 {
		t.Fatalf("changed selection: %d reads", reads.Load())
	}
	alt = *in
	alt.Ptoas.ReportedVersion = "1.0"
	c.Capture(ctx, &alt)
	if reads.Load() != 7 {
		t.Fatalf("changed version: %d reads", reads.Load())
	}
	// Forget a file below the runtime root: the memos that read it go
	// (runtime, and the alternative pypto that selected the same root).
	if n := c.Forget(filepath.Join(dir, Runtime, "sub", "new.h")); n != 2 {
		t.Fatalf("Forget dropped %d", n)
	}
	now, _ := c.Capture(ctx, in)
	if reads.Load() != 8 || now.Digest == first.Digest {
		t.Fatalf("after Forget: %d reads", reads.Load())
	}
	// Forget a parent of every root.
	if n := c.Forget(dir); n != 6 || c.Len() != 0 {
		t.Fatalf("Forget(parent) left %d", c.Len())
	}
	c.Capture(ctx, in)
	// With memos present, so that it could drop some.
	if n := c.Forget("/nonexistent/elsewhere"); n != 0 || c.Len() != 5 {
		t.Fatal("Forget of an unrelated path dropped memos")
	}
	c.ForgetAll()
	if c.Len() != 0 {
		t.Fatal("ForgetAll")
	}
}

// TestForgetFollowsResolvedDirs: a root reached through a symlink is
// forgotten by the resolved directory the daemon watches.
func TestForgetFollowsResolvedDirs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "real"), map[string]string{"inner/f.h": "x"})
	os.Symlink("real", filepath.Join(dir, "link"))
	var watched []string
	c := NewInstallationIdentityCache(Options{BeforeDir: func(d string) error { watched = append(watched, d); return nil }})
	in := &ToolchainInputs{Pypto: proven(ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, filepath.Join(dir, "link"))}})}
	c.Capture(context.Background(), in)
	// The directory holding the link, then the resolved directories read.
	if c.Len() != 1 || len(watched) != 3 || watched[0] != dir {
		t.Fatalf("%d memos, watched %v", c.Len(), watched)
	}
	if n := c.Forget(filepath.Join(watched[2], "f.h")); n != 1 {
		t.Fatalf("resolved path not forgotten (%d)", n)
	}
}

func TestCaptureFailedReadsRetried(t *testing.T) {
	dir, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	bad := filepath.Join(dir, Pypto, "broken")
	os.Symlink("nowhere", bad)
	id, _ := c.Capture(context.Background(), in)
	if id.Usable || id.Components[0].Unavailable == "" || c.Len() != 4 {
		t.Fatalf("broken symlink: usable=%v, %d memos", id.Usable, c.Len())
	}
	os.Remove(bad)
	id, _ = c.Capture(context.Background(), in)
	if !id.Usable {
		t.Fatalf("failed read was cached: %v", id.Reasons())
	}
	// A BeforeDir failure is a failed read too.
	fail := true
	c = NewInstallationIdentityCache(Options{BeforeDir: func(string) error {
		if fail {
			return errors.New("watch limit reached")
		}
		return nil
	}})
	id, _ = c.Capture(context.Background(), in)
	if id.Usable || !strings.Contains(id.Components[0].Unavailable, "watch limit") {
		t.Fatalf("%+v", id.Components[0])
	}
	fail = false
	if id, _ = c.Capture(context.Background(), in); !id.Usable {
		t.Fatal("not retried")
	}
}

// TestCaptureSingleflight: concurrent callers share one read per key.
func TestCaptureSingleflight(t *testing.T) {
	_, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	release := make(chan struct{})
	entered := make(chan struct{}, 64)
	var reads atomic.Int32
	c.readHook = func(string) { reads.Add(1); entered <- struct{}{}; <-release }
	const callers = 8
	var wg sync.WaitGroup
	results := make([]*Identity, callers)
	started := make(chan struct{}, callers)
	for i := range callers {
		wg.Go(func() {
			started <- struct{}{}
			results[i], _ = c.Capture(context.Background(), in)
		})
	}
	for range callers {
		<-started
	}
	// Wait until the five reads are in flight, then let them finish.
	for range 5 {
		<-entered
	}
	close(release)
	wg.Wait()
	if reads.Load() != 5 {
		t.Fatalf("%d reads for %d concurrent callers", reads.Load(), callers)
	}
	for _, r := range results {
		if r == nil || r.Digest != results[0].Digest || !r.Usable {
			t.Fatal("callers disagree")
		}
	}
}

// TestForgetDuringRead: a read in flight when Forget runs is returned but
// not memoized, and callers after the Forget do not join it.
func TestForgetDuringRead(t *testing.T) {
	dir, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	inRead := make(chan string, 5)
	release := make(chan struct{})
	c.readHook = func(name string) { inRead <- name; <-release }
	done := make(chan *Identity)
	go func() { id, _ := c.Capture(context.Background(), in); done <- id }()
	for range 5 {
		<-inRead
	}
	c.Forget(filepath.Join(dir, Pypto, "a.txt"))
	close(release)
	<-done
	if c.Len() != 0 {
		t.Fatalf("%d reads memoized across a Forget", c.Len())
	}
	c.readHook = nil
	if id, _ := c.Capture(context.Background(), in); !id.Usable || c.Len() != 5 {
		t.Fatal("next capture")
	}
}

func TestCaptureContext(t *testing.T) {
	_, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	release := make(chan struct{})
	c.readHook = func(string) { <-release }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Capture(ctx, in); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	close(release)
}

func TestCachedResolve(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pypto/x.py": "", "runtime/r.cpp": ""})
	isa, pin := newIsaRepo(t)
	cfg := Config{
		Platform: "a2a3", PyptoRoot: filepath.Join(dir, "pypto"), RuntimeRoot: filepath.Join(dir, "runtime"),
		PtoIsaRoot: isa, PtoIsaPin: pin, CannRoot: makeCann(t, cannInfo),
		PtoasRoot: makePtoas(t, "#!/bin/sh\necho ptoas 1.0\n"), Environ: []string{"PATH=/usr/bin:/bin"},
	}
	var watched sync.Map
	c := NewInstallationIdentityCache(Options{BeforeDir: func(d string) error { watched.Store(d, true); return nil }})
	ctx := context.Background()
	a, err := c.Resolve(ctx, cfg)
	if err != nil || a.PtoIsa.VerifiedRevision != pin {
		t.Fatal(err, a)
	}
	if _, ok := watched.Load(filepath.Join(isa, ".git")); !ok {
		t.Error(".git not watched")
	}
	if b, _ := c.Resolve(ctx, cfg); b != a {
		t.Fatal("resolution not memoized")
	}
	cfg2 := cfg
	cfg2.Environ = []string{"PATH=/bin"}
	if b, _ := c.Resolve(ctx, cfg2); b == a {
		t.Fatal("a changed environment shares the resolution")
	}
	// A file appears in the PTO-ISA worktree: the resolution is dropped and
	// the next one falls back to contents.
	writeFiles(t, isa, map[string]string{"include/pto/gen.hpp": "x"})
	if n := c.Forget(filepath.Join(isa, "include", "pto", "gen.hpp")); n == 0 {
		t.Fatal("nothing forgotten")
	}
	b, _ := c.Resolve(ctx, cfg)
	if b == a || b.PtoIsa.VerifiedRevision != "" {
		t.Fatalf("stale resolution: %+v", b.PtoIsa)
	}
	// Incomplete resolutions are not memoized.
	cfg.PtoasRoot = ""
	x, _ := c.Resolve(ctx, cfg)
	if y, _ := c.Resolve(ctx, cfg); x == y {
		t.Fatal("incomplete resolution memoized")
	}
}

// TestWatchRootPaths: a root reached through a symlink, and a root that is
// a file, are watched where a change would not show in a content read's
// directories, and such a change forgets the memo.
func TestWatchRootPaths(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"v1/bin/cc": "cc v1", "v2/bin/cc": "cc v2", "latest": "->v1", "tools/as": "as"})
	watched := map[string]bool{}
	var mu sync.Mutex
	c := NewInstallationIdentityCache(Options{BeforeDir: func(d string) error { mu.Lock(); watched[d] = true; mu.Unlock(); return nil }})
	in := &ToolchainInputs{DeviceToolchain: proven(ComponentInputs{Roots: []inventory.ContentRoot{
		mustRoot(t, filepath.Join(dir, "latest", "bin")), mustRoot(t, filepath.Join(dir, "tools", "as")),
	}})}
	first, _ := c.Capture(context.Background(), in)
	if first.Components[4].Unavailable != "" {
		t.Fatal(first.Components[4].Unavailable)
	}
	for _, d := range []string{dir, filepath.Join(dir, "tools")} {
		if !watched[d] {
			t.Errorf("%s not watched (watched %v)", d, watched)
		}
	}
	// The daemon sees "latest" replaced in dir and forgets it.
	os.Remove(filepath.Join(dir, "latest"))
	os.Symlink("v2", filepath.Join(dir, "latest"))
	if n := c.Forget(filepath.Join(dir, "latest")); n != 1 {
		t.Fatalf("retargeted link forgot %d memos", n)
	}
	second, _ := c.Capture(context.Background(), in)
	if second.Components[4].Digest == first.Components[4].Digest {
		t.Fatal("retargeted link kept the identity")
	}
	// A file root replaced.
	if n := c.Forget(filepath.Join(dir, "tools", "as")); n != 1 {
		t.Fatalf("replaced file root forgot %d memos", n)
	}
}

// TestResolveMemoKeyedByToolResolution: with Config.ToolResolutionVar
// set, a new value of a variable it leaves out (a semantic one: the epoch
// under the content policy) reuses the memoized resolution, a new value of
// one it admits or of a variable the adapters read resolves again, the
// epoch never counts (the build policy records it in the answer), and a resolution under another
// environment leaves the first one's memo in place.
func TestResolveMemoKeyedByToolResolution(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pypto/x.py": "", "runtime/r.cpp": ""})
	isa, pin := newIsaRepo(t)
	var resolutions atomic.Int64
	c := NewInstallationIdentityCache(Options{Resolving: func() { resolutions.Add(1) }})
	ctx := context.Background()
	base := []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	cann, ptoas := makeCann(t, cannInfo), makePtoas(t, "#!/bin/sh\necho ptoas 1.0\n")
	cfgWith := func(policy Policy, vars ...string) Config {
		environ := append(slices.Clone(base), vars...)
		return Config{
			Policy: policy, Platform: "a2a3", PyptoRoot: filepath.Join(dir, "pypto"), RuntimeRoot: filepath.Join(dir, "runtime"),
			PtoIsaRoot: isa, PtoIsaPin: pin, CannRoot: cann, PtoasRoot: ptoas, Environ: environ,
			ToolResolutionVar: func(name string) bool { return name != EpochEnv && name != "PYPTO_OPT_LEVEL" },
		}
	}
	step := func(what string, cfg Config, want int64) *ToolchainInputs {
		t.Helper()
		before := resolutions.Load()
		in, err := c.Resolve(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := resolutions.Load() - before; got != want {
			t.Errorf("%s: %d resolutions, want %d", what, got, want)
		}
		return in
	}
	a := cfgWith(PolicyContent, EpochEnv+"=1")
	first := step("first", a, 1)
	if first.PtoIsa.Reason() != "" || first.DeviceToolchain.Reason() != "" {
		t.Fatalf("incomplete resolution (not memoized): %+v %+v", first.PtoIsa, first.DeviceToolchain)
	}
	step("the same environment", a, 0)
	step("a new epoch (content policy)", cfgWith(PolicyContent, EpochEnv+"=2"), 0)
	step("a new semantic variable", cfgWith(PolicyContent, EpochEnv+"=1", "PYPTO_OPT_LEVEL=3"), 0)
	other := cfgWith(PolicyContent, EpochEnv+"=1", "LD_LIBRARY_PATH=/nonexistent")
	step("a variable it admits", other, 1)
	step("the first environment after another's resolution", a, 0)
	step("the other environment again", other, 0)
	cc := cfgWith(PolicyContent, EpochEnv+"=1", "CC=/nonexistent/cc")
	cc.ToolResolutionVar = func(string) bool { return false }
	step("a variable an adapter reads, whatever ToolResolutionVar says", cc, 1)
	b1 := step("build policy", cfgWith(PolicyBuild, EpochEnv+"=1"), 1)
	// The build policy records the epoch but resolves nothing by it: a
	// new one takes the memo's answer with its own epoch, and leaves the
	// memo's as it was.
	if in := step("build policy, a new epoch", cfgWith(PolicyBuild, EpochEnv+"=2"), 0); in.Epoch != "2" || !in.EpochSet {
		t.Errorf("build-policy epoch %q (set %v), want 2", in.Epoch, in.EpochSet)
	}
	if in := step("build policy, no epoch", cfgWith(PolicyBuild), 0); in.EpochSet {
		t.Errorf("build policy without PYPTO_CACHE_EPOCH: epoch %q set", in.Epoch)
	}
	if in := step("build policy, an empty epoch", cfgWith(PolicyBuild, EpochEnv+"="), 0); in.Epoch != "" || !in.EpochSet {
		t.Errorf("build policy, PYPTO_CACHE_EPOCH empty: epoch %q set %v, want set", in.Epoch, in.EpochSet)
	}
	if again := step("build policy, the first epoch again", cfgWith(PolicyBuild, EpochEnv+"=1"), 0); again.Epoch != "1" || b1.Epoch != "1" {
		t.Errorf("first epoch's inputs now record %q (returned) and %q (kept)", again.Epoch, b1.Epoch)
	}
}

// TestCaptureNewEpochReadsNothing: under the build policy a new epoch's
// identity is made from the memoized values (no component is read again),
// differs from the first epoch's, and equals what a new cache computes
// for that epoch.
func TestCaptureNewEpochReadsNothing(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pypto/x.py": "", "runtime/r.cpp": ""})
	isa, pin := newIsaRepo(t)
	cann, ptoas := makeCann(t, cannInfo), makePtoas(t, "#!/bin/sh\necho ptoas 1.0\n")
	cfg := func(epoch string) Config {
		return Config{
			Policy: PolicyBuild, Platform: "a2a3", PyptoRoot: filepath.Join(dir, "pypto"), RuntimeRoot: filepath.Join(dir, "runtime"),
			PtoIsaRoot: isa, PtoIsaPin: pin, CannRoot: cann, PtoasRoot: ptoas,
			Environ:           []string{"PATH=/usr/bin:/bin", "LC_ALL=C", EpochEnv + "=" + epoch},
			ToolResolutionVar: func(name string) bool { return name != EpochEnv },
		}
	}
	ctx := context.Background()
	capture := func(c *InstallationIdentityCache, epoch string) *Identity {
		t.Helper()
		in, err := c.Resolve(ctx, cfg(epoch))
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.Capture(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	c := NewInstallationIdentityCache(Options{})
	var reads atomic.Int32
	c.readHook = func(string) { reads.Add(1) }
	first := capture(c, "1")
	n := reads.Load()
	if n == 0 {
		t.Fatal("the first capture read nothing")
	}
	second := capture(c, "2")
	if got := reads.Load() - n; got != 0 {
		t.Errorf("a new epoch read %d components again, want 0", got)
	}
	fresh := capture(NewInstallationIdentityCache(Options{}), "2")
	available := 0
	for i := range second.Components {
		if second.Components[i].Unavailable == "" {
			available++
		}
		a, b := second.Components[i], fresh.Components[i]
		if a.Digest != b.Digest || a.Unavailable != b.Unavailable {
			t.Errorf("%s under a new epoch: %x %q from the memo, %x %q from a new cache", a.Name, a.Digest, a.Unavailable, b.Digest, b.Unavailable)
		}
		if a.Unavailable == "" && a.Digest == first.Components[i].Digest {
			t.Errorf("%s: the same digest under epochs 1 and 2", a.Name)
		}
	}
	if available < 3 {
		t.Fatalf("only %d components identified: the test proves little", available)
	}
	if again := capture(c, "1"); again.Digest != first.Digest || reads.Load() != n {
		t.Errorf("the first epoch again: digest %x (was %x), %d reads more", again.Digest, first.Digest, reads.Load()-n)
	}
}

// The memo keys of an inputs value are computed once and used again while
// the value is unchanged: a planted key is what the next Capture looks up
// (it misses and reads), and keys kept for a value that differs from the
// one passed are computed afresh (the digest is right again).
func TestCaptureMemoKeysKept(t *testing.T) {
	_, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	var reads atomic.Int32
	c.readHook = func(string) { reads.Add(1) }
	ctx := context.Background()
	first, _ := c.Capture(ctx, in)
	c.mu.Lock()
	c.keys[in].keys[0] = inventory.Sum{1}
	c.mu.Unlock()
	c.Capture(ctx, in)
	if reads.Load() != 6 {
		t.Fatalf("%d reads, want 6: the kept keys were not used", reads.Load())
	}
	// As if the caller had changed the value since: the kept keys are
	// not used.
	c.mu.Lock()
	c.keys[in].in.Runtime.ReportedVersion = "stale"
	c.mu.Unlock()
	again, _ := c.Capture(ctx, in)
	if again.Digest != first.Digest {
		t.Fatalf("digest %s after the kept keys went stale, want %s", again.Digest, first.Digest)
	}
}
