package worker

import (
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Provide offers the operation op, implemented by the registered callable
// h, to the host operation service of every chip child in h's scope. A
// child that accepted it is replaced with the offer made again (while h's
// hashid has a live registration).
func (w *Worker) Provide(h CallableHandle, op mailbox.ProvidedOp) error {
	b, err := mailbox.AppendProvideArgs(nil, h.Hashid.Digest(), op)
	if err != nil {
		return err
	}
	var errs []error
	accepted := false
	defer func() {
		if accepted {
			w.actMu.Lock()
			w.provided = append(w.provided, provision{h.Hashid, h.TargetNamespace, b})
			w.actMu.Unlock()
		}
	}()
	for _, t := range w.targets(h.TargetNamespace) {
		e := t.(*endpoint)
		if err := w.reg.CheckDispatch(h, e.ns, e.id); err != nil {
			errs = append(errs, err)
			continue
		}
		err := e.request(mailbox.OpProvide, "provide", h.Hashid, func(dst []byte) ([]byte, error) {
			return mailbox.AppendFrame(dst, mailbox.OpProvide, mailbox.StatusOK, b)
		}, -1, 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", e.id, err))
		} else {
			accepted = true
		}
	}
	return errors.Join(errs...)
}
