package jit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// RemoteTier is the shared cache tier behind the local store (the Redis
// tier of package cache/remote). Everything it returns is verified: each
// blob against its digest, each entry against its own digest and key. Its
// errors are misses to the driver: the remote tier can fail no build. An
// error that matches cache.ErrMiss is a miss; any other is a failure of
// the tier, which the build that met it reports as a warning.
type RemoteTier interface {
	// Entry returns the entry of key without its blobs.
	Entry(ctx context.Context, key cache.Key) (*cache.Entry, error)
	// Get returns the entry of key as a hit whose outputs stream from
	// the tier, verified as they are read (see cache.NewHit).
	Get(ctx context.Context, key cache.Key) (*cache.Hit, error)
	// Publish queues a write of e and data; false when it was dropped.
	Publish(e *cache.Entry, data [][]byte) bool
}

// Hit tiers of a response.
const (
	TierLocal  = "local"
	TierRemote = "remote"
)

// remoteLookup looks the key up in the remote tier: its manifest, the
// first header variant that matches here (matchVariant, as a local
// lookup), and that variant's result. The result entry must be the one
// its key names (the digest of its record), and the manifest the one of
// this key's record. A hit is stored in the local store (best effort: a
// store that cannot take it does not turn the hit into a miss) and
// returned. A manifest whose JSON does not parse is a miss and a warning
// naming the key: the remote tier is not this process's to repair.
// Without a hit, the warning also says what failed in the remote tier
// ("" when it answered: a miss, damaged data).
func (d *Driver) remoteLookup(ctx context.Context, id *identity) (*flightResult, string) {
	start := time.Now()
	rt := d.opt.Remote
	m, err := rt.Entry(ctx, cache.Key(id.key))
	if err != nil {
		return nil, remoteWarning(ctx, err)
	}
	if !slices.Equal(m.Record, id.encoded) {
		return nil, ""
	}
	man, err := manifestOf(m, func() ([]byte, error) {
		mh, err := rt.Get(ctx, m.Key)
		if err == nil && (len(mh.Entry.Outputs) != 1 || !slices.Equal(mh.Entry.Record, id.encoded)) {
			err = cache.ErrMiss // replaced by another entry since
		}
		if err != nil {
			return nil, err
		}
		return mh.Read(0)
	})
	var un *undecodableManifest
	switch {
	case errors.As(err, &un) || errors.Is(err, errManifestShape):
		return nil, fmt.Sprintf("remote cache: the manifest of key %s is damaged (%v): ignored, the build compiles", id.key, err)
	case err != nil:
		return nil, remoteWarning(ctx, err)
	}
	v, rk, _, ok := d.matchVariant(id, man.Variants)
	if !ok {
		return nil, ""
	}
	// The hit's readers outlive the flight whose context this is: the
	// build writes its outputs from them once the flight ended (each read
	// of the tier still has its own timeout).
	h, err := rt.Get(context.WithoutCancel(ctx), rk)
	if err != nil {
		return nil, remoteWarning(ctx, err)
	}
	e := h.Entry
	want, err := inventory.Encode(resultRecord(id.record, v.Headers))
	if err != nil || sha256.Sum256(e.Record) != [32]byte(rk) || !slices.Equal(e.Record, want) {
		return nil, "" // a result of another key or header set
	}
	r := &flightResult{outs: e.Outputs, stored: h, hit: true, tier: TierRemote, result: rk, remoteMS: ms(time.Since(start)), storedCompile: e.CompileTime}
	if d.opt.Verify {
		// In verify mode the hit is stored only once a fresh compile
		// agreed with it: a remote entry that fails verification never
		// reaches the local store.
		var once sync.Once
		r.storeVerified = func(ctx context.Context) { once.Do(func() { _ = d.storeRemoteHit(ctx, id, h, v) }) }
		return r, ""
	}
	if err := d.storeRemoteHit(ctx, id, h, v); err != nil {
		// The tier's bytes failed as the store read them (damaged, or
		// the tier failed): a miss, and the build compiles.
		return nil, remoteWarning(ctx, err)
	}
	return r, ""
}

// remoteWarning is what a build says of an error of the remote tier's
// lookup: nothing for a miss (cache.ErrMiss: damaged data included, which
// the tier counts) or for the build's own end, else the failure (the
// circuit open, authentication refused, the network), which the build
// went on without.
func remoteWarning(ctx context.Context, err error) string {
	if errors.Is(err, cache.ErrMiss) || ctx.Err() != nil {
		return ""
	}
	return err.Error() + " (the build went on without the remote cache)"
}

// storeRemoteHit writes a remote hit to the local store: the result,
// streamed from the hit's verifying readers into the store (which checks
// each output's size and digest again), then the manifest with the
// variant first, merged into a local one as publish does. It returns the
// error of a hit's reader (the tier's damage or failure); the store's own
// failure is not one (storing is best effort: the hit is still right).
func (d *Driver) storeRemoteHit(ctx context.Context, id *identity, h *cache.Hit, nv variant) error {
	store := d.opt.Store
	local := *h.Entry
	local.LastUsed = local.Created
	rs := make([]*readError, len(local.Outputs))
	in := make([]io.Reader, len(local.Outputs))
	for i := range rs {
		rc := h.Open(i)
		defer rc.Close()
		rs[i] = &readError{r: rc}
		in[i] = rs[i]
	}
	if err := store.Put(ctx, &local, in); err != nil {
		for _, r := range rs {
			if r.err != nil {
				return r.err
			}
		}
		return nil
	}
	_, _ = d.writeManifest(ctx, id, nv)
	return nil
}

// publishRemoteObjects is publishRemote of outputs whose bytes are objs:
// the remote tier takes them in memory, so they are read whole here.
func (d *Driver) publishRemoteObjects(ctx context.Context, id *identity, outs []cache.Output, objs []*object) {
	data := make([][]byte, len(objs))
	for i, o := range objs {
		b, err := o.bytes()
		if err != nil {
			return
		}
		data[i] = b
	}
	d.publishRemote(ctx, id, outs, data)
}

// publishRemote queues the entries a local publish just wrote (the result
// of the newest variant, then the manifest) for the remote tier. data are
// the outputs' bytes in the order of outs.
func (d *Driver) publishRemote(ctx context.Context, id *identity, outs []cache.Output, data [][]byte) {
	store := d.opt.Store
	m, err := cache.Lookup(ctx, store, cache.Key(id.key))
	if err != nil {
		return
	}
	mj, ok, err := ManifestJSON(ctx, store, m)
	if !ok || err != nil {
		return
	}
	man, err := decodeManifest(mj, sha256.Sum256(mj))
	if err != nil || len(man.Variants) == 0 {
		return
	}
	rk, err := cache.ParseKey(man.Variants[0].Result)
	if err != nil {
		return
	}
	e, err := cache.Lookup(ctx, store, rk)
	if err != nil || len(e.Outputs) != len(outs) {
		return
	}
	byDigest := map[string][]byte{}
	for i, o := range outs {
		byDigest[hex.EncodeToString(o.Digest[:])] = data[i]
	}
	ordered := make([][]byte, len(e.Outputs))
	for i, o := range e.Outputs {
		b, ok := byDigest[hex.EncodeToString(o.Digest[:])]
		if !ok {
			return
		}
		ordered[i] = b
	}
	mdata := [][]byte{mj}
	if len(m.Outputs) == 0 {
		mdata = nil // a manifest in its meta, as written before
	}
	if d.opt.Remote.Publish(e, ordered) {
		d.opt.Remote.Publish(m, mdata)
	}
}
