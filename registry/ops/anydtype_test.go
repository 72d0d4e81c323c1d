package ops_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

// anyModule provides example.test.negate with the any dtype on its input
// and its output: the descriptor takes every dtype, and the provider's
// validate decides: it takes int32 vectors, output of the input's dtype,
// and refuses every other dtype with its own reason.
func anyModule() sourceModule {
	return sourceModule{
		"module.json": []byte(`{
  "package_id": "example.negate", "version": "1.0.0", "publisher": "org.example", "module_abi": 1,
  "runtime": "tensormap_and_ringbuffer", "platforms": ["a2a3sim"], "artifacts": [],
  "provided_ops": ["example.negate.any"],
  "operations": [{"impl_id": "example.negate.any", "op_name": "example.test.negate", "op_version": "1.0.0",
    "inputs": 1, "outputs": 1, "input_dtypes": ["any"], "output_dtypes": ["any"], "rank": [1, 1], "sync_modes": ["blocking"],
    "callables": [{"platform": "a2a3sim", "artifact": "callables/negate.a2a3sim.bin"}]}]
}`),
		"orch.c": []byte(`#include <stdio.h>
#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *negate_config(void) { return &cfg; }
const char *ptojit_op_impl_id(void) { return "example.negate.any"; }
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap)
{
    if (q->tensor_count != 2 || q->input_count != 1) {
        snprintf(msg, cap, "takes one input and one output");
        return 1;
    }
    if (q->tensors[0].dtype != PTOJIT_DTYPE_INT32) {
        snprintf(msg, cap, "negates int32 (dtype %u), not dtype %u", PTOJIT_DTYPE_INT32, q->tensors[0].dtype);
        return 2;
    }
    if (q->tensors[1].dtype != q->tensors[0].dtype || q->tensors[1].shape[0] != q->tensors[0].shape[0]) {
        snprintf(msg, cap, "the output is not of the input's dtype and length");
        return 3;
    }
    return 0;
}
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out)
{
    out->host_bytes = 0;
    out->device_bytes = 0;
    return 0;
}
int32_t negate_orch(const ptojit_runtime *rt, const ptojit_args *a)
{
    ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);
    return k == 0 || a->tensor_count != 2 ? 1 : k(a);
}
`),
		"kernel.c": []byte(`#include "ptojit_sim.h"
int32_t ptojit_kernel(const ptojit_args *a)
{
    const ptojit_tensor *in = &a->tensors[0], *out = &a->tensors[1];
    if (in->dtype != PTOJIT_DTYPE_INT32 || out->dtype != PTOJIT_DTYPE_INT32 || in->shape[0] != out->shape[0]) {
        return 10;
    }
    const int32_t *x = in->data;
    int32_t *y = out->data;
    for (uint64_t i = 0; i < in->shape[0]; i++) {
        y[i] = -x[i];
    }
    return 0;
}
`),
		"negate.request.json": []byte(`{"orchestration": {"source": "orch.c", "function": "negate_orch", "config": "negate_config"},
 "kernels": [{"func_id": 0, "source": "kernel.c", "signature": ["IN", "OUT"]}], "signature": ["IN", "OUT"]}`),
	}
}

// TestAnyDTypeProvider: a descriptor that takes the any dtype lets every
// dtype reach the provider's validate, which decides: an int32 query
// resolves and executes (every element checked), a float32 one and one
// whose output dtype differs are rejected with kind validate and the
// provider's reasons.
func TestAnyDTypeProvider(t *testing.T) {
	priv, _, _ := examples(t)
	s := newStore(t)
	install(t, s, pack(t, anyModule(), priv, nil))
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	const n = 50
	query := func(in, out ops.DType) ops.Query {
		return ops.Query{OpName: "example.test.negate", Tensors: []ops.Tensor{{DType: in, Shape: []uint64{n}}, {DType: out, Shape: []uint64{n}}},
			HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	}
	for _, c := range []struct {
		in, out ops.DType
		want    string
	}{
		{ops.F32, ops.F32, "validate: negates int32 (dtype 2), not dtype 1"},
		{ops.I32, ops.F32, "validate: the output is not of the input's dtype and length"},
	} {
		_, res, err := svc.Resolve(ctx, query(c.in, c.out))
		var nf *ops.NotFoundError
		if !errors.As(err, &nf) || len(res.Rejected) != 1 || res.Rejected[0].Kind != "validate" || res.Rejected[0].Reason != c.want {
			t.Errorf("%v -> %v: %v\n%s", c.in, c.out, err, reasons(res))
		}
	}
	h, res, err := svc.Resolve(ctx, query(ops.I32, ops.I32))
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
	xs := int32s(bi)[:n]
	for i := range xs {
		xs[i] = int32(i*i) - 300
	}
	if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{bi.Tensor(worker.Int32, n), bo.Tensor(worker.Int32, n)}}); err != nil {
		t.Fatal(err)
	}
	for i, y := range int32s(bo)[:n] {
		if y != -xs[i] {
			t.Fatalf("element %d: %d, want %d", i, y, -xs[i])
		}
	}
}

// int32s is the buffer's memory as int32 elements.
func int32s(b worker.Buffer) []int32 {
	f := b.Float32s()
	return unsafe.Slice((*int32)(unsafe.Pointer(&f[0])), len(f))
}
