// Package remote is ptojit's remote cache tiers: Redis (a single server,
// over TLS or not, or a Redis Cluster, through github.com/redis/go-redis/v9)
// and S3, and the chain that puts them behind a local store. It imports no
// ptojit package but cache.
//
// # Tiers and the chain
//
// Each tier is a cache.Core: a Remote (Get, Put, Close; Publish queues a
// write), or any other store that verifies what it serves. A Chain holds
// the tiers of one remote setting in lookup order, and Chain.Over puts
// them behind a local store as a cache.Core decorator (Tiered) that does
// what a build needs of them: the lookup after a local miss, the copy of
// a tier's hit into the local store (backfill, none in verify mode) and
// into the earlier tiers, the check that an entry's key is its record's
// digest, the count of a remote hit, and the publication of what is Put.
// Signatures are each tier's (Config.SigningKey, Config.Trust), and so
// are its warnings (Config.Warn). A new kind of tier (the REAPI one) is a
// cache.Core and a case in NewChain, which builds the tier list.
//
// # Layout
//
// Blobs are stored by content digest, entries by key (see the key layout in
// format.go): a blob up to Config.ChunkBytes is one value, a larger one a
// header and its chunks. Every key is a plain string key, so a cluster may
// place each in any slot, and reads of many keys are pipelined: a Get is
// one round trip for the entry and one for its blobs (the whole values of
// small ones, the headers of chunked ones), and a hit's reader of a
// chunked blob reads one chunk per round trip as it is read, so that no
// output is ever whole in memory. A Put writes an output larger than a
// chunk (whose digest the entry gives) a chunk at a time as it reads it,
// the others in one pipelined round.
//
// # Verification
//
// Everything read is verified before it is returned: the entry by the
// cache package's own decoder (cache.DecodeEntry: its digest bound to its
// key, every limit, output name and mode), exactly as a local read, and
// each blob against its size and SHA-256. A failure is a *DamagedError,
// counted as damaged and never served; when the tier is writable the
// damaged item is deleted, so that the next publication writes it again.
// A blob that is missing (evicted) is a plain miss.
//
// # Faults
//
// Connecting and every operation have short timeouts (Config). Network
// failures, timeouts and error replies count as errors; after
// Config.BreakerFailures in a row the circuit opens: operations fail at
// once with ErrCircuitOpen for Config.BreakerCooldown, then one probe
// decides. Config.Warn hears one message per episode. A full server
// (maxmemory with noeviction: "OOM" replies to writes) is counted but does
// not open the circuit: reads still work. In a Redis Cluster, a failure
// while another master answered within answeredWindow (10 s) is that
// master's: it is counted but does not open the circuit, so the entries
// whose keys live on the masters that are up are still served. Values
// are read at most maxValueBytes and a byte (GETRANGE), as S3 objects
// are, so a value stored by another writer never costs more memory than
// a chunk. The remote tier never fails a build: callers treat every
// error as a miss or a skipped publication.
//
// # Publication
//
// Publish queues a write in a bounded queue served in the background;
// a full queue drops the write and counts it. Drain stops taking writes and
// waits for the queue until its context ends, then drops and counts the
// rest.
//
// A Remote is safe for concurrent use.
package remote

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ptojit/ptojit/cache"
)

// ErrMiss is a key the remote tier does not hold. It matches cache.ErrMiss:
// to a caller, a miss of the remote tier is a miss like a local one.
var ErrMiss error = missSentinel{}

type missSentinel struct{}

func (missSentinel) Error() string        { return "remote: no entry" }
func (missSentinel) Is(target error) bool { return target == cache.ErrMiss }

// ErrCircuitOpen is an operation skipped because the remote tier failed
// repeatedly and its cooldown has not passed. The error returned is a
// *CircuitOpenError, which matches it.
var ErrCircuitOpen = errors.New("remote: unavailable after repeated failures (circuit open)")

// CircuitOpenError is an operation skipped because the circuit is open: it
// names the tier and the last failure. It matches ErrCircuitOpen.
type CircuitOpenError struct {
	Target string // the URL without its password
	Last   string // the failure that opened the circuit, or the last probe's
	Until  time.Time
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("remote cache %s skipped: it failed repeatedly (last: %s); it is tried again after %s",
		e.Target, e.Last, e.Until.Format(time.TimeOnly))
}

