package jit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/test/fixture"
)

// gitCheckout copies the examples to dir, makes dir a git work tree with
// every file committed, and returns the request there under the default
// policy (policy "" is the build policy) with the base directory the
// request would get (the work tree).
func gitCheckout(t *testing.T, dir string, edit func(dir string)) *api.Request {
	t.Helper()
	if err := fixture.CopyExamples(dir); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(dir)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "examples"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
	p := filepath.Join(dir, "vadd", "request.json")
	req := loadRequest(t, p)
	req.Toolchain.Policy = ""
	req.BaseDir = api.DefaultBaseDir(filepath.Dir(p))
	if req.BaseDir != dir {
		t.Fatalf("base %s, want the work tree %s", req.BaseDir, dir)
	}
	return req
}

// asLogger builds, in dir, an assembler that logs each run to log and
// runs the real one: an ELF file, which the build policy accepts where
// it refuses a shell wrapper. gcc finds "as" on PATH; every unit compile
// assembles once.
func asLogger(t *testing.T, dir, log string) {
	t.Helper()
	real, err := exec.LookPath("as")
	if err != nil {
		t.Skip("no assembler on PATH")
	}
	src := filepath.Join(dir, "as.c")
	prog := `#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	(void)argc;
	FILE *f = fopen(LOG, "a");
	if (f) { fputs("as\n", f); fclose(f); }
	execv(REAL, argv);
	return 127;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("gcc", "-O2", `-DLOG="`+log+`"`, `-DREAL="`+real+`"`, "-o", filepath.Join(dir, "as"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("building the assembler logger: %v\n%s", err, out)
	}
}

// TestCheckoutsShareEntries: two git work trees of the same files at
// different paths and depths have equal keys under the default (build)
// policy and under content, compile to byte-identical outputs, and the
// second gets a remote hit of the first's entry with no compile. A third
// copy that differs in one file of a toolchain component inside the base
// has another key.
func TestCheckoutsShareEntries(t *testing.T) {
	node := fixture.StartRedis(t, false)
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(root, "as.log")
	asLogger(t, bin, logf)
	for _, policy := range []string{"", "content"} {
		name := policy
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			reqs := []*api.Request{
				gitCheckout(t, filepath.Join(dir, "a", "ex"), nil),
				gitCheckout(t, filepath.Join(dir, "b", "deeper", "ex"), nil),
				gitCheckout(t, filepath.Join(dir, "c", "ex"), func(d string) {
					p := filepath.Join(d, "toolchain", "pto-isa", "include", "pto", "common", "type.hpp")
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, append(b, "\n// edited\n"...), 0o644); err != nil {
						t.Fatal(err)
					}
				}),
			}
			for _, r := range reqs {
				r.Toolchain.Policy = policy
			}
			checkoutsShare(t, node.Addr, reqs, "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), logf)
		})
	}
}

// checkoutsShare checks TestCheckoutsShareEntries for the requests of the
// three checkouts, a, b (the same files elsewhere) and c (one file
// differs).
func checkoutsShare(t *testing.T, addr string, reqs []*api.Request, path, logf string) {
	getenv, environ := env(path)
	environ = environ[1:] // path replaces the PATH env puts first
	machine := func(r *remote.Remote) *Driver {
		return New(Options{Store: withRemote(cache.NewMemory(cache.Options{}), r), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	}
	keys := make([]*KeyReport, len(reqs))
	for i, req := range reqs {
		k, err := machine(nil).KeyOf(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !k.Usable {
			t.Fatalf("%s: key unavailable: %v", req.BaseDir, k.Unavailable)
		}
		keys[i] = k
	}
	if keys[0].Key != keys[1].Key {
		t.Fatalf("checkouts at different paths have different keys under %s:\n%s\n%s", keys[0].Policy, keys[0].RecordWire, keys[1].RecordWire)
	}
	if keys[2].Key == keys[0].Key {
		t.Fatal("a checkout with an edited PTO-ISA header has the same key")
	}
	// The key report names the relative paths (the pypto package under
	// the build policy, its root under content).
	for _, want := range []string{"toolchain.pto_isa: toolchain/pto-isa", "toolchain.pypto: toolchain/pypto", "build.orchestration: vadd/orchestration.c"} {
		if !slices.ContainsFunc(keys[0].Relative, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("the key report's relative paths %q lack %q", keys[0].Relative, want)
		}
	}

	tierA, err := remote.New(remote.Config{Target: &remote.Target{Addrs: []string{addr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tierA.Close()
	_ = os.Remove(logf)
	respA := build(t, machine(tierA), reqs[0], api.StatusMiss)
	if n := compiles(t, logf); n != 3 {
		t.Fatalf("A assembled %d units, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := tierA.Drain(ctx); n != 0 {
		t.Fatalf("A's publication abandoned %d entries", n)
	}

	// B, at another path: a fresh compile gives A's bytes, and a machine
	// reading A's tier hits with no compile.
	fresh := build(t, machine(nil), reqs[1], api.StatusMiss)
	if n := compiles(t, logf); n != 3 {
		t.Fatalf("B's fresh build assembled %d units, want 3", n)
	}
	sameOutputs(t, respA, fresh)
	tierB, err := remote.New(remote.Config{Target: &remote.Target{Addrs: []string{addr}}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tierB.Close()
	respB := build(t, machine(tierB), reqs[1], api.StatusHit)
	if respB.HitTier != TierRemote || respB.Key != respA.Key {
		t.Fatalf("B: tier %q key %s, want a remote hit of A's key %s", respB.HitTier, respB.Key, respA.Key)
	}
	if n := compiles(t, logf); n != 0 {
		t.Fatalf("B assembled %d units on a remote hit", n)
	}
	sameOutputs(t, respA, respB)

	// C differs in one file: a miss, compiled.
	if r := build(t, machine(tierB), reqs[2], api.StatusMiss); r.Key == respA.Key {
		t.Fatal("C hit A's entry")
	}
	if n := compiles(t, logf); n != 3 {
		t.Fatalf("C assembled %d units, want 3", n)
	}
}

// sameOutputs fails unless b's outputs have a's names and bytes.
func sameOutputs(t *testing.T, a, b *api.Response) {
	t.Helper()
	if len(a.Outputs) != len(b.Outputs) || len(a.Outputs) == 0 {
		t.Fatalf("%d outputs and %d", len(a.Outputs), len(b.Outputs))
	}
	for i, o := range b.Outputs {
		x, err1 := os.ReadFile(a.Outputs[i].Path)
		y, err2 := os.ReadFile(o.Path)
		if err1 != nil || err2 != nil || o.Name != a.Outputs[i].Name || !bytes.Equal(x, y) {
			t.Errorf("output %s differs between the checkouts (%v %v)", o.Name, err1, err2)
		}
	}
	if !strings.EqualFold(a.Hashid, b.Hashid) {
		t.Errorf("hashid %s and %s", a.Hashid, b.Hashid)
	}
}
