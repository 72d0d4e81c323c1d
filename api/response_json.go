package api

import (
	"math"
	"slices"
	"strconv"
)

// AppendJSON appends the compact JSON of r, byte for byte what an
// encoding/json Encoder with SetEscapeHTML(false) writes for it (without
// the newline Encode adds), and reports whether it could: false, with b
// as it was, for a value it does not write, a time that is not a finite
// number. A daemon writes each build's `--json` reply with it rather than
// through reflection (a test and a fuzz target hold the two to the same
// bytes).
func (r *Response) AppendJSON(b []byte) ([]byte, bool) {
	start := len(b)
	b = appendJSONString(append(b, `{"status":`...), string(r.Status), false)
	b = appendField(b, "key", r.Key)
	b = appendField(b, "hashid", r.Hashid)
	if len(r.Outputs) > 0 {
		b = append(b, `,"outputs":[`...)
		for i, o := range r.Outputs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, `{"name":`...), o.Name, false)
			b = appendJSONString(append(b, `,"path":`...), o.Path, false)
			b = strconv.AppendInt(append(b, `,"size":`...), o.Size, 10)
			b = append(appendJSONString(append(b, `,"digest":`...), o.Digest, false), '}')
		}
		b = append(b, ']')
	}
	b = appendField(b, "callable", r.Callable)
	b = appendList(b, "unavailable", r.Unavailable)
	b = appendField(b, "miss_reason", r.MissReason)
	b = appendField(b, "hit_tier", r.HitTier)
	b = appendList(b, "warnings", r.Warnings)
	b = appendField(b, "error", r.Error)
	var ok bool
	if b, ok = r.Timings.appendJSON(append(b, `,"timings":`...)); !ok {
		return b[:start], false
	}
	if len(r.Changed) > 0 {
		b = append(b, `,"changed":[`...)
		for i, c := range r.Changed {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, `{"name":`...), c.Name, false)
			b = appendJSONString(append(b, `,"input":`...), c.Input, false)
			b = append(appendField(appendField(b, "was", c.Was), "now", c.Now), '}')
		}
		b = append(b, ']')
	}
	if r.SavedMS != 0 {
		if b, ok = appendFloat(append(b, `,"saved_ms":`...), r.SavedMS); !ok {
			return b[:start], false
		}
	}
	if p := r.ChangedSince; p != nil {
		b = appendJSONString(append(b, `,"changed_since":{"request":`...), p.Request, false)
		if p.First {
			b = append(b, `,"first":true`...)
		}
		b = append(appendField(appendField(b, "key", p.Key), "note", p.Note), '}')
	}
	if len(r.Units) > 0 {
		b = append(b, `,"units":[`...)
		for i, u := range r.Units {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, `{"name":`...), u.Name, false)
			b = appendJSONString(append(b, `,"key":`...), u.Key, false)
			b = appendJSONString(append(b, `,"status":`...), u.Status, false)
			b = appendField(b, "reason", u.Reason)
			if u.CompileMS != 0 {
				if b, ok = appendFloat(append(b, `,"compile_ms":`...), u.CompileMS); !ok {
					return b[:start], false
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// appendJSON appends the JSON Timings.MarshalJSON writes (json.Marshal's:
// its phase names HTML-escaped, as an Encoder keeps a Marshaler's bytes).
func (t *Timings) appendJSON(b []byte) ([]byte, bool) {
	ok := true
	for i, f := range [...]struct {
		name string
		v    float64
	}{{"identity", t.Identity}, {"lookup", t.Lookup}, {"compile", t.Compile}, {"publish", t.Publish}, {"total", t.Total},
		{"identity_seconds", t.Identity / 1e3}, {"lookup_seconds", t.Lookup / 1e3}, {"compile_seconds", t.Compile / 1e3},
		{"publish_seconds", t.Publish / 1e3}, {"total_seconds", t.Total / 1e3}} {
		sep := `,"`
		if i == 0 {
			sep = `{"`
		}
		var fok bool
		b, fok = appendFloat(append(append(append(b, sep...), f.name...), `":`...), f.v)
		ok = ok && fok
	}
	if len(t.Phases) > 0 {
		b = append(b, `,"phases_us":{`...)
		names := make([]string, 0, len(t.Phases))
		for k := range t.Phases {
			names = append(names, k)
		}
		slices.Sort(names)
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(append(appendJSONString(b, k, true), ':'), t.Phases[k], 10)
		}
		b = append(b, '}')
	}
	return append(b, '}'), ok
}

// appendField appends `,"name":"v"` when v is not empty (omitempty).
func appendField(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return appendJSONString(append(append(append(b, `,"`...), name...), `":`...), v, false)
}

// appendList appends `,"name":[...]` when vs is not empty (omitempty).
func appendList(b []byte, name string, vs []string) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(append(append(b, `,"`...), name...), `":[`...)
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v, false)
	}
	return append(b, ']')
}

// appendFloat appends f as encoding/json writes a float64; false for a
// value it refuses (NaN, an infinity).
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
