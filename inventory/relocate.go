package inventory

// RelocateRoots returns the root records of a content fingerprint
// (Content.Roots) with every path written by rel: each root's path and
// each entry's resolved path. A build key that writes paths under a base
// directory relative to it digests ("content", RelocateRoots(roots, rel))
// instead of the fingerprint's own digest. Records of any other shape are
// kept as they are; roots itself is not modified.
func RelocateRoots(roots List, rel func(Str) Str) List {
	out := make(List, len(roots))
	for i, r := range roots {
		t, ok := r.(Tuple)
		if !ok || len(t) != 3 {
			out[i] = r
			continue
		}
		path, ok1 := t[0].(Str)
		entries, ok2 := t[2].(List)
		if !ok1 || !ok2 {
			out[i] = r
			continue
		}
		es := make(List, len(entries))
		for j, e := range entries {
			et, ok := e.(Tuple)
			if !ok || len(et) < 3 {
				es[j] = e
				continue
			}
			resolved, ok := et[2].(Str)
			if !ok {
				es[j] = e
				continue
			}
			ne := append(Tuple(nil), et...)
			ne[2] = rel(resolved)
			es[j] = ne
		}
		out[i] = T(rel(path), t[1], es)
	}
	return out
}
