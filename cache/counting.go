package cache

import (
	"context"
	"errors"
	"io"
	"time"
)

// Counting is a store that counts the events of the store of this package
// it wraps, in the counters that store keeps (see face), as
// bazel-remote's metrics decorator wraps a cache: a hit, a miss or a
// damaged entry that Get or Entry meets, the damaged entries Verify
// removes, the evictions of a Put or a Trim and the events of Count. The
// event counts are the fields of Stats that count events (Hits, Misses,
// Uncached with UncachedReasons, Errors, Corrupt, Damaged, Evictions,
// VerifyMismatch, RemoteHits, TimeSaved, BytesServed, UnitHits,
// UnitMisses); the fields that
// describe the store now (Entries, Bytes, MaxBytes, Health) are not
// counters. Clear empties the store and keeps the counters; ZeroCounts
// zeroes them, and removing the store's database (Wipe) removes them.
// Badger and Memory are each their uncounted store in a Counting store.
// Counting is safe for concurrent use.
type Counting struct {
	s face
	c face // the counters: s's own, or another store's in tests
}

var (
	_ Core         = (*Counting)(nil)
	_ EntryReader  = (*Counting)(nil)
	_ Deleter      = (*Counting)(nil)
	_ EventCounter = (*Counting)(nil)
)

// counting returns c, for faceOf: Badger and Memory have it through the
// Counting store they embed.
func (c *Counting) counting() *Counting { return c }

// countLookup counts the outcome of a Get (get, whose hit is hit) or an
// Entry.
func (c *Counting) countLookup(ctx context.Context, hit *Hit, err error, get bool) {
	var d Stats
	var me *MissError
	switch {
	case err == nil && get && hit.Entry.Meta["kind"] == "unit":
		d.UnitHits = 1 // a unit a request miss need not compile (see Get)
	case err == nil && get && isManifest(hit.Entry):
		return // a manifest read is not a lookup of outputs (see Get)
	case err == nil && get:
		d.Hits, d.TimeSaved, d.BytesServed = 1, int64(hit.Entry.CompileTime), hit.Entry.Size()
	case errors.As(err, &me) && me.Corrupt:
		d.Damaged, d.Corrupt = 1, 1
	case errors.As(err, &me) && get:
		d.Misses = 1
	default:
		return
	}
	_ = c.c.addCounts(ctx, d)
}

