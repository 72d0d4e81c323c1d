package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/idle"
	"github.com/ptojit/ptojit/cache/remote/tiers"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/daemon"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/jit"
	"github.com/ptojit/ptojit/observe"
	"github.com/ptojit/ptojit/toolchain"
)

// DefaultIdle is how long a daemon without requests lives.
const DefaultIdle = 10 * time.Minute

type daemonOptions struct {
	cacheDir string
	maxSize  string
	idle     time.Duration
	readyFD  int
	lockFD   int
	json     bool
	// progressEvery is the longest gap between two frames of a request in
	// flight (default api.ProgressEvery; tests shorten it).
	progressEvery time.Duration
}

func daemonFlags(fs *pflag.FlagSet, o *daemonOptions, lifetime bool) {
	fs.StringVar(&o.cacheDir, "cache-dir", "", "the cache directory the daemon owns (default: PTOJIT_CACHE_DIR or the user cache directory)")
	if lifetime {
		fs.DurationVar(&o.idle, "idle", DefaultIdle, "exit after this long without requests (0: never)")
		fs.StringVar(&o.maxSize, "max-size", "", "the size cap of requests that do not set PTOJIT_CACHE_MAX_SIZE, and of the idle trim (default: max_size of ptojit config, else 5G)")
	}
}

// runDaemonStart starts the daemon of the cache directory unless one
// runs, and prints its pid.
func runDaemonStart(env *cli.Env, o daemonOptions) error {
	dir, err := cacheDirOf(env, o.cacheDir)
	if err != nil {
		return err
	}
	ddir := client.DaemonDir(dir, env.Getenv)
	if err := ensureDaemon(env, dir, o.idle, o.maxSize); err != nil {
		return err
	}
	resp, err := client.Call(api.SocketPath(ddir), &api.DaemonRequest{Op: api.OpPing})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "daemon running, pid %d\n", resp.PID)
	return nil
}

// setupDaemonRun declares the flags of "daemon run", the hidden ones the
// starting client passes among them, and returns its RunFunc.
func setupDaemonRun(fs *pflag.FlagSet) cli.RunFunc {
	var o daemonOptions
	daemonFlags(fs, &o, true)
	fs.IntVar(&o.readyFD, "ready-fd", -1, "write \"ready\" to this file descriptor once serving")
	fs.MarkHidden("ready-fd")
	fs.IntVar(&o.lockFD, "start-lock-fd", -1, "the start lock, shared by the starting client; closed once serving")
	fs.MarkHidden("start-lock-fd")
	fs.DurationVar(&o.progressEvery, "progress-every", api.ProgressEvery, "the longest gap between two frames of a request in flight")
	fs.MarkHidden("progress-every")
	return func(ctx context.Context, env *cli.Env, args []string) error {
		if len(args) > 0 {
			return cli.Usagef("daemon run: unexpected argument %q", args[0])
		}
		return runDaemon(ctx, env, o)
	}
}

