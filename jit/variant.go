package jit

import (
	"path/filepath"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// noVariantMatches is the miss reason when no variant matches and the
// newest one names no changed or appeared header.
const noVariantMatches = "no header variant matches"

// matchVariant returns the first of a manifest's variants (newest first)
// whose headers all still have their digests and whose searched-and-absent
// paths are all still absent, and the key of its result; a variant whose
// result is not a key is passed over. When none matches, ok is false and
// why says what the variant nearest to the files now found (nearestWhy).
// The local lookup and the remote tier's both match with it.
func (d *Driver) matchVariant(id *identity, vs []variant) (v variant, rk cache.Key, why string, ok bool) {
	base := id.base
	for _, v := range vs {
		if d.changedHeader(id, v.Headers) != "" {
			continue
		}
		if l := d.opt.Listings; l != nil && v.plans != nil && l.allAbsent(v.absentPlan(base)) {
			// every path absent, from the listings alone
		} else if appearedHeader(base, v.Absent, l) != "" {
			continue
		}
		if s, err := inventory.ParseSum(v.Result); err == nil {
			return v, cache.Key(s), "", true
		}
	}
	return variant{}, cache.Key{}, d.nearestWhy(id, vs), false
}

// nearestWhy says what differs from the variant nearest to the files now,
// the one with the fewest changed headers and appeared paths (the newest
// of equals): its first changed header, else its first appeared path.
func (d *Driver) nearestWhy(id *identity, vs []variant) string {
	why, fewest := noVariantMatches, -1
	for _, v := range vs {
		var first string
		n := 0
		for _, h := range v.Headers {
			if c := d.changedHeader(id, []headerDigest{h}); c != "" {
				if n++; first == "" {
					first = "header changed since the last build: " + c
				}
			}
		}
		for _, a := range v.Absent {
			if c := appearedHeader(id.base, []string{a}, d.opt.Listings); c != "" {
				if n++; first == "" {
					first = "header appeared on the include path since the last build: " + c
				}
			}
		}
		if first != "" && (fewest < 0 || n < fewest) {
			why, fewest = first, n
		}
	}
	return why
}

// absentPlan is a variant's Absent paths made absolute against one base
// directory and grouped by directory, for DirListings.allAbsent; ok is
// false when some path is not absolute and clean once made absolute (the
// listings cannot answer it).
type absentPlan struct {
	dirs  []string
	names [][]string
	ok    bool
}

// absentPlan returns the plan of v's Absent paths under base, built once
// per base directory of a decoded manifest.
func (v variant) absentPlan(base baseDir) *absentPlan {
	if p, ok := v.plans.Load(base.dir); ok {
		return p.(*absentPlan)
	}
	p := &absentPlan{ok: true}
	at := map[string]int{}
	for _, a := range v.Absent {
		a = base.abs(a)
		if !filepath.IsAbs(a) || filepath.Clean(a) != a || filepath.Dir(a) == a {
			p.ok = false
			break
		}
		dir := filepath.Dir(a)
		i, seen := at[dir]
		if !seen {
			i = len(p.dirs)
			at[dir] = i
			p.dirs = append(p.dirs, dir)
			p.names = append(p.names, nil)
		}
		p.names[i] = append(p.names[i], filepath.Base(a))
	}
	v.plans.Store(base.dir, p)
	return p
}
