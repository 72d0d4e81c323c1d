// Package daemon serves ptojit's engine over a Unix socket, so that one
// process owns the artifact store (Badger admits one process per database)
// and remembers installation identities between requests.
//
// The socket lives in a directory of mode 0700 owned by the daemon's user,
// and is itself 0600; the daemon also checks each peer's uid with
// SO_PEERCRED and refuses any other. A daemon holds an exclusive flock on
// daemon.lock in that directory for its whole life, so a socket file left by
// a killed daemon is recognised as stale (nobody holds the lock) and
// replaced. Requests are size-limited frames (api.ReadFrame); a malformed
// request gets an error reply and never stops the daemon.
//
// The daemon exits after an idle period with no request in flight, on an
// OpStop request, or on SIGTERM/SIGINT; in every case it stops accepting,
// lets in-flight requests finish for a grace period, then cancels them, so
// each gets a reply.
package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
)

// Handler answers one request. It must honour ctx: when the daemon shuts
// down past its grace period, ctx is canceled.
type Handler func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse

// Config configures a Server.
type Config struct {
	// Dir holds the socket, the lock and the log (api.DaemonDir).
	Dir string
	// Handler answers OpRun requests.
	Handler Handler
	// Status returns the daemon's state for OpStatus; it is marshalled to
	// JSON under the "status" field.
	Status func() any
	// Idle is how long the daemon waits with no request before it exits;
	// zero means never.
	Idle time.Duration
	// Grace is how long in-flight requests may run after shutdown starts
	// (default 30s).
	Grace time.Duration
	// Ready, when set, is written "ready\n" and closed once the socket
	// accepts connections; the process that started the daemon waits on it.
	Ready *os.File
	// Logf logs daemon events (default: discard).
	Logf func(format string, args ...any)
	// WaitLock makes Listen wait for a daemon that is exiting to release
	// the lock, instead of failing with ErrRunning. Auto-started daemons use
	// it: they are only started when the old one no longer answers.
	WaitLock bool
}

// Server is a running daemon. Its methods are safe for concurrent use.
type Server struct {
	cfg  Config
	ln   *net.UnixListener
	lock *os.File

	mu       sync.Mutex // guards inFlight, lastDone, closing, served, refused
	inFlight int
	lastDone time.Time
	closing  bool
	served   int64
	refused  int64
	started  time.Time

	wg       sync.WaitGroup // one per in-flight request
	stop     chan struct{}  // closed to begin shutdown
	stopOnce sync.Once
	reason   string // why shutdown began; written once before stop closes
}

// ErrRunning is returned by Listen when another daemon holds the lock.
var ErrRunning = errors.New("another ptojit daemon is running for this cache")

// peerUID returns the uid of the process at the other end of conn. Tests
// replace it to simulate a foreign peer.
var peerUID = func(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, credErr
	}
	return int(cred.Uid), nil
}

// PrepareDir creates dir with mode 0700 and checks that it belongs to this
// user and is not accessible to others.
func PrepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("daemon directory %s is not a directory owned by uid %d", filepath.Base(dir), os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// Listen takes the daemon lock and binds the socket. It returns ErrRunning
// when another live daemon holds the lock.
func Listen(cfg Config) (*Server, error) {
	if cfg.Grace == 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if err := PrepareDir(cfg.Dir); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, api.LockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX | syscall.LOCK_NB
	if cfg.WaitLock {
		how = syscall.LOCK_EX
	}
	if err := client.Flock(lock, how); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrRunning
		}
		return nil, err
	}
	sock := filepath.Join(cfg.Dir, api.SocketName)
	// We hold the lock, so any socket file is a dead daemon's.
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Close()
		return nil, err
	}
	old := syscall.Umask(0o177) // the socket is created 0600, never wider
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		lock.Close()
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	now := time.Now()
	return &Server{cfg: cfg, ln: ln, lock: lock, stop: make(chan struct{}), started: now, lastDone: now}, nil
}

// SetHandler sets the handler of OpRun requests; call it before Serve.
func (s *Server) SetHandler(h Handler) { s.cfg.Handler = h }

// SetStatus sets the reporter of OpStatus requests; call it before Serve.
func (s *Server) SetStatus(f func() any) { s.cfg.Status = f }

// Done is closed when shutdown begins.
func (s *Server) Done() <-chan struct{} { return s.stop }

// Shutdown begins an orderly shutdown; reason is logged and reported.
func (s *Server) Shutdown(reason string) {
	s.stopOnce.Do(func() {
		s.reason = reason
		close(s.stop)
	})
}

