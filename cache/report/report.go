// Package report turns the results of the store's maintenance (package
// cache: stats, verify, trim, clear) into what the cache commands print:
// each report is a value whose JSON form is the command's --json document
// and whose WriteText method writes the command's text. The commands only
// parse flags, open the store and choose the form; tests call these
// directly.
package report

import (
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
)

// Stats is what cache stats reports: the counters of the store in Dir,
// the figures derived from them, and the remote tiers' counters.
type Stats struct {
	Dir string `json:"dir"`
	*cache.Stats
	Derived
	// Remote holds the remote tier's counters, when the daemon serving
	// the command has one; Remotes every tier's, in lookup order, when
	// the setting lists several.
	Remote  *remote.Stats  `json:"remote,omitempty"`
	Remotes []remote.Stats `json:"remotes,omitempty"`
}

// NewStats is the report of the counters st of the store in dir, with the
// remote tiers' counters rs, at now.
func NewStats(dir string, st *cache.Stats, rs []remote.Stats, now time.Time) *Stats {
	j := &Stats{Dir: dir, Stats: st, Derived: Derive(st, now)}
	if len(rs) > 0 {
		j.Remote = &rs[0]
	}
	if len(rs) > 1 {
		j.Remotes = rs
	}
	return j
}

// Derived are the figures cache stats --json computes from the counters.
type Derived struct {
	// HitRate is (hits + remote hits) / lookups, absent without a lookup.
	HitRate *float64 `json:"hit_rate,omitempty"`
	// TimeSavedSeconds is TimeSaved in seconds.
	TimeSavedSeconds float64 `json:"time_saved_seconds"`
	// Since is when the counters were last zeroed (RFC 3339), absent when
	// they never were.
	Since string `json:"since,omitempty"`
}

// Derive computes the derived figures of st.
func Derive(st *cache.Stats, now time.Time) Derived {
	d := Derived{TimeSavedSeconds: time.Duration(st.TimeSaved).Seconds()}
	if r, ok := st.HitRate(); ok {
		d.HitRate = &r
	}
	if st.ZeroedAt != 0 {
		d.Since = time.Unix(0, st.ZeroedAt).UTC().Format(time.RFC3339)
	}
	return d
}

// WriteText writes the report as cache stats prints it.
func (j *Stats) WriteText(out io.Writer) error {
	st := j.Stats
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "cache directory\t%s\n", j.Dir)
	fmt.Fprintf(w, "entries\t%d\n", st.Entries)
	if st.MaxBytes > 0 {
		fmt.Fprintf(w, "size\t%s of %s (%.0f%%)\n", cache.FormatSize(st.Bytes), cache.FormatSize(st.MaxBytes), 100*float64(st.Bytes)/float64(st.MaxBytes))
	} else {
		fmt.Fprintf(w, "size\t%s (no limit)\n", cache.FormatSize(st.Bytes))
	}
	WriteStatsValue(w, st)
	fmt.Fprintf(w, "uncached\t%d\n", st.Uncached)
	for _, r := range slices.Sorted(maps.Keys(st.UncachedReasons)) {
		fmt.Fprintf(w, "  %s\t%d\n", r, st.UncachedReasons[r])
	}
	fmt.Fprintf(w, "errors\t%d\n", st.Errors)
	fmt.Fprintf(w, "verify_mismatch\t%d hits that differed from a fresh compile (verify mode)\n", st.VerifyMismatch)
	fmt.Fprintf(w, "evictions\t%d\n", st.Evictions)
	for _, h := range st.Health {
		fmt.Fprintf(w, "health\t%s\n", h)
	}
	rs := j.Remotes
	if rs == nil && j.Remote != nil {
		rs = []remote.Stats{*j.Remote}
	}
	for i := range rs {
		fmt.Fprintf(w, "%s\n", strings.Replace(RemoteSummary(&rs[i]), ": ", "\t", 1))
	}
	return w.Flush()
}

// WriteStatsValue writes the lines of cache stats about hits and what
// they were worth: local and remote hits, misses, the units a request
// miss found and compiled, damaged lookups, the hit rate, the time saved,
// the bytes served and since when the counters count.
func WriteStatsValue(w io.Writer, st *cache.Stats) {
	fmt.Fprintf(w, "hits\t%d (local %d, remote %d)\n", st.Hits+st.RemoteHits, st.Hits, st.RemoteHits)
	fmt.Fprintf(w, "misses\t%d\n", st.Misses)
	fmt.Fprintf(w, "units\t%d found, %d compiled (the compiled units a request miss looked up, apart from the requests above)\n", st.UnitHits, st.UnitMisses)
	fmt.Fprintf(w, "damaged\t%d lookups (%d damaged items removed)\n", st.Damaged, st.Corrupt)
	if r, ok := st.HitRate(); ok {
		fmt.Fprintf(w, "hit rate\t%.1f%%\n", 100*r)
	}
	fmt.Fprintf(w, "time saved\t%s (stored compile time of the entries served, over their hits)\n", FormatDuration(time.Duration(st.TimeSaved)))
	fmt.Fprintf(w, "bytes served\t%s\n", cache.FormatSize(st.BytesServed))
	if st.ZeroedAt != 0 {
		at := time.Unix(0, st.ZeroedAt)
		fmt.Fprintf(w, "since\t%s (zeroed %s ago)\n", at.Format(time.RFC3339), FormatDuration(time.Since(at).Truncate(time.Second)))
	} else {
		fmt.Fprintf(w, "since\tthe cache was created (never zeroed; cache stats --zero zeroes)\n")
	}
}

// FormatDuration prints d for people: milliseconds below a second, else
// to a tenth of a second below a minute, else in whole seconds.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// RemoteSummary is one line about a remote tier: its target, state and
// counters.
func RemoteSummary(s *remote.Stats) string {
	line := fmt.Sprintf("remote: %s (%s); %d hits, %d misses (%d damaged, %d untrusted), %d errors, %d writes, %d pending, %d dropped; %s down, %s up",
		s.Target, s.State, s.Hits, s.Misses, s.Damaged, s.Untrusted, s.Errors, s.Writes, s.Pending, s.Dropped, cache.FormatSize(s.BytesDown), cache.FormatSize(s.BytesUp))
	if s.LastError != "" {
		line += "; last error: " + s.LastError
	}
	return line
}

// KeyStrings are the keys ks in full.
func KeyStrings(ks []cache.Key) []string {
	out := make([]string, 0, len(ks))
	for _, k := range ks {
		out = append(out, k.String())
	}
	return out
}

// shortKeys are the keys ks abbreviated to 12 hex digits.
func shortKeys(ks []cache.Key) []string {
	out := KeyStrings(ks)
	for i := range out {
		out[i] = out[i][:12]
	}
	return out
}

// digestHex is a blob digest in lowercase hex.
func digestHex(d [32]byte) string { return hex.EncodeToString(d[:]) }
