package realtoolchain

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptojit/ptojit/api"
)

// The variables of the ptoas test: a ptoas root (a directory holding an
// executable ptoas or bin/ptoas, e.g. a PTOAS build's tools/ptoas) and
// PTOAS's sample test/samples/Addc/addc.pto (out = a + b + c on 32x32
// float32).
const (
	ptoasVar = "PTOJIT_TEST_PTOAS"
	addcVar  = "PTOJIT_TEST_ADDC"
)

// TestAddcPto builds PTOAS's addc sample as kernel 0 of the vadd_pto
// request through a real ptoas (and the generated entry shim) against real
// PTO-ISA, then calls the kernel: every element must be a + b + c.
func TestAddcPto(t *testing.T) {
	ptoas, addc := os.Getenv(ptoasVar), os.Getenv(addcVar)
	if ptoas == "" || addc == "" {
		t.Skipf("%s and %s name no real ptoas and addc.pto", ptoasVar, addcVar)
	}
	w := newWorld(t, "content")
	b, err := os.ReadFile(filepath.Join(w.ex, "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	kernels := req["kernels"].([]any)
	kernels[0] = map[string]any{"func_id": 0, "source": addc, "signature": []string{"IN", "IN", "IN", "OUT"}, "core_type": "vec"}
	req["kernels"] = kernels[:2]
	req["toolchain"].(map[string]any)["ptoas_root"] = ptoas
	b, err = json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.ex, "addc.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := w.ptojit("build", "--json", "--request", "addc.json")
	var r api.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if r.Status != api.StatusMiss && r.Status != api.StatusUncached {
		t.Fatalf("build: %s %s", r.Status, r.Error)
	}
	t.Logf("build: %s %q in %.0f ms", r.Status, r.Unavailable, r.Timings.Total)
	var kernel string
	for _, o := range r.Outputs {
		if o.Name == "kernel_0.so" {
			kernel = o.Path
		}
	}
	const n = 32 * 32
	a, bb, c := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		a[i], bb[i], c[i] = float32(i)*0.5, 3-float32(i%17), float32(i%5)*0.25
	}
	z := make([]float32, n)
	for i := range z {
		z[i] = float32(math.NaN())
	}
	got, err := runKernel(kernel, [][]float32{a, bb, c, z}, 3)
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for i := range n {
		if want := a[i] + bb[i] + c[i]; got[i] != want {
			if wrong++; wrong <= 5 {
				t.Errorf("out[%d] = %v, want %v", i, got[i], want)
			}
		}
	}
	t.Logf("addc: %d elements, %d wrong", n, wrong)
}
