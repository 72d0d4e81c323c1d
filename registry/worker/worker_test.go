package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// vaddTask allocates a, b and out of n float32 in the arena, fills a and b,
// and returns the task args with scalar s.
type vaddTask struct {
	a, b, out mailbox.Buffer
	s         float32
}

func newVAddTask(t testing.TB, w *Worker, n int, seed int, s float32) *vaddTask {
	t.Helper()
	v := &vaddTask{s: s}
	var err error
	for _, p := range []*mailbox.Buffer{&v.a, &v.b, &v.out} {
		if *p, err = w.Arena().Alloc(uint64(4 * n)); err != nil {
			t.Fatal(err)
		}
	}
	a, b, out := v.a.Float32s(), v.b.Float32s(), v.out.Float32s()
	for i := range n {
		a[i] = float32(i + seed)
		b[i] = float32(2*i) - float32(seed)/3
		out[i] = -1
	}
	return v
}

func (v *vaddTask) args() mailbox.TaskArgs {
	n := v.a.Len / 4
	return mailbox.TaskArgs{
		Tensors: []mailbox.Tensor{v.a.Tensor(mailbox.Float32, n), v.b.Tensor(mailbox.Float32, n), v.out.Tensor(mailbox.Float32, n)},
		Scalars: []uint64{mailbox.Float32Scalar(v.s)},
	}
}

// check verifies every output element.
func (v *vaddTask) check() error {
	a, b, out := v.a.Float32s(), v.b.Float32s(), v.out.Float32s()
	for i := range out {
		if want := (a[i] + b[i]) * v.s; out[i] != want {
			return fmt.Errorf("out[%d] = %v, want (%v + %v) * %v = %v", i, out[i], a[i], b[i], v.s, want)
		}
	}
	return nil
}

func (v *vaddTask) free() { v.a.Free(); v.b.Free(); v.out.Free() }

func TestVAddEndToEnd(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(2, 0)
	w := startWorker(t, cfg)
	ctx := context.Background()
	h, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	if h.Hashid != chipHashid(t, vadd) || h.TargetNamespace != registry.LocalChip || h.Kind != registry.ChipCallableKind {
		t.Fatalf("handle %v", h)
	}
	var tasks []*vaddTask
	var submitted []*Task
	err = w.Run(ctx, func(o *Orchestrator) error {
		for i := range 16 {
			v := newVAddTask(t, w, 1000+i, i, 1.5+float32(i))
			tasks = append(tasks, v)
			task, err := o.SubmitNextLevel(h, v.args(), CallConfig{})
			if err != nil {
				return err
			}
			submitted = append(submitted, task)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	ran := map[int]int{}
	for i, v := range tasks {
		if err := v.check(); err != nil {
			t.Errorf("task %d: %v", i, err)
		}
		ran[submitted[i].Worker()]++
	}
	if len(ran) == 0 {
		t.Fatal("no task ran")
	}
}

func TestAffinityAndGroup(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(2, 0)
	w := startWorker(t, cfg)
	ctx := context.Background()
	h, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	var one, group *Task
	v1 := newVAddTask(t, w, 64, 1, 2)
	g := []*vaddTask{newVAddTask(t, w, 64, 2, 3), newVAddTask(t, w, 64, 3, 4)}
	err = w.Run(ctx, func(o *Orchestrator) error {
		var err error
		if one, err = o.SubmitNextLevel(h, v1.args(), CallConfig{Workers: []int{1}}); err != nil {
			return err
		}
		group, err = o.SubmitNextLevelGroup(h, []mailbox.TaskArgs{g[0].args(), g[1].args()}, CallConfig{Workers: []int{0, 1}})
		return err
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	if one.Worker() != 1 {
		t.Errorf("affine task ran on worker %d, want 1", one.Worker())
	}
	for i, p := range group.parts {
		if p.Worker() != i {
			t.Errorf("group member %d ran on worker %d", i, p.Worker())
		}
	}
	for _, v := range append(g, v1) {
		if err := v.check(); err != nil {
			t.Error(err)
		}
	}
	// Affinity to a worker that is not a chip child fails at submit.
	err = w.Run(ctx, func(o *Orchestrator) error {
		_, err := o.SubmitNextLevel(h, v1.args(), CallConfig{Workers: []int{7}})
		return err
	})
	if !errors.Is(err, registry.TargetNamespaceMismatch) {
		t.Errorf("affinity to a missing worker: %v", err)
	}
}

// Task args beyond the limits are refused at the submitter, before a task
// exists, and AppendTaskArgs leaves dst as it was.
func TestSubmitRejectsOversizedArgs(t *testing.T) {
	bad := []mailbox.TaskArgs{
		{Tensors: make([]mailbox.Tensor, mailbox.MaxTensors+1)},
		{Scalars: make([]uint64, mailbox.MaxScalars+1)},
		{Tensors: []mailbox.Tensor{{DType: mailbox.Float32, Shape: make([]uint64, mailbox.MaxDims+1)}}},
	}
	for i, a := range bad {
		dst := []byte("keep")
		if out, err := mailbox.AppendTaskArgs(dst, a); err == nil || string(out) != "keep" {
			t.Errorf("args %d: AppendTaskArgs = %q, %v; want dst unchanged and an error", i, out, err)
		}
	}
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(1, 0)
	w := startWorker(t, cfg)
	ctx := context.Background()
	h, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(ctx, func(o *Orchestrator) error {
		for i, a := range bad {
			if task, err := o.SubmitNextLevel(h, a, CallConfig{}); err == nil || task != nil {
				t.Errorf("args %d: submit = %v, %v; want a refusal", i, task, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
}

// A tensor whose shape needs more bytes than it has is refused by the child
// before the callable runs, also when the shape's byte count overflows 64
// bits.
func TestTaskShapeBeyondTensor(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(1, 0)
	w := startWorker(t, cfg)
	h, err := w.Register(context.Background(), registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range [][]uint64{{65}, {1 << 62, 4}} {
		v := newVAddTask(t, w, 64, 1, 2)
		a := v.args()
		a.Tensors[2].Shape = shape
		if err := w.Call(0, h, a); !errors.Is(err, TaskArgsInvalid) {
			t.Errorf("shape %v over a %d-byte tensor: %v, want %s\n%s", shape, a.Tensors[2].Nbytes, err, TaskArgsInvalid, log)
		}
		v.free()
	}
}
