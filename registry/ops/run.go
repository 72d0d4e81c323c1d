package ops

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
	"unsafe"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/worker"
)

// WithService starts workers chip children on the platform and runtime of
// most implementations of op among the enabled modules of s (this
// program, run with childArgs, is the child; stderr is theirs), and runs
// fn with a Service over them, closing both after.
func WithService(ctx context.Context, s *module.Store, op string, workers int, childArgs []string, stderr io.Writer, fn func(*Service, *worker.Worker) error) error {
	mods, err := s.LoadOrder()
	if err != nil {
		return err
	}
	cands, _ := CandidatesOf(mods)
	// The workers run the runtime most implementations of the operation
	// are built for (others are rejected by name).
	count := map[string]int{}
	for _, c := range cands {
		if c.Desc.OpName == op {
			count[c.Runtime]++
		}
	}
	runtime := "tensormap_and_ringbuffer"
	best := 0
	for r, n := range count {
		if n > best || n == best && r < runtime {
			runtime, best = r, n
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("op: locating this program to start children: %w", err)
	}
	w, err := worker.New(worker.Config{ChildCommand: append([]string{exe}, childArgs...), ChipWorkers: workers,
		Platform: "a2a3sim", Runtime: runtime, Stderr: stderr})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Start(ctx); err != nil {
		return fmt.Errorf("op: starting children: %w", err)
	}
	svc := New(Config{Store: s, Worker: w, ChipWorkers: workers, Platform: "a2a3sim", Runtime: runtime})
	err = fn(svc, w)
	if cerr := svc.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	return err
}

// RunBytes executes the implementation h holds once on w's workers: its
// input tensors take input, the bytes of each in order (read from the
// file inputName), and it returns the bytes of the output tensors in
// order. A timeout above zero bounds the execution.
func RunBytes(ctx context.Context, h *Handle, w *worker.Worker, input []byte, inputName string, timeout time.Duration) ([]byte, error) {
	d := h.Describe()
	args, bufs, err := runArgs(w, d, input, inputName)
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("--timeout %s passed", timeout))
		defer cancel()
	}
	if err := h.Execute(ctx, args); err != nil {
		return nil, err
	}
	var out []byte
	for i := d.Inputs; i < len(args.Tensors); i++ {
		n, _ := d.Tensors[i].Bytes()
		out = append(out, bufBytes(bufs[i])[:n]...)
	}
	return out, nil
}

// runArgs allocates in w's arena the tensors and scratch buffers of the
// operation d describes and copies input, the bytes of the input tensors
// in order (read from the file inputName), into them. It returns the
// buffers it allocated even with an error: the caller frees them.
func runArgs(w *worker.Worker, d Description, input []byte, inputName string) (args Args, bufs []worker.Buffer, err error) {
	alloc := func(n uint64) (worker.Buffer, error) {
		b, err := w.Arena().Alloc(max(n, 1))
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	off := 0
	for i, t := range d.Tensors {
		n, _ := t.Bytes()
		b, err := alloc(n)
		if err != nil {
			return args, bufs, fmt.Errorf("op run: tensor %d: %w", i, err)
		}
		dt, ok := execDType(t.DType)
		if !ok {
			return args, bufs, fmt.Errorf("op run: tensor %d: dtype %s cannot be executed on the sim workers (f32, i32, f16, q8x32, q4x32)", i, t.DType)
		}
		if i < d.Inputs {
			if off+int(n) > len(input) {
				return args, bufs, fmt.Errorf("op run: %s holds %d bytes; the inputs need %d or more", inputName, len(input), off+int(n))
			}
			copy(bufBytes(b), input[off:off+int(n)])
			off += int(n)
		}
		// The bytes it spans by its strides: the input file holds them,
		// rows at their outer strides, as the output file will.
		tt := b.Tensor(dt, t.Shape...)
		tt.Nbytes, tt.Strides = n, t.Strides
		args.Tensors = append(args.Tensors, tt)
	}
	if off != len(input) {
		return args, bufs, fmt.Errorf("op run: %s holds %d bytes; the inputs take exactly %d", inputName, len(input), off)
	}
	for _, sc := range []struct {
		n   uint64
		dst **worker.Buffer
	}{{d.DeviceScratch, &args.DeviceScratch}, {d.HostScratch, &args.HostScratch}} {
		if sc.n > 0 {
			b, err := alloc(sc.n)
			if err != nil {
				return args, bufs, fmt.Errorf("op run: scratch: %w", err)
			}
			*sc.dst = &b
		}
	}
	return args, bufs, nil
}

// execDType is the worker's dtype of d, when the sim workers execute it.
func execDType(d DType) (worker.DType, bool) {
	switch d {
	case F32:
		return worker.Float32, true
	case I32:
		return worker.Int32, true
	case F16:
		return worker.Float16, true
	case Q8x32:
		return worker.Q8x32, true
	case Q4x32:
		return worker.Q4x32, true
	}
	return 0, false
}

// bufBytes returns the bytes of an arena buffer.
func bufBytes(b worker.Buffer) []byte {
	f := b.Float32s()
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}
