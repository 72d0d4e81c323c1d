package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// callVAdd runs one vadd task of h on child id, bounded by a deadline, and
// checks its outputs when it succeeds.
func callVAdd(t *testing.T, w *Worker, h CallableHandle, id, seed int) error {
	t.Helper()
	v := newVAddTask(t, w, 256, seed, 0.5)
	defer v.free()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.CallContext(ctx, id, h, v.args()); err != nil {
		return err
	}
	if ctx.Err() != nil {
		t.Fatal("the call outlived its deadline")
	}
	return v.check()
}

// goVAdd is callVAdd in another goroutine: the task's buffers are
// allocated here (a test may fail only from its own goroutine), the call
// and the check run there, and its outcome arrives on the channel.
func goVAdd(t *testing.T, w *Worker, h CallableHandle, id, seed int) <-chan error {
	t.Helper()
	v := newVAddTask(t, w, 256, seed, 0.5)
	t.Cleanup(v.free)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := w.CallContext(ctx, id, h, v.args())
		if err == nil {
			err = v.check()
		}
		done <- err
	}()
	return done
}

// waitExited waits, with a deadline, until child id's current process has
// been waited for.
func waitExited(t *testing.T, w *Worker, id int) {
	t.Helper()
	e, err := w.endpoint(id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("child %d did not exit", id)
	}
}

// A child that breaks the mailbox protocol, or dies, is replaced: the
// request in flight fails with an EndpointError naming the violation (it
// is not retried), the next request addressed to the child runs on a new
// process that has every live registration, and the parent's descriptor
// table does not grow. Child 1's first incarnation carries the fault; its
// replacement carries none.
func TestChildReplacedAfterFailure(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	for _, tc := range []struct {
		name  string
		fault uint32
		kill  bool   // SIGKILL the child: idle (no fault), or stalled in its task
		want  string // in the error of the request in flight; "" when none is
		cause error
	}{
		{name: "descriptors", fault: faultTaskReplyRights, want: "carries descriptors (4 received and closed"},
		{name: "oversized", fault: faultTaskReplyLong, want: "longer than a mailbox frame"},
		{name: "truncated", fault: faultTaskReplyShort, want: "args length field", cause: &mailbox.FrameError{}},
		{name: "malformed", fault: faultTaskReplyGarbage, want: "bad magic", cause: &mailbox.FrameError{}},
		{name: "killed idle", kill: true},
		{name: "killed in task", fault: faultStallOnTask, kill: true, want: "child process exited", cause: ErrChildExited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, log := testConfig(2, 0)
			cfg.faults = map[int]uint32{1: tc.fault}
			w := startWorker(t, cfg)
			h := mustRegister(t, w, vadd)
			if err := callVAdd(t, w, h, 0, 1); err != nil {
				t.Fatal(err)
			}
			before := openFDs(t)
			oldPID := w.Children()[1].PID

			var err error
			switch {
			case tc.kill && tc.fault == 0:
				if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				waitExited(t, w, 1)
			case tc.kill:
				done := goVAdd(t, w, h, 1, 2)
				log.waitFor(t, "worker 1: task", "injected stall")
				if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				select {
				case err = <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("the task in flight did not return after its child was killed")
				}
			default:
				err = callVAdd(t, w, h, 1, 2)
			}
			if tc.want != "" {
				var ee *EndpointError
				if !errors.As(err, &ee) || ee.WorkerID != 1 || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("the request in flight: %v; want an EndpointError of worker 1 with %q", err, tc.want)
				}
				if fe, ok := tc.cause.(*mailbox.FrameError); ok && !errors.As(err, &fe) {
					t.Errorf("the request in flight: %v; want a mailbox frame error", err)
				} else if !ok && tc.cause != nil && !errors.Is(err, tc.cause) {
					t.Errorf("the request in flight: %v; want %v", err, tc.cause)
				}
				if w.Alive(1) != true {
					t.Fatalf("child 1 is not replaced: %+v", w.Children()[1])
				}
			}

			// The next request: served by the replacement, with the
			// registration reinstalled from the parent's copy.
			if err := callVAdd(t, w, h, 1, 3); err != nil {
				t.Fatalf("the request after the failure: %v", err)
			}
			c := w.Children()[1]
			if c.Replacements != 1 || c.Generation != 1 || !c.Active || c.GivenUp || c.PID == oldPID || c.PID == 0 {
				t.Errorf("child 1 after the replacement: %+v (old pid %d)", c, oldPID)
			}
			if tc.want != "" && (c.LastFailure == nil || !strings.Contains(c.LastFailure.Error(), tc.want)) {
				t.Errorf("child 1's last failure %v does not name %q", c.LastFailure, tc.want)
			}
			if n, err := w.installed(1); n != 1 || err != nil {
				t.Errorf("the replacement has %d identities (%v), want 1", n, err)
			}
			if err := syscall.Kill(oldPID, 0); err != syscall.ESRCH {
				t.Errorf("the replaced process %d is still there (kill 0: %v)", oldPID, err)
			}
			if after := openFDs(t); after > before {
				t.Errorf("the parent has %d open descriptors after the replacement, %d before", after, before)
			}
			// The registration's scope holds the replacement: unregistering
			// reaches it, and nothing is uncertain.
			if err := w.Unregister(context.Background(), h); err != nil {
				t.Errorf("unregister after the replacement: %v", err)
			}
			if n, _ := w.installed(1); n != 0 {
				t.Errorf("the replacement keeps %d identities after unregister", n)
			}
			if c0 := w.Children()[0]; c0.Replacements != 0 || !c0.Active {
				t.Errorf("the well-behaved child: %+v", c0)
			}
		})
	}
}

