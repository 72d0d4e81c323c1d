package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
)

// readFrames reads frames from r until a reply (no Frame) and returns the
// interim frames and the reply.
func readFrames(t *testing.T, c net.Conn, r *bufio.Reader) ([]api.DaemonResponse, api.DaemonResponse) {
	t.Helper()
	var interim []api.DaemonResponse
	for {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		var resp api.DaemonResponse
		if err := api.ReadFrame(r, api.MaxDaemonResponse, &resp); err != nil {
			t.Fatalf("after %d interim frames: %v", len(interim), err)
		}
		if resp.Frame == "" {
			return interim, resp
		}
		interim = append(interim, resp)
	}
}

func send(t *testing.T, c net.Conn, req *api.DaemonRequest) {
	t.Helper()
	if req.Protocol == 0 {
		req.Protocol = api.DaemonProtocol
	}
	if err := api.WriteFrame(c, req); err != nil {
		t.Fatal(err)
	}
}

// TestProtocol2QuickReplyIsOneFrame: a reply ready at once is the only
// frame, and the connection carries the next request.
func TestProtocol2QuickReplyIsOneFrame(t *testing.T) {
	dir := shortDir(t)
	s, _ := startServer(t, Config{Dir: dir, ReplyWait: time.Minute})
	c := rawConn(t, dir)
	r := bufio.NewReader(c)
	for i := range 5 {
		send(t, c, &api.DaemonRequest{Op: api.OpRun, Args: []string{"hit", fmt.Sprint(i)}})
		interim, reply := readFrames(t, c, r)
		if len(interim) != 0 || string(reply.Stdout) != fmt.Sprintf("hit %d", i) {
			t.Fatalf("request %d: %d interim frames, reply %+v", i, len(interim), reply)
		}
	}
	send(t, c, &api.DaemonRequest{Op: api.OpPing})
	if _, reply := readFrames(t, c, r); reply.PID != os.Getpid() || reply.Doing != "" {
		t.Fatalf("ping on the same connection: %+v", reply)
	}
	if i := s.Info(); i.Served != 6 {
		t.Fatalf("served %d, want 6", i.Served)
	}
}

// TestProtocol2ProgressOutlastsNoAnswerBound: a request that runs many
// no-answer bounds long is answered, because every progress frame
// restarts the client's bound; the frames carry what the handler reports.
// The handler is released by the client's count of progress frames, not
// by time: 250 frames at ProgressEvery while the client's bound is 40 of
// them (room for a loaded machine's pauses): 6 bounds, more than the 4 of
// a 2-minute compile against the 30 s bound.
func TestProtocol2ProgressOutlastsNoAnswerBound(t *testing.T) {
	dir := shortDir(t)
	const every = 10 * time.Millisecond
	const frames = 250
	const bound = 40 * every
	release := make(chan struct{})
	startServer(t, Config{Dir: dir, ReplyWait: time.Millisecond, ProgressEvery: every,
		Handler: func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
			Progress(ctx, "compiling kernel_0", 0.5)
			select {
			case <-release:
				return &api.DaemonResponse{Stdout: []byte("built")}
			case <-ctx.Done():
				return api.Failure(api.KindShutdown, 1, nil, "canceled")
			}
		}})
	var seen []api.DaemonResponse
	var once sync.Once
	start := time.Now()
	resp, err := client.CallWith(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"build"}},
		client.Options{NoAnswer: bound, Progress: func(f *api.DaemonResponse) {
			seen = append(seen, *f)
			if len(seen) == frames {
				once.Do(func() { close(release) })
			}
		}})
	took := time.Since(start)
	if err != nil || string(resp.Stdout) != "built" {
		t.Fatalf("after %d frames in %s: %v %+v", len(seen), took, err, resp)
	}
	if seen[0].Frame != api.FrameAccepted {
		t.Fatalf("first frame %+v, want accepted", seen[0])
	}
	for _, f := range seen[1:] {
		if f.Frame != api.FrameProgress || f.Doing != "compiling kernel_0" || f.Fraction == nil || *f.Fraction != 0.5 {
			t.Fatalf("progress frame %+v", f)
		}
	}
	if took < bound {
		t.Fatalf("the request took %s, not longer than the bound %s: the test proves nothing", took, bound)
	}
	t.Logf("answered after %d frames, %s, %.1f times the no-answer bound", len(seen), took, float64(took)/float64(bound))
}

