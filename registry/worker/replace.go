package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// ErrChildGivenUp is the cause of an EndpointError for a child that needed
// more replacements than Config.MaxRestarts allows within
// Config.RestartWindow: it is not replaced again for the Worker's lifetime.
var ErrChildGivenUp = errors.New("child given up")

// ChildStatus is a snapshot of one child: what a status report shows. A
// plain value.
type ChildStatus struct {
	ID int
	// PID is the process of the current incarnation (0 if none started).
	PID int
	// Active: the current incarnation is in use (not retired).
	Active bool
	// Replacements counts the replacements made (those that failed to
	// start included); Generation is the incarnation in place (0: the
	// child Start started).
	Replacements, Generation int
	// LastFailure is why the last retired incarnation was retired, or nil.
	LastFailure error
	// GivenUp: the restart bound was hit and the child is not replaced
	// again.
	GivenUp bool
}

// Children reports every child's status, by worker id.
func (w *Worker) Children() []ChildStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]ChildStatus, len(w.children))
	for id := range w.children {
		c := &w.children[id]
		s := ChildStatus{ID: id, Replacements: c.replacements, Generation: c.gen, LastFailure: c.lastFailure, GivenUp: c.givenUp != nil}
		if id < len(w.endpoints) && w.endpoints[id] != nil {
			e := w.endpoints[id]
			s.Active = e.active()
			if e.cmd.Process != nil {
				s.PID = e.cmd.Process.Pid
			}
		}
		out[id] = s
	}
	return out
}

// givenUp reports whether child id was given up (ErrChildGivenUp).
func (w *Worker) givenUp(id int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.children[id].givenUp != nil
}

// live returns child id's endpoint for a request addressed to it: the
// current one while it is in use, else a replacement, started now.
//
// A child is replaced when its endpoint was retired: a protocol violation
// (a reply that carries descriptors, is longer or shorter than a frame, is
// not a frame, or names another hashid), a control timeout, its death, or
// a task the caller's context abandoned. The replacement is a new process
// of the same configuration; it is initialized, given every live
// registration of its namespace (the payloads the parent holds) and the
// activations its predecessor held, and reports ready before the request
// is sent. Requests that were in flight on the retired endpoint are not
// retried: they fail with the EndpointError that names the violation
// (their outcome in the old child is unknown, and a task may have written
// part of its outputs).
func (w *Worker) live(ctx context.Context, id int) (*endpoint, error) {
	e, err := w.endpoint(id)
	if err != nil || e.active() {
		return e, err
	}
	return w.replace(ctx, id)
}

// replace replaces child id if its endpoint is retired, and returns the
// endpoint in place afterwards.
func (w *Worker) replace(ctx context.Context, id int) (*endpoint, error) {
	c := &w.children[id]
	select {
	case c.repl <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("worker %d: waiting for its replacement: %w", id, context.Cause(ctx))
	}
	defer func() { <-c.repl }()

	w.mu.Lock()
	old := w.endpoints[id]
	switch {
	case w.closed:
		w.mu.Unlock()
		return nil, &EndpointError{WorkerID: id, Op: "replace", Err: errors.New("worker closed")}
	case old.active(): // another request replaced it meanwhile
		w.mu.Unlock()
		return old, nil
	case c.givenUp != nil:
		w.mu.Unlock()
		return nil, c.givenUp
	}
	w.mu.Unlock()

	// The failure that retired it; it names the violation. Shutting the
	// socket down first ends an operation still in flight even if another
	// process holds the child's end of the mailbox open.
	old.abort()
	cause := old.failure()
	gen, err := w.countRestart(c, id, cause)
	if err != nil {
		return nil, err
	}
	defer w.replacing.Done()

	// The old process is gone (killed or exited, and waited for) and its
	// descriptors closed before the new one starts.
	old.close(w.cfg.ControlTimeout)
	fmt.Fprintf(w.cfg.Stderr, "ptojit worker: worker %d: replacing the child (%v)\n", id, cause)

	// Exclusive scope: no registration or unregistration runs while the
	// child's place in the scopes moves from the old endpoint to the new.
	w.scope.Lock()
	w.reg.Detach(id)
	e, err := w.startChild(ctx, id, gen)
	w.scope.Unlock()
	if err != nil {
		if e != nil {
			e.abort()
			e.close(w.cfg.ControlTimeout)
		}
		err = &EndpointError{WorkerID: id, Op: "replace", Err: fmt.Errorf("replacement failed: %w (it replaced: %v)", err, cause)}
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		if e != nil {
			e.close(5 * time.Second)
		}
		return nil, &EndpointError{WorkerID: id, Op: "replace", Err: errors.New("worker closed")}
	}
	if e != nil {
		w.endpoints[id] = e
	}
	if err != nil {
		c.lastFailure = err
	}
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return e, nil
}

