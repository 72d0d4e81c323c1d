package cache

import (
	"context"
	"io"
)

// The faces of a store. A build needs five operations (Core); the
// maintenance commands need five more (Maintenance); counting the events a
// build reports is a capability of its own (EventCounter). Code takes the
// narrowest face it uses: the jit driver, the remote tiers and the daemon's
// build path hold a Core, the cache commands a Maintenance. Conveniences
// over a face are functions (Count), not methods every store must grow.
//
// Stores of this package implement Store, the union of the three, and are
// safe for concurrent use by multiple goroutines.

// Core is what a build uses of a store: read an entry with its outputs,
// write one, read an entry's metadata, remove one, release the store.
type Core interface {
	// Get returns the entry and a verified reader of each output (see
	// Hit). A miss is a *MissError: "no entry", or a damaged entry
	// (corrupt or missing blob, undecodable entry), which is counted as
	// damaged and removed; a chunked output's damage is found by its
	// reader, with the same effect. Get counts a hit or a miss and
	// updates LastUsed: the hit's Entry.LastUsed is this use (in a
	// read-only store, which records none, the last recorded one).
	Get(ctx context.Context, key Key) (*Hit, error)
	// Put stores data[i], read to its end, as e.Outputs[i]: it fills zero
	// Sizes and Digests, checks the others against the bytes as they
	// stream (a *DataError on mismatch), writes the blobs first and the
	// entry last. A blob larger than a chunk is written chunk by chunk,
	// so Put holds at most one chunk of it in memory. A zero Created is
	// set to now, a zero LastUsed to Created. Putting an existing key
	// replaces its entry. Put does not modify e; Readers wraps bytes.
	Put(ctx context.Context, e *Entry, data []io.Reader) error
	// Entry returns the metadata of one entry, without reading blobs or
	// counting anything. A lookup is a use: like Get it updates LastUsed
	// (so that an entry read only through Entry, such as a manifest, is
	// not evicted as unused). A missing entry is a *MissError.
	Entry(ctx context.Context, key Key) (*Entry, error)
	// Delete removes an entry and the blobs no other entry names. Deleting
	// a missing key is not an error.
	Delete(ctx context.Context, key Key) error
	// Close flushes batched writes and releases the store.
	Close() error
}

// Maintenance is what the cache commands use of a store: walk it, check
// it, shrink it, empty it, and read its counters and size.
type Maintenance interface {
	// List calls fn for every entry in key order, stopping at fn's first
	// error, which it returns. Undecodable entries are skipped (Verify
	// reports them).
	List(ctx context.Context, fn func(*Entry) error) error
	// Verify re-hashes every blob, removes the entries that name a corrupt
	// or missing blob and deletes orphan blobs.
	Verify(ctx context.Context) (*VerifyReport, error)
	// Trim evicts least-recently-used entries until Bytes <= maxBytes,
	// deletes blobs no entry names and compacts storage.
	Trim(ctx context.Context, maxBytes int64) (*TrimReport, error)
	// Clear removes every entry and blob. It is not a reset of the
	// counters: hits, misses and the other event counts are kept (and
	// Entries and Bytes drop to 0 because they describe the store now).
	// ZeroCounts zeroes the counters; removing the database (Wipe)
	// removes them with it.
	Clear(ctx context.Context) error
	// Stats returns the counters and the size.
	Stats(ctx context.Context) (*Stats, error)
}

// EventCounter counts the events a build reports to its store.
type EventCounter interface {
	// Count counts an event: EventUncached with its reason, EventError or
	// EventDamaged or EventVerifyMismatch.
	Count(ctx context.Context, event string, reason string) error
	// CountRemoteHit counts a lookup the store missed (and counted as a
	// miss) that the remote tier answered with e: a remote hit instead of
	// a miss, its compile time saved and its bytes served.
	CountRemoteHit(ctx context.Context, e *Entry) error
	// ZeroCounts zeroes every event counter and notes when (ZeroedAt),
	// as ccache -z does; the size is not a counter and stays.
	ZeroCounts(ctx context.Context) error
}

// Store is an artifact store with every face: Core, Maintenance and
// EventCounter. Implementations in this package are safe for concurrent
// use by multiple goroutines.
type Store interface {
	Core
	Maintenance
	EventCounter
}

// Count counts an event on s when s counts events (implements
// EventCounter), and does nothing otherwise.
func Count(ctx context.Context, s Core, event, reason string) error {
	if c, ok := s.(EventCounter); ok {
		return c.Count(ctx, event, reason)
	}
	return nil
}

// CountRemoteHit counts a remote hit on s when s counts events
// (implements EventCounter), and does nothing otherwise.
func CountRemoteHit(ctx context.Context, s Core, e *Entry) error {
	if c, ok := s.(EventCounter); ok {
		return c.CountRemoteHit(ctx, e)
	}
	return nil
}

// Checker is implemented by the stores of this package: Check is Verify
// that only reports and changes nothing, for a caller that must not write
// (PTOJIT_CACHE_READONLY) but shares a writable store (the daemon's).
type Checker interface {
	Check(ctx context.Context) (*VerifyReport, error)
}

// FaultInjector is implemented by the stores of this package, for tests of
// the code that uses them: it damages a stored blob in place. The stores'
// implementations are safe for concurrent use.
type FaultInjector interface {
	// CorruptBlob flips one bit of the stored blob with the given digest.
	CorruptBlob(ctx context.Context, d Digest) error
	// RemoveBlob deletes the stored blob, leaving its entries.
	RemoveBlob(ctx context.Context, d Digest) error
}
