package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// endpoint is the parent side of one child's mailbox. It implements
// Target. Safe for concurrent use: mu is the per-endpoint mailbox
// lock, so one operation is in flight at a time.
type endpoint struct {
	id      int
	ns      registry.Namespace
	role    uint32
	timeout time.Duration // control operations

	mu   sync.Mutex // the mailbox lock; guards everything below
	fd   int        // parent end of the SOCK_SEQPACKET pair; -1 once closed
	dead error      // why the endpoint is unusable, or nil
	wbuf []byte
	rbuf []byte
	oob  []byte

	retired atomic.Bool // dead != nil; readable without the mailbox lock
	fdMu    sync.Mutex  // held while fd is shut down by abort or set to -1 by close

	cmd       *exec.Cmd
	exited    chan struct{} // closed when cmd has been waited for
	closeOnce sync.Once
}

// active reports whether the endpoint is still in use (not retired by a
// failure or Close). It does not wait for an operation in flight.
func (e *endpoint) active() bool { return !e.retired.Load() }

var _ Target = (*endpoint)(nil)

func (e *endpoint) ID() int                       { return e.id }
func (e *endpoint) Namespace() registry.Namespace { return e.ns }

// start starts the child process with the mailbox and the arena.
func startEndpoint(id int, role uint32, argv []string, env []string, arena *os.File, stderr io.Writer, timeout time.Duration) (*endpoint, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|mailbox.SockCloexec, 0)
	if err != nil {
		return nil, fmt.Errorf("worker %d: socketpair: %w", id, err)
	}
	childEnd := os.NewFile(uintptr(fds[1]), "mailbox")
	defer childEnd.Close()
	for _, fd := range fds {
		// Room for a few frames in flight in each direction.
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4*mailbox.MailboxSize)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	// A grandchild holding the child's stdout or stderr open must not
	// keep Wait (and so close) from returning.
	cmd.WaitDelay = childWaitDelay
	cmd.ExtraFiles = []*os.File{childEnd, arena}
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("worker %d: start child: %w", id, err)
	}
	// The resolver domain follows the child path: chip child loops
	// resolve against LOCAL_CHIP; SUB children and next-level Worker-child
	// loops against LOCAL_PYTHON.
	ns := registry.LocalChip
	if role != mailbox.RoleChip {
		ns = registry.LocalPython
	}
	e := &endpoint{
		id: id, ns: ns, role: role, timeout: timeout, fd: fds[0],
		wbuf: make([]byte, 0, mailbox.MailboxSize), rbuf: make([]byte, mailbox.MailboxSize+1), oob: make([]byte, unix.CmsgSpace(4*4)),
		cmd: cmd, exited: make(chan struct{}),
	}
	go func() {
		cmd.Wait()
		// A child that is gone is retired at once, so the next request
		// addressed to it goes to a replacement rather than to the dead
		// mailbox.
		e.retired.Store(true)
		close(e.exited)
	}()
	return e, nil
}

// childWaitDelay bounds the wait for a child's output pipes after it exits.
const childWaitDelay = 2 * time.Second

// fail marks the endpoint unusable and kills the child; e.mu is held.
func (e *endpoint) fail(op string, cause error) error {
	err := &EndpointError{WorkerID: e.id, Op: op, Err: cause}
	if e.dead == nil {
		e.dead = err
		e.retired.Store(true)
		e.cmd.Process.Kill()
	}
	return err
}

// call sends one request frame, which build appends to dst, (with an optional descriptor passed by
// SCM_RIGHTS) and waits for its reply. A positive timeout bounds the wait;
// the timeout, the child's death or a malformed reply make the endpoint
// unusable (the mailbox has one operation in flight and no sequence
// numbers, so it cannot resynchronize). A reply with a non-OK status is
// returned as is, with a nil error.
func (e *endpoint) call(op mailbox.Op, build func(dst []byte) ([]byte, error), passFD int, timeout time.Duration) (mailbox.Status, mailbox.Reply, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.roundTrip(op, build, passFD, timeout)
}

