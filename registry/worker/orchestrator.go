package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// CallConfig configures one next-level submission. A plain value.
type CallConfig struct {
	// Workers restricts the task to these worker ids (submit-time
	// affinity); empty means any child of the namespace.
	Workers []int
}

// Task is one submitted task. Safe for concurrent use.
//
// A task record carries the callable's digest, kind and namespace only,
// never the handle and its private registration id: the handle
// is validated when the task is submitted, and the child resolves the
// digest immediately before executing.
type Task struct {
	digest registry.Hashid
	kind   registry.Kind
	ns     registry.Namespace
	args   mailbox.TaskArgs

	done    chan struct{}
	err     error
	worker  int
	latency time.Duration
	parts   []*Task // a group's members
}

// Wait waits for the task and returns its error.
func (t *Task) Wait() error {
	<-t.done
	return t.err
}

// Worker returns the id of the child that ran the task (-1 for a group);
// valid after Wait.
func (t *Task) Worker() int { return t.worker }

// Latency is the dispatch round trip: from sending the task frame to its
// reply (for a group, the slowest member); valid after Wait.
func (t *Task) Latency() time.Duration { return t.latency }

// Orchestrator submits tasks during Worker.Run. Safe for concurrent use
// until the orchestration function returns.
type Orchestrator struct {
	w      *Worker
	ctx    context.Context
	queues map[int]chan *Task    // per worker id: affine tasks
	shared map[uint32]chan *Task // per child path (role): any child of it
	depth  map[int]*atomic.Int64 // queued + running per worker
	ids    map[uint32][]int      // worker ids per child path (role)

	mu     sync.Mutex // guards closed, tasks
	closed bool
	tasks  []*Task
}

// queueLen is each queue's capacity; a full queue blocks the submitter.
const queueLen = 256

// Run runs the orchestration function fn in the parent with an Orchestrator,
// then waits for every submitted task. It returns fn's error joined with
// the task errors. When ctx ends, tasks not started fail, and a child
// running a task is killed (a kernel that never returns would hold Run
// forever): that task fails, and so does every later one of that child.
func (w *Worker) Run(ctx context.Context, fn func(o *Orchestrator) error) error {
	w.mu.Lock()
	eps := slices.Clone(w.endpoints)
	ok := w.started && !w.closed
	w.mu.Unlock()
	if !ok {
		return errors.New("worker: Run before Start or after Close")
	}
	o := &Orchestrator{
		w: w, ctx: ctx,
		queues: map[int]chan *Task{},
		shared: map[uint32]chan *Task{},
		depth:  map[int]*atomic.Int64{},
		ids:    map[uint32][]int{},
	}
	for _, e := range eps {
		o.queues[e.id] = make(chan *Task, queueLen)
		o.depth[e.id] = new(atomic.Int64)
		o.ids[e.role] = append(o.ids[e.role], e.id)
		if o.shared[e.role] == nil {
			o.shared[e.role] = make(chan *Task, queueLen)
		}
	}
	var wg sync.WaitGroup
	for _, e := range eps {
		wg.Go(func() { o.serve(e.id, e.role) })
	}
	ferr := fn(o)
	o.mu.Lock()
	o.closed = true
	for _, q := range o.queues {
		close(q)
	}
	for _, q := range o.shared {
		close(q)
	}
	tasks := o.tasks
	o.mu.Unlock()
	wg.Wait()
	errs := []error{ferr}
	failed := 0
	for _, t := range tasks {
		if t.err != nil {
			if failed < 8 {
				errs = append(errs, t.err)
			}
			failed++
		}
	}
	if failed > 8 {
		errs = append(errs, fmt.Errorf("and %d more failed tasks", failed-8))
	}
	return errors.Join(errs...)
}

// serve runs one child's tasks: its own queue and its namespace's shared
// queue, one at a time (the mailbox has one operation in flight). Each task
// goes to the child's endpoint in place when it starts: a child retired by
// an earlier task is replaced first. A child given up takes no more tasks
// from the shared queue while a sibling of its path is not given up (the
// last one keeps draining it, failing its tasks, so none waits for ever).
func (o *Orchestrator) serve(id int, role uint32) {
	own, shared := o.queues[id], o.shared[role]
	for own != nil || shared != nil {
		if shared != nil && o.w.givenUp(id) && slices.ContainsFunc(o.ids[role], func(s int) bool { return s != id && !o.w.givenUp(s) }) {
			shared = nil
			continue
		}
		var t *Task
		var ok bool
		select {
		case t, ok = <-own:
			if !ok {
				own = nil
				continue
			}
		case t, ok = <-shared:
			if !ok {
				shared = nil
				continue
			}
			o.depth[id].Add(1)
		}
		o.execute(id, t)
	}
}

func (o *Orchestrator) execute(id int, t *Task) {
	defer o.depth[id].Add(-1)
	t.worker = id
	if err := o.ctx.Err(); err != nil {
		t.err = fmt.Errorf("worker %d: task not started: %w", id, context.Cause(o.ctx))
		close(t.done)
		return
	}
	e, err := o.w.live(o.ctx, id)
	if err != nil {
		t.err = fmt.Errorf("worker %d: %w", id, err)
		close(t.done)
		return
	}
	if err := dispatchCheck(o.w.reg, t, e); err != nil {
		t.err = err
		close(t.done)
		return
	}
	start := time.Now()
	err = e.taskContext(o.ctx, t.digest, t.args)
	t.latency = time.Since(start)
	if err != nil && (isEndpointErr(err) || o.ctx.Err() != nil) {
		err = fmt.Errorf("worker %d: %w", e.id, err)
	}
	t.err = err
	close(t.done)
}

