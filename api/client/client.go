// Package client is the client side of the daemon protocol of package api:
// it dials the daemon's socket, sends one request per connection, reads the
// interim frames (each restarts the no-answer bound, Options.NoAnswer) and
// the reply, and starts a daemon when none answers. A daemon that sends
// nothing for the bound is a *NotAnsweringError naming its pid and log; one
// of another protocol version a *VersionError (StopVersion stops an older
// one in its own protocol). It imports only the standard library, api and
// filesys/flock (the start lock), so the thin client can use it.
//
// Trust runs both ways: the client uses a daemon directory only when this
// user owns it, nobody else can write it and no directory above it is
// open to other users' writes (CheckDir), and talks to a daemon only when SO_PEERCRED says it runs as
// this user; otherwise it sends nothing and reports the directory or
// socket at fault.
//
// Start-up is race-free: clients serialize on an flock of the start lock in
// the daemon directory, the first starts the daemon and waits for its
// readiness signal (not a timeout), and the rest find it answering. The
// daemon shares the start lock (it inherits the locked file) and lets it go
// only once its socket accepts connections, so a client killed while its
// daemon starts does not open the door to a second daemon: the next client
// still waits for the first one's socket, and finds it answering.
package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/filesys/flock"
	"github.com/ptojit/ptojit/filesys/owned"
)

// ErrNoDaemon is matched (errors.Is) by the error of Call when no daemon
// listens on the socket: the socket or its directory does not exist, or
// nobody accepts connections on it. Starting a daemon is the remedy.
var ErrNoDaemon = errors.New("no daemon answers")

// Options are the optional parts of a call.
type Options struct {
	// NoAnswer is the no-answer bound: a daemon that sends no frame for
	// that long is not answering (*NotAnsweringError). Zero means
	// NoAnswerBound of this process's environment.
	NoAnswer time.Duration
	// SettingsNoAnswer, when set and NoAnswer is zero, gives the bound of
	// the daemon's settings file for CallEnvWith, which calls it only
	// when the hello file does not record the bound of the settings as
	// they are now (api.DaemonResponse.NoAnswer): a hit then reads no
	// settings file.
	SettingsNoAnswer func() time.Duration
	// Progress, when set, is called with each interim frame.
	Progress func(*api.DaemonResponse)
}

func (o Options) noAnswer() time.Duration {
	if o.NoAnswer > 0 {
		return o.NoAnswer
	}
	v := os.Getenv("PTOJIT_DAEMON_TIMEOUT") // NoAnswerVariable
	return NoAnswerBound(func(string) string { return v })
}

// NotAnsweringError reports a daemon that accepted the connection but sent
// no frame within the no-answer bound (stopped, or hung).
type NotAnsweringError struct {
	Socket string
	PID    int    // the daemon's pid (SO_PEERCRED), 0 when unknown
	Log    string // its log
	Op     string
	Bound  time.Duration
}

func (e *NotAnsweringError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("the daemon on %s accepted no connection for %s on %q: it is not answering; its log is %s",
			e.Socket, e.Bound, e.Op, e.Log)
	}
	return fmt.Sprintf("the daemon (pid %d) on %s sent nothing for %s on %q: it is not answering; its log is %s",
		e.PID, e.Socket, e.Bound, e.Op, e.Log)
}

// VersionError reports a daemon that speaks another protocol version.
type VersionError struct {
	Socket string
	PID    int // the daemon's pid (SO_PEERCRED), 0 when unknown
	Daemon int // the daemon's version
	Client int // this client's (api.DaemonProtocol)
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("the daemon (pid %d) on %s speaks protocol %d, this client %d", e.PID, e.Socket, e.Daemon, e.Client)
}

// Call sends req over a new connection to the socket at path and returns
// the response. It first checks the socket's directory (CheckDir) and,
// once connected, that the daemon runs as this user (SO_PEERCRED), and
// sends nothing when either check fails: the error is then an
// *UntrustedError. An error matching ErrNoDaemon means that no daemon
// listens; a daemon that accepted the request but did not answer it is a
// *DaemonLostError; a reply that breaks the protocol (too large, not JSON)
// and a request too large to send match api.ErrProtocol: sending them
// again would fail again.
func Call(path string, req *api.DaemonRequest) (*api.DaemonResponse, error) {
	return call(path, req, Options{}, nil)
}

