package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Activation is what ACTIVATE reported for one callable on one child.
type Activation struct {
	// ImplID is what the orchestration's ptojit_op_impl_id returned;
	// HasImplID is false when it exports none.
	ImplID    string
	HasImplID bool
	// InitRan: this activation ran ptojit_module_init (the callable's
	// first activation in the child, and it exports one), and it returned 0.
	InitRan bool
	// HasShutdown: the orchestration exports ptojit_module_shutdown.
	HasShutdown bool
}

// Activate activates the registered callable h on child id: the child
// reports its implementation id and, on the callable's first activation
// there, runs its ptojit_module_init. A failed init is a *registry.Error
// with code MODULE_INIT_FAILED whose message is init's and says whether
// shutdown ran (the child runs it before replying); the callable is then
// not activated. Every successful Activate is balanced by one Deactivate;
// a child that exits runs the shutdown of what is still activated.
func (w *Worker) Activate(ctx context.Context, id int, h CallableHandle) (Activation, error) {
	st, r, e, err := w.hookRequest(ctx, id, h, mailbox.OpActivate)
	if err != nil {
		return Activation{}, err
	}
	switch st {
	case mailbox.StatusOK:
	case mailbox.StatusRejected:
		return Activation{}, &registry.Error{Code: ModuleInitFailed, WorkerID: e.id, Namespace: e.ns, Hashid: h.Hashid.String(), Op: "activate", Err: errors.New(r.Message)}
	default:
		return Activation{}, e.statusErr("activate", h.Hashid, st, r)
	}
	w.noteActivation(id, h.Hashid, +1)
	return Activation{ImplID: r.Message, HasImplID: r.Detail&mailbox.ActivateHasImplID != 0,
		InitRan: r.Detail&mailbox.ActivateInitRan != 0, HasShutdown: r.Detail&mailbox.ActivateHasShutdown != 0}, nil
}

// Deactivate drops one activation of h on child id; the last one runs the
// callable's ptojit_module_shutdown, and shutdownRan says so.
func (w *Worker) Deactivate(ctx context.Context, id int, h CallableHandle) (shutdownRan bool, err error) {
	st, r, e, err := w.hookRequest(ctx, id, h, mailbox.OpDeactivate)
	if err != nil {
		return false, err
	}
	if st != mailbox.StatusOK {
		return false, e.statusErr("deactivate", h.Hashid, st, r)
	}
	w.noteActivation(id, h.Hashid, -1)
	return r.Detail&mailbox.DeactivateShutdownRan != 0, nil
}

// hookRequest sends ACTIVATE or DEACTIVATE for h to child id. The hooks
// run under the control timeout, bounded by ctx: a child whose hook does
// not return in time is retired.
func (w *Worker) hookRequest(ctx context.Context, id int, h CallableHandle, op mailbox.Op) (mailbox.Status, mailbox.Reply, *endpoint, error) {
	e, err := w.live(ctx, id)
	if err != nil {
		return 0, mailbox.Reply{}, nil, err
	}
	if err := w.reg.CheckDispatch(h, e.ns, e.id); err != nil {
		return 0, mailbox.Reply{}, nil, err
	}
	d := h.Hashid.Digest()
	e.mu.Lock()
	st, r, err := e.roundTrip(op, func(b []byte) ([]byte, error) { return mailbox.AppendFrame(b, op, mailbox.StatusOK, d[:]) }, -1, e.controlTimeout(ctx))
	if err == nil && r.Digest != d {
		err = e.fail(op.String(), fmt.Errorf("%w: reply names %v", registry.ReplyHashidMismatch, registry.Hashid(r.Digest)))
	}
	e.mu.Unlock()
	return st, r, e, err
}
