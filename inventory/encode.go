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
	if err := e.value(v, nil); err != nil {
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
	open []uintptr
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
	if p.isKey {
		return p.parent.String() + "[" + strconv.Quote(string(p.key)) + "]"
	}
	return p.parent.String() + "[" + strconv.Itoa(p.index) + "]"
}

func (e *encoder) fail(at *pathStep, format string, args ...any) error {
	return &EncodeError{Path: at.String(), Reason: fmt.Sprintf(format, args...)}
}

func (e *encoder) enter(p uintptr, at *pathStep) error {
	if slices.Contains(e.open, p) {
		return e.fail(at, "cycle: a container contains itself")
	}
	e.open = append(e.open, p)
	return nil
}

func (e *encoder) value(v Value, at *pathStep) error {
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
		var b [8]byte
		for i := range b {
			b[i] = byte(v >> (56 - 8*i))
		}
		e.buf = hex.AppendEncode(e.buf, b[:])
		e.buf = append(e.buf, `"]`...)
	case Str:
		if !ValidStr(string(v)) {
			return e.fail(at, "str holds bytes that are not code points (invalid UTF-8)")
		}
		e.buf = append(e.buf, `["str","`...)
		e.buf = hex.AppendEncode(e.buf, []byte(v))
		e.buf = append(e.buf, `"]`...)
	case Bytes:
		e.buf = append(e.buf, `["bytes","`...)
		e.buf = hex.AppendEncode(e.buf, v)
		e.buf = append(e.buf, `"]`...)
	case List:
		return e.seq(`["list",[`, []Value(v), at)
	case Tuple:
		return e.seq(`["tuple",[`, []Value(v), at)
	case Dict:
		return e.dict(v, at)
	case nil:
		return e.fail(at, "nil Value (use inventory.None{})")
	default:
		return e.fail(at, "unsupported type %T", v)
	}
	return nil
}

func (e *encoder) seq(open string, items []Value, at *pathStep) error {
	e.buf = append(e.buf, open...)
	if len(items) > 0 {
		if err := e.enter(uintptr(reflect.ValueOf(items).UnsafePointer()), at); err != nil {
			return err
		}
		for i, x := range items {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(x, &pathStep{parent: at, index: i}); err != nil {
				return err
			}
		}
		e.open = e.open[:len(e.open)-1]
	}
	e.buf = append(e.buf, "]]"...)
	return nil
}

func (e *encoder) dict(d Dict, at *pathStep) error {
	e.buf = append(e.buf, `["dict",[`...)
	if len(d) > 0 {
		if err := e.enter(uintptr(reflect.ValueOf(d).UnsafePointer()), at); err != nil {
			return err
		}
		keys := make([]Str, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		slices.Sort(keys) // byte order of the UTF-8 form is code-point order
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, '[')
			if err := e.value(k, &pathStep{parent: at, key: k, isKey: true}); err != nil {
				return err
			}
			e.buf = append(e.buf, ',')
			if err := e.value(d[k], &pathStep{parent: at, key: k, isKey: true}); err != nil {
				return err
			}
			e.buf = append(e.buf, ']')
		}
		e.open = e.open[:len(e.open)-1]
	}
	e.buf = append(e.buf, "]]"...)
	return nil
}

// ValidStr reports whether s is the UTF-8 form of a sequence of code points,
// allowing surrogate code points in their 3-byte form (ED A0..BF xx).
func ValidStr(s string) bool {
	if utf8.ValidString(s) {
		return true
	}
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		if s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		i += n
	}
	return true
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
	fail := func(format string, args ...any) error {
		return &EncodeError{Path: at.String(), Reason: fmt.Sprintf(format, args...)}
	}
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
			return nil, fail("nil *big.Int")
		}
		return BigInt(rv.Interface().(*big.Int)), nil
	}
	switch rv.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			return None{}, nil
		}
		if rv.Kind() == reflect.Pointer {
			return nil, fail("unsupported type %s", rv.Type())
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
			return nil, fail("string is not valid UTF-8")
		}
		return Str(s), nil
	case reflect.Slice, reflect.Array:
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
				return nil, fail("cycle: a container contains itself")
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
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fail("dict key type %s is not str", rv.Type().Key())
		}
		if rv.IsNil() {
			return Dict{}, nil
		}
		p := uintptr(rv.UnsafePointer())
		if slices.Contains(c.open, p) {
			return nil, fail("cycle: a container contains itself")
		}
		c.open = append(c.open, p)
		defer func() { c.open = c.open[:len(c.open)-1] }()
		out := make(Dict, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			k := it.Key().String()
			if !ValidStr(k) {
				return nil, fail("dict key is not valid UTF-8")
			}
			v, err := c.convert(it.Value(), &pathStep{parent: at, key: Str(k), isKey: true})
			if err != nil {
				return nil, err
			}
			out[Str(k)] = v
		}
		return out, nil
	}
	return nil, fail("unsupported type %s", rv.Type())
}
