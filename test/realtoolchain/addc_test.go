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
// PTO-ISA under each policy: a cached miss, then a hit with no compiler run
// on the same key, whose kernel is called: every element must be a + b + c.
func TestAddcPto(t *testing.T) {
	ptoas, addc := os.Getenv(ptoasVar), os.Getenv(addcVar)
	if ptoas == "" || addc == "" {
		t.Skipf("%s and %s name no real ptoas and addc.pto", ptoasVar, addcVar)
	}
	policies := []string{"content", "build"}
	if testing.Short() {
		policies = policies[:1]
	}
	for _, policy := range policies {
		t.Run(policy, func(t *testing.T) { addcPto(t, policy, ptoas, addc) })
	}
}

// addcPto is TestAddcPto under one identity policy.
func addcPto(t *testing.T, policy, ptoas, addc string) {
	w := newWorld(t, policy)
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
	miss := w.buildRequest("addc.json", api.StatusMiss)
	hit := w.buildRequest("addc.json", api.StatusHit)
	if hit.Key != miss.Key {
		t.Errorf("hit: key %s, want the miss's %s", hit.Key, miss.Key)
	}
	var kernel string
	for _, o := range hit.Outputs {
		if o.Name == "kernel_0.so" {
			kernel = o.Path
		}
	}
	if kernel == "" {
		t.Fatal("no kernel_0.so among the hit's outputs")
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
