package clientcmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/internal/value"
)

// DaemonDisabled reports whether args should run in the calling process:
// PTOJIT_DAEMON false (0, false, no, off; value.Bool), or --no-daemon
// among the arguments. A PTOJIT_DAEMON that is no boolean does not
// disable the daemon: ViaDaemon refuses it (daemonVariable).
func DaemonDisabled(env *cli.Env, args []string) bool {
	if v := env.Getenv("PTOJIT_DAEMON"); v != "" {
		if on, err := value.Bool(v); err == nil && !on {
			return true
		}
	}
	return slices.Contains(args, "--no-daemon")
}

// daemonVariables checks the variables that choose how a command reaches
// the daemon, PTOJIT_DAEMON and PTOJIT_CACHE_READONLY: a value that is no
// boolean is invalid input naming the variable, refused before anything
// starts.
func daemonVariables(env *cli.Env) error {
	if err := boolVariable("PTOJIT_DAEMON", env.Getenv("PTOJIT_DAEMON")); err != nil {
		return err
	}
	return boolVariable("PTOJIT_CACHE_READONLY", env.Getenv("PTOJIT_CACHE_READONLY"))
}

// boolVariable checks the value v of the boolean variable name: "" or a
// boolean, else invalid input naming the variable.
func boolVariable(name, v string) error {
	if v == "" {
		return nil
	}
	if _, err := value.Bool(v); err != nil {
		return cli.Invalid(fmt.Errorf("%s: %w", name, err))
	}
	return nil
}

// looks reports whether args is a daemon-served command that only looks
// at the cache: key, key diff, cache stats|ls|show|verify.
func looks(args []string) bool {
	switch args[0] {
	case "key":
		return true
	case "cache":
		sub := ""
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "-") {
				sub = a
				break
			}
		}
		return slices.Contains([]string{"stats", "ls", "show", "verify"}, sub)
	}
	return false
}

// readOnly reports whether PTOJIT_CACHE_READONLY asks for a read-only
// cache. Such a command uses a daemon that is already running (which
// applies the setting to that request), and starts none: without one it
// opens the store read-only in its own process.
func readOnly(env *cli.Env) bool {
	ro, err := value.Bool(env.Getenv("PTOJIT_CACHE_READONLY"))
	return err == nil && ro
}

// flagValue returns the value of --name in args ("--name v" or
// "--name=v").
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// readsStdin reports whether the command line names standard input.
func readsStdin(args []string) bool {
	for _, a := range args[1:] {
		if a == "-" || strings.HasSuffix(a, "=-") {
			return true
		}
	}
	return false
}

