package inventory

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSONError reports input that ParseJSON cannot read. Offset is the index
// of the first byte that is wrong (len(input) when the input ends too
// early). It is a plain value, safe for concurrent use.
type JSONError struct {
	Offset int
	Reason string
}

func (e *JSONError) Error() string {
	return "invalid JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// ParseJSON reads the JSON form of a record, a convenience for people. It
// reads plain JSON as Python's json.loads does:
//
//   - object -> Dict, array -> List, true/false -> Bool, null -> None;
//   - a number without fraction or exponent -> Int of any size (at most
//     MaxIntDigits digits; "-0" is the Int 0);
//   - any other number -> Float, correctly rounded, out of range becoming
//     ±Inf (1E400) or a signed zero (1e-400); the literals NaN, Infinity and
//     -Infinity are accepted, NaN being the float64 bits 7ff8000000000000;
//   - string -> Str: each \uXXXX escape is the code point it names, an
//     unpaired surrogate included, except that an escaped high surrogate
//     directly followed by an escaped low surrogate is joined into one
//     non-BMP code point; raw characters are taken as they are, surrogates
//     written in their 3-byte form included (Python's "surrogatepass");
//   - duplicate object keys: the last value wins.
//
// and an object whose only key is a tag is the value the tag names, so
// that every record has a JSON form (AppendJSON writes it):
//
//   - {"$tuple": [...]} -> Tuple of the items;
//   - {"$bytes": "<hex>"} -> Bytes;
//   - {"$float": "<16 hex digits>"} -> Float with these big-endian
//     IEEE-754 bits (any NaN payload, -0.0);
//   - {"$str": "<hex>"} -> Str whose UTF-8 form (surrogates in their 3-byte
//     form) these bytes are: for a lone high surrogate directly followed by
//     a lone low surrogate, which \u escapes would join;
//   - {"$dict": [[key, value], ...]} -> Dict of these pairs (each key a str,
//     "$str" allowed, at most once).
//
// Hex digits may be of either case. A dict key that starts with '$' is
// written with one more '$' ("$$x" is the key "$x"); any other key starting
// with a single '$' is a tag and must be its object's only key.
//
// The input is UTF-8 (an initial byte order mark is skipped); whitespace is
// space, tab, CR and LF; control characters must be escaped inside strings;
// nesting is at most MaxDepth deep (a tagged object and its array count as
// one level) and the input at most MaxRecordBytes long. Anything else is a
// *JSONError naming the offset of the first problem.
func ParseJSON(b []byte) (Value, error) {
	if len(b) > MaxRecordBytes {
		return nil, &JSONError{Offset: MaxRecordBytes, Reason: fmt.Sprintf("input is longer than %d bytes", MaxRecordBytes)}
	}
	p := jsonParser{b: b}
	if hasPrefixAt(b, 0, "\xef\xbb\xbf") {
		p.pos = 3
	}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(b) {
		return nil, p.fail(p.pos, "unexpected %s after the value", p.describe())
	}
	return v, nil
}

func hasPrefixAt(b []byte, at int, s string) bool {
	return len(b)-at >= len(s) && string(b[at:at+len(s)]) == s
}

// pythonNaN is Python's float('nan'): the quiet NaN without payload. (Go's
// math.NaN() has the payload 1.)
const pythonNaN = Float(0x7ff8000000000000)

type jsonParser struct {
	b   []byte
	pos int
	buf []byte // scratch for strings
}

func (p *jsonParser) fail(at int, format string, args ...any) error {
	return &JSONError{Offset: at, Reason: fmt.Sprintf(format, args...)}
}

// describe names the byte at p.pos for an error.
func (p *jsonParser) describe() string {
	if p.pos >= len(p.b) {
		return "end of input"
	}
	return quoteByte(p.b[p.pos])
}

func (p *jsonParser) unexpected(want string) error {
	if p.pos >= len(p.b) {
		return p.fail(p.pos, "unexpected end of input, want %s", want)
	}
	return p.fail(p.pos, "unexpected %s, want %s", p.describe(), want)
}

func (p *jsonParser) space() {
	for p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) word(w string, v Value) (Value, error) {
	for i := 0; i < len(w); i++ {
		if p.pos >= len(p.b) || p.b[p.pos] != w[i] {
			return nil, p.unexpected(fmt.Sprintf("%#q", w[i:]))
		}
		p.pos++
	}
	return v, nil
}

func (p *jsonParser) value(depth int) (Value, error) {
	if p.pos >= len(p.b) {
		return nil, p.unexpected("a value")
	}
	switch c := p.b[p.pos]; c {
	case '{':
		// object checks the depth once it knows whether the object is a
		// dict or a tagged value, which may be a leaf.
		p.pos++
		return p.object(depth)
	case '[':
		if depth >= MaxDepth {
			return nil, p.fail(p.pos, "nesting deeper than %d containers", MaxDepth)
		}
		p.pos++
		return p.array(depth + 1)
	case '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return Str(s), nil
	case 't':
		return p.word("true", Bool(true))
	case 'f':
		return p.word("false", Bool(false))
	case 'n':
		return p.word("null", None{})
	case 'N':
		return p.word("NaN", pythonNaN)
	case 'I':
		return p.word("Infinity", FloatOf(math.Inf(1)))
	case '-':
		if hasPrefixAt(p.b, p.pos+1, "I") {
			return p.word("-Infinity", FloatOf(math.Inf(-1)))
		}
		return p.number()
	default:
		if '0' <= c && c <= '9' {
			return p.number()
		}
		return nil, p.unexpected("a value")
	}
}

func (p *jsonParser) array(depth int) (Value, error) {
	out := List{}
	p.space()
	if p.pos < len(p.b) && p.b[p.pos] == ']' {
		p.pos++
		return out, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		end, err := p.listNext()
		if err != nil {
			return nil, err
		}
		if end {
			return out, nil
		}
	}
}

// listNext reads what follows an element of a list: ',' (more follow) or
// ']' (end is true).
func (p *jsonParser) listNext() (end bool, err error) {
	p.space()
	if p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ',':
			p.pos++
			return false, nil
		case ']':
			p.pos++
			return true, nil
		}
	}
	return false, p.unexpected(`',' or ']'`)
}

