package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

const knownBuildID = "0123456789abcdef0011223344556677"

// compileELF links a small shared object with a chosen GNU build-id.
func compileELF(t *testing.T, dir, name, buildID string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	src := filepath.Join(t.TempDir(), "k.c")
	os.WriteFile(src, []byte("int kernel(int x) { return x + 1; }\n"), 0o644)
	out := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(out), 0o755)
	cmd := exec.Command(cc, "-shared", "-fPIC", "-Wl,--build-id=0x"+buildID, "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot link with a build-id: %v\n%s", err, b)
	}
	return out
}

func TestNativeBuildIDOfLinkedFile(t *testing.T) {
	p := compileELF(t, t.TempDir(), "libk.so", knownBuildID)
	if e, err := NativeBuildID(p); err != nil || e != (FileEvidence{"gnu-build-id", knownBuildID}) {
		t.Fatalf("%v %v", e, err)
	}
	b, _ := os.ReadFile(p)
	trunc := filepath.Join(t.TempDir(), "t.so")
	os.WriteFile(trunc, b[:64], 0o644)
	if e, _ := NativeBuildID(trunc); e.Kind != "sha256" {
		t.Fatalf("truncated ELF file: %v", e)
	}
}

// runGit runs git in dir, failing the test on error.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// runtimeCheckout is a committed runtime checkout with a pin file and a
// .gitignore that ignores build/.
func runtimeCheckout(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := filepath.Join(t.TempDir(), "runtime")
	writeFiles(t, dir, map[string]string{"include/rt.h": "int rt;\n", "pto_isa.pin": strings.Repeat("a", 40) + "\n", ".gitignore": "build/\n"})
	runGit(t, dir, "init", "-q")
	runGit(t, dir, "add", ".")
	runGit(t, dir, "commit", "-qm", "fixture")
	return dir
}

func runtimeIdentity(t *testing.T, root string) ComponentIdentity {
	t.Helper()
	cfg := Config{Environ: os.Environ()}
	spec := runtimeBuild(&cfg, root)
	if spec == nil {
		t.Fatal("a checkout has no build record")
	}
	ci := proven(ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, root)}})
	ci.build = spec
	return buildIdentity(Runtime, ci, &ToolchainInputs{}, nil)
}

// TestBuildPolicyDirtyRuntime: PyPTO's rule, git status
// --porcelain=v1 --untracked-files=all, one case each.
func TestBuildPolicyDirtyRuntime(t *testing.T) {
	// Ignored build outputs leave the checkout clean, and
	// build/lib/pto_isa_build.json is part of the record.
	t.Run("ignored build outputs: clean", func(t *testing.T) {
		root := runtimeCheckout(t)
		clean := runtimeIdentity(t, root)
		if clean.Unavailable != "" {
			t.Fatal(clean.Unavailable)
		}
		writeFiles(t, root, map[string]string{"build/lib/pto_isa_build.json": "{}", "build/CMakeCache.txt": "x", "build/lib/x.so": "\x7fELF"})
		built := runtimeIdentity(t, root)
		if built.Unavailable != "" || built.Digest == clean.Digest {
			t.Fatalf("ignored build outputs: %q (digest changed: %v)", built.Unavailable, built.Digest != clean.Digest)
		}
		if runtimePin(root) != strings.Repeat("a", 40) {
			t.Fatalf("pin %q", runtimePin(root))
		}
	})
	t.Run("an untracked file: bypass", func(t *testing.T) {
		root := runtimeCheckout(t)
		for _, name := range []string{"new_helper.py", "lib/untracked.so"} {
			writeFiles(t, root, map[string]string{name: "pass\n"})
			if d := runtimeIdentity(t, root); !strings.Contains(d.Unavailable, "Runtime source checkout has uncommitted changes") {
				t.Fatalf("untracked %s: %q", name, d.Unavailable)
			}
			os.Remove(filepath.Join(root, name))
		}
	})
	t.Run("a worktree whose .git is a file, with an edit: bypass", func(t *testing.T) {
		root := runtimeCheckout(t)
		wt := filepath.Join(t.TempDir(), "wt")
		runGit(t, root, "worktree", "add", "-q", wt)
		if fi, err := os.Lstat(filepath.Join(wt, ".git")); err != nil || fi.IsDir() {
			t.Fatalf("worktree .git: %v", err)
		}
		if d := runtimeIdentity(t, wt); d.Unavailable != "" {
			t.Fatalf("clean worktree: %q", d.Unavailable)
		}
		appendFile(t, filepath.Join(wt, "include/rt.h"), "int edit;\n")
		if d := runtimeIdentity(t, wt); !strings.Contains(d.Unavailable, "Runtime source checkout has uncommitted changes") {
			t.Fatalf("edited worktree: %q", d.Unavailable)
		}
	})
}

