package worker

// End-to-end tests of the seed's Validation table with real child
// processes (the test binary re-executed as a chip child, python3 as the SUB
// child).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
	"github.com/ptojit/ptojit/registry/worker/simtest"
)

// slotOf returns the private slot a child logged for its first install of h.
func slotOf(t *testing.T, log *syncBuffer, id int, h registry.Hashid) int {
	t.Helper()
	l := log.waitFor(t, fmt.Sprintf("worker %d: register %v: slot ", id, h))
	var slot, refs int
	if _, err := fmt.Sscanf(l[strings.Index(l, ": slot ")+2:], "slot %d refs %d", &slot, &refs); err != nil {
		t.Fatalf("log line %q: %v", l, err)
	}
	return slot
}

func mustRegister(t *testing.T, w *Worker, blob []byte) CallableHandle {
	t.Helper()
	h, err := w.Register(context.Background(), registry.ChipCallableKind, blob)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// runOn runs one vadd task on worker id and checks its output.
func runOn(t *testing.T, w *Worker, h CallableHandle, id int) error {
	t.Helper()
	v := newVAddTask(t, w, 256, id+3, 0.5)
	defer v.free()
	err := w.Run(context.Background(), func(o *Orchestrator) error {
		_, err := o.SubmitNextLevel(h, v.args(), CallConfig{Workers: []int{id}})
		return err
	})
	if err != nil {
		return err
	}
	return v.check()
}

// Task frame digest: the TASK frame carries the reserved u64 0 at the
// callable offset and the raw 32-byte digest at the start of the args area,
// followed by the task-args blob; the child resolves exactly that digest.
func TestTaskFrameDigest(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	h := chipHashid(t, vadd)
	a := mailbox.TaskArgs{Tensors: []mailbox.Tensor{{Offset: 64, Nbytes: 16, DType: mailbox.Float32, Shape: []uint64{4}}}, Scalars: []uint64{7}}
	f, err := mailbox.AppendTaskFrame(nil, h.Digest(), a)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(f[mailbox.OffCallable:]); got != 0 {
		t.Errorf("callable field %#x, want 0", got)
	}
	if !bytes.Equal(f[mailbox.OffArgs:mailbox.OffArgs+mailbox.DigestSize], h[:]) {
		t.Errorf("args area starts with %x, want the raw digest %x", f[mailbox.OffArgs:mailbox.OffArgs+mailbox.DigestSize], h[:])
	}
	blob, _ := mailbox.AppendTaskArgs(nil, a)
	if !bytes.Equal(f[mailbox.OffArgs+mailbox.DigestSize:], blob) {
		t.Errorf("task-args blob differs after the digest")
	}
	if bytes.Contains(f, []byte(h.String())) || bytes.Contains(f, []byte(h.String()[7:])) {
		t.Error("task frame carries the hashid as text")
	}
	pf, err := mailbox.ParseFrame(f)
	if err != nil || pf.Op != mailbox.OpTask {
		t.Fatalf("parse: %v %v", pf.Op, err)
	}

	// End to end: the child executes a frame naming h, and a frame whose
	// digest differs by one bit fails as not installed.
	cfg, log := testConfig(1, 0)
	w := startWorker(t, cfg)
	hd := mustRegister(t, w, vadd)
	if err := runOn(t, w, hd, 0); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	e, _ := w.endpoint(0)
	bad := h
	bad[31] ^= 1
	v := newVAddTask(t, w, 8, 1, 1)
	if err := e.task(bad, v.args()); !errors.Is(err, registry.HashidNotInstalled) {
		t.Errorf("task with a flipped digest bit: %v", err)
	}
}

// Private slot resolve and slot independence / no slot consistency: the
// children allocate different private slots for the same hashids, and every
// task still resolves and runs on each child.
func TestPrivateSlotsDiffer(t *testing.T) {
	vadd, empty, _ := testBlobs(t)
	cfg, log := testConfig(2, 0)
	cfg.slotBase = map[int]uint32{1: 3}
	w := startWorker(t, cfg)
	hv := mustRegister(t, w, vadd)
	he := mustRegister(t, w, empty)
	s0v, s1v := slotOf(t, log, 0, hv.Hashid), slotOf(t, log, 1, hv.Hashid)
	s0e, s1e := slotOf(t, log, 0, he.Hashid), slotOf(t, log, 1, he.Hashid)
	if s0v == s1v || s0e == s1e {
		t.Fatalf("slots agree across children: vadd %d/%d, empty %d/%d", s0v, s1v, s0e, s1e)
	}
	for id := range 2 {
		if err := runOn(t, w, hv, id); err != nil {
			t.Fatalf("worker %d: %v\n%s", id, err, log)
		}
		// The child resolved the digest itself, to its own slot.
		want := map[int]int{0: s0v, 1: s1v}[id]
		log.waitFor(t, fmt.Sprintf("worker %d: task %v: slot %d", id, hv.Hashid, want))
	}
	// Unaffine tasks of both callables spread over children whose slots
	// disagree.
	var vs []*vaddTask
	err := w.Run(context.Background(), func(o *Orchestrator) error {
		for i := range 20 {
			v := newVAddTask(t, w, 100, i, 2)
			vs = append(vs, v)
			if _, err := o.SubmitNextLevel(hv, v.args(), CallConfig{}); err != nil {
				return err
			}
			if _, err := o.SubmitNextLevel(he, mailbox.TaskArgs{}, CallConfig{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if err := v.check(); err != nil {
			t.Fatal(err)
		}
	}
	// No public API exposes a slot: the handle's fields are hashid, kind and
	// namespace only, and replies carry none (checked by the frame tests).
	if s := fmt.Sprintf("%+v", hv); strings.Contains(s, "slot") {
		t.Errorf("handle prints a slot: %s", s)
	}
}

// Duplicate register and target refcount: repeated registration returns
// independent handles; each child shares one slot with refcount 2;
// unregistering one handle leaves the other live and runnable.
func TestDuplicateRegisterRefcount(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(2, 0)
	w := startWorker(t, cfg)
	ctx := context.Background()
	h1 := mustRegister(t, w, vadd)
	h2 := mustRegister(t, w, vadd)
	if h1 == h2 || h1.Hashid != h2.Hashid {
		t.Fatalf("handles %v and %v: want distinct handles with one hashid", h1, h2)
	}
	for id := range 2 {
		log.waitFor(t, fmt.Sprintf("worker %d: register %v: slot", id, h1.Hashid), "refs 2")
		if n, err := w.installed(id); err != nil || n != 1 {
			t.Errorf("worker %d has %d identities installed (%v), want 1", id, n, err)
		}
	}
	if err := w.Unregister(ctx, h1); err != nil {
		t.Fatal(err)
	}
	for id := range 2 {
		log.waitFor(t, fmt.Sprintf("worker %d: unregister %v: freed false refs 1", id, h1.Hashid))
	}
	if err := runOn(t, w, h2, 1); err != nil {
		t.Fatalf("the second handle after unregistering the first: %v", err)
	}
	err := w.Run(ctx, func(o *Orchestrator) error {
		_, err := o.SubmitNextLevel(h1, mailbox.TaskArgs{}, CallConfig{})
		return err
	})
	if !errors.Is(err, registry.HandleStale) {
		t.Errorf("submit of the unregistered handle: %v", err)
	}
	if err := w.Unregister(ctx, h1); !errors.Is(err, registry.HandleStale) {
		t.Errorf("second unregister of one handle: %v", err)
	}
}

// Whole-scope register and post-start register: a registration after
// Start installs on every active chip child before the handle is returned.
func TestWholeScopePostStart(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(3, 0)
	w := startWorker(t, cfg)
	for id := range 3 {
		if n, _ := w.installed(id); n != 0 {
			t.Fatalf("worker %d starts with %d identities", id, n)
		}
	}
	h := mustRegister(t, w, vadd)
	for id := range 3 {
		if n, err := w.installed(id); err != nil || n != 1 {
			t.Errorf("worker %d: %d identities (%v) after register returned", id, n, err)
		}
		// The children's stderr reaches the log through a pipe, after the
		// reply: wait for the line, then count.
		log.waitFor(t, fmt.Sprintf("worker %d: register %v: slot", id, h.Hashid))
		if len(log.lines(fmt.Sprintf("worker %d: register %v: slot", id, h.Hashid))) != 1 {
			t.Errorf("worker %d did not install %v", id, h.Hashid)
		}
		if err := runOn(t, w, h, id); err != nil {
			t.Errorf("worker %d: %v", id, err)
		}
	}
}

// Pre-start register: a registration made before Start returns a handle at
// once and is installed on every child before the child reports ready.
func TestPreStartRegister(t *testing.T) {
	vadd, empty, _ := testBlobs(t)
	cfg, log := testConfig(2, 0)
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	hv, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	he, err := w.Register(ctx, registry.ChipCallableKind, empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for id := range 2 {
		// READY at start replied with the pre-start identities installed;
		// asking again must agree, with no registration in between.
		if n, err := w.installed(id); err != nil || n != 2 {
			t.Errorf("worker %d: %d identities (%v), want 2", id, n, err)
		}
		for _, h := range []registry.Hashid{hv.Hashid, he.Hashid} {
			log.waitFor(t, fmt.Sprintf("worker %d: register %v: slot", id, h))
			if len(log.lines(fmt.Sprintf("worker %d: register %v: slot", id, h))) != 1 {
				t.Errorf("worker %d: no install of %v", id, h)
			}
		}
		if err := runOn(t, w, hv, id); err != nil {
			t.Errorf("worker %d: %v\n%s", id, err, log)
		}
	}
	// Unregistering a pre-start handle reaches the children that attached.
	if err := w.Unregister(ctx, he); err != nil {
		t.Fatal(err)
	}
	for id := range 2 {
		if n, _ := w.installed(id); n != 1 {
			t.Errorf("worker %d: %d identities after unregister, want 1", id, n)
		}
	}
}

// Partial register failure: a child killed while it handles
// REGISTER_CALLABLE makes the registration fail with
// REGISTER_PARTIAL_FAILURE; no handle is returned; the children that
// confirmed get reverse cleanup; the dead child's pair is uncertain.
func TestPartialFailureChildKilled(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(3, 0)
	cfg.faults = map[int]uint32{1: faultStallOnRegister}
	w := startWorker(t, cfg)
	h := chipHashid(t, vadd)
	e1, _ := w.endpoint(1)
	go func() {
		log.waitFor(t, fmt.Sprintf("worker 1: register %v: injected stall", h))
		e1.cmd.Process.Kill()
	}()
	hd, err := w.Register(context.Background(), registry.ChipCallableKind, vadd)
	if !errors.Is(err, registry.RegisterPartialFailure) {
		t.Fatalf("register: %v", err)
	}
	if hd != (CallableHandle{}) {
		t.Errorf("a handle was returned: %v", hd)
	}
	if !errors.Is(err, ErrChildExited) {
		t.Errorf("error does not name the dead child: %v", err)
	}
	for _, id := range []int{0, 2} {
		log.waitFor(t, fmt.Sprintf("worker %d: unregister %v: slot", id, h), "cleared")
		if n, _ := w.installed(id); n != 0 {
			t.Errorf("worker %d keeps %d identities after cleanup", id, n)
		}
		if w.Uncertain(id, h) {
			t.Errorf("worker %d marked uncertain though its cleanup was confirmed", id)
		}
	}
	if !w.Uncertain(1, h) {
		t.Error("the killed child's pair is not uncertain")
	}
	if len(w.reg.Live()) != 0 {
		t.Errorf("live registrations after failure: %v", w.reg.Live())
	}
}

// A child that exits by itself during registration, and one that times
// out, fail the same way.
func TestPartialFailureExitAndTimeout(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	for _, tc := range []struct {
		name  string
		fault uint32
		cause error
	}{
		{"exit", faultExitOnRegister, ErrChildExited},
		{"timeout", faultStallOnRegister, ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := testConfig(2, 0)
			cfg.faults = map[int]uint32{0: tc.fault}
			if tc.cause == ErrTimeout {
				cfg.ControlTimeout = 300 * time.Millisecond
			}
			w := startWorker(t, cfg)
			h := chipHashid(t, vadd)
			_, err := w.Register(context.Background(), registry.ChipCallableKind, vadd)
			if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, tc.cause) {
				t.Fatalf("register: %v", err)
			}
			if !w.Uncertain(0, h) || w.Uncertain(1, h) {
				t.Errorf("uncertain: worker 0 %v, worker 1 %v; want true, false", w.Uncertain(0, h), w.Uncertain(1, h))
			}
			if n, _ := w.installed(1); n != 0 {
				t.Errorf("worker 1 keeps %d identities", n)
			}
			// The retired child is replaced, which is no Worker restart:
			// the pair stays blocked.
			if !w.Alive(0) || w.Children()[0].Replacements != 1 {
				t.Fatalf("child 0 was not replaced: %+v", w.Children()[0])
			}
			if !w.Uncertain(0, h) {
				t.Error("the replacement lifted worker 0's uncertain pair")
			}
			if _, err := w.Register(context.Background(), registry.ChipCallableKind, vadd); !errors.Is(err, registry.RegisterCleanupUncertain) {
				t.Errorf("register again after the replacement: %v; want REGISTER_CLEANUP_UNCERTAIN", err)
			}
		})
	}
}

// Cleanup uncertainty: a child that confirmed the install but whose cleanup
// cannot be confirmed blocks that target/hashid pair for the Worker's
// lifetime; a definite refusal (failed prewarm) does not.
func TestCleanupUncertainty(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(3, 0)
	cfg.faults = map[int]uint32{0: faultExitOnUnregister, 2: faultFailPrewarm}
	w := startWorker(t, cfg)
	h := chipHashid(t, vadd)
	ctx := context.Background()
	_, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, PrewarmFailed) || !errors.Is(err, registry.RegisterCleanupUncertain) {
		t.Fatalf("register: %v", err)
	}
	if !w.Uncertain(0, h) {
		t.Error("worker 0's unconfirmed cleanup did not mark it uncertain")
	}
	if w.Uncertain(1, h) || w.Uncertain(2, h) {
		t.Errorf("confirmed cleanup or definite refusal marked uncertain: %v %v", w.Uncertain(1, h), w.Uncertain(2, h))
	}
	// The pair stays blocked: the same hashid cannot be registered again on
	// this Worker (worker 0 has exited, so the scope is 1 and 2 now; a new
	// registration must still refuse while 0 is in scope: check the
	// registrar directly with worker 0's endpoint in scope).
	e0, _ := w.endpoint(0)
	desc, _ := registry.ChipDescriptor(testPlatform, testRuntime, vadd)
	_, err = w.reg.Register(ctx, registry.ChipCallableKind, vadd, desc, []Target{e0})
	if !errors.Is(err, registry.RegisterCleanupUncertain) {
		t.Errorf("re-register on the uncertain target: %v", err)
	}
}

// Prewarm: a callable whose entry symbol does not exist fails registration
// and is rolled back on every child; nothing is uncertain.
func TestPrewarmFailureRollsBack(t *testing.T) {
	_, _, bad := testBlobs(t)
	cfg, log := testConfig(2, 0)
	w := startWorker(t, cfg)
	h := chipHashid(t, bad)
	_, err := w.Register(context.Background(), registry.ChipCallableKind, bad)
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, PrewarmFailed) {
		t.Fatalf("register: %v", err)
	}
	if !strings.Contains(err.Error(), "no_such_entry") {
		t.Errorf("error does not name the missing symbol: %v", err)
	}
	if strings.Contains(err.Error(), "/tmp") || strings.Contains(err.Error(), "ptojit-child-") {
		t.Errorf("error leaks a local path: %v", err)
	}
	for id := range 2 {
		if n, _ := w.installed(id); n != 0 {
			t.Errorf("worker %d keeps %d identities after a failed prewarm", id, n)
		}
		if w.Uncertain(id, h) {
			t.Errorf("worker %d uncertain after a definite refusal", id)
		}
	}
	_ = log
}

// Lazy prepare: a slot that was installed without prewarm is prepared in
// the dispatch path, with a warning.
func TestLazyPrepare(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(1, 0)
	cfg.faults = map[int]uint32{0: faultSkipPrewarm}
	w := startWorker(t, cfg)
	h := mustRegister(t, w, vadd)
	if len(log.lines("warning", "not prewarmed")) != 0 {
		t.Fatal("warning before any task")
	}
	if err := runOn(t, w, h, 0); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "worker 0: warning: task "+h.Hashid.String(), "not prewarmed")
	if err := runOn(t, w, h, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(log.lines("warning", "not prewarmed")); n != 1 {
		t.Errorf("%d lazy-prepare warnings after two tasks, want 1", n)
	}
}

// host_build_graph has no callable prewarm (seed 000: its prewarm hook is
// a no-op success): registering succeeds without preparing, even a
// callable that cannot be prepared; a callable is prepared by its first
// task, which runs with the right numbers and no lazy-prepare warning, and
// one that cannot be prepared fails there. The sim's default runtime
// keeps prewarming at registration.
func TestHostBuildGraphPrewarmIsNoOp(t *testing.T) {
	vadd, _, bad := testBlobs(t)
	cfg, log := testConfig(1, 0)
	cfg.Runtime = "host_build_graph"
	w := startWorker(t, cfg)
	ctx := context.Background()
	hb, err := w.Register(ctx, registry.ChipCallableKind, bad)
	if err != nil {
		t.Fatalf("register a callable host_build_graph does not prewarm: %v", err)
	}
	hv, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "worker 0: register "+hv.Hashid.String(), "no callable prewarm")
	for i := range 2 {
		if err := runOn(t, w, hv, 0); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	log.waitFor(t, "worker 0: task "+hv.Hashid.String(), "prepared on its first task")
	if n := len(log.lines("prepared on its first task")); n != 1 {
		t.Errorf("%d first-task prepares after two tasks, want 1", n)
	}
	if n := len(log.lines("warning", "not prewarmed")); n != 0 {
		t.Errorf("%d lazy-prepare warnings for a runtime without prewarm", n)
	}
	err = w.Call(0, hb, mailbox.TaskArgs{})
	if !errors.Is(err, PrewarmFailed) || !strings.Contains(err.Error(), "no_such_entry") {
		t.Fatalf("a task of the callable that cannot be prepared: %v", err)
	}

	// The default test runtime prewarms: the same callable is refused at
	// registration.
	cfg2, _ := testConfig(1, 0)
	w2 := startWorker(t, cfg2)
	if _, err := w2.Register(ctx, registry.ChipCallableKind, bad); !errors.Is(err, PrewarmFailed) {
		t.Fatalf("register on %s: %v; want PREWARM_FAILED", cfg2.Runtime, err)
	}
}

// Unregister cleanup: at the final unregister, the hashid stops resolving
// before the slot's executable state is cleared; afterwards a task naming
// it fails before any work.
func TestUnregisterCleanup(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, log := testConfig(2, 0)
	w := startWorker(t, cfg)
	ctx := context.Background()
	h := mustRegister(t, w, vadd)
	if err := w.Unregister(ctx, h); err != nil {
		t.Fatal(err)
	}
	for id := range 2 {
		stopped := log.waitFor(t, fmt.Sprintf("worker %d: unregister %v: resolution stopped (HASHID_NOT_INSTALLED) before slot cleanup", id, h.Hashid))
		cleared := log.waitFor(t, fmt.Sprintf("worker %d: unregister %v: slot", id, h.Hashid), "cleared")
		all := log.String()
		if strings.Index(all, stopped) > strings.Index(all, cleared) {
			t.Errorf("worker %d cleared the slot before resolution stopped", id)
		}
		if n, _ := w.installed(id); n != 0 {
			t.Errorf("worker %d: %d identities after final unregister", id, n)
		}
	}
	// A task for the unregistered digest fails before any work: the output
	// is untouched.
	e, _ := w.endpoint(0)
	v := newVAddTask(t, w, 32, 1, 3)
	err := e.task(h.Hashid, v.args())
	if !errors.Is(err, registry.HashidNotInstalled) {
		t.Fatalf("task after unregister: %v", err)
	}
	for i, x := range v.out.Float32s() {
		if x != -1 {
			t.Fatalf("out[%d] = %v: work was done for a missing mapping", i, x)
		}
	}
	// The slot is reusable: registering again installs and runs.
	h2 := mustRegister(t, w, vadd)
	if err := runOn(t, w, h2, 1); err != nil {
		t.Fatal(err)
	}
}

// Unsupported kind and descriptor mismatch are rejected by the target before
// install.
func TestTargetRejects(t *testing.T) {
	vadd, empty, _ := testBlobs(t)
	cfg, _ := testConfig(1, 0)
	w := startWorker(t, cfg)
	e, _ := w.endpoint(0)
	ctx := context.Background()
	spyc := registry.AppendSPYC(nil, []byte("not executed"))
	ph, err := registry.PythonHashid(spyc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		h       registry.Hashid
		kind    registry.Kind
		payload []byte
		code    registry.ErrorCode
	}{
		{"python kind on a chip child", ph, registry.PythonSerializedKind, spyc, registry.CallableKindUnsupported},
		{"unknown kind", chipHashid(t, vadd), registry.Kind(9), vadd, registry.CallableKindUnsupported},
		{"digest of another blob", chipHashid(t, empty), registry.ChipCallableKind, vadd, registry.HashidDescriptorMismatch},
		{"not a blob", chipHashid(t, vadd), registry.ChipCallableKind, []byte("garbage"), registry.CallableBlobInvalid},
	} {
		err := e.Register(ctx, tc.h, tc.kind, tc.payload)
		if !errors.Is(err, tc.code) {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
		var re *registry.Error
		if !errors.As(err, &re) || re.WorkerID != 0 || re.Namespace != registry.LocalChip || re.Hashid != tc.h.String() {
			t.Errorf("%s: error lacks worker, namespace or hashid: %+v", tc.name, re)
		}
	}
	if n, _ := w.installed(0); n != 0 {
		t.Errorf("%d identities installed after rejected registers", n)
	}
	// The endpoint is still healthy.
	if err := w.BareRoundTrip(0); err != nil {
		t.Fatal(err)
	}
}

// Submit handle only, and namespace checks: forged handles, Python handles
// on the chip path and chip handles on the SUB path are refused at submit.
func TestSubmitChecks(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	spyc := pythonPayload(t, "lambda tensors, scalars: None")
	cfg, _ := testConfig(1, 1)
	w := startWorker(t, cfg)
	hc := mustRegister(t, w, vadd)
	hp, err := w.Register(context.Background(), registry.PythonSerializedKind, spyc)
	if err != nil {
		t.Fatal(err)
	}
	forged := CallableHandle{Hashid: hc.Hashid, Kind: hc.Kind, TargetNamespace: hc.TargetNamespace}
	mutated := hc
	mutated.Hashid[0] ^= 1
	err = w.Run(context.Background(), func(o *Orchestrator) error {
		var errs []error
		_, err := o.SubmitNextLevel(forged, mailbox.TaskArgs{}, CallConfig{})
		errs = append(errs, expect(err, registry.HandleForged))
		_, err = o.SubmitNextLevel(mutated, mailbox.TaskArgs{}, CallConfig{})
		errs = append(errs, expect(err, registry.HandleMutated))
		_, err = o.SubmitNextLevel(hp, mailbox.TaskArgs{}, CallConfig{})
		errs = append(errs, expect(err, registry.HandleNamespaceMismatch))
		_, err = o.SubmitSub(hc, mailbox.TaskArgs{})
		errs = append(errs, expect(err, registry.HandleNamespaceMismatch))
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func expect(err error, code registry.ErrorCode) error {
	if !errors.Is(err, code) {
		return fmt.Errorf("got %v, want %s", err, code)
	}
	return nil
}

// L3 run unchanged: the orchestration function runs in the parent and mixes
// chip and SUB tasks.
func TestSubChild(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	spyc := pythonPayload(t, "lambda tensors, scalars: [tensors[1].__setitem__(i, tensors[0][i] * scalars[0]) for i in range(len(tensors[0]))]")
	cfg, log := testConfig(1, 2)
	w := startWorker(t, cfg)
	ctx := context.Background()
	hc := mustRegister(t, w, vadd)
	hp, err := w.Register(ctx, registry.PythonSerializedKind, spyc)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	for _, id := range w.SubWorkerIDs() {
		log.waitFor(t, fmt.Sprintf("worker %d: register %v: slot 0 refs 1", id, hp.Hashid))
	}
	v := newVAddTask(t, w, 50, 2, 4)
	in, _ := w.Arena().Alloc(4 * 50)
	out, _ := w.Arena().Alloc(4 * 50)
	for i, x := range in.Float32s() {
		_ = x
		in.Float32s()[i] = float32(i) / 2
	}
	err = w.Run(ctx, func(o *Orchestrator) error {
		if _, err := o.SubmitNextLevel(hc, v.args(), CallConfig{}); err != nil {
			return err
		}
		_, err := o.SubmitSub(hp, mailbox.TaskArgs{Tensors: []mailbox.Tensor{in.Tensor(mailbox.Float32, 50), out.Tensor(mailbox.Float32, 50)}, Scalars: []uint64{3}})
		return err
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if err := v.check(); err != nil {
		t.Error(err)
	}
	for i, x := range out.Float32s() {
		if want := float32(i) / 2 * 3; x != want {
			t.Fatalf("sub out[%d] = %v, want %v", i, x, want)
		}
	}
	// A failing Python callable reports TASK_FAILED with its exception.
	hf, err := w.Register(ctx, registry.PythonSerializedKind, pythonPayload(t, "lambda tensors, scalars: 1 / 0"))
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(ctx, func(o *Orchestrator) error {
		_, err := o.SubmitSub(hf, mailbox.TaskArgs{})
		return err
	})
	if !errors.Is(err, TaskFailed) || !strings.Contains(err.Error(), "ZeroDivisionError") {
		t.Errorf("failing sub task: %v", err)
	}
	// Unregister reaches the SUB children too.
	if err := w.Unregister(ctx, hp); err != nil {
		t.Fatal(err)
	}
	for _, id := range w.SubWorkerIDs() {
		if n, _ := w.installed(id); n != 1 {
			t.Errorf("sub worker %d: %d identities, want 1", id, n)
		}
	}
	if !slices.Equal(w.SubWorkerIDs(), []int{1, 2}) {
		t.Errorf("sub ids %v", w.SubWorkerIDs())
	}
}

// A child that dies during a task fails that task with ErrChildExited and
// leaves the registration scope: later registrations install on the active
// children only, and their tasks run there. The next request addressed to
// the dead child's id runs on its replacement, which was given every live
// registration.
func TestChildDiesDuringTask(t *testing.T) {
	vadd, empty, _ := testBlobs(t)
	cfg, _ := testConfig(2, 0)
	cfg.faults = map[int]uint32{1: faultExitOnTask}
	w := startWorker(t, cfg)
	h := mustRegister(t, w, vadd)
	if err := runOn(t, w, h, 1); !errors.Is(err, ErrChildExited) {
		t.Fatalf("task on a dying child: %v", err)
	}
	if err := runOn(t, w, h, 0); err != nil {
		t.Fatalf("the surviving child: %v", err)
	}
	he := mustRegister(t, w, empty)
	if n, _ := w.installed(0); n != 2 {
		t.Errorf("worker 0: %d identities, want 2", n)
	}
	if err := w.Call(0, he, mailbox.TaskArgs{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Call(1, he, mailbox.TaskArgs{}); err != nil {
		t.Errorf("call after the child died: %v", err)
	}
	if n, _ := w.installed(1); n != 2 {
		t.Errorf("worker 1's replacement: %d identities, want 2", n)
	}
}

// LOCAL_SLOT_EXHAUSTED is a definite refusal: the registration fails, the
// children that installed clean up, nothing is uncertain, and freeing a slot
// makes room again.
func TestSlotExhausted(t *testing.T) {
	vadd, empty, _ := testBlobs(t)
	c, err := registry.ParseChipCallable(empty)
	if err != nil {
		t.Fatal(err)
	}
	c.ConfigName = "" // same code, another blob: another hashid
	third, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(2, 0)
	cfg.Slots = 2
	cfg.slotBase = map[int]uint32{1: 1} // worker 1 has one slot left after one install
	w := startWorker(t, cfg)
	ctx := context.Background()
	hv := mustRegister(t, w, vadd)
	_, err = w.Register(ctx, registry.ChipCallableKind, empty)
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, registry.LocalSlotExhausted) {
		t.Fatalf("register beyond worker 1's slots: %v", err)
	}
	he := chipHashid(t, empty)
	if w.Uncertain(0, he) || w.Uncertain(1, he) {
		t.Error("a definite refusal marked a pair uncertain")
	}
	if n, _ := w.installed(0); n != 1 {
		t.Errorf("worker 0: %d identities after cleanup, want 1", n)
	}
	if err := w.Unregister(ctx, hv); err != nil {
		t.Fatal(err)
	}
	h3, err := w.Register(ctx, registry.ChipCallableKind, third)
	if err != nil {
		t.Fatalf("register after a slot was freed: %v", err)
	}
	if err := w.Call(1, h3, mailbox.TaskArgs{}); err != nil {
		t.Fatal(err)
	}
}

// A reply naming another hashid than requested is invalid: the endpoint is
// retired and, its outcome being unknown, the pair is uncertain for the
// Worker's lifetime: the replacement (the next request addressed to the
// child) keeps it blocked.
func TestReplyDigestMismatch(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(2, 0)
	cfg.faults = map[int]uint32{1: faultWrongDigest}
	w := startWorker(t, cfg)
	h := chipHashid(t, vadd)
	_, err := w.Register(context.Background(), registry.ChipCallableKind, vadd)
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, registry.ReplyHashidMismatch) {
		t.Fatalf("register: %v", err)
	}
	if !w.Uncertain(1, h) || w.Uncertain(0, h) {
		t.Errorf("uncertain: worker 0 %v, worker 1 %v; want false, true", w.Uncertain(0, h), w.Uncertain(1, h))
	}
	old, _ := w.endpoint(1)
	if err := w.BareRoundTrip(1); err != nil {
		t.Errorf("the request after the wrong digest: %v", err)
	}
	if e, _ := w.endpoint(1); e == old {
		t.Error("the endpoint that sent a wrong digest is still in use")
	}
	if !w.Uncertain(1, h) {
		t.Error("the replacement lifted its predecessor's uncertain pair")
	}
}

// A child that passes descriptors with a reply breaks the protocol: the
// parent closes what it received, refuses the reply and retires the
// endpoint, so a child cannot grow the parent's descriptor table; the next
// request addressed to it runs on a replacement.
func TestReplyWithDescriptorsRefused(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(2, 0)
	cfg.faults = map[int]uint32{1: faultReplyRights}
	w := startWorker(t, cfg)
	before := openFDs(t)
	_, err := w.Register(context.Background(), registry.ChipCallableKind, vadd)
	if err == nil || !strings.Contains(err.Error(), "carries descriptors (4 received and closed") {
		t.Fatalf("register with a child that passes descriptors: %v", err)
	}
	if after := openFDs(t); after > before {
		t.Errorf("the parent has %d open descriptors after the refused replies, %d before", after, before)
	}
	old, _ := w.endpoint(1)
	if err := w.BareRoundTrip(1); err != nil {
		t.Errorf("the request after the refused reply: %v", err)
	}
	if e, _ := w.endpoint(1); e == old {
		t.Error("the endpoint that passed descriptors is still in use")
	}
	if err := w.BareRoundTrip(0); err != nil {
		t.Errorf("the well-behaved child: %v", err)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// A registration racing with Start lands on every child: either before
// Start (attached to each child before READY) or after (in its scope).
func TestRegisterDuringStart(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(2, 0)
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	done := make(chan error, 1)
	var h CallableHandle
	go func() {
		var err error
		h, err = w.Register(ctx, registry.ChipCallableKind, vadd)
		done <- err
	}()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for id := range 2 {
		if n, _ := w.installed(id); n != 1 {
			t.Errorf("worker %d: %d identities, want 1", id, n)
		}
		if err := runOn(t, w, h, id); err != nil {
			t.Error(err)
		}
	}
}

// Prewarm resolves symbols only and runs no orchestration code.
// The callable's config symbol is orchestration code here (empty_orch,
// which returns 0, a NULL configuration): registration succeeds, because
// prewarm only resolves the symbol, and the first task runs it and fails.
func TestSeed000PrewarmResolvesSymbolsOnly(t *testing.T) {
	testBlobs(t) // skips or fails as every chip test does without a compiler
	dir := t.TempDir()
	c, err := simtest.EmptyCallable(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.ConfigName = "empty_orch"
	blob, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(1, 0)
	w := startWorker(t, cfg)
	h, err := w.Register(context.Background(), registry.ChipCallableKind, blob)
	if err != nil {
		t.Fatalf("register ran the config symbol during prewarm: %v", err)
	}
	err = w.Run(context.Background(), func(o *Orchestrator) error {
		_, err := o.SubmitNextLevel(h, mailbox.TaskArgs{}, CallConfig{Workers: []int{0}})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "config symbol returned NULL") {
		t.Fatalf("first task: %v, want the config symbol's failure", err)
	}
	// A missing config symbol still fails prewarm: resolution is prewarm's.
	c.ConfigName = "no_such_config"
	if blob, err = c.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Register(context.Background(), registry.ChipCallableKind, blob); !errors.Is(err, PrewarmFailed) {
		t.Fatalf("unresolvable config symbol: %v", err)
	}
}

// A task record carries the callable's digest, kind and namespace
// only, never the handle with its private registration id.
func TestSeed000TaskRecordCarriesDigestKindNamespace(t *testing.T) {
	handle := reflect.TypeFor[CallableHandle]()
	var names []string
	for f := range reflect.TypeFor[Task]().Fields() {
		if f.Type == handle {
			t.Errorf("Task field %s holds a whole CallableHandle", f.Name)
		}
		names = append(names, f.Name)
	}
	for _, want := range []string{"digest", "kind", "ns"} {
		if !slices.Contains(names, want) {
			t.Errorf("Task has no %s field: %v", want, names)
		}
	}
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(1, 0)
	w := startWorker(t, cfg)
	h, err := w.Register(context.Background(), registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	v := newVAddTask(t, w, 64, 3, 0.5)
	defer v.free()
	err = w.Run(context.Background(), func(o *Orchestrator) error {
		task, err := o.SubmitNextLevel(h, v.args(), CallConfig{})
		if err != nil {
			return err
		}
		if task.digest != h.Hashid || task.kind != registry.ChipCallableKind || task.ns != registry.LocalChip {
			t.Errorf("task record %v %v %v, want %v %v %v", task.digest, task.kind, task.ns, h.Hashid, registry.ChipCallableKind, registry.LocalChip)
		}
		return task.Wait()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The L2 path runs a registered handle on one chip worker with no
// L3 orchestrator (no Run, no queues).
func TestSeed000L2ChipWorkerRunsHandleDirectly(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(1, 0)
	cw, err := NewChipWorker(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Close()
	if cw.Arena() != cw.w.Arena() {
		t.Fatal("ChipWorker.Arena is not the arena its chip child maps")
	}
	h, err := cw.Register(context.Background(), vadd)
	if err != nil {
		t.Fatal(err)
	}
	v := newVAddTask(t, cw.w, 128, 5, 2)
	defer v.free()
	if err := cw.Call(h, v.args()); err != nil {
		t.Fatal(err)
	}
	if err := v.check(); err != nil {
		t.Fatal(err)
	}
	// The handle's contract holds on the L2 path: a consumed handle fails.
	if err := cw.Unregister(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if err := cw.Call(h, v.args()); !errors.Is(err, registry.HandleStale) {
		t.Fatalf("stale handle: %v", err)
	}
	if _, err := NewChipWorker(context.Background(), Config{ChipWorkers: 2}); err == nil {
		t.Fatal("an L2 worker with two chip children")
	}
}

// LOCAL_PYTHON is used for the Python-capable child loops a Worker owns
// (SUB children and next-level Worker-child dispatch loops), and
// SubmitNextLevel on an L4 Worker child path requires a Python dispatch
// handle. An L4 Worker's Worker children are LOCAL_PYTHON targets: a
// Python handle registered once installs on them and on its SUB children,
// and SubmitNextLevel reaches the Worker children only.
func TestSeed000WorkerChildLoopsServeLocalPython(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	spyc := pythonPayload(t, "lambda tensors, scalars: [tensors[1].__setitem__(i, tensors[0][i] + scalars[0]) for i in range(len(tensors[0]))]")
	cfg, log := testConfig(0, 1)
	cfg.WorkerChildren = 2
	w := startWorker(t, cfg)
	ctx := context.Background()
	hp, err := w.Register(ctx, registry.PythonSerializedKind, spyc)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	ids := w.WorkerChildIDs()
	if !slices.Equal(ids, []int{1, 2}) {
		t.Fatalf("worker child ids %v", ids)
	}
	for _, id := range append(w.SubWorkerIDs(), ids...) {
		if n, err := w.installed(id); err != nil || n != 1 {
			t.Errorf("child %d: %d installed (%v), want the Python callable", id, n, err)
		}
	}
	in, _ := w.Arena().Alloc(4 * 16)
	for i := range in.Float32s() {
		in.Float32s()[i] = float32(i)
	}
	outs := []mailbox.Buffer{}
	for range ids {
		b, _ := w.Arena().Alloc(4 * 16)
		outs = append(outs, b)
	}
	ran := map[int]bool{}
	err = w.Run(ctx, func(o *Orchestrator) error {
		for i, id := range ids {
			task, err := o.SubmitNextLevel(hp, mailbox.TaskArgs{Tensors: []mailbox.Tensor{in.Tensor(mailbox.Float32, 16), outs[i].Tensor(mailbox.Float32, 16)}, Scalars: []uint64{7}}, CallConfig{Workers: []int{id}})
			if err != nil {
				return err
			}
			if err := task.Wait(); err != nil {
				return err
			}
			ran[task.Worker()] = true
		}
		// The SUB child is not a next-level target.
		if _, err := o.SubmitNextLevel(hp, mailbox.TaskArgs{}, CallConfig{Workers: w.SubWorkerIDs()}); !errors.Is(err, registry.TargetNamespaceMismatch) {
			t.Errorf("next level reached the SUB child: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !ran[1] || !ran[2] {
		t.Errorf("ran on %v, want both Worker children", ran)
	}
	for i := range ids {
		for j, x := range outs[i].Float32s() {
			if x != float32(j)+7 {
				t.Fatalf("child %d out[%d] = %v", ids[i], j, x)
			}
		}
	}
	// A chip handle cannot reach an L4 Worker's next level, and a Worker
	// cannot have both next levels.
	if _, err := New(Config{ChipWorkers: 1, WorkerChildren: 1}); err == nil {
		t.Error("a Worker with chip children and Worker children")
	}
	hc, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if err != nil {
		return // refused outright: it cannot reach the next level either
	}
	err = w.Run(ctx, func(o *Orchestrator) error {
		_, err := o.SubmitNextLevel(hc, mailbox.TaskArgs{}, CallConfig{})
		return err
	})
	if !errors.Is(err, registry.HandleNamespaceMismatch) {
		t.Errorf("chip handle at an L4 next level: %v", err)
	}
}
