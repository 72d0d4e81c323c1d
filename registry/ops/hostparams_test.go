package ops_test

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

// paramRunnerModule is a native runner that depends on example.scan_rows
// and drives its scaled row prefix sum through the host operation
// service, passing on its own parameter scale: resolves that pass the
// parameter of another version, of another type, and not at all, then one
// that passes an infinite scale, which the provider's validate refuses,
// one that passes it as declared, an execute that passes scalars itself, and
// the execute of the resolved handle from its input matrix into its
// output matrix. It writes what it saw, one line per step, into its report
// tensor.
func paramRunnerModule() sourceModule {
	return sourceModule{
		"module.json": []byte(`{
  "package_id": "example.param_runner", "version": "1.0.0", "publisher": "org.example", "module_abi": 1,
  "runtime": "tensormap_and_ringbuffer", "platforms": ["a2a3sim"], "artifacts": [],
  "provided_ops": ["example.param_runner.run"],
  "module_dependencies": [{"module_id": "example.scan_rows", "min_version": "1.0.0", "max_version": "1.9.99", "abi_tag": "ptojit.module.v1"}],
  "operations": [{"impl_id": "example.param_runner.run", "op_name": "example.test.param_runner", "op_version": "1.0.0",
    "inputs": 1, "outputs": 2, "input_dtypes": ["f32"], "output_dtypes": ["any"], "rank": [1, 2], "sync_modes": ["blocking"],
    "parameters": [{"name": "scale", "type": "f32", "version": 1}],
    "callables": [{"platform": "a2a3sim", "artifact": "callables/runner.a2a3sim.bin"}]}]
}`),
		"runner.c": []byte(`#include <stdio.h>
#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *runner_config(void) { return &cfg; }
const char *ptojit_op_impl_id(void) { return "example.param_runner.run"; }
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap) { return 0; }
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out) { return 0; }

static int32_t resolve(const ptojit_op_service *ops, const ptojit_tensor *m, uint32_t count, uint32_t version, uint32_t type,
                       uint64_t value, uint64_t *h, char *msg, uint32_t cap)
{
    ptojit_op_tensor t[2] = {{.dtype = PTOJIT_DTYPE_FLOAT32, .ndim = 2, .shape = {m->shape[0], m->shape[1]}},
                             {.dtype = PTOJIT_DTYPE_FLOAT32, .ndim = 2, .shape = {m->shape[0], m->shape[1]}}};
    ptojit_op_query q = {PTOJIT_OP_ABI_VERSION, 2, 1, PTOJIT_SYNC_BLOCKING, t};
    ptojit_op_param p = {.name = "scale", .version = version, .type = type, .value = value};
    ptojit_op_resolve_request req = {
        .struct_size = sizeof req, .op_name = "example.sequence.row_prefix_sum", .min_version = "1.0.0", .query = &q,
        .msg = msg, .msg_capacity = cap, .host_budget = -1, .device_budget = -1, .params = &p, .param_count = count,
    };
    msg[0] = 0;
    return ops->resolve(ops->user, &req, h);
}

int32_t runner_orch(const ptojit_runtime *rt, const ptojit_args *a)
{
    if (rt->struct_size < PTOJIT_RUNTIME_SIZE_OPS || rt->operations == 0 || a->scalar_count != 1) {
        return 4;
    }
    const ptojit_op_service *ops = rt->operations;
    char *report = a->tensors[2].data;
    uint64_t cap = a->tensors[2].nbytes, used = 0, h, scale = a->scalars[0];
    char msg[512];
    int32_t rc;
#define LINE(...) used += (uint64_t)snprintf(report + used, used < cap ? cap - used : 0, __VA_ARGS__)
    rc = resolve(ops, &a->tensors[0], 1, 2, PTOJIT_PARAM_F32, scale, &h, msg, sizeof msg);
    LINE("version %d %s\n", rc, msg);
    rc = resolve(ops, &a->tensors[0], 1, 1, PTOJIT_PARAM_I32, 2, &h, msg, sizeof msg);
    LINE("type %d %s\n", rc, msg);
    rc = resolve(ops, &a->tensors[0], 0, 1, PTOJIT_PARAM_F32, scale, &h, msg, sizeof msg);
    LINE("none %d %s\n", rc, msg);
    rc = resolve(ops, &a->tensors[0], 1, 1, PTOJIT_PARAM_F32, 0x7f800000u, &h, msg, sizeof msg);
    LINE("infinite %d %s\n", rc, msg);
    rc = resolve(ops, &a->tensors[0], 1, 1, PTOJIT_PARAM_F32, scale, &h, msg, sizeof msg);
    LINE("resolve %d %s\n", rc, msg);
    if (rc != 0) {
        return 6;
    }
    ptojit_tensor t[2] = {a->tensors[0], a->tensors[1]};
    uint64_t mine = scale;
    ptojit_args args = {.abi_version = PTOJIT_SIM_ABI_VERSION, .tensor_count = 2, .tensors = t, .scalar_count = 1, .scalars = &mine};
    rc = ops->execute(ops->user, h, &args);
    LINE("scalars %d\n", rc);
    args.scalar_count = 0;
    args.scalars = 0;
    rc = ops->execute(ops->user, h, &args);
    LINE("execute %d\n", rc);
    rc = ops->release(ops->user, h);
    LINE("release %d\n", rc);
    return 0;
}
`),
		"nop.c": []byte("#include \"ptojit_sim.h\"\nint32_t ptojit_kernel(const ptojit_args *a) { return 0; }\n"),
		"runner.request.json": []byte(`{"orchestration": {"source": "runner.c", "function": "runner_orch", "config": "runner_config"},
 "kernels": [{"func_id": 0, "source": "nop.c", "signature": ["IN", "OUT", "OUT", "SCALAR"]}], "signature": ["IN", "OUT", "OUT", "SCALAR"]}`),
	}
}

