// Package cache is ptojit's artifact store: content-addressed blobs and the
// entries that name them, kept in a Badger database (Badger) or in memory
// (Memory). It knows keys as 32-byte arrays, not how they were computed, and
// imports no other ptojit package.
//
// # Model
//
// A blob is a byte string stored under its SHA-256 digest. An Entry is stored
// under a Key; it holds the encoded key record (opaque here, kept so that
// `ptojit key` can explain and diff it), the list of outputs (name, size,
// digest, mode), free-form metadata, and the creation time, last-use time and
// compile time.
//
// Put writes every blob first and the entry last, so a reader never sees an
// entry whose blobs were not all written; a crash between the two leaves
// orphan blobs, which Trim and Verify collect. Every byte served is
// verified: an entry ends with the SHA-256 of its key and its other bytes
// (see Stored formats), checked before it is decoded; Get checks that each blob
// is stored, and a hit's reader reads a blob only when asked and verifies
// its size and SHA-256 before handing out any byte; a blob larger than a
// chunk is stored as chunks (see Stored formats) and verified chunk by chunk as
// its reader streams it, and as a whole at its end. Badger's block and value
// checksums are on as well. A missing or corrupt blob (or a damaged entry) is a miss
// whose reason starts with "damaged: " (a *MissError with Corrupt set,
// matching ErrDamaged), counted as Damaged (apart from Misses), and the entry is removed, as the go
// command's build cache does with missing(reason): a damaged entry is never
// served and never crashes the caller.
//
// # Faults
//
// Every operation of Badger is panic-safe: locks are released by defers,
// and a recovered panic becomes an *UnhealthyError that every later
// operation returns at once (Stats still answers, saying why). Close waits
// for the operations in flight. Badger writes its value log, write-ahead log
// and tables through mmap, where a full file system is a SIGBUS rather than
// an error, so every write first checks that the file system keeps a reserve
// of free space (two value-log files and four memtables, 48 MiB) and fails
// with ErrNoSpace below it; a store opened below it is read-only. When
// Badger truncates a damaged value log as it opens, Stats.Health and the
// Logger say so. Wipe removes the database of a store that cannot be opened.
//
// # Size and eviction
//
// Bytes counts each distinct blob once. When Options.MaxBytes is positive, a
// Put that leaves Bytes above it evicts least-recently-used entries (by
// LastUsed) until it fits; Trim does the same for any limit, deletes orphan
// blobs and then, when values were deleted since the last compaction (a
// mark in the database says so across processes), compacts and runs
// Badger's value-log garbage collection. Stats and a Trim with nothing to
// evict read only the in-memory index, whose size and orphan set are kept
// as entries come and go; ListRecent lists in order of last use from it.
// Badger's Get updates LastUsed in memory and writes the new times in
// batches (on Trim, Stats, Verify, Close and every flushInterval, 2 s), so
// a hit costs no write.
//
// # Faces
//
// A build uses the core face (Core: Get, Put, Close), as the go command's
// build cache does; reading an entry's metadata alone (EntryReader),
// removing an entry (Deleter) and counting the events a build reports
// (EventCounter) are optional capabilities, used through Lookup, Delete
// and Count. Listing, verifying, trimming, clearing and reading the
// counters are functions (List, ListRecent, Verify, Trim, Clear,
// ReadStats) that reach the store of this package under a Core: through
// its Counting store, and through any decorator that names what it wraps
// with Unwrap (see maintain.go).
//
// # Counters
//
// Stats reports hits, misses, uncached builds (with reasons), errors,
// corrupt entries and evictions. Counting is a decorator (Counting, see
// counting.go) around an uncounted store: it counts the hits, misses and
// damaged entries of Get and Entry, the entries Verify removes and the
// evictions of Put and Trim, and the caller counts "uncached" and "error"
// events with Count. Counting happens there and nowhere else: Badger and
// Memory are each their uncounted store in a Counting store that keeps
// its counters in that store. Badger persists counters in the database in
// batches like LastUsed, so a process that is killed may lose its last
// few counts. Clear empties a store and keeps its counters; ZeroCounts
// zeroes them (as ccache -z does) and notes when, and removing the
// database (Wipe) removes them with it.
//
// # Stored formats
//
// An entry is stored under its key as:
//
//	"PJE2"                         magic and version
//	uvarint len, record bytes
//	uvarint n, n times:            outputs
//	    uvarint len, name bytes
//	    uvarint size
//	    32 bytes digest
//	    uvarint mode
//	uvarint n, n times:            meta, sorted by key, keys distinct
//	    uvarint len, key bytes
//	    uvarint len, value bytes
//	varint created (Unix nanoseconds)
//	varint compile time (nanoseconds, >= 0)
//	32 bytes                       SHA-256 of the key, then of every byte above
//
// and nothing after. The key and LastUsed are stored beside it. The digest
// makes the entry check itself: a flipped byte anywhere in it (or an entry
// found under another key) fails the check before anything is parsed.
// Entries of the first format (PJE1) carried no digest; they are not
// served and are removed like damaged ones. EncodeEntry and DecodeEntry
// write and read this form (the remote tiers hold the same bytes).
//
// A blob of at most a chunk (Options.ChunkBytes) is stored whole under
// its SHA-256. A larger one is stored as chunks and a chunk list, so that
// neither Put nor a reader of a hit ever holds more than one chunk of it
// in memory. The chunk list of the blob with digest D is stored as:
//
//	"PJC1"                 magic and version
//	uvarint size           the blob's size, > chunk size
//	uvarint chunk size     every chunk but the last has this size
//	16 bytes upload        the name its chunks are stored under
//	uvarint n              ceil(size / chunk size)
//	n times 32 bytes       SHA-256 of each chunk, in order
//	32 bytes               SHA-256 of D, then of every byte above
//
// and nothing after; chunk j (from 0) is stored under (upload, j). The
// final digest binds the list to its blob, as an entry's binds it to its
// key.
//
// # Read-only stores
//
// With Options.ReadOnly (PTOJIT_CACHE_READONLY=1) a store never writes: Put,
// Delete, Trim and Clear return ErrReadOnly, Get does not update LastUsed or
// remove corrupt entries, Verify only reports, and counters live in memory
// for the life of the store.
//
// # Processes
//
// Badger allows one process per database directory (see docs/design.md's process
// model: the daemon owns the store). Open fails with an error that matches
// ErrLocked when another process holds the directory; OpenWait waits for it.
//
// Badger does not sync each write (SyncWrites is off): a process that dies
// loses nothing written, but after a power loss the entry of a blob written
// just before may survive while the blob's bytes do not. The read
// verification turns that into a miss, never into wrong bytes.
package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Key identifies an entry: the digest of a key record computed by the
// caller. Its zero value is a valid key. A Key is a value, safe to copy and
// share.
type Key [32]byte

