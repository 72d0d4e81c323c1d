// Package value parses the values of ptojit's settings, one function per
// kind of value, so that an environment variable, a line of ptojit.conf
// and "ptojit config set" accept the same forms and refuse the same
// others with the same words.
//
// # Forms
//
//	Bool      1, true, yes, on / 0, false, no, off; any case, blanks around
//	          ignored; nothing else (not "", not "2", not "y")
//	Duration  a Go duration (time.ParseDuration: 500ms, 30s, 2m, 1h30m)
//	          within the bounds the caller gives, both included
//	Enum      exactly one of the values the caller lists
//
// Errors are *Error: the value as given and the forms accepted, without
// the variable, key or file:line, which the caller adds once.
//
// Standard library only.
package value

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Error is a value its kind does not accept. Immutable once returned.
type Error struct {
	Input string // the value as given
	Want  string // the forms accepted
}

func (e *Error) Error() string { return fmt.Sprintf("%q: want %s", e.Input, e.Want) }

// BoolForms are the accepted forms of Bool, true forms first.
var BoolForms = []string{"1", "true", "yes", "on", "0", "false", "no", "off"}

// boolWant is the Want of Bool's errors.
const boolWant = "1, true, yes or on, or 0, false, no or off"

// Bool reads a boolean.
func Bool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, &Error{Input: s, Want: boolWant}
}

// Duration reads a duration d with lo <= d <= hi.
func Duration(s string, lo, hi time.Duration) (time.Duration, error) {
	want := fmt.Sprintf("a duration such as 500ms, 30s or 2m, from %s to %s", lo, hi)
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < lo || d > hi {
		return 0, &Error{Input: s, Want: want}
	}
	return d, nil
}

// Enum reads one of values.
func Enum(s string, values ...string) (string, error) {
	if slices.Contains(values, s) {
		return s, nil
	}
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	want := "one of " + strings.Join(q, ", ")
	if len(q) == 2 {
		want = q[0] + " or " + q[1]
	}
	return "", &Error{Input: s, Want: want}
}