func isEndpointErr(err error) bool {
	_, ok := errors.AsType[*EndpointError](err)
	return ok
}

// dispatchCheck is the check at dispatch, from the task record alone: the
// task's namespace is the child's, and the digest is not uncertain there.
func dispatchCheck(reg *Registrar, t *Task, e *endpoint) error {
	if t.ns != e.ns {
		return &registry.Error{Code: registry.TargetNamespaceMismatch, WorkerID: e.id, Namespace: e.ns,
			Hashid: t.digest.String(), Op: "dispatch", Err: fmt.Errorf("a %s task reached a %s child", t.ns, e.ns)}
	}
	if reg.Uncertain(e.id, t.digest) {
		return &registry.Error{Code: registry.RegisterCleanupUncertain, WorkerID: e.id, Namespace: e.ns,
			Hashid: t.digest.String(), Op: "dispatch", Err: errors.New("hashid is uncertain on this worker")}
	}
	return nil
}

// submit validates h for namespace ns and queues one task for a child of
// the path role.
func (o *Orchestrator) submit(h CallableHandle, ns registry.Namespace, role uint32, args mailbox.TaskArgs, workers []int) (*Task, error) {
	if err := o.w.reg.ValidateFor(h, ns); err != nil {
		return nil, err
	}
	if err := o.ctx.Err(); err != nil {
		return nil, err
	}
	// Check the args now, so a bad submission fails at the caller; they
	// are encoded once, into the task frame at dispatch.
	if err := mailbox.CheckTaskArgs(args); err != nil {
		return nil, err
	}
	// Eligible children: the affinity set (or all of the namespace), less
	// those on which this hashid is uncertain.
	all := o.ids[role]
	cand := all
	if len(workers) > 0 {
		for _, id := range workers {
			if !slices.Contains(all, id) {
				return nil, &registry.Error{Code: registry.TargetNamespaceMismatch, WorkerID: id, Namespace: ns,
					Hashid: h.Hashid.String(), Op: "submit", Err: fmt.Errorf("worker %d is not a child of namespace %s", id, ns)}
			}
		}
		cand = workers
	}
	var ok []int
	for _, id := range cand {
		if !o.w.reg.Uncertain(id, h.Hashid) {
			ok = append(ok, id)
		}
	}
	if len(ok) == 0 {
		if len(all) == 0 {
			return nil, &registry.Error{Code: registry.TargetNamespaceMismatch, WorkerID: registry.NoWorker, Namespace: ns,
				Hashid: h.Hashid.String(), Op: "submit", Err: fmt.Errorf("this Worker has no %s children", ns)}
		}
		return nil, &registry.Error{Code: registry.RegisterCleanupUncertain, WorkerID: cand[0], Namespace: ns,
			Hashid: h.Hashid.String(), Op: "submit", Err: errors.New("hashid is uncertain on every eligible child")}
	}
	t := &Task{digest: h.Hashid, kind: h.Kind, ns: ns, args: args, done: make(chan struct{}), worker: -1}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errors.New("worker: submit after the orchestration function returned")
	}
	o.tasks = append(o.tasks, t)
	if len(ok) == len(all) {
		o.shared[role] <- t
		return t, nil
	}
	// Affinity: the eligible child with the shortest queue.
	best := ok[0]
	for _, id := range ok[1:] {
		if o.depth[id].Load() < o.depth[best].Load() {
			best = id
		}
	}
	o.depth[best].Add(1)
	o.queues[best] <- t
	return t, nil
}

// SubmitNextLevel submits a task to the next level: on an L3 Worker a chip
// callable to a chip child (LOCAL_CHIP); on an L4 Worker (WorkerChildren) a
// Python callable to a next-level Worker child's dispatch loop
// (LOCAL_PYTHON). A handle of the other namespace is refused.
func (o *Orchestrator) SubmitNextLevel(h CallableHandle, args mailbox.TaskArgs, cfg CallConfig) (*Task, error) {
	role, ns := o.w.nextLevel()
	return o.submit(h, ns, role, args, cfg.Workers)
}

// SubmitNextLevelGroup submits one task per args element, all of the same
// chip callable; member i runs on cfg.Workers[i] when Workers is given (it
// must then have one id per member). The returned group task completes when
// every member has.
func (o *Orchestrator) SubmitNextLevelGroup(h CallableHandle, args []mailbox.TaskArgs, cfg CallConfig) (*Task, error) {
	if len(cfg.Workers) > 0 && len(cfg.Workers) != len(args) {
		return nil, fmt.Errorf("worker: group of %d tasks with %d worker ids", len(args), len(cfg.Workers))
	}
	role, ns := o.w.nextLevel()
	g := &Task{digest: h.Hashid, kind: h.Kind, ns: ns, done: make(chan struct{}), worker: -1}
	for i, a := range args {
		var ws []int
		if len(cfg.Workers) > 0 {
			ws = cfg.Workers[i : i+1]
		}
		t, err := o.submit(h, ns, role, a, ws)
		if err != nil {
			return nil, err
		}
		g.parts = append(g.parts, t)
	}
	go func() {
		var errs []error
		for _, t := range g.parts {
			errs = append(errs, t.Wait())
			g.latency = max(g.latency, t.latency)
		}
		g.err = errors.Join(errs...)
		close(g.done)
	}()
	return g, nil
}

// SubmitSub submits a Python callable task to a SUB child (LOCAL_PYTHON).
func (o *Orchestrator) SubmitSub(h CallableHandle, args mailbox.TaskArgs) (*Task, error) {
	return o.submit(h, registry.LocalPython, mailbox.RoleSub, args, nil)
}
