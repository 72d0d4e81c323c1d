// Package daemon is ptojit's socket server: it serves a handler that the
// engine injects over a Unix socket, one daemon per cache directory, so that
// one process owns the artifact store (Badger admits one process per
// database) and keeps its memos between requests. It knows nothing of
// builds.
//
// The socket lives in a directory of mode 0700 owned by the daemon's user,
// and is itself 0600; the daemon also checks each peer's uid with
// SO_PEERCRED and refuses any other. A daemon holds an exclusive flock on
// daemon.lock in that directory for its whole life, so a socket file left by
// a killed daemon is recognised as stale (nobody holds the lock) and
// replaced. Requests are size-limited frames (api.ReadFrame); a malformed
// request gets an error reply and never stops the daemon.
//
// It speaks protocol 2 (package api): a connection carries requests in
// turn; a reply ready within Config.ReplyWait is the only frame, otherwise
// an accepted frame goes out at once and a progress frame every
// Config.ProgressEvery (a handler reports what it does with Progress) until
// the reply. Until the engine sets the handler (its store is opening) pings
// say so and run requests wait for it with such frames.
//
// Connections are bounded: the first request must be read within a
// deadline from the connection's accept (a connection that sends nothing is
// closed then), the next ones must begin within an idle bound
// (Config.IdleTimeout) and then be read within the same deadline, and each
// reply written within another; at most Config.MaxConns are open (one more
// is refused at once and counted); the bytes of the requests being read at
// once are limited (Config.FrameBudget), and a request waits for its share
// before its bytes are allocated. A connection is in flight only while a
// request is, so a client that connects and sends nothing keeps the daemon
// neither from its idle exit nor from stopping.
//
// A request's context is canceled with ErrClientGone when its client
// closes the connection before the reply (the client process ended): a
// client sends its next request only after the reply, so until then the
// connection turns readable only then. Bytes a client sends meanwhile are
// dropped without ending that watch, and the connection is closed after
// the reply. A client that merely shuts down its writing side is still
// answered.
//
// The daemon exits after an idle period with no request in flight, on an
// OpStop request, or on SIGTERM/SIGINT; in every case it stops accepting,
// closes the connections whose request is not read yet, lets in-flight
// requests finish for a grace period, then cancels them, so each gets a
// reply; what is left a moment after that is closed, and Serve returns.
package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/filesys/durable"
)

// Handler answers one request. It must honour ctx: when the daemon shuts
// down past its grace period, ctx is canceled.
type Handler func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse

// Config configures a Server.
type Config struct {
	// Dir holds the socket, the lock and the log (client.DaemonDir).
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
	// it: they are only started when the old one no longer answers. A
	// holder that answers a ping is serving, not exiting: Listen then
	// returns ErrRunning at once.
	WaitLock bool
	// LockWait bounds the wait of WaitLock for an exiting daemon's lock
	// (default DefaultLockWait): a daemon that never lets go of its lock
	// fails this one's start with an error naming it, instead of hanging
	// the client that started it.
	LockWait time.Duration
	// StartLock is the daemon directory's start lock (api.StartLockName)
	// when the process that started this daemon holds it and shares it
	// (client.StartLockFD). Listen keeps it until the socket accepts
	// connections and then closes it, so that a client waiting for it
	// finds this daemon answering, even when the client that started the
	// daemon was killed meanwhile.
	StartLock *os.File
	// ReadTimeout bounds the reading of a request, counted from the
	// connection's accept (default 10s); WriteTimeout bounds the writing of
	// each reply (default 10s).
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a connection
	// that carried one already (protocol 2 keeps connections; default
	// DefaultIdleTimeout); once its first byte is there, the rest of the
	// request has ReadTimeout.
	IdleTimeout time.Duration
	// MaxConns bounds the open connections (default DefaultMaxConns): one
	// over it is answered with a refusal (KindRefused) and closed at once,
	// and counted in Info.RefusedConns.
	MaxConns int
	// ReplyWait and ProgressEvery are api.ReplyWait and api.ProgressEvery
	// unless set (tests shorten them).
	ReplyWait     time.Duration
	ProgressEvery time.Duration
	// FrameBudget bounds the bytes of the large requests (over SmallFrame)
	// being read at once (default 2*api.MaxDaemonRequest, at least
	// api.MaxDaemonRequest). Small requests have a budget of their own,
	// SmallFrameBudget, so large ones never hold them up.
	FrameBudget int64
	// EnvNames answers OpHello: the environment variables clients send.
	EnvNames []string
	// EnvNamesFunc, when set, answers OpHello instead of EnvNames (the
	// names may follow a settings file); with EnvNamesDepend set it is
	// called again only when that file's stamp (api.FileStamp) changed.
	EnvNamesFunc func() []string
	// EnvNamesDepend is the file EnvNamesFunc reads (the settings file):
	// the hello file records its FileStamp, so that a client knows when
	// the names it read there may be out of date.
	EnvNamesDepend string
	// NoAnswerFunc, when set, gives the no-answer bound the settings file
	// EnvNamesDepend sets (its daemon_timeout): the hello file records it
	// beside the names, so that a client reads it there, under the same
	// stamp, instead of parsing the settings file itself.
	NoAnswerFunc func() time.Duration
}

