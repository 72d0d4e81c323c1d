package jit

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ptojit/ptojit/inventory"
)

// KeyReport explains a build's key: every input, its digest, and why the
// identity is unavailable when it is. It is plain data, safe for concurrent
// reads.
type KeyReport struct {
	// Key is the 64 hex digits of the key record's digest; empty when
	// Usable is false.
	Key string `json:"key,omitempty"`
	// Usable reports whether the identity is complete: no unavailable
	// component, source or extra source.
	Usable bool   `json:"usable"`
	Policy string `json:"policy"`
	// PolicySource says what chose Policy: toolchain.policy,
	// PYPTO_CACHE_IDENTITY, ptojit.conf policy or default.
	PolicySource string `json:"policy_source"`
	// Record is the key record; components that are unavailable hold None.
	Record inventory.Value `json:"-"`
	// RecordWire is the canonical encoding of Record.
	RecordWire string `json:"record"`
	// Inputs lists every leaf of the record with its digest, in record
	// order.
	Inputs []Input `json:"inputs"`
	// SourcesDigest is the content digest of every source root together
	// (orchestration, kernels, extra roots), as pypto computes it.
	SourcesDigest string `json:"sources_digest,omitempty"`
	// ToolchainDigest is digest(("toolchain", 1, {name: component digest})).
	ToolchainDigest string `json:"toolchain_digest,omitempty"`
	// Unavailable lists every reason the identity is incomplete.
	Unavailable []string `json:"unavailable,omitempty"`
	// Fresh lists the fresh_request variables that are set: such a build
	// neither looks up nor publishes.
	Fresh []string `json:"fresh,omitempty"`
	// BaseDir is the directory the record's relative paths are relative
	// to ("" when every path is absolute). SourcesDigest and
	// ToolchainDigest are PyPTO's, over absolute paths; the record's
	// digests use the relative form.
	BaseDir string `json:"base_dir,omitempty"`
	// Relative lists the paths of the record made relative to BaseDir,
	// each as "field: path" (the record's field, the relative path), in
	// record order: the sources, extra sources and include directories,
	// and the toolchain components' roots and the paths in their build
	// records that lie under it.
	Relative []string `json:"relative,omitempty"`
}

// Input is one leaf of a key record.
type Input struct {
	// Name is the leaf's path in the record, e.g. "sources.kernel.0" or
	// "options.opt_level".
	Name string `json:"name"`
	// Value is the leaf in the plain JSON form (tuples as lists, bytes as
	// a hex string).
	Value string `json:"value"`
	// Digest is the digest of the leaf's record.
	Digest string `json:"digest"`
}

// keyFields returns the dict of a key or result record, and the headers of
// a result record.
func keyFields(rec inventory.Value) (inventory.Dict, inventory.List, error) {
	t, ok := rec.(inventory.Tuple)
	if !ok || len(t) < 3 {
		return nil, nil, fmt.Errorf("not a ptojit key record")
	}
	tag, _ := t[0].(inventory.Str)
	schema, _ := t[1].(inventory.Int)
	if n, ok := schema.Int64(); !ok || n != keySchema {
		return nil, nil, &OldSchemaError{Schema: schema.String()}
	}
	switch {
	case (tag == keyTag || tag == unitTag) && len(t) == 3:
		d, ok := t[2].(inventory.Dict)
		if !ok {
			return nil, nil, fmt.Errorf("not a ptojit key record")
		}
		return d, nil, nil
	case tag == resultTag && len(t) == 4:
		d, _, err := keyFields(t[2])
		if err != nil {
			return nil, nil, err
		}
		h, ok := t[3].(inventory.List)
		if !ok {
			return nil, nil, fmt.Errorf("result record without a header list")
		}
		return d, h, nil
	}
	return nil, nil, fmt.Errorf("not a ptojit key record (tag %q)", string(tag))
}

