package jit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// LatestKind is the meta "kind" of a latest-build record (see the package
// doc, "Latest builds").
const LatestKind = "latest"

// latestTag tags the record whose digest keys a latest-build record.
const latestTag = "ptojit.latest"

// RequestIdentity names a request across its builds: its name field when
// it has one, else the path of its file. It is a value, safe to copy.
type RequestIdentity struct {
	// Name is the request's name (api.Request.Name).
	Name string
	// File, for a request without a name, is its file's path relative to
	// the base directory (slash-separated), or absolute when the file
	// lies outside it.
	File string
}

// IsZero reports whether the identity names nothing: a request read from
// standard input without a name.
func (r RequestIdentity) IsZero() bool { return r.Name == "" && r.File == "" }

// String is the identity for people: the file's path, or `name "NAME"`.
func (r RequestIdentity) String() string {
	if r.Name != "" {
		return "name " + strconv.Quote(r.Name)
	}
	return r.File
}

// record is the record whose digest is the key of the identity's
// latest-build record: ("ptojit.latest", 1, "name"|"file", str).
func (r RequestIdentity) record() inventory.Value {
	if r.Name != "" {
		return inventory.T(inventory.Str(latestTag), inventory.IntOf(keySchema), inventory.Str("name"), inventory.Str(r.Name))
	}
	return inventory.T(inventory.Str(latestTag), inventory.IntOf(keySchema), inventory.Str("file"), inventory.StrFromOSBytes(r.File))
}

// requestIdentity returns the identity of req, whose base directory is
// base; the zero identity when req has neither name nor file.
func requestIdentity(req *api.Request, base baseDir) RequestIdentity {
	switch {
	case req.Name != "":
		return RequestIdentity{Name: req.Name}
	case req.File != "":
		return RequestIdentity{File: filepath.ToSlash(base.rel(filepath.Clean(req.File)))}
	}
	return RequestIdentity{}
}

// RequestIdentity returns the identity of req (whose paths must be
// absolute) under which its latest build is recorded; the zero identity
// when req has no name and was read from standard input.
func (d *Driver) RequestIdentity(req *api.Request) RequestIdentity {
	return requestIdentity(req, baseOf(req, d.opt.Getenv))
}

// LatestBuild is what ptojit remembers of the latest build (hit or miss)
// of a request identity: its key and the header variant it used. It is a
// value, safe to copy.
type LatestBuild struct {
	Request RequestIdentity
	// Key is the build key.
	Key cache.Key
	// Result is the key of the result entry of the header variant the
	// build used (the variant's "result" in the key's manifest).
	Result cache.Key
	// Since is when the record was written: the first of the builds in a
	// row that used this key and variant.
	Since time.Time
	// Previous and PreviousResult are the key and result entry of the
	// build before Since (another key, or the same key with another header
	// variant); both zero when no earlier build is recorded.
	Previous, PreviousResult cache.Key
}

// HasPrevious reports whether an earlier build than the latest is
// recorded.
func (lb LatestBuild) HasPrevious() bool { return lb.PreviousResult != (cache.Key{}) }

// LatestBuild returns the latest build recorded for r in the store. ok is
// false when there is none (or no store); a record that is damaged is
// removed and counted as damaged, like a damaged entry, and is none.
func (d *Driver) LatestBuild(ctx context.Context, r RequestIdentity) (lb LatestBuild, ok bool, err error) {
	if d.opt.Store == nil || r.IsZero() {
		return LatestBuild{}, false, nil
	}
	enc, err := inventory.Encode(r.record())
	if err != nil {
		return LatestBuild{}, false, err
	}
	return d.latestBuild(ctx, r, enc)
}

