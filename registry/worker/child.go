package worker

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Descriptors a child inherits from the parent.
const (
	childMailboxFD = 3 // SOCK_SEQPACKET end of the mailbox
	childArenaFD   = 4 // the arena memfd
)

// ChildMain runs a child endpoint in this process: the mailbox is descriptor
// 3 and the arena descriptor 4, as the Worker starts it. It returns when the
// parent shuts the child down or closes the mailbox, and returns the process
// exit code; diagnostics go to log (the child's stderr, which the Worker
// forwards to Config.Stderr). Programs call it from their hidden child mode
// (ptojitd __worker-child; a test binary's TestMain).
func ChildMain(log io.Writer) int { return childMain(log, nil) }

// childMain runs a child as ChildMain does. faultsFor, when not nil, is a
// test seam: it turns the INIT flags into the faults the child injects
// (faults_test.go); without it the child injects none.
func childMain(log io.Writer, faultsFor func(flags uint32) childFaults) int {
	c := &child{fd: childMailboxFD, log: log, faultsFor: faultsFor}
	if err := c.serve(); err != nil {
		fmt.Fprintf(log, "ptojit worker child: %v\n", err)
		return 1
	}
	return 0
}

// chipSlot is the executable state of one private slot.
type chipSlot struct {
	callable *registry.ChipCallable
	state    *simCallable
	loaded   bool // set only after a successful prewarm or lazy prepare
}

// childFaults are the test seams of a chip child: each hook, when set,
// runs at its point of the child's work, and may end the process or block
// as a crashed or hung child would. Production children have none.
type childFaults struct {
	register    func(c *child, h registry.Hashid) // REGISTER_CALLABLE: payload read, nothing checked yet
	unregister  func(c *child, h registry.Hashid) // UNREGISTER_CALLABLE: before the release
	task        func(c *child, h registry.Hashid) // TASK: hashid resolved, args not yet parsed
	prewarm     func() error                      // a non-nil error fails the prewarm
	skipPrewarm bool                              // install without prewarm (lazy prepare on the first task)
	replyDigest func(d *[mailbox.DigestSize]byte) // rewrites the digest of a REGISTER_CALLABLE reply
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

	faultsFor func(flags uint32) childFaults // test seam, see childMain
	faults    childFaults
}

func (c *child) debugf(format string, args ...any) {
	if c.init.Flags&mailbox.InitDebug != 0 {
		fmt.Fprintf(c.log, "worker %d: "+format+"\n", append([]any{c.init.WorkerID}, args...)...)
	}
}

func (c *child) warnf(format string, args ...any) {
	fmt.Fprintf(c.log, "worker %d: warning: "+format+"\n", append([]any{c.init.WorkerID}, args...)...)
}

