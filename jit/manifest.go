package jit

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// A build key's header manifest (see the package doc, "Direct mode") is
// the one output of the key's entry: a blob the entry names by its
// digest, stored, verified, evicted and shared with a remote tier like
// any output, never inside the entry's bounded metadata. A real PTO-ISA
// kernel's manifest holds some 470 headers and 2,000 searched-and-absent
// paths, about 151 KB of JSON. Manifests written before were the entry's
// meta "manifest"; they are still read.

// MaxManifestBytes caps the JSON of one build key's manifest: a hundred
// times a real PTO-ISA kernel's. Older header variants are dropped to fit
// it; a build whose newest variant alone does not fit is not published
// (uncached, the reason naming the cap).
const MaxManifestBytes = 16 << 20

// maxManifestBytes is the cap applied: MaxManifestBytes (tests lower it).
var maxManifestBytes = MaxManifestBytes

// ManifestOutput is the name of a manifest entry's one output.
const ManifestOutput = "manifest.json"

// ManifestKind is the meta "kind" of a build key's manifest entry.
const ManifestKind = "manifest"

// IsManifestEntry reports whether e is a build key's manifest entry, of
// either form.
func IsManifestEntry(e *cache.Entry) bool {
	_, inMeta := e.Meta["manifest"]
	return inMeta || e.Meta["kind"] == ManifestKind
}

// ManifestJSON returns the JSON of the manifest of the build key entry e
// that s holds: its output's bytes, verified by the store, or its meta
// (the form written before). ok is false when e is no manifest entry. A
// damaged blob is an error matching cache.ErrDamaged (the store removed
// the entry and counted it).
func ManifestJSON(ctx context.Context, s cache.Core, e *cache.Entry) (b []byte, ok bool, err error) {
	if !IsManifestEntry(e) {
		return nil, false, nil
	}
	if m, inMeta := e.Meta["manifest"]; inMeta {
		return []byte(m), true, nil
	}
	b, err = readManifestBlob(ctx, s, e)
	return b, true, err
}

// errManifestShape is the error of a manifest entry that has neither a
// manifest meta nor exactly one output named ManifestOutput.
var errManifestShape = errors.New("manifest entry has neither a manifest meta nor one " + ManifestOutput + " output")

// readManifestBlob reads the manifest blob of the manifest entry e from
// s: its Get (which counts no hit for a manifest) and the verified read
// of its one output. An entry replaced since e was read is a miss.
func readManifestBlob(ctx context.Context, s cache.Core, e *cache.Entry) ([]byte, error) {
	if len(e.Outputs) != 1 || e.Outputs[0].Name != ManifestOutput {
		return nil, errManifestShape
	}
	h, err := s.Get(ctx, e.Key)
	if err != nil {
		return nil, err
	}
	if len(h.Entry.Outputs) != 1 || h.Entry.Outputs[0].Digest != e.Outputs[0].Digest {
		return nil, &cache.MissError{Reason: "replaced while it was read"}
	}
	return h.Read(0)
}

// undecodableManifest is the error of a manifest whose JSON does not
// decode.
type undecodableManifest struct{ err error }

func (u *undecodableManifest) Error() string { return "unreadable: " + u.err.Error() }

// manifestOf returns the decoded manifest of the manifest entry e: from
// its meta (the form written before), or from the memo of decoded
// manifests by its output's digest, else read with read, which returns
// the output's bytes (verified against that digest by the store they
// come from). JSON that does not decode is an *undecodableManifest; the
// errors of read are returned as they are.
func manifestOf(e *cache.Entry, read func() ([]byte, error)) (*manifest, error) {
	if s, inMeta := e.Meta["manifest"]; inMeta {
		return decodeManifest([]byte(s), sha256.Sum256([]byte(s)))
	}
	if len(e.Outputs) != 1 || e.Outputs[0].Name != ManifestOutput {
		return nil, errManifestShape
	}
	sum := e.Outputs[0].Digest
	if m := decodedManifests.get(sum); m != nil {
		return m, nil
	}
	b, err := read()
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(b) != sum {
		return nil, &cache.MissError{Reason: "replaced while it was read"}
	}
	return decodeManifest(b, sum)
}

// storedManifest returns the manifest of the key's entry e in the local
// store (manifestOf).
func (d *Driver) storedManifest(ctx context.Context, e *cache.Entry) (*manifest, error) {
	return manifestOf(e, func() ([]byte, error) { return readManifestBlob(ctx, d.opt.Store, e) })
}

// decodeManifest decodes manifest JSON b whose SHA-256 is sum, from the
// memo of decoded manifests when it holds it.
func decodeManifest(b []byte, sum [32]byte) (*manifest, error) {
	if m := decodedManifests.get(sum); m != nil {
		return m, nil
	}
	m := new(manifest)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, &undecodableManifest{err}
	}
	for i := range m.Variants {
		m.Variants[i].plans = new(sync.Map)
	}
	decodedManifests.put(sum, m, int64(len(b)))
	return m, nil
}

