package child

import (
	"fmt"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
	"golang.org/x/sys/unix"
)

// statusOf maps a registry error to a reply status (package mailbox's
// table), or otherwise when its code has none.
func statusOf(err error, otherwise mailbox.Status) mailbox.Status {
	if st, ok := mailbox.StatusOfCode(string(registry.CodeOf(err))); ok {
		return st
	}
	return otherwise
}

func (c *child) register(args []byte, fd int) (mailbox.Status, mailbox.Reply) {
	if fd < 0 {
		return mailbox.StatusBadFrame, mailbox.Reply{Message: "REGISTER_CALLABLE without a staged payload descriptor"}
	}
	ra, err := mailbox.ParseRegisterArgs(args)
	if err != nil {
		unix.Close(fd)
		return mailbox.StatusBadFrame, mailbox.Reply{Message: err.Error()}
	}
	rep := mailbox.Reply{Digest: ra.Digest}
	payload, err := mailbox.ReadStaged(fd, ra.PayloadLen)
	unix.Close(fd)
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusPayloadInvalid, rep
	}
	h := registry.Hashid(ra.Digest)
	if c.faults.Register != nil {
		c.faults.Register(c.debugf, h)
	}
	// Kind first: an unsupported kind is rejected before anything is parsed
	// or installed.
	if registry.Kind(ra.Kind) != registry.ChipCallableKind {
		rep.Message = fmt.Sprintf("chip child does not resolve %v", registry.Kind(ra.Kind))
		return mailbox.StatusKindUnsupported, rep
	}
	slot, err := c.table.InstallPayload(h, registry.ChipCallableKind, c.init.Platform, c.init.Runtime, payload)
	if err != nil {
		rep.Message = err.Error()
		return statusOf(err, mailbox.StatusPayloadInvalid), rep
	}
	refs := c.table.Refs(h)
	c.debugf("register %v: slot %d refs %d", h, slot, refs)
	if refs > 1 {
		return mailbox.StatusOK, rep // the same descriptor and payload: shared state
	}
	cc, err := registry.ParseChipCallable(payload)
	if err == nil {
		c.slots[slot] = chipSlot{callable: cc}
		if c.faults.SkipPrewarm {
			c.debugf("register %v: prewarm skipped (injected)", h)
			return mailbox.StatusOK, rep
		}
		err = c.registerPrewarm(slot, h)
	}
	if err != nil {
		// Roll back the registration this request created.
		if _, rerr := c.table.Release(h); rerr != nil {
			c.warnf("register %v: rollback: %v", h, rerr)
		}
		rep.Message = err.Error()
		return statusOf(err, mailbox.StatusPrewarmFailed), rep
	}
	return mailbox.StatusOK, rep
}

func (c *child) unregister(d [mailbox.DigestSize]byte) (mailbox.Status, mailbox.Reply) {
	h := registry.Hashid(d)
	rep := mailbox.Reply{Digest: d}
	if c.faults.Unregister != nil {
		c.faults.Unregister(c.debugf, h)
	}
	freed, err := c.table.Release(h)
	if err != nil {
		rep.Message = err.Error()
		return statusOf(err, mailbox.StatusBadFrame), rep
	}
	c.debugf("unregister %v: freed %v refs %d", h, freed, c.table.Refs(h))
	return mailbox.StatusOK, rep
}