func (e *CircuitOpenError) Is(target error) bool { return target == ErrCircuitOpen }

// TierError is a failure of the remote tier itself (network, timeout, an
// error reply, a refused authentication), as op returns it: Error names the
// tier.
type TierError struct {
	Target string
	// Auth is set when the server refused the credentials (NOAUTH,
	// WRONGPASS).
	Auth bool
	// Hint says where the credentials come from.
	Hint string
	Err  error
}

func (e *TierError) Error() string {
	if e.Auth {
		return fmt.Sprintf("remote cache %s refused authentication: %v (%s)", e.Target, e.Err, e.Hint)
	}
	return fmt.Sprintf("remote cache %s: %v", e.Target, e.Err)
}

func (e *TierError) Unwrap() error { return e.Err }

// ErrReadOnly is a write to a read-only remote tier.
var ErrReadOnly = errors.New("remote: read-only")

// MissError is a miss with a reason (a missing blob: evicted, or not yet
// written). It matches ErrMiss.
type MissError struct{ Reason string }

func (e *MissError) Error() string        { return "remote: miss: " + e.Reason }
func (e *MissError) Is(target error) bool { return target == ErrMiss || target == cache.ErrMiss }

// DamagedError is remote data that failed verification. It is never served.
type DamagedError struct {
	// What names the item: "entry <key>" or "blob <digest>".
	What   string
	Reason string
}

func (e *DamagedError) Error() string { return "remote: damaged: " + e.What + ": " + e.Reason }

// Is reports whether target is cache.ErrMiss: damaged remote data is a
// miss with a reason to a caller, as damaged local data is.
func (e *DamagedError) Is(target error) bool { return target == cache.ErrMiss }

