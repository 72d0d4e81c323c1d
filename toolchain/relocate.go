package toolchain

import (
	"slices"

	"github.com/ptojit/ptojit/inventory"
)

// Relocation
//
// ptojit's build key writes the paths under a base directory relative to
// it, under every policy, so that two checkouts of a project at different
// paths share keys (package jit). A build-policy record holds paths (a
// package directory, a checkout, a launcher, a compiler's programs) and
// digests over paths (a Python package's sources digest, over its
// directory and its files' records; the content fallback's digest, over
// its roots' records). RelocatedBuildDigest is a component's digest
// computed from the same record with every path rewritten, and every such
// digest computed again over the rewritten paths. The record PyPTO builds,
// which Digest covers and `ptojit toolchain --json` prints, is unchanged.

// buildRecord is a build-policy value (the record before the epoch) and,
// by their hex, the digests inside it that cover paths. Plain data, safe
// for concurrent reads.
type buildRecord struct {
	value   inventory.Value
	digests map[inventory.Str]pathDigest
}

// pathDigest computes one digest of a build record again with every path
// it covers written by r.
type pathDigest func(r *relocator) inventory.Str

// addDigest records that hex, a digest inside the record, is computed
// again by d.
func (b *buildRecord) addDigest(hex string, d pathDigest) {
	if b.digests == nil {
		b.digests = map[inventory.Str]pathDigest{}
	}
	b.digests[inventory.Str(hex)] = d
}

// relocator rewrites the paths of one record and remembers which it
// changed. Used by one goroutine.
type relocator struct {
	rel     func(inventory.Str) inventory.Str
	changed []string
}

// path is rel of p, remembered when it differs from p.
func (r *relocator) path(p inventory.Str) inventory.Str {
	q := r.rel(p)
	if q != p {
		r.changed = append(r.changed, string(q))
	}
	return q
}

// value returns v with each Str that is a digest of digests computed
// again and every other Str rewritten as a path (rel leaves a Str that is
// no path under the base as it is). Dict keys are kept.
func (r *relocator) value(v inventory.Value, digests map[inventory.Str]pathDigest) inventory.Value {
	switch x := v.(type) {
	case inventory.Str:
		if d, ok := digests[x]; ok {
			return d(r)
		}
		return r.path(x)
	case inventory.Tuple:
		out := make(inventory.Tuple, len(x))
		for i, e := range x {
			out[i] = r.value(e, digests)
		}
		return out
	case inventory.List:
		out := make(inventory.List, len(x))
		for i, e := range x {
			out[i] = r.value(e, digests)
		}
		return out
	case inventory.Dict:
		out := make(inventory.Dict, len(x))
		for k, e := range x {
			out[k] = r.value(e, digests)
		}
		return out
	}
	return v
}

// RelocatedBuildDigest returns the digest c, a build-policy identity,
// has when every path in its record is written by rel (which returns a
// path it leaves absolute unchanged), under the epoch of its inputs
// (ToolchainInputs.Epoch and EpochSet), and the paths rel changed, in
// their rewritten form, sorted and distinct: those in the record itself,
// each Python package directory and each content root. ok is false when
// c has no build-policy record (the content policy, or no identity).
func (c *ComponentIdentity) RelocatedBuildDigest(epoch string, epochSet bool, rel func(inventory.Str) inventory.Str) (sum inventory.Sum, changed []string, ok bool) {
	if c.build == nil || c.Digest.IsZero() {
		return inventory.Sum{}, nil, false
	}
	r := &relocator{rel: rel}
	v := r.value(c.build.value, c.build.digests)
	if len(r.changed) == 0 {
		return c.Digest, nil, true
	}
	rv, err := ReportedBuild(epoch, epochSet, v)
	if err != nil {
		return c.Digest, nil, true
	}
	ev := make(inventory.Dict, len(c.Evidence))
	for k, e := range c.Evidence {
		ev[k] = e
	}
	ev["reported_version"] = inventory.Str(rv)
	sum, err = ComponentDigest(c.Name, ev)
	if err != nil {
		return c.Digest, nil, true
	}
	slices.Sort(r.changed)
	return sum, slices.Compact(r.changed), true
}

// contentDigest is hex, the digest of ("content", roots), computed again
// with every path of the root records rewritten (each root's path
// remembered); hex itself when rel changes none of them.
func contentDigest(hex string, roots inventory.List) pathDigest {
	return func(r *relocator) inventory.Str {
		moved := false
		relocated := inventory.RelocateRoots(roots, func(p inventory.Str) inventory.Str {
			q := r.rel(p)
			moved = moved || q != p
			return q
		})
		if !moved {
			return inventory.Str(hex)
		}
		for _, root := range roots {
			if t, ok := root.(inventory.Tuple); ok && len(t) > 0 {
				if p, ok := t[0].(inventory.Str); ok {
					r.path(p)
				}
			}
		}
		return inventory.Str(inventory.MustDigest(inventory.T(inventory.Str("content"), relocated)).String())
	}
}

// sourcesDigest is hex, PythonSourcesDigest of the records recs found
// under dir, computed again with dir rewritten; hex itself when rel
// leaves dir as it is (recs hold paths relative to dir).
func sourcesDigest(hex, dir string, recs inventory.List) pathDigest {
	return func(r *relocator) inventory.Str {
		d := inventory.StrFromOSBytes(dir)
		q := r.path(d)
		if q == d {
			return inventory.Str(hex)
		}
		return inventory.Str(inventory.MustDigest(inventory.T(q, recs)).String())
	}
}
