package inventory

import (
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// FormatJSON returns the JSON form of v that ParseJSON reads back as the
// same record (see AppendJSON).
func FormatJSON(v Value) ([]byte, error) {
	return AppendJSON(nil, v)
}

// AppendJSON appends the JSON form of v to dst: plain JSON where it says
// the same thing, tags where it cannot (see ParseJSON), on one line with
// Python's json.dumps separators (", " and ": ") and every non-ASCII
// character escaped, so that Python's json.loads reads it too.
//
//   - None, Bool, Int, List: null, true/false, the decimal, an array;
//   - Float: a finite value as Python's repr writes it (always with a '.'
//     or an exponent, so it reads back as a float); NaN and ±Inf as
//     {"$float": "<16 hex digits>"}, which keeps the NaN payload;
//   - Str: a string; one holding a lone high surrogate directly followed by
//     a lone low surrogate as {"$str": "<hex>"};
//   - Bytes: {"$bytes": "<hex>"}; Tuple: {"$tuple": [...]};
//   - Dict: an object with keys in code-point order, a key starting with
//     '$' written with one more '$'; a Dict one of whose keys needs "$str"
//     as {"$dict": [[key, value], ...]}.
//
// The values Encode refuses (nil, cycles, a Str that is not code points)
// are refused with the same *EncodeError.
func AppendJSON(dst []byte, v Value) ([]byte, error) {
	if _, err := Encode(v); err != nil {
		return dst, err
	}
	return appendJSON(dst, v), nil
}

// appendJSON appends the JSON form of v, which Encode accepts.
func appendJSON(dst []byte, v Value) []byte {
	switch v := v.(type) {
	case None:
		return append(dst, "null"...)
	case Bool:
		return strconv.AppendBool(dst, bool(v))
	case Int:
		if v.big != nil {
			return v.big.Append(dst, 10)
		}
		return strconv.AppendInt(dst, v.small, 10)
	case Float:
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, `{"$float": "`...)
			for shift := 60; shift >= 0; shift -= 4 {
				dst = append(dst, hexDigits[(v>>shift)&0x0f])
			}
			return append(dst, `"}`...)
		}
		return appendPythonFloat(dst, f)
	case Str:
		if joinsSurrogates(string(v)) {
			dst = append(dst, `{"$str": "`...)
			dst = hex.AppendEncode(dst, []byte(v))
			return append(dst, `"}`...)
		}
		return appendJSONString(dst, string(v), "")
	case Bytes:
		dst = append(dst, `{"$bytes": "`...)
		dst = hex.AppendEncode(dst, v)
		return append(dst, `"}`...)
	case List:
		return appendJSONItems(dst, v)
	case Tuple:
		dst = append(dst, `{"$tuple": `...)
		dst = appendJSONItems(dst, v)
		return append(dst, '}')
	case Dict:
		keys := make([]Str, 0, len(v))
		pairs := false
		for k := range v {
			keys = append(keys, k)
			pairs = pairs || joinsSurrogates(string(k))
		}
		slices.Sort(keys)
		if pairs {
			dst = append(dst, `{"$dict": [`...)
			for i, k := range keys {
				if i > 0 {
					dst = append(dst, ", "...)
				}
				dst = append(dst, '[')
				dst = appendJSON(dst, k)
				dst = append(dst, ", "...)
				dst = appendJSON(dst, v[k])
				dst = append(dst, ']')
			}
			return append(dst, "]}"...)
		}
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			prefix := ""
			if len(k) > 0 && k[0] == '$' {
				prefix = "$"
			}
			dst = appendJSONString(dst, string(k), prefix)
			dst = append(dst, ": "...)
			dst = appendJSON(dst, v[k])
		}
		return append(dst, '}')
	}
	panic("inventory: appendJSON of a value Encode refuses")
}

func appendJSONItems(dst []byte, items []Value) []byte {
	dst = append(dst, '[')
	for i, x := range items {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendJSON(dst, x)
	}
	return append(dst, ']')
}

// appendPythonFloat appends repr(f) of Python for a finite f: the shortest
// digits that read back as f, positional for exponents -4..15 (with ".0"
// when integral) and scientific otherwise ("1e+16", "1e-05").
func appendPythonFloat(dst []byte, f float64) []byte {
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	exp := 0
	for i := len(sci) - 1; i >= 0; i-- {
		if sci[i] == 'e' {
			exp, _ = strconv.Atoi(sci[i+1:])
			break
		}
	}
	if exp < -4 || exp >= 16 {
		return append(dst, sci...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

// strRune decodes the code point at s[i:] of a valid Str (surrogates in
// their 3-byte form) and returns it with its length.
func strRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	if s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 {
		return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
	}
	return utf8.DecodeRuneInString(s[i:])
}

// joinsSurrogates reports whether the Str s holds a high surrogate directly
// followed by a low surrogate, which as \u escapes would read back as one
// non-BMP code point.
func joinsSurrogates(s string) bool {
	for i := 0; i+5 < len(s); i++ {
		if s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xAF && s[i+3] == 0xED && s[i+4] >= 0xB0 && s[i+4] <= 0xBF {
			return true
		}
	}
	return false
}

// appendJSONString appends the JSON string of prefix+s with every character
// outside printable ASCII escaped, as json.dumps does by default.
func appendJSONString(dst []byte, s, prefix string) []byte {
	dst = append(dst, '"')
	dst = append(dst, prefix...)
	u := func(r rune) {
		dst = append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	}
	for i := 0; i < len(s); {
		r, n := strRune(s, i)
		i += n
		switch {
		case r == '"':
			dst = append(dst, '\\', '"')
		case r == '\\':
			dst = append(dst, '\\', '\\')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\b':
			dst = append(dst, '\\', 'b')
		case r == '\f':
			dst = append(dst, '\\', 'f')
		case r < 0x20 || r == 0x7f:
			u(r)
		case r < 0x80:
			dst = append(dst, byte(r))
		case r < 0x10000:
			u(r)
		default:
			r -= 0x10000
			u(0xD800 + r>>10)
			u(0xDC00 + r&0x3FF)
		}
	}
	return append(dst, '"')
}