// CallWith is Call with options.
func CallWith(path string, req *api.DaemonRequest, o Options) (*api.DaemonResponse, error) {
	return call(path, req, o, nil)
}

// CallEnv is Call of a request whose environment (req.Env) is the entries
// of environ that the answering daemon names in its OpHello reply. It
// reads the names from the daemon's hello file (api.HelloName, written by
// the daemon before it listens) when that file names the pid of the
// daemon that accepted the connection (SO_PEERCRED), and otherwise asks
// with an OpHello request on a connection of its own. A daemon that does
// not answer OpHello is reported: it predates this client.
func CallEnv(path string, req *api.DaemonRequest, environ []string) (*api.DaemonResponse, error) {
	return CallEnvWith(path, req, environ, Options{})
}

// CallEnvWith is CallEnv with options.
func CallEnvWith(path string, req *api.DaemonRequest, environ []string, o Options) (*api.DaemonResponse, error) {
	var names []string
	var hpid int
	if b, err := readFile(filepath.Join(filepath.Dir(path), api.HelloName)); err == nil {
		var h api.DaemonResponse
		if api.Unmarshal(b, &h) == nil && h.Protocol == api.DaemonProtocol && h.PID > 0 && h.EnvNames != nil &&
			(h.Depends == "" || api.FileStamp(h.Depends) == h.DependsStamp) {
			names, hpid = h.EnvNames, h.PID
			if d, err := time.ParseDuration(h.NoAnswer); err == nil && d > 0 && o.NoAnswer == 0 {
				o.NoAnswer = d
			}
		}
	}
	if o.NoAnswer == 0 && o.SettingsNoAnswer != nil {
		o.NoAnswer = o.SettingsNoAnswer()
	}
	return call(path, req, o, func(pid int) error {
		if pid != hpid {
			hello, err := CallWith(path, &api.DaemonRequest{Op: api.OpHello}, Options{NoAnswer: o.NoAnswer})
			if err != nil {
				return err
			}
			if hello.Error != "" {
				return fmt.Errorf("the running daemon (pid %d) does not answer %q (%s): it predates this client; stop it with \"ptojit daemon stop\"",
					hello.PID, api.OpHello, hello.Error)
			}
			names = hello.EnvNames
		}
		// The daemon's names, plus those this client's PTOJIT_PASS_ENV adds.
		req.Env = FilterEnv(environ, append(slices.Clip(names), PassEnvFrom(environ)...))
		return nil
	})
}

// call is Call; prepare, when not nil, is called with the daemon's pid
// once the daemon is trusted and before req is encoded.
func call(path string, req *api.DaemonRequest, o Options, prepare func(pid int) error) (*api.DaemonResponse, error) {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %w", ErrNoDaemon, err)
		}
		return nil, err
	}
	// Without prepare, a request too large to send is refused before
	// connecting; with it, the request is encoded once, when prepare has
	// completed it (a hit's path encodes nothing twice).
	req.Protocol = api.DaemonProtocol
	var frame []byte
	if prepare == nil {
		var err error
		if frame, err = api.MarshalFrame(req, api.MaxDaemonRequest); err != nil {
			return nil, fmt.Errorf("daemon request: %w", err)
		}
	}
	bound := o.noAnswer()
	notAnswering := &NotAnsweringError{Socket: path, Log: filepath.Join(filepath.Dir(path), api.LogName), Op: req.Op, Bound: bound}
	conn, err := dial(path, bound)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// A daemon there that accepts no connection (its listen queue
		// is full): no pid known.
		return nil, notAnswering
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	defer conn.Close()
	uid, pid, err := peerCreds(conn)
	if err != nil {
		return nil, &UntrustedError{Path: path, Reason: "cannot read the daemon's uid: " + err.Error()}
	}
	if uid != os.Getuid() {
		return nil, &UntrustedError{Path: path, Reason: fmt.Sprintf("the daemon listening there runs as uid %d, not as this user (uid %d)", uid, os.Getuid())}
	}
	if prepare != nil {
		if err := prepare(pid); err != nil {
			return nil, err
		}
		if frame, err = api.MarshalFrame(req, api.MaxDaemonRequest); err != nil {
			return nil, fmt.Errorf("daemon request: %w", err)
		}
	}
	notAnswering.PID = pid
	conn.SetDeadline(time.Now().Add(bound))
	// A daemon that refuses the peer replies before reading the request,
	// so a failed write is judged by whether a reply can still be read.
	_, werr := conn.Write(frame)
	r := bufio.NewReader(conn)
	for {
		var resp api.DaemonResponse
		if err := api.ReadFrame(r, api.MaxDaemonResponse, &resp); err != nil {
			switch {
			case errors.Is(err, api.ErrProtocol):
				return nil, fmt.Errorf("daemon reply: %w", err)
			case errors.Is(err, os.ErrDeadlineExceeded):
				return nil, notAnswering
			}
			if werr != nil {
				err = werr
			}
			return nil, &DaemonLostError{Err: err}
		}
		if resp.Protocol != api.DaemonProtocol {
			return nil, &VersionError{Socket: path, PID: pid, Daemon: resp.Protocol, Client: api.DaemonProtocol}
		}
		if resp.Frame == "" {
			return &resp, nil
		}
		// An interim frame: the daemon works on it; the bound restarts.
		if o.Progress != nil {
			o.Progress(&resp)
		}
		conn.SetDeadline(time.Now().Add(bound))
	}
}

