package jit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// explainMiss fills resp.Changed and resp.ChangedSince of a miss of req
// (identity id): what differs from the latest build of the same request
// recorded before this one, or that there is none. It runs before the
// build's own latest-build record is written; failing to explain fails
// nothing.
func (d *Driver) explainMiss(ctx context.Context, req *api.Request, id *identity, resp *api.Response) {
	r := requestIdentity(req, id.base)
	if r.IsZero() || d.opt.Store == nil {
		return
	}
	lb, ok, err := d.LatestBuild(ctx, r)
	if err != nil {
		return
	}
	p := &api.Predecessor{Request: r.String()}
	resp.ChangedSince = p
	if !ok {
		p.First = true
		return
	}
	p.Key = lb.Key.String()
	resp.Changed, p.Note = d.changesSince(ctx, id.base, id.record, cache.Key(id.key), lb.Key, lb.Result, nil)
}

// Why is what changed between the build a request's key names now and
// the build before it: the latest recorded build of the request when its
// key differs from the request's key now, else the build recorded before
// that one. It is plain data, safe for concurrent reads.
type Why struct {
	// Key is the request's key now.
	Key         string          `json:"key"`
	Predecessor api.Predecessor `json:"predecessor"`
	Changed     []api.Change    `json:"changed"`
}

// ErrNoRequestIdentity is the error of Why for a request read from
// standard input without a name: no build of it is recorded.
var ErrNoRequestIdentity = errors.New("the request has no name and no file (standard input), so no build of it is recorded")

