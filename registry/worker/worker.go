package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Defaults of Config.
const (
	DefaultArenaSize      = 64 << 20
	DefaultSlots          = 64
	DefaultControlTimeout = 30 * time.Second
	DefaultMaxRestarts    = 5
	DefaultRestartWindow  = time.Minute
)

// Config configures a Worker. New copies it.
type Config struct {
	// ChildCommand is the argv that starts a chip child: a program that
	// calls child.Main (ptojitd __worker-child; a test binary's TestMain).
	ChildCommand []string
	// ChildEnv is the children's environment; nil means this process's.
	ChildEnv []string
	// ChipWorkers is the number of chip children (LOCAL_CHIP), ids
	// 0..ChipWorkers-1.
	ChipWorkers int
	// SubWorkers is the number of Python SUB children (LOCAL_PYTHON), ids
	// ChipWorkers..ChipWorkers+SubWorkers-1.
	SubWorkers int
	// WorkerChildren is the number of next-level Worker children: Python
	// dispatch loops of an L4 Worker, LOCAL_PYTHON targets that
	// SubmitNextLevel reaches with a Python handle; ids follow the SUB
	// children. A Worker's next level is chip children (L3) or Worker
	// children (L4), not both.
	WorkerChildren int
	// Python is the interpreter SUB children run under ("python3").
	Python string
	// Platform and Runtime go into every CHIP_CALLABLE descriptor.
	Platform, Runtime string
	// ArenaSize is the tensor arena's size in bytes (DefaultArenaSize).
	ArenaSize int64
	// Slots is each child's number of private slots (DefaultSlots).
	Slots int
	// ControlTimeout bounds every INIT, READY, REGISTER_CALLABLE and
	// UNREGISTER_CALLABLE round trip (DefaultControlTimeout).
	ControlTimeout time.Duration
	// Stderr receives the children's diagnostics; nil means os.Stderr.
	Stderr io.Writer
	// Debug makes children log identity-table events (with their private
	// slots) to Stderr.
	Debug bool
	// MaxRestarts bounds the replacements of one child within
	// RestartWindow (DefaultMaxRestarts, DefaultRestartWindow): the
	// replacement beyond it is not made, and the child is given up for the
	// Worker's lifetime (ErrChildGivenUp). A negative MaxRestarts turns
	// replacement off: a failed child stays retired.
	MaxRestarts   int
	RestartWindow time.Duration

	// Test hooks: INIT flag bits and slot bases per worker id. faults apply
	// to the children Start starts, refaults to their replacements.
	faults   map[int]uint32
	refaults map[int]uint32
	slotBase map[int]uint32
}

// Worker is an L3 worker: it owns N chip children and optional Python SUB
// children, the shared tensor arena, and the parent-side registration table.
// Register, Unregister and Run are safe for concurrent use; Start and Close
// are called once.
type Worker struct {
	cfg   Config
	arena *mailbox.Arena
	reg   *Registrar

	// scope is held shared by Register and Unregister and exclusively by
	// Start and by a replacement, so a registration either precedes Start
	// (and is attached to every child) or sees every started child in its
	// scope, and sees a replaced child either before or after the move.
	// Lock order: a child's repl (replace.go), scope, mu; mu is never held
	// while a child is asked anything; actMu is taken alone.
	scope sync.RWMutex

	mu        sync.Mutex // guards started, closed, endpoints, the children's counters
	started   bool
	closed    bool
	endpoints []*endpoint    // by worker id
	children  []childState   // by worker id
	replacing sync.WaitGroup // replacements under way; Close waits for them

	actMu    sync.Mutex     // guards acts, provided; no other lock is taken while it is held
	acts     map[actKey]int // successful activations not yet deactivated, replayed on a replacement
	provided []provision    // accepted Provides, replayed on a replacement
}

