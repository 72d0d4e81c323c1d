package inventory

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
)

// Value is one typed identity value. The concrete types are None, Bool,
// Int, Float, Str, Bytes, List, Tuple and Dict; no other type satisfies it.
// Values are plain data and safe for concurrent reads.
type Value interface {
	// Kind names the protocol type of the value.
	Kind() Kind
}

// Kind is the protocol type of a Value.
type Kind uint8

// The protocol types, in the order docs/design.md lists them.
const (
	KindNone Kind = iota + 1
	KindBool
	KindInt
	KindFloat
	KindStr
	KindBytes
	KindList
	KindTuple
	KindDict
)

var kindTags = [...]string{
	KindNone:  "none",
	KindBool:  "bool",
	KindInt:   "int",
	KindFloat: "float64",
	KindStr:   "str",
	KindBytes: "bytes",
	KindList:  "list",
	KindTuple: "tuple",
	KindDict:  "dict",
}

// String returns the wire tag of the kind ("none", "float64", ...).
func (k Kind) String() string {
	if int(k) < len(kindTags) && kindTags[k] != "" {
		return kindTags[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

type (
	// None is Python's None.
	None struct{}
	// Bool is a boolean; it never equals the Int 1.
	Bool bool
	// Float is a float64 held by its IEEE-754 bits, so -0.0 and every NaN
	// payload survive. Use FloatOf to make one from a float64.
	Float uint64
	// Str is a sequence of code points held in its UTF-8 form, in which a
	// surrogate code point is written as its 3-byte sequence. Any valid
	// UTF-8 Go string is a Str of the same characters.
	Str string
	// Bytes is a byte string.
	Bytes []byte
	// List is a list; order is significant.
	List []Value
	// Tuple is a tuple; it never equals the List of the same items.
	Tuple []Value
	// Dict maps Str keys (in Str's UTF-8 form) to values. Insertion order
	// does not exist and does not matter: pairs are encoded sorted.
	Dict map[Str]Value
)

// Int is an integer of any size. The zero Int is 0.
type Int struct {
	small int64
	big   *big.Int // when non-nil, the value; never fits in int64
}

// IntOf returns the Int for i.
func IntOf(i int64) Int { return Int{small: i} }

// BigInt returns the Int for x (copied).
func BigInt(x *big.Int) Int {
	if x.IsInt64() {
		return Int{small: x.Int64()}
	}
	return Int{big: new(big.Int).Set(x)}
}

// Big returns the value as a new big.Int.
func (i Int) Big() *big.Int {
	if i.big != nil {
		return new(big.Int).Set(i.big)
	}
	return big.NewInt(i.small)
}

// Int64 returns the value and whether it fits in an int64.
func (i Int) Int64() (int64, bool) { return i.small, i.big == nil }

// String returns the canonical decimal form.
func (i Int) String() string {
	if i.big != nil {
		return i.big.String()
	}
	return fmt.Sprint(i.small)
}

// FloatOf returns the Float holding f's bits.
func FloatOf(f float64) Float { return Float(math.Float64bits(f)) }

// Float64 returns the float64 with these bits.
func (f Float) Float64() float64 { return math.Float64frombits(uint64(f)) }

func (None) Kind() Kind  { return KindNone }
func (Bool) Kind() Kind  { return KindBool }
func (Int) Kind() Kind   { return KindInt }
func (Float) Kind() Kind { return KindFloat }
func (Str) Kind() Kind   { return KindStr }
func (Bytes) Kind() Kind { return KindBytes }
func (List) Kind() Kind  { return KindList }
func (Tuple) Kind() Kind { return KindTuple }
func (Dict) Kind() Kind  { return KindDict }

// T is shorthand for a Tuple of the given values.
func T(items ...Value) Tuple { return Tuple(items) }

// Sum is a SHA-256 digest: of an encoded record, a file, a blob. It is the
// fixed-size key type of ptojit; hex appears only at the edges.
type Sum [32]byte

// String returns the 64 lowercase hex digits.
func (s Sum) String() string { return hex.EncodeToString(s[:]) }

// IsZero reports whether s is all zero bytes (no digest).
func (s Sum) IsZero() bool { return s == Sum{} }

// ParseSum parses 64 lowercase hex digits.
func ParseSum(h string) (Sum, error) {
	var s Sum
	if len(h) != 64 {
		return s, fmt.Errorf("digest %q: want 64 lowercase hex digits", h)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return s, fmt.Errorf("digest %q: want 64 lowercase hex digits", h)
		}
	}
	_, err := hex.Decode(s[:], []byte(h))
	return s, err
}

// MarshalText encodes s as hex, so JSON shows a Sum as a string.
func (s Sum) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses hex.
func (s *Sum) UnmarshalText(b []byte) error {
	v, err := ParseSum(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