// TestProtocol2NoAnswer: a daemon that accepted the request and then sends
// nothing (a handler that never returns, with frames held back past the
// bound) is reported, naming its pid and log.
func TestProtocol2NoAnswer(t *testing.T) {
	dir := shortDir(t)
	startServer(t, Config{Dir: dir, ReplyWait: time.Hour,
		Handler: func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
			<-ctx.Done()
			return api.Failure(api.KindShutdown, 1, nil, "canceled")
		}})
	_, err := client.CallWith(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"x"}},
		client.Options{NoAnswer: 100 * time.Millisecond})
	var na *client.NotAnsweringError
	if !errors.As(err, &na) || na.PID != os.Getpid() || na.Log == "" {
		t.Fatalf("got %v, want a NotAnsweringError naming pid %d", err, os.Getpid())
	}
}

// TestProtocol2OldClient: a protocol-1 request gets one reply, of kind
// protocol, naming both versions, in the frame shape of both.
func TestProtocol2OldClient(t *testing.T) {
	dir := shortDir(t)
	startServer(t, Config{Dir: dir})
	c := rawConn(t, dir)
	send(t, c, &api.DaemonRequest{Protocol: 1, Op: api.OpPing})
	_, reply := readFrames(t, c, bufio.NewReader(c))
	if reply.Kind != api.KindProtocol || reply.Protocol != api.DaemonProtocol ||
		reply.Data["daemon"] != "2" || reply.Data["client"] != "1" || reply.Exit == 0 {
		t.Fatalf("reply to a protocol-1 ping: %+v", reply)
	}
	if !closedWithin(c, 5*time.Second) {
		t.Fatal("the connection stayed open after the protocol error")
	}
}

// TestProtocol2IdleBound: between requests the daemon waits IdleTimeout,
// not the first-byte deadline, and then closes the connection.
func TestProtocol2IdleBound(t *testing.T) {
	dir := shortDir(t)
	startServer(t, Config{Dir: dir, ReadTimeout: time.Hour, IdleTimeout: 50 * time.Millisecond})
	c := rawConn(t, dir)
	r := bufio.NewReader(c)
	send(t, c, &api.DaemonRequest{Op: api.OpPing})
	readFrames(t, c, r)
	start := time.Now()
	if !closedWithin(c, 10*time.Second) {
		t.Fatal("an idle connection stayed open past the idle bound")
	}
	t.Logf("idle connection closed %s after its reply", time.Since(start))
}