// Get implements Core: a hit, a miss or a damaged entry is counted. The
// Get of a build key's manifest entry (kind "manifest", whose output is
// its header manifest; see package jit) reads the manifest, not a build's
// outputs: its hit is not counted (the Get of the result entry that
// follows is), its damage is. The Get of a compiled unit's object entry
// (kind "unit") counts a unit hit, not a build hit: one request answered
// counts one hit however many of its units were found.
func (c *Counting) Get(ctx context.Context, key Key) (*Hit, error) {
	hit, err := c.s.Get(ctx, key)
	c.countLookup(ctx, hit, err, true)
	if err == nil && isManifest(hit.Entry) {
		d := Stats{Damaged: 1, Corrupt: 1}
		if hit.Entry.Meta["kind"] == "unit" {
			d.UnitHits = -1 // damage found later: the unit compiles
		}
		hit.whenDamaged(func(*MissError) {
			_ = c.c.addCounts(context.WithoutCancel(ctx), d)
		})
	} else if err == nil {
		// A reader that finds damage later turns the hit into a
		// damaged lookup: nothing was served, no time saved.
		saved, served := int64(hit.Entry.CompileTime), hit.Entry.Size()
		hit.whenDamaged(func(*MissError) {
			_ = c.c.addCounts(context.WithoutCancel(ctx), Stats{Hits: -1, TimeSaved: -saved, BytesServed: -served, Damaged: 1, Corrupt: 1})
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
	if n := c.s.takeEvictions(); n > 0 {
		_ = c.c.addCounts(ctx, Stats{Evictions: n})
	}
}

// Entry implements EntryReader: a damaged entry is counted, a hit or a plain
// miss is not.
func (c *Counting) Entry(ctx context.Context, key Key) (*Entry, error) {
	e, err := c.s.Entry(ctx, key)
	c.countLookup(ctx, nil, err, false)
	return e, err
}

// Delete implements Deleter.
func (c *Counting) Delete(ctx context.Context, key Key) error { return c.s.Delete(ctx, key) }

// Close implements Core.
func (c *Counting) Close() error { return c.s.Close() }

// Count implements EventCounter.
func (c *Counting) Count(ctx context.Context, event, reason string) error {
	d, err := eventCounts(event, reason)
	if err != nil {
		return err
	}
	return c.c.addCounts(ctx, d)
}

// CountRemoteHit implements EventCounter: one miss fewer, one remote hit
// more, with e's compile time saved and its bytes served; with stored,
// one hit fewer too, whose time and bytes stay.
func (c *Counting) CountRemoteHit(ctx context.Context, e *Entry, stored bool) error {
	if isManifest(e) {
		return nil
	}
	d := Stats{Misses: -1, RemoteHits: 1, TimeSaved: int64(e.CompileTime), BytesServed: e.Size()}
	if stored {
		d.Hits, d.TimeSaved, d.BytesServed = -1, 0, 0
	}
	return c.c.addCounts(ctx, d)
}

// ZeroCounts implements EventCounter by adding the negation of the counts
// it reads (so that counts added meanwhile are kept, in any Counters) and
// moving ZeroedAt to now.
func (c *Counting) ZeroCounts(ctx context.Context) error {
	n, err := c.c.readCounts(ctx)
	if err != nil {
		return err
	}
	d := Stats{
		Hits: -n.Hits, Misses: -n.Misses, Uncached: -n.Uncached, Errors: -n.Errors,
		Corrupt: -n.Corrupt, Damaged: -n.Damaged, Evictions: -n.Evictions, VerifyMismatch: -n.VerifyMismatch,
		RemoteHits: -n.RemoteHits, TimeSaved: -n.TimeSaved, BytesServed: -n.BytesServed,
		UnitHits: -n.UnitHits, UnitMisses: -n.UnitMisses,
		ZeroedAt:        time.Now().UnixNano() - n.ZeroedAt,
		UncachedReasons: make(map[string]int64, len(n.UncachedReasons)),
	}
	for r, v := range n.UncachedReasons {
		d.UncachedReasons[r] = -v
	}
	return c.c.addCounts(ctx, d)
}

// setCounts replaces the event counts of s with those of n.
func setCounts(s, n *Stats) {
	s.Hits, s.Misses, s.Uncached, s.Errors = n.Hits, n.Misses, n.Uncached, n.Errors
	s.Corrupt, s.Damaged, s.Evictions, s.VerifyMismatch = n.Corrupt, n.Damaged, n.Evictions, n.VerifyMismatch
	s.RemoteHits, s.TimeSaved, s.BytesServed, s.ZeroedAt = n.RemoteHits, n.TimeSaved, n.BytesServed, n.ZeroedAt
	s.UnitHits, s.UnitMisses = n.UnitHits, n.UnitMisses
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
	case EventUnitMiss:
		d.UnitMisses = 1
	default:
		return d, &CountError{Event: event, Reason: "unknown event"}
	}
	return d, nil
}

// isManifest reports whether e is read as a part of a build's answer, not
// as the answer: a build key's manifest entry (kind "manifest") or the
// object of one compiled unit (kind "unit"; package jit), which a request
// miss reads for each unit it need not compile, or a request's packed
// callable (kind "pack"), which it reads when its units' objects are
// packed already. Their hits are not build hits (one request answered
// counts one), their damage is counted.
func isManifest(e *Entry) bool {
	k := e.Meta["kind"]
	return k == "manifest" || k == "unit" || k == "pack"
}