// TestBuildPolicyEpoch: an unset epoch (None) and an empty one ("") are
// different records, as in PyPTO.
func TestBuildPolicyEpoch(t *testing.T) {
	v := inventory.Str("v")
	unset, _ := ReportedBuild("", false, v)
	empty, _ := ReportedBuild("", true, v)
	one, _ := ReportedBuild("1", true, v)
	if unset == empty || empty == one || unset == one {
		t.Fatal("epochs collide")
	}
	cfg := Config{Environ: []string{"PYPTO_CACHE_EPOCH="}}
	if e, set := cfg.lookupEpoch(); e != "" || !set {
		t.Fatal("an empty epoch reads as unset")
	}
	cfg = Config{Environ: []string{}}
	if _, set := cfg.lookupEpoch(); set {
		t.Fatal("no epoch reads as set")
	}
}

// TestBuildPolicyRecords: the records resolution builds have PyPTO's
// shapes, computed from the files as PyPTO computes them.
func TestBuildPolicyRecords(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pypto/pypto/__init__.py": "pass\n", "pypto/pypto/jit.py": "x = 1\n"})
	native := compileELF(t, dir, "pypto/pypto/pypto_core.cpython-311.so", knownBuildID)
	cfg := Config{Environ: os.Environ()}
	spec := pyptoBuild(context.Background(), &cfg, filepath.Join(dir, "pypto"))
	rec, reason := spec.record(func(string) error { return nil })
	if reason != "" {
		t.Fatal(reason)
	}
	v := rec.value
	pkg := filepath.Join(dir, "pypto", "pypto")
	srcs, _ := PythonSources(pkg)
	tu := v.(inventory.Tuple)
	wantSrcs := inventory.List{inventory.T(inventory.Str(pkg), inventory.Str(srcs))}
	if len(tu) != 5 || !sameValue(tu[0], wantSrcs) || tu[1] != inventory.Str(native) ||
		!sameValue(tu[2], inventory.T(inventory.Str("gnu-build-id"), inventory.Str(knownBuildID))) {
		t.Fatalf("pypto record %v", v)
	}
	if _, err := exec.LookPath("python3"); err == nil && (tu[3] == inventory.None{} || !strings.HasPrefix(string(tu[4].(inventory.Str)), "cpython-")) {
		t.Fatalf("python version and tag %v %v", tu[3], tu[4])
	}
	// A standalone ELF ptoas: (real path, evidence).
	p := ptoasBuild(native)
	pv, reason := p.read(func(string) error { return nil })
	if reason != "" || !sameValue(pv, inventory.T(inventory.Str(native), tu[2])) {
		t.Fatalf("ptoas record %v %q", pv, reason)
	}
	script := filepath.Join(dir, "ptoas.sh")
	writeFiles(t, dir, map[string]string{"ptoas.sh": "#!/bin/sh\n"})
	if ptoasBuild(script) != nil {
		t.Fatal("a shell launcher has an ELF record")
	}
}