// ViaDaemon runs args in the daemon of their cache directory, starting the
// daemon (engine is the ptojitd executable) when none answers. It reports
// false when args are not served by the daemon or the daemon is disabled;
// the caller then runs them itself.
//
// Of the environment it sends only the variables the daemon names in its
// OpHello reply (those of the environment registry; client.CallEnv). A daemon that dies
// while it serves the request is replaced and the request sent once more
// (every served command can be repeated safely); any other failure (a
// directory or daemon that is not this user's, a protocol error such as a
// request over the size limit) is reported and nothing is sent again.
//
// The caller must have checked args (cli.Env.CheckOnly) before: starting a
// daemon is a side effect a usage error must not have. With a nil engine
// (the thin client, which does not know the engine's flags), and for a
// read-only command (PTOJIT_CACHE_READONLY), ViaDaemon only
// uses a daemon that is already listening, and reports false when there is
// none, so that the caller hands args to the engine, which checks them
// and starts the daemon; standard input it had to read is then left in
// env.Stdin.
func ViaDaemon(env *cli.Env, args []string, engine func() (string, error)) (bool, error) {
	if len(args) == 0 || !slices.Contains(api.DaemonServed, args[0]) {
		return false, nil
	}
	if err := daemonVariables(env); err != nil {
		return true, err
	}
	if DaemonDisabled(env, args) {
		return false, nil
	}
	if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
		return false, nil // help needs no daemon
	}
	cacheDir, dir, err := daemonCallDirs(env, args)
	if err != nil {
		return true, err
	}
	if _, serr := os.Stat(cacheDir); errors.Is(serr, fs.ErrNotExist) && looks(args) {
		// Looking starts no daemon, which would create the cache: the
		// engine answers in its own process, creating nothing.
		return false, nil
	}
	ddir := client.DaemonDir(cacheDir, env.Getenv)
	environ := env.Environ
	if environ == nil {
		environ = os.Environ()
	}
	req := &api.DaemonRequest{Op: api.OpRun, Args: args, Dir: dir}
	sock := api.SocketPath(ddir)
	if readOnly(env) {
		engine = nil // use a running daemon only
	}
	if engine == nil {
		if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
			return false, nil
		}
	}
	if readsStdin(args) {
		b, err := io.ReadAll(io.LimitReader(env.Stdin, api.MaxDaemonRequest))
		if err != nil {
			return true, err
		}
		req.Stdin = b
		env.Stdin = bytes.NewReader(b)
	}
	start := func() error {
		exe, err := engine()
		if err != nil {
			return err
		}
		return client.EnsureDaemon(client.Start{Dir: ddir, Engine: exe,
			Args: []string{"daemon", "run", "--cache-dir", cacheDir, "--ready-fd", "3", "--start-lock-fd", strconv.Itoa(client.StartLockFD)}})
	}
	// The bound comes from PTOJIT_DAEMON_TIMEOUT, else from the hello
	// file, which records the settings file's for its stamp; only when
	// that is stale is the settings file read here.
	settingsBound := func() time.Duration { return client.NoAnswerFor(cacheDir, env.Getenv) }
	bar := newFrameBar(env, args)
	defer bar.Clear()
	opts := client.Options{SettingsNoAnswer: settingsBound, Progress: bar.frame}
	if v := env.Getenv(client.NoAnswerVariable); v != "" {
		opts.NoAnswer = settingsBound() // the variable, when it is a positive duration
	}
	send := func() (*api.DaemonResponse, error) { return client.CallEnvWith(sock, req, environ, opts) }
	resp, err := send()
	if err != nil && engine == nil && errors.Is(err, client.ErrNoDaemon) {
		return false, nil // nobody listens: the engine starts one
	}
	if err != nil {
		r := daemonRetry{engine: engine, start: start, send: send, opts: &opts, settingsBound: settingsBound, sock: sock, ddir: ddir}
		var served bool
		if resp, served, err = r.retry(env, args, err); resp == nil {
			return served, err
		}
	}
	bar.Clear()
	return writeReply(env, args, resp)
}

// writeReply writes the daemon's reply resp to args to env and returns
// ViaDaemon's results for it: a build or key refused at the daemon's
// connection limit is not served (ErrInProcess), as with a daemon that
// does not answer: it runs in this process, uncached, instead of failing.
func writeReply(env *cli.Env, args []string, resp *api.DaemonResponse) (bool, error) {
	if overConnLimit(resp) && inProcessFallback(args) {
		fmt.Fprintf(env.Stderr, "%s: %s; running the %s in this process, uncached\n", env.Prog, FailureText(resp), args[0])
		return false, ErrInProcess
	}
	env.Stdout.Write(resp.Stdout)
	env.Stderr.Write(resp.Stderr)
	return true, ReplyError(resp)
}

// overConnLimit reports whether resp refuses the connection because the
// daemon has its limit of connections open.
func overConnLimit(resp *api.DaemonResponse) bool {
	return resp.Kind == api.KindRefused && resp.Data["max_connections"] != ""
}

// daemonCallDirs returns the cache directory of a command served by the
// daemon (its --cache-dir, else the default) and the directory it runs in.
func daemonCallDirs(env *cli.Env, args []string) (cacheDir, dir string, err error) {
	cacheDir = flagValue(args, "cache-dir")
	if cacheDir == "" {
		if cacheDir, err = client.CacheDir(env.Getenv); err != nil {
			return "", "", err
		}
	}
	cacheDir = filepath.Clean(env.Abs(cacheDir))
	dir = env.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return "", "", err
		}
	}
	return cacheDir, dir, nil
}

// daemonRetry is what retry needs of a call to the daemon: the engine
// that starts one (nil: use a running daemon only), the start and the
// send of the call, and the options and directories of the daemon.
type daemonRetry struct {
	engine        func() (string, error)
	start         func() error
	send          func() (*api.DaemonResponse, error)
	opts          *client.Options
	settingsBound func() time.Duration
	sock, ddir    string
}

