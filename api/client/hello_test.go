package client

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
)

// TestCallEnv: the environment sent is the entries the daemon's hello
// names, read from its hello file when the file names the daemon that
// answers (no OpHello round trip), else asked with OpHello.
func TestCallEnv(t *testing.T) {
	dir, err := os.MkdirTemp("", "ptojit-client-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", api.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	var ops []string
	var runEnv []string
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() { // one goroutine per connection: CallEnv may hold two
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				var req api.DaemonRequest
				if err := api.ReadFrame(bufio.NewReader(conn), api.MaxDaemonRequest, &req); err != nil {
					return
				}
				mu.Lock()
				ops = append(ops, req.Op)
				if req.Op == api.OpRun {
					runEnv = req.Env
				}
				mu.Unlock()
				api.WriteFrame(conn, &api.DaemonResponse{Protocol: req.Protocol, PID: os.Getpid(), EnvNames: []string{"CC", "PATH"}})
			}()
		}
	}()
	environ := []string{"PATH=/bin", "SECRET_TOKEN=x", "CC=gcc"}
	run := func() []string {
		t.Helper()
		mu.Lock()
		ops, runEnv = nil, nil
		mu.Unlock()
		if _, err := CallEnv(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun}, environ); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"PATH=/bin", "CC=gcc"}; !slices.Equal(runEnv, want) {
			t.Fatalf("sent env %q, want %q", runEnv, want)
		}
		return ops
	}
	// No hello file: asked.
	if got := run(); !slices.Equal(got, []string{api.OpHello, api.OpRun}) {
		t.Fatalf("without a hello file: ops %q, want hello then run", got)
	}
	// A hello file of another daemon (another pid): asked.
	writeHelloFile(t, dir, os.Getpid()+1, []string{"CC", "PATH", "SECRET_TOKEN"})
	if got := run(); !slices.Equal(got, []string{api.OpHello, api.OpRun}) {
		t.Fatalf("with another daemon's hello file: ops %q, want hello then run", got)
	}
	// The answering daemon's hello file: no round trip.
	writeHelloFile(t, dir, os.Getpid(), []string{"CC", "PATH"})
	if got := run(); !slices.Equal(got, []string{api.OpRun}) {
		t.Fatalf("with the daemon's hello file: ops %q, want run only", got)
	}
	// Names that depend on a settings file: used while the file is as
	// stamped, asked again once it changed.
	conf := filepath.Join(dir, "ptojit.conf")
	if err := os.WriteFile(conf, []byte("pass_env = A\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(&api.DaemonResponse{Protocol: api.DaemonProtocol, PID: os.Getpid(), EnvNames: []string{"CC", "PATH"},
		Depends: conf, DependsStamp: api.FileStamp(conf)})
	if err := os.WriteFile(filepath.Join(dir, api.HelloName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run(); !slices.Equal(got, []string{api.OpRun}) {
		t.Fatalf("with an up-to-date settings file: ops %q, want run only", got)
	}
	if err := os.WriteFile(conf, []byte("pass_env = A, CCACHE_DIR\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run(); !slices.Equal(got, []string{api.OpHello, api.OpRun}) {
		t.Fatalf("with a changed settings file: ops %q, want hello then run", got)
	}
}

func writeHelloFile(t *testing.T, dir string, pid int, names []string) {
	t.Helper()
	b, _ := json.Marshal(&api.DaemonResponse{Protocol: api.DaemonProtocol, PID: pid, EnvNames: names})
	if err := os.WriteFile(filepath.Join(dir, api.HelloName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCallEnvNoAnswerFromHello: the no-answer bound of the settings comes
// from the hello file while the settings file is as stamped there (the
// settings file is not read), and from SettingsNoAnswer once it changed.
func TestCallEnvNoAnswerFromHello(t *testing.T) {
	dir, err := os.MkdirTemp("", "ptojit-client-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", api.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() { // a daemon that reads requests and never answers
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				var req api.DaemonRequest
				api.ReadFrame(bufio.NewReader(conn), api.MaxDaemonRequest, &req)
				var b [1]byte
				conn.Read(b[:]) // until the client gives up
			}()
		}
	}()
	conf := filepath.Join(dir, "ptojit.conf")
	if err := os.WriteFile(conf, []byte("daemon_timeout = 50ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(&api.DaemonResponse{Protocol: api.DaemonProtocol, PID: os.Getpid(), EnvNames: []string{"PATH"},
		Depends: conf, DependsStamp: api.FileStamp(conf), NoAnswer: "50ms"})
	if err := os.WriteFile(filepath.Join(dir, api.HelloName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var asked int
	o := Options{SettingsNoAnswer: func() time.Duration { asked++; return 80 * time.Millisecond }}
	bound := func() time.Duration {
		t.Helper()
		_, err := CallEnvWith(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun}, nil, o)
		var na *NotAnsweringError
		if !errors.As(err, &na) {
			t.Fatalf("error %v, want a daemon not answering", err)
		}
		return na.Bound
	}
	if got := bound(); got != 50*time.Millisecond || asked != 0 {
		t.Fatalf("bound %s with the settings read %d times, want the hello file's 50ms and no read", got, asked)
	}
	if err := os.WriteFile(conf, []byte("daemon_timeout = 80ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := bound(); got != 80*time.Millisecond || asked != 1 {
		t.Fatalf("bound %s with the settings read %d times, want the settings' 80ms, read once", got, asked)
	}
}
