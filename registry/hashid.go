package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// HashidPrefix starts every hashid string.
const HashidPrefix = "sha256:"

// HashidLen is the length of a hashid string: the prefix and 64 hex digits.
const HashidLen = len(HashidPrefix) + 2*sha256.Size

// Hashid is a callable identity: the SHA-256 of a canonical descriptor. The
// zero Hashid is not the hashid of any descriptor in practice and is reported
// by IsZero. Hashid is a value type, safe for concurrent use.
type Hashid [sha256.Size]byte

// ComputeHashid returns the hashid of canonical descriptor bytes.
func ComputeHashid(descriptor []byte) Hashid { return Hashid(sha256.Sum256(descriptor)) }

// String returns "sha256:" + 64 lowercase hex digits.
func (h Hashid) String() string {
	var buf [HashidLen]byte
	copy(buf[:], HashidPrefix)
	hex.Encode(buf[len(HashidPrefix):], h[:])
	return string(buf[:])
}

// Digest returns the raw 32-byte digest, as mailbox frames carry it.
func (h Hashid) Digest() [32]byte { return h }

// IsZero reports whether h is the zero value.
func (h Hashid) IsZero() bool { return h == Hashid{} }

// MarshalText implements encoding.TextMarshaler.
func (h Hashid) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseHashid's rules.
func (h *Hashid) UnmarshalText(b []byte) error {
	p, err := ParseHashid(string(b))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// maxQuoted bounds how much of an invalid input an error message repeats.
const maxQuoted = 80

// ParseHashid parses "sha256:" + exactly 64 lowercase hex digits. Anything
// else is an *Error with code HASHID_FORMAT_INVALID.
func ParseHashid(s string) (Hashid, error) {
	var h Hashid
	bad := func(why string) (Hashid, error) {
		q := s
		if len(q) > maxQuoted {
			q = q[:maxQuoted] + "..."
		}
		return Hashid{}, newError(HashidFormatInvalid, "parse hashid", "%s: %s", strconv.Quote(q), why)
	}
	if len(s) < len(HashidPrefix) || s[:len(HashidPrefix)] != HashidPrefix {
		return bad(`want prefix "sha256:"`)
	}
	digits := s[len(HashidPrefix):]
	if len(digits) != 2*sha256.Size {
		return bad(fmt.Sprintf("want 64 hex digits, have %d characters", len(digits)))
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return bad(fmt.Sprintf("character %d is not a lowercase hex digit", len(HashidPrefix)+i))
		}
	}
	if _, err := hex.Decode(h[:], []byte(digits)); err != nil {
		return bad("not hex")
	}
	return h, nil
}