func init() {
	register(&cli.Command{
		Name:    "daemon",
		Usage:   "daemon start|stop|status|run",
		Summary: "start, stop or query the local daemon that owns the cache",
		Long: `The daemon owns the artifact cache (one process per cache directory may
open it) and remembers installation identities between builds, watching
their files so that a change is seen at once. ptojit build, key and cache
start it on demand and send their work to it; PTOJIT_DAEMON=0 or
--no-daemon (build) runs them in the calling process instead.

Its socket, start lock and log live in $XDG_RUNTIME_DIR/ptojit/<id>, else in
<cache-dir>/daemon (or $TMPDIR/ptojit-<uid>/<id> when that path is too long
for a socket): a 0700 directory; the socket is 0600 and the daemon serves
only its own user. Clients use the directory only when it is their user's,
nobody else can write it and no directory above it is world-writable
(unless sticky, as /tmp), talk only to a daemon of their own uid, and send only the environment variables of the
registry. It exits after --idle without requests (default 10m), on
"ptojit daemon stop", or on SIGTERM, finishing the requests in flight first;
a connection that sends nothing delays neither.`,
		Subcommands: []*cli.Command{
			{
				Name: "start", Usage: "daemon start [--cache-dir D] [--idle D] [--max-size S]",
				Summary: "start the daemon unless one is running",
				Setup: func(fs *pflag.FlagSet) cli.RunFunc {
					var o daemonOptions
					daemonFlags(fs, &o, true)
					return func(ctx context.Context, env *cli.Env, args []string) error {
						if len(args) > 0 {
							return cli.Usagef("daemon start: unexpected argument %q", args[0])
						}
						return runDaemonStart(env, o)
					}
				},
			},
			{
				Name: "stop", Usage: "daemon stop [--cache-dir D]",
				Summary: "stop the daemon after the requests in flight",
				Setup: func(fs *pflag.FlagSet) cli.RunFunc {
					var o daemonOptions
					daemonFlags(fs, &o, false)
					return func(ctx context.Context, env *cli.Env, args []string) error {
						if len(args) > 0 {
							return cli.Usagef("daemon stop: unexpected argument %q", args[0])
						}
						return runDaemonStop(env, o)
					}
				},
			},
			{
				Name: "status", Usage: "daemon status [--cache-dir D] [--json]",
				Summary: "say whether the daemon runs, and what it holds",
				Long:    "Exit status 0 when a daemon answers, 1 when none runs.",
				Setup: func(fs *pflag.FlagSet) cli.RunFunc {
					var o daemonOptions
					daemonFlags(fs, &o, false)
					fs.BoolVar(&o.json, "json", false, "print JSON")
					return func(ctx context.Context, env *cli.Env, args []string) error {
						if len(args) > 0 {
							return cli.Usagef("daemon status: unexpected argument %q", args[0])
						}
						return runDaemonStatus(env, o)
					}
				},
			},
			daemonMetricsCommand(),
			{
				Name: "run", Usage: "daemon run [--cache-dir D] [--idle D] [--max-size S]",
				Summary: "run the daemon in the foreground (what start runs)",
				Setup:   setupDaemonRun,
			},
		},
	})
}

// cacheDirOf returns the cache directory a command uses: flag (relative to
// env's directory), else the default (cache.DefaultDir), absolute and
// clean.
func cacheDirOf(env *cli.Env, flag string) (string, error) {
	dir := flag
	if dir == "" {
		d, err := cache.DefaultDir(env.Getenv)
		if err != nil {
			return "", err
		}
		dir = d
	}
	return filepath.Clean(env.Abs(dir)), nil
}

// ensureDaemon starts the daemon for cacheDir unless one answers.
func ensureDaemon(env *cli.Env, cacheDir string, idle time.Duration, maxSize string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"daemon", "run", "--cache-dir", cacheDir, "--ready-fd", "3", "--start-lock-fd", strconv.Itoa(client.StartLockFD), "--idle", idle.String()}
	if maxSize != "" {
		args = append(args, "--max-size", maxSize)
	}
	return client.EnsureDaemon(client.Start{Dir: client.DaemonDir(cacheDir, env.Getenv), Engine: exe, Args: args, Env: env.Environ})
}

func runDaemonStop(env *cli.Env, o daemonOptions) error {
	dir, err := cacheDirOf(env, o.cacheDir)
	if err != nil {
		return err
	}
	ddir := client.DaemonDir(dir, env.Getenv)
	resp, err := client.Call(api.SocketPath(ddir), &api.DaemonRequest{Op: api.OpStop})
	if errors.Is(err, client.ErrNoDaemon) {
		fmt.Fprintln(env.Stdout, "no daemon running")
		return nil
	}
	if err != nil {
		return fmt.Errorf("daemon stop: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- client.AwaitDaemonExit(ddir) }()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("daemon stop: %w", err)
		}
	case <-time.After(stopWait):
		return fmt.Errorf("daemon stop: daemon %d has not exited %s after the request; see %s",
			resp.PID, stopWait, filepath.Join(ddir, api.LogName))
	}
	fmt.Fprintf(env.Stdout, "daemon %d stopped\n", resp.PID)
	return nil
}

// stopWait bounds how long "daemon stop" waits for the daemon to exit: its
// grace period for the requests in flight, and time to close the store.
const stopWait = daemon.DefaultGrace + 30*time.Second

