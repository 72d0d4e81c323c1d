package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// ModuleInitFailed: a callable's ptojit_module_init returned non-zero on
// ACTIVATE; the child ran its ptojit_module_shutdown before replying.
const ModuleInitFailed registry.ErrorCode = "MODULE_INIT_FAILED"

// Symbols of a runtime module's optional hooks (ptojit_sim.h).
const (
	modInitSymbol     = "ptojit_module_init"
	modShutdownSymbol = "ptojit_module_shutdown"
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
	return r.Detail&mailbox.DeactivateShutdownRan != 0, nil
}

// hookRequest sends ACTIVATE or DEACTIVATE for h to child id. The hooks
// run under the control timeout, bounded by ctx: a child whose hook does
// not return in time is retired.
func (w *Worker) hookRequest(ctx context.Context, id int, h CallableHandle, op mailbox.Op) (mailbox.Status, mailbox.Reply, *endpoint, error) {
	e, err := w.endpoint(id)
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

// hookSlot resolves the slot of an ACTIVATE or DEACTIVATE request and
// loads it when needed.
func (c *child) hookSlot(args []byte) (*simCallable, mailbox.Status, mailbox.Reply) {
	d, err := mailbox.ParseDigestArgs(args)
	if err != nil {
		return nil, mailbox.StatusBadFrame, mailbox.Reply{Message: err.Error()}
	}
	rep := mailbox.Reply{Digest: d}
	slot, err := c.table.Resolve(registry.Hashid(d))
	if err != nil {
		rep.Message = err.Error()
		return nil, mailbox.StatusNotInstalled, rep
	}
	s := &c.slots[slot]
	if !s.loaded {
		if err := c.prewarm(slot); err != nil {
			rep.Message = err.Error()
			return nil, mailbox.StatusPrewarmFailed, rep
		}
	}
	return s.state, mailbox.StatusOK, rep
}

// activate serves ACTIVATE in a chip child.
func (c *child) activate(args []byte) (mailbox.Status, mailbox.Reply) {
	s, st, rep := c.hookSlot(args)
	if st != mailbox.StatusOK {
		return st, rep
	}
	opNegotiating = true // the hooks may not call the host operation service
	defer func() { opNegotiating = false }()
	if s.opImplID != 0 {
		p, _, _ := purego.SyscallN(s.opImplID)
		rep.Message = sanitizeID(cString(p, 256))
		rep.Detail |= mailbox.ActivateHasImplID
	}
	if s.modShutdown != 0 {
		rep.Detail |= mailbox.ActivateHasShutdown
	}
	if s.activations == 0 && s.modInit != 0 {
		m, err := newCmem(opMessageCapacity)
		if err != nil {
			rep.Message = err.Error()
			return mailbox.StatusPrewarmFailed, rep
		}
		defer m.free()
		r, _, _ := purego.SyscallN(s.modInit, m.addr(0), opMessageCapacity)
		if code := int32(uint32(r)); code != 0 {
			msg := fmt.Sprintf("%s returned %d", modInitSymbol, code)
			if why := cString(m.addr(0), opMessageCapacity); why != "" {
				msg += ": " + why
			}
			if s.modShutdown != 0 {
				purego.SyscallN(s.modShutdown)
				msg += "; " + modShutdownSymbol + " ran"
			} else {
				msg += "; it exports no " + modShutdownSymbol
			}
			c.debugf("activate %v: %s", registry.Hashid(rep.Digest), msg)
			rep.Detail, rep.Message = uint32(code), msg
			return mailbox.StatusRejected, rep
		}
		rep.Detail |= mailbox.ActivateInitRan
	}
	s.activations++
	c.debugf("activate %v: %d activations", registry.Hashid(rep.Digest), s.activations)
	return mailbox.StatusOK, rep
}

// deactivate serves DEACTIVATE in a chip child.
func (c *child) deactivate(args []byte) (mailbox.Status, mailbox.Reply) {
	s, st, rep := c.hookSlot(args)
	if st != mailbox.StatusOK {
		return st, rep
	}
	if s.activations == 0 {
		rep.Message = "the callable is not activated in this child"
		return mailbox.StatusBadFrame, rep
	}
	s.activations--
	if s.activations == 0 && s.modShutdown != 0 {
		opNegotiating = true
		purego.SyscallN(s.modShutdown)
		opNegotiating = false
		rep.Detail = mailbox.DeactivateShutdownRan
	}
	return mailbox.StatusOK, rep
}

// shutdownAll runs the module shutdown of a callable still activated, once,
// and forgets its activations.
func (s *simCallable) shutdownAll() {
	if s.activations == 0 {
		return
	}
	s.activations = 0
	if s.modShutdown != 0 {
		opNegotiating = true
		purego.SyscallN(s.modShutdown)
		opNegotiating = false
	}
}

// shutdownModules runs the module shutdown of every callable still
// activated: the child is ending.
func (c *child) shutdownModules() {
	for i := range c.slots {
		if c.slots[i].loaded {
			c.slots[i].state.shutdownAll()
		}
	}
}

// sanitizeID replaces control characters and spaces in an id a provider
// reported.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c <= ' ' || c == 0x7f {
			b[i] = '_'
		}
	}
	return string(b)
}