// Defaults of Config.
const (
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultGrace        = 30 * time.Second
	DefaultIdleTimeout  = 60 * time.Second
	DefaultMaxConns     = 1024
	DefaultLockWait     = DefaultGrace + 30*time.Second
	DefaultFrameBudget  = 2 * api.MaxDaemonRequest
	// SmallFrame is the largest request that SmallFrameBudget covers: a
	// build request is a few KiB, its environment included.
	SmallFrame       = 1 << 20
	SmallFrameBudget = 64 << 20
)

// afterCancel is how long shutdown waits, once the grace period is over
// and the stragglers' context canceled, for their replies before it closes
// their connections and returns.
var afterCancel = 2 * time.Second

// Server is a running daemon. Its methods are safe for concurrent use.
type Server struct {
	cfg  Config
	ln   *net.UnixListener
	lock *os.File
	// accept accepts the next connection: ln.AcceptUnix, which tests
	// replace to inject failures.
	accept func() (*net.UnixConn, error)

	helloMu    sync.Mutex // guards helloNames, helloStamp
	helloNames []string   // the names api.HelloName holds
	helloStamp string     // and the stamp of EnvNamesDepend it records

	mu       sync.Mutex             // guards the fields up to wg
	conns    map[*net.UnixConn]bool // open connections; true once in flight
	inFlight int
	lastDone time.Time
	closing  bool
	served   int64
	refused  int64
	overConn int64 // connections refused over MaxConns
	started  time.Time

	wg        sync.WaitGroup // one per in-flight request
	connWG    sync.WaitGroup // one per open connection
	stop      chan struct{}  // closed to begin shutdown
	readyCh   chan struct{}  // closed once the handler is set
	startLock *os.File       // the start lock, closed once Serve accepts
	stopOnce  sync.Once
	reason    string // why shutdown began; written once before stop closes

	// closed is canceled when shutdown begins: it ends the waits for
	// frame budget.
	closed      context.Context
	cancelClose context.CancelFunc
	large       budget // requests over SmallFrame
	small       budget // the others
}

// ErrRunning is returned by Listen when another daemon holds the lock.
var ErrRunning = errors.New("another ptojit daemon is running for this cache")

// peerUID returns the uid of the process at the other end of conn. Tests
// replace it to simulate a foreign peer.
var peerUID = client.PeerUID

// PrepareDir creates dir with mode 0700 (client.MakeDir: one directory at
// a time, nothing made through a directory or link another user controls),
// tightens it to 0700 when it is this user's own directory with a looser
// mode, and checks it as the client does (client.CheckDir): owned by this
// user, and no directory above it writable by another.
func PrepareDir(dir string) error {
	err := client.MakeDir(dir)
	var u *client.UntrustedError
	abs, aerr := filepath.Abs(dir)
	if !errors.As(err, &u) || aerr != nil || u.Path != abs {
		return err
	}
	fi, lerr := os.Lstat(dir)
	if lerr != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() {
		return err
	}
	if cerr := os.Chmod(dir, 0o700); cerr != nil {
		return err
	}
	return client.CheckDir(dir)
}

