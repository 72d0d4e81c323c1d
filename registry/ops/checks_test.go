package ops_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// TestExecuteAlignment: Execute refuses a tensor that is not aligned as
// the descriptor says (example.scan declares 4 bytes), before anything
// runs, and accepts the same buffer at an aligned offset.
func TestExecuteAlignment(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"])
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	const n = 64
	h, _, err := svc.Resolve(ctx, vecQuery(opPrefix, n))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	in, err := w.Arena().Alloc(4*n + 64)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Free()
	out, err := w.Arena().Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	at := func(off uint64) worker.Tensor {
		return worker.Tensor{Offset: in.Off + off, Nbytes: 4 * n, DType: worker.Float32, Shape: []uint64{n}}
	}
	for _, off := range []uint64{1, 2, 3, 6} {
		err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{at(off), out.Tensor(worker.Float32, n)}})
		var ce *ops.ContractError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "tensor 0 at arena offset") || !strings.Contains(err.Error(), "is not 4-byte aligned") {
			t.Errorf("input at +%d: %v, want a refusal naming the alignment", off, err)
		}
	}
	xs := in.Float32s()[1 : 1+n]
	for i := range xs {
		xs[i] = float32(i%5) * 0.5
	}
	if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{at(4), out.Tensor(worker.Float32, n)}}); err != nil {
		t.Fatalf("input at +4 (aligned): %v", err)
	}
	want := reference(opPrefix, xs)
	for i, g := range out.Float32s()[:n] {
		if g != want[i] {
			t.Fatalf("element %d: %v, want %v", i, g, want[i])
		}
	}
}

// TestHandleSerializes: calls on one handle are serialized: while an
// Execute is in flight (held at the moment it calls the child), a second
// Execute and a Release on the same handle wait for it, and the Release
// takes effect only after it.
func TestHandleSerializes(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"])
	svc, w := newService(t, s, 2)
	ctx := ctxT(t)
	h, _, err := svc.Resolve(ctx, vecQuery(opPrefix, 16))
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{}, 4)
	proceed := make(chan struct{})
	waiting := make(chan struct{}, 4)
	var inCall atomic.Int32
	ops.SetTestHooks(func(x *ops.Handle) {
		if x == h {
			waiting <- struct{}{}
		}
	}, func(x *ops.Handle) {
		if x != h {
			return
		}
		if inCall.Add(1) > 1 {
			t.Errorf("two Executes of one handle call the child at once")
		}
		entered <- struct{}{}
		<-proceed
		inCall.Add(-1)
	})
	defer ops.SetTestHooks(nil, nil)
	deadline := time.After(time.Minute)
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	execute := func() chan error {
		done := make(chan error, 1)
		go func() { done <- runOp(t, w, h, opPrefix, 16, 5) }()
		return done
	}
	first := execute()
	wait(entered, "the first Execute to call the child")
	second := execute()
	// The second Execute must wait for the first; if it does not, it
	// calls the child (entered) while the first is still held there.
	select {
	case <-waiting:
	case <-entered:
		t.Fatal("a second Execute called the child while the first was in flight")
	case <-deadline:
		t.Fatal("timed out waiting for the second Execute")
	}
	released := make(chan error, 1)
	go func() { released <- h.Release(context.Background()) }()
	select {
	case <-waiting:
	case err := <-released:
		t.Fatalf("Release returned (%v) while an Execute was in flight", err)
	case <-deadline:
		t.Fatal("timed out waiting for Release")
	}
	close(proceed)
	for _, c := range []chan error{first, second} {
		select {
		case err := <-c:
			if err != nil && !errors.Is(err, ops.ErrReleased) {
				t.Errorf("execute: %v", err)
			}
		case <-deadline:
			t.Fatal("timed out waiting for an Execute")
		}
	}
	select {
	case err := <-released:
		if err != nil {
			t.Errorf("release: %v", err)
		}
	case <-deadline:
		t.Fatal("timed out waiting for Release")
	}
	if err := h.Execute(ctx, ops.Args{}); !errors.Is(err, ops.ErrReleased) {
		t.Errorf("execute after release: %v", err)
	}
}

