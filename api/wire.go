package api

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The frames of a hit are encoded and decoded without reflection. In a
// daemon that other processes' work leaves with cold caches, decoding a
// request through encoding/json took 0.1-0.16 ms. Measured side by side
// with the same code without it: a CLI hit 0.96-0.98x, a Python hit
// 0.94-0.99x. The client alone gained nothing measurable.
//
// appendRequest writes a DaemonRequest byte for byte as json.Marshal does,
// and appendResponse the usual DaemonResponse.
// decodeFrame reads the JSON of a DaemonRequest or a DaemonResponse in the
// forms encoders write (this package, Python's json) and reports false on
// anything else: a repeated or case-folded key, a null for a field, a
// number that is not a plain integer where an int goes, an escape outside
// the Basic Multilingual Plane, bytes that are not UTF-8. The caller then decodes
// the frame with encoding/json, so every frame decodes to exactly what
// json.Unmarshal gives (a fuzz test holds the two to it).

// appendRequest appends the JSON of r, as json.Marshal writes it.
func appendRequest(b []byte, r *DaemonRequest) []byte {
	b = append(b, `{"protocol":`...)
	b = strconv.AppendInt(b, int64(r.Protocol), 10)
	b = append(b, `,"op":`...)
	b = appendString(b, r.Op)
	if len(r.Args) > 0 {
		b = appendStrings(append(b, `,"args":`...), r.Args)
	}
	if r.Dir != "" {
		b = appendString(append(b, `,"dir":`...), r.Dir)
	}
	if len(r.Env) > 0 {
		b = appendStrings(append(b, `,"env":`...), r.Env)
	}
	if len(r.Stdin) > 0 {
		b = append(b, `,"stdin":"`...)
		b = base64.StdEncoding.AppendEncode(b, r.Stdin)
		b = append(b, '"')
	}
	if r.StdoutJSON {
		b = append(b, `,"stdout_json":true`...)
	}
	return append(b, '}')
}

// appendResponse appends the JSON of r as json.Marshal writes it (its
// StdoutValue as it is, which json.Marshal would compact); false, with b
// unchanged, for a reply with a fraction, data or a status, which
// json.Marshal writes.
func appendResponse(b []byte, r *DaemonResponse) ([]byte, bool) {
	if r.Fraction != nil || r.Data != nil || r.Status != nil {
		return b, false
	}
	b = append(b, `{"protocol":`...)
	b = strconv.AppendInt(b, int64(r.Protocol), 10)
	for _, f := range [...]struct{ name, v string }{{"frame", r.Frame}, {"doing", r.Doing}, {"error", r.Error}, {"kind", r.Kind}} {
		if f.v != "" {
			b = appendString(append(append(append(b, `,"`...), f.name...), `":`...), f.v)
		}
	}
	for _, f := range [...]struct {
		name string
		v    []byte
	}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if len(f.v) > 0 {
			b = append(append(append(b, `,"`...), f.name...), `":"`...)
			b = append(base64.StdEncoding.AppendEncode(b, f.v), '"')
		}
	}
	b = strconv.AppendInt(append(b, `,"exit":`...), int64(r.Exit), 10)
	if len(r.StdoutValue) > 0 {
		b = append(append(b, `,"stdout_value":`...), r.StdoutValue...)
	}
	if r.PID != 0 {
		b = strconv.AppendInt(append(b, `,"pid":`...), int64(r.PID), 10)
	}
	if len(r.EnvNames) > 0 {
		b = appendStrings(append(b, `,"env_names":`...), r.EnvNames)
	}
	for _, f := range [...]struct{ name, v string }{{"depends", r.Depends}, {"depends_stamp", r.DependsStamp}, {"no_answer", r.NoAnswer}} {
		if f.v != "" {
			b = appendString(append(append(append(b, `,"`...), f.name...), `":`...), f.v)
		}
	}
	return append(b, '}'), true
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters included; invalid UTF-8 as U+FFFD).
func appendString(b []byte, s string) []byte { return appendJSONString(b, s, true) }