// Listen takes the daemon lock and binds the socket. It returns ErrRunning
// when another live daemon holds the lock.
func Listen(cfg Config) (*Server, error) {
	cfg = withDefaults(cfg)
	startLock := cfg.StartLock
	defer func() {
		if startLock != nil {
			startLock.Close() // Listen failed
		}
	}()
	if err := PrepareDir(cfg.Dir); err != nil {
		return nil, err
	}
	lock, err := takeLock(cfg)
	if err != nil {
		return nil, err
	}
	beforeListen()
	sock := filepath.Join(cfg.Dir, api.SocketName)
	// We hold the lock, so any socket file is a dead daemon's.
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Close()
		return nil, err
	}
	names := cfg.EnvNames
	if cfg.EnvNamesFunc != nil {
		names = cfg.EnvNamesFunc()
	}
	stamp := api.FileStamp(cfg.EnvNamesDepend)
	if err := writeHello(cfg.Dir, names, noAnswerOf(cfg), cfg.EnvNamesDepend, stamp); err != nil {
		lock.Close()
		return nil, err
	}
	// The socket is made 0600 by a chmod, not by the umask: the umask is
	// the whole process's, and a file another goroutine created meanwhile
	// would lose its permissions. Until the chmod, the 0700 directory (and
	// SO_PEERCRED) keep everyone else out.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		lock.Close()
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		lock.Close()
		return nil, err
	}
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	now := time.Now()
	s := &Server{cfg: cfg, ln: ln, lock: lock, helloNames: names, helloStamp: stamp, stop: make(chan struct{}), started: now, lastDone: now,
		conns: map[*net.UnixConn]bool{},
		large: budget{limit: cfg.FrameBudget, freed: make(chan struct{})},
		small: budget{limit: SmallFrameBudget, freed: make(chan struct{})}}
	s.closed, s.cancelClose = context.WithCancel(context.Background())
	s.readyCh = make(chan struct{})
	if cfg.Handler != nil {
		close(s.readyCh)
	}
	s.startLock, startLock = startLock, nil // Serve closes it once it accepts
	return s, nil
}

// beforeListen runs between taking the lock and binding the socket; tests
// replace it to hold a daemon there.
var beforeListen = func() {}

// takeLock takes the daemon lock of cfg.Dir. With cfg.WaitLock it waits
// for a holder that is exiting, at most cfg.LockWait.
func takeLock(cfg Config) (*os.File, error) {
	path := filepath.Join(cfg.Dir, api.LockName)
	lock, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	// The holder is exiting (wait for it), or serving (it answers a ping:
	// this daemon is not needed), or starting: a daemon that was not given
	// a start lock by its client does not keep others from starting while
	// it binds its socket, so the wait keeps asking.
	deadline := time.Now().Add(cfg.LockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err = client.Flock(lock, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || !cfg.WaitLock || client.Ping(cfg.Dir) {
			break
		}
		if time.Now().After(deadline) {
			holder, _ := os.ReadFile(path)
			lock.Close()
			return nil, fmt.Errorf("the daemon lock %s is held (by pid %s) and was not released within %s: that daemon neither answers nor exits; see %s",
				path, bytes.TrimSpace(holder), cfg.LockWait, filepath.Join(cfg.Dir, api.LogName))
		}
		time.Sleep(pause)
	}
	if err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrRunning
		}
		return nil, err
	}
	return lock, nil
}

// withDefaults returns cfg with the default of each bound it leaves 0 and
// a Logf that discards when it has none.
func withDefaults(cfg Config) Config {
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.ReplyWait == 0 {
		cfg.ReplyWait = api.ReplyWait
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = api.ProgressEvery
	}
	if cfg.FrameBudget == 0 {
		cfg.FrameBudget = DefaultFrameBudget
	}
	cfg.FrameBudget = max(cfg.FrameBudget, api.MaxDaemonRequest)
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.LockWait == 0 {
		cfg.LockWait = DefaultLockWait
	}
	return cfg
}

// noAnswerOf is the bound cfg.NoAnswerFunc gives, 0 without one.
func noAnswerOf(cfg Config) time.Duration {
	if cfg.NoAnswerFunc == nil {
		return 0
	}
	return cfg.NoAnswerFunc()
}

// writeHello writes the OpHello reply of this daemon to api.HelloName in
// dir, through durable.WriteFile (a reader sees the old reply or the new
// one, never a part), with the settings' no-answer bound (none when 0).
func writeHello(dir string, names []string, noAnswer time.Duration, depends, stamp string) error {
	r := &api.DaemonResponse{Protocol: api.DaemonProtocol, PID: os.Getpid(), EnvNames: names}
	if noAnswer > 0 {
		r.NoAnswer = noAnswer.String()
	}
	if depends != "" {
		r.Depends, r.DependsStamp = depends, stamp
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, api.HelloName), b, 0o600)
}