// object reads an object after its '{' at depth (the number of containers
// around it): a Dict, or the value of a tag.
func (p *jsonParser) object(depth int) (Value, error) {
	open := p.pos - 1
	tooDeep := func() error {
		return p.fail(open, "nesting deeper than %d containers", MaxDepth)
	}
	out := Dict{}
	p.space()
	if p.pos < len(p.b) && p.b[p.pos] == '}' {
		if depth >= MaxDepth {
			return nil, tooDeep()
		}
		p.pos++
		return out, nil
	}
	for first := true; ; first = false {
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != '"' {
			return nil, p.unexpected("a string key")
		}
		keyAt := p.pos
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != ':' {
			return nil, p.unexpected("':'")
		}
		p.pos++
		p.space()
		if strings.HasPrefix(k, "$") {
			if !strings.HasPrefix(k, "$$") {
				if !first {
					return nil, p.fail(keyAt, "key %q: a tag must be its object's only key (write a dict key that starts with '$' as '$$...')", k)
				}
				// A tagged object is one value: its array (if any) is
				// its one level of nesting, so every record that Decode
				// reads prints and reads back.
				v, err := p.tagged(k, keyAt, depth)
				if err != nil {
					return nil, err
				}
				p.space()
				if p.pos < len(p.b) && p.b[p.pos] == '}' {
					p.pos++
					return v, nil
				}
				return nil, p.unexpected(fmt.Sprintf("'}': %q must be its object's only key", k))
			}
			k = k[1:] // "$$x" is the key "$x"
		}
		if first && depth >= MaxDepth {
			return nil, tooDeep()
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[Str(k)] = v // the last of duplicate keys wins, as in Python
		p.space()
		if p.pos < len(p.b) {
			switch p.b[p.pos] {
			case ',':
				p.pos++
				continue
			case '}':
				p.pos++
				return out, nil
			}
		}
		return nil, p.unexpected(`',' or '}'`)
	}
}

// The tags of the tagged JSON form, for the types and values plain JSON
// cannot express.
const (
	tagTuple = "$tuple"
	tagBytes = "$bytes"
	tagFloat = "$float"
	tagStr   = "$str"
	tagDict  = "$dict"
)

// tagged reads the value of the tag key tag (at keyAt), at p.pos.
func (p *jsonParser) tagged(tag string, keyAt, depth int) (Value, error) {
	switch tag {
	case tagTuple:
		if p.pos >= len(p.b) || p.b[p.pos] != '[' {
			return nil, p.unexpected(`an array, the items of "$tuple"`)
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		return Tuple(v.(List)), nil
	case tagBytes, tagFloat, tagStr:
		at := p.pos
		if p.pos >= len(p.b) || p.b[p.pos] != '"' {
			return nil, p.unexpected(fmt.Sprintf("a string of hex digits, the value of %q", tag))
		}
		h, err := p.str()
		if err != nil {
			return nil, err
		}
		raw, ok := decodeHex(h)
		switch {
		case !ok:
			return nil, p.fail(at, "%q: want an even number of hex digits, got %q", tag, h)
		case tag == tagBytes:
			return Bytes(raw), nil
		case tag == tagFloat:
			if len(raw) != 8 {
				return nil, p.fail(at, "%q: want 16 hex digits (the big-endian IEEE-754 bits), got %q", tag, h)
			}
			var bits uint64
			for _, c := range raw {
				bits = bits<<8 | uint64(c)
			}
			return Float(bits), nil
		default:
			if i := invalidStrAt(string(raw)); i >= 0 {
				return nil, p.fail(at, "%q: byte %d of %q is not part of a code point in UTF-8 (surrogates in their 3-byte form allowed)", tag, i, h)
			}
			return Str(raw), nil
		}
	case tagDict:
		return p.pairs(depth)
	}
	return nil, p.fail(keyAt, "unknown tag %q: want \"$tuple\", \"$bytes\", \"$float\", \"$str\" or \"$dict\" (write a dict key that starts with '$' as '$$...')", tag)
}

// pairs reads the value of "$dict": an array of [key, value] pairs whose
// keys are str values, each key at most once.
func (p *jsonParser) pairs(depth int) (Value, error) {
	if depth >= MaxDepth {
		return nil, p.fail(p.pos, "nesting deeper than %d containers", MaxDepth)
	}
	if p.pos >= len(p.b) || p.b[p.pos] != '[' {
		return nil, p.unexpected(`an array of [key, value] pairs, the value of "$dict"`)
	}
	p.pos++
	out := Dict{}
	p.space()
	if p.pos < len(p.b) && p.b[p.pos] == ']' {
		p.pos++
		return out, nil
	}
	for {
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != '[' {
			return nil, p.unexpected(`a [key, value] pair`)
		}
		p.pos++
		p.space()
		keyAt := p.pos
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		ks, ok := k.(Str)
		if !ok {
			return nil, p.fail(keyAt, `"$dict" key is a %s, want a str`, k.Kind())
		}
		if _, dup := out[ks]; dup {
			return nil, p.fail(keyAt, `"$dict" has the key %q twice`, string(ks))
		}
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != ',' {
			return nil, p.unexpected(`',' between a pair's key and value`)
		}
		p.pos++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[ks] = v
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != ']' {
			return nil, p.unexpected(`']' closing a [key, value] pair`)
		}
		p.pos++
		end, err := p.listNext()
		if err != nil {
			return nil, err
		}
		if end {
			return out, nil
		}
	}
}

// decodeHex decodes an even number of hex digits of either case.
func decodeHex(h string) ([]byte, bool) {
	if len(h)%2 != 0 {
		return nil, false
	}
	out := make([]byte, len(h)/2)
	for i := range out {
		hi, ok1 := hexDigitAny(h[2*i])
		lo, ok2 := hexDigitAny(h[2*i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		out[i] = hi<<4 | lo
	}
	return out, true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, Python's
// NUMBER_RE; a leading zero followed by a digit is an error, as in Python.
func (p *jsonParser) number() (Value, error) {
	start := p.pos
	if p.b[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	switch {
	case p.pos < len(p.b) && p.b[p.pos] == '0':
		p.pos++
		if p.pos < len(p.b) && '0' <= p.b[p.pos] && p.b[p.pos] <= '9' {
			return nil, p.fail(intStart, "number has a leading zero")
		}
	case p.pos < len(p.b) && '1' <= p.b[p.pos] && p.b[p.pos] <= '9':
		p.digits()
	default:
		return nil, p.unexpected("a digit")
	}
	intEnd := p.pos
	isFloat := false
	if p.pos < len(p.b) && p.b[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return nil, p.unexpected("a digit after '.'")
		}
		isFloat = true
	}
	if p.pos < len(p.b) && (p.b[p.pos] == 'e' || p.b[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.b) && (p.b[p.pos] == '+' || p.b[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return nil, p.unexpected("a digit in the exponent")
		}
		isFloat = true
	}
	text := string(p.b[start:p.pos])
	if !isFloat {
		if intEnd-intStart > MaxIntDigits {
			return nil, p.fail(start, "int has more than %d digits", MaxIntDigits)
		}
		if intEnd-intStart <= 18 {
			i, _ := strconv.ParseInt(text, 10, 64)
			return IntOf(i), nil
		}
		x, _ := new(big.Int).SetString(text, 10)
		return BigInt(x), nil
	}
	// ParseFloat rounds correctly, as Python's float() does; out of range
	// it returns ±Inf or ±0 with ErrRange, which is Python's reading too.
	f, _ := strconv.ParseFloat(text, 64)
	return FloatOf(f), nil
}

// digits consumes decimal digits and returns how many.
func (p *jsonParser) digits() int {
	start := p.pos
	for p.pos < len(p.b) && '0' <= p.b[p.pos] && p.b[p.pos] <= '9' {
		p.pos++
	}
	return p.pos - start
}

// str reads a string starting at the opening quote and returns its Str
// form.
func (p *jsonParser) str() (string, error) {
	p.pos++ // opening quote
	out := p.buf[:0]
	for {
		// Copy a run of plain bytes at once.
		run := p.pos
		for p.pos < len(p.b) {
			c := p.b[p.pos]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			p.pos++
		}
		out = append(out, p.b[run:p.pos]...)
		if p.pos >= len(p.b) {
			return "", p.unexpected(`'"'`)
		}
		switch c := p.b[p.pos]; {
		case c == '"':
			p.pos++
			p.buf = out
			return string(out), nil
		case c < 0x20:
			return "", p.fail(p.pos, "control character %s in a string must be escaped", quoteByte(c))
		case c >= utf8.RuneSelf:
			n := strRuneLen(p.b[p.pos:])
			if n == 0 {
				return "", p.fail(p.pos, "invalid UTF-8")
			}
			out = append(out, p.b[p.pos:p.pos+n]...)
			p.pos += n
		default: // backslash
			var err error
			if out, err = p.escape(out); err != nil {
				return "", err
			}
		}
	}
}

// strRuneLen returns the length of the code point at the start of b in the
// Str form (UTF-8, surrogates in their 3-byte form), or 0 if there is none.
func strRuneLen(b []byte) int {
	if len(b) >= 3 && b[0] == 0xED && b[1] >= 0xA0 && b[1] <= 0xBF && b[2]&0xC0 == 0x80 {
		return 3
	}
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError && n <= 1 {
		return 0
	}
	return n
}

// escape reads the escape sequence at p.pos (a backslash) and appends the
// code point it names to out.
func (p *jsonParser) escape(out []byte) ([]byte, error) {
	at := p.pos
	p.pos++
	if p.pos >= len(p.b) {
		return out, p.unexpected("an escape character")
	}
	c := p.b[p.pos]
	p.pos++
	switch c {
	case '"', '\\', '/':
		return append(out, c), nil
	case 'b':
		return append(out, '\b'), nil
	case 'f':
		return append(out, '\f'), nil
	case 'n':
		return append(out, '\n'), nil
	case 'r':
		return append(out, '\r'), nil
	case 't':
		return append(out, '\t'), nil
	case 'u':
		r, ok := hex4(p.b, p.pos)
		if !ok {
			return out, p.fail(at, `invalid \u escape: want 4 hex digits`)
		}
		p.pos += 4
		if 0xD800 <= r && r <= 0xDBFF && hasPrefixAt(p.b, p.pos, `\u`) {
			if r2, ok := hex4(p.b, p.pos+2); ok && 0xDC00 <= r2 && r2 <= 0xDFFF {
				p.pos += 6
				r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
			}
		}
		out, _ = AppendCodePoint(out, r) // r <= 0x10FFFF
		return out, nil
	}
	return out, p.fail(at, "invalid escape: %s after a backslash", quoteByte(c))
}

func hex4(b []byte, at int) (rune, bool) {
	if len(b)-at < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		h, ok := hexDigitAny(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}
