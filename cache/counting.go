package cache

import (
	"context"
	"errors"
	"io"
	"time"
)

// Counters keep the event counts of a store: the fields of Stats that
// count events (Hits, Misses, Uncached with UncachedReasons, Errors,
// Corrupt, Damaged, Evictions, VerifyMismatch). A Counting store adds to
// them; how they persist is the implementation's (Badger writes them in
// its database in batches, Memory keeps them for its life). The fields of
// Stats that describe the store now (Entries, Bytes, MaxBytes, Health) are
// not counters. Implementations are safe for concurrent use.
//
// Clear empties the store and keeps the counters (see Maintenance.Clear);
// ZeroCounts zeroes them, and removing the store's database (Wipe)
// removes them.
type Counters interface {
	// AddCounts adds the event counts of d.
	AddCounts(ctx context.Context, d Stats) error
	// Counts returns the event counts so far.
	Counts(ctx context.Context) (Stats, error)
}

// Evicter is implemented by a store that evicts entries on its own (a Put
// that leaves it above its MaxBytes, a Trim), so that a Counting store
// counts the evictions: TakeEvictions returns the number of entries
// evicted since its last call. Implementations are safe for concurrent
// use; each eviction is taken once.
type Evicter interface {
	TakeEvictions() int64
}

// Counting is a store that counts the events of the store it wraps, in
// the Counters it is given, as bazel-remote's metrics decorator wraps a
// cache: a hit, a miss or a damaged entry that Get or Entry meets, the
// damaged entries Verify removes, the evictions of a Put or a Trim (when
// the store is an Evicter) and the events of Count. The maintenance methods and Check forward to the wrapped
// store when it has them and fail with errors.ErrUnsupported when it does
// not. Counting is safe for concurrent use when the store and the
// Counters are.
type Counting struct {
	s Core
	c Counters
}

var (
	_ Store   = (*Counting)(nil)
	_ Checker = (*Counting)(nil)
)

// Counted returns s counted in c.
func Counted(s Core, c Counters) *Counting { return &Counting{s: s, c: c} }

// countLookup counts the outcome of a Get (get, whose hit is hit) or an
// Entry.
func (c *Counting) countLookup(ctx context.Context, hit *Hit, err error, get bool) {
	var d Stats
	var me *MissError
	switch {
	case err == nil && get:
		d.Hits, d.TimeSaved, d.BytesServed = 1, int64(hit.Entry.CompileTime), hit.Entry.Size()
	case errors.As(err, &me) && me.Corrupt:
		d.Damaged, d.Corrupt = 1, 1
	case errors.As(err, &me) && get:
		d.Misses = 1
	default:
		return
	}
	_ = c.c.AddCounts(ctx, d)
}

// Get implements Core: a hit, a miss or a damaged entry is counted.
func (c *Counting) Get(ctx context.Context, key Key) (*Hit, error) {
	hit, err := c.s.Get(ctx, key)
	c.countLookup(ctx, hit, err, true)
	if err == nil {
		// A reader that finds damage later turns the hit into a
		// damaged lookup: nothing was served, no time saved.
		saved, served := int64(hit.Entry.CompileTime), hit.Entry.Size()
		hit.whenDamaged(func(*MissError) {
			_ = c.c.AddCounts(context.WithoutCancel(ctx), Stats{Hits: -1, TimeSaved: -saved, BytesServed: -served, Damaged: 1, Corrupt: 1})
		})
	}
	return hit, err
}

// Put implements Core.
func (c *Counting) Put(ctx context.Context, e *Entry, data []io.Reader) error {
	err := c.s.Put(ctx, e, data)
	c.countEvictions(ctx)
	return err
}

// countEvictions counts the evictions the store reports.
func (c *Counting) countEvictions(ctx context.Context) {
	if ev, ok := c.s.(Evicter); ok {
		if n := ev.TakeEvictions(); n > 0 {
			_ = c.c.AddCounts(ctx, Stats{Evictions: n})
		}
	}
}

// Entry implements Core: a damaged entry is counted, a hit or a plain
// miss is not.
func (c *Counting) Entry(ctx context.Context, key Key) (*Entry, error) {
	e, err := c.s.Entry(ctx, key)
	c.countLookup(ctx, nil, err, false)
	return e, err
}

// Delete implements Core.
func (c *Counting) Delete(ctx context.Context, key Key) error { return c.s.Delete(ctx, key) }

// Close implements Core.
func (c *Counting) Close() error { return c.s.Close() }

func (c *Counting) maintenance() (Maintenance, error) {
	if m, ok := c.s.(Maintenance); ok {
		return m, nil
	}
	return nil, errors.ErrUnsupported
}

// List implements Maintenance.
func (c *Counting) List(ctx context.Context, fn func(*Entry) error) error {
	m, err := c.maintenance()
	if err != nil {
		return err
	}
	return m.List(ctx, fn)
}

