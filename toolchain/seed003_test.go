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

// Tests of the component-input rules that issue 18 found partial. Each
// states the rule it checks.

// Rule: "A ComponentInputs inventory starts unavailable, even when some
// file paths are known. A dependency-aware adapter must establish
// completeness before clearing unavailable_reason."
func TestSeed003ComponentInputsStartUnavailable(t *testing.T) {
	_, in := fiveRoots(t)
	known := in.Runtime.Roots
	in.Runtime = ComponentInputs{Roots: known} // paths known, nothing proven
	if r := in.Runtime.Reason(); r != NotProven || in.Runtime.Complete() {
		t.Fatalf("unproven inputs: reason %q, complete %v", r, in.Runtime.Complete())
	}
	id, err := NewInstallationIdentityCache(Options{}).Capture(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if id.Usable || !id.Digest.IsZero() || id.Components[1].Unavailable != NotProven {
		t.Fatalf("unproven runtime counted: usable %v, %+v", id.Usable, id.Components[1])
	}
	// An adapter's proof clears it; an explicit reason outranks the proof.
	in.Runtime = proven(ComponentInputs{Roots: known})
	if id, _ = NewInstallationIdentityCache(Options{}).Capture(context.Background(), in); !id.Usable {
		t.Fatalf("proven inputs unusable: %v", id.Reasons())
	}
	if ci := proven(Unavailable("gone")); ci.Complete() || ci.Reason() != "gone" {
		t.Fatalf("a reason must outrank completeness: %+v", ci)
	}
	// Every adapter proves what it returns.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pypto/pypto/__init__.py": "", "runtime/rt.cpp": "int x;"})
	cfg := &Config{PyptoRoot: filepath.Join(dir, "pypto"), RuntimeRoot: filepath.Join(dir, "runtime")}
	for _, ci := range []ComponentInputs{
		resolvePackage(context.Background(), cfg, cfg.PyptoRoot, "PyPTO", "--pypto-root"),
		resolvePackage(context.Background(), cfg, cfg.RuntimeRoot, "runtime", "--runtime-root"),
		resolveCann(context.Background(), &Config{CannRoot: makeCann(t, cannInfo)}),
	} {
		if !ci.Complete() {
			t.Errorf("adapter left its inputs unproven: %+v", ci)
		}
	}
}

// Rule: "Empty additional-source lists are valid, but an empty required
// installation inventory is unavailable."
func TestSeed003EmptyRequiredInventoryUnavailable(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{}
	for _, what := range []string{"PyPTO", "runtime"} {
		ci := resolvePackage(context.Background(), cfg, empty, what, "--root")
		if !strings.Contains(ci.Reason(), "is empty") {
			t.Errorf("%s: an existing empty directory accepted: %+v", what, ci)
		}
	}
	// A directory whose entries all contribute nothing (bytecode only) is
	// empty once read, under both policies.
	writeFiles(t, dir, map[string]string{"cached/__pycache__/m.cpython-310.pyc": "x", "cached/.git/HEAD": "ref"})
	cached := filepath.Join(dir, "cached")
	ci := resolvePackage(context.Background(), cfg, cached, "runtime", "--runtime-root")
	if ci.Reason() != "" {
		t.Fatalf("resolve: %s", ci.Reason())
	}
	if got := contentIdentity(Runtime, ci, inventory.FingerprintOptions{}); !strings.Contains(got.Unavailable, "empty inventory") {
		t.Errorf("content policy: %+v", got)
	}
	writeFiles(t, dir, map[string]string{"bc/m.pyc": "x"})
	bc := proven(ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, filepath.Join(dir, "bc"))}})
	if got := buildIdentity(Runtime, bc, &ToolchainInputs{}, nil); !strings.Contains(got.Unavailable, "empty inventory") {
		t.Errorf("build policy: %+v", got)
	}
}

// buildShared compiles a shared library from src into out, linked with
// the libraries of args; it skips the test without a C compiler.
func buildShared(t *testing.T, out, src string, args ...string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	c := filepath.Join(t.TempDir(), "s.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cc, append([]string{"-shared", "-fPIC", "-o", out, c}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build a shared library: %v\n%s", err, b)
	}
}

