package ops_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

// runnerModule is a native runner that depends on example.scan_blocked and
// drives the host operation service from its orchestration: queries that
// the rank, dtype and budget rules reject, one for an operation outside
// its dependencies, then the blockwise prefix sum from its input into its
// output with the scratch the implementation asks for carved out of its
// work tensor. It writes what it saw, one line per step, into its report
// tensor.
func runnerModule() sourceModule {
	return sourceModule{
		"module.json": []byte(`{
  "package_id": "example.runner", "version": "1.0.0", "publisher": "org.example", "module_abi": 1,
  "runtime": "tensormap_and_ringbuffer", "platforms": ["a2a3sim"], "artifacts": [],
  "provided_ops": ["example.runner.run"],
  "module_dependencies": [{"module_id": "example.scan_blocked", "min_version": "1.0.0", "max_version": "1.9.99", "abi_tag": "ptojit.module.v1"}],
  "operations": [{"impl_id": "example.runner.run", "op_name": "example.test.runner", "op_version": "1.0.0",
    "inputs": 1, "outputs": 3, "input_dtypes": ["f32"], "output_dtypes": ["any"], "rank": [1, 1], "sync_modes": ["blocking"],
    "callables": [{"platform": "a2a3sim", "artifact": "callables/runner.a2a3sim.bin"}]}]
}`),
		"runner.c": []byte(`#include <stdio.h>
#include <string.h>
#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *runner_config(void) { return &cfg; }
const char *ptojit_op_impl_id(void) { return "example.runner.run"; }
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap) { return 0; }
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out) { return 0; }

static int32_t resolve(const ptojit_op_service *ops, const char *op, const char *exact, uint32_t dtype, uint32_t ndim,
                       uint64_t n, int64_t device_budget, uint64_t *h, char *msg, uint32_t cap)
{
    ptojit_op_tensor t[2] = {{.dtype = dtype, .ndim = ndim, .shape = {n, 2}}, {.dtype = dtype, .ndim = ndim, .shape = {n, 2}}};
    ptojit_op_query q = {PTOJIT_OP_ABI_VERSION, 2, 1, PTOJIT_SYNC_BLOCKING, t};
    const char *caps[] = {"example.sequence.blockwise"};
    ptojit_op_resolve_request req = {
        .struct_size = sizeof req, .op_name = op, .min_version = "1.0.0", .query = &q, .msg = msg, .msg_capacity = cap,
        .exact_impl_id = exact, .capabilities = caps, .capability_count = 1, .host_budget = -1, .device_budget = device_budget,
    };
    msg[0] = 0;
    return ops->resolve(ops->user, &req, h);
}

int32_t runner_orch(const ptojit_runtime *rt, const ptojit_args *a)
{
    if (rt->struct_size < PTOJIT_RUNTIME_SIZE_OPS || rt->operations == 0) {
        return 4;
    }
    const ptojit_op_service *ops = rt->operations;
    if (ops->struct_size < PTOJIT_OP_SERVICE_SIZE_DESCRIBE || ops->version != PTOJIT_OP_SERVICE_VERSION) {
        return 5;
    }
    char *report = a->tensors[3].data;
    uint64_t cap = a->tensors[3].nbytes, used = 0;
    char msg[512];
    uint64_t h, n = a->tensors[0].nbytes / sizeof(float);
    int32_t rc;
#define LINE(...) used += (uint64_t)snprintf(report + used, used < cap ? cap - used : 0, __VA_ARGS__)
    rc = resolve(ops, "example.sequence.prefix_sum", 0, PTOJIT_DTYPE_FLOAT32, 2, n, -1, &h, msg, sizeof msg);
    LINE("rank %d %s\n", rc, msg);
    rc = resolve(ops, "example.sequence.prefix_sum", 0, PTOJIT_DTYPE_INT32, 1, n, -1, &h, msg, sizeof msg);
    LINE("dtype %d %s\n", rc, msg);
    rc = resolve(ops, "example.sequence.prefix_sum", 0, PTOJIT_DTYPE_FLOAT32, 1, n, 8, &h, msg, sizeof msg);
    LINE("budget %d %s\n", rc, msg);
    rc = resolve(ops, "example.sequence.prefix_sum", "example.scan.prefix_sum.f32", PTOJIT_DTYPE_FLOAT32, 1, n, -1, &h, msg, sizeof msg);
    LINE("outside %d %s\n", rc, msg);
    rc = resolve(ops, "example.sequence.prefix_sum", 0, PTOJIT_DTYPE_FLOAT32, 1, n, -1, &h, msg, sizeof msg);
    LINE("resolve %d %s\n", rc, msg);
    if (rc != 0) {
        return 6;
    }
    const ptojit_op_description *d = 0;
    rc = ops->describe_contract(ops->user, h, &d);
    if (rc != 0 || d == 0) {
        return 7;
    }
    LINE("describe %s %s %s %s inputs=%u tensors=%u shape=%llu device=%llu host=%llu\n", d->impl_id, d->op_name, d->op_version,
         d->module, d->input_count, d->tensor_count, (unsigned long long)d->tensors[0].shape[0],
         (unsigned long long)d->device_scratch, (unsigned long long)d->host_scratch);
    ptojit_op_scratch_request sr = {PTOJIT_OP_ABI_VERSION};
    rc = ops->scratch(ops->user, h, &sr);
    LINE("scratch %d device=%llu\n", rc, (unsigned long long)sr.device_bytes);
    if (sr.device_bytes > a->tensors[2].nbytes) {
        return 8;
    }
    ptojit_tensor t[3] = {a->tensors[0], a->tensors[1], a->tensors[2]};
    t[2].nbytes = sr.device_bytes; /* the scratch, carved out of the work tensor */
    t[2].shape[0] = sr.device_bytes / 4;
    ptojit_args args = {.abi_version = PTOJIT_SIM_ABI_VERSION, .tensor_count = 2, .tensors = t};
    rc = ops->execute(ops->user, h, &args);
    LINE("execute without scratch %d\n", rc);
    args.tensor_count = 3;
    rc = ops->execute(ops->user, h, &args);
    LINE("execute %d\n", rc);
    rc = ops->release(ops->user, h);
    LINE("release %d\n", rc);
    return 0;
}
`),
		"nop.c": []byte("#include \"ptojit_sim.h\"\nint32_t ptojit_kernel(const ptojit_args *a) { return 0; }\n"),
		"runner.request.json": []byte(`{"orchestration": {"source": "runner.c", "function": "runner_orch", "config": "runner_config"},
 "kernels": [{"func_id": 0, "source": "nop.c", "signature": ["IN", "OUT", "OUT", "OUT"]}], "signature": ["IN", "OUT", "OUT", "OUT"]}`),
	}
}

