package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"time"

	"github.com/ptojit/ptojit/cache"
)

// TierName is the cache.Hit Tier of a hit a Tiered store served from its
// remote tiers.
const TierName = "remote"

// Tiered is a store with a chain of remote tiers behind it: a cache.Core
// decorator of the local store (see Chain.Over), as a build uses it.
//
// Get reads the local store first; a miss there (damage included) is
// looked up in the tiers in order (Chain). A tier's entry is taken only
// when its key is the SHA-256 of its record, as every key of a build is
// (package jit): else it is damaged, a miss, and never reaches the local
// store, whatever a writer of the tier put there. A tier's hit is copied into
// the local store (backfill: its outputs stream from the tier's verifying
// readers into the store's Put, which checks each output's size and
// digest again, so a chunked output is never whole in memory) and served
// from there, its Tier set to TierName. The store counts it as a remote
// hit, not as a miss and a hit (cache.CountRemoteHit). A damaged or
// failing tier is a miss: Get returns the local miss, and the tier counts
// the failure; Remote returns the tiers' own errors, which a build reports
// as warnings. A store that cannot take the copy does not turn the hit
// into a miss: the tier's hit is served.
//
// In verify mode (Chain.Over's verify) nothing a tier serves is copied to
// the local store: a verifying build compiles every hit again, and a
// remote entry it contradicts must reach neither store.
//
// Put writes the local store, then, once it took the entry, publishes it
// to every tier (Chain.Publish: queued, in the background). A write that
// must not be shared goes to the local store under it (Unwrap). Entry,
// Delete and the event counters are the local store's. Signatures
// (remote_signing_key, remote_trust) are the tiers' own (Config): a tier
// signs what it writes and refuses, as a miss, an entry its trust does
// not accept. Safe for concurrent use.
type Tiered struct {
	local  cache.Core
	chain  *Chain
	verify bool
}

var (
	_ cache.Core         = (*Tiered)(nil)
	_ cache.EntryReader  = (*Tiered)(nil)
	_ cache.Deleter      = (*Tiered)(nil)
	_ cache.EventCounter = (*Tiered)(nil)
)

// Over returns local with the chain's tiers behind it; with verify, the
// tiers' hits are not copied to local (see Tiered). The Tiered is cheap:
// a daemon makes one for each build.
func (c *Chain) Over(local cache.Core, verify bool) *Tiered {
	return &Tiered{local: local, chain: c, verify: verify}
}

// Unwrap returns the local store.
func (t *Tiered) Unwrap() cache.Core { return t.local }

// Get implements cache.Core: the local store's hit, else the tiers' (see
// Tiered).
func (t *Tiered) Get(ctx context.Context, key cache.Key) (*cache.Hit, error) {
	h, err := t.local.Get(ctx, key)
	if err == nil || !errors.Is(err, cache.ErrMiss) {
		return h, err
	}
	if rh, rerr := t.fetch(ctx, key, true); rerr == nil {
		return rh, nil
	}
	return nil, err
}

// Remote looks key up in the tiers alone, for an entry whose local copy
// does not answer the caller (a build key's manifest, whose header
// variants did not match here): a hit of kind "manifest" is not copied
// to the local store (its reader merges it into the local one), any
// other is, as Get does. The caller counted the lookup's miss already
// (the store's Get that missed). A miss is an error matching
// cache.ErrMiss; any other error is a tier's failure.
func (t *Tiered) Remote(ctx context.Context, key cache.Key) (*cache.Hit, error) {
	return t.fetch(ctx, key, false)
}

// fetch returns the tiers' hit of key, copied to the local store unless
// the store is in verify mode or the hit is a manifest that Remote
// (byGet false) fetched (a manifest entry of kind "manifest", or of the
// form before, its manifest in its meta). The hit's readers outlive ctx (a build writes
// its outputs once the lookup's flight ended): each read of a tier has
// its own timeout.
func (t *Tiered) fetch(ctx context.Context, key cache.Key, byGet bool) (*cache.Hit, error) {
	h, err := t.chain.get(context.WithoutCancel(ctx), key)
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(h.Entry.Record) != key {
		return nil, &DamagedError{What: "entry " + key.String(), Reason: "its record's digest is not its key"}
	}
	h.Tier = TierName
	_, oldManifest := h.Entry.Meta["manifest"]
	if t.verify || (!byGet && (h.Entry.Meta["kind"] == "manifest" || oldManifest)) {
		_ = cache.CountRemoteHit(ctx, t.local, h.Entry, false)
		return h, nil
	}
	local, err := t.backfill(ctx, h)
	switch {
	case err != nil:
		return nil, err
	case local == nil:
		// The store did not take the copy: the tier serves it.
		w := h.Warnings
		if h, err = t.chain.get(context.WithoutCancel(ctx), key); err != nil {
			return nil, err
		}
		h.Tier, h.Warnings = TierName, append(w, h.Warnings...)
		_ = cache.CountRemoteHit(ctx, t.local, h.Entry, false)
		return h, nil
	}
	_ = cache.CountRemoteHit(ctx, t.local, local.Entry, true)
	local.Tier, local.Warnings = TierName, h.Warnings
	return local, nil
}