// hello returns the variable names clients send, and rewrites
// api.HelloName when they or EnvNamesDepend changed (EnvNamesFunc follows the settings
// file's pass_env), so that a client reading the file sends them from its
// next request on.
func (s *Server) hello() []string {
	if s.cfg.EnvNamesFunc == nil {
		return s.cfg.EnvNames
	}
	s.helloMu.Lock()
	defer s.helloMu.Unlock()
	// The stamp is taken before the names are read: a change between the
	// two leaves a stamp that no longer matches, and clients ask again.
	stamp := api.FileStamp(s.cfg.EnvNamesDepend)
	if stamp == s.helloStamp && s.cfg.EnvNamesDepend != "" {
		// The names follow the file alone: unchanged, it is not read.
		return s.helloNames
	}
	names := s.cfg.EnvNamesFunc()
	if !slices.Equal(names, s.helloNames) || stamp != s.helloStamp {
		if err := writeHello(s.cfg.Dir, names, noAnswerOf(s.cfg), s.cfg.EnvNamesDepend, stamp); err != nil {
			s.cfg.Logf("writing %s: %v", api.HelloName, err)
		} else {
			s.helloNames, s.helloStamp = names, stamp
		}
	}
	return names
}

// SetHandler sets the handler of OpRun requests, once. Serve may run
// before: until the handler is set the daemon answers pings saying it is
// opening its store, and OpRun requests wait for the handler (with
// progress frames saying so).
func (s *Server) SetHandler(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Handler != nil {
		return
	}
	s.cfg.Handler = h
	close(s.readyCh)
}

// SetStatus sets the reporter of OpStatus requests.
func (s *Server) SetStatus(f func() any) {
	s.mu.Lock()
	s.cfg.Status = f
	s.mu.Unlock()
}

// ready reports whether the handler is set.
func (s *Server) ready() bool {
	select {
	case <-s.readyCh:
		return true
	default:
		return false
	}
}

// handler returns the handler once it is set, or an error when ctx ends
// or shutdown begins first.
func (s *Server) handler(ctx context.Context) (Handler, error) {
	if !s.ready() { // a set handler wins over a shutdown begun meanwhile
		if err := s.awaitHandler(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Handler, nil
}

// awaitHandler waits until the handler is set, ctx ends or shutdown begins.
func (s *Server) awaitHandler(ctx context.Context) error {
	select {
	case <-s.readyCh:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-s.stop:
		return errors.New("the daemon stopped before its store was open")
	}
}

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
// (canceling them after the grace period), closes every connection left and
// returns.
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
	if s.startLock != nil {
		// Clients waiting for it now find this daemon answering.
		s.startLock.Close()
	}
	s.cfg.Logf("daemon %d listening", os.Getpid())

	go s.shutDownWhen(ctx, sigs)
	go func() {
		<-s.stop
		s.beginClosing()
	}()

	var backoff time.Duration // the wait after a failed accept; 0 after a success
	for {
		accept := s.accept
		if accept == nil {
			accept = s.ln.AcceptUnix
		}
		conn, err := accept()
		if err != nil {
			select {
			case <-s.stop:
			default:
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					continue
				}
				if transientAccept(err) {
					backoff = s.backOff(err, backoff)
					continue
				}
				s.Shutdown("accept: " + err.Error())
			}
			break
		}
		if backoff > 0 {
			s.cfg.Logf("accepting again after %v", backoffNote)
			backoff = 0
		}
		ok, over := s.track(conn)
		if over {
			s.refuseConn(conn)
			continue
		}
		if !ok {
			conn.Close()
			break
		}
		go s.serveConn(ctx, conn)
	}

	s.drain(cancel)
	return nil
}

