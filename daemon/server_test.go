package daemon

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/test/fixture"
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

// testDeadline bounds every test of the package: a test that has not
// finished by then prints every goroutine and ends the test binary, so a
// hang fails in seconds instead of holding the package until go test's
// timeout.
const testDeadline = 60 * time.Second

// guard arms testDeadline for t.
func guard(t *testing.T) {
	t.Helper()
	fixture.Guard(t, testDeadline)
}

// waitUntil polls cond until it holds; the deadline only turns a hang into
// a failure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Hooks for TestDaemonStopFinishesInFlight.
var handlerEntered, stopSeen chan struct{}

func echoHandler(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
	if len(req.Args) > 0 && req.Args[0] == "panic" {
		panic("boom")
	}
	if len(req.Args) > 0 && req.Args[0] == "block-until-stop" {
		close(handlerEntered)
		select {
		case <-stopSeen:
			return &api.DaemonResponse{Stdout: []byte("finished")}
		case <-ctx.Done():
			return &api.DaemonResponse{Error: "canceled: " + ctx.Err().Error(), Exit: 1}
		}
	}
	if len(req.Args) > 0 && req.Args[0] == "big" {
		return &api.DaemonResponse{Stdout: bytes.Repeat([]byte("x"), 32<<20)}
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
	guard(t)
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
		"unknown op":   frame(`{"protocol":2,"op":"explode"}`),
		"panic":        frame(`{"protocol":2,"op":"run","args":["panic"]}`),
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
	var release sync.Once
	s, wait := startServer(t, Config{Dir: dir, Grace: time.Hour})
	// Registered after startServer's cleanup, so it runs first: a failing
	// test releases the handler before it waits for the server.
	t.Cleanup(func() { release.Do(func() { close(stopSeen) }) })
	got := make(chan *api.DaemonResponse, 1)
	go func() {
		resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"block-until-stop"}})
		if err != nil {
			resp = &api.DaemonResponse{Error: err.Error()}
		}
		got <- resp
	}()
	<-handlerEntered
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpStop})
	if err != nil || resp.Error != "" {
		t.Fatalf("stop: %v %+v", err, resp)
	}
	// The stop request leaves flight once its reply is written: wait for
	// the count to come down to the blocked request.
	waitUntil(t, "the stop request to end", func() bool { return s.Info().InFlight <= 1 })
	if n := s.Info().InFlight; n != 1 {
		t.Fatalf("in flight = %d, want the blocked request", n)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("shutdown did not begin on stop")
	}
	release.Do(func() { close(stopSeen) })
	if r := <-got; string(r.Stdout) != "finished" {
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
	waitUntil(t, "the request to be in flight", func() bool { return s.Info().InFlight == 1 })
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

// rawConn connects to the daemon in dir without the client's checks, for
// clients that misbehave; it is closed when the test ends.
func rawConn(t *testing.T, dir string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", api.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// partialFrame sends the header of an n-byte frame and the first part of
// its body, then nothing more.
func partialFrame(t *testing.T, c net.Conn, n, part int) {
	t.Helper()
	if _, err := c.Write(binary.LittleEndian.AppendUint32(nil, uint32(n))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, part)); err != nil {
		t.Fatal(err)
	}
}

// closedWithin reports whether the daemon closes c within d, reading (and
// discarding) whatever it says first. A close that leaves some of what c
// sent unread reads as a reset, not an end of file.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// serveWithin runs wait and fails the test unless it returns within d.
func serveWithin(t *testing.T, wait func() error, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatalf("the daemon did not return within %s", d)
	}
	return time.Since(start)
}

func TestDaemonSilentClientDoesNotBlockIdleExit(t *testing.T) {
	dir := shortDir(t)
	s, wait := startServer(t, Config{Dir: dir, Idle: 50 * time.Millisecond, ReadTimeout: time.Hour})
	silent := rawConn(t, dir)
	partial := rawConn(t, dir)
	partialFrame(t, partial, 100, 10)
	serveWithin(t, wait, 10*time.Second)
	if s.reason != "idle" {
		t.Errorf("shutdown reason %q, want idle", s.reason)
	}
	for name, c := range map[string]net.Conn{"silent": silent, "partial": partial} {
		if !closedWithin(c, 5*time.Second) {
			t.Errorf("%s connection not closed by shutdown", name)
		}
	}
}

