package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/cache"
)

// Verify is what cache verify reports: the store's verification and what
// was done about the damage.
type Verify struct {
	OK          bool              `json:"ok"`
	Entries     int               `json:"entries"`
	Blobs       int               `json:"blobs"`
	Bytes       int64             `json:"bytes"`
	Corrupt     []Corrupt         `json:"corrupt"`
	BadEntries  map[string]string `json:"bad_entries"`
	Tables      string            `json:"tables,omitempty"`
	Removed     []string          `json:"removed"`
	Orphans     int               `json:"orphans"`
	OrphanBytes int64             `json:"orphan_bytes"`
	ReadOnly    bool              `json:"read_only"`

	r      *cache.VerifyReport
	dryRun bool
}

// Corrupt is a damaged blob and the entries that name it.
type Corrupt struct {
	Digest  string   `json:"digest"`
	Reason  string   `json:"reason"`
	Entries []string `json:"entries"`
}

// RunVerify verifies the store s: with readOnly (a read-only store) or
// dryRun it only reports the damage, else it removes it. An error is the
// store failing beyond what verify repairs, worded with its remedy, or
// ctx's.
func RunVerify(ctx context.Context, s cache.Core, readOnly, dryRun bool) (*Verify, error) {
	r, err := cache.Verify(ctx, s, readOnly || dryRun)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, VerifyFailed(err)
	}
	return NewVerify(r, readOnly, dryRun), nil
}

// VerifyFailed words err, a store that fails beyond what verify repairs,
// with its remedy.
func VerifyFailed(err error) error {
	remedy := "`ptojit cache clear` starts it afresh"
	if errors.Is(err, cache.ErrNoSpace) {
		remedy = cache.Remedy(err)
	}
	return fmt.Errorf("cache verify: the store fails beyond what verify repairs: %w; remedy: %s", err, remedy)
}

// NewVerify is the report of the verification r of a store that is
// read-only or, with dryRun, was only looked at.
func NewVerify(r *cache.VerifyReport, readOnly, dryRun bool) *Verify {
	j := &Verify{OK: r.OK(), Entries: r.Entries, Blobs: r.Blobs, Bytes: r.Bytes, Corrupt: []Corrupt{},
		BadEntries: map[string]string{}, Removed: KeyStrings(r.Removed), Orphans: r.Orphans, OrphanBytes: r.OrphanBytes,
		ReadOnly: readOnly, Tables: r.Tables, r: r, dryRun: dryRun}
	for _, c := range r.Corrupt {
		j.Corrupt = append(j.Corrupt, Corrupt{digestHex(c.Digest), c.Reason, KeyStrings(c.Entries)})
	}
	for k, why := range r.BadEntries {
		j.BadEntries[k.String()] = why
	}
	return j
}

// WriteText writes the report as cache verify prints it.
func (j *Verify) WriteText(out io.Writer) error {
	r := j.r
	fmt.Fprintf(out, "verified %d entries, %d blobs (%s)\n", r.Entries, r.Blobs, cache.FormatSize(r.Bytes))
	for _, c := range r.Corrupt {
		fmt.Fprintf(out, "%s", c.Reason)
		if len(c.Entries) > 0 {
			fmt.Fprintf(out, " (named by %s)", strings.Join(shortKeys(c.Entries), ", "))
		}
		fmt.Fprintln(out)
	}
	for _, k := range slices.SortedFunc(maps.Keys(r.BadEntries), func(a, b cache.Key) int { return strings.Compare(a.String(), b.String()) }) {
		fmt.Fprintf(out, "entry %s: %s\n", k.String()[:12], r.BadEntries[k])
	}
	if r.Tables != "" {
		fmt.Fprintf(out, "tables damaged: %s\nremedy: `ptojit cache clear` (verify cannot repair the tables)\n", r.Tables)
	}
	switch {
	case r.OK():
		fmt.Fprintln(out, "no damage found")
	case j.dryRun:
		fmt.Fprintln(out, "damaged entries not removed: --dry-run")
	case j.ReadOnly:
		fmt.Fprintln(out, "damaged entries not removed: the cache is read-only")
	default:
		fmt.Fprintf(out, "removed %d damaged entries\n", len(r.Removed))
	}
	if r.Orphans > 0 {
		verb := "deleted"
		if j.dryRun || j.ReadOnly {
			verb = "found (not deleted)"
		}
		_, err := fmt.Fprintf(out, "%s %d orphan blobs (%s)\n", verb, r.Orphans, cache.FormatSize(r.OrphanBytes))
		return err
	}
	return nil
}

// Trim is what cache trim reports.
type Trim struct {
	BytesBefore int64    `json:"bytes_before"`
	BytesAfter  int64    `json:"bytes_after"`
	MaxBytes    int64    `json:"max_bytes"`
	Evicted     []string `json:"evicted"`
	Orphans     int      `json:"orphans"`
	ValueLogGC  int      `json:"value_log_gc"`

	r *cache.TrimReport
}

// RunTrim trims the store s to maxBytes (0 or less: no limit).
func RunTrim(ctx context.Context, s cache.Core, maxBytes int64) (*Trim, error) {
	limit := maxBytes
	if limit <= 0 {
		limit = 1<<63 - 1 // no limit
	}
	r, err := cache.Trim(ctx, s, limit)
	if err != nil {
		return nil, err
	}
	return &Trim{r.BytesBefore, r.BytesAfter, maxBytes, KeyStrings(r.Evicted), r.Orphans, r.ValueLogGC, r}, nil
}

// WriteText writes the report as cache trim prints it.
func (j *Trim) WriteText(out io.Writer) error {
	r := j.r
	lim := "no limit"
	if j.MaxBytes > 0 {
		lim = "limit " + cache.FormatSize(r.MaxBytes)
	}
	fmt.Fprintf(out, "evicted %d entries: %s -> %s (%s)\n", len(r.Evicted),
		cache.FormatSize(r.BytesBefore), cache.FormatSize(r.BytesAfter), lim)
	if r.Orphans > 0 {
		fmt.Fprintf(out, "deleted %d orphan blobs\n", r.Orphans)
	}
	_, err := fmt.Fprintf(out, "value-log GC rewrote %d files\n", r.ValueLogGC)
	return err
}

// ErrWipe is matched (errors.Is) by a clear that found the store too
// damaged to clear: its files are to be removed once it is closed.
var ErrWipe = errors.New("the store is too damaged to clear")

// Clear is what cache clear reports: the entries and bytes removed.
type Clear struct {
	Bytes   int64 `json:"bytes"`
	Entries int64 `json:"entries"`
}

// RunClear removes every entry of s. A store too damaged to clear is an
// error matching ErrWipe and wrapping the cause.
func RunClear(ctx context.Context, s cache.Core) (*Clear, error) {
	before, err := cache.ReadStats(ctx, s)
	if err == nil && len(before.Health) > 0 {
		if b, ok := s.(interface{ Healthy() error }); ok {
			err = b.Healthy()
		}
	}
	if err == nil {
		err = cache.Clear(ctx, s)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &wipeError{err}
	}
	return &Clear{Bytes: before.Bytes, Entries: before.Entries}, nil
}

// wipeError is a store too damaged to clear.
type wipeError struct{ err error }

func (e *wipeError) Error() string   { return e.err.Error() }
func (e *wipeError) Unwrap() []error { return []error{ErrWipe, e.err} }

// WriteText writes the report as cache clear prints it.
func (j *Clear) WriteText(out io.Writer) error {
	_, err := fmt.Fprintf(out, "removed %d entries (%s)\n", j.Entries, cache.FormatSize(j.Bytes))
	return err
}