// New checks cfg and creates the arena; no child starts before Start.
func New(cfg Config) (*Worker, error) {
	if cfg.WorkerChildren < 0 || cfg.ChipWorkers > 0 && cfg.WorkerChildren > 0 {
		return nil, fmt.Errorf("worker: the next level is chip children or Worker children, not both (chip %d, worker %d)", cfg.ChipWorkers, cfg.WorkerChildren)
	}
	if cfg.ChipWorkers < 0 || cfg.SubWorkers < 0 || cfg.ChipWorkers+cfg.SubWorkers+cfg.WorkerChildren == 0 {
		return nil, fmt.Errorf("worker: need at least one child (chip %d, sub %d)", cfg.ChipWorkers, cfg.SubWorkers)
	}
	if cfg.ChipWorkers > 0 && len(cfg.ChildCommand) == 0 {
		return nil, errors.New("worker: no child command")
	}
	if cfg.ChipWorkers > 0 {
		if _, err := registry.TargetArch(cfg.Platform); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		if cfg.Runtime == "" || len(cfg.Runtime) > mailbox.MaxName || len(cfg.Platform) > mailbox.MaxName {
			return nil, fmt.Errorf("worker: runtime name must have 1..%d bytes", mailbox.MaxName)
		}
	}
	if cfg.Python == "" {
		cfg.Python = "python3"
	}
	if cfg.ArenaSize == 0 {
		cfg.ArenaSize = DefaultArenaSize
	}
	if cfg.Slots == 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.ControlTimeout == 0 {
		cfg.ControlTimeout = DefaultControlTimeout
	}
	if cfg.MaxRestarts == 0 {
		cfg.MaxRestarts = DefaultMaxRestarts
	}
	if cfg.RestartWindow <= 0 {
		cfg.RestartWindow = DefaultRestartWindow
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	a, err := mailbox.NewArena(cfg.ArenaSize)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	n := cfg.ChipWorkers + cfg.SubWorkers + cfg.WorkerChildren
	w := &Worker{cfg: cfg, arena: a, reg: NewRegistrar(), children: make([]childState, n), acts: map[actKey]int{}}
	for i := range w.children {
		w.children[i].repl = make(chan struct{}, 1)
	}
	return w, nil
}

// Arena returns the shared tensor arena.
func (w *Worker) Arena() *mailbox.Arena { return w.arena }

// SubWorkerIDs returns the ids of the Python SUB children.
func (w *Worker) SubWorkerIDs() []int {
	ids := make([]int, w.cfg.SubWorkers)
	for i := range ids {
		ids[i] = w.cfg.ChipWorkers + i
	}
	return ids
}

// WorkerChildIDs returns the ids of the next-level Worker children.
func (w *Worker) WorkerChildIDs() []int {
	ids := make([]int, w.cfg.WorkerChildren)
	for i := range ids {
		ids[i] = w.cfg.ChipWorkers + w.cfg.SubWorkers + i
	}
	return ids
}

// nextLevel is the role and namespace SubmitNextLevel reaches: chip
// children on an L3 Worker, Worker-child Python loops on an L4 Worker.
func (w *Worker) nextLevel() (uint32, registry.Namespace) {
	if w.cfg.WorkerChildren > 0 {
		return mailbox.RoleWorkerChild, registry.LocalPython
	}
	return mailbox.RoleChip, registry.LocalChip
}

// Start starts every child, installs every registration made before Start
// on it (whole scope, so a child is ready only with every pre-start
// hashid installed), and waits for every child to report ready. If any
// child fails to start, initialize, install or report ready, every child is
// stopped, the Worker is closed and the error names each failure.
func (w *Worker) Start(ctx context.Context) (err error) {
	w.scope.Lock()
	defer w.scope.Unlock()
	w.mu.Lock()
	if w.started || w.closed {
		w.mu.Unlock()
		return errors.New("worker: Start called twice or after Close")
	}
	w.started = true
	w.mu.Unlock()

	n := w.cfg.ChipWorkers + w.cfg.SubWorkers + w.cfg.WorkerChildren
	eps := make([]*endpoint, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for id := range n {
		wg.Go(func() { eps[id], errs[id] = w.startChild(ctx, id, 0) })
	}
	wg.Wait()
	w.mu.Lock()
	w.endpoints = eps
	w.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		w.Close()
		return err
	}
	return nil
}

// startChild starts incarnation gen of child id (0 at Start, then one more
// per replacement), initializes it, installs every live registration of
// its namespace on it, replays the activations its predecessors held, and
// waits for READY.
func (w *Worker) startChild(ctx context.Context, id, gen int) (*endpoint, error) {
	role := uint32(mailbox.RoleChip)
	argv := w.cfg.ChildCommand
	if id >= w.cfg.ChipWorkers {
		role = mailbox.RoleSub
		if id >= w.cfg.ChipWorkers+w.cfg.SubWorkers {
			role = mailbox.RoleWorkerChild
		}
		argv = []string{w.cfg.Python, "-c", subChildScript}
	}
	env := w.cfg.ChildEnv
	if env == nil {
		env = os.Environ()
	}
	e, err := startEndpoint(id, role, argv, env, w.arena.File(), w.cfg.Stderr, w.cfg.ControlTimeout)
	if err != nil {
		return nil, err
	}
	if gen > 0 {
		// Close aborts a replacement it finds starting, so it never waits
		// for a new child's control timeouts.
		w.mu.Lock()
		w.children[id].starting = e
		closed := w.closed
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			w.children[id].starting = nil
			w.mu.Unlock()
		}()
		if closed {
			e.abort()
		}
	}
	flags := w.cfg.faults[id]
	if gen > 0 {
		flags = w.cfg.refaults[id]
	}
	ia := mailbox.InitArgs{
		WorkerID: uint32(id), Role: role, Slots: uint32(w.cfg.Slots), ArenaSize: uint64(w.cfg.ArenaSize),
		Flags: flags, SlotBase: w.cfg.slotBase[id], Platform: w.cfg.Platform, Runtime: w.cfg.Runtime,
	}
	if w.cfg.Debug {
		ia.Flags |= mailbox.InitDebug
	}
	if _, err := e.simple(mailbox.OpInit, ia.Append(nil), w.cfg.ControlTimeout); err != nil {
		return e, err
	}
	// Pre-start registrations: every live handle of the namespace, once per
	// handle, before the child reports ready.
	if err := w.reg.Attach(ctx, e); err != nil {
		return e, err
	}
	if err := w.replayProvisions(e); err != nil {
		return e, err
	}
	if err := w.replayActivations(ctx, e); err != nil {
		return e, err
	}
	if _, err := e.simple(mailbox.OpReady, nil, w.cfg.ControlTimeout); err != nil {
		return e, err
	}
	return e, nil
}

