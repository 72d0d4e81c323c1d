package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/limit"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/cache/remote/tiers"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/jit"
	"github.com/ptojit/ptojit/jit/inspect"
	"github.com/ptojit/ptojit/observe"
	"github.com/ptojit/ptojit/toolchain"
)

func init() {
	register(&cli.Command{
		Name:    "build",
		Usage:   "build --request FILE|- [--json] [--no-daemon] [--cache-dir DIR]",
		Summary: "build a chip callable from a request, answering from the cache when it can",
		Long: `Reads a build request (JSON; "-" reads standard input), computes the identity
of every input, answers from the cache or runs the toolchain, and writes the
outputs to the request's output directory: the orchestration and kernel
shared objects and the ChipCallable blob (chip_callable.bin).

Relative paths in a request are relative to the request file's directory
(the working directory for standard input). Without output_dir the outputs
go to ptojit-out/ beside the request.

The summary says hit (from the cache, no compiler ran), miss (compiled and
published), uncached (compiled, not cached: every reason is listed) or error.
--json prints the response object instead.

The cache is PTOJIT_CACHE_DIR, else $XDG_CACHE_HOME/ptojit, else
~/.cache/ptojit; PTOJIT_CACHE_READONLY=1 (or readonly in its settings file,
see "ptojit config") never writes it. The build runs in the daemon that
owns the cache (started on demand; see "ptojit help daemon"; with
PTOJIT_CACHE_READONLY=1 a running daemon is used but none is started). With
--no-daemon or PTOJIT_DAEMON=0 it runs in this process; if another process
(a daemon) holds the store, it compiles without the cache ("uncached") and
says which process holds it, or with --wait waits for it.

With PTOJIT_CACHE_VERIFY=1 (or verify in the settings file) every hit is
also compiled and its outputs compared byte for byte with the stored ones;
a difference is an error naming the key, each output that differs and both
digests, counted as verify_mismatch in "ptojit cache stats", and nothing is
published or written.

An invalid request is reported as FILE:LINE:COL: FIELD: what is wrong, e.g.
  request.json:10:32: kernels[0].signature[1]: unknown direction "UP": want IN, OUT, INOUT or SCALAR

Exit status: 0 hit, miss or uncached; 1 error (a compile error, a verify
mismatch, an uncached build with --require-cached or PTOJIT_REQUIRE_CACHED=1); 2 usage error or invalid input (a missing or invalid request, a
missing source).`,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			var o buildOptions
			fs.StringVar(&o.request, "request", "", "the build request, FILE or - for standard input")
			fs.BoolVar(&o.json, "json", false, "print the response as JSON")
			fs.BoolVar(&o.noDaemon, "no-daemon", false, "open the cache in this process instead of asking the daemon")
			fs.StringVar(&o.cacheDir, "cache-dir", "", "the cache directory (default: PTOJIT_CACHE_DIR or the user cache directory)")
			fs.BoolVar(&o.wait, "wait", false, "in this process: wait while another process holds the cache instead of building without it")
			fs.BoolVar(&o.trace, "trace", false, "print where the build's time went (microseconds per phase) to standard error")
			fs.BoolVar(&o.requireCached, "require-cached", false, "exit 1 when the build runs uncached (also PTOJIT_REQUIRE_CACHED=1): for CI jobs that must cache")
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("build: unexpected argument %q", args[0])
				}
				if o.request == "" {
					return cli.Usagef("build: --request FILE|- is required")
				}
				if _, err := requiresCached(env, o.requireCached); err != nil {
					return err
				}
				if env.Checked() {
					return checkRequest(env, o.request)
				}
				return runBuild(ctx, env, o)
			}
		},
	})
}

type buildOptions struct {
	request  string
	json     bool
	noDaemon bool
	cacheDir string
	wait     bool
	trace    bool
	// requireCached: an uncached build fails (exit 1).
	requireCached bool
}

// checkRequest reads and validates a request, for env.CheckOnly (the
// caller buffers standard input, so the command can read it again).
func checkRequest(env *cli.Env, name string) error {
	req, err := readRequest(env, name)
	if err != nil {
		return err
	}
	return checkSources(req)
}