// Verify implements Maintenance: the damaged entries it removes are
// counted as Corrupt.
func (c *Counting) Verify(ctx context.Context) (*VerifyReport, error) {
	m, err := c.maintenance()
	if err != nil {
		return nil, err
	}
	r, err := m.Verify(ctx)
	if err == nil && len(r.Removed) > 0 {
		_ = c.c.AddCounts(ctx, Stats{Corrupt: int64(len(r.Removed))})
	}
	return r, err
}

// Check implements Checker: it counts nothing, as it removes nothing.
func (c *Counting) Check(ctx context.Context) (*VerifyReport, error) {
	if ch, ok := c.s.(Checker); ok {
		return ch.Check(ctx)
	}
	return nil, errors.ErrUnsupported
}

// Trim implements Maintenance.
func (c *Counting) Trim(ctx context.Context, maxBytes int64) (*TrimReport, error) {
	m, err := c.maintenance()
	if err != nil {
		return nil, err
	}
	r, err := m.Trim(ctx, maxBytes)
	c.countEvictions(ctx)
	return r, err
}

// Clear implements Maintenance. The counters are kept.
func (c *Counting) Clear(ctx context.Context) error {
	m, err := c.maintenance()
	if err != nil {
		return err
	}
	return m.Clear(ctx)
}

// Stats implements Maintenance: the wrapped store's size and health with
// the counters.
func (c *Counting) Stats(ctx context.Context) (*Stats, error) {
	m, err := c.maintenance()
	if err != nil {
		return nil, err
	}
	s, err := m.Stats(ctx)
	if err != nil {
		return nil, err
	}
	n, err := c.c.Counts(ctx)
	if err != nil {
		return nil, err
	}
	setCounts(s, &n)
	return s, nil
}

// Count implements EventCounter.
func (c *Counting) Count(ctx context.Context, event, reason string) error {
	d, err := eventCounts(event, reason)
	if err != nil {
		return err
	}
	return c.c.AddCounts(ctx, d)
}

// CountRemoteHit implements EventCounter: one miss fewer, one remote hit
// more, with e's compile time saved and its bytes served.
func (c *Counting) CountRemoteHit(ctx context.Context, e *Entry) error {
	return c.c.AddCounts(ctx, Stats{Misses: -1, RemoteHits: 1, TimeSaved: int64(e.CompileTime), BytesServed: e.Size()})
}

// ZeroCounts implements EventCounter by adding the negation of the counts
// it reads (so that counts added meanwhile are kept, in any Counters) and
// moving ZeroedAt to now.
func (c *Counting) ZeroCounts(ctx context.Context) error {
	n, err := c.c.Counts(ctx)
	if err != nil {
		return err
	}
	d := Stats{
		Hits: -n.Hits, Misses: -n.Misses, Uncached: -n.Uncached, Errors: -n.Errors,
		Corrupt: -n.Corrupt, Damaged: -n.Damaged, Evictions: -n.Evictions, VerifyMismatch: -n.VerifyMismatch,
		RemoteHits: -n.RemoteHits, TimeSaved: -n.TimeSaved, BytesServed: -n.BytesServed,
		ZeroedAt:        time.Now().UnixNano() - n.ZeroedAt,
		UncachedReasons: make(map[string]int64, len(n.UncachedReasons)),
	}
	for r, v := range n.UncachedReasons {
		d.UncachedReasons[r] = -v
	}
	return c.c.AddCounts(ctx, d)
}

// setCounts replaces the event counts of s with those of n.
func setCounts(s, n *Stats) {
	s.Hits, s.Misses, s.Uncached, s.Errors = n.Hits, n.Misses, n.Uncached, n.Errors
	s.Corrupt, s.Damaged, s.Evictions, s.VerifyMismatch = n.Corrupt, n.Damaged, n.Evictions, n.VerifyMismatch
	s.RemoteHits, s.TimeSaved, s.BytesServed, s.ZeroedAt = n.RemoteHits, n.TimeSaved, n.BytesServed, n.ZeroedAt
	s.UncachedReasons = make(map[string]int64, len(n.UncachedReasons))
	for r, v := range n.UncachedReasons {
		if v != 0 { // a reason zeroed by ZeroCounts
			s.UncachedReasons[r] = v
		}
	}
}

// eventCounts validates a Count call and returns its counts.
func eventCounts(event, reason string) (Stats, error) {
	var d Stats
	switch event {
	case EventUncached:
		if reason == "" {
			return d, &CountError{Event: event, Reason: "needs a reason"}
		}
		if len(reason) > MaxMetaBytes {
			return d, &CountError{Event: event, Reason: "reason too long"}
		}
		d.Uncached, d.UncachedReasons = 1, map[string]int64{reason: 1}
	case EventError:
		d.Errors = 1
	case EventDamaged:
		d.Damaged, d.Corrupt = 1, 1
	case EventVerifyMismatch:
		d.VerifyMismatch = 1
	default:
		return d, &CountError{Event: event, Reason: "unknown event"}
	}
	return d, nil
}