// roundTrip is call with e.mu held.
func (e *endpoint) roundTrip(op mailbox.Op, build func(dst []byte) ([]byte, error), passFD int, timeout time.Duration) (mailbox.Status, mailbox.Reply, error) {
	if e.dead != nil {
		return 0, mailbox.Reply{}, e.dead
	}
	frame, err := build(e.wbuf[:0])
	if err != nil {
		return 0, mailbox.Reply{}, err
	}
	e.wbuf = frame[:0]
	var oob []byte
	if passFD >= 0 {
		oob = unix.UnixRights(passFD)
	}
	for {
		err = unix.Sendmsg(e.fd, frame, oob, nil, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, mailbox.Reply{}, e.fail(op.String(), e.deathCause(err))
	}
	n, err := e.recv(timeout)
	if err != nil {
		return 0, mailbox.Reply{}, e.fail(op.String(), err)
	}
	f, err := mailbox.ParseFrame(e.rbuf[:n])
	if err != nil {
		return 0, mailbox.Reply{}, e.fail(op.String(), err)
	}
	if f.Op != op|mailbox.ReplyBit {
		return 0, mailbox.Reply{}, e.fail(op.String(), fmt.Errorf("reply is %v", f.Op))
	}
	r, err := mailbox.ParseReply(f.Args)
	if err != nil {
		return 0, mailbox.Reply{}, e.fail(op.String(), err)
	}
	return f.Status, r, nil
}

// deathCause turns a write error on a dead peer into ErrChildExited.
func (e *endpoint) deathCause(err error) error {
	if err == unix.EPIPE || err == unix.ECONNRESET {
		return ErrChildExited
	}
	return err
}

// recv reads one reply into e.rbuf; e.mu is held.
func (e *endpoint) recv(timeout time.Duration) (int, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		if timeout > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return 0, ErrTimeout
			}
			pfd := []unix.PollFd{{Fd: int32(e.fd), Events: unix.POLLIN}}
			ms := int(left / time.Millisecond)
			if ms == 0 {
				ms = 1
			}
			n, err := unix.Poll(pfd, ms)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return 0, err
			}
			if n == 0 {
				continue
			}
		}
		n, oobn, flags, _, err := unix.Recvmsg(e.fd, e.rbuf, e.oob, mailbox.RecvFlags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, e.deathCause(err)
		}
		// A reply never carries descriptors: close any the child passed
		// (the kernel installed them in this process) before refusing it.
		if fds := closeRights(e.oob[:oobn]); oobn > 0 || flags&unix.MSG_CTRUNC != 0 {
			return 0, fmt.Errorf("protocol violation: the reply carries descriptors (%d received and closed; a reply carries none)", fds)
		}
		if n == 0 {
			return 0, ErrChildExited
		}
		if flags&unix.MSG_TRUNC != 0 {
			return 0, errors.New("protocol violation: the reply is longer than a mailbox frame")
		}
		return n, nil
	}
}

// statusErr turns a non-OK reply into a *registry.Error (a definite refusal
// in the sense of Target).
func (e *endpoint) statusErr(op string, h registry.Hashid, st mailbox.Status, r mailbox.Reply) *registry.Error {
	return &registry.Error{Code: codeOf(st), WorkerID: e.id, Namespace: e.ns, Hashid: h.String(), Op: op, Err: errors.New(r.Message)}
}

func (e *endpoint) controlTimeout(ctx context.Context) time.Duration {
	t := e.timeout
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); t <= 0 || left < t {
			t = max(left, time.Millisecond)
		}
	}
	return t
}

// Register sends REGISTER_CALLABLE with the payload staged in a sealed memfd.
func (e *endpoint) Register(ctx context.Context, h registry.Hashid, kind registry.Kind, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := mailbox.StagePayload(payload)
	if err != nil {
		return err
	}
	defer f.Close()
	ra := mailbox.RegisterArgs{Digest: h.Digest(), Kind: uint32(kind), RefType: mailbox.RefSealedMemfd, PayloadLen: uint64(len(payload))}
	return e.request(mailbox.OpRegister, "register", h, func(b []byte) ([]byte, error) {
		return mailbox.AppendFrame(b, mailbox.OpRegister, mailbox.StatusOK, ra.Append(nil))
	}, int(f.Fd()), e.controlTimeout(ctx))
}

// Unregister sends UNREGISTER_CALLABLE.
func (e *endpoint) Unregister(ctx context.Context, h registry.Hashid) error {
	return e.request(mailbox.OpUnregister, "unregister", h, func(b []byte) ([]byte, error) {
		return mailbox.AppendFrame(b, mailbox.OpUnregister, mailbox.StatusOK, h[:])
	}, -1, e.controlTimeout(ctx))
}

// task sends one TASK frame and waits for its completion.
func (e *endpoint) task(h registry.Hashid, a mailbox.TaskArgs) error {
	return e.request(mailbox.OpTask, "task", h, func(b []byte) ([]byte, error) {
		return mailbox.AppendTaskFrame(b, h.Digest(), a)
	}, -1, 0)
}

// taskContext is task bounded by ctx. A task may never return: when ctx
// ends first, the child is killed (its mailbox cannot be resynchronized)
// and the task fails with ctx's cause; the endpoint is retired.
func (e *endpoint) taskContext(ctx context.Context, h registry.Hashid, a mailbox.TaskArgs) error {
	if ctx.Err() != nil {
		return fmt.Errorf("task not started: %w", context.Cause(ctx))
	}
	if ctx.Done() == nil {
		return e.task(h, a)
	}
	stop := context.AfterFunc(ctx, e.abort)
	err := e.task(h, a)
	if !stop() && err != nil {
		return fmt.Errorf("task canceled, child killed: %w", context.Cause(ctx))
	}
	return err
}

