package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Negotiate runs the provider entry points of h's orchestration on child
// id: its implementation id, validate on the tensors and, when validate
// accepts them, the scratch query. They are pure negotiation: the child
// calls nothing else of the callable. A refusal is a *registry.Error with
// code NEGOTIATION_REJECTED whose cause is a *NegotiationRefusal: the
// step that refused, its code and the provider's message.
func (w *Worker) Negotiate(id int, h CallableHandle, a mailbox.NegotiateArgs) (mailbox.Negotiation, error) {
	e, err := w.live(context.Background(), id)
	if err != nil {
		return mailbox.Negotiation{}, err
	}
	if err := w.reg.CheckDispatch(h, e.ns, e.id); err != nil {
		return mailbox.Negotiation{}, err
	}
	d := h.Hashid.Digest()
	e.mu.Lock()
	st, r, err := e.roundTrip(mailbox.OpNegotiate, func(b []byte) ([]byte, error) {
		args, err := mailbox.AppendNegotiateArgs(append(make([]byte, 0, mailbox.ArgsCapacity), d[:]...), a)
		if err != nil {
			return b, err
		}
		return mailbox.AppendFrame(b, mailbox.OpNegotiate, mailbox.StatusOK, args)
	}, -1, 0)
	if err == nil && r.Digest != d {
		err = e.fail("negotiate", fmt.Errorf("%w: reply names %v", registry.ReplyHashidMismatch, registry.Hashid(r.Digest)))
	}
	if err == nil && st == mailbox.StatusRejected && r.Stage == mailbox.StageNone {
		err = e.fail("negotiate", errors.New("protocol violation: a refused negotiation names no stage"))
	}
	e.mu.Unlock()
	if err != nil {
		return mailbox.Negotiation{}, err
	}
	if st == mailbox.StatusRejected {
		re := e.statusErr("negotiate", h.Hashid, st, r)
		re.Err = &NegotiationRefusal{Stage: r.Stage, Code: int32(r.Detail), Message: r.Message}
		return mailbox.Negotiation{}, re
	}
	if st != mailbox.StatusOK {
		return mailbox.Negotiation{}, e.statusErr("negotiate", h.Hashid, st, r)
	}
	n, err := mailbox.ParseNegotiation(r.Message)
	if err != nil {
		return mailbox.Negotiation{}, fmt.Errorf("negotiate: worker %d: malformed reply %q", id, r.Message)
	}
	return n, nil
}

// Alive reports whether child id can serve: its endpoint is in use, or it
// was retired (after a death, a timeout or a protocol error) and Alive has
// just replaced it. It is false for a child given up (ErrChildGivenUp), one
// whose replacement failed, and after Close.
func (w *Worker) Alive(id int) bool {
	_, err := w.live(context.Background(), id)
	return err == nil
}

// NegotiationRefusal is why a provider refused a negotiation: the step
// that refused (StageProvider, StageValidate, StageScratch), that step's
// return code, and the message of the provider or the child. It is the
// cause of a NEGOTIATION_REJECTED error. A plain value.
type NegotiationRefusal struct {
	Stage   NegotiateStage
	Code    int32
	Message string
}

// Error returns the message.
func (e *NegotiationRefusal) Error() string { return e.Message }