// String returns the key as 64 lowercase hex digits.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// ParseKey parses 64 hex digits.
func ParseKey(s string) (Key, error) {
	var k Key
	if len(s) != 2*len(k) {
		return k, fmt.Errorf("cache: key %q: want %d hex digits", s, 2*len(k))
	}
	if _, err := hex.Decode(k[:], []byte(s)); err != nil {
		return k, fmt.Errorf("cache: key %q: not hex", s)
	}
	return k, nil
}

// Digest is the SHA-256 of a blob.
type Digest = [32]byte

// Output is one artifact of an entry. Mode holds the file mode bits the
// output should be written with (e.g. 0o755 for a shared object). It is a
// value, safe to copy and share.
type Output struct {
	Name   string
	Size   int64
	Digest Digest
	Mode   uint32
}

// Entry is the metadata of a cache entry. A store returns a new Entry on
// every call; the caller may keep and modify it. Like any plain struct it
// is safe for concurrent reads, not for a write concurrent with other use.
type Entry struct {
	Key Key
	// Record is the encoded key record, opaque bytes to the cache.
	Record  []byte
	Outputs []Output
	// Meta holds small named strings, e.g. "hashid", "platform".
	Meta        map[string]string
	Created     time.Time
	LastUsed    time.Time
	CompileTime time.Duration
}

