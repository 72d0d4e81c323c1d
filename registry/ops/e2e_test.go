package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

const (
	opPrefix    = "example.sequence.prefix_sum"
	opExclusive = "example.sequence.exclusive_prefix_sum"
	opMean      = "example.sequence.running_mean"
	implScan    = "example.scan.prefix_sum.f32"
	implBlocked = "example.scan_blocked.prefix_sum.f32"
	implExcl    = "example.scan.exclusive_prefix_sum.f32"
	implMean    = "example.running_mean.running_mean.f32"
)

// reference computes the expected output of op for in, as the example
// kernels define it: double sums rounded once per element; the running
// mean divides the rounded prefix sum (example.scan's, through the host
// operation service) in double and rounds again.
func reference(op string, in []float32) []float32 {
	out := make([]float32, len(in))
	var sum float64
	for i, x := range in {
		switch op {
		case opPrefix:
			sum += float64(x)
			out[i] = float32(sum)
		case opExclusive:
			out[i] = float32(sum)
			sum += float64(x)
		case opMean:
			sum += float64(x)
			out[i] = float32(float64(float32(sum)) / float64(i+1))
		}
	}
	return out
}

// runOp executes h on a fresh input of n elements (seeded by seed) and
// checks every output element against the reference.
func runOp(t testing.TB, w *worker.Worker, h *ops.Handle, op string, n int, seed int) error {
	a := w.Arena()
	in, err := a.Alloc(uint64(4 * n))
	if err != nil {
		return err
	}
	defer in.Free()
	out, err := a.Alloc(uint64(4 * n))
	if err != nil {
		return err
	}
	defer out.Free()
	xs := in.Float32s()[:n]
	for i := range xs {
		xs[i] = float32((i*7+seed)%13) * 0.1
	}
	args := ops.Args{Tensors: []worker.Tensor{in.Tensor(worker.Float32, uint64(n)), out.Tensor(worker.Float32, uint64(n))}}
	_, dev, err := h.Scratch()
	if err != nil {
		return err
	}
	if dev > 0 {
		sc, err := a.Alloc(dev)
		if err != nil {
			return err
		}
		defer sc.Free()
		args.DeviceScratch = &sc
	}
	if err := h.Execute(ctxT(t), args); err != nil {
		return err
	}
	want := reference(op, xs)
	got := out.Float32s()[:n]
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s element %d: got %v, want %v", h.Describe().ImplID, i, got[i], want[i])
		}
	}
	return nil
}