// TestProtocol2SilentConnectionsClosed: 3,000 connections that never send
// a byte are all closed at the first-byte deadline, and the daemon goes
// on serving.
func TestProtocol2SilentConnectionsClosed(t *testing.T) {
	const n = 3000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2*n+200 {
		t.Skipf("descriptor limit %d is below the %d this test needs", lim.Cur, 2*n+200)
	}
	dir := shortDir(t)
	const deadline = 300 * time.Millisecond
	s, _ := startServer(t, Config{Dir: dir, ReadTimeout: deadline, MaxConns: 2 * n})
	conns := make([]net.Conn, 0, n)
	start := time.Now()
	for range n {
		c, err := net.Dial("unix", api.SocketPath(dir))
		if err != nil {
			t.Fatalf("after %d connections: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	opened := time.Since(start)
	var open atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !closedWithin(c, opened+deadline+10*time.Second) {
				open.Add(1)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if o := open.Load(); o != 0 {
		t.Fatalf("%d of %d silent connections still open after %s", o, n, took)
	}
	waitUntil(t, "the daemon to forget them", func() bool { return s.Info().Conns == 0 })
	if resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing}); err != nil || resp.PID == 0 {
		t.Fatalf("ping after the silent connections: %v", err)
	}
	t.Logf("%d silent connections opened in %s, all closed %s after the first (deadline %s)", n, opened, took, deadline)
}

// TestProtocol2ConnectionLimit: connections over MaxConns are refused at
// once, with a reply of kind refused, and counted.
func TestProtocol2ConnectionLimit(t *testing.T) {
	dir := shortDir(t)
	const max = 8
	s, _ := startServer(t, Config{Dir: dir, MaxConns: max, ReadTimeout: time.Hour})
	for range max {
		rawConn(t, dir)
	}
	waitUntil(t, "the connections to be accepted", func() bool { return s.Info().Conns == max })
	for i := range 3 {
		c := rawConn(t, dir)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var resp api.DaemonResponse
		if err := api.ReadFrame(c, api.MaxDaemonResponse, &resp); err != nil || resp.Kind != api.KindRefused || resp.Data["max_connections"] != "8" {
			t.Fatalf("connection %d over the limit: %v %+v", max+i+1, err, resp)
		}
		if !closedWithin(c, 5*time.Second) {
			t.Fatal("a refused connection stayed open")
		}
	}
	if i := s.Info(); i.RefusedConns != 3 {
		t.Fatalf("refused connections counted %d, want 3", i.RefusedConns)
	}
}

// TestProtocol2StrayBytesKeepHangUpWatch: bytes a client sends after its
// request do not end the watch for its hang-up: closing the connection
// still cancels the request in flight.
func TestProtocol2StrayBytesKeepHangUpWatch(t *testing.T) {
	dir := shortDir(t)
	entered := make(chan struct{})
	cause := make(chan error, 1)
	startServer(t, Config{Dir: dir, Handler: func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
		close(entered)
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
		case <-time.After(20 * time.Second):
			cause <- errors.New("the request was not canceled within 20s of its client's hang-up")
		}
		return &api.DaemonResponse{}
	}})
	c := rawConn(t, dir)
	send(t, c, &api.DaemonRequest{Op: api.OpRun, Args: []string{"x"}})
	<-entered
	if _, err := c.Write([]byte("stray bytes after the request")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-cause; !errors.Is(err, ErrClientGone) {
		t.Fatalf("the request's context ended with %v, want ErrClientGone", err)
	}
}

// TestProtocol2OpeningDaemon: a daemon whose handler is not set yet (its
// store is opening) answers pings saying so, and holds run requests with
// frames saying so until the handler is set.
func TestProtocol2OpeningDaemon(t *testing.T) {
	guard(t)
	dir := shortDir(t)
	s, err := Listen(Config{Dir: dir, ReplyWait: time.Millisecond, ProgressEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { s.Serve(context.Background()); s.Close(); close(finished) }()
	t.Cleanup(func() { s.Shutdown("test over"); <-finished })
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing})
	if err != nil || resp.Doing != opening {
		t.Fatalf("ping of an opening daemon: %v %+v", err, resp)
	}
	var frames atomic.Int64
	set := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		resp, err := client.CallWith(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"x"}},
			client.Options{NoAnswer: 10 * time.Second, Progress: func(f *api.DaemonResponse) {
				if f.Doing != opening {
					got <- fmt.Errorf("frame before the handler: %+v", f)
				}
				if frames.Add(1) == 3 {
					close(set)
				}
			}})
		if err == nil && string(resp.Stdout) != "x" {
			err = fmt.Errorf("reply %+v", resp)
		}
		got <- err
	}()
	<-set
	s.SetHandler(echoHandler)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestProtocol2MeasuredProgress: a handler that reports a fraction done,
// even from after the accepted frame on, gets progress frames every
// progressMeasured, however long ProgressEvery (an hour here), and only
// frames with the fraction: the handler is released by the client's third
// progress frame, and a daemon that held them back for ProgressEvery
// would leave the call to fail at its no-answer bound.
func TestProtocol2MeasuredProgress(t *testing.T) {
	dir := shortDir(t)
	accepted, release := make(chan struct{}), make(chan struct{})
	startServer(t, Config{Dir: dir, ReplyWait: time.Millisecond, ProgressEvery: time.Hour,
		Handler: func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
			<-accepted
			Progress(ctx, "verifying blobs", 0.25)
			select {
			case <-release:
				return &api.DaemonResponse{Stdout: []byte("verified")}
			case <-ctx.Done():
				return api.Failure(api.KindShutdown, 1, nil, "canceled")
			}
		}})
	var progress int
	resp, err := client.CallWith(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"cache", "verify"}},
		client.Options{NoAnswer: 30 * time.Second, Progress: func(f *api.DaemonResponse) {
			if f.Frame == api.FrameAccepted {
				close(accepted)
				return
			}
			if f.Fraction == nil || *f.Fraction != 0.25 {
				t.Errorf("progress frame %+v, want the fraction 0.25", f)
			}
			if progress++; progress == 3 {
				close(release)
			}
		}})
	if err != nil || string(resp.Stdout) != "verified" {
		t.Fatalf("after %d progress frames: %v %+v", progress, err, resp)
	}
}
