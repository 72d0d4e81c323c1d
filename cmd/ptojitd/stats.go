package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// statsOptions are the flags of cache stats beyond those of every cache
// subcommand.
type statsOptions struct {
	zero  bool
	since string // a duration: aggregate the request log over it
	plot  string // an SVG file to draw the request log in
	limit int    // cache log: the records printed
	isLog bool   // the subcommand is cache log, which has --limit
}

// statsFlags adds the flags of cache stats.
func statsFlags(fs *pflag.FlagSet, o *cacheOptions) {
	fs.BoolVar(&o.stats.zero, "zero", false, "zero the counters first (entries and size stay)")
	fs.StringVar(&o.stats.since, "since", "", "also aggregate the request log over this duration back from now, e.g. 24h or 90m")
	fs.StringVar(&o.stats.plot, "plot", "", "draw the request log's hit rate, time saved and builds per hour or day into this SVG file")
}

// logFlags adds the flags of cache log.
func logFlags(fs *pflag.FlagSet, o *cacheOptions) {
	fs.IntVar(&o.stats.limit, "limit", 20, "print the last N records (0: all)")
	o.stats.isLog = true
}

// ownFlags returns the arguments of the flags of o's subcommand beyond
// those of every cache subcommand (for the daemon that serves it) and
// whether they make it write.
func (o *cacheOptions) ownFlags() (args []string, writes bool, err error) {
	if o.stats.since != "" {
		if d, err := time.ParseDuration(o.stats.since); err != nil || d <= 0 {
			return nil, false, cli.Usagef("cache stats: --since %q is not a positive duration such as 24h or 90m", o.stats.since)
		}
	}
	if o.stats.plot != "" && filepath.Ext(o.stats.plot) != ".svg" {
		return nil, false, cli.Usagef("cache stats: --plot %q: the file must end in .svg", o.stats.plot)
	}
	if o.stats.limit < 0 {
		return nil, false, cli.Usagef("cache log: --limit %d: want 0 or more", o.stats.limit)
	}
	if o.stats.zero {
		args, writes = append(args, "--zero"), true
	}
	if o.stats.since != "" {
		args = append(args, "--since", o.stats.since)
	}
	if o.stats.plot != "" {
		args = append(args, "--plot", o.stats.plot)
	}
	if o.stats.isLog {
		args = append(args, fmt.Sprintf("--limit=%d", o.stats.limit))
	}
	if o.ls.isLs {
		if o.ls.limit < 0 {
			return nil, false, cli.Usagef("cache ls: --limit %d: want 0 (all) or more", o.ls.limit)
		}
		args = append(args, fmt.Sprintf("--limit=%d", o.ls.limit))
	}
	return args, writes, nil
}

// runStats is cache stats: zero the counters when asked, then print them.
func runStats(ctx context.Context, env *cli.Env, o *cacheOptions, s cacheStore, args []string) error {
	if o.stats.zero {
		if err := s.ZeroCounts(ctx); err != nil {
			return fmt.Errorf("cache stats --zero: %w", err)
		}
	}
	if o.stats.since != "" || o.stats.plot != "" {
		since, _ := time.ParseDuration(o.stats.since) // checked by ownFlags
		return runStatsOverLog(env, o, since, time.Now())
	}
	return runCacheStats(ctx, env, o, s, args)
}
