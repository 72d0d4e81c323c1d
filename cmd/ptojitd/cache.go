package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/report"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/jit/inspect"
)

// cacheRunFunc is what one cache subcommand does with the store it opened.
type cacheRunFunc func(ctx context.Context, env *cli.Env, o *cacheOptions, s cacheStore, args []string) error

// cacheSubcommand is the cache subcommand name: the flags every cache
// subcommand takes and extra's own, and a RunFunc that opens the store
// (or forwards to the daemon) and runs run on it.
func cacheSubcommand(name, usage, summary, long string, nargs int, writes bool, run cacheRunFunc, extra func(fs *pflag.FlagSet, o *cacheOptions)) *cli.Command {
	return &cli.Command{
		Name:    name,
		Usage:   "cache " + usage,
		Summary: summary,
		Long:    strings.TrimSpace(long + "\n\n" + cacheFlagsHelp),
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			o := &cacheOptions{}
			fs.StringVar(&o.dir, "cache-dir", "", "the cache directory (default: PTOJIT_CACHE_DIR, $XDG_CACHE_HOME/ptojit or ~/.cache/ptojit)")
			fs.StringVar(&o.maxSize, "max-size", "", "the size limit, e.g. 500M or 5G (default: PTOJIT_CACHE_MAX_SIZE, else max_size of ptojit config, else 5G)")
			fs.BoolVar(&o.json, "json", false, "print JSON")
			fs.BoolVar(&o.wait, "wait", false, "in this process: wait while another process holds the cache")
			fs.Bool("no-daemon", false, "open the cache in this process instead of asking the daemon")
			if name == "verify" {
				fs.BoolVar(&o.dryRun, "dry-run", false, "report the damage, remove nothing")
			}
			if name == "show" {
				fs.BoolVar(&o.raw, "raw", false, "print the key record's wire bytes in hex instead of its tree")
			}
			if extra != nil {
				extra(fs, o)
			}
			return func(ctx context.Context, env *cli.Env, args []string) error {
				return runCacheSubcommand(ctx, env, name, nargs, writes, o, args, run)
			}
		},
	}
}

// runCacheSubcommand checks the arguments of the cache subcommand name,
// opens the store (or forwards the command to the daemon that holds it,
// or wipes a store that cannot be opened when the command is clear) and
// runs run on it.
func runCacheSubcommand(ctx context.Context, env *cli.Env, name string, nargs int, writes bool, o *cacheOptions, args []string, run cacheRunFunc) error {
	own, ownWrites, err := o.ownFlags()
	if err != nil {
		return err
	}
	if err := checkCacheArgs(env, name, nargs, o, args); err != nil || env.Checked() {
		return err
	}
	o.look = !writes || name == "verify"
	writes = writes || ownWrites
	if o.dryRun {
		writes = false
	}
	s, release, err := openCache(ctx, env, o, !writes)
	var held *heldError
	if errors.As(err, &held) && held.h.Daemon && (!writes || !o.opt.ReadOnly) {
		// A live daemon serves the command with the
		// store it holds.
		fwd := append([]string{"cache", name, "--cache-dir", o.resolvedDir}, args...)
		if o.json {
			fwd = append(fwd, "--json")
		}
		if o.maxSize != "" {
			fwd = append(fwd, "--max-size", o.maxSize)
		}
		fwd = append(fwd, own...)
		if o.dryRun {
			fwd = append(fwd, "--dry-run")
		}
		if o.raw {
			fwd = append(fwd, "--raw")
		}
		if ok, ferr := forwardToDaemon(env, fwd); ok {
			return ferr
		}
	}
	if err != nil {
		if name == "clear" && len(args) == 0 && canWipe(ctx, err) && !o.opt.ReadOnly {
			return wipeCache(env, o, err, false)
		}
		var oe *cache.OpenError
		if errors.As(err, &oe) && ctx.Err() == nil {
			return fmt.Errorf("%w; remedy: %s", err, cache.Remedy(err))
		}
		return err
	}
	before := heapAllocated()
	err = run(ctx, env, o, s, args)
	if cerr := release(); err == nil {
		err = cerr
	}
	if engine.store != nil && returnsMemory(name, o, heapAllocated()-before) {
		// The daemon's store: the command's transient buffers (entries
		// listed, blobs verified, tables rebuilt) go back to the system
		// before the reply, not when memory is short, so that the daemon
		// is at its live size between commands.
		debug.FreeOSMemory()
	}
	if errors.Is(err, report.ErrWipe) {
		return wipeCache(env, o, err, engine.wiped != nil)
	}
	return err
}

