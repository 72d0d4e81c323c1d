package observe

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/report"
	"github.com/ptojit/ptojit/jit"
)

// Totals are the request log's records added up: the figures of cache
// stats --since, named as cache stats --json names the counters.
type Totals struct {
	// Since is the start of the period (RFC 3339), absent for the whole
	// log.
	Since            string   `json:"since,omitempty"`
	Builds           int64    `json:"builds"`
	Hits             int64    `json:"hits"`
	RemoteHits       int64    `json:"remote_hits"`
	Misses           int64    `json:"misses"`
	Uncached         int64    `json:"uncached"`
	Errors           int64    `json:"errors"`
	Cancelled        int64    `json:"cancelled"`
	HitRate          *float64 `json:"hit_rate,omitempty"`
	TimeSavedSeconds float64  `json:"time_saved_seconds"`
	BytesServed      int64    `json:"bytes_served"`
}

// add counts one record.
func (t *Totals) add(r *Record) {
	t.Builds++
	switch api.Status(r.Status) {
	case api.StatusHit:
		if r.Tier == jit.TierRemote {
			t.RemoteHits++
		} else {
			t.Hits++
		}
		t.TimeSavedSeconds += r.Saved / 1e3
		t.BytesServed += r.Bytes
	case api.StatusMiss:
		t.Misses++
	case api.StatusUncached:
		t.Uncached++
	case api.StatusCancelled:
		t.Cancelled++
	default:
		t.Errors++
	}
	if n := t.Hits + t.RemoteHits + t.Misses; n > 0 {
		rate := float64(t.Hits+t.RemoteHits) / float64(n)
		t.HitRate = &rate
	}
}

// RecordsSince returns the records of recs at or after from (all of them
// for a zero from).
func RecordsSince(recs []Record, from time.Time) []Record {
	var out []Record
	for _, r := range recs {
		if !r.Time.Before(from) {
			out = append(out, r)
		}
	}
	return out
}

// WriteTotals prints the totals of the request log file p for people.
func WriteTotals(out io.Writer, p string, t *Totals, plot string) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "request log\t%s\n", p)
	if t.Since != "" {
		fmt.Fprintf(w, "since\t%s\n", t.Since)
	} else {
		fmt.Fprintf(w, "since\tthe oldest record kept\n")
	}
	fmt.Fprintf(w, "builds\t%d\n", t.Builds)
	fmt.Fprintf(w, "hits\t%d (local %d, remote %d)\n", t.Hits+t.RemoteHits, t.Hits, t.RemoteHits)
	fmt.Fprintf(w, "misses\t%d\n", t.Misses)
	if t.HitRate != nil {
		fmt.Fprintf(w, "hit rate\t%.1f%%\n", 100**t.HitRate)
	}
	fmt.Fprintf(w, "time saved\t%s\n", report.FormatDuration(time.Duration(t.TimeSavedSeconds*float64(time.Second))))
	fmt.Fprintf(w, "bytes served\t%s\n", cache.FormatSize(t.BytesServed))
	fmt.Fprintf(w, "uncached\t%d\n", t.Uncached)
	fmt.Fprintf(w, "errors\t%d\n", t.Errors)
	fmt.Fprintf(w, "cancelled\t%d\n", t.Cancelled)
	if plot != "" {
		fmt.Fprintf(w, "plot\t%s\n", plot)
	}
	return w.Flush()
}

// TotalsOver adds up the records recs over the period of since ending at
// now (since zero: all of them) and returns the totals and the records
// of the period.
func TotalsOver(recs []Record, since time.Duration, now time.Time) (Totals, []Record) {
	var from time.Time
	if since > 0 {
		from = now.Add(-since)
		recs = RecordsSince(recs, from)
	}
	var t Totals
	if !from.IsZero() {
		t.Since = from.UTC().Format(time.RFC3339)
	}
	for i := range recs {
		t.add(&recs[i])
	}
	return t, recs
}

// WriteRecords writes the records recs of the request log file p as cache
// log prints them, one line each.
func WriteRecords(w io.Writer, p string, recs []Record) error {
	var b strings.Builder
	if len(recs) == 0 {
		fmt.Fprintf(&b, "no builds in the request log %s\n", p)
	}
	for _, r := range recs {
		status := r.Status
		if r.Tier == jit.TierRemote {
			status += "/remote"
		}
		fmt.Fprintf(&b, "%s  %-14s %-12s %9.1f ms  %9s", r.Time.Local().Format("2006-01-02 15:04:05"), status, r.Key, r.Total, cache.FormatSize(r.Bytes))
		if r.Saved > 0 {
			fmt.Fprintf(&b, "  saved %.1f ms", r.Saved)
		}
		if r.Reason != "" {
			fmt.Fprintf(&b, "  %s", r.Reason)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
