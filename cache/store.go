package cache

import (
	"context"
	"errors"
	"io"
)

// The faces of a store. A build needs three operations (Core), as the go
// command's cache needs Get, Put and Close; the rest is optional. Reading
// an entry's metadata alone (EntryReader), removing an entry (Deleter) and
// counting the events a build reports (EventCounter) are capabilities of
// their own, reached through the functions Lookup, Delete, Count and
// CountRemoteHit, which do what a store without them allows. Listing,
// verifying, trimming, clearing and reading the size and counters are
// functions too (List, ListRecent, Verify, Trim, Clear, ReadStats; see
// maintain.go), over the stores of this package and the decorators that
// wrap one (Unwrap).
//
// Stores of this package (Badger, Memory) implement Core, EntryReader,
// Deleter and EventCounter, and are safe for concurrent use by multiple
// goroutines.

// Core is what a build uses of a store: read an entry with its outputs,
// write one, release the store.
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
	// entry last. A store may leave data[i] unread when e.Outputs[i]
	// gives a size and digest whose blob it already holds (a request's
	// entry whose objects its units' entries hold): that blob is the
	// output. A blob larger than a chunk is written chunk by chunk,
	// so Put holds at most one chunk of it in memory. A zero Created is
	// set to now, a zero LastUsed to Created. Putting an existing key
	// replaces its entry. Put does not modify e; Readers wraps bytes.
	Put(ctx context.Context, e *Entry, data []io.Reader) error
	// Close flushes batched writes and releases the store.
	Close() error
}

// EntryReader is a store that reads an entry's metadata without its
// blobs. Entry counts nothing but damage; a lookup is a use: like Get it
// updates LastUsed (so that an entry read only through Entry, such as a
// manifest, is not evicted as unused). A missing entry is a *MissError.
type EntryReader interface {
	Entry(ctx context.Context, key Key) (*Entry, error)
}

// Deleter is a store that removes entries: Delete removes an entry and the
// blobs no other entry names. Deleting a missing key is not an error.
type Deleter interface {
	Delete(ctx context.Context, key Key) error
}

// EventCounter counts the events a build reports to its store.
type EventCounter interface {
	// Count counts an event: EventUncached with its reason, EventError or
	// EventDamaged or EventVerifyMismatch.
	Count(ctx context.Context, event string, reason string) error
	// CountRemoteHit counts a lookup the store missed (and counted as a
	// miss) that a remote tier answered with e: a remote hit instead of
	// a miss, its compile time saved and its bytes served. With stored,
	// the hit was served from the copy of e written to the store, whose
	// Get the store counted as a hit (its time and bytes): that hit is
	// taken back, so the lookup counts once. A Get the store counts no
	// hit of (a manifest, a unit's object, a pack) counts no remote hit
	// either.
	CountRemoteHit(ctx context.Context, e *Entry, stored bool) error
	// ZeroCounts zeroes every event counter and notes when (ZeroedAt),
	// as ccache -z does; the size is not a counter and stays.
	ZeroCounts(ctx context.Context) error
}

// Lookup returns the metadata of key's entry: through s's Entry when s is
// an EntryReader, else the entry of a Get whose readers it leaves unread
// (a Get counts a hit or a miss).
func Lookup(ctx context.Context, s Core, key Key) (*Entry, error) {
	if r, ok := s.(EntryReader); ok {
		return r.Entry(ctx, key)
	}
	h, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return h.Entry, nil
}

// Delete removes key's entry from s when s is a Deleter, and returns
// errors.ErrUnsupported otherwise.
func Delete(ctx context.Context, s Core, key Key) error {
	if d, ok := s.(Deleter); ok {
		return d.Delete(ctx, key)
	}
	return errors.ErrUnsupported
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
func CountRemoteHit(ctx context.Context, s Core, e *Entry, stored bool) error {
	if c, ok := s.(EventCounter); ok {
		return c.CountRemoteHit(ctx, e, stored)
	}
	return nil
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