// recv reads one frame and at most one passed descriptor.
func (c *child) recv() (mailbox.Frame, int, error) {
	for {
		n, oobn, flags, _, err := unix.Recvmsg(c.fd, c.rbuf, c.oob, mailbox.RecvFlags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return mailbox.Frame{}, -1, err
		}
		if n == 0 {
			return mailbox.Frame{}, -1, io.EOF
		}
		fd := -1
		if oobn > 0 {
			fds, perr := parseRights(c.oob[:oobn])
			if perr != nil || len(fds) != 1 || flags&unix.MSG_CTRUNC != 0 {
				for _, f := range fds {
					unix.Close(f)
				}
				return mailbox.Frame{}, -1, errors.New("control message carries other than one descriptor")
			}
			fd = fds[0]
		}
		f, err := mailbox.ParseFrame(c.rbuf[:n])
		if err != nil && fd >= 0 {
			unix.Close(fd)
			fd = -1
		}
		return f, fd, err
	}
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		f, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, err
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

func (c *child) reply(op mailbox.Op, st mailbox.Status, r mailbox.Reply) error {
	var err error
	c.wbuf, err = mailbox.AppendFrame(c.wbuf[:0], op|mailbox.ReplyBit, st, r.Append(nil))
	if err != nil {
		return err
	}
	for {
		_, err = unix.Write(c.fd, c.wbuf)
		if err != unix.EINTR {
			return err
		}
	}
}

func (c *child) serve() error {
	c.rbuf = make([]byte, mailbox.MailboxSize+1)
	c.oob = make([]byte, unix.CmsgSpace(4*4))
	c.wbuf = make([]byte, 0, mailbox.MailboxSize)
	f, fd, err := c.recv()
	if err != nil {
		return fmt.Errorf("read INIT: %w", err)
	}
	if fd >= 0 {
		unix.Close(fd)
	}
	if f.Op != mailbox.OpInit {
		return fmt.Errorf("first frame is %v, want INIT", f.Op)
	}
	if c.init, err = mailbox.ParseInitArgs(f.Args); err != nil {
		return err
	}
	if c.faultsFor != nil {
		c.faults = c.faultsFor(c.init.Flags)
	}
	if c.init.Role != mailbox.RoleChip {
		return fmt.Errorf("this child serves chip endpoints, INIT asks for role %d", c.init.Role)
	}
	if c.arena, err = mailbox.MapArena(childArenaFD, c.init.ArenaSize); err != nil {
		return err
	}
	if c.loader, err = newSimLoader(); err != nil {
		return err
	}
	defer c.loader.close()
	if c.scratch, err = newCmem(scratchBytes); err != nil {
		return err
	}
	c.table = registry.NewTargetTable(registry.LocalChip, int(c.init.Slots))
	opChild = c // the host operation service's child (opservice.go)
	c.table.SetWorkerID(int(c.init.WorkerID))
	c.table.SetReleaseHook(c.clearSlot)
	c.slots = make([]chipSlot, c.init.Slots)
	defer c.shutdownModules() // whatever ends the child: the hooks' shutdowns run
	// Slot independence: occupy the first SlotBase slots with identities no
	// descriptor can have, so this child's private slots differ from its
	// siblings' for the same hashids.
	for i := range c.init.SlotBase {
		d := sha256.Sum256(fmt.Appendf(nil, "ptojit reserved slot %d", i))
		if _, err := c.table.Install(registry.Hashid(d), registry.ChipCallableKind, d, [32]byte{}); err != nil {
			return err
		}
	}
	if err := c.reply(mailbox.OpInit, mailbox.StatusOK, mailbox.Reply{}); err != nil {
		return err
	}
	for {
		f, fd, err := c.recv()
		if err == io.EOF {
			return nil // the parent closed the mailbox
		}
		var fe *mailbox.FrameError
		if errors.As(err, &fe) {
			if err := c.reply(mailbox.OpNop, mailbox.StatusBadFrame, mailbox.Reply{Message: err.Error()}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		st, r := c.handle(f, fd)
		if err := c.reply(f.Op, st, r); err != nil {
			return err
		}
		if f.Op == mailbox.OpShutdown {
			return nil
		}
	}
}

func (c *child) handle(f mailbox.Frame, fd int) (mailbox.Status, mailbox.Reply) {
	if fd >= 0 && f.Op != mailbox.OpRegister {
		unix.Close(fd)
		return mailbox.StatusBadFrame, mailbox.Reply{Message: fmt.Sprintf("%v carries a descriptor", f.Op)}
	}
	switch f.Op {
	case mailbox.OpNop:
		return mailbox.StatusOK, mailbox.Reply{}
	case mailbox.OpShutdown:
		c.shutdownModules()
		return mailbox.StatusOK, mailbox.Reply{}
	case mailbox.OpActivate:
		return c.activate(f.Args)
	case mailbox.OpDeactivate:
		return c.deactivate(f.Args)
	case mailbox.OpReady:
		n, _ := c.table.Len()
		return mailbox.StatusOK, mailbox.Reply{Detail: uint32(n) - c.init.SlotBase}
	case mailbox.OpTask:
		return c.task(f.Args)
	case mailbox.OpNegotiate:
		return c.negotiate(f.Args)
	case mailbox.OpProvide:
		return c.provide(f.Args)
	case mailbox.OpRegister:
		st, r := c.register(f.Args, fd)
		if c.faults.replyDigest != nil {
			c.faults.replyDigest(&r.Digest)
		}
		return st, r
	case mailbox.OpUnregister:
		d, err := mailbox.ParseDigestArgs(f.Args)
		if err != nil {
			return mailbox.StatusBadFrame, mailbox.Reply{Message: err.Error()}
		}
		return c.unregister(d)
	}
	return mailbox.StatusBadFrame, mailbox.Reply{Message: fmt.Sprintf("unexpected %v", f.Op)}
}

// statusOf maps a registry error to a reply status.
func statusOf(err error, otherwise mailbox.Status) mailbox.Status {
	switch registry.CodeOf(err) {
	case registry.HashidDescriptorMismatch:
		return mailbox.StatusDescriptorMismatch
	case registry.CallableKindUnsupported:
		return mailbox.StatusKindUnsupported
	case registry.LocalSlotExhausted:
		return mailbox.StatusSlotExhausted
	case registry.HashidNotInstalled:
		return mailbox.StatusNotInstalled
	case registry.CallableBlobInvalid, registry.SPYCPayloadInvalid:
		return mailbox.StatusPayloadInvalid
	case registry.PlatformUnsupported:
		return mailbox.StatusPlatformMismatch
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
	if c.faults.register != nil {
		c.faults.register(c, h)
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
		if c.faults.skipPrewarm {
			c.debugf("register %v: prewarm skipped (injected)", h)
			return mailbox.StatusOK, rep
		}
		err = c.prewarm(slot)
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

// prewarm loads the executable state of slot and marks it loaded only after
// every step succeeded.
func (c *child) prewarm(slot int) error {
	s := &c.slots[slot]
	if !registry.IsSim(c.init.Platform) {
		return &registry.Error{Code: registry.PlatformUnsupported, WorkerID: int(c.init.WorkerID), Namespace: registry.LocalChip,
			Op: "prewarm", Err: fmt.Errorf("platform %q has no host execution engine", c.init.Platform)}
	}
	if c.faults.prewarm != nil {
		if err := c.faults.prewarm(); err != nil {
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

func (c *child) unregister(d [mailbox.DigestSize]byte) (mailbox.Status, mailbox.Reply) {
	h := registry.Hashid(d)
	rep := mailbox.Reply{Digest: d}
	if c.faults.unregister != nil {
		c.faults.unregister(c, h)
	}
	freed, err := c.table.Release(h)
	if err != nil {
		rep.Message = err.Error()
		return statusOf(err, mailbox.StatusBadFrame), rep
	}
	c.debugf("unregister %v: freed %v refs %d", h, freed, c.table.Refs(h))
	return mailbox.StatusOK, rep
}

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
	if c.faults.task != nil {
		c.faults.task(c, h)
	}
	ta, err := mailbox.ParseTaskArgs(blob)
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusBadFrame, rep
	}
	s := &c.slots[slot]
	if !s.loaded {
		c.warnf("task %v: slot was registered but not prewarmed; preparing it in the dispatch path", h)
		if err := c.prewarm(slot); err != nil {
			rep.Message = err.Error()
			return mailbox.StatusPrewarmFailed, rep
		}
	}
	c.debugf("task %v: slot %d", h, slot)
	code, err := s.state.run(c.arena, c.scratch, ta)
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