// TestBuildPolicyHostCompiler: each selected compiler is (invoked,
// version, invoked evidence, driver evidence, [cc1plus, collect2, as, ld]).
func TestBuildPolicyHostCompiler(t *testing.T) {
	cc, err1 := exec.LookPath("cc")
	cxx, err2 := exec.LookPath("c++")
	if err1 != nil || err2 != nil {
		t.Skip("no host compilers")
	}
	cfg := Config{Environ: os.Environ()}
	v, reason := deviceBuild(&cfg, cc, cxx).read(func(string) error { return nil })
	if reason != "" {
		t.Skipf("compiler not identifiable here: %s", reason)
	}
	l := v.(inventory.List)
	if len(l) != 2 {
		t.Fatalf("%v", v)
	}
	for i, c := range []string{cc, cxx} {
		tu := l[i].(inventory.Tuple)
		progs := tu[4].(inventory.List)
		if tu[0] != inventory.Str(c) || len(tu) != 5 || len(progs) != 4 || progs[0].(inventory.Tuple)[0] != inventory.Str("cc1plus") {
			t.Fatalf("compiler record %v", tu)
		}
		real, _ := filepath.EvalSymlinks(c)
		if e, _ := NativeBuildID(real); !sameValue(tu[2], e.Value()) || !sameValue(tu[3], e.Value()) {
			t.Fatalf("driver evidence %v %v", tu[2], tu[3])
		}
	}
	// A wrapper whose COLLECT_GCC names another driver is refused.
	if _, reason := driverExecuted(&cfg, "COLLECT_GCC="+cxx+"\n", cc); reason == "" {
		if r1, _ := filepath.EvalSymlinks(cc); r1 != mustReal(t, cxx) {
			t.Fatal("an untracked wrapper was accepted")
		}
	}
}

func mustReal(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPoliciesNeverShareToolchainDigests: the same inputs under the two
// policies give different component and toolchain digests.
func TestPoliciesNeverShareToolchainDigests(t *testing.T) {
	_, in := fiveRoots(t)
	content, _ := NewInstallationIdentityCache(Options{}).Capture(context.Background(), in)
	bin := *in
	bin.Policy = PolicyBuild
	c := NewInstallationIdentityCache(Options{})
	build, _ := c.Capture(context.Background(), &bin)
	if !content.Usable || !build.Usable || content.Digest == build.Digest || build.Policy != PolicyBuild {
		t.Fatalf("content %v build %v", content.Reasons(), build.Reasons())
	}
	for i := range content.Components {
		if content.Components[i].Digest == build.Components[i].Digest {
			t.Errorf("%s shares a digest", Names[i])
		}
	}
	// The epoch is part of the memo key, and set-but-empty is not unset.
	for _, e := range []struct {
		v   string
		set bool
	}{{"", true}, {"1", true}} {
		bin.Epoch, bin.EpochSet = e.v, e.set
		if got, _ := c.Capture(context.Background(), &bin); got.Digest == build.Digest {
			t.Fatalf("epoch %+v ignored by the memo", e)
		}
	}
}

// sameValue compares two records by their encoding.
func sameValue(a, b inventory.Value) bool {
	da, errA := inventory.Digest(a)
	db, errB := inventory.Digest(b)
	return errA == nil && errB == nil && da == db
}

// watchPath and watchDirs name, before a file reached through symlinks is
// read, the directory of each symlink on the way and that of the file (a
// compiler behind an alternatives link, a Python package's file linked
// from elsewhere), so a daemon sees the file written and a link
// retargeted.
func TestWatchPathFollowsSymlinks(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"pkg/a.py", "real/t.py"} {
		if err := os.MkdirAll(filepath.Join(d, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), []byte("x = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(d+"/hop", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d+"/real/t.py", d+"/hop/t.py"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../hop/t.py", d+"/pkg/t.py"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	before := func(dir string) error { seen = append(seen, dir); return nil }
	if err := watchPath(d+"/pkg/t.py", before); err != nil {
		t.Fatal(err)
	}
	if want := []string{d + "/pkg", d + "/hop", d + "/real"}; !slices.Equal(seen, want) {
		t.Errorf("watchPath saw %q, want %q", seen, want)
	}
	seen = nil
	if err := watchPath(d+"/pkg/a.py", before); err != nil {
		t.Fatal(err)
	}
	if want := []string{d + "/pkg"}; !slices.Equal(seen, want) {
		t.Errorf("watchPath of a plain file saw %q, want %q", seen, want)
	}
	seen = nil
	if err := watchDirs(d+"/pkg", before); err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	if want := []string{d + "/hop", d + "/pkg", d + "/real"}; !slices.Equal(slices.Compact(seen), want) {
		t.Errorf("watchDirs saw %q, want %q", seen, want)
	}
}