// Size returns the sum of the entry's output sizes.
func (e *Entry) Size() int64 {
	var n int64
	for _, o := range e.Outputs {
		n += o.Size
	}
	return n
}

// Hit is the result of a successful Get: the entry and a reader of each
// output. Get counts the use and updates LastUsed (Entry.LastUsed is the
// last use before this one) and checks that every output's blob is
// stored, but reads no blob's bytes: a caller that needs none of them
// (its outputs already in place) reads nothing. Every byte a reader
// yields is verified: an output of at most one chunk is read from the
// store when Open or Read asks for it and checked against its size and
// digest before any byte is handed out; a chunked one is checked
// chunk by chunk as it streams and as a whole at its end, and a reader
// that meets damage returns a *MissError matching ErrDamaged (the entry
// is then removed and counted as damaged, as Get's own damage is) instead
// of the bytes. A reader is io.EOF only once its output verified. The Hit
// belongs to the caller (it shares no memory with the store); its readers
// must be used before the store is closed. Safe for concurrent use: each
// Open returns a reader of its own, used by one goroutine.
type Hit struct {
	Entry *Entry
	// Tier names the store a decorator served the hit from when it is
	// not the one it decorates: "" for that store's own hit, else the
	// decorator's name for it ("remote" for package cache/remote's
	// tiers, whose hit the decorator may have copied to its store
	// first).
	Tier string
	// Warnings are what the build served the hit should report of where
	// it came from (a remote tier that cannot authenticate its entries,
	// said once per tier).
	Warnings []string
	srcs     []*source
	// onDamage run, in order and once, when a reader finds damage:
	// the store removes the entry, a Counting store counts it.
	mu       sync.Mutex // guards onDamage and damage
	onDamage []func(*MissError)
	damage   *MissError
}

// Open returns a reader of output i, verified as it streams (see Hit).
func (h *Hit) Open(i int) io.ReadCloser {
	s := h.srcs[i]
	if s.open != nil {
		return h.openStream(s)
	}
	if s.list == nil {
		b, err := h.whole(s)
		if err != nil {
			return io.NopCloser(failedReader{err})
		}
		return io.NopCloser(bytes.NewReader(b))
	}
	return &chunkReader{h: h, src: s, sum: sha256.New()}
}