// A child that misbehaves in every incarnation is replaced MaxRestarts
// times within the window, then given up: requests to it fail at once with
// ErrChildGivenUp naming the last failure, no further process starts, and
// its siblings keep serving.
func TestChildReplacementBounded(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(2, 0)
	cfg.faults = map[int]uint32{1: faultTaskReplyGarbage}
	cfg.refaults = map[int]uint32{1: faultTaskReplyGarbage}
	cfg.MaxRestarts = 2
	cfg.RestartWindow = time.Hour
	w := startWorker(t, cfg)
	h := mustRegister(t, w, vadd)
	for i := range 3 { // the first incarnation and its two replacements
		if err := callVAdd(t, w, h, 1, i); err == nil || !strings.Contains(err.Error(), "bad magic") {
			t.Fatalf("call %d: %v; want the malformed reply refused", i, err)
		}
	}
	before := openFDs(t)
	err := callVAdd(t, w, h, 1, 4)
	if !errors.Is(err, ErrChildGivenUp) || !strings.Contains(err.Error(), "bad magic") || !strings.Contains(err.Error(), "2 replacements") {
		t.Fatalf("call beyond the bound: %v; want ErrChildGivenUp naming the bound and the last failure", err)
	}
	if w.Alive(1) {
		t.Error("a given-up child is alive")
	}
	c := w.Children()[1]
	if c.Replacements != 2 || !c.GivenUp || c.Active {
		t.Errorf("child 1: %+v, want 2 replacements, given up, inactive", c)
	}
	if after := openFDs(t); after > before {
		t.Errorf("giving up grew the parent's descriptors: %d, %d before", after, before)
	}
	if err := callVAdd(t, w, h, 0, 5); err != nil {
		t.Errorf("the sibling: %v", err)
	}
}

