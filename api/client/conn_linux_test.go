package client

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
)

// TestFdConnDeadline: a read past the deadline fails with
// os.ErrDeadlineExceeded (the socket's SO_RCVTIMEO), and so does one
// asked for after it passed.
func TestFdConnDeadline(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	p := api.SocketPath(serve(t, func(net.Conn) {
		select { // the connection closes after 10 s, should the timeout not work
		case <-hold:
		case <-time.After(10 * time.Second):
		}
	}))
	c, err := dial(p, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Millisecond))
	var b [8]byte
	t0 := time.Now()
	if _, err := c.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of a silent peer: %v, want os.ErrDeadlineExceeded", err)
	}
	if d := time.Since(t0); d < 25*time.Millisecond || d > 5*time.Second {
		t.Errorf("the read gave up after %v, want about 30ms", d)
	}
	if _, err := c.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if _, err := c.Write(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write after the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
}

// TestFdConnExchange: what is written arrives whole, what the peer sends
// is read until its end (io.EOF), and the peer's credentials are this
// process's.
func TestFdConnExchange(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: several writes' worth
	p := api.SocketPath(serve(t, func(c net.Conn) {
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
			c.Write([]byte("bad"))
			return
		}
		c.Write([]byte("ok"))
	}))
	c, err := dial(p, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	uid, pid, err := c.peer()
	if err != nil || uid != os.Getuid() || pid != os.Getpid() {
		t.Fatalf("peer = uid %d pid %d (%v), want %d %d", uid, pid, err, os.Getuid(), os.Getpid())
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Write(want); err != nil || n != len(want) {
		t.Fatalf("write: %d, %v", n, err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "ok" {
		t.Fatalf("reply %q, %v; want ok", got, err)
	}
}

// TestFdConnPeerGone: writing to a peer that closed fails with an error
// (EPIPE or ECONNRESET), not with a SIGPIPE that ends the process.
func TestFdConnPeerGone(t *testing.T) {
	closed := make(chan struct{})
	p := api.SocketPath(serve(t, func(net.Conn) { close(closed) }))
	c, err := dial(p, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the peer did not accept")
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	big := make([]byte, 4<<20)
	var werr error
	for i := 0; i < 8 && werr == nil; i++ {
		_, werr = c.Write(big)
	}
	if werr == nil {
		t.Fatal("writes to a closed peer succeeded")
	}
}

// TestDialNoSocket: no socket is an error matching fs.ErrNotExist that
// names the path.
func TestDialNoSocket(t *testing.T) {
	p := filepath.Join(t.TempDir(), "none")
	_, err := dial(p, 10*time.Second)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dial of no socket: %v, want os.ErrNotExist", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != p {
		t.Errorf("error %v does not name %s", err, p)
	}
}

// TestReadFile: readFile returns a file's bytes whatever its size
// against the buffer it starts with.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 513, 1024, 5000, 70000} {
		p := filepath.Join(dir, "f")
		want := bytes.Repeat([]byte{'x'}, n)
		for i := range want {
			want[i] = byte(i)
		}
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("readFile of %d bytes: %d bytes, %v", n, len(got), err)
		}
	}
	if _, err := readFile(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("readFile of no file: %v, want os.ErrNotExist", err)
	}
}

// TestDialFullQueue: a connect to a daemon whose listen queue is full (it
// has stopped accepting) fails within the bound instead of waiting for
// it forever, and Call reports the daemon as not answering.
func TestDialFullQueue(t *testing.T) {
	dir := ownDir(t)
	p := api.SocketPath(dir)
	fd := listenNone(t, p)
	type dialed struct {
		c   daemonConn
		err error
	}
	for i := range 8 {
		t0 := time.Now()
		ch := make(chan dialed, 1)
		go func() { c, err := dial(p, 50*time.Millisecond); ch <- dialed{c, err} }()
		var d dialed
		select {
		case d = <-ch:
		case <-time.After(10 * time.Second):
			syscall.Close(fd) // wakes the connect: the test fails, not hangs
			t.Fatalf("connect %d to a full queue still waiting after 10 s", i)
		}
		c, err := d.c, d.err
		if err == nil {
			defer c.Close()
			continue // queued
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("connect %d to a full queue: %v, want os.ErrDeadlineExceeded", i, err)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("the connect gave up after %v, want about 50ms", d)
		}
		_, err = CallWith(p, &api.DaemonRequest{Op: api.OpPing}, Options{NoAnswer: 50 * time.Millisecond})
		var na *NotAnsweringError
		if !errors.As(err, &na) || na.PID != 0 || na.Bound != 50*time.Millisecond {
			t.Fatalf("Call to a full queue: %v, want a *NotAnsweringError with no pid and the bound", err)
		}
		return
	}
	t.Fatal("8 connects to a queue of none all succeeded")
}

// listenNone listens on a Unix socket at p with a queue of none and never
// accepts; it returns the socket.
func listenNone(t *testing.T, p string) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // never accepted
		t.Fatal(err)
	}
	return fd
}
