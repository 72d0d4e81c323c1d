package inspect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/jit"
)

// lsColumns and lsLine format the header and the entries of cache ls. The
// columns have fixed widths (not a tabwriter's, which would hold every line
// until the last) so that each line goes out as it is read.
const (
	lsColumns = "%-12s  %-6s  %10s  %-19s  %-19s  %9s  %7s  %-19s  %s\n"
	lsLine    = "%-12s  %-6s  %10s  %-19s  %-19s  %9s  %7d  %-19s  %s\n"
)

// List writes the entries of s in order of last use, most recent first,
// each as cache.ListRecent reads it (text, or with asJSON one JSON object
// per line), up to limit (0: all); the text ends with a summary of the
// entries listed, or says on stderr that there are none.
func List(ctx context.Context, stdout, stderr io.Writer, s cache.Core, limit int, asJSON bool) error {
	w := &firstFlush{w: bufio.NewWriter(stdout)}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n, builds, units, latest := 0, 0, 0, 0
	err := cache.ListRecent(ctx, s, limit, func(e *cache.Entry) error {
		kind := EntryKind(e)
		switch kind {
		case "build":
			builds++
		case "unit":
			units++
		case jit.LatestKind:
			latest++
		}
		n++
		if asJSON {
			if err := enc.Encode(EntryOf(e, false)); err != nil {
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
			FormatTime(e.LastUsed), FormatTime(e.Created), e.CompileTime.Round(time.Millisecond),
			len(e.Outputs), ShortHashid(e.Meta["hashid"]), OrDash(e.Meta["platform"])); err != nil {
			return err
		}
		return w.line()
	})
	if ferr := w.w.Flush(); err == nil {
		err = ferr
	}
	if err != nil || asJSON {
		return err
	}
	if n == 0 {
		fmt.Fprintln(stderr, "cache: no entries")
		return nil
	}
	_, err = fmt.Fprintf(stdout, "%d builds in %d entries (a build key's entry names the result entry of each header set seen; the result entries hold the outputs)\n", builds, n)
	if err == nil && units > 0 {
		_, err = fmt.Fprintf(stdout, "%d compiled units (a unit's entry names the object entry of each header set seen; each object entry holds one compiled object)\n", units)
	}
	if err == nil && latest > 0 {
		_, err = fmt.Fprintf(stdout, "%d latest-build records (the key and header variant of each request's latest build, for key diff)\n", latest)
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
