package client

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// dial connects to the daemon socket at path with a blocking socket of
// its own, not through package net: the client then starts no network
// poller (no epoll instance, no event descriptor, no thread woken to wait
// on them), and a read blocks in the kernel until the daemon's reply
// wakes this very thread. The deadline is the socket's SO_RCVTIMEO or
// SO_SNDTIMEO, set to what is left of it before each read and write. A
// connect waits at most bound (SO_SNDTIMEO, which Linux applies to it)
// when the daemon's listen queue is full, as it is for a daemon that has
// stopped accepting.
func dial(path string, bound time.Duration) (daemonConn, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	c := &fdConn{fd: fd}
	c.SetDeadline(time.Now().Add(bound))
	if err := c.arm(syscall.SO_SNDTIMEO); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.EISCONN { // an interrupted connect that completed
		err = nil
	}
	if err == syscall.EAGAIN {
		err = os.ErrDeadlineExceeded
	}
	if err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "connect", Path: path, Err: err}
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// fdConn is a connected blocking Unix socket. Used by one goroutine.
type fdConn struct {
	fd       int
	deadline time.Time
}

func (c *fdConn) SetDeadline(t time.Time) error {
	c.deadline = t
	return nil
}

// arm sets the socket's timeout opt (SO_RCVTIMEO or SO_SNDTIMEO) to what
// is left of the deadline: zero (none) without one.
func (c *fdConn) arm(opt int) error {
	var tv syscall.Timeval
	if !c.deadline.IsZero() {
		left := time.Until(c.deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		tv = syscall.NsecToTimeval(max(left.Nanoseconds(), int64(time.Microsecond)))
	}
	if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	return nil
}

func (c *fdConn) Read(p []byte) (int, error) {
	if err := c.arm(syscall.SO_RCVTIMEO); err != nil {
		return 0, err
	}
	for {
		n, err := syscall.Read(c.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *fdConn) Write(p []byte) (int, error) {
	if err := c.arm(syscall.SO_SNDTIMEO); err != nil {
		return 0, err
	}
	written := 0
	for written < len(p) {
		// MSG_NOSIGNAL: a daemon gone makes EPIPE, not SIGPIPE.
		n, err := syscall.SendmsgN(c.fd, p[written:], nil, nil, syscall.MSG_NOSIGNAL)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return written, os.ErrDeadlineExceeded
		case err != nil:
			return written, os.NewSyscallError("write", err)
		}
		written += n
	}
	return written, nil
}

func (c *fdConn) Close() error {
	if c.fd < 0 {
		return errors.New("closed")
	}
	err := syscall.Close(c.fd)
	c.fd = -1
	return err
}

func (c *fdConn) peer() (uid, pid int, err error) {
	cred, err := syscall.GetsockoptUcred(c.fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return -1, -1, os.NewSyscallError("getsockopt", err)
	}
	return int(cred.Uid), int(cred.Pid), nil
}