func TestEndToEnd(t *testing.T) {
	priv, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"], arch["scan_blocked"], arch["running_mean"])
	svc, w := newService(t, s, 2)
	ctx := ctxT(t)

	// The two competing providers, in priority order.
	h, res, err := svc.Resolve(ctx, vecQuery(opPrefix, 1000))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Compatible) != 2 || res.Compatible[0].ImplID != implScan || res.Compatible[1].ImplID != implBlocked || len(res.Rejected) != 0 {
		t.Fatalf("compatible %+v, rejected:\n%s", res.Compatible, reasons(res))
	}
	if c := res.Compatible[1]; c.Priority != 50 || c.DeviceScratch != 8*16 {
		t.Errorf("blocked: priority %d, device scratch %d; want 50 and 128", c.Priority, c.DeviceScratch)
	}
	if d := h.Describe(); d.ImplID != implScan || d.Module != "example.scan" || d.OpVersion != "1.0.0" {
		t.Errorf("describe: %+v", d)
	}
	if err := runOp(t, w, h, opPrefix, 1000, 1); err != nil {
		t.Fatal(err)
	}

	// A required capability only the blockwise provider declares: it is
	// chosen, with scratch; the other is rejected naming the capability.
	q := vecQuery(opPrefix, 1000)
	q.Capabilities = []string{"example.sequence.blockwise"}
	hb, res, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := reasons(res); !strings.Contains(got, implScan+" [capability] capability: example.sequence.blockwise is not declared") {
		t.Errorf("rejections:\n%s", got)
	}
	if err := runOp(t, w, hb, opPrefix, 1000, 2); err != nil {
		t.Fatal(err)
	}
	// Execute refuses buffers that do not match the contract.
	buf, _ := w.Arena().Alloc(4000)
	err = hb.Execute(ctx, ops.Args{Tensors: []worker.Tensor{buf.Tensor(worker.Float32, 1000), buf.Tensor(worker.Float32, 1000)}})
	var ce *ops.ContractError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "device scratch of 0 bytes, negotiated 128") {
		t.Errorf("execute without scratch: %v", err)
	}
	err = hb.Execute(ctx, ops.Args{Tensors: []worker.Tensor{buf.Tensor(worker.Float32, 999), buf.Tensor(worker.Float32, 999)}})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "shape [999], negotiated [1000]") {
		t.Errorf("execute with another shape: %v", err)
	}
	buf.Free()

	// A device budget the blockwise scratch does not fit.
	q = vecQuery(opPrefix, 1000)
	q.DeviceBudget = 64
	_, res, err = svc.Resolve(ctx, withExact(q, implBlocked))
	var nf *ops.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(reasons(res), implBlocked+" [memory] memory budget: needs 128 bytes of device scratch, the budget is 64") {
		t.Errorf("exact blocked over budget: %v\n%s", err, reasons(res))
	}
	// Validate's own message: the lengths differ.
	q = ops.Query{OpName: opPrefix, Tensors: []ops.Tensor{{DType: ops.F32, Shape: []uint64{8}}, {DType: ops.F32, Shape: []uint64{9}}},
		HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	_, res, err = svc.Resolve(ctx, q)
	if !errors.As(err, &nf) || strings.Count(reasons(res), "[validate] validate: input and output lengths differ (8 and 9)") != 2 {
		t.Errorf("validate: %v\n%s", err, reasons(res))
	}
	// Descriptor checks: dtype, rank, version, backend, sync, layout.
	for _, c := range []struct {
		edit func(*ops.Query)
		want string
	}{
		{func(q *ops.Query) { q.Tensors[0].DType = ops.I32 }, "[dtype] dtype: input 0 is i32, the implementation takes f32"},
		{func(q *ops.Query) { q.Tensors[0].Shape = []uint64{4, 4} }, "[rank] rank: input 0 has rank 2, the implementation takes 1..1"},
		{func(q *ops.Query) { q.MinVersion, q.MaxVersion = "1.1.0", "1.9.0" }, "[version] version: op_version 1.0.0 is outside [1.1.0, 1.9.0]"},
		{func(q *ops.Query) { q.Backends = []string{"a5"} }, "[backend] backend: callables for a2a3sim; the query allows a5"},
		{func(q *ops.Query) { q.SyncMode = ops.SyncAsync }, "[sync] sync: mode async is not supported"},
		{func(q *ops.Query) { q.Tensors[0].Shape, q.Tensors[0].Strides = []uint64{4}, []uint64{2} }, "[layout] layout: input 0 is not outer-strided"},
	} {
		q := vecQuery(opPrefix, 16)
		c.edit(&q)
		_, res, err := svc.Resolve(ctx, q)
		if !errors.As(err, &nf) || strings.Count(reasons(res), c.want) != 2 {
			t.Errorf("want both rejected with %q: %v\n%s", c.want, err, reasons(res))
		}
	}

	// The exclusive prefix sum and the dependent module's running mean.
	he, _, err := svc.Resolve(ctx, vecQuery(opExclusive, 333))
	if err != nil {
		t.Fatal(err)
	}
	if err := runOp(t, w, he, opExclusive, 333, 3); err != nil {
		t.Fatal(err)
	}
	hm, _, err := svc.Resolve(ctx, vecQuery(opMean, 777))
	if err != nil {
		t.Fatal(err)
	}
	if err := runOp(t, w, hm, opMean, 777, 4); err != nil {
		t.Fatal(err)
	}

	// Active handles pin their modules and the modules they depend on.
	_, err = s.Remove(ctx, "example.scan_blocked")
	var pe *module.PinnedError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "module example.scan_blocked@1.0.0 is pinned by live handles of operation "+opPrefix) {
		t.Errorf("remove while a handle is active: %v", err)
	}
	if err := hb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(ctx, "example.scan_blocked"); err != nil {
		t.Errorf("remove after release: %v", err)
	}
	if err := hb.Execute(ctx, ops.Args{}); !errors.Is(err, ops.ErrReleased) {
		t.Errorf("execute after release: %v", err)
	}
	// A newer example.scan would replace the version the running mean's
	// handle (and the prefix sums' handles) pin.
	newer := pack(t, readSource(t, "scan"), priv, func(m *module.Manifest) { m.Version = "1.1.0" })
	for _, x := range []*ops.Handle{h, he} {
		if err := x.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Install(ctx, newer)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "example.scan@1.0.0 is pinned by live handles of operation "+opMean) {
		t.Errorf("replace a dependency pinned by a handle: %v", err)
	}
	if err := hm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, newer); err != nil {
		t.Errorf("replace after release: %v", err)
	}
	if n := len(svc.Handles()); n != 0 {
		t.Errorf("%d live handles", n)
	}
}

