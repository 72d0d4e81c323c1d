package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
)

// The roles this test binary plays when TestKilledStarterStartsNoSecondDaemon
// runs it again (startRoleEnv names the role).
const (
	startRoleEnv = "PTOJIT_DAEMON_TEST_ROLE"
	startDirEnv  = "PTOJIT_DAEMON_TEST_DIR"
	startFIFOEnv = "PTOJIT_DAEMON_TEST_FIFOS" // "reached:gate"
)

func TestMain(m *testing.M) {
	switch os.Getenv(startRoleEnv) {
	case "":
		os.Exit(m.Run())
	case "client":
		// A client that starts the first daemon (and is killed meanwhile).
		err := client.EnsureDaemon(client.Start{Dir: os.Getenv(startDirEnv), Engine: os.Args[0],
			Env: append(os.Environ(), startRoleEnv+"=daemon")})
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(3)
	case "daemon":
		os.Exit(runTestDaemon())
	case "second":
		// A second daemon: it must never be started. It leaves a mark and
		// exits without listening.
		os.WriteFile(filepath.Join(os.Getenv(startDirEnv), "..", "second-started"), nil, 0o600)
		os.Exit(1)
	}
	os.Exit(2)
}

// fifoWait is how long either side of the FIFO hand-over waits before it
// gives up (a process left waiting would outlive the test).
const fifoWait = 30 * time.Second

// signalFIFO writes a byte to the FIFO at p and returns it open: closed
// before the reader has the byte, it would take the byte with it.
func signalFIFO(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR, 0) // opening for both never blocks
	if err != nil {
		return nil, err
	}
	if _, err := f.Write([]byte{1}); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// awaitFIFO reads a byte from the FIFO at p within fifoWait.
func awaitFIFO(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	f.SetReadDeadline(time.Now().Add(fifoWait))
	_, err = f.Read(make([]byte, 1))
	return err
}

// runTestDaemon is a daemon started by a client (EnsureDaemon's descriptors
// 3 and 4) that stops between taking its lock and listening: it signals on
// the "reached" FIFO (the test learns it got there), then waits on the
// "gate" FIFO (the test lets it go on), and exits if the test never does.
func runTestDaemon() int {
	fifos := strings.Split(os.Getenv(startFIFOEnv), ":")
	beforeListen = func() {
		if _, err := signalFIFO(fifos[0]); err != nil { // open while the process lives
			os.Exit(4)
		}
		if err := awaitFIFO(fifos[1]); err != nil {
			os.Exit(5)
		}
	}
	srv, err := Listen(Config{Dir: os.Getenv(startDirEnv), WaitLock: true, LockWait: 20 * time.Second,
		Ready: os.NewFile(3, "ready"), StartLock: os.NewFile(uintptr(client.StartLockFD), api.StartLockName),
		Handler: echoHandler, Idle: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	defer srv.Close()
	srv.Serve(context.Background())
	return 0
}

// blockedOn reports whether some process waits for the flock of path
// (a "->" line of /proc/locks for its inode).
func blockedOn(t *testing.T, path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	ino := strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Skip("no /proc/locks")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 6 && fields[1] == "->" && strings.HasSuffix(fields[6], ":"+ino) {
			return true
		}
	}
	return false
}

// A client killed while the daemon it started has taken the daemon lock
// but does not listen yet must not let the next client start a second
// daemon: that one would wait for the first one's lock while the first
// serves, hanging the client that started it, and then every "daemon stop".
func TestKilledStarterStartsNoSecondDaemon(t *testing.T) {
	guard(t)
	dir := shortDir(t)
	fifoDir := t.TempDir()
	reached, gate := filepath.Join(fifoDir, "reached"), filepath.Join(fifoDir, "gate")
	for _, p := range []string{reached, gate} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), startDirEnv+"="+dir, startFIFOEnv+"="+reached+":"+gate)
	starter := exec.Command(os.Args[0], "-test.run=^$")
	starter.Env = append(env, startRoleEnv+"=client")
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	// "reached" is signalled once the daemon is between its lock and its
	// socket.
	if err := awaitFIFO(reached); err != nil {
		t.Fatalf("the first daemon did not get between its lock and its socket: %v", err)
	}
	starter.Process.Kill()
	starter.Wait()
	t.Cleanup(func() {
		client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpStop})
		client.AwaitDaemonExit(dir)
	})

	done := make(chan error, 1)
	go func() {
		done <- client.EnsureDaemon(client.Start{Dir: dir, Engine: os.Args[0], Env: append(env, startRoleEnv+"=second")})
	}()
	var err error
	finished := false
	waitUntil(t, "the second client to wait for the start lock", func() bool {
		select {
		case err = <-done:
			finished = true
			return true
		default:
			return blockedOn(t, filepath.Join(dir, api.StartLockName))
		}
	})
	// Let the first daemon listen.
	g, gerr := signalFIFO(gate)
	if gerr != nil {
		t.Fatal(gerr)
	}
	defer g.Close()
	if !finished {
		err = <-done
	}
	if err != nil {
		t.Fatalf("second client: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "second-started")); err == nil {
		t.Fatal("a second daemon was started while the first one was starting")
	}
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"served"}})
	if err != nil || string(resp.Stdout) != "served" {
		t.Fatalf("the first daemon does not serve: %v %+v", err, resp)
	}
}

