package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// Schema is the identity record schema version written by Encode.
const Schema = 1

// wirePrefix opens every encoded record.
const wirePrefix = `["pypto.identity",1,`

// EncodeError reports a value that has no encoding. Path locates it inside
// the record, in Python-like subscript syntax ("[2]['rows']").
type EncodeError struct {
	Path   string
	Reason string
}

func (e *EncodeError) Error() string {
	if e.Path == "" {
		return "identity record: " + e.Reason
	}
	return "identity record at " + e.Path + ": " + e.Reason
}

// Encode returns the canonical encoding of v.
func Encode(v Value) ([]byte, error) {
	return AppendEncode(nil, v)
}

// AppendEncode appends the canonical encoding of v to dst.
func AppendEncode(dst []byte, v Value) ([]byte, error) {
	e := encoder{buf: dst}
	e.buf = append(e.buf, wirePrefix...)
	if err := e.value(v); err != nil {
		return dst, err
	}
	e.buf = append(e.buf, ']')
	return e.buf, nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Digest returns the SHA-256 of Encode(v).
func Digest(v Value) (Sum, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b, err := AppendEncode((*bp)[:0], v)
	if err != nil {
		return Sum{}, err
	}
	*bp = b
	return sha256.Sum256(b), nil
}

// MustDigest is Digest for values built by the program itself, whose
// encoding cannot fail (no cycles, valid strings). It panics otherwise.
func MustDigest(v Value) Sum {
	s, err := Digest(v)
	if err != nil {
		panic(err)
	}
	return s
}

type encoder struct {
	buf []byte
	// open holds the identity of every List, Tuple and Dict on the path
	// from the root to the value being encoded, to detect cycles.
	open []container
	// keys is a stack of dict keys being sorted and written; each dict
	// uses the top of it while it is open.
	keys []Str
}

// container identifies a List, Tuple (first element and length: two
// slices of one array with different lengths are different values) or
// Dict (n is -1).
type container struct {
	p uintptr
	n int
}

// pathStep is one step of the path to a value, kept only to build errors.
type pathStep struct {
	parent *pathStep
	index  int
	key    Str
	isKey  bool
}

func (p *pathStep) String() string {
	if p == nil {
		return ""
	}
	return p.parent.String() + p.step()
}

func (p *pathStep) step() string {
	if p.isKey {
		return "[" + strconv.Quote(string(p.key)) + "]"
	}
	return "[" + strconv.Itoa(p.index) + "]"
}

// within prefixes the path of an *EncodeError from a nested value with the
// step that leads to that value. The encoder builds paths only on failure,
// so the common path allocates nothing for them.
func within(err error, step pathStep) error {
	if ee, ok := err.(*EncodeError); ok {
		ee.Path = step.step() + ee.Path
	}
	return err
}

func (e *encoder) fail(format string, args ...any) error {
	return &EncodeError{Reason: fmt.Sprintf(format, args...)}
}

func (e *encoder) enter(c container) error {
	if slices.Contains(e.open, c) {
		return e.fail("cycle: a container contains itself")
	}
	e.open = append(e.open, c)
	return nil
}

const hexDigits = "0123456789abcdef"

func (e *encoder) value(v Value) error {
	switch v := v.(type) {
	case None:
		e.buf = append(e.buf, `["none"]`...)
	case Bool:
		if v {
			e.buf = append(e.buf, `["bool",true]`...)
		} else {
			e.buf = append(e.buf, `["bool",false]`...)
		}
	case Int:
		e.buf = append(e.buf, `["int","`...)
		if v.big != nil {
			e.buf = v.big.Append(e.buf, 10)
		} else {
			e.buf = strconv.AppendInt(e.buf, v.small, 10)
		}
		e.buf = append(e.buf, `"]`...)
	case Float:
		e.buf = append(e.buf, `["float64","`...)
		for shift := 60; shift >= 0; shift -= 4 {
			e.buf = append(e.buf, hexDigits[(v>>shift)&0x0f])
		}
		e.buf = append(e.buf, `"]`...)
	case Str:
		return e.str(v)
	case Bytes:
		e.buf = append(e.buf, `["bytes","`...)
		e.buf = hex.AppendEncode(e.buf, v)
		e.buf = append(e.buf, `"]`...)
	case List:
		return e.seq(`["list",[`, []Value(v))
	case Tuple:
		return e.seq(`["tuple",[`, []Value(v))
	case Dict:
		return e.dict(v)
	case nil:
		return e.fail("nil Value (use inventory.None{})")
	default:
		return e.fail("unsupported type %T", v)
	}
	return nil
}

func (e *encoder) str(s Str) error {
	if !ValidStr(string(s)) {
		return e.fail("str holds bytes that are not code points (invalid UTF-8)")
	}
	e.buf = appendStrT(e.buf, string(s))
	return nil
}

// appendStrT appends T(Str(s)) for a valid Str s.
func appendStrT(dst []byte, s string) []byte {
	dst = append(dst, `["str","`...)
	dst = hex.AppendEncode(dst, []byte(s))
	return append(dst, `"]`...)
}

func (e *encoder) seq(open string, items []Value) error {
	e.buf = append(e.buf, open...)
	if len(items) > 0 {
		if err := e.enter(container{uintptr(unsafe.Pointer(unsafe.SliceData(items))), len(items)}); err != nil {
			return err
		}
		for i, x := range items {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(x); err != nil {
				return within(err, pathStep{index: i})
			}
		}
		e.open = e.open[:len(e.open)-1]
	}
	e.buf = append(e.buf, "]]"...)
	return nil
}

func (e *encoder) dict(d Dict) error {
	e.buf = append(e.buf, `["dict",[`...)
	if len(d) > 0 {
		if err := e.enter(container{uintptr(reflect.ValueOf(d).UnsafePointer()), -1}); err != nil {
			return err
		}
		base := len(e.keys)
		for k := range d {
			e.keys = append(e.keys, k)
		}
		// Nested dicts push above base and may move e.keys; this slice
		// keeps the array holding this dict's keys.
		keys := e.keys[base:]
		slices.Sort(keys) // byte order of the UTF-8 form is code-point order
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, '[')
			if err := e.str(k); err != nil { // not e.value: boxing k allocates
				return within(err, pathStep{key: k, isKey: true})
			}
			e.buf = append(e.buf, ',')
			if err := e.value(d[k]); err != nil {
				return within(err, pathStep{key: k, isKey: true})
			}
			e.buf = append(e.buf, ']')
		}
		clear(keys)
		e.keys = e.keys[:base]
		e.open = e.open[:len(e.open)-1]
	}
	e.buf = append(e.buf, "]]"...)
	return nil
}

