package ops_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

// abi10Module is a runtime module whose callables are compiled against
// ptojit_sim.h as ABI 1.0 declared it (testdata/abi10/ptojit_sim.h, the
// header before 1.1: ptojit_tensor without strides, ptojit_args with the
// field reserved where 1.1 has struct_size and no strides tail,
// ptojit_op_query without the 1.2 parameters tail). The copy sits beside
// the sources as ptojit_sim.h, so the quoted includes take it before the
// current header; the sources refuse to compile against any other. Its
// manifest names no kernel_abi (1.0..1.0). The operation scales a float32
// vector by its parameter alpha; validate refuses vectors of another
// length than the output's.
func abi10Module(t *testing.T) sourceModule {
	h, err := os.ReadFile(filepath.Join("testdata", "abi10", "ptojit_sim.h"))
	if err != nil {
		t.Fatal(err)
	}
	const layout = `#include <stddef.h>
#include "ptojit_sim.h"
#ifdef PTOJIT_SIM_ABI_MINOR
#error "not the 1.0 header"
#endif
_Static_assert(sizeof(ptojit_tensor) == 56 && sizeof(ptojit_args) == 32 && offsetof(ptojit_args, reserved) == 20, "1.0 ptojit_args");
_Static_assert(sizeof(ptojit_op_query) == 24, "1.0 ptojit_op_query");
`
	return sourceModule{
		"ptojit_sim.h": h,
		"module.json": []byte(`{
  "package_id": "example.abi10", "version": "1.0.0", "publisher": "org.example", "module_abi": 1,
  "runtime": "tensormap_and_ringbuffer", "platforms": ["a2a3sim"], "artifacts": [],
  "provided_ops": ["example.abi10.scale.f32"],
  "operations": [{"impl_id": "example.abi10.scale.f32", "op_name": "example.test.scale", "op_version": "1.0.0",
    "inputs": 1, "outputs": 1, "input_dtypes": ["f32"], "output_dtypes": ["f32"], "rank": [1, 1], "sync_modes": ["blocking"],
    "parameters": [{"name": "alpha", "type": "f32", "version": 1}],
    "callables": [{"platform": "a2a3sim", "artifact": "callables/scale.a2a3sim.bin"}]}]
}`),
		"orch.c": []byte(layout + `#include <stdio.h>
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *scale_config(void) { return &cfg; }
const char *ptojit_op_impl_id(void) { return "example.abi10.scale.f32"; }
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap)
{
    if (q->abi_version != PTOJIT_OP_ABI_VERSION || q->tensor_count != 2 || q->input_count != 1) {
        snprintf(msg, cap, "takes one input and one output");
        return 1;
    }
    if (q->tensors[0].shape[0] != q->tensors[1].shape[0]) {
        snprintf(msg, cap, "input of %llu elements, output of %llu", (unsigned long long)q->tensors[0].shape[0],
                 (unsigned long long)q->tensors[1].shape[0]);
        return 2;
    }
    return 0;
}
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out)
{
    out->host_bytes = 0;
    out->device_bytes = 0;
    return 0;
}
int32_t scale_orch(const ptojit_runtime *rt, const ptojit_args *a)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || a->abi_version != PTOJIT_SIM_ABI_VERSION || a->tensor_count != 2 || a->scalar_count != 1) {
        return 1;
    }
    ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);
    return k == 0 ? 2 : k(a);
}
`),
		"kernel.c": []byte(layout + `#include <string.h>
int32_t ptojit_kernel(const ptojit_args *a)
{
    const ptojit_tensor *in = &a->tensors[0], *out = &a->tensors[1];
    if (in->ndim != 1 || out->ndim != 1 || in->shape[0] != out->shape[0] || in->nbytes < 4 * in->shape[0] || out->nbytes < 4 * out->shape[0]) {
        return 10;
    }
    uint32_t bits = (uint32_t)a->scalars[0];
    float alpha;
    memcpy(&alpha, &bits, sizeof alpha);
    const float *x = in->data;
    float *y = out->data;
    for (uint64_t i = 0; i < in->shape[0]; i++) {
        y[i] = alpha * x[i];
    }
    return 0;
}
`),
		"scale.request.json": []byte(`{"orchestration": {"source": "orch.c", "function": "scale_orch", "config": "scale_config"},
 "kernels": [{"func_id": 0, "source": "kernel.c", "signature": ["IN", "OUT", "SCALAR"]}], "signature": ["IN", "OUT", "SCALAR"]}`),
	}
}

// TestABI10Module: a module built against the 1.0 header installs (its
// kernel ABI 1.0..1.0 shares 1.0 with this build's range), negotiates on
// this build's query (whose 1.0 prefix it reads; its validate's refusal
// reaches the resolution), and executes on this build's ptojit_args
// (whose 1.0 prefix it reads): every element is checked.
func TestABI10Module(t *testing.T) {
	priv, _, _ := examples(t)
	s := newStore(t)
	install(t, s, pack(t, abi10Module(t), priv, nil))
	in, err := s.Lookup("example.abi10")
	if err != nil {
		t.Fatal(err)
	}
	if r := in.Manifest.KernelABIRange(); r != module.DefaultKernelABI {
		t.Fatalf("kernel ABI %v, want the 1.0 default", r)
	}
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	const n, alpha = 37, -1.25
	query := func(out uint64) ops.Query {
		return ops.Query{OpName: "example.test.scale", Tensors: []ops.Tensor{{DType: ops.F32, Shape: []uint64{n}}, {DType: ops.F32, Shape: []uint64{out}}},
			HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited, Params: []ops.Param{{Name: "alpha", Version: 1, Value: fmt.Sprint(alpha)}}}
	}
	if _, res, err := svc.Resolve(ctx, query(n+1)); err == nil || len(res.Rejected) != 1 || res.Rejected[0].Kind != "validate" ||
		res.Rejected[0].Reason != fmt.Sprintf("validate: input of %d elements, output of %d", n, n+1) {
		t.Fatalf("a mismatched output: %v\n%s", err, reasons(res))
	}
	h, res, err := svc.Resolve(ctx, query(n))
	if err != nil {
		t.Fatalf("%v\n%s", err, reasons(res))
	}
	defer h.Release(ctx)
	a := w.Arena()
	bi, err := a.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer bi.Free()
	bo, err := a.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer bo.Free()
	xs := bi.Float32s()[:n]
	for i := range xs {
		xs[i] = float32(i%9) - 3.5
	}
	if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{bi.Tensor(worker.Float32, n), bo.Tensor(worker.Float32, n)}}); err != nil {
		t.Fatal(err)
	}
	for i, y := range bo.Float32s()[:n] {
		if want := float32(alpha) * xs[i]; y != want {
			t.Fatalf("element %d: %v, want %v", i, y, want)
		}
	}
}
