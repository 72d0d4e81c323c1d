package jit

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/registry"
)

// axpyModule is a .pto module whose entry is marked, beside a helper and
// a declaration.
const axpyModule = `module {
  func.func private @external_helper(!pto.ptr<f32>, i32)
  func.func @helper(%arg0: !pto.ptr<f32>) {
    return
  }
  func.func @vec_axpy(
      %arg0: !pto.ptr<f32>, %arg1: !pto.ptr<f32> {pto.note = "y"},
      %arg2: !pto.ptr<f32>, %arg3: f32, %arg4: i32)
      attributes {pto.entry} {
    %c0 = arith.constant 0 : index
    return
  }
}
`

func TestParsePtoEntry(t *testing.T) {
	e, err := parsePtoEntry([]byte(axpyModule))
	if err != nil || e.name != "vec_axpy" || len(e.params) != 5 || e.params[2] != ptoPointer || e.params[3] != ptoF32 || e.params[4] != ptoInt {
		t.Fatalf("entry %+v, %v", e, err)
	}
	// The only definition is the entry without a mark.
	one := "module {\n  func.func @k(%a: !pto.ptr<f16>, %n: index) {\n    return\n  }\n}\n"
	if e, err := parsePtoEntry([]byte(one)); err != nil || e.name != "k" || len(e.params) != 2 {
		t.Errorf("single definition: %+v, %v", e, err)
	}
	for text, want := range map[string]string{
		strings.Replace(axpyModule, "attributes {pto.entry} ", "", 1): "none marked",
		"module {}": "no function definition",
		strings.Replace(one, "%n: index", "%n: vector<4xf32>", 1): "cannot be passed",
	} {
		if _, err := parsePtoEntry([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// assembledAxpy is what a ptoas of the real kind writes for axpyModule: a
// C++ entry function, no ptojit_kernel.
const assembledAxpy = `#include "pto/pto-inst.hpp"
#ifndef AICORE
#define AICORE
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __gm__
#define __gm__
#endif
__global__ AICORE void vec_axpy(__gm__ float *x, __gm__ float *y, __gm__ float *z, float a, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        z[i] = a * x[i] + y[i];
    }
}
`

// A .pto kernel whose assembled C++ defines no ptojit_kernel is compiled
// with a generated shim: the object exports ptojit_kernel, which passes
// the tensors and scalars to the entry in order.
func TestPtoShim(t *testing.T) {
	if unsafe.Sizeof(simTensor{}) != 56 || unsafe.Sizeof(simArgs{}) != 32 {
		t.Skip("the sim ABI layout assumes a 64-bit host")
	}
	dir, req := copyExamples(t)
	ptoas := filepath.Join(dir, "realish-ptoas")
	if err := os.MkdirAll(filepath.Join(ptoas, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ptoas, "assembled.cpp"), assembledAxpy)
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'ptoas 0.27'; exit 0; fi\ncat " + filepath.Join(ptoas, "assembled.cpp") + " > \"$3\"\n"
	if err := os.WriteFile(filepath.Join(ptoas, "bin", "ptoas"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "vadd", "axpy.pto")
	writeFile(t, src, axpyModule)
	req.Toolchain.PtoasRoot = ptoas
	req.Kernels[0].Source = src
	store := cache.NewMemory(cache.Options{})
	resp := build(t, newDriver(t, store), req, api.StatusMiss)
	build(t, newDriver(t, store), req, api.StatusHit)

	blob, err := os.ReadFile(resp.Callable)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := registry.ParseChipCallable(blob)
	if err != nil {
		t.Fatal(err)
	}
	var bin []byte
	for _, ch := range cc.Children {
		if ch.FuncID == 0 {
			bin = ch.Core.Binary
		}
	}
	p := filepath.Join(t.TempDir(), "kernel_0.so")
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	defer purego.Dlclose(h)
	fn, err := purego.Dlsym(h, "ptojit_kernel")
	if err != nil {
		t.Fatal(err)
	}
	const n = 19
	x, y, z := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		x[i], y[i], z[i] = float32(i), 1-float32(i)*0.25, float32(math.NaN())
	}
	a := float32(2.5)
	tensor := func(v []float32) simTensor {
		return simTensor{data: unsafe.Pointer(&v[0]), nbytes: uint64(4 * len(v)), dtype: 1, ndim: 1, shape: [4]uint64{uint64(len(v))}}
	}
	tensors := []simTensor{tensor(x), tensor(y), tensor(z)}
	scalars := []uint64{uint64(math.Float32bits(a)), n}
	args := &simArgs{abiVersion: simABIVersion, tensorCount: 3, tensors: &tensors[0], scalarCount: 2, scalars: &scalars[0]}
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, p := range []any{&x[0], &y[0], &z[0], &tensors[0], &scalars[0], args} {
		pin.Pin(p)
	}
	if rc, _, _ := purego.SyscallN(fn, uintptr(unsafe.Pointer(args))); int32(rc) != 0 {
		t.Fatalf("ptojit_kernel returned %d", int32(rc))
	}
	for i := range n {
		if want := a*x[i] + y[i]; z[i] != want {
			t.Errorf("z[%d] = %v, want %v", i, z[i], want)
		}
	}
	// A call with another number of scalars is refused, not run.
	args.scalarCount = 1
	if rc, _, _ := purego.SyscallN(fn, uintptr(unsafe.Pointer(args))); int32(rc) != 1 {
		t.Errorf("one scalar: ptojit_kernel returned %d, want 1", int32(rc))
	}
}

// FuzzParsePtoEntry: any text either has no entry or one whose name is a
// C identifier, whose shim calls it.
func FuzzParsePtoEntry(f *testing.F) {
	f.Add(axpyModule)
	f.Add("module {\n  func.func @k(%a: !pto.ptr<f16>, %n: index) {\n    return\n  }\n}\n")
	f.Add("func.func @a(%x: memref<4x<f32>>) attributes {pto.entry} -> i32 {")
	f.Fuzz(func(t *testing.T, text string) {
		e, err := parsePtoEntry([]byte(text))
		if err != nil {
			return
		}
		if !isCIdent(e.name) {
			t.Fatalf("entry %q is not a C identifier", e.name)
		}
		if !strings.Contains(string(e.shim("assembled.cpp", "k.pto")), "    "+e.name+"(") {
			t.Fatalf("the shim does not call %s", e.name)
		}
	})
}
