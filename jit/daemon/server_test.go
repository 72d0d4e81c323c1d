package daemon

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
)

// shortDir returns a directory whose socket path fits in a sockaddr_un.
func shortDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "pjd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "d")
}

// Hooks for TestDaemonStopFinishesInFlight.
var handlerEntered, stopSeen chan struct{}

func echoHandler(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
	if len(req.Args) > 0 && req.Args[0] == "panic" {
		panic("boom")
	}
	if len(req.Args) > 0 && req.Args[0] == "block-until-stop" {
		close(handlerEntered)
		<-stopSeen
		return &api.DaemonResponse{Stdout: []byte("finished")}
	}
	if len(req.Args) > 0 && req.Args[0] == "block" {
		<-ctx.Done()
		return &api.DaemonResponse{Error: "canceled: " + ctx.Err().Error(), Exit: 1}
	}
	return &api.DaemonResponse{Stdout: []byte(strings.Join(req.Args, " ")), Exit: 0}
}

// startServer runs a daemon until the test ends; wait blocks until Serve
// returns and may be called any number of times.
func startServer(t *testing.T, cfg Config) (*Server, func() error) {
	t.Helper()
	if cfg.Handler == nil {
		cfg.Handler = echoHandler
	}
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	var serveErr error
	go func() { serveErr = s.Serve(context.Background()); s.Close(); close(finished) }()
	wait := func() error { <-finished; return serveErr }
	t.Cleanup(func() {
		s.Shutdown("test over")
		wait()
	})
	return s, wait
}

func TestDaemonServesAndSecuresSocket(t *testing.T) {
	dir := shortDir(t)
	startServer(t, Config{Dir: dir})
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Stdout) != "a b" || resp.Exit != 0 {
		t.Fatalf("got %+v", resp)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, api.SocketPath(dir): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", filepath.Base(path), got, want)
		}
	}
}

func TestDaemonRefusesForeignPeer(t *testing.T) {
	dir := shortDir(t)
	// Set before the server starts, restored after it stops (cleanups run
	// last-registered first).
	old := peerUID
	peerUID = func(*net.UnixConn) (int, error) { return os.Getuid() + 1, nil }
	t.Cleanup(func() { peerUID = old })
	s, _ := startServer(t, Config{Dir: dir})
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Error, "permission denied") || len(resp.Stdout) != 0 {
		t.Fatalf("foreign peer was served: %+v", resp)
	}
	if s.Info().Refused != 1 {
		t.Fatalf("refused = %d", s.Info().Refused)
	}
}

func TestDaemonSurvivesBadRequests(t *testing.T) {
	dir := shortDir(t)
	startServer(t, Config{Dir: dir})
	sock := api.SocketPath(dir)
	send := func(raw []byte) api.DaemonResponse {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write(raw)
		var resp api.DaemonResponse
		if err := api.ReadFrame(conn, api.MaxDaemonResponse, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	frame := func(body string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
		return append(b, body...)
	}
	huge := binary.LittleEndian.AppendUint32(nil, api.MaxDaemonRequest+1)
	cases := map[string][]byte{
		"not json":     frame("{nope"),
		"too large":    huge,
		"old protocol": frame(`{"protocol":0,"op":"run"}`),
		"unknown op":   frame(`{"protocol":1,"op":"explode"}`),
		"panic":        frame(`{"protocol":1,"op":"run","args":["panic"]}`),
	}
	for name, raw := range cases {
		if resp := send(raw); resp.Error == "" || resp.Exit == 0 {
			t.Errorf("%s: got %+v, want an error reply", name, resp)
		}
	}
	// Still serving.
	resp, err := client.Call(sock, &api.DaemonRequest{Op: api.OpRun, Args: []string{"ok"}})
	if err != nil || string(resp.Stdout) != "ok" {
		t.Fatalf("daemon no longer serves: %v %+v", err, resp)
	}
}

func TestDaemonOneAtATimeAndStaleSocket(t *testing.T) {
	dir := shortDir(t)
	s, wait := startServer(t, Config{Dir: dir})
	if _, err := Listen(Config{Dir: dir}); !errors.Is(err, ErrRunning) {
		t.Fatalf("second daemon: %v, want ErrRunning", err)
	}
	s.Shutdown("test")
	wait()
	// A socket file left behind with nobody holding the lock is stale.
	if err := os.WriteFile(api.SocketPath(dir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if client.Ping(dir) {
		t.Fatal("ping answered with no daemon")
	}
	startServer(t, Config{Dir: dir})
	if !client.Ping(dir) {
		t.Fatal("new daemon does not answer")
	}
}

func TestDaemonStopFinishesInFlight(t *testing.T) {
	dir := shortDir(t)
	handlerEntered, stopSeen = make(chan struct{}), make(chan struct{})
	s, wait := startServer(t, Config{Dir: dir, Grace: time.Hour})
	got := make(chan *api.DaemonResponse, 1)
	go func() {
		resp, _ := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"block-until-stop"}})
		got <- resp
	}()
	<-handlerEntered
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpStop})
	if err != nil || resp.Error != "" {
		t.Fatalf("stop: %v %+v", err, resp)
	}
	if s.Info().InFlight != 1 {
		t.Fatalf("in flight = %d, want the blocked request", s.Info().InFlight)
	}
	close(stopSeen)
	if r := <-got; r == nil || string(r.Stdout) != "finished" {
		t.Fatalf("in-flight request got %+v, want it finished", r)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if client.Ping(dir) {
		t.Fatal("daemon still answers after stop")
	}
}

func TestDaemonGraceCancelsStragglers(t *testing.T) {
	dir := shortDir(t)
	s, wait := startServer(t, Config{Dir: dir, Grace: time.Millisecond})
	got := make(chan *api.DaemonResponse, 1)
	go func() {
		resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"block"}})
		if err != nil {
			resp = &api.DaemonResponse{Error: err.Error()}
		}
		got <- resp
	}()
	// Wait until the request is in flight, then shut down.
	for s.Info().InFlight == 0 {
		time.Sleep(time.Millisecond)
	}
	s.Shutdown("test")
	resp := <-got
	if !strings.Contains(resp.Error, "canceled") {
		t.Fatalf("straggler got %+v, want a cancellation reply", resp)
	}
	wait()
}

func TestDaemonIdleExit(t *testing.T) {
	dir := shortDir(t)
	_, wait := startServer(t, Config{Dir: dir, Idle: 20 * time.Millisecond})
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if client.Ping(dir) {
		t.Fatal("idle daemon still answers")
	}
}
