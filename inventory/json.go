package inventory

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
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

// ParseJSON reads the plain JSON form of a record, a convenience for
// people; it cannot express tuples or bytes. It reads the input as Python's
// json.loads does:
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
// The input is UTF-8 (an initial byte order mark is skipped); whitespace is
// space, tab, CR and LF; control characters must be escaped inside strings;
// nesting is at most MaxDepth deep and the input at most MaxRecordBytes
// long. Anything else is a *JSONError naming the offset of the first
// problem.
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
	case '{', '[':
		if depth >= MaxDepth {
			return nil, p.fail(p.pos, "nesting deeper than %d containers", MaxDepth)
		}
		p.pos++
		if c == '{' {
			return p.object(depth + 1)
		}
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
		p.space()
		if p.pos < len(p.b) {
			switch p.b[p.pos] {
			case ',':
				p.pos++
				continue
			case ']':
				p.pos++
				return out, nil
			}
		}
		return nil, p.unexpected(`',' or ']'`)
	}
}

func (p *jsonParser) object(depth int) (Value, error) {
	out := Dict{}
	p.space()
	if p.pos < len(p.b) && p.b[p.pos] == '}' {
		p.pos++
		return out, nil
	}
	for {
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != '"' {
			return nil, p.unexpected("a string key")
		}
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
		v, err := p.value(depth)
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
