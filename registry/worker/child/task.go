package child

import (
	"fmt"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

func (c *child) task(args []byte) (mailbox.Status, mailbox.Reply) {
	d, blob, err := mailbox.SplitTaskArgs(args)
	if err != nil {
		return mailbox.StatusBadFrame, mailbox.Reply{Message: err.Error()}
	}
	rep := mailbox.Reply{Digest: d}
	h := registry.Hashid(d)
	// The final resolve, immediately before execution: a missing mapping
	// fails before any work.
	slot, err := c.table.Resolve(h)
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusNotInstalled, rep
	}
	if c.faults.Task != nil {
		c.faults.Task(c.debugf, h)
	}
	ta, err := mailbox.ParseTaskArgs(blob)
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusBadFrame, rep
	}
	s := &c.slots[slot]
	if !s.loaded {
		if c.prewarms() {
			c.warnf("task %v: slot was registered but not prewarmed; preparing it in the dispatch path", h)
		} else {
			c.debugf("task %v: slot %d prepared on its first task (runtime %s has no callable prewarm)", h, slot, c.init.Runtime)
		}
		if err := c.prewarm(slot); err != nil {
			rep.Message = err.Error()
			return mailbox.StatusPrewarmFailed, rep
		}
	}
	c.debugf("task %v: slot %d", h, slot)
	opCaller = h // the host operation service offers what is offered to it
	code, err := s.state.run(c.arena, c.scratch, ta)
	opCaller = registry.Hashid{}
	endTaskOpHandles() // nested operation handles live for their task at most
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusArgsInvalid, rep
	}
	rep.Detail = uint32(code)
	if code != 0 {
		rep.Message = fmt.Sprintf("orchestration returned %d", code)
		return mailbox.StatusExecFailed, rep
	}
	return mailbox.StatusOK, rep
}
