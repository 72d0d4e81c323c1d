package child

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/internal/childfault"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
	"golang.org/x/sys/unix"
)

// Main runs a chip child endpoint in this process: the mailbox is
// descriptor 3 and the arena descriptor 4, as the Worker starts it. It
// returns when the parent shuts the child down or closes the mailbox, and
// returns the process exit code; diagnostics go to log (the child's stderr,
// which the Worker forwards to Config.Stderr). Programs call it from their
// hidden child mode (ptojitd __worker-child; a test binary's TestMain).
func Main(log io.Writer) int {
	c := &child{fd: mailbox.ChildMailboxFD, log: log}
	if err := c.serve(); err != nil {
		fmt.Fprintf(log, "ptojit worker child: %v\n", err)
		return 1
	}
	return 0
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
	frame, rights := c.wbuf, []byte(nil)
	if c.faults.Reply != nil {
		var fds []int
		if frame, fds = c.faults.Reply(op, frame); len(fds) > 0 {
			rights = unix.UnixRights(fds...)
		}
	}
	for {
		err = unix.Sendmsg(c.fd, frame, rights, nil, 0)
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
	if childfault.For != nil {
		c.faults = childfault.For(c.init.Flags)
	}
	if c.init.Role != mailbox.RoleChip {
		return fmt.Errorf("this child serves chip endpoints, INIT asks for role %d", c.init.Role)
	}
	if c.arena, err = mailbox.MapArena(mailbox.ChildArenaFD, c.init.ArenaSize); err != nil {
		return err
	}
	if c.loader, err = newSimLoader(opServiceAddr()); err != nil {
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
		if c.faults.ReplyDigest != nil {
			c.faults.ReplyDigest(&r.Digest)
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