func runDaemonStatus(env *cli.Env, o daemonOptions) error {
	dir, err := cacheDirOf(env, o.cacheDir)
	if err != nil {
		return err
	}
	resp, err := client.Call(api.SocketPath(client.DaemonDir(dir, env.Getenv)), &api.DaemonRequest{Op: api.OpStatus})
	if err != nil && !errors.Is(err, client.ErrNoDaemon) {
		return fmt.Errorf("daemon status: %w", err)
	}
	ddir := client.DaemonDir(dir, env.Getenv)
	st := observe.DaemonStatus{CacheDir: dir, DaemonDir: ddir, Socket: api.SocketPath(ddir), Log: filepath.Join(ddir, api.LogName)}
	if err == nil && resp.Error == "" {
		if err := json.Unmarshal(resp.Status, &st); err != nil {
			return fmt.Errorf("daemon status: %w", err)
		}
		st.Running = true
		st.DaemonDir, st.Socket, st.Log = ddir, api.SocketPath(ddir), filepath.Join(ddir, api.LogName)
	}
	if o.json {
		if err := cli.WriteJSON(env.Stdout, st); err != nil {
			return err
		}
	} else if err := st.WriteText(env.Stdout); err != nil {
		return err
	}
	if !st.Running {
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// closeStore closes the daemon's store of the cache directory dir, logging
// a failure (a full file system: the close writes no table, and the next
// open recovers from the write-ahead log).
func closeStore(store *cache.Badger, dir string, logf func(format string, args ...any)) {
	if err := store.Close(); err != nil {
		logf("closing the cache %s: %v", dir, err)
	}
}

// forgetter lets the watcher reach the identity memo created after it.
type forgetter struct {
	ids *toolchain.InstallationIdentityCache
}

func (f *forgetter) Forget(p string) int { return f.ids.Forget(p) }
func (f *forgetter) ForgetAll()          { f.ids.ForgetAll() }

func runDaemon(ctx context.Context, env *cli.Env, o daemonOptions) error {
	ready, startLock := startingClientFiles(o)
	dir, err := cacheDirOf(env, o.cacheDir)
	if err != nil {
		return err
	}
	if err := checkDaemonSettings(dir, o); err != nil {
		return err
	}
	logf := startDaemonLog(env, dir)
	// The shared store has no cap and is writable: each request applies
	// its own settings (sharedStore), and the idle trim the daemon's.
	// Badger's errors and warnings (a damaged value log, a failed read)
	// go to the daemon log.
	opt := cache.Options{Logger: storeLogger{logf}}
	ddir := client.DaemonDir(dir, env.Getenv)
	srv, err := daemon.Listen(daemon.Config{
		Dir: ddir, Idle: o.idle, Ready: ready, StartLock: startLock, WaitLock: true, Logf: logf, EnvNames: clientEnvNames(),
		ProgressEvery: o.progressEvery,
		EnvNamesFunc:  func() []string { return helloEnvNames(dir) }, EnvNamesDepend: filepath.Join(dir, config.FileName),
		NoAnswerFunc: func() time.Duration { return fileNoAnswer(dir) },
	})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	// Deferred first, so it runs last: the lock outlives the store.
	defer srv.Close()
	// Serve at once: while the store opens (up to openStoreWait) the
	// daemon answers pings saying so, and requests wait for the handler
	// with progress frames, instead of queueing unanswered.
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	stopServing := func(err error) error {
		srv.Shutdown(err.Error())
		<-served
		return err
	}
	store, err := openDaemonStore(ctx, dir, opt)
	if err != nil && ctx.Err() != nil {
		return stopServing(fmt.Errorf("daemon: opening the cache: %w", err))
	}
	// A store that cannot be opened fails no build: the daemon serves
	// them uncached, with a warning, until cache clear wipes it.
	storeErr := err
	var wipeAtExit atomic.Bool
	defer func() {
		if wipeAtExit.Load() {
			files, _, err := cache.Wipe(dir)
			logf("removed %d database files of %s (%v)", files, dir, err)
		}
	}()
	if storeErr != nil {
		logf("cache %s unusable: %v; builds run uncached; remedy: %s", dir, storeErr, cache.Remedy(storeErr))
	} else {
		defer closeStore(store, dir, logf)
	}
	// Builds killed while this cache had no daemon (kill -9, a crash)
	// left their compile directories behind.
	if gone, err := jit.SweepBuildDirs(os.TempDir()); err == nil && len(gone) > 0 {
		logf("removed %d build directories of dead builds", len(gone))
	}
	fwd := &forgetter{}
	watcher, err := jit.NewWatcher(filepath.Join(ddir, "watch-sync"), fwd)
	if err != nil {
		return stopServing(fmt.Errorf("daemon: %w", err))
	}
	defer watcher.Close()
	fwd.ids = toolchain.NewInstallationIdentityCache(toolchain.Options{BeforeDir: watcher.BeforeDir})
	engine.listings, engine.watcher = watcher.Listings(), watcher
	engine.dir, daemonGetenv = dir, env.Getenv
	wiped := func(atExit bool) {
		wipeAtExit.Store(atExit)
		srv.Shutdown("cache cleared")
	}
	if storeErr != nil {
		serveUncached(srv, dir, storeErr, fwd, watcher, wiped)
		return <-served
	}
	return serveStore(ctx, srv, served, dir, store, fwd, watcher, wiped, logf)
}

// checkDaemonSettings takes the daemon's --max-size and refuses a broken
// settings file (the settings in force without a request's environment)
// before the daemon serves.
func checkDaemonSettings(dir string, o daemonOptions) error {
	if o.maxSize != "" {
		if _, err := cache.ParseSize(o.maxSize); err != nil {
			return cli.Usagef("daemon: --max-size: %v", err)
		}
		daemonMaxSize = o.maxSize
	}
	_, err := resolveSettings(nil, dir, func(string) string { return "" })
	return err
}

// daemonLogf returns the daemon's log function: a time-stamped line on
// env's standard error.
func daemonLogf(env *cli.Env) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(env.Stderr, "%s ptojitd: %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
}

// startingClientFiles opens the descriptors the starting client gave (the
// readiness pipe and the start lock, nil when not given), marked so that
// they are never passed on to the compilers and probes this daemon runs.
func startingClientFiles(o daemonOptions) (ready, startLock *os.File) {
	if o.readyFD >= 0 {
		syscall.CloseOnExec(o.readyFD)
		ready = os.NewFile(uintptr(o.readyFD), "ready")
	}
	if o.lockFD >= 0 {
		syscall.CloseOnExec(o.lockFD)
		startLock = os.NewFile(uintptr(o.lockFD), api.StartLockName)
	}
	return ready, startLock
}

// openDaemonStore opens the daemon's store of dir, waiting up to
// openStoreWait for another process that holds it. A cache that is not
// the user's own is refused before any process opens a file of it (Open
// checks again).
func openDaemonStore(ctx context.Context, dir string, opt cache.Options) (*cache.Badger, error) {
	err := cache.CheckOwned(dir)
	if err == nil {
		err = probeCache(ctx, dir)
	}
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, openStoreWait)
	defer cancel()
	return cache.OpenWait(octx, dir, opt)
}

// serveUncached sets the handler and status of a daemon whose store could
// not be opened: builds run uncached, and the status says why.
func serveUncached(srv *daemon.Server, dir string, storeErr error, fwd *forgetter, watcher *jit.Watcher, wiped func(atExit bool)) {
	shareBrokenEngine(dir, storeErr, fwd.ids, wiped)
	srv.SetHandler(func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
		watcher.Sync()
		return serveCommand(ctx, req)
	})
	srv.SetStatus(func() any {
		info := srv.Info()
		return observe.DaemonStatus{Running: true, CacheDir: dir, Server: &info, Memoized: fwd.ids.Len(), Watch: watcher.Status(),
			CacheError: storeErr.Error()}
	})
}

