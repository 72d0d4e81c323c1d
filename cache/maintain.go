package cache

import (
	"context"
	"errors"
)

// Maintenance is a set of functions, not a face every store must grow:
// List, ListRecent, Verify, Trim, Clear and ReadStats work on a store of
// this package, found under the decorators that wrap it: a Counting store
// (Badger and Memory are their uncounted store in one), which counts what
// they find, and any other Core that says what it wraps with an Unwrap
// method returning a Core. A decorator on the way whose ReadOnly method
// returns true makes Trim and Clear fail with ErrReadOnly and Verify only
// report, as a read-only store does. A store they cannot reach is
// errors.ErrUnsupported.

// face is the maintenance face of an uncounted store of this package, and
// the counters it keeps for the Counting store that wraps it. Its
// implementations (badgerDB, memStore) are safe for concurrent use.
type face interface {
	Core
	EntryReader
	Deleter
	// walk calls fn for every decodable entry in key order, stopping at
	// fn's first error, which it returns.
	walk(ctx context.Context, fn func(*Entry) error) error
	// walkRecent is ListRecent over the store's index.
	walkRecent(ctx context.Context, limit int, fn func(*Entry) error) error
	// verifyAll is Verify; with reportOnly it changes nothing.
	verifyAll(ctx context.Context, reportOnly bool) (*VerifyReport, error)
	// trimTo is Trim.
	trimTo(ctx context.Context, maxBytes int64) (*TrimReport, error)
	// clearAll is Clear.
	clearAll(ctx context.Context) error
	// size returns the size, limit and health of the store, without the
	// event counts.
	size(ctx context.Context) (*Stats, error)
	// addCounts adds the event counts of d to those the store keeps;
	// readCounts returns them. Badger keeps them in its database, in
	// batches; Memory for its life.
	addCounts(ctx context.Context, d Stats) error
	readCounts(ctx context.Context) (Stats, error)
	// takeEvictions returns the number of entries the store evicted on
	// its own (a Put above MaxBytes, a Trim) since its last call.
	takeEvictions() int64
}

// faceOf returns the store of this package under s, the Counting store
// that wraps it (nil for an uncounted one), and whether a decorator on the
// way is read-only.
func faceOf(s Core) (f face, c *Counting, readOnly bool, err error) {
	for range 64 { // a bound on the decorators, against a cycle
		if ro, ok := s.(interface{ ReadOnly() bool }); ok && ro.ReadOnly() {
			readOnly = true
		}
		switch t := s.(type) {
		case interface{ counting() *Counting }:
			cs := t.counting()
			return cs.s, cs, readOnly, nil
		case face:
			return t, nil, readOnly, nil
		case interface{ Unwrap() Core }:
			s = t.Unwrap()
		default:
			return nil, nil, false, errors.ErrUnsupported
		}
	}
	return nil, nil, false, errors.ErrUnsupported
}

// List calls fn for every entry of s in key order, stopping at fn's first
// error, which it returns. Undecodable entries are skipped (Verify reports
// them).
func List(ctx context.Context, s Core, fn func(*Entry) error) error {
	f, _, _, err := faceOf(s)
	if err != nil {
		return err
	}
	return f.walk(ctx, fn)
}

// ListRecent calls fn for up to limit entries of s (every entry when
// limit <= 0), most recently used first, stopping at fn's first error,
// which it returns. The order comes from the store's in-memory index and
// each entry is read as it is listed, so the first call of fn comes after
// a selection over the index, not after a read of every entry.
// Undecodable entries are skipped (Verify reports them); an entry deleted
// meanwhile is skipped. fn runs outside the store's locks: it may call the
// store.
func ListRecent(ctx context.Context, s Core, limit int, fn func(*Entry) error) error {
	f, _, _, err := faceOf(s)
	if err != nil {
		return err
	}
	return f.walkRecent(ctx, limit, fn)
}

// Verify re-hashes every blob of s, removes the entries that name a
// corrupt or missing blob, and the undecodable ones, and deletes orphan
// blobs; with reportOnly, or on a read-only store, it only reports (for a
// caller that must not write, PTOJIT_CACHE_READONLY, but shares a
// writable store). A Counting store counts the entries removed as Corrupt.
func Verify(ctx context.Context, s Core, reportOnly bool) (*VerifyReport, error) {
	f, c, readOnly, err := faceOf(s)
	if err != nil {
		return nil, err
	}
	r, err := f.verifyAll(ctx, reportOnly || readOnly)
	if err == nil && c != nil && len(r.Removed) > 0 {
		_ = c.c.addCounts(ctx, Stats{Corrupt: int64(len(r.Removed))})
	}
	return r, err
}

// Trim evicts the least recently used entries of s until its Bytes <=
// maxBytes, deletes blobs no entry names and compacts storage. A
// Counting store counts the evictions.
func Trim(ctx context.Context, s Core, maxBytes int64) (*TrimReport, error) {
	f, c, readOnly, err := faceOf(s)
	if err != nil {
		return nil, err
	}
	if readOnly {
		return nil, ErrReadOnly
	}
	r, err := f.trimTo(ctx, maxBytes)
	if c != nil {
		c.countEvictions(ctx)
	}
	return r, err
}

// Clear removes every entry and blob of s. It is not a reset of the
// counters: hits, misses and the other event counts are kept (and Entries
// and Bytes drop to 0 because they describe the store now). ZeroCounts
// zeroes the counters; removing the database (Wipe) removes them with it.
func Clear(ctx context.Context, s Core) error {
	f, _, readOnly, err := faceOf(s)
	if err != nil {
		return err
	}
	if readOnly {
		return ErrReadOnly
	}
	return f.clearAll(ctx)
}

// ReadStats returns the counters and the size of s: a Counting store's
// counters, none for an uncounted store; the size limit of a request's
// view of a shared store (package cache/limit) is the request's.
func ReadStats(ctx context.Context, s Core) (*Stats, error) {
	f, c, _, err := faceOf(s)
	if err != nil {
		return nil, err
	}
	st, err := f.size(ctx)
	if l, ok := s.(interface{ MaxBytes() int64 }); ok && err == nil {
		st.MaxBytes = l.MaxBytes()
	}
	if err != nil || c == nil {
		return st, err
	}
	n, err := c.c.readCounts(ctx)
	if err != nil {
		return nil, err
	}
	setCounts(st, &n)
	return st, nil
}