// Stats are the remote tier's counters since the Remote was created.
type Stats struct {
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	Damaged int64 `json:"damaged"`
	// Untrusted counts entries refused for their signature (remote_trust);
	// they are misses too.
	Untrusted int64 `json:"untrusted"`
	Errors    int64 `json:"errors"`
	// Writes counts entries written.
	Writes int64 `json:"writes"`
	// Pending counts publications queued or being written; Dropped those
	// dropped (full queue, Drain's deadline, read-only tier).
	Pending   int64 `json:"pending"`
	Dropped   int64 `json:"dropped"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// State is "ok", "read-only", or "circuit open" (with LastError).
	State     string `json:"state"`
	LastError string `json:"last_error,omitempty"`
	// Target is the URL without its password.
	Target string `json:"target"`
}

// Remote is a connection to the remote tier.
type Remote struct {
	cfg Config
	be  backend
	br  breaker
	pub *publisher

	hits, misses, damaged, untrusted, errs, writes, dropped, up, down atomic.Int64

	untrustedOnce, unauthOnce, servedOnce sync.Once
}

// quiet discards go-redis's own log lines: the Remote counts and reports
// its failures itself (Stats, Config.Warn).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var silenceRedis sync.Once

// New returns a Remote for cfg. It does not connect: the first operation
// does.
func New(cfg Config) (*Remote, error) {
	if cfg.Target == nil || (len(cfg.Target.Addrs) == 0 && cfg.Target.S3 == nil) {
		return nil, &URLError{"no target"}
	}
	cfg.fill()
	var be backend
	if cfg.Target.S3 != nil {
		b, err := newS3Backend(cfg.Target.S3, &cfg)
		if err != nil {
			return nil, err
		}
		be = b
	} else {
		be = &redisBackend{client: newRedisClient(&cfg), cluster: cfg.Target.Cluster, now: cfg.Now}
	}
	r := &Remote{cfg: cfg, be: be}
	r.br = breaker{threshold: cfg.BreakerFailures, cooldown: cfg.BreakerCooldown, now: cfg.Now, warn: cfg.Warn, target: cfg.Target.String()}
	r.pub = newPublisher(r, cfg.Queue)
	return r, nil
}

// newRedisClient returns the go-redis client of cfg's Redis target.
func newRedisClient(cfg *Config) redis.UniversalClient {
	silenceRedis.Do(func() { redis.SetLogger(quiet{}) })
	t := cfg.Target
	var tlsCfg *tls.Config
	if t.TLS {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if t.Cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 t.Addrs,
			Username:              t.Username,
			Password:              t.Password,
			Protocol:              2,
			MaxRedirects:          3,
			MaxRetries:            -1,
			DialTimeout:           cfg.ConnectTimeout,
			DialerRetries:         1,
			ReadTimeout:           cfg.Timeout,
			WriteTimeout:          cfg.Timeout,
			ContextTimeoutEnabled: true,
			PoolTimeout:           cfg.Timeout,
			DisableIdentity:       true,
			TLSConfig:             tlsCfg,
		})
	}
	return redis.NewClient(&redis.Options{
		Addr:                  t.Addrs[0],
		Username:              t.Username,
		Password:              t.Password,
		DB:                    t.DB,
		Protocol:              2,
		MaxRetries:            -1,
		DialTimeout:           cfg.ConnectTimeout,
		DialerRetries:         1,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		ContextTimeoutEnabled: true,
		PoolTimeout:           cfg.Timeout,
		DisableIdentity:       true,
		TLSConfig:             tlsCfg,
	})
}

// warnUnauthenticated warns once, when Config.WarnUnauthenticated asks
// for it, that the tier's entries are not signed or not checked.
func (r *Remote) warnUnauthenticated() {
	if !r.cfg.WarnUnauthenticated {
		return
	}
	r.unauthOnce.Do(func() {
		if !r.cfg.ReadOnly && r.cfg.SigningKey == nil {
			r.cfg.Warn("writes unsigned entries (set remote_signing_key): the tier is unauthenticated")
		}
		if r.cfg.Trust == nil {
			r.cfg.Warn("accepts entries of any writer (set remote_trust): the tier is unauthenticated")
		}
	})
}

// ReadOnly reports whether the tier never writes.
func (r *Remote) ReadOnly() bool { return r.cfg.ReadOnly }

// Stats returns the counters.
func (r *Remote) Stats() Stats {
	s := Stats{
		Hits: r.hits.Load(), Misses: r.misses.Load(), Damaged: r.damaged.Load(), Untrusted: r.untrusted.Load(), Errors: r.errs.Load(),
		Writes: r.writes.Load(), Pending: r.pub.pending.Load(), Dropped: r.dropped.Load(),
		BytesUp: r.up.Load(), BytesDown: r.down.Load(), State: "ok", Target: r.cfg.Target.String(),
	}
	if open, last := r.br.state(); open {
		s.State, s.LastError = "circuit open", last
	} else if r.cfg.ReadOnly {
		s.State = "read-only"
	}
	return s
}

// Close stops publishing (dropping what is queued: call Drain first to
// wait for it), waits for the writes in flight (each bounded by the
// operation timeout) and closes the connections.
func (r *Remote) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.pub.drain(ctx)
	<-r.pub.done
	return r.be.close()
}

// op runs fn under the operation timeout and accounts for its outcome:
// a network failure or timeout is an error that counts toward the
// breaker, a server's error reply an error that does not, a miss or
// damaged data neither. A cancellation by the caller counts nothing.
func (r *Remote) op(ctx context.Context, fn func(ctx context.Context) error) error {
	if !r.br.allow() {
		return r.br.openError()
	}
	octx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	err := r.safe(octx, fn)
	var me *MissError
	var de *DamagedError
	switch {
	case err == nil, errors.Is(err, ErrMiss), errors.As(err, &me), errors.As(err, &de):
		r.br.success()
		return err
	case ctx.Err() != nil:
		r.br.cancelled()
		return ctx.Err()
	}
	r.errs.Add(1)
	te := &TierError{Target: r.br.target, Hint: r.be.authHint(), Err: err}
	switch r.be.kind(err) {
	case failFull:
		r.br.success() // a full server: it answers, and reads still work
		return te
	case failPart:
		r.br.cancelled() // a cluster node: the others answer
		return te
	case failAuth:
		te.Auth = true
	}
	r.br.failure(err)
	return te
}

// safe runs fn, turning a panic into an error.
func (r *Remote) safe(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx)
}

// Entry returns the verified entry of key, without its blobs: a missing
// entry is ErrMiss (counted as a miss), a damaged one a *DamagedError.
func (r *Remote) Entry(ctx context.Context, key cache.Key) (*cache.Entry, error) {
	var e *cache.Entry
	err := r.op(ctx, func(ctx context.Context) error {
		var err error
		e, err = r.entry(ctx, key)
		return err
	})
	r.account(err, false)
	return e, err
}

// account counts the outcome of a lookup (errors are counted by op).
func (r *Remote) account(err error, countHit bool) {
	var de *DamagedError
	var ue *UntrustedError
	switch {
	case err == nil:
		if countHit {
			r.hits.Add(1)
		}
	case errors.As(err, &ue):
		r.untrusted.Add(1)
		r.misses.Add(1)
		r.untrustedOnce.Do(func() {
			r.cfg.Warn(fmt.Sprintf("refused %s (further untrusted entries are counted in cache stats)", ue.Error()))
		})
	case errors.As(err, &de):
		r.damaged.Add(1)
		r.misses.Add(1)
	case errors.Is(err, ErrMiss):
		r.misses.Add(1)
	}
}

func (r *Remote) entry(ctx context.Context, key cache.Key) (*cache.Entry, error) {
	r.warnUnauthenticated()
	keys := []string{entryKey(key)}
	if r.cfg.Trust != nil {
		keys = append(keys, sigKey(key))
	}
	vals, err := r.be.get(ctx, keys)
	if err != nil {
		return nil, err
	}
	b := vals[0]
	if b == nil {
		return nil, ErrMiss
	}
	r.down.Add(int64(len(b)))
	e, err := decodeEntry(key, b)
	if err != nil {
		r.forget(ctx, entryKey(key))
		return nil, &DamagedError{What: "entry " + key.String(), Reason: err.Error()}
	}
	if r.cfg.Trust != nil {
		r.down.Add(int64(len(vals[1])))
		if err := checkSignature(r.cfg.Trust, key, b, vals[1]); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// damagedBlob deletes a damaged blob (when writable) and returns its
// error.
func (r *Remote) damagedBlob(ctx context.Context, o cache.Output, h *blobHeader, reason string) error {
	keys := []string{blobKey(o.Digest)}
	if h != nil {
		for j := range h.chunks() {
			keys = append(keys, chunkKey(o.Digest, j))
		}
	}
	r.forget(ctx, keys...)
	return &DamagedError{What: fmt.Sprintf("blob %x (%s)", o.Digest[:6], o.Name), Reason: reason}
}

// forget deletes damaged keys when the tier is writable; failures are
// ignored.
func (r *Remote) forget(ctx context.Context, keys ...string) {
	if r.cfg.ReadOnly {
		return
	}
	r.be.del(ctx, keys)
}

// putBytes writes e and data[i] as e.Outputs[i] now: the blobs the tier does
// not hold first, the entry last, so a reader never sees an entry before
// its blobs. Every blob is checked against its output first. It counts a
// write or an error.
func (r *Remote) putBytes(ctx context.Context, e *cache.Entry, data [][]byte) error {
	if r.cfg.ReadOnly {
		return ErrReadOnly
	}
	if len(data) != len(e.Outputs) {
		return fmt.Errorf("remote: %d outputs, %d blobs", len(e.Outputs), len(data))
	}
	for i, o := range e.Outputs {
		if data[i] == nil && o.Size > int64(r.cfg.ChunkBytes) {
			continue // stored by Put's putChunked
		}
		if int64(len(data[i])) != o.Size || sha256.Sum256(data[i]) != o.Digest {
			return fmt.Errorf("remote: output %s: bytes do not match its size and digest", o.Name)
		}
	}
	enc, err := encodeEntry(e)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	err = r.op(ctx, func(ctx context.Context) error { return r.put(ctx, e, data, enc) })
	if err == nil {
		r.writes.Add(1)
	}
	return err
}

func (r *Remote) put(ctx context.Context, e *cache.Entry, data [][]byte, enc []byte) error {
	r.warnUnauthenticated()
	// Which blobs are there already?
	keys := make([]string, len(e.Outputs))
	for i, o := range e.Outputs {
		keys[i] = blobKey(o.Digest)
	}
	exists, err := r.be.exists(ctx, keys)
	if err != nil {
		return err
	}
	var chunkKeys, headKeys []string
	var chunkVals, headVals [][]byte
	seen := map[cache.Digest]bool{}
	for i, o := range e.Outputs {
		if exists[i] || seen[o.Digest] {
			continue
		}
		seen[o.Digest] = true
		b := data[i]
		if b == nil && o.Size > int64(r.cfg.ChunkBytes) {
			return &MissError{Reason: fmt.Sprintf("blob %x of %s, just written, missing", o.Digest[:6], o.Name)}
		}
		if len(b) <= r.cfg.ChunkBytes {
			headKeys, headVals = append(headKeys, blobKey(o.Digest)), append(headVals, append([]byte{blobInline}, b...))
			r.up.Add(int64(len(b) + 1))
			continue
		}
		h := blobHeader{size: int64(len(b)), chunk: int64(r.cfg.ChunkBytes)}
		for j := range h.chunks() {
			part := b[int64(j)*h.chunk : min(int64(j+1)*h.chunk, h.size)]
			chunkKeys, chunkVals = append(chunkKeys, chunkKey(o.Digest, j)), append(chunkVals, part)
			r.up.Add(int64(len(part)))
		}
		hb := encodeBlobHeader(h)
		headKeys, headVals = append(headKeys, blobKey(o.Digest)), append(headVals, hb)
		r.up.Add(int64(len(hb)))
	}
	if r.cfg.SigningKey != nil {
		sig := signEntry(r.cfg.SigningKey, e.Key, enc)
		headKeys, headVals = append(headKeys, sigKey(e.Key)), append(headVals, sig)
		r.up.Add(int64(len(sig)))
	}
	// Chunks before their headers, blobs and the signature before the
	// entry: a reader never sees an entry before what it names.
	for _, phase := range []struct {
		keys []string
		vals [][]byte
	}{{chunkKeys, chunkVals}, {headKeys, headVals}, {[]string{entryKey(e.Key)}, [][]byte{enc}}} {
		if len(phase.keys) == 0 {
			continue
		}
		if err := r.be.set(ctx, phase.keys, phase.vals); err != nil {
			return err
		}
	}
	r.up.Add(int64(len(enc)))
	return nil
}

// Publish queues a copy-free write of e and data (neither may be modified
// afterwards). It returns false when the write was dropped: a read-only
// tier, a full queue, or a Drain that has begun.
func (r *Remote) Publish(e *cache.Entry, data [][]byte) bool {
	if r.cfg.ReadOnly {
		return false
	}
	return r.pub.publish(job{e: e, data: data})
}

// Drain stops taking publications and waits for the queued ones until ctx
// ends; then it abandons the rest and returns their number (writes in
// flight then cannot be interrupted: each ends within the operation
// timeout, and Close waits for them). Later calls return 0 at once.
func (r *Remote) Drain(ctx context.Context) int { return r.pub.drain(ctx) }

// breaker is a circuit breaker: threshold consecutive failures open it for
// cooldown; then one probe may pass, whose outcome closes it or opens it
// for another cooldown. warn hears one message per episode (when it opens)
// and one when it closes. Safe for concurrent use; mu guards the rest.
type breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time
	warn      func(string)
	target    string

	mu        sync.Mutex
	failures  int
	open      bool
	until     time.Time
	probing   bool
	lastError string
}

func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true
	}
	if b.probing || b.now().Before(b.until) {
		return false
	}
	b.probing = true
	return true
}

func (b *breaker) success() {
	b.mu.Lock()
	wasOpen := b.open
	b.failures, b.open, b.probing, b.lastError = 0, false, false, ""
	b.mu.Unlock()
	if wasOpen {
		b.warn(fmt.Sprintf("remote cache %s answers again", b.target))
	}
}

// cancelled ends a probe that the caller cancelled, without a verdict.
func (b *breaker) cancelled() {
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

func (b *breaker) failure(err error) {
	b.mu.Lock()
	b.failures++
	b.lastError = err.Error()
	opened := false
	switch {
	case b.open:
		b.probing = false
		b.until = b.now().Add(b.cooldown)
	case b.failures >= b.threshold:
		b.open, b.until, opened = true, b.now().Add(b.cooldown), true
	}
	b.mu.Unlock()
	if opened {
		b.warn(fmt.Sprintf("remote cache %s failed %d times in a row (last: %v); building without it for %s", b.target, b.threshold, err, b.cooldown))
	}
}

// openError is the error of an operation the open circuit skips.
func (b *breaker) openError() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &CircuitOpenError{Target: b.target, Last: b.lastError, Until: b.until}
}

func (b *breaker) state() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open, b.lastError
}