// Serve accepts requests until shutdown, then waits for in-flight requests
// (canceling them after the grace period) and releases the socket and lock.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	if s.cfg.Ready != nil {
		s.cfg.Ready.WriteString("ready\n")
		s.cfg.Ready.Close()
	}
	s.cfg.Logf("daemon %d listening", os.Getpid())

	go func() {
		tick := time.NewTicker(s.tickEvery())
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case sig := <-sigs:
				s.Shutdown("signal " + sig.String())
			case <-ctx.Done():
				s.Shutdown("context canceled")
			case <-tick.C:
				if s.idleFor() >= s.cfg.Idle && s.cfg.Idle > 0 {
					s.Shutdown("idle")
				}
			}
		}
	}()
	go func() {
		<-s.stop
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.ln.Close()
	}()

	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.stop:
			default:
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					continue
				}
				s.Shutdown("accept: " + err.Error())
			}
			break
		}
		if !s.begin() {
			conn.Close()
			break
		}
		go s.serveConn(ctx, conn)
	}

	// Let in-flight requests finish, then cancel the stragglers.
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.Grace):
		s.cfg.Logf("grace period over: canceling in-flight requests")
		cancel()
		<-done
	}
	s.cfg.Logf("daemon %d exiting: %s", os.Getpid(), s.reason)
	return nil
}

// Close releases the daemon lock. Call it after Serve returned and after
// everything the daemon owns (the store) is closed: "daemon stop" and a
// successor daemon wait for this lock, so nobody touches the store's files
// while it is still being closed.
func (s *Server) Close() error { return s.lock.Close() }

func (s *Server) tickEvery() time.Duration {
	if s.cfg.Idle > 0 && s.cfg.Idle < 4*time.Second {
		return s.cfg.Idle / 4
	}
	return time.Second
}

// begin counts a new request unless shutdown has begun.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.inFlight++
	s.wg.Add(1)
	return true
}

// end counts a finished connection; served is false for a refused peer.
func (s *Server) end(served bool) {
	s.mu.Lock()
	s.inFlight--
	if served {
		s.served++
	}
	s.lastDone = time.Now()
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) idleFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight > 0 {
		return 0
	}
	return time.Since(s.lastDone)
}

// Info is the server's own part of `daemon status`.
type Info struct {
	PID      int     `json:"pid"`
	Uptime   float64 `json:"uptime_seconds"`
	InFlight int     `json:"in_flight"`
	Served   int64   `json:"served"`
	Refused  int64   `json:"refused"`
	IdleExit float64 `json:"idle_exit_seconds"`
}

// Info reports the server's counters.
func (s *Server) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Info{PID: os.Getpid(), Uptime: time.Since(s.started).Seconds(), InFlight: s.inFlight,
		Served: s.served, Refused: s.refused, IdleExit: s.cfg.Idle.Seconds()}
}

func (s *Server) serveConn(ctx context.Context, conn *net.UnixConn) {
	served := true
	defer func() { s.end(served) }()
	defer conn.Close()
	reply := func(r *api.DaemonResponse) {
		r.Protocol = api.DaemonProtocol
		if err := api.WriteFrame(conn, r); err != nil {
			s.cfg.Logf("reply: %v", err)
		}
	}
	// No operation (status included) takes the daemon down.
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logf("panic serving a request: %v\n%s", r, debug.Stack())
			reply(&api.DaemonResponse{Error: fmt.Sprintf("internal error: %v", r), Exit: 1})
		}
	}()
	uid, err := peerUID(conn)
	if err != nil || uid != os.Getuid() {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		served = false
		s.cfg.Logf("refused a peer with uid %d (err %v)", uid, err)
		reply(&api.DaemonResponse{Error: "permission denied: the daemon serves only its own user", Exit: 1})
		return
	}
	var req api.DaemonRequest
	if err := api.ReadFrame(bufio.NewReader(conn), api.MaxDaemonRequest, &req); err != nil {
		reply(&api.DaemonResponse{Error: "bad request: " + err.Error(), Exit: 2})
		return
	}
	if req.Protocol != api.DaemonProtocol {
		reply(&api.DaemonResponse{Error: fmt.Sprintf("protocol %d not supported (daemon speaks %d)", req.Protocol, api.DaemonProtocol), Exit: 2})
		return
	}
	switch req.Op {
	case api.OpPing:
		reply(&api.DaemonResponse{PID: os.Getpid()})
	case api.OpStatus:
		var st any = s.Info()
		if s.cfg.Status != nil {
			st = s.cfg.Status()
		}
		b, err := json.Marshal(st)
		if err != nil {
			reply(&api.DaemonResponse{Error: err.Error(), Exit: 1})
			return
		}
		reply(&api.DaemonResponse{PID: os.Getpid(), Status: b})
	case api.OpStop:
		reply(&api.DaemonResponse{PID: os.Getpid()})
		s.Shutdown("stop requested")
	case api.OpRun:
		resp := s.run(ctx, &req)
		reply(resp)
	default:
		reply(&api.DaemonResponse{Error: fmt.Sprintf("unknown operation %q", req.Op), Exit: 2})
	}
}

// run calls the handler, turning a panic into an error reply so one bad
// request never takes the daemon down.
func (s *Server) run(ctx context.Context, req *api.DaemonRequest) (resp *api.DaemonResponse) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logf("panic serving %v: %v", req.Args, r)
			resp = &api.DaemonResponse{Error: fmt.Sprintf("internal error: %v", r), Exit: 1}
		}
	}()
	if s.cfg.Handler == nil {
		return &api.DaemonResponse{Error: "no handler", Exit: 1}
	}
	return s.cfg.Handler(ctx, req)
}
