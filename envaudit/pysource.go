//go:build cgo

package envaudit

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// This file holds what Python does to a source before and while it
// tokenizes it, and that tree-sitter does not: decoding (BOM, PEP 263
// coding cookie), the tokens Python 3 rejects, and string literal values.

// decodeSource returns src as UTF-8, decoded as Python 3.10 decodes a
// source file: a UTF-8 BOM is dropped; a coding cookie on line 1 (or on
// line 2 when line 1 is blank or a comment) selects the encoding; the
// default is UTF-8. It returns a *SyntaxError where Python would fail to
// compile the file: undecodable bytes, a BOM with a cookie naming another
// encoding, a NUL byte, or an encoding the audit cannot decode (every
// encoding but UTF-8, Latin-1 and ASCII).
func decodeSource(src []byte) ([]byte, error) {
	bom := bytes.HasPrefix(src, []byte("\xef\xbb\xbf"))
	if bom {
		src = src[3:]
	}
	enc := "utf-8"
	if name, ok := codingCookie(src); ok {
		enc = normalEncoding(name)
		if bom && enc != "utf-8" {
			return nil, &SyntaxError{Line: 1, Msg: "encoding problem: " + printable(name) + " with BOM"}
		}
	}
	switch enc {
	case "utf-8":
		if i := invalidUTF8(src); i >= 0 {
			line, col := position(src, i)
			return nil, &SyntaxError{Line: line, Column: col,
				Msg: fmt.Sprintf("Non-UTF-8 code starting with '\\x%02x', but no encoding declared or the declared one is utf-8", src[i])}
		}
	case "latin-1", "ascii":
		var out []byte
		for i, c := range src {
			if c >= 0x80 && enc == "ascii" {
				line, col := position(src, i)
				return nil, &SyntaxError{Line: line, Column: col,
					Msg: fmt.Sprintf("'ascii' codec can't decode byte 0x%02x", c)}
			}
			out = utf8.AppendRune(out, rune(c))
		}
		src = out
	default:
		return nil, &SyntaxError{Line: 1, Msg: "source encoding " + printable(enc) + " is not one the audit decodes (utf-8, latin-1, ascii)"}
	}
	if i := bytes.IndexByte(src, 0); i >= 0 {
		line, col := position(src, i)
		return nil, &SyntaxError{Line: line, Column: col, Msg: "source code cannot contain null bytes"}
	}
	return src, nil
}

// cookieRE is PEP 263's regular expression.
var cookieRE = regexp.MustCompile(`^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`)

// codingCookie returns the encoding a coding cookie declares.
func codingCookie(src []byte) (string, bool) {
	for n := 0; n < 2 && len(src) > 0; n++ {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		if m := cookieRE.FindSubmatch(line); m != nil {
			return string(m[1]), true
		}
		if t := bytes.TrimLeft(line, " \t\f\r"); len(t) > 0 && t[0] != '#' {
			return "", false // code on line 1: line 2 is not looked at
		}
	}
	return "", false
}

// normalEncoding is the tokenizer's get_normal_name, with the ASCII names
// added.
func normalEncoding(name string) string {
	n := strings.ReplaceAll(strings.ToLower(name), "_", "-")
	switch {
	case n == "utf-8" || strings.HasPrefix(n, "utf-8-") || n == "utf8":
		return "utf-8"
	case n == "latin-1" || n == "iso-8859-1" || n == "iso-latin-1" || n == "latin1" || n == "iso8859-1" ||
		strings.HasPrefix(n, "latin-1-") || strings.HasPrefix(n, "iso-8859-1-") || strings.HasPrefix(n, "iso-latin-1-"):
		return "latin-1"
	case n == "ascii" || n == "us-ascii" || n == "646":
		return "ascii"
	}
	return n
}

// invalidUTF8 returns the offset of the first byte that is not valid
// UTF-8 (surrogates included, as Python's decoder rejects them), or -1.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// position returns the 1-based line and character column of byte offset
// off of src.
func position(src []byte, off int) (line, col int) {
	off = min(off, len(src))
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	return bytes.Count(src[:start], []byte("\n")) + 1, utf8.RuneCount(src[start:off]) + 1
}

// rowColumn turns tree-sitter's 0-based row and byte column into a 1-based
// line and character column.
func rowColumn(src []byte, row, byteCol int) (line, col int) {
	start := 0
	for r := 0; r < row; r++ {
		i := bytes.IndexByte(src[start:], '\n')
		if i < 0 {
			break
		}
		start += i + 1
	}
	return position(src, min(start+byteCol, len(src)))
}