// peerCreds returns the uid and pid of the process at the other end of
// conn (for a client: the process that listens), with one SO_PEERCRED.
// Tests replace it.
var peerCreds = func(c daemonConn) (uid, pid int, err error) { return c.peer() }

// UntrustedError refuses a daemon directory or socket that another user
// could control. Nothing was sent to it. Its message states the refusal;
// what to do about it is the command line's to say.
type UntrustedError struct {
	Path   string // the directory or socket refused
	Reason string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("refusing the daemon at %s: %s; another user could serve a fake daemon there", e.Path, e.Reason)
}

// CheckDir returns nil when dir may hold this user's daemon socket: the
// rule of package filesys/owned, strict and with no final link. dir itself
// (read with Lstat, so not a symbolic link) is a directory owned by this
// user that neither group nor others can write, and every directory above
// it is owned by this user or root and not writable by others unless it
// has the sticky bit (as /tmp has), which keeps them from renaming what
// this user put there. A symbolic link on the way is followed only when
// the link is this user's or root's (a link another user planted in /tmp
// is refused), and the chain it leads to is checked the same way. A
// directory above may be group-writable (a user's private group, as a
// umask of 002 leaves ~/.cache): whoever could replace dir through it
// would own the new dir, which the ownership check refuses, and
// SO_PEERCRED refuses their daemon. Any other directory is refused with an
// *UntrustedError naming the outermost one at fault; a missing one gives
// an error matching fs.ErrNotExist. The walk is one Lstat per component.
func CheckDir(dir string) error {
	return asUntrusted(owned.Check(dir, dirRule()))
}

// MakeDir creates the daemon directory dir (mode 0700) and what is missing
// above it, one directory at a time, each checked as CheckDir checks, so
// that nothing is created through a directory or link another user
// controls; it then returns CheckDir's verdict.
func MakeDir(dir string) error {
	return asUntrusted(owned.Ensure(dir, 0o700, dirRule()))
}

// dirRule is CheckDir's rule.
func dirRule() owned.Rule {
	return owned.Rule{UID: os.Getuid(), Strict: true, Lstat: lstat}
}

// asUntrusted returns a refusal of package owned as an *UntrustedError.
func asUntrusted(err error) error {
	var oe *owned.Error
	if errors.As(err, &oe) {
		return &UntrustedError{Path: oe.Path, Reason: fmt.Sprintf("owned by %s with mode %04o: %s", owned.UserName(oe.UID), oe.Mode.Perm(), oe.Reason)}
	}
	return err
}

// lstat is os.Lstat; tests count its calls.
var lstat = os.Lstat

// DaemonLostError reports a daemon that accepted a request but did not
// answer it (it was killed or crashed mid-request).
type DaemonLostError struct{ Err error }

func (e *DaemonLostError) Error() string {
	return "the daemon closed the connection without answering (" + e.Err.Error() + ")"
}

func (e *DaemonLostError) Unwrap() error { return e.Err }