// endpoint returns child id's current endpoint, retired or not.
func (w *Worker) endpoint(id int) (*endpoint, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id < 0 || id >= len(w.endpoints) || w.endpoints[id] == nil {
		return nil, fmt.Errorf("worker: no child with id %d", id)
	}
	return w.endpoints[id], nil
}

// targets returns the active endpoints of namespace ns: the registration
// scope.
func (w *Worker) targets(ns registry.Namespace) []Target {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ts []Target
	for _, e := range w.endpoints {
		if e == nil || e.ns != ns {
			continue
		}
		if e.active() {
			ts = append(ts, e)
		}
	}
	return ts
}

// Register registers a callable on every active child of its namespace
// (whole scope) and returns its handle: a ChipCallable blob for
// registry.ChipCallableKind (LOCAL_CHIP), a SPYC envelope for
// registry.PythonSerializedKind (LOCAL_PYTHON). Before Start the scope is
// empty and Start installs the registration on every child. Repeated
// registrations return independent handles.
func (w *Worker) Register(ctx context.Context, kind registry.Kind, payload []byte) (CallableHandle, error) {
	desc, err := registry.Descriptor(kind, w.cfg.Platform, w.cfg.Runtime, payload)
	if err != nil {
		return CallableHandle{}, err
	}
	ns, err := registry.NamespaceOf(kind)
	if err != nil {
		return CallableHandle{}, err
	}
	w.scope.RLock()
	defer w.scope.RUnlock()
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return CallableHandle{}, errors.New("worker: closed")
	}
	return w.reg.Register(ctx, kind, slices.Clone(payload), desc, w.targets(ns))
}

// Unregister consumes a handle: every child of its scope drops one
// reference. Callers must not unregister a handle that a running Run may
// still submit.
func (w *Worker) Unregister(ctx context.Context, h CallableHandle) error {
	// Shared scope: a replacement (which takes it exclusively) moves a
	// child's place in every scope at once, so an unregister sees either
	// the failed child or its replacement.
	w.scope.RLock()
	defer w.scope.RUnlock()
	err := w.reg.Unregister(ctx, h)
	w.forgetActivations()
	return err
}

// Uncertain reports whether worker id refuses hashid for this Worker's
// lifetime because a cleanup was not confirmed.
func (w *Worker) Uncertain(id int, h registry.Hashid) bool { return w.reg.Uncertain(id, h) }

// Close shuts every child down and releases the arena.
func (w *Worker) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	eps := w.endpoints
	for i := range w.children {
		if e := w.children[i].starting; e != nil {
			e.abort()
		}
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range eps {
		if e != nil {
			wg.Go(func() { e.close(5 * time.Second) })
		}
	}
	wg.Wait()
	// A replacement under way sees closed and shuts its child down.
	w.replacing.Wait()
	return w.arena.Close()
}