func TestDaemonStopWithSilentClients(t *testing.T) {
	dir := shortDir(t)
	s, wait := startServer(t, Config{Dir: dir, ReadTimeout: time.Hour})
	var conns []net.Conn
	for range 3 {
		conns = append(conns, rawConn(t, dir))
	}
	partial := rawConn(t, dir)
	partialFrame(t, partial, api.MaxDaemonRequest, 4096)
	conns = append(conns, partial)
	waitUntil(t, "the partial frame to be read", func() bool { return s.large.count() == 1 })
	if n := s.Info().InFlight; n != 0 {
		t.Fatalf("in flight = %d with no request read, want 0", n)
	}
	start := time.Now()
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpStop})
	if err != nil || resp.Error != "" {
		t.Fatalf("stop: %v %+v", err, resp)
	}
	serveWithin(t, wait, 5*time.Second)
	t.Logf("stop with %d silent clients returned in %s", len(conns), time.Since(start))
	for i, c := range conns {
		if !closedWithin(c, 5*time.Second) {
			t.Errorf("connection %d not closed by shutdown", i)
		}
	}
}

func TestDaemonReadDeadline(t *testing.T) {
	dir := shortDir(t)
	s, _ := startServer(t, Config{Dir: dir, ReadTimeout: 100 * time.Millisecond})
	for name, send := range map[string]func(net.Conn){
		"silent":  func(net.Conn) {},
		"partial": func(c net.Conn) { partialFrame(t, c, 1000, 10) },
	} {
		c := rawConn(t, dir)
		send(c)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var resp api.DaemonResponse
		if err := api.ReadFrame(c, api.MaxDaemonResponse, &resp); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(resp.Error, "no complete request within") {
			t.Errorf("%s: got %+v, want a deadline error", name, resp)
		}
	}
	if resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"ok"}}); err != nil || string(resp.Stdout) != "ok" {
		t.Fatalf("daemon no longer serves: %v %+v", err, resp)
	}
	// The request just answered leaves flight once its reply is written.
	waitUntil(t, "no request in flight", func() bool { return s.Info().InFlight == 0 })
}

func TestDaemonWriteDeadline(t *testing.T) {
	dir := shortDir(t)
	s, wait := startServer(t, Config{Dir: dir, WriteTimeout: 100 * time.Millisecond})
	c := rawConn(t, dir)
	// Ask for a reply larger than the socket buffers and never read it.
	if err := api.WriteFrame(c, &api.DaemonRequest{Protocol: api.DaemonProtocol, Op: api.OpRun, Args: []string{"big"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the stuck reply to end", func() bool { i := s.Info(); return i.Served == 1 && i.InFlight == 0 })
	s.Shutdown("test")
	serveWithin(t, wait, 5*time.Second)
}

func TestDaemonShutdownLeavesStubbornHandlers(t *testing.T) {
	dir := shortDir(t)
	old := afterCancel
	afterCancel = 100 * time.Millisecond
	t.Cleanup(func() { afterCancel = old })
	stuck, entered := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	s, wait := startServer(t, Config{Dir: dir, Grace: 10 * time.Millisecond,
		Handler: func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
			close(entered)
			<-stuck // ignores ctx
			return &api.DaemonResponse{}
		}})
	got := make(chan error, 1)
	go func() {
		r, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"x"}})
		if err == nil {
			err = fmt.Errorf("a reply: %+v", r)
		}
		if errors.As(err, new(*client.DaemonLostError)) {
			err = nil
		}
		got <- err
	}()
	<-entered
	s.Shutdown("test")
	serveWithin(t, wait, 5*time.Second)
	if err := <-got; err != nil {
		t.Fatalf("client of a handler that ignores cancellation got %v, want a lost daemon", err)
	}
}

func TestDaemonFrameBudget(t *testing.T) {
	dir := shortDir(t)
	const frames = 64
	s, _ := startServer(t, Config{Dir: dir, ReadTimeout: time.Minute, FrameBudget: api.MaxDaemonRequest})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range frames {
		partialFrame(t, rawConn(t, dir), api.MaxDaemonRequest, 1024)
	}
	waitUntil(t, "every frame header to be read", func() bool { return s.large.count() == frames })
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d partial %d MiB frames: heap grew %.1f MiB, at most %d MiB reserved at once",
		frames, api.MaxDaemonRequest>>20, float64(grown)/(1<<20), s.large.maxUsed()>>20)
	if peak := s.large.maxUsed(); peak > api.MaxDaemonRequest {
		t.Errorf("%d bytes reserved at once, over the budget of %d", peak, api.MaxDaemonRequest)
	}
	if limit := int64(api.MaxDaemonRequest + 16<<20); grown > limit {
		t.Errorf("heap grew by %d bytes, over %d", grown, limit)
	}
	// Small requests are not held up by the large ones.
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"small"}})
	if err != nil || string(resp.Stdout) != "small" {
		t.Fatalf("small request behind large frames: %v %+v", err, resp)
	}
}

