package envaudit

import (
	"bytes"
	"sort"
	"strconv"
	"unicode/utf8"
)

// maxRawDelimiter is the longest raw-string delimiter C++ allows.
const maxRawDelimiter = 16

// ScanCpp returns the getenv and secure_getenv calls of the C++ source src,
// in source order. It never fails: text it cannot lex as C++ is skipped a
// byte at a time.
func ScanCpp(src []byte) []Read {
	hasSplice := bytes.Contains(src, []byte("\\\n")) || bytes.Contains(src, []byte("\\\r\n"))
	if !hasSplice && !bytes.Contains(src, []byte("getenv")) {
		return nil
	}
	lx := cppLexer{s: src}
	if hasSplice {
		lx.s, lx.splices = splice(src)
	}
	return lx.scan()
}

// splice removes backslash-newline pairs (translation phase 2) and returns
// the offsets, in the spliced text, at which a line break was removed.
func splice(src []byte) ([]byte, []int) {
	out := make([]byte, 0, len(src))
	var at []int
	for i := 0; i < len(src); i++ {
		if src[i] == '\\' {
			if i+1 < len(src) && src[i+1] == '\n' {
				at = append(at, len(out))
				i++
				continue
			}
			if i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n' {
				at = append(at, len(out))
				i += 2
				continue
			}
		}
		out = append(out, src[i])
	}
	return out, at
}

type cppLexer struct {
	s       []byte
	splices []int // sorted offsets in s where a line continuation was removed
	reads   []Read
	// line counting is incremental: lineOff is the offset up to which
	// newlines have been counted into line.
	lineOff int
	line    int
}

// lineAt returns the 1-based source line of offset p; calls must not go
// backwards.
func (lx *cppLexer) lineAt(p int) int {
	lx.line += bytes.Count(lx.s[lx.lineOff:p], []byte{'\n'})
	lx.lineOff = p
	// Splices before p each hid one line break.
	return lx.line + 1 + sort.SearchInts(lx.splices, p+1)
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c >= 0x80
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (lx *cppLexer) scan() []Read {
	s := lx.s
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*'):
			i = lx.skipComment(i)
		case c == '"' || c == '\'':
			i = lx.skipQuoted(i)
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			i = lx.skipNumber(i)
		case isIdentStart(c):
			j := i + 1
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			id := s[i:j]
			if j < len(s) && (s[j] == '"' || s[j] == '\'') && isEncodingPrefix(id) {
				if _, end, ok := lx.literal(i); ok {
					i = end
					continue
				}
			}
			if string(id) == "getenv" || string(id) == "secure_getenv" {
				if k := lx.skipSpace(j); k < len(s) && s[k] == '(' {
					lx.call(i, k+1)
				}
			}
			i = j
		default:
			i++
		}
	}
	return lx.reads
}

// call records the call whose name starts at start and whose arguments
// start at args.
func (lx *cppLexer) call(start, args int) {
	var name []byte
	n := 0
	j := lx.skipSpace(args)
	for {
		v, end, ok := lx.literal(j)
		if !ok {
			break
		}
		name = append(name, v...)
		n++
		j = lx.skipSpace(end)
	}
	r := Read{Line: lx.lineAt(start), Function: CppFunction}
	if n > 0 && j < len(lx.s) && lx.s[j] == ')' {
		r.Variable = string(name)
	}
	lx.reads = append(lx.reads, r)
}

// skipSpace skips white space and comments from i.
func (lx *cppLexer) skipSpace(i int) int {
	s := lx.s
	for i < len(s) {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*'):
			i = lx.skipComment(i)
		default:
			return i
		}
	}
	return i
}

func (lx *cppLexer) skipComment(i int) int {
	s := lx.s
	if s[i+1] == '/' {
		if k := bytes.IndexByte(s[i:], '\n'); k >= 0 {
			return i + k
		}
		return len(s)
	}
	if k := bytes.Index(s[i+2:], []byte("*/")); k >= 0 {
		return i + 2 + k + 2
	}
	return len(s)
}

// skipNumber skips a preprocessing number, digit separators included, so
// that 1'000 does not open a character literal.
func (lx *cppLexer) skipNumber(i int) int {
	s := lx.s
	j := i + 1
	for j < len(s) {
		c := s[j]
		switch {
		case isIdentByte(c) || c == '.':
			if (c == 'e' || c == 'E' || c == 'p' || c == 'P') && j+1 < len(s) && (s[j+1] == '+' || s[j+1] == '-') {
				j++
			}
			j++
		case c == '\'' && j+1 < len(s) && isIdentByte(s[j+1]):
			j += 2
		default:
			return j
		}
	}
	return j
}

