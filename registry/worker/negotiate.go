package worker

import (
	"context"
	"fmt"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Negotiate runs the provider entry points of h's orchestration on child
// id: its implementation id, validate on the tensors and, when validate
// accepts them, the scratch query. They are pure negotiation: the child
// calls nothing else of the callable. A refusal is a *registry.Error with
// code NEGOTIATION_REJECTED whose message is the provider's.
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
	e.mu.Unlock()
	if err != nil {
		return mailbox.Negotiation{}, err
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