func withExact(q ops.Query, id string) ops.Query {
	q.ExactImplID = id
	return q
}

func TestConcurrentHandles(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"], arch["scan_blocked"], arch["running_mean"])
	svc, w := newService(t, s, 4)
	ctx := ctxT(t)
	opsOf := []string{opPrefix, opExclusive, opMean}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		op := opsOf[i%3]
		q := vecQuery(op, uint64(100+i))
		if i%2 == 1 && op == opPrefix {
			q.ExactImplID = implBlocked
		}
		h, _, err := svc.Resolve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer h.Release(ctx)
			for k := range 20 {
				if err := runOp(t, w, h, op, 100+i, k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// blockModule is an operation whose kernel reports its process id and
// spins until its input's first element is non-zero: a child to kill in
// the middle of an execution.
func blockModule() sourceModule {
	return sourceModule{
		"module.json": []byte(`{
  "package_id": "example.block", "version": "1.0.0", "publisher": "org.example", "module_abi": 1,
  "runtime": "tensormap_and_ringbuffer", "platforms": ["a2a3sim"], "artifacts": [],
  "provided_ops": ["example.block.spin"],
  "operations": [{"impl_id": "example.block.spin", "op_name": "example.test.spin", "op_version": "1.0.0",
    "input_dtypes": ["i32"], "output_dtypes": ["i32"], "rank": [1, 1], "sync_modes": ["blocking"],
    "callables": [{"platform": "a2a3sim", "artifact": "callables/spin.a2a3sim.bin"}]}]
}`),
		"orch.c": []byte(`#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *spin_config(void) { return &cfg; }
int32_t spin_orch(const ptojit_runtime *rt, const ptojit_args *a)
{
    ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);
    return k ? k(a) : 3;
}
const char *ptojit_op_impl_id(void) { return "example.block.spin"; }
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap) { return 0; }
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out) { return 0; }
`),
		"spin.c": []byte(`#include <unistd.h>
#include "ptojit_sim.h"
int32_t ptojit_kernel(const ptojit_args *a)
{
    volatile int32_t *in = a->tensors[0].data, *out = a->tensors[1].data;
    out[1] = (int32_t)getpid();
    __sync_synchronize();
    out[0] = 1;
    while (in[0] == 0) {
    }
    return 0;
}
`),
		"spin.request.json": []byte(`{"orchestration": {"source": "orch.c", "function": "spin_orch", "config": "spin_config"},
 "kernels": [{"func_id": 0, "source": "spin.c", "signature": ["IN", "OUT"]}], "signature": ["IN", "OUT"]}`),
	}
}

func TestKillChildMidExecution(t *testing.T) {
	priv, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"], pack(t, blockModule(), priv, nil))
	svc, w := newService(t, s, 2)
	ctx := ctxT(t)
	q := ops.Query{OpName: "example.test.spin", Tensors: []ops.Tensor{{DType: ops.I32, Shape: []uint64{2}}}, Uniform: true,
		HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	hs, _, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	hp, _, err := svc.Resolve(ctx, vecQuery(opPrefix, 500))
	if err != nil {
		t.Fatal(err)
	}
	in, _ := w.Arena().Alloc(8)
	out, _ := w.Arena().Alloc(8)
	ii := (*[2]int32)(unsafe.Pointer(&in.Float32s()[0]))
	oo := (*[2]int32)(unsafe.Pointer(&out.Float32s()[0]))
	ii[0], oo[0] = 0, 0
	done := make(chan error, 1)
	go func() {
		done <- hs.Execute(ctx, ops.Args{Tensors: []worker.Tensor{in.Tensor(worker.Int32, 2), out.Tensor(worker.Int32, 2)}})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for atomic.LoadInt32(&oo[0]) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the spinning kernel did not start")
		}
		time.Sleep(time.Millisecond)
	}
	pid := int(atomic.LoadInt32(&oo[1]))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("execute did not return after its child was killed")
	}
	if !errors.Is(err, worker.ErrChildExited) || !strings.Contains(err.Error(), "example.test.spin (example.block.spin) on child") {
		t.Errorf("execute on a killed child: %v", err)
	}
	if err := hs.Release(ctx); err != nil {
		t.Errorf("release after the child died: %v", err)
	}
	// Nothing else is affected: the other handle and new resolutions work.
	if err := runOp(t, w, hp, opPrefix, 500, 5); err != nil {
		t.Error(err)
	}
	h2, _, err := svc.Resolve(ctx, vecQuery(opExclusive, 64))
	if err != nil {
		t.Fatal(err)
	}
	if err := runOp(t, w, h2, opExclusive, 64, 6); err != nil {
		t.Error(err)
	}
	for _, h := range []*ops.Handle{hp, h2} {
		if err := h.Release(ctx); err != nil {
			t.Error(err)
		}
	}
	if _, err := s.Remove(ctx, "example.block"); err != nil {
		t.Errorf("remove after release: %v", err)
	}
}

// TestInstallOrderDeterminism installs three competing providers of the
// prefix sum (two at priority 100, one at 50) in every order of
// installation, each into a fresh store, and resolves: the same order and
// the same choice every time.
func TestInstallOrderDeterminism(t *testing.T) {
	priv, _, arch := examples(t)
	tie := readSource(t, "scan_blocked")
	tie["module.json"] = []byte(strings.NewReplacer(
		`"example.scan_blocked"`, `"example.scan_tie"`,
		`example.scan_blocked.prefix_sum.f32`, `example.scan_tie.prefix_sum.f32`,
		`"priority": 50`, `"priority": 100`).Replace(string(tie["module.json"])))
	tie["orchestration.c"] = []byte(strings.ReplaceAll(string(tie["orchestration.c"]), "example.scan_blocked.prefix_sum.f32", "example.scan_tie.prefix_sum.f32"))
	pkgs := [][]byte{arch["scan"], arch["scan_blocked"], pack(t, tie, priv, nil)}
	var w *worker.Worker
	want := []string{implScan, "example.scan_tie.prefix_sum.f32", implBlocked}
	for _, order := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		s := newStore(t)
		for _, k := range order {
			install(t, s, pkgs[k])
		}
		var svc *ops.Service
		if w == nil {
			svc, w = newService(t, s, 1)
		} else {
			svc = ops.New(ops.Config{Store: s, Worker: w, ChipWorkers: 1, Platform: testPlatform, Runtime: testRuntime})
		}
		h, res, err := svc.Resolve(ctxT(t), vecQuery(opPrefix, 100))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range res.Compatible {
			got = append(got, c.ImplID)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") || h.Describe().ImplID != implScan {
			t.Errorf("installed in order %v: %v", order, got)
		}
		if err := h.Release(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// reenterModule is a provider whose validate calls the host operation
// service it saw in an earlier execution: the call must be refused.
func reenterModule() sourceModule {
	m := blockModule()
	m["module.json"] = []byte(strings.NewReplacer("example.block", "example.reenter", "example.test.spin", "example.test.reenter",
		"spin.a2a3sim.bin", "reenter.a2a3sim.bin").Replace(string(m["module.json"])))
	m["orch.c"] = []byte(`#include <stdio.h>
#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
static const ptojit_op_service *seen;
const ptojit_config *spin_config(void) { return &cfg; }
int32_t spin_orch(const ptojit_runtime *rt, const ptojit_args *a)
{
    if (rt->struct_size >= PTOJIT_RUNTIME_SIZE_OPS) {
        seen = rt->operations;
    }
    return 0;
}
const char *ptojit_op_impl_id(void) { return "example.reenter.spin"; }
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap)
{
    if (seen != 0) {
        uint64_t h;
        ptojit_op_resolve_request req = {.struct_size = sizeof req, .op_name = "example.test.reenter", .query = q};
        snprintf(msg, cap, "the service refused a call from validate with %d", seen->resolve(seen->user, &req, &h));
        return 1;
    }
    return 0;
}
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out) { return 0; }
`)
	m["reenter.request.json"] = []byte(strings.ReplaceAll(string(m["spin.request.json"]), "spin.c", "nop.c"))
	delete(m, "spin.request.json")
	m["nop.c"] = []byte(`#include "ptojit_sim.h"
int32_t ptojit_kernel(const ptojit_args *a) { return 0; }
`)
	return m
}

func TestServiceRefusesReentry(t *testing.T) {
	priv, _, _ := examples(t)
	s := newStore(t)
	install(t, s, pack(t, reenterModule(), priv, nil))
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	q := ops.Query{OpName: "example.test.reenter", Tensors: []ops.Tensor{{DType: ops.I32, Shape: []uint64{2}}}, Uniform: true,
		HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	h, _, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := w.Arena().Alloc(8)
	defer buf.Free()
	if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{buf.Tensor(worker.Int32, 2), buf.Tensor(worker.Int32, 2)}}); err != nil {
		t.Fatal(err)
	}
	// The callable stays registered (the handle is live), so the child
	// keeps the service pointer the orchestration saw.
	_, res, err := svc.Resolve(ctx, q)
	var nf *ops.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(reasons(res), "validate: the service refused a call from validate with -2") {
		t.Errorf("reentry: %v\n%s", err, reasons(res))
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// providerModule is a one-operation module whose orchestration reports
// implID and whose validate and scratch query are the given C bodies.
func providerModule(pkg, implID, reported, validate, scratch string, entry bool) sourceModule {
	m := blockModule()
	m["module.json"] = []byte(strings.NewReplacer(`"example.block"`, `"`+pkg+`"`, "example.block.spin", implID,
		"example.test.spin", "example.test.provider").Replace(string(m["module.json"])))
	src := `#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *spin_config(void) { return &cfg; }
int32_t spin_orch(const ptojit_runtime *rt, const ptojit_args *a) { return 0; }
`
	if entry {
		src += `const char *ptojit_op_impl_id(void) { return "` + reported + `"; }
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap) { ` + validate + ` }
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out) { ` + scratch + ` }
`
	}
	m["orch.c"] = []byte(src)
	m["spin.c"] = []byte("#include \"ptojit_sim.h\"\nint32_t ptojit_kernel(const ptojit_args *a) { return 0; }\n")
	return m
}

// TestProviderRejections: a failing scratch query, an orchestration that
// reports another impl_id and one without entry points are rejected, each
// with its reason (the last two by their module's activation); a host
// budget refuses host scratch.
func TestProviderRejections(t *testing.T) {
	priv, _, _ := examples(t)
	s := newStore(t)
	install(t, s,
		pack(t, providerModule("example.p1", "example.p1.op", "example.p1.op", "return 0;", "return 9;", true), priv, nil),
		pack(t, providerModule("example.p2", "example.p2.op", "example.other", "return 0;", "return 0;", true), priv, nil),
		pack(t, providerModule("example.p3", "example.p3.op", "", "", "", false), priv, nil),
		pack(t, withHostScratch(providerModule("example.p4", "example.p4.op", "example.p4.op", "return 0;", "out->host_bytes = 4096; return 0;", true)), priv, nil))
	svc, _ := newService(t, s, 1)
	q := ops.Query{OpName: "example.test.provider", Tensors: []ops.Tensor{{DType: ops.I32, Shape: []uint64{2}}}, Uniform: true,
		HostBudget: 1024, DeviceBudget: ops.Unlimited}
	_, res, err := svc.Resolve(ctxT(t), q)
	var nf *ops.NotFoundError
	got := reasons(res)
	for _, want := range []string{
		"example.p1.op [scratch] scratch: scratch query returned 9",
		// The module's activation refuses an orchestration whose id is not
		// in provided_ops, or that reports none, before any negotiation.
		"example.p2.op [activation] activation: activating module example.p2@1.0.0 on a2a3sim: callable callables/spin.a2a3sim.bin: its orchestration reports implementation id example.other, which is not in provided_ops [example.p2.op]",
		"example.p3.op [activation] activation: activating module example.p3@1.0.0 on a2a3sim: callable callables/spin.a2a3sim.bin: its orchestration reports no implementation id (it exports no ptojit_op_impl_id)",
		"example.p4.op [memory] memory budget: needs 4096 bytes of host scratch, the budget is 1024",
	} {
		if !errors.As(err, &nf) || !strings.Contains(got, want) {
			t.Errorf("want %q: %v\n%s", want, err, got)
		}
	}
}

// withHostScratch gives a provider module's callable a third tensor, the
// host scratch.
func withHostScratch(m sourceModule) sourceModule {
	m["spin.request.json"] = []byte(strings.ReplaceAll(string(m["spin.request.json"]), `["IN", "OUT"]`, `["IN", "OUT", "OUT"]`))
	return m
}