// freeAfter is how many bytes a whole-store command must have allocated
// for the daemon to return its freed memory after it. The collection that
// returns it marks the whole heap, which on a store of 100,000 entries is
// about 6 ms: a trim with nothing to do must not pay it (see
// bench/scale.sh).
const freeAfter = 16 << 20

// returnsMemory reports whether the daemon returns its freed memory after
// the cache subcommand name, with o, which allocated allocated bytes
// (those of the requests served meanwhile included): a command that
// scans the whole store and left that much behind.
func returnsMemory(name string, o *cacheOptions, allocated uint64) bool {
	return scansStore(name, o) && allocated >= freeAfter
}

// heapAllocated is the number of bytes this process has allocated on the
// heap so far (runtime/metrics; no stop of the world).
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// scansStore reports whether the cache subcommand name, with o, reads or
// rewrites the whole store: verify, trim, clear, and ls of every entry.
func scansStore(name string, o *cacheOptions) bool {
	switch name {
	case "verify", "trim", "clear":
		return true
	case "ls":
		return o.ls.limit <= 0
	}
	return false
}

func init() {
	register(&cli.Command{
		Name:    "cache",
		Usage:   "cache stats|ls|show KEY|verify|trim|clear [--json]",
		Summary: "inspect, verify and trim the artifact cache",
		Long: `The artifact cache holds entries (a key record, outputs, times) and the
content-addressed blobs they name. The daemon serves these commands with the
store it holds; without a daemon (PTOJIT_DAEMON=0) they open the cache in
this process, waiting while another process holds it.

Flags go after the subcommand: ptojit cache stats --json.

` + cacheFlagsHelp,
		Subcommands: cacheSubcommands(),
	})
}

