// Package realtoolchain builds the vadd_pto example against a real PTO-ISA
// checkout with a real compiler. It runs only when PTOJIT_TEST_PTO_ISA names
// a PTO-ISA git checkout or git bundle holding the example's pin, and fails
// when it is set and anything is broken: the checkout, the compiler, the
// build.
//
//	PTOJIT_TEST_PTO_ISA=$HOME/pto-isa go test ./test/realtoolchain
//
// The compiler is $PTOJIT_TEST_CXX, else clang++-19 from PATH. The short
// form (-short) builds under the content policy: a miss, a hit with no
// compiler run, and `ptojit run` with every element right. The full form
// adds the build policy, the gemm kernel's numbers, and a PTO-ISA header
// edited (a miss naming it) and restored (a hit). With PTOJIT_TEST_PTOAS (a
// real ptoas's root) and PTOJIT_TEST_ADDC (PTOAS's addc.pto sample) it also
// builds addc through ptoas and the generated entry shim, a cached miss and
// then a hit (under the content policy in -short, else under both), and
// runs the hit's kernel.
package realtoolchain

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/test/fixture"
)

// The variables of the test.
const (
	isaVar = "PTOJIT_TEST_PTO_ISA"
	cxxVar = "PTOJIT_TEST_CXX"
)

// pin is the PTO-ISA commit the example's request names.
const pin = "3186c381bd49e1164092e67ff1b3564302754e76"

// Deadlines: a miss compiles four units of real PTO-ISA (10-30 s on a
// loaded machine); git clones and checks out 6,000 files.
const (
	buildDeadline = 5 * time.Minute
	gitDeadline   = 2 * time.Minute
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.RemoveBinaries()
	os.Exit(code)
}

// world is a copy of the examples, a PTO-ISA checkout at the pin, a cache
// and the environment of ptojit.
type world struct {
	t   *testing.T
	bin string
	ex  string // the vadd_pto example
	isa string // the PTO-ISA checkout
	env []string
}

func newWorld(t *testing.T, policy string) *world {
	src := os.Getenv(isaVar)
	if src == "" {
		t.Skipf("%s names no PTO-ISA checkout or bundle", isaVar)
	}
	cxx := os.Getenv(cxxVar)
	if cxx == "" {
		cxx = "clang++-19"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		t.Fatalf("%s is set but the compiler %s is not found (set %s): %v", isaVar, cxx, cxxVar, err)
	}
	bin, err := fixture.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := fixture.CopyExamples(filepath.Join(root, "ex")); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, bin: bin, ex: filepath.Join(root, "ex", "vadd_pto"), isa: filepath.Join(root, "pto-isa")}
	w.git(root, "clone", "--quiet", "--no-checkout", src, w.isa)
	w.git(w.isa, "-c", "advice.detachedHead=false", "checkout", "--quiet", pin)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PTOJIT_") && !strings.HasPrefix(name, "PYPTO_") && name != "PTO_ISA_ROOT" && name != "CXX" && name != "XDG_RUNTIME_DIR" {
			w.env = append(w.env, kv)
		}
	}
	w.env = append(w.env, "PTO_ISA_ROOT="+w.isa, "CXX="+cxx, "PYPTO_CACHE_IDENTITY="+policy, "PTOJIT_DAEMON=0",
		"PTOJIT_CACHE_DIR="+filepath.Join(root, "cache"), "XDG_RUNTIME_DIR="+filepath.Join(root, "run"))
	return w
}

func (w *world) git(dir string, args ...string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gitDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("%s: git %s: %v\n%s", isaVar, strings.Join(args, " "), err, out)
	}
}

