package child

import (
	"fmt"
	"io"
	"slices"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/internal/childfault"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// chipSlot is the executable state of one private slot.
type chipSlot struct {
	callable *registry.ChipCallable
	state    *simCallable
	loaded   bool // set only after a successful prewarm or lazy prepare
}

// child is one chip child's state. Not safe for concurrent use: the mailbox
// carries one operation at a time.
type child struct {
	fd      int
	log     io.Writer
	init    mailbox.InitArgs
	arena   []byte
	table   *registry.TargetTable
	loader  *simLoader
	slots   []chipSlot
	scratch cmem
	rbuf    []byte
	oob     []byte
	wbuf    []byte

	faults childfault.Faults // none in a production child (package childfault)
}

func (c *child) debugf(format string, args ...any) {
	if c.init.Flags&mailbox.InitDebug != 0 {
		fmt.Fprintf(c.log, "worker %d: "+format+"\n", append([]any{c.init.WorkerID}, args...)...)
	}
}

func (c *child) warnf(format string, args ...any) {
	fmt.Fprintf(c.log, "worker %d: warning: "+format+"\n", append([]any{c.init.WorkerID}, args...)...)
}

// noPrewarmRuntimes are the runtimes whose register-time prewarm hook is a
// no-op success. Seed 000: host_build_graph resolves its orchestration on
// the host during prepare, so it has no AICPU callable prewarm; its
// callables are prepared in the dispatch path (a task, a negotiation or an
// activation), which marks them loaded only once that succeeded.
var noPrewarmRuntimes = []string{"host_build_graph"}

// prewarms reports whether the child's runtime prewarms a callable when it
// is registered.
func (c *child) prewarms() bool { return !slices.Contains(noPrewarmRuntimes, c.init.Runtime) }

// registerPrewarm is the prewarm hook of REGISTER_CALLABLE: the platform is
// checked, then the slot is prewarmed unless the runtime's hook is a
// no-op (noPrewarmRuntimes).
func (c *child) registerPrewarm(slot int, h registry.Hashid) error {
	if err := c.checkPlatform(); err != nil {
		return err
	}
	if !c.prewarms() {
		c.debugf("register %v: runtime %s has no callable prewarm; prepared on first use", h, c.init.Runtime)
		return nil
	}
	return c.prewarm(slot)
}

func (c *child) checkPlatform() error {
	if !registry.IsSim(c.init.Platform) {
		return &registry.Error{Code: registry.PlatformUnsupported, WorkerID: int(c.init.WorkerID), Namespace: registry.LocalChip,
			Op: "prewarm", Err: fmt.Errorf("platform %q has no host execution engine", c.init.Platform)}
	}
	return nil
}

// prewarm loads the executable state of slot and marks it loaded only after
// every step succeeded.
func (c *child) prewarm(slot int) error {
	s := &c.slots[slot]
	if err := c.checkPlatform(); err != nil {
		return err
	}
	if c.faults.Prewarm != nil {
		if err := c.faults.Prewarm(); err != nil {
			return err
		}
	}
	st, err := c.loader.prepare(s.callable)
	if err != nil {
		return fmt.Errorf("prewarm: %w", err)
	}
	s.state, s.loaded = st, true
	return nil
}

// clearSlot is the release hook: it runs after the hashid stopped resolving
// (step 3 of unregister) and clears the executable state (step 4).
func (c *child) clearSlot(slot int, h registry.Hashid) {
	if _, err := c.table.Resolve(h); err != nil {
		c.debugf("unregister %v: resolution stopped (%v) before slot cleanup", h, registry.CodeOf(err))
	} else {
		c.debugf("unregister %v: still resolves during slot cleanup", h)
	}
	if slot < len(c.slots) {
		c.slots[slot].state.release()
		c.slots[slot] = chipSlot{}
	}
	c.debugf("unregister %v: slot %d cleared", h, slot)
}
