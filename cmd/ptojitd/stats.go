package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// statsOptions are the flags of cache stats beyond those of every cache
// subcommand.
type statsOptions struct {
	zero bool
}

// statsFlags adds the flags of cache stats.
func statsFlags(fs *pflag.FlagSet, o *cacheOptions) {
	fs.BoolVar(&o.stats.zero, "zero", false, "zero the counters first (entries and size stay)")
}

// ownFlags returns the arguments of the flags of o's subcommand beyond
// those of every cache subcommand (for the daemon that serves it) and
// whether they make it write.
func (o *cacheOptions) ownFlags() (args []string, writes bool) {
	if o.stats.zero {
		args, writes = append(args, "--zero"), true
	}
	return args, writes
}

// runStats is cache stats: zero the counters when asked, then print them.
func runStats(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Store, args []string) error {
	if o.stats.zero {
		if err := s.ZeroCounts(ctx); err != nil {
			return fmt.Errorf("cache stats --zero: %w", err)
		}
	}
	return runCacheStats(ctx, env, o, s, args)
}

// statsDerived are the figures cache stats --json computes from the
// counters.
type statsDerived struct {
	// HitRate is (hits + remote hits) / lookups, absent without a lookup.
	HitRate *float64 `json:"hit_rate,omitempty"`
	// TimeSavedSeconds is TimeSaved in seconds.
	TimeSavedSeconds float64 `json:"time_saved_seconds"`
	// Since is when the counters were last zeroed (RFC 3339), absent when
	// they never were.
	Since string `json:"since,omitempty"`
}

// derive computes the derived figures of st.
func derive(st *cache.Stats, now time.Time) statsDerived {
	d := statsDerived{TimeSavedSeconds: time.Duration(st.TimeSaved).Seconds()}
	if r, ok := st.HitRate(); ok {
		d.HitRate = &r
	}
	if st.ZeroedAt != 0 {
		d.Since = time.Unix(0, st.ZeroedAt).UTC().Format(time.RFC3339)
	}
	return d
}

// writeStatsValue writes the lines of cache stats about hits and what
// they were worth: local and remote hits, misses, damaged lookups, the
// hit rate, the time saved, the bytes served and since when the counters
// count.
func writeStatsValue(w io.Writer, st *cache.Stats) {
	fmt.Fprintf(w, "hits\t%d (local %d, remote %d)\n", st.Hits+st.RemoteHits, st.Hits, st.RemoteHits)
	fmt.Fprintf(w, "misses\t%d\n", st.Misses)
	fmt.Fprintf(w, "damaged\t%d lookups (%d damaged items removed)\n", st.Damaged, st.Corrupt)
	if r, ok := st.HitRate(); ok {
		fmt.Fprintf(w, "hit rate\t%.1f%%\n", 100*r)
	}
	fmt.Fprintf(w, "time saved\t%s (stored compile time of the entries served, over their hits)\n", formatDuration(time.Duration(st.TimeSaved)))
	fmt.Fprintf(w, "bytes served\t%s\n", cache.FormatSize(st.BytesServed))
	if st.ZeroedAt != 0 {
		at := time.Unix(0, st.ZeroedAt)
		fmt.Fprintf(w, "since\t%s (zeroed %s ago)\n", at.Format(time.RFC3339), formatDuration(time.Since(at).Truncate(time.Second)))
	} else {
		fmt.Fprintf(w, "since\tthe cache was created (never zeroed; cache stats --zero zeroes)\n")
	}
}

// formatDuration prints d for people: milliseconds below a second, else
// to a tenth of a second below a minute, else in whole seconds.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