// transientAccept reports whether a failed accept is worth retrying: the
// process or the system is out of file descriptors or memory for a
// moment, or the client gave up before its connection was accepted.
func transientAccept(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Bounds of the wait between accepts that fail for want of descriptors.
const (
	minAcceptBackoff = 5 * time.Millisecond
	maxAcceptBackoff = time.Second
)

// backoffNote is what the log says of a streak of failed accepts.
const backoffNote = "accept failures (descriptors or memory exhausted)"

// backOff waits after a transient accept failure err, the last wait having
// been last (0: the first failure of a streak, which is logged), doubling
// from minAcceptBackoff up to maxAcceptBackoff, or until shutdown begins;
// it returns the wait.
func (s *Server) backOff(err error, last time.Duration) time.Duration {
	d := min(max(2*last, minAcceptBackoff), maxAcceptBackoff)
	if last == 0 {
		s.cfg.Logf("accept: %v; retrying with a backoff of up to %s while requests in flight finish", err, maxAcceptBackoff)
	}
	select {
	case <-time.After(d):
	case <-s.stop:
	}
	return d
}

// shutDownWhen shuts s down on a signal of sigs, when ctx ends or when s
// has been idle for its Idle bound, until s stops.
func (s *Server) shutDownWhen(ctx context.Context, sigs <-chan os.Signal) {
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
}

// drain lets the in-flight requests of a stopped s finish, then cancels
// the stragglers (cancel) and gives them a moment to reply, and closes
// whatever connections are left.
func (s *Server) drain(cancel context.CancelFunc) {
	done := waitChan(&s.wg)
	select {
	case <-done:
	case <-time.After(s.cfg.Grace):
		s.cfg.Logf("grace period over: canceling %d in-flight requests", s.Info().InFlight)
		cancel()
		select {
		case <-done:
		case <-time.After(afterCancel):
			s.cfg.Logf("%d requests ignored their cancellation: closing their connections", s.Info().InFlight)
		}
	}
	// Close whatever is left; connection goroutines end at once unless a
	// handler ignores its cancellation, and Serve does not wait for those.
	s.closeConns(true)
	select {
	case <-waitChan(&s.connWG):
	case <-time.After(afterCancel):
	}
	s.cfg.Logf("daemon %d exiting: %s", os.Getpid(), s.reason)
}

// waitChan returns a channel closed once wg's count is zero.
func waitChan(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// beginClosing stops accepting, ends every wait for frame budget and
// closes the connections whose request is not read yet.
func (s *Server) beginClosing() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancelClose()
	s.ln.Close()
	s.closeConns(false)
}

// closeConns closes the open connections: those still being read, or all
// when inFlight is set.
func (s *Server) closeConns(inFlight bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, busy := range s.conns {
		if !busy || inFlight {
			c.Close()
		}
	}
}

// track registers an accepted connection unless shutdown has begun
// (ok false) or MaxConns are open (over true; counted).
func (s *Server) track(conn *net.UnixConn) (ok, over bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false, false
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.overConn++
		return false, true
	}
	s.conns[conn] = false
	s.connWG.Add(1)
	return true, false
}

// refuseConn answers a connection over MaxConns with a refusal, without
// waiting for the client to read it, and closes it.
func (s *Server) refuseConn(uc *net.UnixConn) {
	r := api.Failure(api.KindRefused, 1, map[string]string{"max_connections": fmt.Sprint(s.cfg.MaxConns)},
		"the daemon has %d connections open, its limit; try again", s.cfg.MaxConns)
	r.Protocol = api.DaemonProtocol
	uc.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
	api.WriteFrame(uc, r)
	uc.Close()
}

// untrack closes a connection and forgets it.
func (s *Server) untrack(conn *net.UnixConn) {
	conn.Close()
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	s.connWG.Done()
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
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

// begin puts the request read on conn in flight unless shutdown has
// begun.
func (s *Server) begin(conn *net.UnixConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[conn] = true
	s.inFlight++
	s.served++ // counted before the reply, so a client that has it sees it
	s.wg.Add(1)
	return true
}

// end counts a finished request; conn is idle again.
func (s *Server) end(conn *net.UnixConn) {
	s.mu.Lock()
	if _, ok := s.conns[conn]; ok {
		s.conns[conn] = false
	}
	s.inFlight--
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
	Served   int64   `json:"served"` // requests read, those in flight included
	Refused  int64   `json:"refused"`
	// RefusedConns counts connections refused because MaxConns were open.
	RefusedConns int64   `json:"refused_connections"`
	Conns        int     `json:"connections"`
	IdleExit     float64 `json:"idle_exit_seconds"`
}

// Info reports the server's counters.
func (s *Server) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Info{PID: os.Getpid(), Uptime: time.Since(s.started).Seconds(), InFlight: s.inFlight,
		Served: s.served, Refused: s.refused, RefusedConns: s.overConn, Conns: len(s.conns), IdleExit: s.cfg.Idle.Seconds()}
}

// conn is one client connection: its reader (kept across requests, so no
// byte read ahead is lost) and the lock of its writes (interim frames and
// the reply come from different goroutines).
type conn struct {
	c   *net.UnixConn
	r   *bufio.Reader
	wmu sync.Mutex // guards writes to c
}

// send writes r as one frame within the write deadline.
func (s *Server) send(c *conn, r *api.DaemonResponse) error {
	r.Protocol = api.DaemonProtocol
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	err := api.WriteFrame(c.c, r)
	if err != nil {
		s.cfg.Logf("reply: %v", err)
	}
	return err
}