// serveStore shares store with the engine, sets the daemon's handler and
// status, runs its maintenance and returns when served says the server
// stopped.
func serveStore(ctx context.Context, srv *daemon.Server, served <-chan error, dir string, store *cache.Badger, fwd *forgetter, watcher *jit.Watcher, wiped func(atExit bool), logf func(format string, args ...any)) error {
	ShareEngine(store, fwd.ids)
	// The remote tiers follow the settings of each request (the file's,
	// or a client's PTOJIT_REMOTE*), not the environment the daemon
	// started with.
	engine.remotes = tiers.NewPool(logf, daemonGetenv)
	defer engine.remotes.Close()
	engine.wiped = wiped

	trim := func(ctx context.Context, maxBytes int64) (*cache.TrimReport, error) {
		return cache.Trim(ctx, store, maxBytes)
	}
	m := &idle.Trimmer{Trim: trim, Logf: logf, Limit: func() (int64, bool, error) {
		st, err := resolveSettings(nil, dir, func(string) string { return "" })
		if err != nil {
			return 0, false, err
		}
		return st.maxBytes, st.readOnly, nil
	}}
	srv.SetHandler(func(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
		m.Touch()
		defer m.Touch()
		// Every change that finished before this request must have
		// dropped its memos before the request uses them: the Sync
		// begins now and completes before the build (or any other
		// command) uses a memo; reading the request uses none.
		wait := watcher.BeginSync()
		defer wait()
		return serveCommand(jit.WithSync(ctx, wait), req)
	})
	srv.SetStatus(func() any {
		info := srv.Info()
		st := observe.DaemonStatus{Running: true, CacheDir: dir, Server: &info, Memoized: fwd.ids.Len(), Watch: watcher.Status()}
		if cs, err := cache.ReadStats(context.Background(), store); err == nil {
			st.Cache = cs
		} else {
			st.CacheError = err.Error()
		}
		if rs := engine.remotes.Stats(); len(rs) > 0 {
			st.Remote = &rs[0]
			st.Remotes = rs
		}
		st.LastTrim, st.TrimErrors = m.Last()
		if set, err := resolveSettings(nil, dir, func(string) string { return "" }); err == nil {
			st.Settings = config.Reports(set.list)
			if st.Cache != nil {
				st.Cache.MaxBytes = set.maxBytes
			}
		} else {
			st.SettingsError = err.Error()
		}
		st.ConfigFile = filepath.Join(dir, config.FileName)
		return st
	})
	// Joined before the store closes (deferred above, so run after this).
	defer m.Start(ctx, serverLoad{srv})()
	defer startMetrics(ctx, dir, store, logf)()
	return <-served
}