// checkTokens reports the first token tree-sitter accepted that Python 3
// rejects at compile time: integer literals with leading zeros or an L
// suffix, string prefixes Python 3 lacks (ur, backticks), malformed
// escapes, non-ASCII characters in bytes literals, and bytes concatenated
// with str.
func (t *pyTree) checkTokens() error {
	fail := func(i int32, msg string) error {
		line, col := position(t.src, int(t.nodes[i].start))
		return &SyntaxError{Line: line, Column: col, Msg: msg}
	}
	for i := int32(0); i < int32(len(t.nodes)); i++ {
		switch t.nodes[i].kind {
		case pyInteger:
			s := t.text(i)
			last := s[len(s)-1]
			if last == 'l' || last == 'L' {
				return fail(i, "invalid decimal literal (a Python 2 long suffix)")
			}
			if last != 'j' && last != 'J' && len(s) > 1 && s[0] == '0' && strings.Trim(s, "0_") != "" && strings.Trim(s, "0123456789_") == "" {
				return fail(i, "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers")
			}
		case pyString:
			if _, _, msg := t.decodeLiteral(i); msg != "" {
				return fail(i, msg)
			}
		case pyConcatenatedString:
			kind := -1
			for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
				_, isBytes, _ := t.decodeLiteral(c)
				k := 0
				if isBytes {
					k = 1
				}
				if kind >= 0 && k != kind {
					return fail(i, "cannot mix bytes and nonbytes literals")
				}
				kind = k
			}
		}
	}
	return nil
}

// pyPrefixes are the string prefixes of Python 3.10, lowered.
var pyPrefixes = map[string]bool{"": true, "r": true, "u": true, "b": true, "br": true, "rb": true, "f": true, "fr": true, "rf": true}

// decodeLiteral decodes string node i as Python does. val is nil for an
// f-string with a placeholder; msg is Python's complaint about a literal
// it rejects.
func (t *pyTree) decodeLiteral(i int32) (val []byte, isBytes bool, msg string) {
	var start, stop int32 = -1, -1
	interpolated := false
	for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
		switch t.nodes[c].kind {
		case pyInterpolation:
			interpolated = true
		case pyStringStart:
			start = c
		case pyStringEnd:
			stop = c
		}
	}
	if start < 0 || stop < 0 {
		return nil, false, "unterminated string literal"
	}
	opening := t.text(start)
	prefix := strings.ToLower(strings.TrimRight(opening, `"'`))
	if !pyPrefixes[prefix] {
		return nil, false, "invalid syntax (string prefix " + printable(strings.TrimRight(opening, `"'`)) + ")"
	}
	isBytes = strings.Contains(prefix, "b")
	isF := strings.Contains(prefix, "f")
	raw := strings.Contains(prefix, "r")
	body := t.src[t.nodes[start].stop:t.nodes[stop].start]
	// Python reads sources with universal newlines.
	if bytes.IndexByte(body, '\r') >= 0 {
		body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	}
	if isBytes {
		for _, c := range body {
			if c >= 0x80 {
				return nil, true, "bytes can only contain ASCII literal characters"
			}
		}
	}
	if interpolated {
		return nil, isBytes, ""
	}
	v, msg := decodePyEscapes(body, isBytes, raw, isF)
	if v == nil && msg == "" {
		v = []byte{}
	}
	return v, isBytes, msg
}

// decodePyEscapes decodes the body of a literal: escapes unless raw, and
// in an f-string (whose placeholders the caller excluded) doubled braces.
// str results hold lone surrogates as their 3-byte encodings. msg is
// Python's complaint about a malformed escape or an unknown \N{...} name.
func decodePyEscapes(b []byte, isBytes, raw, isF bool) (out []byte, msg string) {
	if bytes.IndexByte(b, '\\') < 0 && !isF {
		return b, ""
	}
	out = make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if isF && (c == '{' || c == '}') && i+1 < len(b) && b[i+1] == c {
			out = append(out, c)
			i++
			continue
		}
		if c != '\\' || raw || i+1 >= len(b) {
			if raw && c == '\\' && i+1 < len(b) {
				// A raw literal keeps the backslash and the
				// character it protects.
				out = append(out, c, b[i+1])
				i++
				continue
			}
			out = append(out, c)
			continue
		}
		i++
		switch c = b[i]; c {
		case '\n':
		case '\\', '\'', '"':
			out = append(out, c)
		case 'a':
			out = append(out, '\a')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, '\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if c != 'x' && isBytes {
				out = append(out, '\\', c)
				continue
			}
			if out, i, msg = appendHexEscape(out, b, i, n, isBytes); msg != "" {
				return nil, msg
			}
		case 'N':
			if isBytes {
				out = append(out, '\\', c)
				continue
			}
			if out, i, msg = appendNamedEscape(out, b, i); msg != "" {
				return nil, msg
			}
		default:
			if c >= '0' && c <= '7' {
				j := i
				for j < len(b) && j < i+3 && b[j] >= '0' && b[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(string(b[i:j]), 8, 16)
				if isBytes {
					out = append(out, byte(v)) // Python keeps the low byte
				} else {
					out = appendPyRune(out, rune(v))
				}
				i = j - 1
				continue
			}
			out = append(out, '\\', c)
		}
	}
	return out, ""
}

