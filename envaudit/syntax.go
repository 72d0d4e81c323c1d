package envaudit

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SyntaxError is a source file the scanner cannot parse, or one Python
// would not compile (an encoding it cannot decode, a bad escape); its reads
// are unknown. Line and Column are 1-based; Column counts characters, as
// Python's SyntaxError.offset does, and is 0 when unknown. Msg holds no raw
// bytes of the source. A plain value.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// printable quotes s when it holds anything but printable characters (or
// a quote or backslash), so that no source byte reaches the output raw.
func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !strconv.IsGraphic(r) || r == '\\' || r == '"' }) < 0 {
		return s
	}
	return `"` + escapeText(s, true) + `"`
}

// nameText is a variable name as findings print it: raw when it is a
// plain identifier (letters, digits and underscores, not starting with a
// digit), else quoted with backslashes, quotes and every character outside
// printable ASCII escaped, so that no name can pass for another or carry a
// control byte.
func nameText(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			plain = false
			break
		}
	}
	if plain && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range escapeText(s, true) {
		if c < 0x80 {
			b.WriteRune(c)
			continue
		}
		if c > 0xffff {
			fmt.Fprintf(&b, `\U%08x`, c)
		} else {
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// escapeText writes s with every byte that is not part of a printable
// character escaped: invalid bytes as \xXX, lone surrogates (held as their
// 3-byte encodings) as \udXXX, other characters as Go quotes them. With
// quoted, backslashes and double quotes are escaped too.
func escapeText(s string, quoted bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == 0xed && i+2 < len(s) && s[i+1]&0xe0 == 0xa0 && s[i+2]&0xc0 == 0x80 {
			fmt.Fprintf(&b, `\u%04x`, 0xd000|rune(s[i+1]&0x3f)<<6|rune(s[i+2]&0x3f))
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' || r == '"':
			if quoted {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case strconv.IsGraphic(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToGraphic(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// sourceText is s safe to print: printable characters as they are,
// everything else escaped.
func sourceText(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !strconv.IsGraphic(r) }) < 0 {
		return s
	}
	return escapeText(s, false)
}

// PythonVersion is the minor version of Python 3 whose grammar the
// scanner accepts: 10 (the default, the version PyPTO's lint runs), 11 or
// 12.
type PythonVersion int

// The versions the scanner knows; DefaultPythonVersion is the one a zero
// PythonVersion means.
const (
	DefaultPythonVersion PythonVersion = 10
	MaxPythonVersion     PythonVersion = 12
	pyVersionCount                     = int(MaxPythonVersion-DefaultPythonVersion) + 1
)

func (v PythonVersion) orDefault() PythonVersion {
	if v == 0 {
		return DefaultPythonVersion
	}
	return v
}
