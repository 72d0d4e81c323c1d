package cache

import (
	"bytes"
	"fmt"
	"slices"
)

// verifyScan is what one Verify of a store found: the report it fills, the
// damaged blobs with their reasons, the size of every blob (-1:
// unreadable), the outputs of the decodable entries, and (Badger's) where
// to report the blobs done out of the index's total. Each store fills it
// as it reads its blobs and entries; damaged judges it, for every store.
// Used by one goroutine.
type verifyScan struct {
	r        *VerifyReport
	bad      map[Digest]string
	sizes    map[Digest]int64
	entries  map[Key][]Output
	pg       *pager
	progress ProgressFunc
	total    int
}

// damaged fills the report's Corrupt list and returns the entries to
// remove, in key order: the bad entries and those that name a damaged,
// missing or wrongly sized blob.
func (sc *verifyScan) damaged() []Key {
	byDigest := make(map[Digest]*CorruptBlob)
	var removed []Key
	for k := range sc.r.BadEntries {
		removed = append(removed, k)
	}
	for k, outs := range sc.entries {
		for _, o := range outs {
			reason, isBad := sc.bad[o.Digest]
			if size, ok := sc.sizes[o.Digest]; !ok {
				reason, isBad = missingReason(o.Digest), true
			} else if !isBad && size != o.Size {
				reason, isBad = fmt.Sprintf("blob %s corrupt: size %d, want %d", shortHex(o.Digest[:]), size, o.Size), true
			}
			if !isBad {
				continue
			}
			cb := byDigest[o.Digest]
			if cb == nil {
				cb = &CorruptBlob{Digest: o.Digest, Reason: reason}
				byDigest[o.Digest] = cb
			}
			if !slices.Contains(cb.Entries, k) {
				cb.Entries = append(cb.Entries, k)
			}
			if !slices.Contains(removed, k) {
				removed = append(removed, k)
			}
		}
	}
	for d, reason := range sc.bad {
		if byDigest[d] == nil {
			byDigest[d] = &CorruptBlob{Digest: d, Reason: reason}
		}
	}
	for _, cb := range byDigest {
		slices.SortFunc(cb.Entries, func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	}
	sc.r.Corrupt = sortCorrupt(byDigest)
	slices.SortFunc(removed, func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	return removed
}

// sortCorrupt returns the damaged blobs of m in digest order.
func sortCorrupt(m map[Digest]*CorruptBlob) []CorruptBlob {
	out := make([]CorruptBlob, 0, len(m))
	for _, cb := range m {
		out = append(out, *cb)
	}
	slices.SortFunc(out, func(a, b CorruptBlob) int { return bytes.Compare(a.Digest[:], b.Digest[:]) })
	return out
}