// serveConn serves the requests of one connection in turn until the
// client closes it, breaks the protocol, stays silent past a deadline, or
// shutdown begins.
func (s *Server) serveConn(ctx context.Context, uc *net.UnixConn) {
	defer s.untrack(uc)
	c := &conn{c: uc, r: bufio.NewReader(uc)}
	// No operation (status included) takes the daemon down.
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logf("panic serving a request: %v\n%s", r, debug.Stack())
			s.send(c, api.Failure(api.KindInternal, 1, nil, "internal error: %v", r))
		}
	}()
	deadline := time.Now().Add(s.cfg.ReadTimeout)
	uid, err := peerUID(uc)
	if err != nil || uid != os.Getuid() {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		s.cfg.Logf("refused a peer with uid %d (err %v)", uid, err)
		s.send(c, api.Failure(api.KindRefused, 1, map[string]string{"uid": fmt.Sprint(uid)},
			"permission denied: the daemon serves only its own user"))
		return
	}
	for first := true; ; first = false {
		if !first {
			// Between requests: the idle bound for the first byte, then
			// the read bound for the rest.
			uc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
			if _, err := c.r.Peek(1); err != nil {
				return // the client is done, or idle too long
			}
			deadline = time.Now().Add(s.cfg.ReadTimeout)
		}
		if !s.serveRequest(ctx, c, deadline) {
			return
		}
	}
}

// serveRequest reads one request of c (within deadline) and answers it.
// It reports whether the connection may carry another.
func (s *Server) serveRequest(ctx context.Context, c *conn, deadline time.Time) bool {
	c.c.SetReadDeadline(deadline)
	var req api.DaemonRequest
	reserve := func(n int64) (func(), error) {
		if n <= SmallFrame {
			return s.small.reserve(s.closed, deadline, n)
		}
		return s.large.reserve(s.closed, deadline, n)
	}
	if err := api.ReadFrameBudget(c.r, api.MaxDaemonRequest, reserve, &req); err != nil {
		if s.isClosing() {
			return false // closed by shutdown: no reply, the client starts a new daemon
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no complete request within %s", s.cfg.ReadTimeout)
		}
		if !errors.Is(err, io.EOF) {
			s.send(c, api.Failure(api.KindBadRequest, 2, nil, "bad request: %v", err))
		}
		return false
	}
	if !s.begin(c.c) {
		return false // shutdown began while the request was read: as above
	}
	defer s.end(c.c)
	if req.Protocol != api.DaemonProtocol {
		// One reply in the shape every version reads, naming both.
		s.send(c, api.Failure(api.KindProtocol, 2,
			map[string]string{"daemon": fmt.Sprint(api.DaemonProtocol), "client": fmt.Sprint(req.Protocol), "pid": fmt.Sprint(os.Getpid())},
			"protocol %d not supported (daemon speaks %d)", req.Protocol, api.DaemonProtocol))
		return false
	}
	switch req.Op {
	case api.OpPing:
		r := &api.DaemonResponse{PID: os.Getpid()}
		if !s.ready() {
			r.Doing = opening
		}
		return s.send(c, r) == nil
	case api.OpHello:
		return s.send(c, &api.DaemonResponse{PID: os.Getpid(), EnvNames: s.hello()}) == nil
	case api.OpStatus:
		return s.send(c, s.status()) == nil
	case api.OpStop:
		s.send(c, &api.DaemonResponse{PID: os.Getpid()})
		s.Shutdown("stop requested")
		return false
	case api.OpRun:
		stray := c.r.Buffered() > 0
		// A hit is answered before the watch would start; a client gone
		// meanwhile is noticed at most api.ReplyWait later, whatever the
		// ReplyWait of the interim frames.
		rctx, stop := watchPeerAfter(ctx, c.c, min(s.cfg.ReplyWait, api.ReplyWait))
		resp := s.runReporting(rctx, c, &req)
		stray = stop() || stray
		err := s.send(c, resp)
		s.hello() // a client reads the names the next request needs from the file
		// Bytes the client sent while it should have waited leave the
		// framing in doubt: the connection carries no more requests.
		return err == nil && !stray
	default:
		return s.send(c, api.Failure(api.KindBadRequest, 2, map[string]string{"op": req.Op}, "unknown operation %q", req.Op)) == nil
	}
}

// opening is what a daemon whose handler is not set yet says it does.
const opening = "opening the store"