// FlattenRecord lists the leaves of a key or result record: nested dicts
// and lists of dicts are walked, anything else is a leaf. The headers of a
// result record become "headers.<path>" leaves.
func FlattenRecord(rec inventory.Value) ([]Input, error) {
	d, headers, err := keyFields(rec)
	if err != nil {
		return nil, err
	}
	var out []Input
	flatten("", d, &out)
	for _, h := range headers {
		if t, ok := h.(inventory.Tuple); ok && len(t) == 2 {
			p, _ := t[0].(inventory.Str)
			out = append(out, leaf("headers."+string(p), t[1]))
		}
	}
	return out, nil
}

func leaf(name string, v inventory.Value) Input {
	return Input{Name: name, Value: Display(v), Digest: inventory.MustDigest(v).String()}
}

func flatten(prefix string, v inventory.Value, out *[]Input) {
	switch x := v.(type) {
	case inventory.Dict:
		if len(x) == 0 {
			*out = append(*out, leaf(prefix, v))
			return
		}
		for _, k := range sortedKeys(x) {
			flatten(join(prefix, string(k)), x[k], out)
		}
	case inventory.List:
		if !hasDict(x) {
			*out = append(*out, leaf(prefix, v))
			return
		}
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	default:
		*out = append(*out, leaf(prefix, v))
	}
}