// retry answers the failure err of the first send of a call: it starts a
// daemon when none answers, replaces one of an older version, sends the
// request again once after a lost daemon, and returns the response once
// a send succeeds. Without a response it returns whether the command was
// served (false: the caller runs it another way), and the error.
func (r *daemonRetry) retry(env *cli.Env, args []string, err error) (*api.DaemonResponse, bool, error) {
	var resp *api.DaemonResponse
	for started, resent, replaced := false, false, false; err != nil; {
		var lost *client.DaemonLostError
		var silent *client.NotAnsweringError
		var version *client.VersionError
		switch {
		case errors.As(err, &silent):
			if !inProcessFallback(args) {
				return nil, true, &cli.ExitError{Code: cli.ExitFailure, Err: errors.New(notAnsweringText(silent))}
			}
			fmt.Fprintf(env.Stderr, "%s: %s; running the %s in this process, uncached\n", env.Prog, notAnsweringText(silent), args[0])
			return nil, false, ErrInProcess
		case errors.As(err, &version) && version.Daemon < version.Client && !replaced:
			// A daemon of an older install: stop it and start ours.
			if r.engine == nil {
				return nil, false, nil // the engine replaces it
			}
			fmt.Fprintf(env.Stderr, "%s: %s; stopping it and starting a daemon of this version\n", env.Prog, versionText(version))
			if r.opts.NoAnswer == 0 {
				r.opts.NoAnswer = r.settingsBound()
			}
			if serr := client.StopVersion(r.sock, version.Daemon, *r.opts); serr != nil {
				return nil, true, fmt.Errorf("daemon: %s, and stopping it failed: %w; stop it with kill %d", versionText(version), serr, version.PID)
			}
			if werr := awaitExit(r.ddir, r.opts.NoAnswer); werr != nil {
				return nil, true, werr
			}
			replaced = true
		case errors.As(err, &version):
			return nil, true, &cli.ExitError{Code: cli.ExitFailure, Err: errors.New(versionText(version) +
				"; this ptojit is older than the daemon: run the ptojit of the daemon's install, or stop the daemon (kill " + strconv.Itoa(version.PID) + ")")}
		case errors.As(err, &lost) && !resent:
			fmt.Fprintf(env.Stderr, "%s: %v; starting a new daemon and sending the request again\n", env.Prog, err)
			resent = true
		case errors.Is(err, client.ErrNoDaemon) && !started:
			// No daemon answers: start one.
		default:
			return nil, true, WithRemedy(fmt.Errorf("daemon: %w", err))
		}
		started = true
		if r.engine == nil {
			return nil, false, nil
		}
		if serr := r.start(); serr != nil {
			return nil, true, WithRemedy(serr)
		}
		resp, err = r.send()
	}
	return resp, true, nil
}

// ErrInProcess is the error of a ViaDaemon that reports false because the
// daemon did not answer, or refused the connection at its limit of
// connections, and the command may run without it: the caller
// runs it in-process with the daemon disabled (an engine it executes gets
// PTOJIT_DAEMON=0), so that it does not wait for that daemon again.
var ErrInProcess = errors.New("the daemon is not answering: run in this process")

// inProcessFallback reports whether args may run in-process when the
// daemon does not answer: a build or key compiles without the store the
// silent daemon holds (uncached); a cache command needs that store.
func inProcessFallback(args []string) bool {
	return args[0] == "build" || args[0] == "key"
}

// notAnsweringText is what the client says of a daemon that did not
// answer: FailureText of the not_answering kind.
func notAnsweringText(e *client.NotAnsweringError) string {
	return FailureText(&api.DaemonResponse{Kind: api.KindNotAnswering,
		Data: map[string]string{"pid": strconv.Itoa(e.PID), "bound": e.Bound.String(), "log": e.Log}})
}

// versionText says which protocol versions met: FailureText of the
// protocol kind.
func versionText(e *client.VersionError) string {
	return FailureText(&api.DaemonResponse{Kind: api.KindProtocol,
		Data: map[string]string{"pid": strconv.Itoa(e.PID), "daemon": strconv.Itoa(e.Daemon), "client": strconv.Itoa(e.Client)}})
}

// awaitExit waits, at most bound (the no-answer bound when zero), for the
// daemon of ddir to release its lock.
func awaitExit(ddir string, bound time.Duration) error {
	if bound <= 0 {
		bound = client.DefaultNoAnswer
	}
	done := make(chan error, 1)
	go func() { done <- client.AwaitDaemonExit(ddir) }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		return fmt.Errorf("daemon: the old daemon of %s did not exit within %s after it was asked to stop; see %s",
			ddir, bound, filepath.Join(ddir, api.LogName))
	}
}