// appendJSONString is appendString, escaping <, > and & only when html
// is set (as an Encoder with SetEscapeHTML(false) leaves them).
func appendJSONString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeFrame decodes b into v, a *DaemonRequest or a *DaemonResponse
// holding its zero value, when b is in a form it reads (see above); false
// leaves v as it was, to json.Unmarshal (which would merge into a value
// that is not zero, and so is always left to it).
func decodeFrame(b []byte, v any) bool {
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return false
	}
	switch v := v.(type) {
	case *DaemonRequest:
		var r DaemonRequest
		if !decodeObject(b, func(d *decoder, key string) bool { return field(d, requestFields, &r, key) }) {
			return false
		}
		*v = r
		return true
	case *DaemonResponse:
		var r DaemonResponse
		if !decodeObject(b, func(d *decoder, key string) bool { return field(d, responseFields, &r, key) }) {
			return false
		}
		*v = r
		return true
	}
	return false
}

// decoder reads JSON from b at i. Every method reports false on input it
// does not read.
type decoder struct {
	b    []byte
	i    int
	seen map[string]bool
}

// decodeObject reads b as one object, calling field for each key (the
// decoder is then at the key's value, which field must read).
func decodeObject(b []byte, field func(d *decoder, key string) bool) bool {
	d := &decoder{b: b, seen: map[string]bool{}}
	if !d.object(func(key string) bool {
		if d.seen[key] {
			return false // encoding/json: the last one wins, or maps merge
		}
		d.seen[key] = true
		return field(d, key)
	}) {
		return false
	}
	d.space()
	return d.i == len(d.b)
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips space and reports whether the next byte is c, taking it.
func (d *decoder) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) peek() byte {
	d.space()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// object reads an object, calling member with each key.
func (d *decoder) object(member func(key string) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		key, ok := d.str()
		if !ok || !d.next(':') || !member(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// str reads a string.
func (d *decoder) str() (string, bool) {
	if !d.next('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		}
		d.i++
	}
	return "", false
}

// escaped reads the rest of a string that has an escape at d.i, its first
// byte at start.
func (d *decoder) escaped(start int) (string, bool) {
	var sb strings.Builder
	sb.Write(d.b[start:d.i])
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			s := sb.String()
			return s, utf8.ValidString(s)
		case c < 0x20:
			return "", false
		case c != '\\':
			sb.WriteByte(c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			sb.WriteByte(e)
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return "", false
			}
			r, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 16)
			if err != nil || r >= 0xD800 && r < 0xE000 {
				return "", false // a surrogate: encoding/json pairs or replaces it
			}
			sb.WriteRune(rune(r))
			d.i += 4
		default:
			return "", false
		}
	}
	return "", false
}

// strs reads an array of strings.
func (d *decoder) strs() ([]string, bool) {
	if !d.next('[') {
		return nil, false
	}
	out := []string{}
	if d.next(']') {
		return out, true
	}
	for {
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if d.next(']') {
			return out, true
		}
		if !d.next(',') {
			return nil, false
		}
	}
}