// skipQuoted skips an unprefixed string or character literal at i.
func (lx *cppLexer) skipQuoted(i int) int {
	_, end := lx.quoted(i, false)
	return end
}

func isEncodingPrefix(id []byte) bool {
	switch string(id) {
	case "L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R":
		return true
	}
	return false
}

// literal decodes the string literal starting at i, with or without an
// encoding prefix or R. ok is false when no string literal starts at i.
func (lx *cppLexer) literal(i int) (val []byte, end int, ok bool) {
	s := lx.s
	j := i
	for j < len(s) && j-i < 3 && isIdentByte(s[j]) {
		j++
	}
	if j >= len(s) || s[j] != '"' {
		return nil, i, false
	}
	prefix := s[i:j]
	if len(prefix) > 0 && !isEncodingPrefix(prefix) {
		return nil, i, false
	}
	if len(prefix) > 0 && prefix[len(prefix)-1] == 'R' {
		if v, end, ok := lx.raw(j); ok {
			return v, end, true
		}
	}
	v, end := lx.quoted(j, true)
	return v, end, true
}

// raw decodes the raw string whose opening quote is at q.
func (lx *cppLexer) raw(q int) ([]byte, int, bool) {
	s := lx.s
	k := q + 1
	for k < len(s) && k-q-1 <= maxRawDelimiter && s[k] != '(' {
		if c := s[k]; c == ' ' || c == ')' || c == '\\' || c == '\t' || c == '\n' || c == '"' {
			return nil, q, false
		}
		k++
	}
	if k >= len(s) || s[k] != '(' {
		return nil, q, false
	}
	closing := append(append([]byte{')'}, s[q+1:k]...), '"')
	e := bytes.Index(s[k+1:], closing)
	if e < 0 {
		return s[k+1:], len(s), true
	}
	return s[k+1 : k+1+e], k + 1 + e + len(closing), true
}

// quoted skips the string or character literal whose quote is at q and, if
// decode is set, returns its decoded value. An unterminated literal ends at
// the end of its line.
func (lx *cppLexer) quoted(q int, decode bool) ([]byte, int) {
	s := lx.s
	quote := s[q]
	var val []byte
	for k := q + 1; k < len(s); k++ {
		switch c := s[k]; c {
		case quote:
			return val, k + 1
		case '\n':
			return val, k
		case '\\':
			if !decode {
				k++
				continue
			}
			var n int
			val, n = appendCEscape(val, s[k:])
			k += n - 1
		default:
			if decode {
				val = append(val, c)
			}
		}
	}
	return val, len(s)
}

// appendCEscape decodes the escape sequence at the start of e (e[0] is the
// backslash) and returns its length.
func appendCEscape(val, e []byte) ([]byte, int) {
	if len(e) < 2 {
		return append(val, '\\'), 1
	}
	switch c := e[1]; c {
	case 'n':
		return append(val, '\n'), 2
	case 't':
		return append(val, '\t'), 2
	case 'r':
		return append(val, '\r'), 2
	case 'a':
		return append(val, '\a'), 2
	case 'b':
		return append(val, '\b'), 2
	case 'f':
		return append(val, '\f'), 2
	case 'v':
		return append(val, '\v'), 2
	case 'x':
		n := 2
		for n < len(e) && isHex(e[n]) {
			n++
		}
		if n == 2 {
			return append(val, 'x'), 2
		}
		// The escape takes every hex digit: "\x324" is one code unit
		// 0x324, which no char holds (compilers reject it); the name
		// keeps the value whole, as that character, rather than a
		// truncated byte.
		v, err := strconv.ParseUint(string(e[2:n]), 16, 64)
		if err == nil && v <= 0xff {
			return append(val, byte(v)), n
		}
		r := rune(v)
		if err != nil || !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		return utf8.AppendRune(val, r), n
	case 'u', 'U':
		want := 4
		if c == 'U' {
			want = 8
		}
		if len(e) >= 2+want {
			if v, err := strconv.ParseUint(string(e[2:2+want]), 16, 32); err == nil {
				return utf8.AppendRune(val, rune(v)), 2 + want
			}
		}
		return append(val, c), 2
	default:
		if c >= '0' && c <= '7' {
			n := 1
			for n < 4 && n < len(e) && e[n] >= '0' && e[n] <= '7' {
				n++
			}
			v, _ := strconv.ParseUint(string(e[1:n]), 8, 16)
			return append(val, byte(v)), n
		}
		return append(val, c), 2 // \\ \" \' \? and unknown escapes
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
