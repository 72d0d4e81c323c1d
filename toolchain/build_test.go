package toolchain

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
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

func TestBuildID(t *testing.T) {
	p := compileELF(t, t.TempDir(), "libk.so", knownBuildID)
	b, _ := os.ReadFile(p)
	if got := hex.EncodeToString(BuildID(bytes.NewReader(b))); got != knownBuildID {
		t.Fatalf("build-id %q", got)
	}
	if BuildID(bytes.NewReader([]byte("#!/bin/sh\n"))) != nil {
		t.Fatal("build-id of a script")
	}
	if BuildID(bytes.NewReader(b[:64])) != nil {
		t.Fatal("build-id of a truncated ELF file")
	}
}

func buildDigest(t *testing.T, name string, ci ComponentInputs, epoch string) ComponentIdentity {
	t.Helper()
	return buildIdentity(name, ci, epoch, nil)
}

func TestBuildPolicyTree(t *testing.T) {
	dir := t.TempDir()
	compileELF(t, dir, "lib/libk.so", knownBuildID)
	writeFiles(t, dir, map[string]string{"include/k.h": "int kernel(int);\n", "lib/current": "->libk.so", "mod/__pycache__/m.pyc": "x", "mod/m.pyc": "x", "mod/.pyc": "x"})
	ci := ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, dir)}}
	a := buildDigest(t, Runtime, ci, "")
	if a.Unavailable != "" {
		t.Fatal(a.Unavailable)
	}
	rec := a.Evidence["build"].(inventory.Dict)["roots"].(inventory.List)[0].(inventory.Tuple)
	entries := rec[2].(inventory.List)
	kinds := map[string]string{}
	for _, e := range entries {
		et := e.(inventory.Tuple)
		kinds[string(et[1].(inventory.Str))] = string(et[0].(inventory.Str))
	}
	// "mod/.pyc" has no pathlib suffix: it is not bytecode and contributes.
	if kinds["lib/libk.so"] != "elf" || kinds["include/k.h"] != "file" || kinds["lib/current"] != "symlink" || kinds["mod/.pyc"] != "file" || len(kinds) != 4 {
		t.Fatalf("entries %v", kinds)
	}
	// The epoch forces a new digest; a rebuilt library with a new build-id
	// too; the content policy never shares a digest with the build policy.
	if b := buildDigest(t, Runtime, ci, "2"); b.Digest == a.Digest {
		t.Fatal("epoch ignored")
	}
	compileELF(t, dir, "lib/libk.so", "ffffffffffffffff0011223344556677")
	if b := buildDigest(t, Runtime, ci, ""); b.Digest == a.Digest {
		t.Fatal("build-id ignored")
	}
	if c := contentIdentity(Runtime, ci, inventory.FingerprintOptions{}); c.Digest == a.Digest || c.Unavailable != "" {
		t.Fatal("policies share a digest")
	}
	// Revisions and versions.
	v := buildDigest(t, Ptoas, ComponentInputs{ReportedVersion: "ptoas 1"}, "")
	if v.Evidence["build"].(inventory.Dict)["version"] != inventory.Str("ptoas 1") {
		t.Fatalf("%v", v.Evidence)
	}
	if cv := contentIdentity(Ptoas, ComponentInputs{ReportedVersion: "ptoas 1"}, inventory.FingerprintOptions{}); cv.Digest == v.Digest {
		t.Fatal("policies share a version digest")
	}
}

func TestBuildPolicyCheckout(t *testing.T) {
	dir, pin := newIsaRepo(t)
	ci := ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, dir)}}
	clean := buildDigest(t, Pypto, ci, "")
	if clean.Unavailable != "" {
		t.Fatal(clean.Unavailable)
	}
	rec := clean.Evidence["build"].(inventory.Dict)["roots"].(inventory.List)[0].(inventory.Tuple)
	if rec[0] != inventory.Str("git") || rec[2] != inventory.Str(pin) {
		t.Fatalf("record %v", rec)
	}
	// Python bytecode and an untracked ELF file with a build-id are
	// accounted for; the ELF file's build-id is part of the identity.
	writeFiles(t, dir, map[string]string{"python/pto_isa/__pycache__/x.pyc": "x"})
	if d := buildDigest(t, Pypto, ci, ""); d.Unavailable != "" || d.Digest != clean.Digest {
		t.Fatalf("bytecode: %+v", d.Unavailable)
	}
	compileELF(t, dir, "build/lib/libpto.so", knownBuildID)
	withLib := buildDigest(t, Pypto, ci, "")
	if withLib.Unavailable != "" || withLib.Digest == clean.Digest {
		t.Fatalf("build output: %q", withLib.Unavailable)
	}
	// Anything else untracked, or a modified file, is a dirty checkout.
	writeFiles(t, dir, map[string]string{"build/CMakeCache.txt": "x"})
	if d := buildDigest(t, Pypto, ci, ""); !strings.Contains(d.Unavailable, "dirty source checkout") {
		t.Fatalf("untracked text file: %q", d.Unavailable)
	}
	os.RemoveAll(filepath.Join(dir, "build"))
	appendFile(t, filepath.Join(dir, "README.md"), "local change\n")
	if d := buildDigest(t, Pypto, ci, ""); !strings.Contains(d.Unavailable, "dirty source checkout") {
		t.Fatalf("modified file: %q", d.Unavailable)
	}
	// A verified revision stands for the roots.
	r := buildDigest(t, PtoIsa, ComponentInputs{Roots: ci.Roots, VerifiedRevision: pin}, "")
	if r.Unavailable != "" || r.Evidence["build"].(inventory.Dict)["roots"] != nil {
		t.Fatalf("%+v", r)
	}
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
	// The epoch is part of the memo key.
	bin.Epoch = "1"
	e, _ := c.Capture(context.Background(), &bin)
	if e.Digest == build.Digest {
		t.Fatal("epoch ignored by the memo")
	}
}
