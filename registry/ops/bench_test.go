package ops_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

// BenchmarkExecuteVsDirect alternates, on one chip child, an execution of
// the example prefix sum (1,024 float32 elements) through a resolved handle
// (contract checks, per-handle lock, Worker.Call) and a direct Worker.Call
// of the same callable registered by hand, and reports the p50 of each and
// their ratio.
func BenchmarkExecuteVsDirect(b *testing.B) {
	_, _, arch := examples(b)
	s := newStore(b)
	install(b, s, arch["scan"])
	svc, w := newService(b, s, 1)
	ctx := ctxT(b)
	const n = 1024
	h, _, err := svc.Resolve(ctx, vecQuery(opPrefix, n))
	if err != nil {
		b.Fatal(err)
	}
	defer h.Release(ctx)
	p, err := module.OpenArchive(arch["scan"])
	if err != nil {
		b.Fatal(err)
	}
	direct, err := w.Register(ctx, registry.ChipCallableKind, p.Artifact("callables/prefix_sum.a2a3sim.bin"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Unregister(ctx, direct)
	in, _ := w.Arena().Alloc(4 * n)
	out, _ := w.Arena().Alloc(4 * n)
	for i := range in.Float32s() {
		in.Float32s()[i] = float32(i % 5)
	}
	tensors := []worker.Tensor{in.Tensor(worker.Float32, n), out.Tensor(worker.Float32, n)}
	var viaHandle, viaWorker []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if i%2 == 0 {
			if err := h.Execute(ctx, ops.Args{Tensors: tensors}); err != nil {
				b.Fatal(err)
			}
			viaHandle = append(viaHandle, time.Since(t0))
		} else {
			if err := w.Call(0, direct, worker.TaskArgs{Tensors: tensors}); err != nil {
				b.Fatal(err)
			}
			viaWorker = append(viaWorker, time.Since(t0))
		}
	}
	b.StopTimer()
	if len(viaWorker) == 0 {
		return
	}
	slices.Sort(viaHandle)
	slices.Sort(viaWorker)
	ph, pw := viaHandle[len(viaHandle)/2], viaWorker[len(viaWorker)/2]
	b.ReportMetric(float64(ph.Nanoseconds())/1e3, "handle-p50-µs")
	b.ReportMetric(float64(pw.Nanoseconds())/1e3, "direct-p50-µs")
	b.ReportMetric(float64(ph)/float64(pw), "ratio")
}

// BenchmarkNegotiate is one resolution of the prefix sum among the two
// example providers, each negotiated on a child (validate and scratch query
// in the child, the callables registered and unregistered around it), beside
// a bare mailbox round trip in the same run.
func BenchmarkNegotiate(b *testing.B) {
	_, _, arch := examples(b)
	s := newStore(b)
	install(b, s, arch["scan"], arch["scan_blocked"])
	svc, w := newService(b, s, 1)
	ctx := ctxT(b)
	var res, bare []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		h, _, err := svc.Resolve(ctx, vecQuery(opPrefix, 100))
		if err != nil {
			b.Fatal(err)
		}
		res = append(res, time.Since(t0))
		h.Release(ctx)
		t0 = time.Now()
		if err := w.BareRoundTrip(0); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
	}
	slices.Sort(res)
	slices.Sort(bare)
	b.ReportMetric(float64(res[len(res)/2].Microseconds()), "resolve-p50-µs")
	b.ReportMetric(float64(bare[len(bare)/2].Nanoseconds())/1e3, "bare-p50-µs")
}