// ValidStr reports whether s is the UTF-8 form of a sequence of code points,
// allowing surrogate code points in their 3-byte form (ED A0..BF xx).
func ValidStr(s string) bool {
	return utf8.ValidString(s) || invalidStrAt(s) < 0
}

// AppendCodePoint appends the Str form of code point r, writing surrogates
// (U+D800..U+DFFF) as their 3-byte sequences. It reports false for a value
// outside 0..U+10FFFF.
func AppendCodePoint(dst []byte, r rune) ([]byte, bool) {
	if r >= 0xD800 && r <= 0xDFFF {
		return append(dst, 0xED, byte(0x80|(r>>6)&0x3F), byte(0x80|r&0x3F)), true
	}
	if r < 0 || r > utf8.MaxRune {
		return dst, false
	}
	return utf8.AppendRune(dst, r), true
}

// StrFromOSBytes converts a file name (or any OS byte string) to the Str
// Python would see: valid UTF-8 sequences as themselves, and each byte that
// does not decode as the code point U+DC80+byte ("surrogateescape").
func StrFromOSBytes(b string) Str {
	if utf8.ValidString(b) {
		return Str(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRuneInString(b[i:])
		if r == utf8.RuneError && n <= 1 {
			out, _ = AppendCodePoint(out, 0xDC00+rune(b[i]))
			i++
			continue
		}
		out = append(out, b[i:i+n]...)
		i += n
	}
	return Str(out)
}

// FromGo converts a Go value to a Value: nil -> None; bool; every integer
// type and *big.Int -> Int; float32/float64 -> Float; string -> Str;
// []byte -> Bytes; other slices and arrays -> List; map[string]T -> Dict; a
// Value is returned as is. Anything else, a map with non-string keys, or a
// cycle is an error.
func FromGo(x any) (Value, error) {
	c := converter{}
	return c.convert(reflect.ValueOf(x), nil)
}

type converter struct {
	open []uintptr
}

var (
	valueType  = reflect.TypeFor[Value]()
	bigIntType = reflect.TypeFor[*big.Int]()
)

func (c *converter) convert(rv reflect.Value, at *pathStep) (Value, error) {
	if !rv.IsValid() {
		return None{}, nil
	}
	if rv.Type().Implements(valueType) && rv.Kind() != reflect.Interface {
		if v, ok := rv.Interface().(Value); ok {
			return v, nil
		}
	}
	if rv.Type() == bigIntType {
		if rv.IsNil() {
			return nil, encodeFail(at, "nil *big.Int")
		}
		return BigInt(rv.Interface().(*big.Int)), nil
	}
	switch rv.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			return None{}, nil
		}
		if rv.Kind() == reflect.Pointer {
			return nil, encodeFail(at, "unsupported type %s", rv.Type())
		}
		return c.convert(rv.Elem(), at)
	case reflect.Bool:
		return Bool(rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return IntOf(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return BigInt(new(big.Int).SetUint64(rv.Uint())), nil
	case reflect.Float32, reflect.Float64:
		return FloatOf(rv.Float()), nil
	case reflect.String:
		s := rv.String()
		if !ValidStr(s) {
			return nil, encodeFail(at, "string is not valid UTF-8")
		}
		return Str(s), nil
	case reflect.Slice, reflect.Array:
		return c.convertList(rv, at)
	case reflect.Map:
		return c.convertDict(rv, at)
	}
	return nil, encodeFail(at, "unsupported type %s", rv.Type())
}

// encodeFail makes the EncodeError of the value at at.
func encodeFail(at *pathStep, format string, args ...any) error {
	return &EncodeError{Path: at.String(), Reason: fmt.Sprintf(format, args...)}
}

// convertList converts a slice or an array: of bytes to Bytes (a copy),
// of anything else to a List, refusing a slice that contains itself.
func (c *converter) convertList(rv reflect.Value, at *pathStep) (Value, error) {
	if rv.Type().Elem().Kind() == reflect.Uint8 {
		if rv.Kind() == reflect.Array {
			b := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(b), rv)
			return Bytes(b), nil
		}
		return Bytes(slices.Clone(rv.Bytes())), nil
	}
	if rv.Kind() == reflect.Slice && rv.Len() > 0 {
		p := uintptr(rv.UnsafePointer())
		if slices.Contains(c.open, p) {
			return nil, encodeFail(at, "cycle: a container contains itself")
		}
		c.open = append(c.open, p)
		defer func() { c.open = c.open[:len(c.open)-1] }()
	}
	out := make(List, rv.Len())
	for i := range out {
		v, err := c.convert(rv.Index(i), &pathStep{parent: at, index: i})
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// convertDict converts a map with string keys to a Dict, refusing one
// that contains itself.
func (c *converter) convertDict(rv reflect.Value, at *pathStep) (Value, error) {
	if rv.Type().Key().Kind() != reflect.String {
		return nil, encodeFail(at, "dict key type %s is not str", rv.Type().Key())
	}
	if rv.IsNil() {
		return Dict{}, nil
	}
	p := uintptr(rv.UnsafePointer())
	if slices.Contains(c.open, p) {
		return nil, encodeFail(at, "cycle: a container contains itself")
	}
	c.open = append(c.open, p)
	defer func() { c.open = c.open[:len(c.open)-1] }()
	out := make(Dict, rv.Len())
	it := rv.MapRange()
	for it.Next() {
		k := it.Key().String()
		if !ValidStr(k) {
			return nil, encodeFail(at, "dict key is not valid UTF-8")
		}
		v, err := c.convert(it.Value(), &pathStep{parent: at, key: Str(k), isKey: true})
		if err != nil {
			return nil, err
		}
		out[Str(k)] = v
	}
	return out, nil
}