// TestResolveCopiesQuery: the handle keeps the tensor descriptors the
// query had at Resolve: changing the query's tensors afterwards changes
// neither what it describes nor what Execute accepts.
func TestResolveCopiesQuery(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"])
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	q := ops.Query{OpName: opPrefix, Tensors: []ops.Tensor{{DType: ops.F32, Shape: []uint64{32}}, {DType: ops.F32, Shape: []uint64{32}}},
		HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	h, _, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	for i := range q.Tensors {
		q.Tensors[i].Shape[0] = 7
		q.Tensors[i].DType = ops.I32
	}
	for i, tt := range h.Describe().Tensors {
		if tt.DType != ops.F32 || len(tt.Shape) != 1 || tt.Shape[0] != 32 {
			t.Errorf("described tensor %d is %v after the query changed, want f32:32", i, tt)
		}
	}
	if err := runOp(t, w, h, opPrefix, 32, 6); err != nil {
		t.Errorf("execute with the shape resolved: %v", err)
	}
}

// TestExecuteBufferLifetime: Execute refuses, naming the tensor, a tensor
// of a freed buffer, of a buffer freed and its range allocated again, of
// another arena, and a range in no live allocation; a second Free of a
// buffer stays refused; nothing of the refused calls runs.
func TestExecuteBufferLifetime(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"], arch["scan_blocked"])
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	const n = 64
	h, _, err := svc.Resolve(ctx, vecQuery(opPrefix, n))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	a := w.Arena()
	alloc := func() worker.Buffer {
		b, err := a.Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	out := alloc()
	defer out.Free()
	in := alloc()
	stale := in.Tensor(worker.Float32, n)
	if err := in.Free(); err != nil {
		t.Fatal(err)
	}
	if err := in.Free(); !errors.Is(err, worker.ErrNotAllocated) {
		t.Errorf("second free: %v, want ErrNotAllocated", err)
	}
	other, err := mailbox.NewArena(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ob, err := other.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, tensors []worker.Tensor, want string) {
		t.Helper()
		out.Float32s()[0] = -1
		err := h.Execute(ctx, ops.Args{Tensors: tensors})
		var ce *ops.ContractError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal containing %q", what, err, want)
		}
		if out.Float32s()[0] != -1 {
			t.Errorf("%s: the implementation ran", what)
		}
	}
	refused("freed input", []worker.Tensor{stale, out.Tensor(worker.Float32, n)}, fmt.Sprintf("tensor 0: its buffer [%d, +%d) was freed", stale.Offset, 4*n))
	refused("foreign output", []worker.Tensor{out.Tensor(worker.Float32, n), ob.Tensor(worker.Float32, n)}, "tensor 1: its buffer")
	refused("foreign output", []worker.Tensor{out.Tensor(worker.Float32, n), ob.Tensor(worker.Float32, n)}, "is an allocation of another arena")
	// A range no allocation covers, made by hand.
	raw := worker.Tensor{Offset: stale.Offset, Nbytes: 4 * n, DType: worker.Float32, Shape: []uint64{n}}
	refused("unallocated range", []worker.Tensor{raw, out.Tensor(worker.Float32, n)}, "is within no live allocation of the arena")
	// Its range allocated again: the old tensor is still the freed
	// buffer's, and the new buffer's works.
	again := alloc()
	defer again.Free()
	if again.Off != stale.Offset {
		t.Logf("the range was not reused (offset %d, was %d)", again.Off, stale.Offset)
	}
	refused("freed input, range reused", []worker.Tensor{stale, out.Tensor(worker.Float32, n)}, "was freed")
	if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{again.Tensor(worker.Float32, n), out.Tensor(worker.Float32, n)}}); err != nil {
		t.Errorf("live buffers: %v", err)
	}
	// A freed scratch buffer.
	q := vecQuery(opPrefix, n)
	q.ExactImplID = implBlocked
	hb, _, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Release(ctx)
	_, dev, _ := hb.Scratch()
	sc, err := a.Alloc(dev)
	if err != nil {
		t.Fatal(err)
	}
	sc.Free()
	err = hb.Execute(ctx, ops.Args{Tensors: []worker.Tensor{again.Tensor(worker.Float32, n), out.Tensor(worker.Float32, n)}, DeviceScratch: &sc})
	if !strings.Contains(fmt.Sprint(err), "device scratch: its buffer") || !strings.Contains(fmt.Sprint(err), "was freed") {
		t.Errorf("freed scratch: %v", err)
	}
}
