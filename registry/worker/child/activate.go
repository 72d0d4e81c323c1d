package child

import (
	"fmt"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

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