// ptojit runs ptojit in the example's directory and returns its standard
// output; a failure fails the test.
func (w *world) ptojit(args ...string) []byte {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), buildDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(w.bin, "ptojit"), args...)
	cmd.Dir, cmd.Env = w.ex, w.env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("ptojit %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// build builds the example and checks its status.
func (w *world) build(want api.Status) *api.Response {
	w.t.Helper()
	return w.buildRequest("request.json", want)
}

// buildRequest builds the request in the example's directory and checks its
// status; a hit must not have run the compiler.
func (w *world) buildRequest(request string, want api.Status) *api.Response {
	w.t.Helper()
	out := w.ptojit("build", "--json", "--request", request)
	var r api.Response
	if err := json.Unmarshal(out, &r); err != nil {
		w.t.Fatalf("build: %v\n%s", err, out)
	}
	if r.Status != want {
		w.t.Fatalf("build: %s (miss reason %q, unavailable %q), want %s", r.Status, r.MissReason, r.Unavailable, want)
	}
	if want == api.StatusHit && r.Timings.Compile != 0 {
		w.t.Errorf("a hit spent %.1f ms compiling", r.Timings.Compile)
	}
	w.t.Logf("build: %s in %.0f ms (identity %.0f ms, compile %.0f ms)", r.Status, r.Timings.Total, r.Timings.Identity, r.Timings.Compile)
	return &r
}

// run runs the example's tasks and checks that every element is right.
func (w *world) run() {
	w.t.Helper()
	out := w.ptojit("run", "--request", "request.json", "--tasks", "100", "--len", "1000", "--json")
	var r struct {
		Build      string `json:"build"`
		Verified   int    `json:"verified_elements"`
		Mismatches int    `json:"mismatches"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		w.t.Fatalf("run: %v\n%s", err, out)
	}
	if r.Build != string(api.StatusHit) || r.Verified != 100*1000 || r.Mismatches != 0 {
		w.t.Fatalf("run: build %s, %d elements verified, %d wrong; want a hit, 100000 and 0", r.Build, r.Verified, r.Mismatches)
	}
}

func TestVaddPto(t *testing.T) {
	policies := []string{"content", "build"}
	if testing.Short() {
		policies = policies[:1]
	}
	for _, policy := range policies {
		t.Run(policy, func(t *testing.T) {
			w := newWorld(t, policy)
			miss := w.build(api.StatusMiss)
			w.build(api.StatusHit)
			w.run()
			if testing.Short() {
				return
			}
			checkGemm(t, miss)
			// A PTO-ISA header the kernels read, edited: a miss naming it;
			// restored: a hit on the first entry.
			hdr := filepath.Join(w.isa, "include", "pto", "cpu", "TAdd.hpp")
			orig, err := os.ReadFile(hdr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(hdr, append(bytes.Clone(orig), "\n// edited\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
			r := w.build(api.StatusMiss)
			if b, _ := json.Marshal(r); !bytes.Contains(b, []byte("TAdd.hpp")) {
				t.Errorf("the miss after editing TAdd.hpp does not name it: reason %q, changed %+v", r.MissReason, r.Changed)
			}
			if err := os.WriteFile(hdr, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			if r := w.build(api.StatusHit); r.Key != miss.Key {
				t.Errorf("restored: key %s, want the first build's %s", r.Key, miss.Key)
			}
		})
	}
}

// checkGemm runs kernel_2.so (c = a * b, 16x16x16) on known matrices and
// compares it with a float64 product.
func checkGemm(t *testing.T, r *api.Response) {
	var kernel string
	for _, o := range r.Outputs {
		if o.Name == "kernel_2.so" {
			kernel = o.Path
		}
	}
	if kernel == "" {
		t.Fatal("no kernel_2.so among the outputs")
	}
	const m, k, n = 16, 16, 16
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%7) - 2.5
	}
	for i := range b {
		b[i] = float32(i%5)*0.25 - 0.5
	}
	c, err := runKernel(kernel, [][]float32{a, b, make([]float32, m*n)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range m {
		for j := range n {
			want := 0.0
			for x := range k {
				want += float64(a[i*k+x]) * float64(b[x*n+j])
			}
			worst = math.Max(worst, math.Abs(float64(c[i*n+j])-want))
		}
	}
	t.Logf("gemm 16x16x16: max_abs_diff %.3g", worst)
	if worst > 1e-4 {
		t.Errorf("gemm: max_abs_diff %g", worst)
	}
}