// Replacement off (MaxRestarts < 0): a failed child stays retired and
// requests to it fail with the failure that retired it.
func TestChildReplacementOff(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(1, 0)
	cfg.faults = map[int]uint32{0: faultTaskReplyRights}
	cfg.MaxRestarts = -1
	w := startWorker(t, cfg)
	h := mustRegister(t, w, vadd)
	for i := range 2 {
		if err := callVAdd(t, w, h, 0, i); err == nil || !strings.Contains(err.Error(), "carries descriptors") {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if c := w.Children()[0]; c.Replacements != 0 || c.Active {
		t.Errorf("child 0: %+v, want no replacement", c)
	}
}

// A replacement gets the activations its predecessor held: the callable's
// module init runs in the new process before the next request, and the
// Deactivate that balances the original Activate runs its shutdown there.
func TestReplacementReplaysActivations(t *testing.T) {
	log := filepath.Join(t.TempDir(), "hooks.log")
	cfg, _ := testConfig(1, 0)
	cfg.ChildEnv = append(cfg.ChildEnv, "PTOJIT_WORKER_TEST_HOOK_LOG="+log)
	w := startWorker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := w.Register(ctx, registry.ChipCallableKind, hookBlob(t, "replay", "0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Activate(ctx, 0, h); err != nil {
		t.Fatal(err)
	}
	pid := w.Children()[0].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExited(t, w, 0)
	ran, err := w.Deactivate(ctx, 0, h)
	if err != nil || !ran {
		t.Fatalf("deactivate on the replacement: shutdown ran %v, %v; want true, nil", ran, err)
	}
	b, _ := os.ReadFile(log)
	// The killed child ran no shutdown; the replacement ran init, then
	// shutdown.
	if got, want := string(b), "init replay\ninit replay\nshutdown replay\n"; got != want {
		t.Errorf("hook log %q, want %q", got, want)
	}
	if w.Children()[0].PID == pid {
		t.Error("the child was not replaced")
	}
}

// Close does not wait behind a replacement whose new child stalls: it
// aborts the child being started, and the request that asked for the
// replacement fails.
func TestCloseAbortsReplacement(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(2, 0)
	cfg.faults = map[int]uint32{1: faultExitOnTask}
	cfg.refaults = map[int]uint32{1: faultStallOnRegister}
	cfg.ControlTimeout = time.Minute
	w := startWorker(t, cfg)
	h := mustRegister(t, w, vadd)
	if err := callVAdd(t, w, h, 1, 1); !errors.Is(err, ErrChildExited) {
		t.Fatalf("the task on the exiting child: %v", err)
	}
	called := make(chan error, 1)
	go func() { called <- w.CallContext(context.Background(), 1, h, mailbox.TaskArgs{}) }()
	log.waitFor(t, "worker 1: register", "injected stall") // the replacement, installing h
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	deadline := time.After(20 * time.Second)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-deadline:
		t.Fatal("Close waits behind a replacement that stalls")
	}
	select {
	case err := <-called:
		if err == nil {
			t.Fatal("the call whose replacement was aborted succeeded")
		}
	case <-deadline:
		t.Fatal("the call whose replacement was aborted never returned")
	}
}

// Concurrent requests to a dead child share one replacement, and each is
// served by it.
func TestConcurrentRequestsShareOneReplacement(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(2, 0)
	w := startWorker(t, cfg)
	h := mustRegister(t, w, vadd)
	if err := syscall.Kill(w.Children()[1].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExited(t, w, 1)
	const n = 8
	var calls []<-chan error
	for i := range n {
		calls = append(calls, goVAdd(t, w, h, 1, 10+i))
	}
	deadline := time.After(60 * time.Second)
	for _, c := range calls {
		select {
		case err := <-c:
			if err != nil {
				t.Error(err)
			}
		case <-deadline:
			t.Fatal("the requests to the replaced child did not all return")
		}
	}
	if c := w.Children()[1]; c.Replacements != 1 || !c.Active {
		t.Errorf("child 1: %+v, want one replacement", c)
	}
}

// Run's tasks for any child of a path avoid a child given up: they run on
// its siblings.
func TestRunAvoidsChildGivenUp(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(2, 0)
	cfg.faults = map[int]uint32{1: faultTaskReplyGarbage}
	cfg.refaults = map[int]uint32{1: faultTaskReplyGarbage}
	cfg.MaxRestarts = 1
	cfg.RestartWindow = time.Hour
	w := startWorker(t, cfg)
	h := mustRegister(t, w, vadd)
	for i := range 3 {
		if err := callVAdd(t, w, h, 1, i); err == nil {
			t.Fatalf("call %d on the misbehaving child succeeded", i)
		}
	}
	if !w.Children()[1].GivenUp {
		t.Fatalf("child 1 is not given up: %+v", w.Children()[1])
	}
	const n = 32
	vs := make([]*vaddTask, n)
	for i := range vs {
		vs[i] = newVAddTask(t, w, 64, i, 2)
		defer vs[i].free()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var tasks []*Task
	err := w.Run(ctx, func(o *Orchestrator) error {
		for _, v := range vs {
			task, err := o.SubmitNextLevel(h, v.args(), CallConfig{})
			if err != nil {
				return err
			}
			tasks = append(tasks, task)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run with a child given up: %v", err)
	}
	for i, task := range tasks {
		if task.Worker() != 0 {
			t.Errorf("task %d ran on worker %d", i, task.Worker())
		}
		if err := vs[i].check(); err != nil {
			t.Errorf("task %d: %v", i, err)
		}
	}
}
