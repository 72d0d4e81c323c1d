package inventory

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of Decode and ParseJSON. They bound the memory and the stack that
// hostile input can make a parser use.
const (
	// MaxRecordBytes is the largest input Decode and ParseJSON read.
	MaxRecordBytes = 64 << 20
	// MaxDepth is the deepest nesting of lists, tuples and dicts (JSON
	// arrays and objects) the parsers accept; the top-level container is at
	// depth 1.
	MaxDepth = 512
	// MaxIntDigits is the most decimal digits an int may have, Python's
	// default int/str conversion limit (sys.get_int_max_str_digits), so a
	// record Python cannot write is never accepted.
	MaxIntDigits = 4300
)

// DecodeError reports input that is not an exactly canonical encoded
// record. Offset is the index of the first byte that is wrong (len(input)
// when the input ends too early). It is a plain value, safe for concurrent
// use.
type DecodeError struct {
	Offset int
	Reason string
}

func (e *DecodeError) Error() string {
	return "invalid identity record at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Decode parses the canonical encoding of a record, as Encode writes it,
// and returns its value. It accepts only exactly canonical bytes: schema 1,
// no whitespace, known tags, ints in decimal without leading zeros or "-0"
// (at most MaxIntDigits digits), floats as exactly 16 lowercase hex digits,
// str and bytes as lowercase hex of even length (a str's bytes being valid
// code points, see ValidStr), dict keys of type str sorted by code point and
// unique, nesting at most MaxDepth deep, input at most MaxRecordBytes long
// and nothing after the record. Any other input is a *DecodeError naming
// the offset of the first problem; a dict key that is out of order or
// repeated is reported at the start of that key. For every b that Decode
// accepts, Encode(Decode(b)) equals b.
func Decode(b []byte) (Value, error) {
	if len(b) > MaxRecordBytes {
		return nil, &DecodeError{Offset: MaxRecordBytes, Reason: fmt.Sprintf("record is longer than %d bytes", MaxRecordBytes)}
	}
	d := decoder{b: b}
	if err := d.lit(`["pypto.identity",`); err != nil {
		return nil, err
	}
	if err := d.schema(); err != nil {
		return nil, err
	}
	if err := d.lit(","); err != nil {
		return nil, err
	}
	v, err := d.value(0, false)
	if err != nil {
		return nil, err
	}
	if err := d.lit("]"); err != nil {
		return nil, err
	}
	if d.pos < len(b) {
		return nil, d.fail(d.pos, "unexpected bytes after the record")
	}
	return v, nil
}

type decoder struct {
	b   []byte
	pos int
}

func (d *decoder) fail(at int, format string, args ...any) error {
	return &DecodeError{Offset: at, Reason: fmt.Sprintf(format, args...)}
}

// unexpected describes the byte at d.pos, which is not what was wanted.
func (d *decoder) unexpected(want string) error {
	if d.pos >= len(d.b) {
		return d.fail(d.pos, "unexpected end of input, want %s", want)
	}
	c := d.b[d.pos]
	switch c {
	case ' ', '\t', '\n', '\r':
		return d.fail(d.pos, "whitespace is not canonical, want %s", want)
	}
	return d.fail(d.pos, "unexpected %s, want %s", quoteByte(c), want)
}

func quoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// lit consumes the literal s.
func (d *decoder) lit(s string) error {
	for i := 0; i < len(s); i++ {
		if d.pos >= len(d.b) || d.b[d.pos] != s[i] {
			return d.unexpected(fmt.Sprintf("%#q", s[i:]))
		}
		d.pos++
	}
	return nil
}

func (d *decoder) schema() error {
	start := d.pos
	for d.pos < len(d.b) && d.pos-start < 20 && '0' <= d.b[d.pos] && d.b[d.pos] <= '9' {
		d.pos++
	}
	switch s := string(d.b[start:d.pos]); s {
	case "1":
		return nil
	case "":
		return d.unexpected("the schema number")
	default:
		return d.fail(start, "unsupported schema %s, want %d", s, Schema)
	}
}

// tagMax is the length of the longest tag, "float64".
const tagMax = 7

var tagKinds = map[string]Kind{}

func init() {
	for k, t := range kindTags {
		if t != "" {
			tagKinds[t] = Kind(k)
		}
	}
}

// value reads one tagged value; with isKey only a str is accepted.
func (d *decoder) value(depth int, isKey bool) (Value, error) {
	start := d.pos
	if err := d.lit(`["`); err != nil {
		return nil, err
	}
	tagStart := d.pos
	end := tagStart
	for end < len(d.b) && end-tagStart <= tagMax && d.b[end] != '"' {
		end++
	}
	if end >= len(d.b) {
		d.pos = len(d.b)
		return nil, d.unexpected("a tag")
	}
	tag := string(d.b[tagStart:end])
	if d.b[end] != '"' {
		tag += "..."
	}
	d.pos = end + 1
	if isKey && tag != "str" {
		if _, known := tagKinds[tag]; known {
			return nil, d.fail(start, "dict key is tagged %q, not \"str\"", tag)
		}
	}
	switch tag {
	case "none":
		if err := d.lit("]"); err != nil {
			return nil, err
		}
		return None{}, nil
	case "bool":
		return d.boolValue()
	case "int":
		return d.intValue()
	case "float64":
		return d.floatValue()
	case "str":
		s, err := d.hexString(true)
		if err != nil {
			return nil, err
		}
		return Str(s), nil
	case "bytes":
		s, err := d.hexString(false)
		if err != nil {
			return nil, err
		}
		return Bytes(s), nil // one copy, into the Bytes the caller owns
	case "list", "tuple", "dict":
		if depth >= MaxDepth {
			return nil, d.fail(tagStart, "nesting deeper than %d containers", MaxDepth)
		}
		if err := d.lit(",["); err != nil {
			return nil, err
		}
		if tag == "dict" {
			return d.dict(depth + 1)
		}
		items, err := d.items(depth + 1)
		if err != nil {
			return nil, err
		}
		if tag == "list" {
			return List(items), nil
		}
		return Tuple(items), nil
	}
	return nil, d.fail(tagStart, "unknown tag %q", tag)
}

// boolValue reads the rest of a bool after its tag: `,true]` or
// `,false]`.
func (d *decoder) boolValue() (Value, error) {
	if err := d.lit(","); err != nil {
		return nil, err
	}
	var v Bool
	switch {
	case d.pos < len(d.b) && d.b[d.pos] == 't':
		if err := d.lit("true]"); err != nil {
			return nil, err
		}
		v = true
	case d.pos < len(d.b) && d.b[d.pos] == 'f':
		if err := d.lit("false]"); err != nil {
			return nil, err
		}
	default:
		return nil, d.unexpected("true or false")
	}
	return v, nil
}

// items reads the elements of a list or tuple after its "[" and the "]]"
// that closes it.
func (d *decoder) items(depth int) ([]Value, error) {
	items := []Value{}
	for d.pos < len(d.b) && d.b[d.pos] != ']' {
		if len(items) > 0 {
			if err := d.lit(","); err != nil {
				return nil, err
			}
		}
		v, err := d.value(depth, false)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	if err := d.lit("]]"); err != nil {
		return nil, err
	}
	return items, nil
}

// dict reads the pairs of a dict after its "[" and the "]]" that closes it.
func (d *decoder) dict(depth int) (Value, error) {
	out := Dict{}
	var prev string
	for d.pos < len(d.b) && d.b[d.pos] != ']' {
		if len(out) > 0 {
			if err := d.lit(","); err != nil {
				return nil, err
			}
		}
		if err := d.lit("["); err != nil {
			return nil, err
		}
		keyStart := d.pos
		k, err := d.value(depth, true)
		if err != nil {
			return nil, err
		}
		key := string(k.(Str))
		if len(out) > 0 {
			switch {
			case key == prev:
				return nil, d.fail(keyStart, "duplicate dict key")
			case key < prev:
				return nil, d.fail(keyStart, "dict keys are not sorted by code point")
			}
		}
		if err := d.lit(","); err != nil {
			return nil, err
		}
		v, err := d.value(depth, false)
		if err != nil {
			return nil, err
		}
		if err := d.lit("]"); err != nil {
			return nil, err
		}
		out[Str(key)] = v
		prev = key
	}
	if err := d.lit("]]"); err != nil {
		return nil, err
	}
	return out, nil
}

// open consumes the `,"` between a tag and its string payload.
func (d *decoder) open() error { return d.lit(`,"`) }

func (d *decoder) intValue() (Value, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	start := d.pos
	if d.pos < len(d.b) && d.b[d.pos] == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.b) && '0' <= d.b[d.pos] && d.b[d.pos] <= '9' {
		d.pos++
		if d.pos-digits > MaxIntDigits {
			return nil, d.fail(start, "int has more than %d digits", MaxIntDigits)
		}
	}
	n := d.pos - digits
	switch {
	case n == 0:
		return nil, d.unexpected("a decimal digit")
	case d.b[digits] == '0' && n > 1:
		return nil, d.fail(digits, "int has a leading zero")
	case d.b[digits] == '0' && digits > start:
		return nil, d.fail(start, `"-0" is not canonical, zero is "0"`)
	}
	text := string(d.b[start:d.pos])
	if err := d.lit(`"]`); err != nil {
		return nil, err
	}
	if n <= 18 {
		i, _ := strconv.ParseInt(text, 10, 64)
		return IntOf(i), nil
	}
	x, _ := new(big.Int).SetString(text, 10)
	return BigInt(x), nil
}

func (d *decoder) floatValue() (Value, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	var bits uint64
	for i := 0; i < 16; i++ {
		if d.pos >= len(d.b) || d.b[d.pos] == '"' {
			return nil, d.unexpected("16 lowercase hex digits of a float64")
		}
		h, ok := hexDigit(d.b[d.pos])
		if !ok {
			return nil, d.badHex()
		}
		bits = bits<<4 | uint64(h)
		d.pos++
	}
	if err := d.lit(`"]`); err != nil {
		if d.pos < len(d.b) {
			if _, ok := hexDigitAny(d.b[d.pos]); ok {
				return nil, d.fail(d.pos, "float64 has more than 16 hex digits")
			}
		}
		return nil, err
	}
	return Float(bits), nil
}

// badHex reports the byte at d.pos, which is not a lowercase hex digit.
func (d *decoder) badHex() error {
	if _, ok := hexDigitAny(d.b[d.pos]); ok {
		return d.fail(d.pos, "uppercase hex digit %s is not canonical", quoteByte(d.b[d.pos]))
	}
	return d.unexpected("a lowercase hex digit")
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func hexDigitAny(c byte) (byte, bool) {
	if 'A' <= c && c <= 'F' {
		return c - 'A' + 10, true
	}
	return hexDigit(c)
}

// hexString reads `,"<hex>"]` and returns the decoded bytes as a string;
// with isStr they must be valid code points.
func (d *decoder) hexString(isStr bool) (string, error) {
	if err := d.open(); err != nil {
		return "", err
	}
	start := d.pos
	for d.pos < len(d.b) && d.b[d.pos] != '"' {
		if _, ok := hexDigit(d.b[d.pos]); !ok {
			return "", d.badHex()
		}
		d.pos++
	}
	if d.pos >= len(d.b) {
		return "", d.unexpected(`'"'`)
	}
	if (d.pos-start)%2 != 0 {
		return "", d.fail(d.pos, "odd number of hex digits")
	}
	// A strings.Builder hands over its bytes without the copy that
	// string([]byte) would make.
	var sb strings.Builder
	sb.Grow((d.pos - start) / 2)
	for i := start; i < d.pos; i += 2 {
		hi, _ := hexDigit(d.b[i])
		lo, _ := hexDigit(d.b[i+1])
		sb.WriteByte(hi<<4 | lo)
	}
	out := sb.String()
	if isStr {
		if i := invalidStrAt(out); i >= 0 {
			return "", d.fail(start+2*i, "str bytes are not valid code points in UTF-8 form")
		}
	}
	if err := d.lit(`"]`); err != nil {
		return "", err
	}
	return out, nil
}

// invalidStrAt returns the index of the first byte of s that is not part of
// a code point in the Str form (see ValidStr), or -1.
func invalidStrAt(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		if c == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