// request sends one frame that names hashid h (REGISTER_CALLABLE,
// UNREGISTER_CALLABLE, TASK) and checks its reply. A reply that names
// another hashid retires the endpoint before the mailbox lock is released,
// so no other operation uses the desynchronized mailbox; the outcome is
// unknown (the error matches registry.ReplyHashidMismatch but is not a
// definite refusal). A non-OK status is a definite refusal.
func (e *endpoint) request(op mailbox.Op, name string, h registry.Hashid, build func(dst []byte) ([]byte, error), passFD int, timeout time.Duration) error {
	e.mu.Lock()
	st, r, err := e.roundTrip(op, build, passFD, timeout)
	if err == nil && r.Digest != h.Digest() {
		err = e.fail(name, fmt.Errorf("%w: reply names %v", registry.ReplyHashidMismatch, registry.Hashid(r.Digest)))
	}
	e.mu.Unlock()
	if err != nil {
		return err
	}
	if st != mailbox.StatusOK {
		return e.statusErr(name, h, st, r)
	}
	return nil
}

// nop is the bare round trip over the same mailbox.
func (e *endpoint) nop() error {
	st, r, err := e.call(mailbox.OpNop, func(b []byte) ([]byte, error) { return mailbox.AppendFrame(b, mailbox.OpNop, mailbox.StatusOK, nil) }, -1, 0)
	if err == nil && st != mailbox.StatusOK {
		err = e.statusErr("nop", registry.Hashid{}, st, r)
	}
	return err
}

// simple sends a control frame without a digest (INIT, READY, SHUTDOWN).
func (e *endpoint) simple(op mailbox.Op, args []byte, timeout time.Duration) (mailbox.Reply, error) {
	st, r, err := e.call(op, func(b []byte) ([]byte, error) { return mailbox.AppendFrame(b, op, mailbox.StatusOK, args) }, -1, timeout)
	if err != nil {
		return r, err
	}
	if st != mailbox.StatusOK {
		return r, &EndpointError{WorkerID: e.id, Op: op.String(), Err: fmt.Errorf("%v: %s", st, r.Message)}
	}
	return r, nil
}

// abort kills the child and shuts its socket down without the mailbox
// lock, so that an operation in flight (a task that may never return) fails
// at once and releases the lock. The endpoint is retired.
func (e *endpoint) abort() {
	e.retired.Store(true)
	e.cmd.Process.Kill()
	// Shutting the socket down wakes the operation's receive even if
	// another process still holds the child's end.
	e.fdMu.Lock()
	if e.fd >= 0 {
		unix.Shutdown(e.fd, unix.SHUT_RDWR)
	}
	e.fdMu.Unlock()
}

// failure returns why a retired endpoint is retired: the error its failed
// operation returned, else the child's exit.
func (e *endpoint) failure() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead != nil {
		return e.dead
	}
	select {
	case <-e.exited:
		return &EndpointError{WorkerID: e.id, Op: "wait", Err: ErrChildExited}
	default:
		return &EndpointError{WorkerID: e.id, Op: "abort", Err: errors.New("child killed")}
	}
}

// close shuts the child down and releases the mailbox. An idle child is
// asked to shut down (and killed after timeout). A child with an operation
// in flight (a task may never return) is killed first, and its socket shut
// down, so the operation fails and releases the mailbox lock: close never
// waits behind it. Only the first call does anything (Worker.Close and a
// replacement may both close a retired endpoint).
func (e *endpoint) close(timeout time.Duration) error {
	e.closeOnce.Do(func() { e.closeNow(timeout) })
	return nil
}

func (e *endpoint) closeNow(timeout time.Duration) {
	if e.mu.TryLock() {
		if e.dead == nil && e.active() {
			e.roundTrip(mailbox.OpShutdown, func(b []byte) ([]byte, error) {
				return mailbox.AppendFrame(b, mailbox.OpShutdown, mailbox.StatusOK, nil)
			}, -1, timeout)
		}
	} else {
		e.abort()
		e.mu.Lock()
	}
	if e.fd >= 0 {
		e.fdMu.Lock()
		unix.Close(e.fd)
		e.fd = -1
		e.fdMu.Unlock()
	}
	if e.dead == nil {
		e.dead = &EndpointError{WorkerID: e.id, Op: "close", Err: errors.New("worker closed")}
		e.retired.Store(true)
	}
	e.mu.Unlock()
	select {
	case <-e.exited:
	case <-time.After(timeout):
		e.cmd.Process.Kill()
		<-e.exited
	}
}

// closeRights closes every descriptor that the control messages oob pass
// (SCM_RIGHTS) and returns how many there were.
func closeRights(oob []byte) int {
	if len(oob) == 0 {
		return 0
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	n := 0
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.Close(fd)
			n++
		}
	}
	return n
}