// countRestart records cause as the last failure of child id (c) and
// counts its replacement against the restart bound. It returns the
// generation the replacement starts, with w.replacing counting it (the
// caller marks it done), or the error that ends the replacement: cause
// without restarts, or the child given up past the bound.
func (w *Worker) countRestart(c *childState, id int, cause error) (int, error) {
	w.mu.Lock()
	c.lastFailure = cause
	if w.cfg.MaxRestarts < 0 {
		w.mu.Unlock()
		return 0, cause
	}
	now := time.Now()
	c.restarts = slices.DeleteFunc(c.restarts, func(t time.Time) bool { return now.Sub(t) >= w.cfg.RestartWindow })
	if len(c.restarts) >= w.cfg.MaxRestarts {
		c.givenUp = &EndpointError{WorkerID: id, Op: "replace", Err: fmt.Errorf("%w after %d replacements within %v (the bound); last failure: %v",
			ErrChildGivenUp, len(c.restarts), w.cfg.RestartWindow, cause)}
		err := c.givenUp
		w.mu.Unlock()
		fmt.Fprintf(w.cfg.Stderr, "ptojit worker: worker %d: %v\n", id, err)
		return 0, err
	}
	c.restarts = append(c.restarts, now)
	c.replacements++
	c.gen++
	gen := c.gen
	w.replacing.Add(1)
	w.mu.Unlock()
	return gen, nil
}

// installed asks a child how many hashids it has installed (READY reply).
func (w *Worker) installed(id int) (int, error) {
	e, err := w.live(context.Background(), id)
	if err != nil {
		return 0, err
	}
	r, err := e.simple(mailbox.OpReady, nil, w.cfg.ControlTimeout)
	return int(r.Detail), err
}

// BareRoundTrip sends one NOP frame to child id and waits for its reply:
// the mailbox transport with no decode, resolve or execution, the baseline
// of dispatch latency.
func (w *Worker) BareRoundTrip(id int) error {
	e, err := w.live(context.Background(), id)
	if err != nil {
		return err
	}
	return e.nop()
}

// Call runs one task of h on child id and waits for it, outside any Run:
// the same preflight as a submission (live handle, namespace, uncertainty),
// then one TASK round trip on that child's mailbox.
func (w *Worker) Call(id int, h CallableHandle, args mailbox.TaskArgs) error {
	return w.CallContext(context.Background(), id, h, args)
}

// CallContext is Call bounded by ctx: when ctx ends before the task does,
// the child is killed and the call fails with ctx's cause (a child whose
// task never returns cannot be reused); a later call there runs on its
// replacement.
func (w *Worker) CallContext(ctx context.Context, id int, h CallableHandle, args mailbox.TaskArgs) error {
	e, err := w.live(ctx, id)
	if err != nil {
		return err
	}
	if err := w.reg.CheckDispatch(h, e.ns, e.id); err != nil {
		return err
	}
	return e.taskContext(ctx, h.Hashid, args)
}
