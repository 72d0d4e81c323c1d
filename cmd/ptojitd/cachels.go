package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/jit"
)

// lsOptions are the flags of cache ls.
type lsOptions struct {
	limit int  // the entries listed; 0: all
	isLs  bool // the subcommand is cache ls, which has --limit
}

// lsSubcommand is cache ls.
func lsSubcommand() *cli.Command {
	return cacheSubcommand("ls", "ls [--limit N] [--json]", "list entries, most recently used first", `
Lists the entries, most recently used first, each printed as it is read:
key prefix, kind, size, last use, creation time, compile time, output
count, hashid and platform; then a summary of the entries listed.
--limit N lists the N most recently used (0, the default: all). --json
prints JSON lines: one object per entry with every field, and no summary.`, 0, false, maintaining(runCacheLs), lsFlags)
}

// lsFlags adds the flags of cache ls.
func lsFlags(fs *pflag.FlagSet, o *cacheOptions) {
	fs.IntVar(&o.ls.limit, "limit", 0, "list the N most recently used entries (0: all)")
	o.ls.isLs = true
}

// lsColumns and lsLine format the header and the entries of cache ls. The
// columns have fixed widths (not a tabwriter's, which would hold every line
// until the last) so that each line goes out as it is read.
const (
	lsColumns = "%-12s  %-6s  %10s  %-19s  %-19s  %9s  %7s  %-19s  %s\n"
	lsLine    = "%-12s  %-6s  %10s  %-19s  %-19s  %9s  %7d  %-19s  %s\n"
)

// runCacheLs is cache ls: the entries in order of last use, most recent
// first, each written as cache.ListRecent reads it (text, or one JSON
// object per line), up to --limit; the text ends with a summary of the
// entries listed.
func runCacheLs(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Core, args []string) error {
	if len(args) != 0 {
		return cli.Usagef("cache ls: unexpected arguments")
	}
	w := &firstFlush{w: bufio.NewWriter(env.Stdout)}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n, builds, units, latest := 0, 0, 0, 0
	err := cache.ListRecent(ctx, s, o.ls.limit, func(e *cache.Entry) error {
		kind := entryKind(e)
		switch kind {
		case "build":
			builds++
		case "unit":
			units++
		case jit.LatestKind:
			latest++
		}
		n++
		if o.json {
			if err := enc.Encode(toJSON(e, false)); err != nil {
				return err
			}
			return w.line()
		}
		if n == 1 {
			if _, err := fmt.Fprintf(w, lsColumns, "KEY", "KIND", "SIZE", "LAST USED", "CREATED", "COMPILE", "OUTPUTS", "HASHID", "PLATFORM"); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, lsLine, e.Key.String()[:12], kind, cache.FormatSize(e.Size()),
			fmtTime(e.LastUsed), fmtTime(e.Created), e.CompileTime.Round(time.Millisecond),
			len(e.Outputs), short(e.Meta["hashid"]), orDash(e.Meta["platform"])); err != nil {
			return err
		}
		return w.line()
	})
	if ferr := w.w.Flush(); err == nil {
		err = ferr
	}
	if err != nil || o.json {
		return err
	}
	if n == 0 {
		fmt.Fprintln(env.Stderr, "cache: no entries")
		return nil
	}
	_, err = fmt.Fprintf(env.Stdout, "%d builds in %d entries (a build key's entry names the result entry of each header set seen; the result entries hold the outputs)\n", builds, n)
	if err == nil && units > 0 {
		_, err = fmt.Fprintf(env.Stdout, "%d compiled units (a unit's entry names the object entry of each header set seen; each object entry holds one compiled object)\n", units)
	}
	if err == nil && latest > 0 {
		_, err = fmt.Fprintf(env.Stdout, "%d latest-build records (the key and header variant of each request's latest build, for key diff)\n", latest)
	}
	return err
}

// firstFlush is a buffered writer that flushes after the first line, so
// that the first entry of a listing shows at once and the rest go out in
// full buffers.
type firstFlush struct {
	w       *bufio.Writer
	flushed bool
}

func (f *firstFlush) Write(p []byte) (int, error) { return f.w.Write(p) }

// line marks the end of a line: the first one is flushed.
func (f *firstFlush) line() error {
	if f.flushed {
		return nil
	}
	f.flushed = true
	return f.w.Flush()
}