// storeLogger sends a store's errors and warnings to the daemon log.
type storeLogger struct{ logf func(string, ...any) }

func (l storeLogger) Errorf(f string, a ...any) {
	l.logf("cache error: %s", strings.TrimSpace(fmt.Sprintf(f, a...)))
}

func (l storeLogger) Warningf(f string, a ...any) {
	l.logf("cache warning: %s", strings.TrimSpace(fmt.Sprintf(f, a...)))
}

func (storeLogger) Infof(string, ...any)  {}
func (storeLogger) Debugf(string, ...any) {}

// clientEnvNames lists the environment variables clients send with a
// request (OpHello): every variable of the environment registry, which
// names all that ptojit reads, the build key and the tools included.
var clientEnvNames = sync.OnceValue(func() []string { return jit.DefaultRegistry().Variables("") })

// serveCommand runs one client command in this process, against the shared
// store and identity memo, with the client's environment and directory. Of
// that environment it keeps the variables of clientEnvNames only, whatever
// the client sent, so a command behaves the same for every client.
func serveCommand(ctx context.Context, req *api.DaemonRequest) *api.DaemonResponse {
	if len(req.Args) == 0 || !slices.Contains(api.DaemonServed, req.Args[0]) {
		return api.Failure(api.KindBadRequest, cli.ExitUsage, map[string]string{"args": strings.Join(req.Args, " ")},
			"the daemon does not serve %q", strings.Join(req.Args, " "))
	}
	if !filepath.IsAbs(req.Dir) {
		return api.Failure(api.KindBadRequest, cli.ExitUsage, map[string]string{"dir": req.Dir}, "request without an absolute working directory")
	}
	// The command reads the settings file once, here included.
	memo := new(cli.Memo)
	names := clientEnvNames()
	if engine.dir != "" {
		names = requestEnvNames(memo, engine.dir, req.Env)
	}
	environ := client.FilterEnv(req.Env, names)
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var stderr bytes.Buffer
	stdout := valueBuffer{compact: req.StdoutJSON}
	env := &cli.Env{
		Stdin:   bytes.NewReader(req.Stdin),
		Stdout:  &stdout,
		Stderr:  &stderr,
		Getenv:  func(k string) string { return vars[k] },
		Environ: withoutSecrets(environ),
		Prog:    "ptojit",
		Dir:     req.Dir,
		Memo:    memo,
	}
	if req.Args[0] != "build" {
		jit.AwaitSync(ctx) // a build completes it in Driver.Build
	}
	err := program().Run(ctx, env, req.Args)
	if kind, data := commandKind(err); kind != "" {
		// A failure the clients word themselves from its kind and data:
		// the message goes in the reply, not on the command's stderr.
		r := api.Failure(kind, cli.ExitCode(err), data, "%v", err)
		r.Stderr = stderr.Bytes()
		return withStdout(r, req, stdout.Bytes())
	}
	code := cli.Report(env, "ptojit", err)
	return withStdout(&api.DaemonResponse{Stderr: stderr.Bytes(), Exit: code}, req, stdout.Bytes())
}