// latestBuild is LatestBuild of r, whose identity record encodes as enc.
func (d *Driver) latestBuild(ctx context.Context, r RequestIdentity, enc []byte) (LatestBuild, bool, error) {
	e, err := cache.Lookup(ctx, d.opt.Store, cache.Key(sha256.Sum256(enc)))
	switch {
	case errors.Is(err, cache.ErrMiss):
		// Also a damaged entry, which the store removed and counted.
		return LatestBuild{}, false, nil
	case err != nil:
		return LatestBuild{}, false, fmt.Errorf("latest build of %s: %w", r, err)
	}
	lb, why := parseLatest(e, enc)
	if why != "" {
		d.damagedLatest(ctx, e.Key)
		return LatestBuild{}, false, nil
	}
	lb.Request = r
	return lb, true, nil
}

// parseLatest reads a latest-build record whose identity record encodes
// as enc; it says why when the record is damaged.
func parseLatest(e *cache.Entry, enc []byte) (LatestBuild, string) {
	if e.Meta["kind"] != LatestKind || string(e.Record) != string(enc) || len(e.Outputs) != 0 {
		return LatestBuild{}, "not a latest-build record of this request"
	}
	k, err := cache.ParseKey(e.Meta["key"])
	if err != nil {
		return LatestBuild{}, err.Error()
	}
	rk, err := cache.ParseKey(e.Meta["result"])
	if err != nil {
		return LatestBuild{}, err.Error()
	}
	lb := LatestBuild{Key: k, Result: rk, Since: e.Created}
	// Records written before the previous build was kept have neither.
	if p, err := cache.ParseKey(e.Meta["previous_key"]); err == nil {
		if pr, err := cache.ParseKey(e.Meta["previous_result"]); err == nil {
			lb.Previous, lb.PreviousResult = p, pr
		}
	}
	return lb, ""
}

// damagedLatest removes a damaged latest-build record and counts it, as
// damagedManifest does with a manifest.
func (d *Driver) damagedLatest(ctx context.Context, k cache.Key) {
	_ = cache.Delete(ctx, d.opt.Store, k)
	_ = cache.Count(ctx, d.opt.Store, cache.EventDamaged, "latest-build record")
}

// recordLatest records that the latest build of req used the key of id
// and the result entry result. It writes only when the record changes,
// and reads it at most once per latestRecheck while it does not: a hit of
// the key and variant already recorded costs a lookup in latestSeen and
// neither reads nor writes the store. The record helps explain builds;
// failing to keep it fails nothing.
func (d *Driver) recordLatest(ctx context.Context, req *api.Request, id *identity, result cache.Key) {
	r := requestIdentity(req, id.base)
	if r.IsZero() {
		return
	}
	key := cache.Key(id.key)
	mk := latestSeenKey{store: fmt.Sprintf("%p", d.opt.Store), request: r}
	now := time.Now()
	if v, ok := latestSeen.get(mk); ok && v.key == key && v.result == result && now.Sub(v.at) < latestRecheck {
		return
	}
	enc, err := inventory.Encode(r.record())
	if err != nil {
		return
	}
	lb, ok, err := d.latestBuild(ctx, r, enc)
	if err != nil {
		return
	}
	if !ok || lb.Key != key || lb.Result != result {
		meta := map[string]string{"kind": LatestKind, "request": r.String(), "key": key.String(), "result": result.String()}
		if ok {
			meta["previous_key"], meta["previous_result"] = lb.Key.String(), lb.Result.String()
		}
		err = d.localStore().Put(ctx, &cache.Entry{ // this checkout's, not shared
			Key:    cache.Key(sha256.Sum256(enc)),
			Record: enc,
			Meta:   meta,
		}, nil)
		if err != nil {
			return
		}
	}
	latestSeen.put(mk, latestSeenValue{key: key, result: result, at: now})
}

// latestSeen remembers, per store (by address, as compileFlight does) and
// request identity, the latest build this process found recorded or
// recorded itself, and when. A record removed behind it (cache clear,
// eviction, a damaged record removed) is written again by the first build
// after latestRecheck.
var latestSeen memo[latestSeenKey, latestSeenValue]

type latestSeenKey struct {
	store   string
	request RequestIdentity
}

type latestSeenValue struct {
	key, result cache.Key
	at          time.Time
}

// latestRecheck is how long latestSeen is trusted without reading the
// record again (tests lower it).
var latestRecheck = time.Minute