func TestDaemonHello(t *testing.T) {
	dir := shortDir(t)
	names := []string{"HOME", "PATH"}
	startServer(t, Config{Dir: dir, EnvNames: names})
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpHello})
	if err != nil || resp.Error != "" {
		t.Fatalf("hello: %v %+v", err, resp)
	}
	if !slices.Equal(resp.EnvNames, names) {
		t.Fatalf("hello lists %v, want %v", resp.EnvNames, names)
	}
	// The same reply as a file, for clients that skip the round trip.
	b, err := os.ReadFile(filepath.Join(dir, api.HelloName))
	if err != nil {
		t.Fatal(err)
	}
	var file api.DaemonResponse
	if err := json.Unmarshal(b, &file); err != nil || file.PID != resp.PID || !slices.Equal(file.EnvNames, names) {
		t.Fatalf("%s = %s (%v), want pid %d and %v", api.HelloName, b, err, resp.PID, names)
	}
}

// The names that follow a settings file are read again only when the
// file's stamp changed, and then at the next request.
func TestDaemonHelloFollowsItsFile(t *testing.T) {
	dir := shortDir(t)
	conf := filepath.Join(t.TempDir(), "ptojit.conf")
	if err := os.WriteFile(conf, []byte("A"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reads := 0
	startServer(t, Config{Dir: dir, EnvNamesDepend: conf, EnvNamesFunc: func() []string {
		mu.Lock()
		reads++
		mu.Unlock()
		b, _ := os.ReadFile(conf)
		return []string{string(b)}
	}})
	hello := func() []string {
		t.Helper()
		resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpHello})
		if err != nil || resp.Error != "" {
			t.Fatalf("hello: %v %+v", err, resp)
		}
		return resp.EnvNames
	}
	for range 3 {
		if got := hello(); !slices.Equal(got, []string{"A"}) {
			t.Fatalf("hello lists %v, want [A]", got)
		}
	}
	mu.Lock()
	n := reads
	mu.Unlock()
	if n != 1 {
		t.Fatalf("the names were read %d times for an unchanged file, want once (at Listen)", n)
	}
	tmp := conf + ".new"
	if err := os.WriteFile(tmp, []byte("B"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, conf); err != nil {
		t.Fatal(err)
	}
	if got := hello(); !slices.Equal(got, []string{"B"}) {
		t.Fatalf("after the file changed hello lists %v, want [B]", got)
	}
}

// The hello file records the no-answer bound of the settings file with
// the names, for the same stamp, and again once the file changed.
func TestDaemonHelloRecordsTheNoAnswerBound(t *testing.T) {
	dir := shortDir(t)
	conf := filepath.Join(t.TempDir(), "ptojit.conf")
	if err := os.WriteFile(conf, []byte("45s"), 0o600); err != nil {
		t.Fatal(err)
	}
	bound := func() time.Duration {
		b, _ := os.ReadFile(conf)
		d, _ := time.ParseDuration(string(b))
		return d
	}
	startServer(t, Config{Dir: dir, EnvNamesDepend: conf, EnvNamesFunc: func() []string { return []string{"A"} }, NoAnswerFunc: bound})
	file := func() api.DaemonResponse {
		t.Helper()
		var h api.DaemonResponse
		b, err := os.ReadFile(filepath.Join(dir, api.HelloName))
		if err == nil {
			err = json.Unmarshal(b, &h)
		}
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := file(); h.NoAnswer != "45s" || h.DependsStamp != api.FileStamp(conf) {
		t.Fatalf("hello file %+v, want no_answer 45s for the file's stamp", h)
	}
	tmp := conf + ".new"
	if err := os.WriteFile(tmp, []byte("2m0s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, conf); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpHello}); err != nil {
		t.Fatal(err)
	}
	if h := file(); h.NoAnswer != "2m0s" || h.DependsStamp != api.FileStamp(conf) {
		t.Fatalf("hello file %+v after the change, want no_answer 2m0s for the new stamp", h)
	}
}