// valueBuffer holds a command's standard output in the daemon; compact
// when the client asked for it as a JSON value (cli.CompactJSON).
type valueBuffer struct {
	bytes.Buffer
	compact bool
}

// CompactJSON reports whether the output is sent as a JSON value.
func (b *valueBuffer) CompactJSON() bool { return b.compact }

// withStdout sets r's output to out: as StdoutValue when req asks for
// JSON and out is one JSON value, else as Stdout.
func withStdout(r *api.DaemonResponse, req *api.DaemonRequest, out []byte) *api.DaemonResponse {
	if v := bytes.TrimSpace(out); req.StdoutJSON && len(v) > 0 && json.Valid(v) {
		r.StdoutValue = v
	} else {
		r.Stdout = out
	}
	return r
}

// commandKind returns the reply kind of a command that failed with err,
// and its data, when the failure is one of the store's that a kind names
// (a build never fails so: it runs uncached): an entry the cache does not
// hold (miss) or holds damaged, a cache directory refused for its owner or
// mode, a store that cannot be opened or is held by another process
// (store_failure). Any other failure has no kind: the client reads the
// command's exit code and output.
func commandKind(err error) (string, map[string]string) {
	var (
		miss  *cache.MissError
		owner *cache.OwnerError
		held  *heldError
		open  *cache.OpenError
		space *cache.SpaceError
	)
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &miss) && miss.Corrupt:
		return api.KindDamaged, map[string]string{"key": miss.Key.String(), "reason": miss.Reason}
	case errors.As(err, &miss):
		return api.KindMiss, map[string]string{"key": miss.Key.String()}
	case errors.As(err, &owner):
		return api.KindRefused, map[string]string{"path": owner.Path, "dir": owner.Dir, "owner": strconv.Itoa(owner.UID),
			"mode": fmt.Sprintf("%04o", owner.Mode.Perm()), "user": strconv.Itoa(owner.Want)}
	case errors.As(err, &held):
		return api.KindStoreFailure, held.h.Data(held.dir)
	case errors.As(err, &open):
		return api.KindStoreFailure, map[string]string{"path": open.Dir, "reason": open.Err.Error()}
	case errors.As(err, &space):
		return api.KindStoreFailure, map[string]string{"path": space.Dir,
			"reason": fmt.Sprintf("its file system has %s free, the store needs %s to write", cache.FormatSize(space.Free), cache.FormatSize(space.Need))}
	}
	return "", nil
}

// serverLoad is the daemon's server as the idle trim watches it.
type serverLoad struct{ *daemon.Server }

// InFlight is the requests the server serves now.
func (s serverLoad) InFlight() int { return s.Info().InFlight }
