package worker

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// Close does not wait behind a task that never returns: it kills the child
// first, and the task fails with the child's death.
func TestCloseKillsChildHungInTask(t *testing.T) {
	_, empty, _ := testBlobs(t)
	cfg, log := testConfig(1, 0)
	cfg.faults = map[int]uint32{0: faultStallOnTask}
	w := startWorker(t, cfg)
	h := mustRegister(t, w, empty)
	called := make(chan error, 1)
	go func() { called <- w.Call(0, h, TaskArgs{}) }()
	log.waitFor(t, "injected stall")
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	deadline := time.After(10 * time.Second)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-deadline:
		t.Fatal("Close hangs behind a task that holds the mailbox")
	}
	select {
	case err := <-called:
		var ee *EndpointError
		if !errors.As(err, &ee) {
			t.Fatalf("the hung task returned %v, want an EndpointError", err)
		}
	case <-deadline:
		t.Fatal("the hung task never returned")
	}
}

func testArena(t *testing.T, size int64) *Arena {
	t.Helper()
	a, err := newArena(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	return a
}

// Alloc refuses sizes that do not fit, however large, instead of wrapping
// around to a small or empty span.
func TestArenaAllocRejectsHugeSizes(t *testing.T) {
	a := testArena(t, 1<<16)
	for _, n := range []uint64{math.MaxUint64, math.MaxUint64 - 10, math.MaxUint64 - 63, 1 << 63, a.Size() + 1} {
		if b, err := a.Alloc(n); !errors.Is(err, ErrArenaFull) {
			t.Errorf("Alloc(%d) = %+v, %v; want ErrArenaFull", n, b, err)
		}
	}
	b, err := a.Alloc(a.Size())
	if err != nil {
		t.Fatalf("Alloc of the whole arena: %v", err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
}

// A second Free of a buffer (or a Free of a buffer the arena never handed
// out) is refused and changes nothing: no span is ever handed out twice.
func TestArenaDoubleFree(t *testing.T) {
	a := testArena(t, 1<<16)
	x, err := a.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	y, err := a.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Free(); err != nil {
		t.Fatal(err)
	}
	if err := x.Free(); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("double Free: %v", err)
	}
	forged := Buffer{arena: a, Off: y.Off + 64, Len: 64}
	if err := forged.Free(); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Free of a span inside a live buffer: %v", err)
	}
	wrongLen := Buffer{arena: a, Off: y.Off, Len: 4096}
	if err := wrongLen.Free(); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Free with another length: %v", err)
	}
	// Every later allocation is disjoint from y and from each other.
	var live []Buffer
	for {
		b, err := a.Alloc(64)
		if err != nil {
			break
		}
		live = append(live, b)
	}
	live = append(live, y)
	seen := map[uint64]bool{}
	for _, b := range live {
		for off := b.Off; off < b.Off+b.Len; off += 64 {
			if seen[off] {
				t.Fatalf("offset %d handed out twice", off)
			}
			seen[off] = true
		}
	}
	if got := uint64(len(seen)) * 64; got != a.Size() {
		t.Fatalf("live buffers cover %d bytes of %d", got, a.Size())
	}
}

// Run's context bounds a task that never returns: the child running it is
// killed, the task fails with the context's error, and Run returns.
func TestRunContextEndsHungTask(t *testing.T) {
	_, empty, _ := testBlobs(t)
	cfg, log := testConfig(1, 0)
	cfg.faults = map[int]uint32{0: faultStallOnTask}
	w := startWorker(t, cfg)
	h := mustRegister(t, w, empty)
	ctx, cancel := context.WithCancelCause(context.Background())
	ran := make(chan error, 1)
	var task *Task
	go func() {
		ran <- w.Run(ctx, func(o *Orchestrator) error {
			var err error
			task, err = o.SubmitNextLevel(h, TaskArgs{}, CallConfig{})
			return err
		})
	}()
	log.waitFor(t, "injected stall")
	stopped := errors.New("the test gives up on the task")
	cancel(stopped)
	select {
	case err := <-ran:
		if !errors.Is(err, stopped) {
			t.Fatalf("Run returned %v, want the context's cause", err)
		}
		if !errors.Is(task.Wait(), stopped) {
			t.Fatalf("the hung task failed with %v, want the context's cause", task.Wait())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run waits for a task after its context ended")
	}
	// The child is retired: a later call fails at once.
	if err := w.Call(0, h, TaskArgs{}); err == nil {
		t.Fatal("a call on the killed child succeeded")
	}
}