// childState is what the Worker keeps of one child id across its
// incarnations. repl is held while the child is replaced; the other fields
// are guarded by Worker.mu.
type childState struct {
	repl         chan struct{} // a one-slot lock: held while the child is replaced
	gen          int           // incarnation now in place: 0 is the one Start started
	restarts     []time.Time   // replacements within the restart window
	replacements int           // replacements made, successful or not
	lastFailure  error         // why the last incarnation was retired
	givenUp      error         // not nil once the restart bound was hit
	starting     *endpoint     // a replacement being started, which Close aborts
}

// actKey names the activations of one hashid on one child id.
type actKey struct {
	id     int
	hashid registry.Hashid
}

// provision is one Provide that a child accepted: replayed on a
// replacement while its hashid is live.
type provision struct {
	hashid registry.Hashid
	ns     registry.Namespace
	args   []byte
}

// replayProvisions offers a replacement the operations its namespace's
// children were offered (Provide), in the order they were. A refusal fails
// the replacement.
func (w *Worker) replayProvisions(e *endpoint) error {
	live := map[registry.Hashid]bool{}
	for _, h := range w.reg.Live() {
		live[h.Hashid] = true
	}
	w.actMu.Lock()
	w.provided = slices.DeleteFunc(w.provided, func(p provision) bool { return !live[p.hashid] })
	var ps []provision
	for _, p := range w.provided {
		if p.ns == e.ns {
			ps = append(ps, p)
		}
	}
	w.actMu.Unlock()
	for _, p := range ps {
		err := e.request(mailbox.OpProvide, "provide", p.hashid, func(dst []byte) ([]byte, error) {
			return mailbox.AppendFrame(dst, mailbox.OpProvide, mailbox.StatusOK, p.args)
		}, -1, w.cfg.ControlTimeout)
		if err != nil {
			return fmt.Errorf("replaying the provision of %v: %w", p.hashid, err)
		}
	}
	return nil
}

// noteActivation records a successful ACTIVATE (+1) or DEACTIVATE (-1).
func (w *Worker) noteActivation(id int, h registry.Hashid, d int) {
	w.actMu.Lock()
	defer w.actMu.Unlock()
	k := actKey{id, h}
	if n := w.acts[k] + d; n > 0 {
		w.acts[k] = n
	} else {
		delete(w.acts, k)
	}
}

// forgetActivations drops the records of hashids that no live handle
// names any more: nothing of them is replayed.
func (w *Worker) forgetActivations() {
	live := map[registry.Hashid]bool{}
	for _, h := range w.reg.Live() {
		live[h.Hashid] = true
	}
	w.actMu.Lock()
	defer w.actMu.Unlock()
	for k := range w.acts {
		if !live[k.hashid] {
			delete(w.acts, k)
		}
	}
}

// replayActivations activates on a replacement what its predecessor held
// activated, as many times, so that each callable's ptojit_module_init
// runs in the new process before any of its tasks and the later
// Deactivates balance. A refusal fails the replacement.
func (w *Worker) replayActivations(ctx context.Context, e *endpoint) error {
	w.forgetActivations()
	type act struct {
		h registry.Hashid
		n int
	}
	var acts []act
	w.actMu.Lock()
	for k, n := range w.acts {
		if k.id == e.id {
			acts = append(acts, act{k.hashid, n})
		}
	}
	w.actMu.Unlock()
	slices.SortFunc(acts, func(a, b act) int { return slices.Compare(a.h[:], b.h[:]) })
	for _, a := range acts {
		d := a.h.Digest()
		for range a.n {
			e.mu.Lock()
			st, r, err := e.roundTrip(mailbox.OpActivate, func(b []byte) ([]byte, error) {
				return mailbox.AppendFrame(b, mailbox.OpActivate, mailbox.StatusOK, d[:])
			}, -1, e.controlTimeout(ctx))
			if err == nil && r.Digest != d {
				err = e.fail("activate", fmt.Errorf("%w: reply names %v", registry.ReplyHashidMismatch, registry.Hashid(r.Digest)))
			}
			e.mu.Unlock()
			if err == nil && st != mailbox.StatusOK {
				err = e.statusErr("activate", a.h, st, r)
			}
			if err != nil {
				return fmt.Errorf("replaying the activation of %v: %w", a.h, err)
			}
		}
	}
	return nil
}