// cacheSubcommands are the subcommands of cache.
func cacheSubcommands() []*cli.Command {
	return []*cli.Command{
		cacheSubcommand("stats", "stats [--zero] [--since DURATION] [--plot FILE.svg] [--json]", "print counters and size", `
Prints the cache directory, the number of entries, the size against its
limit, and the counters: hits (local, and remote: lookups the local store
missed and the remote tier answered), misses, the hit rate, the time saved
(the stored compile time of every entry served, summed over its hits), the
bytes served, damaged lookups (misses on a damaged
entry, counted apart), damaged items removed, uncached builds with their
reasons, errors (failed builds, failed cache reads and writes),
verify_mismatch (hits that a fresh compile in the verify mode,
PTOJIT_CACHE_VERIFY=1, contradicted) and evictions, and since when they
count; then what is wrong with the store, if anything (a truncated value
log, too little free space, a recovered panic).

--zero zeroes the counters first (as ccache -z does; entries and size
stay) and notes the time, which "since" shows from then on.

--since DURATION (24h, 90m) adds up the request log instead (one record
per build, requests.log in the cache directory, rotated beyond
log_max_size): builds, hits, misses, the hit rate, the time saved and the
bytes served over that period. --plot FILE.svg draws the log (over
--since, else all of it): the hit rate, the time saved and the builds per
minute (two hours or less), hour (two days or less) or day.`, 0, false, runStats, statsFlags),
		cacheSubcommand("log", "log [--limit N] [--json]", "print the last builds of the request log", `
Prints the last records of the request log (default 20; --limit 0 prints
all): time, status, key prefix, total time, bytes, the time a hit saved
and why a build missed. The log (requests.log in the cache directory, one
JSON object per line) keeps one record per build, rotated beyond
log_max_size (ptojit config) with one older file kept. --json prints the
records.`, 0, false, runCacheLog, logFlags),
		cacheSubcommand("metrics", "metrics", "print the counters and build durations as Prometheus metrics", `
Prints the cache's counters and size (as "cache stats --json" has them) and,
when the daemon serves the command, the builds it answered and their
durations by status, in the Prometheus text format: ptojit_builds_total,
ptojit_build_duration_seconds, ptojit_cache_hits_total{tier}, ... Counts
and latencies only: no key, path or name. "ptojit daemon metrics" is the
same; the metrics_listen and metrics_textfile settings serve them.`, 0, false, runCacheMetrics, nil),
		lsSubcommand(),
		cacheSubcommand("show", "show KEY [--raw] [--json]", "print one entry", `
Prints one entry. KEY is the full 64-hex key or a unique prefix of it (at
least 4 hex digits), like a git object name. The key record is printed as
the indented tree "ptojit key" prints (--raw: its wire bytes in hex);
"ptojit key diff" explains and compares records.`, 1, false, runCacheShow, nil),
		cacheSubcommand("verify", "verify [--dry-run] [--json]", "check every entry and blob; remove damaged entries", `
Checks every entry (results and manifests) against its own SHA-256 and
re-hashes every blob against its digest, reports each damaged item,
removes the entries that are damaged or name a corrupt or missing blob,
and deletes blobs that no entry names. Exits 1 when it found damage.
With --dry-run, or PTOJIT_CACHE_READONLY=1, it only reports.`, 0, true, maintaining(runCacheVerify), nil),
		cacheSubcommand("trim", "trim [--max-size S] [--json]", "evict least-recently-used entries down to the size limit", `
Evicts least-recently-used entries until the blobs fit in the size limit
(--max-size, else PTOJIT_CACHE_MAX_SIZE, else max_size of ptojit config,
else 5G; 0 means no limit: only
orphan blobs are deleted; "ptojit cache clear" empties the cache),
deletes blobs that no entry names, then compacts the database and runs
Badger's value-log garbage collection, which returns the space of deleted
blobs to the file system (except in the value-log file being written).`, 0, true, maintaining(runCacheTrim), nil),
		cacheSubcommand("clear", "clear [--json]", "remove every entry and blob (counters are kept)", `
Removes every entry and blob. The counters that "ptojit cache stats" shows
are kept. A cache that cannot be opened (damaged tables) or cleared is
emptied by removing its database files (Badger's files only; other files in
the directory stay), unless another process holds it.`, 0, true, maintaining(runCacheClear), nil),
	}
}

const cacheFlagsHelp = `Environment: PTOJIT_CACHE_DIR (the directory), PTOJIT_CACHE_MAX_SIZE (the
limit), PTOJIT_CACHE_READONLY=1 (never write: verify only reports; trim and
clear fail); each overrides its key in the settings file (ptojit config).`

type cacheOptions struct {
	dir     string
	maxSize string
	json    bool
	wait    bool
	dryRun  bool // verify: report, remove nothing
	raw     bool // show: the key record in hex
	look    bool // the command only looks: a missing directory is an error
	// stats holds the flags of cache stats (see ownFlags).
	stats statsOptions
	// ls holds the flags of cache ls (see ownFlags).
	ls lsOptions
	// resolved by openCache
	resolvedDir string
	opt         cache.Options // opt.ReadOnly: the user asked for it
}

// checkCacheArgs checks a cache subcommand's arguments and flags before
// anything is opened: nargs arguments (a key or key prefix for show), a
// valid --max-size and cache environment.
func checkCacheArgs(env *cli.Env, name string, nargs int, o *cacheOptions, args []string) error {
	if len(args) != nargs {
		if nargs == 0 {
			return cli.Usagef("cache %s: unexpected argument %q", name, args[0])
		}
		return cli.Usagef("cache %s: want one KEY (the key or a unique prefix of at least %d hex digits)", name, minKeyPrefix)
	}
	if nargs == 1 {
		if err := checkKeyPrefix("cache "+name, args[0]); err != nil {
			return err
		}
	}
	if _, err := cache.EnvOptions(env.Getenv); err != nil {
		return cli.Invalid(fmt.Errorf("cache: %v", err))
	}
	if o.maxSize != "" {
		if _, err := cache.ParseSize(o.maxSize); err != nil {
			return cli.Usagef("cache: --max-size: %v", err)
		}
	}
	return nil
}