// writeManifest puts nv first in the manifest of the key of id
// (mergeManifest) and stores it in store (the Driver's, or the local one
// under its remote tiers) as the one output of the key's entry, which
// must be written after the result entry nv names. It returns why
// nothing was stored (the manifest over the cap), or the store's error.
func (d *Driver) writeManifest(ctx context.Context, store cache.Core, id *identity, nv variant) (string, error) {
	var old []variant
	if e, err := cache.Lookup(ctx, store, cache.Key(id.key)); err == nil {
		if m, err := d.storedManifest(ctx, e); err == nil {
			old = m.Variants
		}
	}
	m, mj := mergeManifest(old, nv)
	if m == nil {
		return fmt.Sprintf("not published: the header manifest (%d headers, %d searched-and-absent paths) is %s, over the cap of %s (MaxManifestBytes)",
			len(nv.Headers), len(nv.Absent), cache.FormatSize(int64(len(mj))), cache.FormatSize(int64(maxManifestBytes))), nil
	}
	meta := map[string]string{"kind": ManifestKind, "platform": id.platform, "runtime": id.runtime}
	if id.unit != "" {
		meta["unit"] = id.unit // a unit's manifest says which unit (cache ls)
	}
	err := store.Put(ctx, &cache.Entry{
		Key:     cache.Key(id.key),
		Record:  id.encoded,
		Outputs: []cache.Output{{Name: ManifestOutput, Mode: 0o644}},
		Meta:    meta,
	}, cache.Readers(mj))
	if err != nil {
		return putFailure(err)
	}
	// The first hit finds the absent paths of the new variant grouped
	// for this base directory (about 2 µs a path, 0.1 s for 50,000).
	m.Variants[0].absentPlan(id.base)
	decodedManifests.put(sha256.Sum256(mj), m, int64(len(mj)))
	return "", nil
}

// mergeManifest returns the manifest that puts nv first before the
// variants old (those of the key's manifest, if any), dropping old's
// variant of the same result and the oldest ones past
// maxManifestVariants or maxManifestBytes, and its JSON. When even nv
// alone is over the cap, m is nil and mj is nv's JSON.
func mergeManifest(old []variant, nv variant) (m *manifest, mj []byte) {
	if nv.plans == nil {
		nv.plans = new(sync.Map)
	}
	vs := []variant{nv}
	for _, v := range old {
		if v.Result != nv.Result && len(vs) < maxManifestVariants {
			vs = append(vs, v)
		}
	}
	mj, _ = json.Marshal(manifest{Variants: vs})
	for len(mj) > maxManifestBytes && len(vs) > 1 {
		vs = vs[:len(vs)-1]
		mj, _ = json.Marshal(manifest{Variants: vs})
	}
	if len(mj) > maxManifestBytes {
		return nil, mj
	}
	return &manifest{Variants: vs}, mj
}

// maxDecodedBytes bounds the manifests decodedManifests holds, by the
// size of their JSON (a decoded manifest takes about as much again): a
// hundred real PTO-ISA kernels' manifests, or four at the cap.
const maxDecodedBytes = 64 << 20

// decodedManifests remembers decoded manifests by the digest of their
// JSON: the real example's, with its searched-and-absent paths, takes
// longer to decode than the rest of a hit's lookup, and a daemon's hit of
// a manifest it remembers reads no blob at all. A remembered manifest is
// shared and never modified.
var decodedManifests = manifestMemo{max: maxDecodedBytes}

// manifestMemo is a memo of decoded manifests bounded in the bytes of
// their JSON, least recently used dropped first. It is safe for
// concurrent use.
type manifestMemo struct {
	max int64

	mu    sync.Mutex // guards the fields below
	m     map[[32]byte]*list.Element
	lru   list.List // of *memoManifest, most recently used first
	bytes int64
}

type memoManifest struct {
	sum  [32]byte
	m    *manifest
	size int64
}

// get returns the manifest remembered for sum, or nil.
func (c *manifestMemo) get(sum [32]byte) *manifest {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.m[sum]
	if el == nil {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*memoManifest).m
}

// put remembers m, whose JSON of size bytes has the digest sum, dropping
// the least recently used manifests past the bound; a manifest larger
// than the bound is not remembered.
func (c *manifestMemo) put(sum [32]byte, m *manifest, size int64) {
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]*list.Element{}
	}
	if el := c.m[sum]; el != nil {
		c.lru.MoveToFront(el)
		return
	}
	c.m[sum] = c.lru.PushFront(&memoManifest{sum: sum, m: m, size: size})
	c.bytes += size
	for c.bytes > c.max {
		old := c.lru.Remove(c.lru.Back()).(*memoManifest)
		delete(c.m, old.sum)
		c.bytes -= old.size
	}
}