// status answers OpStatus.
func (s *Server) status() *api.DaemonResponse {
	var st any = s.Info()
	s.mu.Lock()
	f := s.cfg.Status
	s.mu.Unlock()
	if f != nil {
		st = f()
	}
	b, err := json.Marshal(st)
	if err != nil {
		return api.Failure(api.KindInternal, 1, nil, "%v", err)
	}
	return &api.DaemonResponse{PID: os.Getpid(), Status: b}
}

// ProgressFunc reports what a request's handler is doing and, when known
// (0 to 1; negative when not), how much of it is done.
type ProgressFunc func(doing string, fraction float64)

type progressKey struct{}

// Progress reports progress of the request ctx belongs to (nothing when
// ctx is not a request's): the next progress frame carries it.
func Progress(ctx context.Context, doing string, fraction float64) {
	if f, ok := ctx.Value(progressKey{}).(ProgressFunc); ok {
		f(doing, fraction)
	}
}

// runReporting runs req's handler on the calling goroutine. A reply
// ready within ReplyWait is returned with no frame before it; otherwise a
// timer sends an accepted frame, then a progress frame every
// ProgressEvery until the reply. A hit thus costs no goroutine and no
// hand-off between goroutines: the timer's function runs only for a
// request that outlasts ReplyWait.
func (s *Server) runReporting(ctx context.Context, c *conn, req *api.DaemonRequest) *api.DaemonResponse {
	p := &reporter{s: s, c: c, doing: "running " + strings.Join(req.Args, " "), fraction: -1, frame: api.FrameAccepted}
	ctx = context.WithValue(ctx, progressKey{}, ProgressFunc(p.set))
	p.smu.Lock()
	p.t = time.AfterFunc(s.cfg.ReplyWait, p.tick)
	p.smu.Unlock()
	r := s.run(ctx, req)
	p.finish()
	return r
}

// reporter sends the interim frames of one request.
type reporter struct {
	s *Server
	c *conn

	mu       sync.Mutex // guards doing, fraction
	doing    string
	fraction float64

	smu   sync.Mutex // guards the rest; held while a frame is sent
	frame string     // the kind of the next interim frame
	sent  time.Time  // when the last interim frame was sent
	done  bool       // the reply is due: no more interim frames
	t     *time.Timer
}

// set records what the handler reports it does.
func (p *reporter) set(doing string, fraction float64) {
	p.mu.Lock()
	p.doing, p.fraction = doing, fraction
	p.mu.Unlock()
}

// tick sends one interim frame, unless the reply is due, and sets the
// timer for the next.
func (p *reporter) tick() {
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.done {
		return
	}
	p.mu.Lock()
	f := &api.DaemonResponse{Frame: p.frame, PID: os.Getpid(), Doing: p.doing}
	if p.fraction >= 0 {
		fr := p.fraction
		f.Fraction = &fr
	}
	p.mu.Unlock()
	if !p.s.ready() {
		f.Doing = opening
	}
	every := p.s.cfg.ProgressEvery
	if f.Fraction == nil && p.frame == api.FrameProgress {
		// Nothing measured: a frame is due only ProgressEvery after the
		// last; the timer looks again sooner, as a fraction may come.
		if wait := every - time.Since(p.sent); wait > 0 {
			p.t.Reset(min(wait, progressMeasured))
			return
		}
	}
	p.s.send(p.c, f) // a failed write is the client gone: the watch cancels ctx
	p.sent = time.Now()
	p.frame = api.FrameProgress
	p.t.Reset(min(every, progressMeasured))
}

// progressMeasured is the gap between progress frames of a handler that
// reports a fraction done (its client's bar follows it).
const progressMeasured = 200 * time.Millisecond

// finish stops the interim frames; a frame being sent completes first,
// so the reply follows every interim frame.
func (p *reporter) finish() {
	p.smu.Lock()
	p.done = true
	p.t.Stop()
	p.smu.Unlock()
}

// ErrClientGone is the cause of a request's context canceled because its
// client closed the connection before the reply (the client process ended:
// killed, or interrupted).
var ErrClientGone = errors.New("the client closed the connection before the reply")