// reportLines reads the NUL-terminated report a runner wrote into b: its
// lines by their first word.
func reportLines(t *testing.T, b worker.Buffer) map[string]string {
	t.Helper()
	f := b.Float32s()
	rb := unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
	end := strings.IndexByte(string(rb), 0)
	if end < 0 {
		t.Fatal("the report is not NUL-terminated")
	}
	report := strings.TrimRight(string(rb[:end]), "\n")
	t.Logf("runner report:\n%s", report)
	lines := map[string]string{}
	for _, l := range strings.Split(report, "\n") {
		k, v, _ := strings.Cut(l, " ")
		lines[k] = v
	}
	return lines
}

// TestHostServiceParams: a native runner passes an operation parameter
// through the host operation service. The service applies the daemon's
// parameter rules (a version mismatch, a type mismatch and a missing
// parameter are rejected with kind parameter and their reasons), refuses
// an execute whose args pass scalars of their own, and hands the resolved
// parameter to the provider at execution: every output element is the
// scaled row prefix sum.
func TestHostServiceParams(t *testing.T) {
	priv, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan_rows"], pack(t, paramRunnerModule(), priv, nil))
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	const n, rows, scale = 7, 3, 2.5
	q := ops.Query{OpName: "example.test.param_runner", Tensors: []ops.Tensor{
		{DType: ops.F32, Shape: []uint64{n, rows}}, {DType: ops.F32, Shape: []uint64{n, rows}}, {DType: ops.I32, Shape: []uint64{1024}},
	}, HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited, Params: []ops.Param{{Name: "scale", Version: 1, Value: fmt.Sprint(scale)}}}
	h, res, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatalf("%v\n%s", err, reasons(res))
	}
	defer h.Release(ctx)
	a := w.Arena()
	bufs := make([]worker.Buffer, 3)
	for i, sz := range []uint64{4 * n * rows, 4 * n * rows, 4 * 1024} {
		if bufs[i], err = a.Alloc(sz); err != nil {
			t.Fatal(err)
		}
		defer bufs[i].Free()
	}
	xs := bufs[0].Float32s()[:n*rows]
	for i := range xs {
		xs[i] = float32(i%5)*0.5 - 1
	}
	args := ops.Args{Tensors: []worker.Tensor{bufs[0].Tensor(worker.Float32, n, rows), bufs[1].Tensor(worker.Float32, n, rows),
		bufs[2].Tensor(worker.Int32, 1024)}}
	if err := h.Execute(ctx, args); err != nil {
		t.Fatal(err)
	}
	lines := reportLines(t, bufs[2])
	const none = "-3 no compatible implementation of example.sequence.row_prefix_sum 1.0.0: example.scan_rows.row_prefix_sum.f32: "
	for k, want := range map[string]string{
		"version":  none + "parameter: scale is version 1 here, the query passes version 2",
		"type":     none + "parameter: scale: passed as i32, the implementation declares f32",
		"none":     none + "parameter: scale (version 1, f32) is required and not passed",
		"infinite": none + "validate: scale inf is not finite",
		"resolve":  "0 ",
		"scalars":  "-4",
		"execute":  "0",
		"release":  "0",
	} {
		if got, ok := lines[k]; !ok || got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	ys := bufs[1].Float32s()[:n*rows]
	for r := range rows {
		var sum float64
		for i := range n {
			sum += float64(xs[r*n+i])
			if want := float32(sum * scale); ys[r*n+i] != want {
				t.Fatalf("row %d element %d: %v, want %v", r, i, ys[r*n+i], want)
			}
		}
	}
}