// checkKeyPrefix checks that arg can name a key: 4 to 64 hex digits.
func checkKeyPrefix(cmd, arg string) error {
	p := strings.ToLower(arg)
	if len(p) < minKeyPrefix || len(p) > 64 || strings.Trim(p, "0123456789abcdef") != "" {
		return cli.Usagef("%s: %q is not a key or a key prefix of at least %d hex digits", cmd, arg, minKeyPrefix)
	}
	return nil
}

// maintaining adapts a command that uses only the maintenance face of the
// store to the signature of sub.
func maintaining(run func(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Core, args []string) error) func(context.Context, *cli.Env, *cacheOptions, cacheStore, []string) error {
	return func(ctx context.Context, env *cli.Env, o *cacheOptions, s cacheStore, args []string) error {
		return run(ctx, env, o, s, args)
	}
}

// openCache returns the store and the function that releases it: the
// daemon's shared store (see ShareEngine), else the directory opened in this
// process (held by another process: a *heldError, or with --wait a wait of
// at most openStoreWait); read-only for the commands that only read.
func openCache(ctx context.Context, env *cli.Env, o *cacheOptions, readOnly bool) (cacheStore, func() error, error) {
	dir, err := cacheDirOf(env, o.dir)
	if err != nil {
		return nil, nil, err
	}
	opt, err := storeOptions(env, dir)
	if err != nil {
		return nil, nil, err
	}
	if o.maxSize != "" {
		n, err := cache.ParseSize(o.maxSize)
		if err != nil {
			return nil, nil, cli.Usagef("cache: --max-size: %v", err)
		}
		opt.MaxBytes = n
	}
	o.resolvedDir = dir
	o.opt = opt
	if engine.store != nil {
		return sharedStore(opt), func() error { return nil }, nil
	}
	if engine.storeErr != nil {
		return nil, nil, engine.storeErr
	}
	if o.look {
		if err := lookable(dir); err != nil {
			return nil, nil, err
		}
	}
	opt.ReadOnly = opt.ReadOnly || readOnly
	octx, cancel := context.WithTimeout(ctx, openStoreWait)
	defer cancel()
	s, err := openNow(octx, env, o.resolvedDir, opt, o.wait)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// canWipe reports whether a store that failed to open with err may be
// wiped by cache clear: it is damaged, not held by another process.
func canWipe(ctx context.Context, err error) bool {
	var oe *cache.OpenError
	return ctx.Err() == nil && errors.As(err, &oe) && !errors.Is(err, cache.ErrLocked) && !errors.Is(err, cache.ErrNotOwned)
}

// wipeCache removes the database files of a store that failed with cause
// (cache.Wipe: Badger's files only). In the daemon the store is the
// daemon's own: with atExit the daemon removes them as it exits, after
// closing it; else (the daemon could not open it) at once, and the daemon
// exits so that the next command opens the fresh cache.
func wipeCache(env *cli.Env, o *cacheOptions, cause error, atExit bool) error {
	dir := o.resolvedDir
	fmt.Fprintf(env.Stderr, "ptojit: cache %s: %v\n", dir, cause)
	if atExit {
		engine.wiped(true)
		fmt.Fprintf(env.Stdout, "the daemon stops and removes the database files of %s as it exits\n", dir)
		return nil
	}
	files, bytes, err := cache.Wipe(dir)
	if err != nil {
		return fmt.Errorf("cache clear: %w", err)
	}
	if engine.wiped != nil {
		engine.wiped(false)
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, map[string]any{"wiped_files": files, "bytes": bytes, "cause": cause.Error()})
	}
	fmt.Fprintf(env.Stdout, "removed the database files of %s: %d files (%s); the cache starts empty\n", dir, files, cache.FormatSize(bytes))
	return nil
}

// The JSON forms.

