package client

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"time"
)

// daemonConn is a connection to a daemon's socket, made by dial.
type daemonConn interface {
	io.ReadWriteCloser
	// SetDeadline bounds every later read and write (the zero time: no
	// bound); one past it fails with an error matching
	// os.ErrDeadlineExceeded.
	SetDeadline(t time.Time) error
	// peer returns the uid and pid of the process that accepted the
	// connection (SO_PEERCRED, or LOCAL_PEERCRED and LOCAL_PEERPID).
	peer() (uid, pid int, err error)
}

// readFile is os.ReadFile of a small file (hello.json) that does not hand
// the file to the network poller: os.Open of a regular file would start it
// (an epoll instance and its event descriptor) only to learn that the file
// cannot be polled, and a hit's client polls nothing else (see dial).
func readFile(name string) ([]byte, error) {
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	// A blocking descriptor: os.NewFile reads it directly. Sized by its
	// stat, the buffer takes the file in one read and sees its end in a
	// second (io.ReadAll would start at 512 bytes and grow).
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Size() < 1<<20 {
		buf.Grow(int(fi.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
