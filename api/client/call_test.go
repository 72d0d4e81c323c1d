package client

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
)

// serve answers each connection on a fresh socket in a temporary directory
// with handle, and returns the daemon directory.
func serve(t *testing.T, handle func(conn net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ptojit-client-") // short: a socket path holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", api.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			handle(conn)
			conn.Close()
		}
	}()
	return dir
}

func TestCallRoundTrip(t *testing.T) {
	dir := serve(t, func(conn net.Conn) {
		var req api.DaemonRequest
		if err := api.ReadFrame(bufio.NewReader(conn), api.MaxDaemonRequest, &req); err != nil {
			return
		}
		api.WriteFrame(conn, &api.DaemonResponse{Protocol: req.Protocol, Stdout: []byte(strings.Join(req.Args, " ")), Exit: 7})
	})
	resp, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"key", "--json"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Stdout) != "key --json" || resp.Exit != 7 {
		t.Errorf("response = %q exit %d, want %q exit 7", resp.Stdout, resp.Exit, "key --json")
	}
	if !Ping(dir) {
		t.Error("Ping = false for a daemon that answers")
	}
}

func TestCallDaemonLost(t *testing.T) {
	dir := serve(t, func(conn net.Conn) {
		var req api.DaemonRequest
		api.ReadFrame(bufio.NewReader(conn), api.MaxDaemonRequest, &req) // then hang up
	})
	_, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun})
	var lost *DaemonLostError
	if !errors.As(err, &lost) {
		t.Fatalf("err = %v, want a *DaemonLostError", err)
	}
}

func TestCallOtherProtocol(t *testing.T) {
	dir := serve(t, func(conn net.Conn) {
		api.WriteFrame(conn, &api.DaemonResponse{Protocol: api.DaemonProtocol + 1})
	})
	_, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing})
	var lost *DaemonLostError
	if err == nil || errors.As(err, &lost) || !strings.Contains(err.Error(), "protocol") {
		t.Fatalf("err = %v, want a protocol mismatch", err)
	}
	if Ping(dir) {
		t.Error("Ping = true for a daemon of another protocol")
	}
}

func TestCallNoDaemon(t *testing.T) {
	dir := t.TempDir()
	_, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing})
	var lost *DaemonLostError
	if err == nil || errors.As(err, &lost) {
		t.Fatalf("err = %v, want a connection error", err)
	}
	if Ping(dir) {
		t.Error("Ping = true with no socket")
	}
}

// A daemon that fails to start is reported with the end of its log, and
// the start returns when the engine exits rather than waiting.
func TestEnsureDaemonStartFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	err := EnsureDaemon(Start{Dir: dir, Engine: "/bin/sh", Args: []string{"-c", "echo cannot open the store >&2; exit 1"}})
	if err == nil || !strings.Contains(err.Error(), "cannot open the store") {
		t.Fatalf("err = %v, want the end of the daemon's log", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("daemon directory: %v, %v; want mode 0700", fi, err)
	}
}

func TestAwaitDaemonExit(t *testing.T) {
	dir := t.TempDir()
	if err := AwaitDaemonExit(dir); err != nil {
		t.Fatalf("no lock file: %v", err)
	}
	f, err := os.Create(filepath.Join(dir, api.LockName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Flock(f, syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- AwaitDaemonExit(dir) }()
	select {
	case err := <-done:
		t.Fatalf("AwaitDaemonExit returned %v while the lock is held", err)
	case <-time.After(50 * time.Millisecond):
		// Still waiting, as it should: the lock is held.
	}
	Flock(f, syscall.LOCK_UN)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitDaemonExit did not return after the lock was released")
	}
}
