package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/worker"
)

// ErrReleased is returned by calls on a released handle.
var ErrReleased = errors.New("ops: the handle was released")

// Handle owns one resolved implementation: a copy of its descriptor and of
// the query's tensor descriptors, the registration of its callable on the
// children, and pins on its module and the modules it depends on. Calls on
// one handle are serialized; independent handles run concurrently.
type Handle struct {
	s        *Service
	mu       sync.Mutex // serializes Scratch, Execute and Release
	choice   Choice
	desc     Descriptor
	act      *activation
	deps     []*activation // the operations of the modules it depends on
	pins     []*module.Pin
	workerID int
	released bool
}

// Test hooks (export_test.go): testHookWait runs when a call on a handle
// finds another call holding it and is about to wait; testHookCall runs in
// Execute, holding the handle, just before the child is called.
var testHookWait, testHookCall atomic.Pointer[func(*Handle)]

// lock takes the handle's lock, which serializes its calls, and returns
// its unlock.
func (h *Handle) lock() func() {
	if !h.mu.TryLock() {
		if hook := testHookWait.Load(); hook != nil {
			(*hook)(h)
		}
		h.mu.Lock()
	}
	return h.mu.Unlock
}

// Description is what a handle negotiated: a copy.
type Description struct {
	OpName        string   `json:"op_name"`
	OpVersion     string   `json:"op_version"`
	ImplID        string   `json:"impl_id"`
	Module        string   `json:"module"`
	ModuleVersion string   `json:"module_version"`
	Priority      int64    `json:"priority"`
	Platform      string   `json:"platform"`
	Tensors       []Tensor `json:"-"` // inputs then outputs
	Inputs        int      `json:"inputs"`
	HostScratch   uint64   `json:"host_scratch"`
	DeviceScratch uint64   `json:"device_scratch"`
}

// Describe returns the negotiated contract.
func (h *Handle) Describe() Description {
	d := Description{OpName: h.desc.OpName, OpVersion: h.desc.OpVersion.String(), ImplID: h.choice.ImplID,
		Module: h.choice.Module, ModuleVersion: h.choice.cand.ModuleVersion, Priority: h.choice.Priority,
		Platform: h.choice.Platform, Inputs: h.desc.Inputs,
		HostScratch: h.choice.HostScratch, DeviceScratch: h.choice.DeviceScratch}
	for _, t := range h.choice.tensors {
		d.Tensors = append(d.Tensors, t.Clone())
	}
	return d
}

// Scratch returns the scratch the provider asked for, in bytes. The caller
// allocates it (in the Worker's arena) and passes it to Execute; the
// provider never frees it.
func (h *Handle) Scratch() (host, device uint64, err error) {
	defer h.lock()()
	if h.released {
		return 0, 0, ErrReleased
	}
	return h.choice.HostScratch, h.choice.DeviceScratch, nil
}

// Args are the buffers of one execution: tensors in the Worker's arena,
// inputs then outputs, matching the negotiated descriptors, and the
// scratch buffers when the provider asked for scratch.
type Args struct {
	Tensors       []worker.Tensor
	DeviceScratch *worker.Buffer
	HostScratch   *worker.Buffer
}

// ContractError is an Execute whose buffers do not match what the handle
// negotiated; nothing ran.
type ContractError struct {
	ImplID string
	Reason string
}

func (e *ContractError) Error() string {
	return fmt.Sprintf("ops: %s: the buffers do not match the negotiated contract: %s", e.ImplID, e.Reason)
}