// Rule: "The adapter must account for actual imported code, native
// libraries, compiler resources, dynamic dependencies ... It must share
// resolution with the compilation path": the PyPTO and runtime adapters
// find the shared objects they contain (by content, whatever their names)
// and read what those load, through the dependency walk of the host
// compiler adapter.
func TestSeed003NativeLibraryDiscovery(t *testing.T) {
	if _, err := exec.LookPath("ldd"); err != nil {
		t.Skip("no ldd")
	}
	dir := t.TempDir()
	deps := filepath.Join(dir, "deps")
	buildShared(t, filepath.Join(deps, "libdep.so"), "int dep(int x) { return x * 2; }\n")
	root := filepath.Join(dir, "pypto")
	writeFiles(t, root, map[string]string{"pypto/__init__.py": "from . import _core\n"})
	// The extension has no .so suffix: discovery is by content.
	buildShared(t, filepath.Join(root, "pypto", "_core.cpython-310-x86_64-linux-gnu"),
		"int dep(int); int core(int x) { return dep(x); }\n", "-L"+deps, "-ldep", "-Wl,-rpath,"+deps)
	cfg := &Config{}
	ci := resolvePackage(context.Background(), cfg, root, "PyPTO", "--pypto-root")
	if ci.Reason() != "" {
		t.Fatal(ci.Reason())
	}
	var paths []string
	for _, r := range ci.Roots {
		paths = append(paths, r.Path())
	}
	if paths[0] != root || !slices.Contains(paths, filepath.Join(deps, "libdep.so")) {
		t.Fatalf("roots %q: the root and the library its extension loads", paths)
	}
	for _, p := range paths[1:] {
		if within(p, root) {
			t.Errorf("%s inside the root listed again", p)
		}
	}
	// A change of the loaded library changes the identity.
	a := contentIdentity(Pypto, ci, inventory.FingerprintOptions{})
	buildShared(t, filepath.Join(deps, "libdep.so"), "int dep(int x) { return x * 3; }\n")
	if b := contentIdentity(Pypto, ci, inventory.FingerprintOptions{}); b.Digest == a.Digest || a.Unavailable != "" {
		t.Fatalf("a rebuilt dependency kept the digest (%s)", a.Unavailable)
	}
	// A dependency that cannot be found, or loader injection, is
	// unavailable: unsupported discovery stays unavailable.
	env := map[string]string{"PATH": os.Getenv("PATH"), "LD_PRELOAD": "/x.so"}
	if ci := resolvePackage(context.Background(), &Config{Getenv: func(k string) string { return env[k] }}, root, "PyPTO", "--pypto-root"); !strings.Contains(ci.Reason(), "LD_PRELOAD") {
		t.Errorf("LD_PRELOAD: %+v", ci)
	}
	if err := os.Remove(filepath.Join(deps, "libdep.so")); err != nil {
		t.Fatal(err)
	}
	if ci := resolvePackage(context.Background(), cfg, root, "PyPTO", "--pypto-root"); !strings.Contains(ci.Reason(), "libdep.so not found") {
		t.Errorf("missing dependency: %+v", ci)
	}
}

// Rule: "A component may carry a version and contents. The device
// toolchain does: its compiler runs on the host, so its inputs come from
// the CANN installation, which states its own build, and from files the
// host OS provides, which state nothing. Each part is covered by the
// evidence it actually has." On a2a3/a5 the files ccec loads from the host
// are discovered from the driver as for gcc; a stand-in ccec answers.
func TestSeed003CannHostFilesFromCcec(t *testing.T) {
	if _, err := exec.LookPath("ldd"); err != nil {
		t.Skip("no ldd")
	}
	root := makeCann(t, cannInfo)
	host := filepath.Join(filepath.Dir(filepath.Dir(root)), "host")
	ci := resolveCann(context.Background(), &Config{CannRoot: root})
	if ci.Reason() != "" {
		t.Fatal(ci.Reason())
	}
	var paths []string
	for _, r := range ci.Roots {
		paths = append(paths, r.Path())
	}
	want := []string{filepath.Join(host, "bin"), filepath.Join(host, "lib", "crti.o"), filepath.Join(host, "include")}
	if !slices.Equal(paths, want) {
		t.Fatalf("roots %q, want the host-side files %q (the installation's own are covered by its innerversion)", paths, want)
	}
	in := &ToolchainInputs{DeviceToolchain: ci}
	a := contentIdentity(DeviceToolchain, in.DeviceToolchain, inventory.FingerprintOptions{})
	writeFiles(t, host, map[string]string{"include/stdio.h": "int printf(const char *, ...); // changed\n"})
	if b := contentIdentity(DeviceToolchain, in.DeviceToolchain, inventory.FingerprintOptions{}); a.Unavailable != "" || b.Digest == a.Digest {
		t.Fatalf("a changed host header kept the digest (%s)", a.Unavailable)
	}
	env := map[string]string{"PATH": os.Getenv("PATH"), "COMPILER_PATH": "/opt"}
	if ci := resolveCann(context.Background(), &Config{CannRoot: root, Getenv: func(k string) string { return env[k] }}); !strings.Contains(ci.Reason(), "COMPILER_PATH") {
		t.Fatalf("tool resolution variable: %+v", ci)
	}
	// Without a ccec in the installation or on PATH the component is
	// unavailable; one on PATH is what runs, and is a root itself.
	noPath := &Config{CannRoot: root, Getenv: func(k string) string {
		if k == "PATH" {
			return filepath.Dir(lddPath(t))
		}
		return ""
	}}
	if err := os.Rename(filepath.Join(root, "compiler"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if ci := resolveCann(context.Background(), noPath); !strings.Contains(ci.Reason(), "no ccec compiler") {
		t.Fatalf("no ccec: %+v", ci)
	}
	tools := filepath.Join(t.TempDir(), "tools")
	ccec := makeCcec(t, tools, root, host)
	onPath := &Config{CannRoot: root, Getenv: func(k string) string {
		if k == "PATH" {
			return filepath.Dir(ccec) + string(filepath.ListSeparator) + filepath.Dir(lddPath(t))
		}
		return ""
	}}
	ci = resolveCann(context.Background(), onPath)
	if ci.Reason() != "" || !slices.ContainsFunc(ci.Roots, func(r inventory.ContentRoot) bool { return r.Path() == ccec || within(ccec, r.Path()) }) {
		t.Fatalf("ccec on PATH not among the roots: %+v", ci)
	}
}

func lddPath(t *testing.T) string {
	p, err := exec.LookPath("ldd")
	if err != nil {
		t.Skip("no ldd")
	}
	return p
}