// TestHostServiceRunner: a native runner resolves through the host
// operation service with the rules the daemon applies (rank, dtype and
// budget rejections with their reasons), cannot resolve an operation of a
// module it does not depend on even while another module's handle has it
// offered, describes the resolved contract, gets the scratch it needs,
// and executes the blockwise prefix sum with that scratch; every output
// element is checked.
func TestHostServiceRunner(t *testing.T) {
	priv, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"], arch["scan_blocked"], arch["running_mean"], pack(t, runnerModule(), priv, nil))
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	// A live running-mean handle: example.scan's prefix sum is offered
	// on the child, to example.running_mean's callable only.
	hm, _, err := svc.Resolve(ctx, vecQuery(opMean, 8))
	if err != nil {
		t.Fatal(err)
	}
	defer hm.Release(ctx)
	if err := runOp(t, w, hm, opMean, 8, 1); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	q := ops.Query{OpName: "example.test.runner", Tensors: []ops.Tensor{
		{DType: ops.F32, Shape: []uint64{n}}, {DType: ops.F32, Shape: []uint64{n}}, {DType: ops.F32, Shape: []uint64{256}}, {DType: ops.I32, Shape: []uint64{1024}},
	}, HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	h, res, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatalf("%v\n%s", err, reasons(res))
	}
	defer h.Release(ctx)
	a := w.Arena()
	bufs := make([]worker.Buffer, 4)
	for i, sz := range []uint64{4 * n, 4 * n, 4 * 256, 4 * 1024} {
		if bufs[i], err = a.Alloc(sz); err != nil {
			t.Fatal(err)
		}
		defer bufs[i].Free()
	}
	xs := bufs[0].Float32s()[:n]
	for i := range xs {
		xs[i] = float32(i%11) * 0.25
	}
	args := ops.Args{Tensors: []worker.Tensor{bufs[0].Tensor(worker.Float32, n), bufs[1].Tensor(worker.Float32, n),
		bufs[2].Tensor(worker.Float32, 256), bufs[3].Tensor(worker.Int32, 1024)}}
	if err := h.Execute(ctx, args); err != nil {
		t.Fatal(err)
	}
	f := bufs[3].Float32s()
	rb := unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
	report := strings.TrimRight(string(rb[:strings.IndexByte(string(rb), 0)]), "\n")
	lines := map[string]string{}
	for _, l := range strings.Split(report, "\n") {
		k, v, _ := strings.Cut(l, " ")
		lines[k] = v
	}
	t.Logf("runner report:\n%s", report)
	for k, want := range map[string]string{
		"rank":     "-3 no compatible implementation of example.sequence.prefix_sum 1.0.0: example.scan_blocked.prefix_sum.f32: rank: input 0 has rank 2, the implementation takes 1..1",
		"dtype":    "-3 no compatible implementation of example.sequence.prefix_sum 1.0.0: example.scan_blocked.prefix_sum.f32: dtype: input 0 is i32, the implementation takes f32",
		"budget":   "-3 no compatible implementation of example.sequence.prefix_sum 1.0.0: example.scan_blocked.prefix_sum.f32: memory budget: needs 128 bytes of device scratch, the budget is 8",
		"outside":  "-3 no compatible implementation of example.sequence.prefix_sum 1.0.0 (exactly example.scan.prefix_sum.f32): no module this one depends on offers it",
		"resolve":  "0 ",
		"describe": "example.scan_blocked.prefix_sum.f32 example.sequence.prefix_sum 1.0.0 example.scan_blocked inputs=1 tensors=2 shape=1000 device=128 host=0",
		"scratch":  "0 device=128",
		"execute":  "0",
		"release":  "0",
	} {
		if got, ok := lines[k]; !ok || !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(report, "execute without scratch -4") {
		t.Errorf("an execute without the negotiated scratch was not refused:\n%s", report)
	}
	want := reference(opPrefix, xs)
	for i, g := range bufs[1].Float32s()[:n] {
		if g != want[i] {
			t.Fatalf("element %d: %v, want %v", i, g, want[i])
		}
	}
}
