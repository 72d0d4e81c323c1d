// Package client is the client side of the daemon protocol of package api:
// it dials the daemon's socket, sends one request and reads the answer, and
// starts a daemon when none answers. It imports only the standard library
// and api, so the thin client can use it.
//
// Start-up is race-free: clients serialize on an flock of the start lock in
// the daemon directory, the first starts the daemon and waits for its
// readiness signal (not a timeout), and the rest find it answering.
package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ptojit/ptojit/api"
)

// Call sends req over a new connection to the socket at path and returns
// the response. A connection error (no daemon) is returned as is, so
// callers can tell it from a reply; a daemon that accepted the request but
// did not answer it is a *DaemonLostError.
func Call(path string, req *api.DaemonRequest) (*api.DaemonResponse, error) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req.Protocol = api.DaemonProtocol
	// A daemon that refuses the peer replies before reading the request,
	// so a failed write is judged by whether a reply can still be read.
	werr := api.WriteFrame(conn, req)
	var resp api.DaemonResponse
	if err := api.ReadFrame(bufio.NewReader(conn), api.MaxDaemonResponse, &resp); err != nil {
		if werr != nil {
			err = werr
		}
		return nil, &DaemonLostError{Err: err}
	}
	if resp.Protocol != api.DaemonProtocol {
		return nil, fmt.Errorf("daemon speaks protocol %d, this client %d", resp.Protocol, api.DaemonProtocol)
	}
	return &resp, nil
}

// DaemonLostError reports a daemon that accepted a request but did not
// answer it (it was killed or crashed mid-request).
type DaemonLostError struct{ Err error }

func (e *DaemonLostError) Error() string {
	return "the daemon closed the connection without answering (" + e.Err.Error() + ")"
}

func (e *DaemonLostError) Unwrap() error { return e.Err }

// Start says how to start a daemon when none answers.
type Start struct {
	// Dir is the daemon directory (api.DaemonDir).
	Dir string
	// Engine is the path of the ptojitd executable and Args its arguments
	// for running the daemon in the foreground (e.g. "daemon", "run",
	// "--cache-dir", D). The daemon is given a pipe as file descriptor 3 and
	// must write "ready\n" to it once its socket accepts connections.
	Engine string
	Args   []string
	// Env is the daemon's environment (nil: this process's).
	Env []string
}

// Ping reports whether a daemon answers on the socket in dir.
func Ping(dir string) bool {
	resp, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing})
	return err == nil && resp.Error == ""
}

// EnsureDaemon returns once a daemon answers in s.Dir, starting one if
// none does (see the package doc). A daemon that fails to start is
// reported with the end of its log.
func EnsureDaemon(s Start) error {
	if Ping(s.Dir) {
		return nil
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(s.Dir, api.StartLockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := Flock(lock, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("daemon start lock: %w", err)
	}
	defer Flock(lock, syscall.LOCK_UN)
	if Ping(s.Dir) {
		return nil // another client started it while we waited
	}
	return startDaemon(s)
}

func startDaemon(s Start) error {
	logPath := filepath.Join(s.Dir, api.LogName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		pw.Close()
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(s.Engine, s.Args...)
	cmd.Env = s.Env
	cmd.Stdin = devnull
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("starting the daemon: %w", err)
	}
	pw.Close()
	// Reap the child if it dies early; once it runs it outlives us.
	go cmd.Wait()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		return fmt.Errorf("the daemon did not start; end of %s:\n%s", api.LogName, tail(logPath, 2048))
	}
	return nil
}

// Flock locks f (syscall.Flock's how), retrying when a signal interrupts
// the wait.
func Flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// AwaitDaemonExit returns once no daemon holds the lock in dir: a daemon
// keeps it until everything it owns, the store included, is closed.
func AwaitDaemonExit(dir string) error {
	f, err := os.Open(filepath.Join(dir, api.LockName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return Flock(f, syscall.LOCK_SH)
}

// tail returns up to n bytes from the end of a file.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "(no log)"
	}
	off := fi.Size() - n
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	return strings.TrimSpace(string(b))
}