// checkSources checks that the request's sources exist, before anything
// is opened; the build would report the same error.
func checkSources(req *api.Request) error {
	for _, fp := range req.Paths() {
		if fp.Field != "orchestration.source" && !strings.HasSuffix(fp.Field, "].source") {
			continue
		}
		fi, err := os.Stat(fp.Path)
		switch {
		case err != nil:
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return cli.Invalid(req.Locate(&api.FieldError{Field: fp.Field, Msg: fmt.Sprintf("%s: %v", filepath.Base(fp.Path), err)}))
		case !fi.Mode().IsRegular():
			return cli.Invalid(req.Locate(&api.FieldError{Field: fp.Field, Msg: filepath.Base(fp.Path) + " is not a regular file"}))
		}
	}
	return nil
}

// openRequest is cli.OpenInput of a request; a daemon reads a request
// file through jit.ReadStable, which spares a hit's request file the
// open, reads and close while its stat data are unchanged.
func openRequest(env *cli.Env, name string) (io.ReadCloser, error) {
	if engine.dir == "" || name == "" || name == "-" {
		return cli.OpenInput(env, name)
	}
	b, err := jit.ReadStable(env.Abs(name), api.MaxRequestBytes+1)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// readRequest reads, validates and resolves a request: relative paths are
// resolved against the request file's directory, or env's working
// directory for standard input. An invalid request is a usage error.
func readRequest(env *cli.Env, name string) (*api.Request, error) {
	return readRequestIn(env, name, "")
}

// readRequestIn is readRequest for a command using the cache directory
// cacheDir ("" for the daemon's or the default), whose settings file may
// name the base directory.
func readRequestIn(env *cli.Env, name, cacheDir string) (*api.Request, error) {
	in, err := openRequest(env, name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, cli.Invalid(fmt.Errorf("%s: cannot read the request: %w", name, err))
	}
	defer in.Close()
	file := name
	if name == "" || name == "-" {
		file = "<stdin>"
	}
	req, err := api.ReadRequestFile(in, file)
	if err != nil {
		return nil, cli.Invalid(err)
	}
	dir := env.Abs(".")
	if name != "" && name != "-" {
		req.File = env.Abs(name)
		dir = filepath.Dir(req.File)
	}
	if err := req.Resolve(dir); err != nil {
		return nil, err
	}
	if req.Toolchain.Policy == "" && env.Getenv(jit.PolicyVariable) == "" {
		// The request's toolchain.policy, else PYPTO_CACHE_IDENTITY,
		// else the settings file's policy, else the default (build).
		p, err := fileSetting(env, cacheDir, "policy")
		if err != nil {
			return nil, err
		}
		req.Toolchain.Policy = p
		if p != "" {
			req.Toolchain.PolicySource = "ptojit.conf policy"
		}
	}
	if req.BaseDir == "" {
		// The request's base_dir, else PTOJIT_BASE_DIR, else the
		// settings file's base_dir, else the project root of the
		// request's directory.
		b, err := baseDirSetting(env, cacheDir)
		if err != nil {
			return nil, err
		}
		if b != "" {
			req.BaseDir = b
		} else {
			req.BaseDir = api.DefaultBaseDir(dir)
		}
	}
	return req, nil
}

// baseDirSetting returns the base directory env's settings name for a
// command using cacheDir: PTOJIT_BASE_DIR (relative to env's directory),
// else the settings file's base_dir (absolute), else "".
func baseDirSetting(env *cli.Env, cacheDir string) (string, error) {
	if b := env.Getenv(jit.BaseDirVariable); b != "" {
		return env.Abs(b), nil
	}
	if cacheDir == "" {
		cacheDir = engine.dir
	}
	cacheDir, err := cacheDirOf(env, cacheDir)
	if err != nil {
		return "", nil // no cache directory: no settings file
	}
	f, err := loadConfigIn(env.Memo, cacheDir)
	if err != nil {
		return "", err
	}
	if s, _ := config.ResolveKey(f, nil, "base_dir"); s.Value != "" {
		if !filepath.IsAbs(s.Value) {
			return "", cli.Usagef("%s:%d: base_dir: %q is not an absolute path", f.Path, s.Line, s.Value)
		}
		return filepath.Clean(s.Value), nil
	}
	return "", nil
}

// fileSetting returns the value of the settings file's key name for a
// command using cacheDir, "" when the file does not set it or there is no
// cache directory.
func fileSetting(env *cli.Env, cacheDir, name string) (string, error) {
	if cacheDir == "" {
		cacheDir = engine.dir
	}
	cacheDir, err := cacheDirOf(env, cacheDir)
	if err != nil {
		return "", nil
	}
	f, err := loadConfigIn(env.Memo, cacheDir)
	if err != nil {
		return "", err
	}
	if s, _ := config.ResolveKey(f, nil, name); s.Source == config.FromFile {
		return s.Value, nil
	}
	return "", nil
}

// engine holds what a long-lived engine process (the daemon) shares with
// the build and key commands it runs: its open store and its identity memo.
// Zero fields mean the in-process defaults: the store is opened for each
// command, and identities are computed afresh. Set once, before any
// command runs (ShareEngine).
var engine struct {
	// store is the daemon's store.
	store      cacheStore
	identities *toolchain.InstallationIdentityCache
	// listings are the daemon's directory listings, which answer the
	// checks of searched-and-absent paths (jit.Options.Listings).
	listings *jit.DirListings
	// watcher is the daemon's watcher, whose latest memo drops a build's
	// --trace names.
	watcher *jit.Watcher
	// remotes are the daemon's remote tiers, one per configuration its
	// requests select; dir is its cache directory.
	remotes *tiers.Pool
	dir     string
	// storeErr is why the daemon could not open its store (store is nil):
	// builds run uncached with a warning; cache clear wipes the
	// directory and calls wiped.
	storeErr error
	storeDir string
	// wiped, set by the daemon, is called when cache clear wiped the
	// directory (or must wipe it at exit: atExit).
	wiped func(atExit bool)
}

// ShareEngine makes the build and key commands use store (never closed by
// them) and ids instead of opening the cache themselves. The daemon calls
// it before serving.
func ShareEngine(store cacheStore, ids *toolchain.InstallationIdentityCache) {
	engine.store, engine.identities = store, ids
}

// shareBrokenEngine is ShareEngine for a daemon whose store in dir could
// not be opened: its builds run uncached with a warning naming err, and
// cache clear wipes dir, then calls wiped.
func shareBrokenEngine(dir string, err error, ids *toolchain.InstallationIdentityCache, wiped func(atExit bool)) {
	engine.store, engine.identities = nil, ids
	engine.storeDir, engine.storeErr, engine.wiped = dir, err, wiped
}

// openStoreWait bounds the wait of a command for a cache directory held by
// another process (a hung one, perhaps): after it, a build runs uncached.
var openStoreWait = time.Minute

// storeFor returns the store a command uses and the function that releases
// it. When the cache cannot be opened (damaged, read-only file system, no
// space, held by another process) it returns a nil store and the error as
// storeErr, and the command goes on without a cache. A cache another
// process holds is waited for only with wait (at most openStoreWait);
// otherwise storeErr is a *heldError naming the holder. verify is the
// verify setting in force for a store that is returned (read with the
// store's own settings), else false.
func storeFor(ctx context.Context, env *cli.Env, dir string, readOnly, wait bool) (st cacheStore, release func() error, storeErr error, verify bool, err error) {
	if engine.store != nil {
		opt, verify, err := storeSettings(env, dir)
		if err != nil {
			return nil, nil, nil, false, err
		}
		return sharedStore(opt), func() error { return nil }, nil, verify, nil
	}
	if engine.storeErr != nil {
		return nil, func() error { return nil }, engine.storeErr, false, nil
	}
	octx, cancel := context.WithTimeout(ctx, openStoreWait)
	defer cancel()
	b, verify, err := openStore(octx, env, dir, readOnly, wait)
	var oe *cache.OpenError
	var held *heldError
	switch {
	case err == nil:
		return b, b.Close, nil, verify, nil
	case ctx.Err() != nil:
		return nil, nil, nil, false, err
	case errors.As(err, &held), errors.As(err, &oe):
		return nil, func() error { return nil }, err, false, nil
	}
	return nil, nil, nil, false, err
}

// processIdentities is the identity memo of an engine process that is not
// the daemon: one command (key diff reads two requests) reads each
// installation once.
var processIdentities = sync.OnceValue(func() *toolchain.InstallationIdentityCache {
	return toolchain.NewInstallationIdentityCache(toolchain.Options{})
})

// identities returns the daemon's shared memo, or this process's.
func identities() *toolchain.InstallationIdentityCache {
	if engine.identities != nil {
		return engine.identities
	}
	return processIdentities()
}

// driverFor returns the Driver of a command: with the shared identity memo
// when there is one, reading env's variables and running the tools with
// env's environment as a daemon of cacheDir ("" for the default) keeps it
// (toolEnv), verifying every hit with verify (storeFor), with the remote
// tiers rt (nil: none) behind store.
func driverFor(env *cli.Env, cacheDir string, store cache.Core, storeErr error, rt *remote.Chain, verify bool) *jit.Driver {
	o := jit.Options{Store: store, Getenv: env.Getenv, Environ: toolEnv(env, cacheDir), Identities: identities(), Verify: verify, Listings: engine.listings}
	if store == nil && storeErr != nil {
		var oe *cache.OpenError
		var held *heldError
		o.StoreErr, o.StoreDir = storeErr, engine.storeDir
		switch {
		case errors.As(storeErr, &held):
			o.StoreDir = held.dir
		case errors.As(storeErr, &oe):
			o.StoreDir = oe.Dir
		}
	}
	if store != nil && rt != nil {
		o.Store = rt.Over(store, verify)
	}
	return jit.New(o)
}

// remoteFor returns the remote tier of a build command using the cache
// directory cacheDir ("" for the default), the function that ends it, and
// the warnings of a tier that cannot be used, which the build reports
// (standard error and --json's warnings). The tier is the one the settings
// in force select (the client's PTOJIT_REMOTE* variables, else the
// settings file's remote keys): in the daemon, one of its tiers (kept open
// for later requests); else one opened for this command, which the
// returned function drains (for at most tiers.Drain, warning about what it
// dropped) and closes. No tier is nil. A tier that cannot be configured (a
// bad URL) is a warning: it can fail no build.
func remoteFor(env *cli.Env, cacheDir string) (_ *remote.Chain, end func(), warnings []string) {
	none := func() {}
	if engine.storeErr != nil || (engine.store != nil && engine.remotes == nil) {
		return nil, none, nil
	}
	if cacheDir == "" {
		cacheDir = engine.dir
	}
	cacheDir, err := cacheDirOf(env, cacheDir)
	if err != nil {
		return nil, none, nil
	}
	s, err := resolveSettings(env.Memo, cacheDir, env.Getenv)
	if err != nil {
		// storeFor has refused the same settings already.
		return nil, none, nil
	}
	disabled := func(err error) []string { return []string{fmt.Sprintf("remote cache disabled: %v", err)} }
	rs, ok, err := tiers.Of(s.list)
	if err != nil {
		return nil, none, disabled(err)
	}
	if !ok {
		return nil, none, nil
	}
	if engine.remotes != nil {
		r, err := engine.remotes.Get(rs)
		if err != nil {
			return nil, none, disabled(err)
		}
		if w := tiers.CredentialWarning(rs, env.Getenv, engine.remotes.Getenv); w != "" {
			warnings = append(warnings, w)
		}
		return r, none, warnings
	}
	stderr := env.Stderr
	r, err := tiers.Open(rs, env.Getenv, false, func(_, msg string) { fmt.Fprintf(stderr, "ptojit: warning: %s\n", msg) })
	if err != nil {
		return nil, none, disabled(err)
	}
	return r, func() {
		tiers.CloseChain(r, func(format string, args ...any) {
			fmt.Fprintf(stderr, "ptojit: warning: "+format+"\n", args...)
		})
	}, nil
}

// openStore opens the cache in this process (see openNow) and reports
// whether the verify setting is on.
func openStore(ctx context.Context, env *cli.Env, dir string, readOnly, wait bool) (*cache.Badger, bool, error) {
	dir, err := cacheDirOf(env, dir)
	if err != nil {
		return nil, false, err
	}
	opt, verify, err := storeSettings(env, dir)
	if err != nil {
		return nil, false, err
	}
	opt.ReadOnly = opt.ReadOnly || readOnly
	b, err := openNow(ctx, env, dir, opt, wait)
	return b, verify, err
}

func runBuild(ctx context.Context, env *cli.Env, o buildOptions) error {
	began := time.Now()
	req, err := readRequestIn(env, o.request, o.cacheDir)
	readUS := time.Since(began).Microseconds()
	if err == nil {
		err = checkSources(req)
	}
	if err != nil {
		if o.json {
			// A frontend reading --json gets a response even for a
			// request it could not send correctly.
			if werr := cli.WriteJSON(env.Stdout, &api.Response{Status: api.StatusError, Error: err.Error()}); werr != nil {
				return werr
			}
			fmt.Fprintf(env.Stderr, "ptojit: %v\n", err)
			return cli.Exit(cli.ExitCode(err))
		}
		return err
	}
	mustCache, err := requiresCached(env, o.requireCached)
	if err != nil {
		return err
	}
	t := time.Now()
	store, release, storeErr, verify, err := storeFor(ctx, env, o.cacheDir, false, o.wait)
	if err != nil {
		return err
	}
	if ctx, err = compileContext(ctx, env, o.cacheDir); err != nil {
		release()
		return err
	}
	rt, endRemote, remoteWarnings := remoteFor(env, o.cacheDir)
	storeUS := time.Since(t).Microseconds()
	resp, buildErr := driverFor(env, o.cacheDir, store, storeErr, rt, verify).Build(ctx, req)
	resp.Warnings = append(remoteWarnings, resp.Warnings...)
	if resp.Status == api.StatusUncached {
		resp.Warnings = append(resp.Warnings, rootWarnings(req)...)
		if mustCache && buildErr == nil {
			buildErr = uncachedFailure(resp)
			if o.json {
				resp.Warnings = append(resp.Warnings, buildErr.Error())
			}
		}
	}
	t = time.Now()
	observe.ObserveBuild(resp.Status, time.Since(began))
	if store != nil {
		// Only a cache the build could use takes its record (one
		// another user owns is refused, and its log with it).
		logBuild(env, o.cacheDir, resp)
	}
	if engine.store != nil {
		daemonLog.Build(resp)
	}
	endRemote()
	if err := release(); err != nil && buildErr == nil {
		// The outputs are written and right: a cache that failed to
		// close is a warning, not a failed build.
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("closing the cache: %v", err))
	}
	if resp.Timings.Phases != nil {
		// The command's own phases around the build.
		resp.Timings.Phases["read"] = readUS
		resp.Timings.Phases["store"] = storeUS + time.Since(t).Microseconds()
	}
	return reportBuild(env, o, req, resp, buildErr)
}