// backfill writes the tier's hit h to the local store, streamed from its
// verifying readers, and returns the store's hit of the copy. It returns
// the error of a hit's reader (the tier's damage or failure: a miss);
// the store's own failure is none (nil, nil: storing is best effort).
func (t *Tiered) backfill(ctx context.Context, h *cache.Hit) (*cache.Hit, error) {
	e := *h.Entry
	e.LastUsed = e.Created
	rs := make([]*readError, len(e.Outputs))
	in := make([]io.Reader, len(e.Outputs))
	for i := range rs {
		rc := h.Open(i)
		defer rc.Close()
		rs[i] = &readError{r: rc}
		in[i] = rs[i]
	}
	if err := t.local.Put(ctx, &e, in); err != nil {
		for _, r := range rs {
			if r.err != nil {
				return nil, r.err
			}
		}
		return nil, nil
	}
	local, err := t.local.Get(ctx, e.Key)
	if err != nil {
		return nil, nil // evicted at once: a store smaller than the entry
	}
	return local, nil
}

// readError is a reader that remembers its first error other than
// io.EOF.
type readError struct {
	r   io.Reader
	err error
}

func (r *readError) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// Put implements cache.Core: the local store's Put, then, when it took
// the entry, its publication to every tier. The outputs are held in
// memory for the publication (the tiers' queues hold whole outputs),
// unless every tier is read-only.
func (t *Tiered) Put(ctx context.Context, e *cache.Entry, data []io.Reader) error {
	if !t.chain.writable() {
		return t.local.Put(ctx, e, data) // nothing to hold the bytes for
	}
	bufs := make([]bytes.Buffer, len(data))
	tees := make([]io.Reader, len(data))
	for i, r := range data {
		tees[i] = io.TeeReader(r, &bufs[i])
	}
	if err := t.local.Put(ctx, e, tees); err != nil {
		return err
	}
	// The local store may not read an output whose blob it holds
	// already (cache.Core): what it left is read here, so the tiers get
	// every byte.
	for _, r := range tees {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil // stored locally; the tiers do without it
		}
	}
	p := *e
	p.Outputs = append([]cache.Output(nil), e.Outputs...)
	out := make([][]byte, len(bufs))
	for i := range bufs {
		out[i] = bufs[i].Bytes()
		if o := &p.Outputs[i]; o.Size == 0 && o.Digest == (cache.Digest{}) {
			o.Size, o.Digest = int64(len(out[i])), sha256.Sum256(out[i])
		}
	}
	if p.Created.IsZero() {
		p.Created = time.Now()
	}
	t.chain.Publish(&p, out)
	return nil
}

// Close closes the local store; the chain is its opener's to close (a
// daemon shares it between builds).
func (t *Tiered) Close() error { return t.local.Close() }

// Entry implements cache.EntryReader: the local store's (cache.Lookup).
func (t *Tiered) Entry(ctx context.Context, key cache.Key) (*cache.Entry, error) {
	return cache.Lookup(ctx, t.local, key)
}

// Delete implements cache.Deleter: the local store's.
func (t *Tiered) Delete(ctx context.Context, key cache.Key) error {
	return cache.Delete(ctx, t.local, key)
}

// Count implements cache.EventCounter: the local store's.
func (t *Tiered) Count(ctx context.Context, event, reason string) error {
	return cache.Count(ctx, t.local, event, reason)
}

// CountRemoteHit implements cache.EventCounter: the local store's.
func (t *Tiered) CountRemoteHit(ctx context.Context, e *cache.Entry, stored bool) error {
	return cache.CountRemoteHit(ctx, t.local, e, stored)
}

// ZeroCounts implements cache.EventCounter: the local store's, when it
// counts events.
func (t *Tiered) ZeroCounts(ctx context.Context) error {
	if c, ok := t.local.(cache.EventCounter); ok {
		return c.ZeroCounts(ctx)
	}
	return nil
}
