package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ptojit/ptojit/jit"
)

// DiffJSON is one difference in key diff --json: the values as JSON
// values (a string is a JSON string, a number a number), absent on the
// side that lacks the input.
type DiffJSON struct {
	Name string          `json:"name"`
	A    json.RawMessage `json:"a,omitempty"`
	B    json.RawMessage `json:"b,omitempty"`
}

// DisplayJSON turns a displayed value (jit.Display) into JSON: itself when
// it is valid JSON, else as a JSON string (NaN, bytes, tuples).
func DisplayJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func Short12(s string) string { return s[:min(len(s), 12)] }

// HeaderDiff is a header whose digest differs between a header variant of
// a stored key and the other side (another stored key's variant, or the
// file as it is now).
type HeaderDiff struct{ Path, A, B string }

// HeaderDiffs compares the header sets of the variants a and b of stored
// build keys (nil: a request, whose headers are the files as they are
// now; relative header names are relative to its base directory base).
func HeaderDiffs(a, b *Variant, base string) []HeaderDiff {
	latest := func(v *Variant) map[string]string {
		if v == nil {
			return nil
		}
		out := map[string]string{}
		for _, h := range v.Headers {
			out[h.Path] = h.Digest
		}
		return out
	}
	ha, hb := latest(a), latest(b)
	if ha == nil && hb == nil {
		return nil
	}
	now := func(p string) string {
		if !filepath.IsAbs(p) && base != "" {
			p = filepath.Join(base, p)
		}
		d, err := FileSHA256(p)
		if err != nil {
			return ""
		}
		return d
	}
	var out []HeaderDiff
	switch {
	case ha != nil && hb != nil:
		for _, p := range slices.Sorted(maps.Keys(ha)) {
			if hb[p] != ha[p] {
				out = append(out, HeaderDiff{p, quote(ha[p]), quote(hb[p])})
			}
		}
		for _, p := range slices.Sorted(maps.Keys(hb)) {
			if _, ok := ha[p]; !ok {
				out = append(out, HeaderDiff{p, "", quote(hb[p])})
			}
		}
	case ha != nil:
		for _, p := range slices.Sorted(maps.Keys(ha)) {
			if d := now(p); d != ha[p] {
				out = append(out, HeaderDiff{p, quote(ha[p]), quote(d)})
			}
		}
	default:
		for _, p := range slices.Sorted(maps.Keys(hb)) {
			if d := now(p); d != hb[p] {
				out = append(out, HeaderDiff{p, quote(d), quote(hb[p])})
			}
		}
	}
	return out
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

func WriteDiffs(w io.Writer, diffs []jit.Difference) error {
	var b strings.Builder
	if len(diffs) == 0 {
		b.WriteString("no inputs differ\n")
	}
	side := func(s string) string {
		if s == "" {
			return "(absent)"
		}
		return s
	}
	for _, d := range diffs {
		fmt.Fprintf(&b, "%s: %s -> %s\n", d.Name, side(d.A), side(d.B))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
