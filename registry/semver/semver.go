// Package semver parses and orders semantic versions (semver.org 2.0.0):
// the versions of runtime modules (registry/module) and of operations
// (registry/opquery, registry/ops and the worker child's host operation
// service) are read by this one parser and ordered by this one precedence.
// It imports only the standard library.
package semver

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed semantic version (semver.org 2.0.0):
// MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]. Build metadata is kept for
// printing and ignored by Compare, as the specification says.
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string // dot-separated identifiers after '-'
	Build               string   // after '+'
	text                string
}

// String returns the version as it was written.
func (v Version) String() string { return v.text }

// MarshalText returns the version as it was written, so that a Version
// travels in JSON (an operation's descriptor, to a worker child) as its
// text.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.text), nil }

// UnmarshalText parses the version b with Parse.
func (v *Version) UnmarshalText(b []byte) error {
	w, err := Parse(string(b))
	if err != nil {
		return err
	}
	*v = w
	return nil
}

// Parse parses a semantic version without a leading "v".
func Parse(s string) (Version, error) {
	v := Version{text: s}
	if s == "" {
		return v, fmt.Errorf("empty version")
	}
	if len(s) > 128 {
		return v, fmt.Errorf("version %.20q... is longer than 128 bytes", s)
	}
	rest := s
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		v.Build = rest[i+1:]
		rest = rest[:i]
		if err := checkIdents(v.Build, false); err != nil {
			return v, fmt.Errorf("version %q: build metadata: %v", s, err)
		}
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		pre := rest[i+1:]
		rest = rest[:i]
		if err := checkIdents(pre, true); err != nil {
			return v, fmt.Errorf("version %q: prerelease: %v", s, err)
		}
		v.Pre = strings.Split(pre, ".")
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return v, fmt.Errorf("version %q is not MAJOR.MINOR.PATCH", s)
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') || strings.Trim(p, "0123456789") != "" {
			return v, fmt.Errorf("version %q: %q is not a number without leading zeros", s, p)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, fmt.Errorf("version %q: %q is too large", s, p)
		}
		*nums[i] = n
	}
	return v, nil
}

// checkIdents checks the dot-separated identifiers of a prerelease (pre)
// or of build metadata.
func checkIdents(s string, pre bool) error {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return fmt.Errorf("empty identifier")
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return fmt.Errorf("identifier %q has a character other than [0-9A-Za-z-]", id)
			}
		}
		if pre && len(id) > 1 && id[0] == '0' && strings.Trim(id, "0123456789") == "" {
			return fmt.Errorf("numeric identifier %q has a leading zero", id)
		}
	}
	return nil
}

// Compare returns -1, 0 or +1 as v is less than, equal to or greater than
// w in semver precedence.
func (v Version) Compare(w Version) int {
	for _, p := range [][2]uint64{{v.Major, w.Major}, {v.Minor, w.Minor}, {v.Patch, w.Patch}} {
		if p[0] != p[1] {
			if p[0] < p[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(v.Pre) == 0 && len(w.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(w.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(w.Pre); i++ {
		if c := compareIdent(v.Pre[i], w.Pre[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(v.Pre) < len(w.Pre):
		return -1
	case len(v.Pre) > len(w.Pre):
		return 1
	}
	return 0
}

// compareIdent orders two prerelease identifiers: numeric ones by value and
// below alphanumeric ones, which compare in ASCII order.
func compareIdent(a, b string) int {
	an, aerr := strconv.ParseUint(a, 10, 64)
	bn, berr := strconv.ParseUint(b, 10, 64)
	switch {
	case aerr == nil && berr == nil:
		if an < bn {
			return -1
		} else if an > bn {
			return 1
		}
		return 0
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}