// Why computes req's key and explains it against its predecessor (see
// Why). req's paths must be absolute.
func (d *Driver) Why(ctx context.Context, req *api.Request) (*Why, error) {
	id, err := d.identify(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	if !id.usable {
		return nil, &UnavailableError{Reasons: reasonTexts(id.unavailable)}
	}
	r := requestIdentity(req, id.base)
	if r.IsZero() {
		return nil, ErrNoRequestIdentity
	}
	w := &Why{Key: id.key.String(), Predecessor: api.Predecessor{Request: r.String()}, Changed: []api.Change{}}
	lb, ok, err := d.LatestBuild(ctx, r)
	if err != nil {
		return nil, err
	}
	prev, prevResult := lb.Key, lb.Result
	if ok && lb.Key == cache.Key(id.key) {
		prev, prevResult, ok = lb.Previous, lb.PreviousResult, lb.HasPrevious()
	}
	if !ok {
		w.Predecessor.First = true
		return w, nil
	}
	w.Predecessor.Key = prev.String()
	ch, note := d.changesSince(ctx, id.base, id.record, cache.Key(id.key), prev, prevResult, nil)
	if ch != nil {
		w.Changed = ch
	}
	w.Predecessor.Note = note
	return w, nil
}

// UnavailableError is the error of Why for a request whose identity is
// unavailable: it has no key to explain.
type UnavailableError struct{ Reasons []string }

func (e *UnavailableError) Error() string {
	return "the identity is unavailable (no key): " + strings.Join(e.Reasons, "; ")
}

// changesSince lists the inputs of the key record rec (key key, base
// directory base) that differ from those of the earlier build prevKey,
// then the headers of that build's header variant (its result entry
// prevResult) whose files differ now (or, when headers is not nil, whose
// digests differ from those it maps their paths to). The note says why
// nothing is known, when the earlier key's record is gone or unreadable.
func (d *Driver) changesSince(ctx context.Context, base baseDir, rec inventory.Value, key, prevKey, prevResult cache.Key, headers map[string]string) ([]api.Change, string) {
	e, err := cache.Lookup(ctx, d.opt.Store, prevKey)
	if err != nil {
		return nil, "the key record of the earlier build (" + prevKey.String()[:12] + ") is no longer in the cache"
	}
	var out []api.Change
	if prevKey != key {
		prev, err := inventory.Decode(e.Record)
		if err != nil {
			return nil, "the key record of the earlier build (" + prevKey.String()[:12] + ") does not decode: " + err.Error()
		}
		diffs, err := DiffRecords(prev, rec)
		if err != nil {
			return nil, "the key record of the earlier build (" + prevKey.String()[:12] + "): " + err.Error()
		}
		labels := sourceNames(rec, prev)
		for _, df := range diffs {
			out = append(out, api.Change{Name: df.Name, Input: inputLabel(df.Name, labels), Was: df.A, Now: df.B})
		}
	}
	v := d.storedVariant(ctx, e, prevResult)
	for _, h := range v.Headers {
		now, ok := headers[h.Path]
		if headers == nil {
			d, err := headerDigestOf(base.abs(h.Path))
			now, ok = d, err == nil
		}
		if ok && now == h.Digest {
			continue
		}
		c := api.Change{Name: "header " + h.Path, Input: "header " + h.Path, Was: strconv.Quote(h.Digest)}
		if ok {
			c.Now = strconv.Quote(now)
		}
		out = append(out, c)
	}
	if headers == nil {
		for _, a := range v.Absent {
			if appearedHeader(base, []string{a}, nil) != "" {
				// Absent before: no value on that side.
				c := api.Change{Name: "header " + a, Input: "header " + a, Now: strconv.Quote("present")}
				if now, err := headerDigestOf(base.abs(a)); err == nil {
					c.Now = strconv.Quote(now)
				}
				out = append(out, c)
			}
		}
	}
	return out, ""
}

// variantHeaders returns the headers of the header variant of the manifest
// entry e whose result entry is result; nil when there is none.
func (d *Driver) variantHeaders(ctx context.Context, e *cache.Entry, result cache.Key) []headerDigest {
	return d.storedVariant(ctx, e, result).Headers
}

// storedVariant returns the header variant of the manifest entry e whose
// result entry is result; the zero variant when there is none.
func (d *Driver) storedVariant(ctx context.Context, e *cache.Entry, result cache.Key) variant {
	m, err := d.storedManifest(ctx, e)
	if err != nil {
		return variant{}
	}
	want := hex.EncodeToString(result[:])
	for _, v := range m.Variants {
		if v.Result == want {
			return v
		}
	}
	return variant{}
}

// WhyLatest explains the build that the latest-build record e names
// against the build recorded before it, from the store alone: the key
// records' inputs, then the headers of the earlier variant whose digests
// differ in the later one.
func (d *Driver) WhyLatest(ctx context.Context, e *cache.Entry) (*Why, error) {
	lb, why := parseLatest(e, e.Record)
	if why != "" {
		return nil, fmt.Errorf("latest-build record %s: %s", e.Key.String()[:12], why)
	}
	w := &Why{Key: lb.Key.String(), Predecessor: api.Predecessor{Request: e.Meta["request"]}, Changed: []api.Change{}}
	if !lb.HasPrevious() {
		w.Predecessor.First = true
		return w, nil
	}
	w.Predecessor.Key = lb.Previous.String()
	cur, err := cache.Lookup(ctx, d.opt.Store, lb.Key)
	if err != nil {
		return nil, fmt.Errorf("the key record of %s: %w", lb.Key.String()[:12], err)
	}
	rec, err := inventory.Decode(cur.Record)
	if err != nil {
		return nil, fmt.Errorf("the key record of %s: %w", lb.Key.String()[:12], err)
	}
	headers := map[string]string{}
	for _, h := range d.variantHeaders(ctx, cur, lb.Result) {
		headers[h.Path] = h.Digest
	}
	ch, note := d.changesSince(ctx, baseDir{}, rec, lb.Key, lb.Previous, lb.PreviousResult, headers)
	if ch != nil {
		w.Changed = ch
	}
	w.Predecessor.Note = note
	return w, nil
}

// sourceNames maps the source leaves of key records ("sources.kernel.1",
// "sources.orchestration") to the base names of their files, read from the
// records' build sections (the first record that names one wins).
func sourceNames(recs ...inventory.Value) map[string]string {
	out := map[string]string{}
	for _, rec := range recs {
		ins, err := FlattenRecord(rec)
		if err != nil {
			continue
		}
		for _, in := range ins {
			var leafName string
			if rest, ok := strings.CutPrefix(in.Name, "build.kernels["); ok {
				n, field, _ := strings.Cut(rest, "].")
				if field != "source" {
					continue
				}
				leafName = "sources.kernel." + n
			} else if in.Name == "build.orchestration" {
				leafName = "sources.orchestration"
			} else {
				continue
			}
			if s, err := strconv.Unquote(in.Value); err == nil && out[leafName] == "" {
				out[leafName] = path.Base(s)
			}
		}
	}
	return out
}

// inputLabel is the short form of the input name (a leaf of a key record,
// or "header PATH") for a one-line summary: a source by its file's base
// name ("sources[kernel_scale.c]", from sources), a variable as
// "env NAME", a component as "toolchain NAME", an option as
// "option NAME"; any other name as it is.
func inputLabel(name string, sources map[string]string) string {
	if f := sources[name]; f != "" {
		return "sources[" + f + "]"
	}
	for _, p := range [...]struct{ prefix, label string }{
		{"environment.", "env "}, {"toolchain.", "toolchain "}, {"options.", "option "}, {"sources.", "sources "},
	} {
		if rest, ok := strings.CutPrefix(name, p.prefix); ok {
			return p.label + rest
		}
	}
	return name
}