// Start says how to start a daemon when none answers.
type Start struct {
	// Dir is the daemon directory (DaemonDir).
	Dir string
	// Engine is the path of the ptojitd executable and Args its arguments
	// for running the daemon in the foreground (e.g. "daemon", "run",
	// "--cache-dir", D). The daemon is given a pipe as file descriptor 3 and
	// must write "ready\n" to it once its socket accepts connections; it is
	// given the start lock, locked, as file descriptor 4 (StartLockFD), and
	// must close it once its socket accepts connections, not before.
	Engine string
	Args   []string
	// Env is the daemon's environment (nil: this process's).
	Env []string
}

// Ping reports whether a daemon answers on the socket in dir.
func Ping(dir string) bool { return ping(dir) == nil }

// ping returns nil when a daemon answers on the socket in dir, else why
// not (an error matching ErrNoDaemon when none listens).
func ping(dir string) error {
	resp, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing})
	if err != nil {
		return err
	}
	if resp.Error != "" {
		return errors.New("daemon: " + resp.Error)
	}
	return nil
}

// EnsureDaemon returns once a daemon answers in s.Dir, starting one if
// none listens or the one there closes the connection unanswered (see the
// package doc). It creates s.Dir (mode 0700) and
// checks it (CheckDir) before it uses anything in it. A daemon that
// fails to start is reported with the end of its log; one that listens but
// cannot be used (another user's, hung, or speaking another protocol) is
// reported, not replaced.
func EnsureDaemon(s Start) error {
	err := ping(s.Dir)
	if err == nil || !replaceable(err) {
		return err
	}
	if err := MakeDir(s.Dir); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(s.Dir, api.StartLockName), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := Flock(lock, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("daemon start lock: %w", err)
	}
	defer Flock(lock, syscall.LOCK_UN)
	err = ping(s.Dir)
	if err == nil || !replaceable(err) {
		return err // nil: another client started it while we waited
	}
	if err := startDaemon(s, lock); err != nil {
		// A daemon that found another one serving exits; that one is
		// as good.
		if ping(s.Dir) == nil {
			return nil
		}
		return err
	}
	return nil
}

// StartLockFD is the file descriptor of the start lock in a daemon that
// EnsureDaemon started (see Start.Engine).
const StartLockFD = 4

// replaceable reports whether the ping error err calls for a new daemon:
// none listens, or the one that accepted the ping closed the connection
// unanswered (it is exiting, or was killed: a new daemon waits for it to
// release its lock).
func replaceable(err error) bool {
	var lost *DaemonLostError
	return errors.Is(err, ErrNoDaemon) || errors.As(err, &lost)
}

func startDaemon(s Start, lock *os.File) error {
	logPath := filepath.Join(s.Dir, api.LogName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
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
	cmd.ExtraFiles = []*os.File{pw, lock} // fds 3 and StartLockFD
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
// the wait (filesys/flock, the helper the module store shares).
func Flock(f *os.File, how int) error {
	return flock.Lock(f, how)
}

// AwaitDaemonExit returns once no daemon holds the lock in dir: a daemon
// keeps it until everything it owns, the store included, is closed.
func AwaitDaemonExit(dir string) error {
	if err := CheckDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, api.LockName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
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

// StopVersion asks the daemon on the socket at path, which speaks protocol
// version (an older one: a daemon left running by a previous install), to
// stop, in the shape of that version's stop request; the trust checks of
// Call apply. Every version so far frames a stop request and its reply
// alike.
func StopVersion(path string, version int, o Options) error {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return err
	}
	conn, err := dial(path, o.noAnswer())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	defer conn.Close()
	if uid, _, err := peerCreds(conn); err != nil || uid != os.Getuid() {
		return &UntrustedError{Path: path, Reason: "the daemon listening there does not run as this user"}
	}
	conn.SetDeadline(time.Now().Add(o.noAnswer()))
	if err := api.WriteFrame(conn, map[string]any{"protocol": version, "op": api.OpStop}); err != nil {
		return err
	}
	var resp api.DaemonResponse
	if err := api.ReadFrame(bufio.NewReader(conn), api.MaxDaemonResponse, &resp); err != nil {
		return fmt.Errorf("stopping the protocol-%d daemon on %s: %w", version, path, err)
	}
	if resp.Error != "" {
		return fmt.Errorf("the protocol-%d daemon on %s refused to stop: %s", version, path, resp.Error)
	}
	return nil
}