// reportBuild prints the response of a build (its warnings, its trace,
// then JSON or the summary) and returns the command's error.
func reportBuild(env *cli.Env, o buildOptions, req *api.Request, resp *api.Response, buildErr error) error {
	for _, w := range resp.Warnings {
		fmt.Fprintf(env.Stderr, "ptojit: warning: %s\n", w)
	}
	if o.trace {
		inspect.WriteTrace(env.Stderr, resp)
		if engine.watcher != nil {
			writeDrops(env.Stderr, engine.watcher.Drops())
		}
	}
	if o.json {
		if err := cli.WriteJSON(env.Stdout, resp); err != nil {
			return err
		}
		if buildErr != nil {
			return cli.Exit(cli.ExitFailure)
		}
		return nil
	}
	if buildErr != nil {
		var fe *api.FieldError
		if errors.As(buildErr, &fe) {
			return cli.Invalid(req.Locate(buildErr))
		}
		return buildErr
	}
	return inspect.WriteSummary(env.Stdout, resp)
}

// writeDrops prints, for --trace, the latest events that dropped memos of
// the daemon (what a build after them read again, and why).
func writeDrops(w io.Writer, drops []jit.MemoDrop) {
	for _, d := range drops {
		fmt.Fprintf(w, "trace: memos dropped %s ago: %s\n", time.Since(d.At).Round(time.Millisecond), d)
	}
}

// fileExists reports whether p names an existing regular file.
func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// cacheStore is what the engine's commands use of a store: the core face
// with the capabilities the stores of package cache have. The maintenance
// functions of package cache (cache.Verify, cache.Trim, ...) reach the
// store of package cache under it.
type cacheStore = limit.Shared