// watchPeer returns ctx for the request read on conn, canceled with
// ErrClientGone once the client is gone, and the function that stops the
// watch and reports whether the client sent bytes meanwhile. A protocol-2
// client sends its next request only after the reply, so until then the
// connection turns readable only when the client closes it; bytes it
// sends anyway are read and dropped (the connection is closed after the
// reply), and the watch goes on: only a hang-up, both sides closed,
// cancels. A client that merely shut down its writing side (a half-close)
// still gets its reply.
func watchPeer(ctx context.Context, conn *net.UnixConn) (context.Context, func() bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var stray bool                    // written by the watch before done closes
	conn.SetReadDeadline(time.Time{}) // the request's deadline is over
	go func() {
		defer close(done)
		var b [512]byte
		for {
			n, err := conn.Read(b[:])
			if n > 0 {
				stray = true
			}
			if err == nil {
				continue
			}
			gone := errors.Is(err, io.EOF) && hungUp(conn)
			if f := peerWatched.Load(); f != nil {
				(*f)(gone)
			}
			if gone {
				cancel(ErrClientGone)
			}
			return
		}
	}()
	return ctx, func() bool {
		conn.SetReadDeadline(time.Unix(1, 0)) // ends the Read
		<-done
		cancel(nil)
		return stray
	}
}

// watchPeerAfter is watchPeer begun only once after has passed, so that
// a request answered sooner (a hit) starts no goroutine for the watch: its
// stop function then polls the connection once, and a connection with
// bytes to read, or closed by the client, counts as one the client sent
// bytes on (the reply is still sent, and the connection carries no more).
func watchPeerAfter(ctx context.Context, conn *net.UnixConn, after time.Duration) (context.Context, func() bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	var (
		mu      sync.Mutex // guards started, stopped and stop
		started bool
		stopped bool
		stop    func() bool
	)
	t := time.AfterFunc(after, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		started = true
		var wctx context.Context
		wctx, stop = watchPeer(ctx, conn)
		context.AfterFunc(wctx, func() { cancel(context.Cause(wctx)) })
	})
	return ctx, func() bool {
		t.Stop()
		mu.Lock()
		stopped = true
		watching := started
		mu.Unlock()
		defer cancel(nil)
		if watching {
			return stop()
		}
		return readable(conn)
	}
}

// readable reports whether conn has bytes to read or an end of input (the
// client closed it), without waiting; a connection that cannot be polled
// counts as readable.
func readable(conn *net.UnixConn) bool {
	revents, ok := pollNow(conn)
	return !ok || revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
}

// pollNow polls conn for input without waiting and returns the events
// seen; ok is false when conn could not be polled.
func pollNow(conn *net.UnixConn) (revents int16, ok bool) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0, false
	}
	rc.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		ok = err == nil
		if ok && n > 0 {
			revents = pfd[0].Revents
		}
	})
	return revents, ok
}

// peerWatched, when set, is told how each watch of a peer ended (tests).
// It is atomic because a watch of an earlier test's connection may still
// be ending when a later test sets it.
var peerWatched atomic.Pointer[func(gone bool)]

// hungUp reports whether the peer of conn has closed both directions.
func hungUp(conn *net.UnixConn) bool {
	revents, ok := pollNow(conn)
	return ok && revents&unix.POLLHUP != 0
}

// run calls the handler, turning a panic into an error reply so one bad
// request never takes the daemon down.
func (s *Server) run(ctx context.Context, req *api.DaemonRequest) (resp *api.DaemonResponse) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logf("panic serving %v: %v", req.Args, r)
			resp = api.Failure(api.KindInternal, 1, nil, "internal error: %v", r)
		}
	}()
	h, err := s.handler(ctx)
	if err != nil {
		return api.Failure(api.KindShutdown, 1, nil, "%v", err)
	}
	return h(ctx, req)
}

// budget bounds the bytes of the requests being read at once. Unlike a
// FIFO semaphore it lets a small request through while a large one waits.
type budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	peak  int64         // the most ever reserved at once (for tests)
	waits int64         // reservations asked for (for tests)
	freed chan struct{} // closed and replaced when bytes are released
}

// reserve waits until n bytes fit (or until ctx ends or deadline passes)
// and takes them; the function it returns gives them back.
func (b *budget) reserve(ctx context.Context, deadline time.Time, n int64) (func(), error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	b.mu.Lock()
	b.waits++
	for b.used+n > b.limit {
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for memory to read a request of %d bytes: %w", n, ctx.Err())
		}
		b.mu.Lock()
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.used -= n
			close(b.freed)
			b.freed = make(chan struct{})
			b.mu.Unlock()
		})
	}, nil
}

// count returns how many reservations were asked for; maxUsed the most
// bytes reserved at once.
func (b *budget) count() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waits
}

func (b *budget) maxUsed() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