func runCacheStats(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Core, args []string) error {
	if len(args) != 0 {
		return cli.Usagef("cache stats: unexpected arguments")
	}
	st, err := cache.ReadStats(ctx, s)
	if err != nil {
		return err
	}
	r := report.NewStats(o.resolvedDir, st, remoteStatsFor(env, o.resolvedDir), time.Now())
	if o.json {
		return cli.WriteJSON(env.Stdout, r)
	}
	return r.WriteText(env.Stdout)
}

// minKeyPrefix is the shortest key prefix show accepts.
const minKeyPrefix = 4

// keyMiss is a key the cache does not hold, worded for the user; it
// unwraps to the store's miss (a daemon's reply kind comes from it).
type keyMiss struct {
	msg string
	err error
}

func (e *keyMiss) Error() string { return e.msg }
func (e *keyMiss) Unwrap() error { return e.err }

// resolveKey finds the entry whose key is arg or starts with arg.
func resolveKey(ctx context.Context, s cacheStore, arg string) (*cache.Entry, error) {
	p := strings.ToLower(arg)
	if err := checkKeyPrefix("cache show", arg); err != nil {
		return nil, err
	}
	if len(p) == 64 {
		k, err := cache.ParseKey(p)
		if err != nil {
			return nil, cli.Usagef("%v", err)
		}
		e, err := s.Entry(ctx, k)
		if errors.Is(err, cache.ErrMiss) {
			return nil, &keyMiss{fmt.Sprintf("no entry %s in the cache", k), err}
		}
		return e, err
	}
	var found []*cache.Entry
	err := cache.List(ctx, s, func(e *cache.Entry) error {
		if strings.HasPrefix(e.Key.String(), p) {
			found = append(found, e)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case len(found) == 0:
		return nil, fmt.Errorf("no entry with key prefix %s in the cache", p)
	case len(found) > 1:
		var b strings.Builder
		for _, e := range found[:min(len(found), 5)] {
			b.WriteString("\n  " + e.Key.String())
		}
		return nil, fmt.Errorf("key prefix %s is ambiguous: %d entries%s", p, len(found), b.String())
	}
	return found[0], nil
}

func runCacheShow(ctx context.Context, env *cli.Env, o *cacheOptions, s cacheStore, args []string) error {
	if len(args) != 1 {
		return cli.Usagef("cache show: want one KEY")
	}
	e, err := resolveKey(ctx, s, args[0])
	if err != nil {
		return fmt.Errorf("cache show: %w", err)
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, inspect.Show(ctx, s, e))
	}
	return inspect.WriteShow(ctx, env.Stdout, s, e, o.raw)
}

func runCacheVerify(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Core, args []string) error {
	if len(args) != 0 {
		return cli.Usagef("cache verify: unexpected arguments")
	}
	// A read-only request on a shared writable store only reports.
	pctx, clear := withProgress(ctx, env, o.json, "verifying blobs")
	r, err := cache.Verify(pctx, s, o.opt.ReadOnly || o.dryRun)
	clear()
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return report.VerifyFailed(err)
	}
	j := report.NewVerify(r, o.opt.ReadOnly, o.dryRun)
	if o.json {
		err = cli.WriteJSON(env.Stdout, j)
	} else {
		err = j.WriteText(env.Stdout)
	}
	if err == nil && !r.OK() {
		err = cli.Exit(cli.ExitFailure)
	}
	return err
}

func runCacheTrim(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Core, args []string) error {
	if len(args) != 0 {
		return cli.Usagef("cache trim: unexpected arguments")
	}
	if o.opt.ReadOnly {
		return fmt.Errorf("cache trim: %w", cache.ErrReadOnly)
	}
	r, err := report.RunTrim(ctx, s, o.opt.MaxBytes)
	if err != nil {
		return err
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, r)
	}
	return r.WriteText(env.Stdout)
}

func runCacheClear(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Core, args []string) error {
	if len(args) != 0 {
		return cli.Usagef("cache clear: unexpected arguments")
	}
	if o.opt.ReadOnly {
		return fmt.Errorf("cache clear: %w", cache.ErrReadOnly)
	}
	r, err := report.RunClear(ctx, s)
	if err != nil {
		return err
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, r)
	}
	return r.WriteText(env.Stdout)
}