// Read reads output i into memory, verified: for callers whose outputs
// are small. Damage is a *MissError matching ErrDamaged.
func (h *Hit) Read(i int) ([]byte, error) {
	s := h.srcs[i]
	if s.list == nil && s.open == nil {
		return h.whole(s)
	}
	r := h.Open(i)
	defer r.Close()
	b := bytes.NewBuffer(make([]byte, 0, s.out.Size))
	if _, err := b.ReadFrom(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ReadAll reads every output into memory, verified, as Read does.
func (h *Hit) ReadAll() ([][]byte, error) {
	data := make([][]byte, len(h.srcs))
	for i := range h.srcs {
		b, err := h.Read(i)
		if err != nil {
			return nil, err
		}
		data[i] = b
	}
	return data, nil
}

// whole reads the blob of at most one chunk s from the store and checks
// it against its output's size and digest: the bytes, or the damage.
func (h *Hit) whole(s *source) ([]byte, error) {
	b, err := s.load()
	switch {
	case errors.Is(err, errBlobMissing):
		return nil, h.damaged(missingReason(s.out.Digest), s.out.Digest)
	case err != nil:
		return nil, fmt.Errorf("cache: read blob %s: %w", shortHex(s.out.Digest[:]), err)
	}
	if reason := checkBlob(s.out, b); reason != "" {
		return nil, h.damaged(reason, s.out.Digest)
	}
	return b, nil
}

// failedReader is a reader that fails with err.
type failedReader struct{ err error }

func (r failedReader) Read([]byte) (int, error) { return 0, r.err }

// whenDamaged adds fn to what runs when a reader finds damage.
func (h *Hit) whenDamaged(fn func(*MissError)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onDamage = append(h.onDamage, fn)
}

// damaged returns the miss of a reader that found the blob d damaged,
// running the damage hooks the first time.
func (h *Hit) damaged(reason string, d Digest) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.damage == nil {
		h.damage = &MissError{Key: h.Entry.Key, Reason: ReasonDamaged + reason, Corrupt: true, blob: &d}
		for _, fn := range h.onDamage {
			fn(h.damage)
		}
	}
	return h.damage
}

// ErrMiss matches every miss (errors.Is(err, ErrMiss)).
var ErrMiss = errors.New("cache miss")

// ErrReadOnly is returned by the operations that would write a read-only
// store.
var ErrReadOnly = errors.New("cache: store is read-only")

// ErrLocked matches the error of Open when another process holds the cache
// directory.
var ErrLocked = errors.New("cache directory is in use by another process")

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("cache: store is closed")

// Reasons of misses that are not corruption.
const (
	ReasonNoEntry = "no entry"
)

// ReasonDamaged starts the reason of every miss on a damaged entry.
const ReasonDamaged = "damaged: "

// ErrDamaged matches every miss on an entry that existed but failed
// verification (a *MissError with Corrupt set): callers tell a damaged
// entry from an absent one with errors.Is, never from the reason's text.
var ErrDamaged = errors.New("cache: damaged entry")

// MissError is a miss with its reason (immutable once returned, so safe to
// share): "no entry", or for a damaged entry "damaged: " followed by
// "blob 3f2a... corrupt: sha256 mismatch", "blob 3f2a... missing",
// "entry corrupt: digest mismatch", .... It matches ErrMiss, and ErrDamaged
// when Corrupt is set. The reason is for people; its kind is Corrupt.
type MissError struct {
	Key    Key
	Reason string
	// Corrupt is set when the entry existed but was damaged (and removed,
	// unless the store is read-only).
	Corrupt bool
	// blob is the damaged blob a hit's reader found, to remove with the
	// entry.
	blob *Digest
}

func (e *MissError) Error() string {
	return fmt.Sprintf("cache miss for %s: %s", e.Key.String()[:12], e.Reason)
}

// Is reports whether target is ErrMiss, or ErrDamaged for a damaged
// entry.
func (e *MissError) Is(target error) bool {
	return target == ErrMiss || (e.Corrupt && target == ErrDamaged)
}

// DataError reports a Put whose data does not match its outputs, or whose
// entry exceeds a limit of the entry encoding. Immutable once returned.
type DataError struct {
	Key    Key
	Output string // the output's name, "" for the entry as a whole
	Reason string
	Err    error // ErrTooLarge or nil
}

func (e *DataError) Unwrap() error { return e.Err }

func (e *DataError) Error() string {
	if e.Output == "" {
		return fmt.Sprintf("cache: put %s: %s", e.Key.String()[:12], e.Reason)
	}
	return fmt.Sprintf("cache: put %s: output %q: %s", e.Key.String()[:12], e.Output, e.Reason)
}

// ErrTooLarge matches a DataError for an entry whose blobs alone exceed the
// store's MaxBytes.
var ErrTooLarge = errors.New("entry larger than the cache size limit")

// Events counted by Count.
const (
	EventUncached = "uncached" // a build whose identity was unavailable; reason required
	EventError    = "error"    // a build that failed; reason optional
	// EventDamaged is a damaged entry its reader found (a manifest whose
	// JSON does not parse) and removed; counted as Damaged and Corrupt,
	// like a damaged entry Get finds.
	EventDamaged = "damaged"
	// EventVerifyMismatch is a hit whose outputs differed from those of a
	// fresh compile of the same request (PTOJIT_CACHE_VERIFY): its key
	// misses an input. Counted as VerifyMismatch; no reason needed.
	EventVerifyMismatch = "verify_mismatch"
	// EventUnitMiss is a compiled unit a request miss found in no entry
	// of its own and compiled (package jit); counted as UnitMisses, apart
	// from the request's miss. No reason needed.
	EventUnitMiss = "unit_miss"
)

// Stats are a store's counters and size. Entries, Bytes and MaxBytes
// describe the store now; the other fields count events since the counters
// were created. A snapshot owned by the caller: safe for concurrent reads.
type Stats struct {
	Hits     int64 `json:"hits"`
	Misses   int64 `json:"misses"`
	Uncached int64 `json:"uncached"`
	Errors   int64 `json:"errors"`
	Corrupt  int64 `json:"corrupt"`
	// Damaged counts lookups that found a damaged entry: misses counted
	// apart from Misses.
	Damaged         int64            `json:"damaged"`
	Evictions       int64            `json:"evictions"`
	UncachedReasons map[string]int64 `json:"uncached_reasons"`
	Entries         int64            `json:"entries"`
	Bytes           int64            `json:"bytes"`
	MaxBytes        int64            `json:"max_bytes"`
	// Health lists what is wrong with the store now: a value log
	// truncated when it was opened, too little free space to write, a
	// recovered panic. Empty when nothing is.
	Health []string `json:"health,omitempty"`
	// VerifyMismatch counts hits that a fresh compile contradicted
	// (EventVerifyMismatch): each one a failed build, never published.
	VerifyMismatch int64 `json:"verify_mismatch"`
	// RemoteHits counts lookups the store missed and the remote tier
	// answered (CountRemoteHit): hits apart from Hits, not misses.
	RemoteHits int64 `json:"remote_hits"`
	// TimeSaved is the stored compile time of every entry served, summed
	// over its hits (local and remote), in nanoseconds.
	TimeSaved int64 `json:"time_saved_ns"`
	// BytesServed is the size of the outputs of every hit.
	BytesServed int64 `json:"bytes_served"`
	// ZeroedAt is when the counters were last zeroed (ZeroCounts), in
	// Unix nanoseconds; 0 when they never were (they count since the
	// store was created).
	ZeroedAt int64 `json:"zeroed_at_ns"`
	// UnitHits counts the compiled units a request miss found in their
	// own entries (kind "unit"; see package jit) and so did not compile;
	// UnitMisses those it compiled (EventUnitMiss). They are counted apart
	// from Hits and Misses, which count requests: a request miss that
	// compiles 1 of 3 units counts 1 miss, 2 unit hits and 1 unit miss.
	UnitHits   int64 `json:"unit_hits"`
	UnitMisses int64 `json:"unit_misses"`
}

// HitRate is the share of lookups that hit, local or remote, in
// [0, 1]: (Hits+RemoteHits) / (Hits+RemoteHits+Misses+Damaged); ok is
// false when there was no lookup.
func (s *Stats) HitRate() (rate float64, ok bool) {
	n := s.Hits + s.RemoteHits + s.Misses + s.Damaged
	if n <= 0 {
		return 0, false
	}
	return float64(s.Hits+s.RemoteHits) / float64(n), true
}

// CorruptBlob is a damaged or missing blob found by Verify. Like the
// reports, a plain value owned by the caller.
type CorruptBlob struct {
	Digest  Digest `json:"-"`
	Reason  string `json:"reason"`
	Entries []Key  `json:"-"` // the entries that named it
}

// VerifyReport is the result of Verify, owned by the caller: safe for
// concurrent reads.
type VerifyReport struct {
	Entries int   // entries checked
	Blobs   int   // blobs re-hashed
	Bytes   int64 // bytes re-hashed
	// Corrupt lists damaged or missing blobs.
	Corrupt []CorruptBlob
	// BadEntries lists damaged entries (results, manifests and latest-build
	// records: digest mismatch, undecodable, unreadable), with reasons.
	BadEntries map[Key]string
	// Tables, when not empty, says that the database's own tables failed
	// their checksums: damage that hides entries from the check and that
	// only clearing the cache repairs.
	Tables string
	// Removed lists the entries removed (none on a read-only store).
	Removed []Key
	// Orphans counts blobs named by no entry, deleted.
	Orphans int
	// OrphanBytes is their size.
	OrphanBytes int64
}

// OK reports whether Verify found nothing damaged. Orphans are not damage.
func (r *VerifyReport) OK() bool {
	return len(r.Corrupt) == 0 && len(r.BadEntries) == 0 && r.Tables == ""
}

// TrimReport is the result of Trim, owned by the caller: safe for
// concurrent reads.
type TrimReport struct {
	BytesBefore int64
	BytesAfter  int64
	MaxBytes    int64
	Evicted     []Key // least recently used first
	Orphans     int   // blobs named by no entry, deleted
	// ValueLogGC counts value-log files rewritten by Badger's GC.
	ValueLogGC int
}

// ErrNoSpace matches the error of a write refused because the file system
// of the store has less free space than the store keeps in reserve.
var ErrNoSpace = errors.New("cache: not enough free space")

// SpaceError is a write refused for lack of free space (it matches
// ErrNoSpace). Immutable once returned.
type SpaceError struct {
	Dir        string
	Free, Need int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("cache: %s has %s free, the store needs %s to write", e.Dir, FormatSize(e.Free), FormatSize(e.Need))
}

// Is reports whether target is ErrNoSpace.
func (e *SpaceError) Is(target error) bool { return target == ErrNoSpace }

// ErrUnhealthy matches the errors of a store that recovered from a panic:
// every later operation fails with it at once.
var ErrUnhealthy = errors.New("cache: store is unhealthy")

// UnhealthyError is the error of an operation on a store that recovered
// from a panic (it matches ErrUnhealthy). Immutable once returned.
type UnhealthyError struct {
	Dir   string
	Op    string // the operation that panicked
	Cause string // the panic's value
}

func (e *UnhealthyError) Error() string {
	return fmt.Sprintf("cache: store %s unusable since a panic in %s: %s", e.Dir, e.Op, e.Cause)
}

// Is reports whether target is ErrUnhealthy.
func (e *UnhealthyError) Is(target error) bool { return target == ErrUnhealthy }

// Logger receives a Badger store's log messages. Its method set is that of
// badger.Logger. Implementations must be safe for concurrent use: Badger
// logs from several goroutines.
type Logger interface {
	Errorf(string, ...any)
	Warningf(string, ...any)
	Infof(string, ...any)
	Debugf(string, ...any)
}

// DefaultMaxBytes is the default size limit: 5 GiB.
const DefaultMaxBytes int64 = 5 << 30

// Options configure a store. A store copies them when it is created; Now
// must be safe for concurrent use.
type Options struct {
	// MaxBytes caps the size of the blobs; 0 means no limit.
	MaxBytes int64
	// ReadOnly makes the store never write.
	ReadOnly bool
	// Logger receives Badger's messages; nil silences them.
	Logger Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// ChunkBytes is the chunk size: a blob larger than it is stored as
	// chunks of this size (see chunk.go). 0 means DefaultChunkBytes;
	// values are clamped to [MinChunkBytes, MaxChunkBytes].
	ChunkBytes int64
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Limits of the entry encoding; Put rejects entries beyond them and the
// decoder refuses to read beyond them.
const (
	// MaxRecordBytes bounds an entry's key record. A direct-mode result
	// record lists every header a compile read with its digest, hex-
	// encoded: 10,000 headers take about 3 MB, twice the JSON of a
	// header manifest of the same headers (package jit caps that at 16
	// MiB).
	MaxRecordBytes = 32 << 20
	MaxOutputs     = 4096
	MaxNameBytes   = 4096 // output name
	MaxMetaPairs   = 256
	MaxMetaBytes   = 64 << 10 // one meta key or value
	maxEntryBytes  = MaxRecordBytes + MaxOutputs*(MaxNameBytes+64) + MaxMetaPairs*2*(MaxMetaBytes+8) + 64 + entrySumSize
)

func shortHex(d []byte) string { return hex.EncodeToString(d[:6]) }

// CountError reports a Count call with an unknown event or a missing
// reason. Immutable once returned.
type CountError struct {
	Event  string
	Reason string
}

func (e *CountError) Error() string {
	return fmt.Sprintf("cache: count %q: %s", e.Event, e.Reason)
}