// Hit tiers of a response.
const (
	TierLocal  = "local"
	TierRemote = "remote"
)

// remoteStore is a store with remote tiers behind it (package
// cache/remote's Tiered): Remote looks a key up in the tiers alone (a
// manifest it returns is not copied to the local store; a result is, as
// the store's Get copies a tier's hit, except in verify mode), and
// Unwrap is the local store under them. Everything the tiers serve is
// verified; their errors are misses to a build: one that matches
// cache.ErrMiss is a miss, any other a failure of a tier, which the
// build reports as a warning.
type remoteStore interface {
	Remote(ctx context.Context, key cache.Key) (*cache.Hit, error)
	Unwrap() cache.Core
}

// localStore returns the store a build writes what it does not share
// (and which names its flights): the local store under the remote tiers,
// or the Driver's store.
func (d *Driver) localStore() cache.Core {
	if rs, ok := d.opt.Store.(remoteStore); ok {
		return rs.Unwrap()
	}
	return d.opt.Store
}

// remoteLookup looks id up in the store's remote tiers after a local
// miss (remoteResult) and returns the flight result of a hit, and the
// warnings of the lookup either way.
func (d *Driver) remoteLookup(ctx context.Context, id *identity) (*flightResult, []string) {
	start := time.Now()
	_, h, served, failed := d.remoteResult(ctx, id)
	warnings := append(served, failed...)
	if h == nil {
		return nil, warnings
	}
	e := h.Entry
	return &flightResult{outs: e.Outputs, stored: h, hit: true, tier: TierRemote, result: e.Key, remoteMS: ms(time.Since(start)), storedCompile: e.CompileTime, warnings: warnings}, nil
}

// remoteResult looks the key of id up in the remote tiers: its manifest
// there (whose header variants may differ from the local one's), the
// first variant that matches here (matchVariant, as a local lookup) and
// that variant's result, which must be the entry of the record the
// variant gives (the tiers accept only entries whose key is their
// record's digest). The result comes from the store (copied to the local
// one, except in verify mode); the variant is then merged into the local
// manifest, which is not published back. served are the warnings of the
// entries the tiers served (cache.Hit.Warnings); failed, without a hit,
// says what failed in a tier (nothing when they answered), or that the
// manifest's JSON does not parse (a miss, naming the key).
func (d *Driver) remoteResult(ctx context.Context, id *identity) (v variant, h *cache.Hit, served, failed []string) {
	rs, ok := d.opt.Store.(remoteStore)
	if !ok {
		return variant{}, nil, nil, nil
	}
	mh, err := rs.Remote(ctx, cache.Key(id.key))
	if err != nil {
		return variant{}, nil, nil, remoteWarning(ctx, err)
	}
	served = mh.Warnings
	if !slices.Equal(mh.Entry.Record, id.encoded) {
		return variant{}, nil, served, nil
	}
	man, err := manifestOf(mh.Entry, func() ([]byte, error) {
		if len(mh.Entry.Outputs) != 1 {
			return nil, errManifestShape
		}
		return mh.Read(0)
	})
	var un *undecodableManifest
	switch {
	case errors.As(err, &un) || errors.Is(err, errManifestShape):
		return variant{}, nil, served, []string{fmt.Sprintf("remote cache: the manifest of key %s is damaged (%v): ignored, the build compiles", id.key, err)}
	case err != nil:
		return variant{}, nil, served, remoteWarning(ctx, err)
	}
	v, rk, _, ok := d.matchVariant(id, man.Variants)
	if !ok {
		return variant{}, nil, served, nil
	}
	if h, err = rs.Remote(ctx, rk); err != nil {
		return variant{}, nil, served, remoteWarning(ctx, err)
	}
	served = append(served, h.Warnings...)
	want, err := inventory.Encode(resultRecord(id.record, v.Headers))
	if err != nil || !slices.Equal(h.Entry.Record, want) {
		return variant{}, nil, served, nil // a result of another key or header set
	}
	if !d.opt.Verify {
		_, _ = d.writeManifest(ctx, rs.Unwrap(), id, v)
	}
	return v, h, served, nil
}

// remoteWarning is what a build says of an error of the remote tiers'
// lookup: nothing for a miss (cache.ErrMiss: damaged data included, which
// the tier counts) or for the build's own end, else the failure (the
// circuit open, authentication refused, the network), which the build
// went on without.
func remoteWarning(ctx context.Context, err error) []string {
	if errors.Is(err, cache.ErrMiss) || ctx.Err() != nil {
		return nil
	}
	return []string{err.Error() + " (the build went on without the remote cache)"}
}
