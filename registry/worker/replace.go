package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// ErrChildGivenUp is the cause of an EndpointError for a child that needed
// more replacements than Config.MaxRestarts allows within
// Config.RestartWindow: it is not replaced again for the Worker's lifetime.
var ErrChildGivenUp = errors.New("child given up")

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
	w.mu.Lock()
	c.lastFailure = cause
	if w.cfg.MaxRestarts < 0 {
		w.mu.Unlock()
		return nil, cause
	}
	now := time.Now()
	c.restarts = slices.DeleteFunc(c.restarts, func(t time.Time) bool { return now.Sub(t) >= w.cfg.RestartWindow })
	if len(c.restarts) >= w.cfg.MaxRestarts {
		c.givenUp = &EndpointError{WorkerID: id, Op: "replace", Err: fmt.Errorf("%w after %d replacements within %v (the bound); last failure: %v",
			ErrChildGivenUp, len(c.restarts), w.cfg.RestartWindow, cause)}
		err := c.givenUp
		w.mu.Unlock()
		fmt.Fprintf(w.cfg.Stderr, "ptojit worker: worker %d: %v\n", id, err)
		return nil, err
	}
	c.restarts = append(c.restarts, now)
	c.replacements++
	c.gen++
	gen := c.gen
	w.replacing.Add(1)
	w.mu.Unlock()
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