func hasDict(l inventory.List) bool {
	for _, e := range l {
		if _, ok := e.(inventory.Dict); ok {
			return true
		}
	}
	return false
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func sortedKeys(d inventory.Dict) []inventory.Str {
	keys := make([]inventory.Str, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys) // byte order of the UTF-8 form is code-point order
	return keys
}

// Display renders a value in the plain JSON form, compactly: tuples as
// lists, bytes as a quoted hex string prefixed "bytes:".
func Display(v inventory.Value) string {
	var b strings.Builder
	display(&b, v)
	return b.String()
}

func display(b *strings.Builder, v inventory.Value) {
	switch x := v.(type) {
	case nil, inventory.None:
		b.WriteString("null")
	case inventory.Bool:
		b.WriteString(strconv.FormatBool(bool(x)))
	case inventory.Int:
		b.WriteString(x.String())
	case inventory.Float:
		f := x.Float64()
		switch {
		case math.IsNaN(f):
			b.WriteString("NaN")
		case math.IsInf(f, 0):
			b.WriteString(map[bool]string{true: "Infinity", false: "-Infinity"}[f > 0])
		default:
			s := strconv.FormatFloat(f, 'g', -1, 64)
			if !strings.ContainsAny(s, ".eEn") {
				s += ".0"
			}
			b.WriteString(s)
		}
	case inventory.Str:
		b.WriteString(strconv.Quote(string(x)))
	case inventory.Bytes:
		fmt.Fprintf(b, "\"bytes:%x\"", []byte(x))
	case inventory.List:
		displaySeq(b, x)
	case inventory.Tuple:
		displaySeq(b, x)
	case inventory.Dict:
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(string(k)))
			b.WriteString(": ")
			display(b, x[k])
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

func displaySeq(b *strings.Builder, items []inventory.Value) {
	b.WriteByte('[')
	for i, e := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		display(b, e)
	}
	b.WriteByte(']')
}

// WriteTree writes the report as an indented tree: each dict with its
// digest, each leaf with its value, then every unavailable reason.
func (r *KeyReport) WriteTree(w io.Writer) error {
	var b strings.Builder
	if r.Usable {
		fmt.Fprintf(&b, "key %s\n", r.Key)
	} else {
		fmt.Fprintf(&b, "key unavailable (the build would compile and not be cached)\n")
	}
	if r.BaseDir != "" {
		fmt.Fprintf(&b, "base %s (paths under it are relative)\n", r.BaseDir)
		for _, p := range r.Relative {
			fmt.Fprintf(&b, "  relative %s\n", p)
		}
	}
	if r.Policy != "" {
		fmt.Fprintf(&b, "policy %s (%s)\n", r.Policy, r.PolicySource)
	}
	d, headers, err := keyFields(r.Record)
	if err != nil {
		return err
	}
	combined := map[string]string{"sources": r.SourcesDigest, "toolchain": r.ToolchainDigest}
	if r.BaseDir != "" {
		// PyPTO's digests, not the record's: they differ between
		// checkouts at different paths where the record does not.
		for k, v := range combined {
			if v != "" {
				combined[k] = v + ", absolute paths"
			}
		}
	}
	tree(&b, "", d, 1, combined)
	if len(headers) > 0 {
		fmt.Fprintf(&b, "  headers:\n")
		for _, h := range headers {
			fmt.Fprintf(&b, "    %s\n", Display(h))
		}
	}
	if len(r.Fresh) > 0 {
		fmt.Fprintf(&b, "fresh request (no lookup, no publish):\n")
		for _, f := range r.Fresh {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	if len(r.Unavailable) > 0 {
		fmt.Fprintf(&b, "unavailable:\n")
		for _, u := range r.Unavailable {
			fmt.Fprintf(&b, "  - %s\n", u)
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// WriteRecordTree writes a key record (a stored entry's, decoded) as the
// indented tree WriteTree prints: each dict with its digest, each leaf with
// its value, then the headers.
func WriteRecordTree(w io.Writer, record inventory.Value) error {
	d, headers, err := keyFields(record)
	if err != nil {
		return err
	}
	var b strings.Builder
	tree(&b, "", d, 1, nil)
	if len(headers) > 0 {
		fmt.Fprintf(&b, "  headers:\n")
		for _, h := range headers {
			fmt.Fprintf(&b, "    %s\n", Display(h))
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// tree writes the children of d at the given depth. extra names the
// combined digest shown for a top-level group instead of the dict's own.
func tree(b *strings.Builder, prefix string, d inventory.Dict, depth int, extra map[string]string) {
	ind := strings.Repeat("  ", depth)
	for _, k := range sortedKeys(d) {
		v := d[k]
		name := string(k)
		switch x := v.(type) {
		case inventory.Dict:
			if len(x) == 0 {
				fmt.Fprintf(b, "%s%s: {}\n", ind, name)
				continue
			}
			label := "digest " + inventory.MustDigest(x).String()
			if depth == 1 && extra[name] != "" {
				label = "combined " + extra[name]
			}
			fmt.Fprintf(b, "%s%s (%s):\n", ind, name, label)
			tree(b, join(prefix, name), x, depth+1, nil)
		case inventory.List:
			if !hasDict(x) {
				fmt.Fprintf(b, "%s%s: %s\n", ind, name, Display(x))
				continue
			}
			fmt.Fprintf(b, "%s%s (digest %s):\n", ind, name, inventory.MustDigest(x))
			for i, e := range x {
				if ed, ok := e.(inventory.Dict); ok {
					fmt.Fprintf(b, "%s  [%d]:\n", ind, i)
					tree(b, "", ed, depth+2, nil)
				} else {
					fmt.Fprintf(b, "%s  [%d]: %s\n", ind, i, Display(e))
				}
			}
		default:
			fmt.Fprintf(b, "%s%s: %s\n", ind, name, Display(v))
		}
	}
}

// Difference is one input that differs between two key records. A or B is
// empty when the input exists on one side only.
type Difference struct {
	Name string `json:"name"`
	A    string `json:"a,omitempty"`
	B    string `json:"b,omitempty"`
}

// DiffRecords returns the leaves of two key (or result) records that
// differ, in the order of a then b.
func DiffRecords(a, b inventory.Value) ([]Difference, error) {
	la, err := FlattenRecord(a)
	if err != nil {
		return nil, err
	}
	lb, err := FlattenRecord(b)
	if err != nil {
		return nil, err
	}
	mb := map[string]Input{}
	for _, in := range lb {
		mb[in.Name] = in
	}
	var out []Difference
	seen := map[string]bool{}
	for _, x := range la {
		seen[x.Name] = true
		y, ok := mb[x.Name]
		switch {
		case !ok:
			out = append(out, Difference{Name: x.Name, A: x.Value})
		case x.Digest != y.Digest:
			out = append(out, Difference{Name: x.Name, A: x.Value, B: y.Value})
		}
	}
	for _, y := range lb {
		if !seen[y.Name] {
			out = append(out, Difference{Name: y.Name, B: y.Value})
		}
	}
	return out, nil
}