// number returns the literal of a number: -?(0|[1-9][0-9]*)(.[0-9]+)?
// ([eE][+-]?[0-9]+)?
func (d *decoder) number() (string, bool) {
	d.space()
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	first := d.i
	if n := digits(); n == 0 || n > 1 && d.b[first] == '0' {
		return "", false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return "", false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return string(d.b[start:d.i]), true
}

// int reads an integer in the range of int.
func (d *decoder) int() (int, bool) {
	lit, ok := d.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(lit, 10, 0)
	return int(n), err == nil
}

// bytes reads a base64 string, as encoding/json decodes a []byte.
func (d *decoder) bytes() ([]byte, bool) {
	s, ok := d.str()
	if !ok {
		return nil, false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, []byte(s))
	return b[:n], err == nil
}

// boolean reads true or false.
func (d *decoder) boolean() (bool, bool) {
	d.space()
	switch {
	case d.word("true"):
		return true, true
	case d.word("false"):
		return false, true
	}
	return false, false
}

// word takes the literal w if it comes next.
func (d *decoder) word(w string) bool {
	if len(d.b)-d.i < len(w) || string(d.b[d.i:d.i+len(w)]) != w {
		return false
	}
	d.i += len(w)
	return true
}

// raw returns the bytes of one value, as a json.RawMessage holds them
// (skip checks them, more strictly than encoding/json: strings must be
// UTF-8).
func (d *decoder) raw() (json.RawMessage, bool) {
	d.space()
	start := d.i
	if !d.skip(0) {
		return nil, false
	}
	return append(json.RawMessage(nil), d.b[start:d.i]...), true
}

// skip passes over one value, nested at most 64 deep.
func (d *decoder) skip(depth int) bool {
	if depth > 64 {
		return false
	}
	switch c := d.peek(); {
	case c == '"':
		_, ok := d.str()
		return ok
	case c == '{':
		return d.object(func(string) bool { return d.skip(depth + 1) })
	case c == '[':
		d.i++
		if d.next(']') {
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			if d.next(']') {
				return true
			}
			if !d.next(',') {
				return false
			}
		}
	case c == 't' || c == 'f':
		_, ok := d.boolean()
		return ok
	case c == 'n':
		return d.word("null")
	default:
		_, ok := d.number()
		return ok
	}
}

// requestFields and responseFields read the value of each key of their
// type (TestWireFieldsCoverTheTypes holds them to the types' fields).
var requestFields = map[string]func(d *decoder, r *DaemonRequest) bool{
	"protocol":    func(d *decoder, r *DaemonRequest) (ok bool) { r.Protocol, ok = d.int(); return },
	"op":          func(d *decoder, r *DaemonRequest) (ok bool) { r.Op, ok = d.str(); return },
	"args":        func(d *decoder, r *DaemonRequest) (ok bool) { r.Args, ok = d.strs(); return },
	"dir":         func(d *decoder, r *DaemonRequest) (ok bool) { r.Dir, ok = d.str(); return },
	"env":         func(d *decoder, r *DaemonRequest) (ok bool) { r.Env, ok = d.strs(); return },
	"stdin":       func(d *decoder, r *DaemonRequest) (ok bool) { r.Stdin, ok = d.bytes(); return },
	"stdout_json": func(d *decoder, r *DaemonRequest) (ok bool) { r.StdoutJSON, ok = d.boolean(); return },
}

var responseFields = map[string]func(d *decoder, r *DaemonResponse) bool{
	"protocol": func(d *decoder, r *DaemonResponse) (ok bool) { r.Protocol, ok = d.int(); return },
	"frame":    func(d *decoder, r *DaemonResponse) (ok bool) { r.Frame, ok = d.str(); return },
	"doing":    func(d *decoder, r *DaemonResponse) (ok bool) { r.Doing, ok = d.str(); return },
	"fraction": func(d *decoder, r *DaemonResponse) bool {
		lit, ok := d.number()
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(lit, 64)
		r.Fraction = &f
		return err == nil
	},
	"error": func(d *decoder, r *DaemonResponse) (ok bool) { r.Error, ok = d.str(); return },
	"kind":  func(d *decoder, r *DaemonResponse) (ok bool) { r.Kind, ok = d.str(); return },
	"data": func(d *decoder, r *DaemonResponse) bool {
		r.Data = map[string]string{}
		return d.object(func(k string) bool {
			if _, dup := r.Data[k]; dup {
				return false
			}
			v, ok := d.str()
			r.Data[k] = v
			return ok
		})
	},
	"stdout":        func(d *decoder, r *DaemonResponse) (ok bool) { r.Stdout, ok = d.bytes(); return },
	"stderr":        func(d *decoder, r *DaemonResponse) (ok bool) { r.Stderr, ok = d.bytes(); return },
	"exit":          func(d *decoder, r *DaemonResponse) (ok bool) { r.Exit, ok = d.int(); return },
	"stdout_value":  func(d *decoder, r *DaemonResponse) (ok bool) { r.StdoutValue, ok = d.raw(); return },
	"pid":           func(d *decoder, r *DaemonResponse) (ok bool) { r.PID, ok = d.int(); return },
	"status":        func(d *decoder, r *DaemonResponse) (ok bool) { r.Status, ok = d.raw(); return },
	"env_names":     func(d *decoder, r *DaemonResponse) (ok bool) { r.EnvNames, ok = d.strs(); return },
	"depends":       func(d *decoder, r *DaemonResponse) (ok bool) { r.Depends, ok = d.str(); return },
	"depends_stamp": func(d *decoder, r *DaemonResponse) (ok bool) { r.DependsStamp, ok = d.str(); return },
	"no_answer":     func(d *decoder, r *DaemonResponse) (ok bool) { r.NoAnswer, ok = d.str(); return },
}

// field reads the value of key into r with fields, or skips the value of a
// key the type does not have, unless the key would match one of fields
// under encoding/json's case-insensitive match.
func field[T any](d *decoder, fields map[string]func(*decoder, *T) bool, r *T, key string) bool {
	if f, ok := fields[key]; ok {
		return f(d, r)
	}
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return false // Unicode folding is encoding/json's to apply
		}
	}
	for n := range fields {
		if strings.EqualFold(key, n) {
			return false
		}
	}
	return d.skip(0)
}