// appendHexEscape appends the character of the escape \x, \u or \U of n
// hex digits whose letter is b[i], and returns the index of its last
// digit; or Python's message for a truncated or illegal escape.
func appendHexEscape(out, b []byte, i, n int, isBytes bool) ([]byte, int, string) {
	c := b[i]
	j := i + 1
	for j < len(b) && j < i+1+n && isHex(b[j]) {
		j++
	}
	if j != i+1+n {
		if isBytes {
			return nil, i, fmt.Sprintf("(value error) invalid \\x escape at position %d", i-1)
		}
		return nil, i, fmt.Sprintf("(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\%c%s escape", c, strings.Repeat("X", n))
	}
	v, _ := strconv.ParseUint(string(b[i+1:j]), 16, 32)
	if v > utf8.MaxRune {
		return nil, i, "(unicode error) 'unicodeescape' codec can't decode bytes: illegal Unicode character"
	}
	if isBytes {
		out = append(out, byte(v))
	} else {
		out = appendPyRune(out, rune(v))
	}
	return out, j - 1, ""
}

// appendNamedEscape appends the character of the escape \N{NAME} whose
// N is b[i], and returns the index of its '}'; or Python's message for a
// malformed escape or an unknown name.
func appendNamedEscape(out, b []byte, i int) ([]byte, int, string) {
	end := bytes.IndexByte(b[i:], '}')
	if i+1 >= len(b) || b[i+1] != '{' || end < 0 || end == 2 {
		return nil, i, "(unicode error) 'unicodeescape' codec can't decode bytes: malformed \\N character escape"
	}
	r, ok := lookupName(string(b[i+2 : i+end]))
	if !ok {
		return nil, i, "(unicode error) 'unicodeescape' codec can't decode bytes: unknown Unicode character name"
	}
	return appendPyRune(out, r), i + end, ""
}

// appendPyRune appends r as UTF-8, and a lone surrogate (which a Python str
// may hold) as its 3-byte encoding, so that it stays apart from U+FFFD.
func appendPyRune(b []byte, r rune) []byte {
	if 0xd800 <= r && r <= 0xdfff {
		return append(b, 0xed, byte(0x80|(r>>6)&0x3f), byte(0x80|r&0x3f))
	}
	return utf8.AppendRune(b, r)
}

// runeNames maps upper-cased character names to runes, built on first use
// from golang.org/x/text/unicode/runenames (Unicode 15.0, a superset of
// Python 3.10's 13.0: names are never withdrawn).
var runeNames = sync.OnceValue(func() map[string]rune {
	m := make(map[string]rune, 40000)
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if n := runenames.Name(r); n != "" && n[0] != '<' {
			m[n] = r
		}
	}
	return m
})

// lookupName resolves the name of a \N{...} escape as CPython's
// unicodedata does: case-insensitively, with the algorithmic names of CJK
// unified ideographs and Hangul syllables, and the name aliases. The names
// are those of Unicode 15.0 (golang.org/x/text/unicode/runenames), the
// aliases those of 14.0; Python 3.10 knows Unicode 13.0, so a name added
// since resolves here and fails there.
func lookupName(name string) (rune, bool) {
	u := strings.ToUpper(name)
	if r, ok := pyNameAliases[u]; ok {
		return r, true
	}
	if hex, ok := strings.CutPrefix(u, "CJK UNIFIED IDEOGRAPH-"); ok && (len(hex) == 4 || len(hex) == 5) {
		v, err := strconv.ParseUint(hex, 16, 32)
		if err == nil && strings.HasPrefix(runenames.Name(rune(v)), "<CJK Ideograph") {
			return rune(v), true
		}
		return 0, false
	}
	if s, ok := strings.CutPrefix(u, "HANGUL SYLLABLE "); ok {
		return hangulSyllable(s)
	}
	r, ok := runeNames()[u]
	return r, ok
}

// The jamo short names of the Hangul syllable algorithm (Unicode 3.12).
var (
	jamoL = []string{"G", "GG", "N", "D", "DD", "R", "M", "B", "BB", "S", "SS", "", "J", "JJ", "C", "K", "T", "P", "H"}
	jamoV = []string{"A", "AE", "YA", "YAE", "EO", "E", "YEO", "YE", "O", "WA", "WAE", "OE", "YO", "U", "WEO", "WE", "WI", "YU", "EU", "YI", "I"}
	jamoT = []string{"", "G", "GG", "GS", "N", "NJ", "NH", "D", "L", "LG", "LM", "LB", "LS", "LT", "LP", "LH", "M", "B", "BS", "S", "SS", "NG", "J", "C", "K", "T", "P", "H"}
)

// hangulSyllable resolves the part of a Hangul syllable name after
// "HANGUL SYLLABLE ", trying every split as CPython's find_syllable does
// (longest jamo first).
func hangulSyllable(s string) (rune, bool) {
	longest := func(s string, names []string) (int, int) {
		best, n := -1, 0
		for i, j := range names {
			if len(j) >= n && strings.HasPrefix(s, j) && (best < 0 || len(j) > n) {
				best, n = i, len(j)
			}
		}
		return best, n
	}
	l, n := longest(s, jamoL)
	if l < 0 {
		return 0, false
	}
	s = s[n:]
	v, n := longest(s, jamoV)
	if v < 0 {
		return 0, false
	}
	s = s[n:]
	tt, n := longest(s, jamoT)
	if tt < 0 || n != len(s) {
		return 0, false
	}
	return 0xac00 + rune((l*21+v)*28+tt), true
}