// Execute runs the implementation on a child and waits for it. It checks
// the buffers against the contract first (dtype, shape, extent, alignment,
// scratch) and their lifetime (each tensor within a live allocation of the
// Worker's arena: not freed, not another arena's; scratch buffers live
// allocations of it), and refuses a mismatch. It never re-resolves or falls back: a
// failure is returned as it is.
func (h *Handle) Execute(ctx context.Context, a Args) error {
	defer h.lock()()
	if h.released {
		return ErrReleased
	}
	ta, err := h.taskArgs(a)
	if err != nil {
		return err
	}
	id := h.workerID
	if !h.s.w.Alive(id) {
		h.s.mu.Lock()
		id = h.s.pickWorker()
		h.s.mu.Unlock()
		if id < 0 {
			return fmt.Errorf("ops: %s: no live child", h.choice.ImplID)
		}
		h.workerID = id
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if hook := testHookCall.Load(); hook != nil {
		(*hook)(h)
	}
	if err := h.s.w.CallContext(ctx, id, h.act.h, ta); err != nil {
		return fmt.Errorf("ops: %s (%s) on child %d: %w", h.desc.OpName, h.choice.ImplID, id, err)
	}
	return nil
}

func (h *Handle) taskArgs(a Args) (worker.TaskArgs, error) {
	bad := func(format string, args ...any) (worker.TaskArgs, error) {
		return worker.TaskArgs{}, &ContractError{ImplID: h.choice.ImplID, Reason: fmt.Sprintf(format, args...)}
	}
	want := h.choice.tensors
	arena := h.s.w.Arena()
	if len(a.Tensors) != len(want) {
		return bad("%d tensors, negotiated %d", len(a.Tensors), len(want))
	}
	for i, t := range a.Tensors {
		w := want[i]
		if uint32(t.DType) != uint32(w.DType) {
			return bad("tensor %d has dtype %d, negotiated %s", i, t.DType, w.DType)
		}
		if !slices.Equal(t.Shape, w.Shape) {
			return bad("tensor %d has shape %v, negotiated %v", i, t.Shape, w.Shape)
		}
		if len(t.Strides) != 0 && len(t.Strides) != len(t.Shape) {
			return bad("tensor %d has %d dimensions and %d strides", i, len(t.Shape), len(t.Strides))
		}
		got := Tensor{Shape: t.Shape, Strides: t.Strides}.EffectiveStrides()
		if neg := w.EffectiveStrides(); !slices.Equal(got, neg) {
			return bad("tensor %d has strides %v, negotiated %v (elements; 0 is packed)", i, got, neg)
		}
		n, _ := w.Bytes()
		if t.Nbytes < n {
			return bad("tensor %d spans %d bytes, its shape and strides need %d", i, t.Nbytes, n)
		}
		if align := h.desc.TensorAlignment(w.DType); align > 0 && t.Offset%align != 0 {
			return bad("tensor %d at arena offset %d is not %d-byte aligned", i, t.Offset, align)
		}
		if err := arena.CheckTensor(t); err != nil {
			return bad("tensor %d: its buffer %v", i, err)
		}
	}
	ta := worker.TaskArgs{Tensors: slices.Clone(a.Tensors), Scalars: slices.Clone(h.choice.scalars)}
	for _, sc := range []struct {
		name string
		need uint64
		buf  *worker.Buffer
	}{{"device", h.choice.DeviceScratch, a.DeviceScratch}, {"host", h.choice.HostScratch, a.HostScratch}} {
		if sc.need == 0 {
			continue
		}
		if sc.buf == nil || sc.buf.Len < sc.need {
			have := uint64(0)
			if sc.buf != nil {
				have = sc.buf.Len
			}
			return bad("%s scratch of %d bytes, negotiated %d", sc.name, have, sc.need)
		}
		if err := arena.CheckLive(*sc.buf); err != nil {
			return bad("%s scratch: its buffer %v", sc.name, err)
		}
		ta.Tensors = append(ta.Tensors, worker.Tensor{Offset: sc.buf.Off, Nbytes: sc.buf.Len, DType: worker.Int32, Shape: []uint64{sc.buf.Len / 4}})
	}
	return ta, nil
}

// Release waits for the call in flight, drops the callable's registration
// and the module pins. Calls after Release fail with ErrReleased; a second
// Release is a no-op.
func (h *Handle) Release(ctx context.Context) error {
	defer h.lock()()
	if h.released {
		return nil
	}
	h.released = true
	h.s.mu.Lock()
	delete(h.s.handles, h)
	err := h.s.deactivate(ctx, h.act)
	for _, d := range h.deps {
		err = errors.Join(err, h.s.deactivate(ctx, d))
	}
	h.s.mu.Unlock()
	for _, p := range h.pins {
		p.Release()
	}
	h.pins = nil
	return err
}
