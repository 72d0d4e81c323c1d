package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/observe"
)

// logBuild appends the record of the build response r to the request log
// of the cache directory of a build command (cacheDir its flag; the
// daemon's own in the daemon). A log that cannot be written is a
// warning: it fails no build.
func logBuild(env *cli.Env, cacheDir string, r *api.Response) {
	dir, err := cacheDirOf(env, cacheDir)
	if engine.dir != "" {
		// The daemon's builds use its store, whatever they name.
		dir, err = engine.dir, nil
	}
	if err != nil {
		return
	}
	s, err := resolveSettings(env.Memo, dir, env.Getenv)
	if err != nil {
		return
	}
	if err := observe.AppendRequestLog(dir, s.logMaxBytes, observe.RecordOf(r, time.Now())); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("request log: %v", err))
	}
}

// logDirOf is the cache directory whose request log a cache command of
// o reads: the daemon's own in the daemon.
func logDirOf(o *cacheOptions) string {
	if engine.dir != "" {
		return engine.dir
	}
	return o.resolvedDir
}

// runStatsOverLog is cache stats --since D (D zero: the whole log) and
// --plot FILE: the request log of the cache directory added up over the
// period ending at now, and drawn.
func runStatsOverLog(env *cli.Env, o *cacheOptions, since time.Duration, now time.Time) error {
	recs, err := observe.ReadRequestLog(logDirOf(o))
	if err != nil {
		return err
	}
	t, recs := observe.TotalsOver(recs, since, now)
	if o.stats.plot != "" {
		if err := observe.PlotRequestLog(env.Abs(o.stats.plot), recs); err != nil {
			return fmt.Errorf("cache stats --plot: %w", err)
		}
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, t)
	}
	return observe.WriteTotals(env.Stdout, filepath.Join(logDirOf(o), observe.RequestLogName), &t, o.stats.plot)
}

// runCacheLog is cache log: the last records of the request log.
func runCacheLog(ctx context.Context, env *cli.Env, o *cacheOptions, s cacheStore, args []string) error {
	recs, err := observe.ReadRequestLog(logDirOf(o))
	if err != nil {
		return err
	}
	if n := o.stats.limit; n > 0 && len(recs) > n {
		recs = recs[len(recs)-n:]
	}
	if o.json {
		if recs == nil {
			recs = []observe.Record{}
		}
		return cli.WriteJSON(env.Stdout, recs)
	}
	return observe.WriteRecords(env.Stdout, filepath.Join(logDirOf(o), observe.RequestLogName), recs)
}

// runCacheMetrics is cache metrics (and daemon metrics): the store's
// counters and the serving process's build durations as Prometheus text.
func runCacheMetrics(ctx context.Context, env *cli.Env, o *cacheOptions, s cacheStore, args []string) error {
	st, err := cache.ReadStats(ctx, s)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return observe.WriteMetrics(env.Stdout, st)
}

// daemonMetricsCommand is daemon metrics: cache metrics under the daemon's
// name.
func daemonMetricsCommand() *cli.Command {
	c := cacheSubcommand("metrics", "metrics", "print the counters and build durations as Prometheus metrics",
		`The same as "ptojit cache metrics": the cache's counters and the daemon's build
durations in the Prometheus text format.`, 0, false, runCacheMetrics, nil)
	c.Usage = "daemon metrics [--cache-dir D]"
	return c
}

// startMetrics serves the daemon's metrics as the settings file of the
// cache directory dir asks (observe.StartMetrics); the returned function
// stops them.
func startMetrics(ctx context.Context, dir string, store cache.Core, logf func(string, ...any)) func() {
	set, err := resolveSettings(nil, dir, func(string) string { return "" })
	if err != nil {
		logf("metrics: %v: not serving metrics", err)
		return func() {}
	}
	return observe.StartMetrics(ctx, dir, set.metricsListen, set.metricsTextfile, store, logf)
}

// daemonLog is the log of the daemon this process runs; nil in any other
// process. Set once by runDaemon before it serves.
var daemonLog *observe.Log

// daemonLogLevel is the log_level of the settings file of dir, info when
// it cannot be read.
func daemonLogLevel(dir string) string {
	s, err := resolveSettings(nil, dir, func(string) string { return "" })
	if err != nil || s.logLevel == "" {
		return "info"
	}
	return s.logLevel
}

// startDaemonLog sets daemonLog for the daemon of the cache directory dir,
// logging to env's standard error at its log_level, and returns its info
// lines' function.
func startDaemonLog(env *cli.Env, dir string) func(format string, args ...any) {
	daemonLog = observe.NewLog(daemonLogf(env), daemonLogLevel(dir))
	return daemonLog.Info
}