// A daemon that must wait for another's lock waits a bounded time, and not
// at all when that daemon answers.
func TestDaemonLockWaitIsBounded(t *testing.T) {
	guard(t)
	dir := shortDir(t)
	if err := PrepareDir(dir); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(filepath.Join(dir, api.LockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Flock(held, syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, err = Listen(Config{Dir: dir, WaitLock: true, LockWait: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "was not released within 50ms") {
		t.Fatalf("Listen with a held lock: %v, want a bounded wait", err)
	}
	held.Close()
	startServer(t, Config{Dir: dir})
	start := time.Now()
	_, err = Listen(Config{Dir: dir, WaitLock: true, LockWait: time.Hour})
	if !errors.Is(err, ErrRunning) {
		t.Fatalf("Listen beside a serving daemon: %v, want ErrRunning", err)
	}
	t.Logf("refused in %v", time.Since(start))
}

// A daemon started without a start lock (by hand), waiting for the lock of
// one that is starting too, gives way once that one answers.
func TestDaemonLockWaitGivesWayToAStartingDaemon(t *testing.T) {
	guard(t)
	dir := shortDir(t)
	if err := PrepareDir(dir); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	beforeListen = func() { close(entered); <-release }
	first := make(chan error, 1)
	var s *Server
	go func() {
		var err error
		s, err = Listen(Config{Dir: dir, Handler: echoHandler})
		first <- err
	}()
	<-entered
	beforeListen = func() {}
	second := make(chan error, 1)
	go func() {
		_, err := Listen(Config{Dir: dir, WaitLock: true, LockWait: time.Hour})
		second <- err
	}()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { s.Serve(context.Background()); s.Close(); close(served) }()
	t.Cleanup(func() { s.Shutdown("test over"); <-served })
	if err := <-second; !errors.Is(err, ErrRunning) {
		t.Fatalf("second daemon: %v, want ErrRunning once the first answers", err)
	}
}

// A request whose client closes the connection (its process ended) is
// canceled with ErrClientGone; one whose client only shut down its writing
// side still gets its reply.
func TestDaemonCancelsRequestOfGoneClient(t *testing.T) {
	entered := make(chan struct{}, 1)
	causes := make(chan error, 1)
	release := make(chan struct{})
	watched := make(chan bool, 2)
	hook := func(gone bool) { watched <- gone }
	peerWatched.Store(&hook)
	t.Cleanup(func() { peerWatched.Store(nil) })
	dir := shortDir(t)
	startServer(t, Config{Dir: dir, Handler: func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
		entered <- struct{}{}
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return &api.DaemonResponse{Error: "canceled", Exit: 1}
		case <-release:
			return &api.DaemonResponse{Stdout: []byte("done")}
		}
	}})
	frame, err := api.MarshalFrame(&api.DaemonRequest{Protocol: api.DaemonProtocol, Op: api.OpRun, Args: []string{"x"}}, api.MaxDaemonRequest)
	if err != nil {
		t.Fatal(err)
	}
	dial := func() *net.UnixConn {
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: api.SocketPath(dir), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		<-entered
		return c
	}

	// A client that goes away.
	dial().Close()
	if cause := <-causes; !errors.Is(cause, ErrClientGone) {
		t.Fatalf("the request of a gone client ended with %v, want ErrClientGone", cause)
	}
	if gone := <-watched; !gone {
		t.Fatal("the watch did not see the client go")
	}

	// A client that half-closes and waits for its reply.
	c := dial()
	defer c.Close()
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if gone := <-watched; gone {
		t.Fatal("a half-closed client was taken for gone")
	}
	close(release)
	// The watch begins after ReplyWait, when the accepted frame is due:
	// interim frames may come before the reply.
	if _, resp := readFrames(t, c, bufio.NewReader(c)); string(resp.Stdout) != "done" {
		t.Fatalf("half-closed client: %+v, want its reply", resp)
	}
	select {
	case cause := <-causes:
		t.Fatalf("the half-closed client's request was canceled: %v", cause)
	default:
	}
}
