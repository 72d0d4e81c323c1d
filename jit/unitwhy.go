package jit

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// UnitOf returns what identifies the unit whose manifest entry is e across
// its builds (its kind, source path relative to the base directory,
// platform and runtime, from its unit record), or ok false when e is no
// unit's manifest entry.
func UnitOf(e *cache.Entry) (unit string, ok bool) {
	if e.Meta["kind"] != ManifestKind || e.Meta["unit"] == "" {
		return "", false
	}
	rec, err := inventory.Decode(e.Record)
	if err != nil {
		return "", false
	}
	t, isTuple := rec.(inventory.Tuple)
	if !isTuple || len(t) != 3 || t[0] != inventory.Value(inventory.Str(unitTag)) {
		return "", false
	}
	d, isDict := t[2].(inventory.Dict)
	if !isDict {
		return "", false
	}
	var id string
	for _, f := range []string{"kind", "source", "platform", "runtime"} {
		s, isStr := d[inventory.Str(f)].(inventory.Str)
		if !isStr {
			return "", false
		}
		id += string(s) + "\x00"
	}
	return id, true
}

// UnitManifest returns the manifest entry of the unit that e names: e
// itself when it is one, the one its meta "key" names when e is a unit's
// object entry; ok false when e is neither.
func (d *Driver) UnitManifest(ctx context.Context, e *cache.Entry) (*cache.Entry, bool, error) {
	if _, ok := UnitOf(e); ok {
		return e, true, nil
	}
	if e.Meta["kind"] != UnitKind {
		return nil, false, nil
	}
	k, err := cache.ParseKey(e.Meta["key"])
	if err != nil {
		return nil, false, fmt.Errorf("unit entry %s: meta key: %w", e.Key.String()[:12], err)
	}
	m, err := cache.Lookup(ctx, d.opt.Store, k)
	if errors.Is(err, cache.ErrMiss) {
		return nil, false, fmt.Errorf("unit entry %s: the manifest of its unit key %s is no longer in the cache", e.Key.String()[:12], k.String()[:12])
	}
	if err != nil {
		return nil, false, err
	}
	_, ok := UnitOf(m)
	return m, ok, nil
}

// WhyUnit explains the key of a unit, whose manifest entry is cur, against
// prev, the manifest entry of the same unit (UnitOf) built before it, or
// nil when there was none: the unit records' inputs that differ, then the
// headers of prev's newest header variant whose digests differ in cur's
// newest one. From the store alone.
func (d *Driver) WhyUnit(ctx context.Context, cur, prev *cache.Entry) (*Why, error) {
	w := &Why{Key: cur.Key.String(), Predecessor: api.Predecessor{Request: cur.Meta["unit"]}, Changed: []api.Change{}}
	if prev == nil {
		w.Predecessor.First = true
		return w, nil
	}
	w.Predecessor.Key = prev.Key.String()
	rec, err := inventory.Decode(cur.Record)
	if err != nil {
		return nil, fmt.Errorf("the unit record of %s: %w", cur.Key.String()[:12], err)
	}
	newest := func(e *cache.Entry) variant {
		m, err := d.storedManifest(ctx, e)
		if err != nil || len(m.Variants) == 0 {
			return variant{}
		}
		return m.Variants[0]
	}
	headers := map[string]string{}
	for _, h := range newest(cur).Headers {
		headers[h.Path] = h.Digest
	}
	var prevResult cache.Key
	if k, err := cache.ParseKey(newest(prev).Result); err == nil {
		prevResult = k
	}
	ch, note := d.changesSince(ctx, baseDir{}, rec, cur.Key, prev.Key, prevResult, headers)
	if ch != nil {
		w.Changed = ch
	}
	w.Predecessor.Note = note
	return w, nil
}
