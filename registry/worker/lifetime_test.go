package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry/worker/mailbox"
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
	go func() { called <- w.Call(0, h, mailbox.TaskArgs{}) }()
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
			task, err = o.SubmitNextLevel(h, mailbox.TaskArgs{}, CallConfig{})
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
	// The killed child was retired; a later call runs on its replacement
	// (whose INIT carries no fault).
	if err := w.Call(0, h, mailbox.TaskArgs{}); err != nil {
		t.Fatalf("a call after the hung child was killed: %v", err)
	}
	if c := w.Children()[0]; c.Replacements != 1 || !c.Active {
		t.Errorf("child 0 after the call: %+v, want one replacement, active", c)
	}
}
