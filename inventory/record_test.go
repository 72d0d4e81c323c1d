package inventory

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func bigOf(t *testing.T, s string) Int {
	t.Helper()
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad big int %q", s)
	}
	return BigInt(x)
}

// goldenValues gives the Go value of every golden vector that is not a
// plain JSON line; the wire bytes are those of testdata/golden.jsonl.
func goldenValues(t *testing.T) map[string]Value {
	s := func(x string) Value { return Str(x) }
	sur := func(cps ...rune) Value { // a Str of explicit code points
		var b []byte
		for _, r := range cps {
			var ok bool
			if b, ok = AppendCodePoint(b, r); !ok {
				t.Fatalf("bad code point %x", r)
			}
		}
		return Str(b)
	}
	i := func(x int64) Value { return IntOf(x) }
	return map[string]Value{
		"none":                        None{},
		"bool true":                   Bool(true),
		"bool false":                  Bool(false),
		"int 0":                       Int{},
		"int 1":                       i(1),
		"int -1":                      i(-1),
		"int max int64":               i(math.MaxInt64),
		"int min int64":               i(math.MinInt64),
		"int 2**63":                   bigOf(t, "9223372036854775808"),
		"int -(2**63)-1":              bigOf(t, "-9223372036854775809"),
		"int max uint64":              bigOf(t, "18446744073709551615"),
		"int 10**30":                  bigOf(t, "1000000000000000000000000000000"),
		"int -(10**30)":               bigOf(t, "-1000000000000000000000000000000"),
		"float 1.0":                   FloatOf(1),
		"float 0.0":                   FloatOf(0),
		"float -0.0":                  FloatOf(math.Copysign(0, -1)),
		"float -1.5":                  FloatOf(-1.5),
		"float 0.1":                   FloatOf(0.1),
		"float nan":                   Float(0x7ff8000000000000),
		"float nan payload 1":         FloatOf(math.NaN()), // Go's NaN carries payload 1
		"float signaling nan":         Float(0x7ff0000000000001),
		"float negative nan":          Float(0xfff8000000000000),
		"float +inf":                  FloatOf(math.Inf(1)),
		"float -inf":                  FloatOf(math.Inf(-1)),
		"float smallest subnormal":    FloatOf(math.SmallestNonzeroFloat64),
		"float max":                   FloatOf(math.MaxFloat64),
		"str empty":                   s(""),
		"str rows":                    s("rows"),
		"str NUL":                     s("\x00"),
		"str quote backslash":         s(`"\`),
		"str e-acute":                 s("é"),
		"str U+FFFF":                  s("\uffff"),
		"str U+10000":                 s("\U00010000"),
		"str U+10FFFF":                s("\U0010ffff"),
		"str non-BMP U+1F600":         s("😀"),
		"str explicit surrogate pair": sur(0xd83d, 0xde00),
		"str lone high surrogate":     sur(0xd800),
		"str lone low surrogate":      sur(0xdfff),
		"str surrogateescape byte":    StrFromOSBytes("\xff"),
		"bytes empty":                 Bytes{},
		"bytes rows":                  Bytes("rows"),
		"bytes 00ff":                  Bytes{0, 0xff},
		"list empty":                  List{},
		"tuple empty":                 T(),
		"list 1 2":                    List{i(1), i(2)},
		"tuple 1 2":                   T(i(1), i(2)),
		"list of empty list":          List{List{}},
		"tuple of list and tuple":     T(List{None{}}, T(Bool(false))),
		"dict empty":                  Dict{},
		"dict rows cols":              Dict{"rows": i(32), "cols": i(64)},
		"dict key order":              Dict{"b": i(4), "ab": i(3), "a": i(2), "Z": i(1), "": i(0)},
		"dict key order surrogates":   dictOf(t, sur(0x10000), i(6), sur(0xffff), i(5), sur(0xe000), i(4), sur(0xdfff), i(3), sur(0xd800), i(2), sur(0xd7ff), i(1)),
		"dict nested":                 Dict{"a": Dict{"b": List{None{}, Bytes{0}}}},
	}
}

func dictOf(t *testing.T, kv ...Value) Dict {
	d := Dict{}
	for j := 0; j < len(kv); j += 2 {
		d[kv[j].(Str)] = kv[j+1]
	}
	return d
}

// TestRecordGolden checks every golden vector (the wire bytes were written
// by hand from docs/design.md's rules, the digests are their SHA-256) and that
// each Go value encodes to its vector.
func TestRecordGolden(t *testing.T) {
	vs := readVectors(t, "golden.jsonl")
	values := goldenValues(t)
	seen := map[string]bool{}
	for _, v := range vs {
		checkVector(t, v)
		if seen[v.Name] {
			t.Errorf("golden name %q repeated", v.Name)
		}
		seen[v.Name] = true
		val, ok := values[v.Name]
		if v.JSON != nil {
			continue
		}
		if !ok {
			t.Errorf("golden %q has no Go value in goldenValues", v.Name)
			continue
		}
		got, err := Encode(val)
		if err != nil || string(got) != v.Wire {
			t.Errorf("%s: Encode = %s, %v\nwant %s", v.Name, got, err, v.Wire)
		}
		if d := MustDigest(val); d.String() != v.Digest {
			t.Errorf("%s: Digest = %s, want %s", v.Name, d, v.Digest)
		}
	}
	for name := range values {
		if !seen[name] {
			t.Errorf("Go value %q has no golden vector", name)
		}
	}
}

// TestRecordDistinctions proves the distinctions issue 2 demands, and that
// dict insertion order does not matter.
func TestRecordDistinctions(t *testing.T) {
	digest := func(v Value) Sum {
		t.Helper()
		d, err := Digest(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pairOfSurrogates, _ := AppendCodePoint(nil, 0xd83d)
	pairOfSurrogates, _ = AppendCodePoint(pairOfSurrogates, 0xde00)
	groups := []struct {
		name   string
		values []Value
	}{
		{"True/1/1.0", []Value{Bool(true), IntOf(1), FloatOf(1)}},
		{"False/0/0.0/-0.0/None", []Value{Bool(false), IntOf(0), FloatOf(0), FloatOf(math.Copysign(0, -1)), None{}}},
		{"NaN payloads", []Value{Float(0x7ff8000000000000), Float(0x7ff8000000000001), Float(0x7ff0000000000001), Float(0xfff8000000000000)}},
		{"non-BMP vs explicit surrogate pair", []Value{Str("😀"), Str(pairOfSurrogates)}},
		{"tuple vs list", []Value{T(IntOf(1), IntOf(2)), List{IntOf(1), IntOf(2)}}},
		{"empty tuple vs empty list vs empty dict", []Value{T(), List{}, Dict{}}},
		{"bytes vs str", []Value{Bytes("rows"), Str("rows")}},
		{"int vs str of digits", []Value{IntOf(32), Str("32")}},
		{"nested list vs flat list", []Value{List{List{IntOf(1)}, IntOf(2)}, List{IntOf(1), IntOf(2)}}},
	}
	for _, g := range groups {
		seen := map[Sum]int{}
		for i, v := range g.values {
			d := digest(v)
			if j, dup := seen[d]; dup {
				t.Errorf("%s: values %d and %d have the same digest %s", g.name, j, i, d)
			}
			seen[d] = i
		}
	}
	// Dict order: the same pairs inserted in either order, and read from
	// JSON text in either order, are one record.
	a := Dict{}
	a["rows"], a["cols"] = IntOf(32), IntOf(64)
	b := Dict{}
	b["cols"], b["rows"] = IntOf(64), IntOf(32)
	ja, err := ParseJSON([]byte(`{"rows":32,"cols":64}`))
	if err != nil {
		t.Fatal(err)
	}
	jb, err := ParseJSON([]byte(`{"cols":64,"rows":32}`))
	if err != nil {
		t.Fatal(err)
	}
	want := digest(a)
	for i, v := range []Value{b, ja, jb} {
		if d := digest(v); d != want {
			t.Errorf("rows/cols variant %d: digest %s, want %s", i, d, want)
		}
	}
	if digest(Dict{"rows": IntOf(32)}) == want {
		t.Error("a dict with fewer pairs has the same digest")
	}
}

// TestRecordDigestIsSHA256 checks Digest against an independent SHA-256
// of Encode's bytes on a record mixing every type.
func TestRecordDigestIsSHA256(t *testing.T) {
	v := Dict{"a": List{None{}, Bool(true), IntOf(-3), FloatOf(2.5), Str("x"), Bytes{1}, T(Dict{})}}
	b, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := MustDigest(v), Sum(sha256.Sum256(b)); got != want {
		t.Errorf("Digest = %s, sha256(Encode) = %s", got, want)
	}
	prefix := []byte("prefix")
	ab, err := AppendEncode(prefix, v)
	if err != nil || string(ab) != "prefix"+string(b) {
		t.Errorf("AppendEncode = %q, %v", ab, err)
	}
}

type notAValue struct{}

func (notAValue) Kind() Kind { return KindNone }

func TestRecordEncodeErrors(t *testing.T) {
	cyc := make(List, 2)
	cyc[0] = IntOf(1)
	cyc[1] = Dict{"x": cyc}
	selfDict := Dict{}
	selfDict["self"] = selfDict
	tup := make(Tuple, 1)
	tup[0] = List{tup}
	cases := []struct {
		name string
		v    Value
		path string
		msg  string
	}{
		{"list cycle through a dict", cyc, `[1]["x"]`, "cycle"},
		{"dict containing itself", selfDict, `["self"]`, "cycle"},
		{"tuple cycle", tup, `[0][0]`, "cycle"},
		{"nil value", List{None{}, nil}, `[1]`, "nil Value"},
		{"nil root", nil, ``, "nil Value"},
		{"foreign Value type", Dict{"k": List{notAValue{}}}, `["k"][0]`, "unsupported type inventory.notAValue"},
		{"invalid str", List{Str("ok"), Str("\xff")}, `[1]`, "not code points"},
		{"invalid dict key", Dict{"\xc0\xaf": None{}}, `["\xc0\xaf"]`, "not code points"}, // strconv.Quote escapes the bytes
	}
	for _, c := range cases {
		_, err := Encode(c.v)
		var ee *EncodeError
		if !errors.As(err, &ee) {
			t.Errorf("%s: Encode error %v, want *EncodeError", c.name, err)
			continue
		}
		if ee.Path != c.path {
			t.Errorf("%s: Path %q, want %q", c.name, ee.Path, c.path)
		}
		if !strings.Contains(ee.Reason, c.msg) {
			t.Errorf("%s: Reason %q, want it to mention %q", c.name, ee.Reason, c.msg)
		}
		if _, err := Digest(c.v); err == nil {
			t.Errorf("%s: Digest succeeded", c.name)
		}
	}
}

// TestValidStr: surrogates in their 3-byte form are code points; other
// bytes that do not decode, and truncated surrogates, are not.
func TestValidStr(t *testing.T) {
	for s, want := range map[string]bool{
		"":                         true,
		"abc é 😀":                  true,
		"\xed\xa0\x80":             true, // U+D800
		"a\xed\xbf\xbfb":           true, // U+DFFF
		"\xed\xa0\x80\xed\xb0\x80": true, // a pair, kept as two code points
		"\xff":                     false,
		"\xc0\xaf":                 false, // overlong
		"\xed\xa0":                 false, // truncated surrogate
		"\xed\xa0\x80\xff":         false,
		"\xf4\x90\x80\x80":         false, // above U+10FFFF
	} {
		if got := ValidStr(s); got != want {
			t.Errorf("ValidStr(%+q) = %v, want %v", s, got, want)
		}
	}
}

// TestRecordSharedSubslices checks that a container holding a shorter
// slice of its own array is no cycle: the values are finite.
func TestRecordSharedSubslices(t *testing.T) {
	x := make(List, 2)
	x[0] = IntOf(1)
	x[1] = x[:1]
	got, err := Encode(x)
	want := `["pypto.identity",1,["list",[["int","1"],["list",[["int","1"]]]]]]`
	if err != nil || string(got) != want {
		t.Errorf("Encode = %s, %v; want %s", got, err, want)
	}
	// The same container twice, side by side, is no cycle either.
	shared := List{IntOf(7)}
	if _, err := Encode(List{shared, shared, Dict{"a": shared}}); err != nil {
		t.Errorf("shared container: %v", err)
	}
}

func TestRecordFromGo(t *testing.T) {
	x := map[string]any{
		"n":     nil,
		"b":     true,
		"i":     -5,
		"u":     uint64(math.MaxUint64),
		"f32":   float32(0.5),
		"s":     "é",
		"raw":   []byte{1, 2},
		"arr":   [2]byte{3, 4},
		"list":  []any{1, "x", []int{2}},
		"big":   big.NewInt(7),
		"value": T(IntOf(1)),
		"inner": map[string][]string{"k": {"v"}},
	}
	v, err := FromGo(x)
	if err != nil {
		t.Fatal(err)
	}
	wantV := Dict{
		"n": None{}, "b": Bool(true), "i": IntOf(-5), "u": bigOf(t, "18446744073709551615"),
		"f32": FloatOf(0.5), "s": Str("é"), "raw": Bytes{1, 2}, "arr": Bytes{3, 4},
		"list": List{IntOf(1), Str("x"), List{IntOf(2)}}, "big": IntOf(7),
		"value": T(IntOf(1)), "inner": Dict{"k": List{Str("v")}},
	}
	if MustDigest(v) != MustDigest(wantV) {
		gb, _ := Encode(v)
		wb, _ := Encode(wantV)
		t.Errorf("FromGo:\n got %s\nwant %s", gb, wb)
	}

	cycSlice := []any{nil}
	cycSlice[0] = cycSlice
	cycMap := map[string]any{}
	cycMap["m"] = []any{cycMap}
	n := 3
	bad := []struct {
		name string
		x    any
		path string
		msg  string
	}{
		{"int keys", map[int]int{1: 2}, "", "not str"},
		{"nested int keys", []any{map[float64]bool{}}, "[0]", "not str"},
		{"slice cycle", cycSlice, "[0]", "cycle"},
		{"map cycle", cycMap, `["m"][0]`, "cycle"},
		{"channel", map[string]any{"c": make(chan int)}, `["c"]`, "unsupported type"},
		{"func", []any{1, func() {}}, "[1]", "unsupported type"},
		{"pointer", &n, "", "unsupported type"},
		{"struct", struct{ A int }{1}, "", "unsupported type"},
		{"invalid UTF-8 string", []string{"\xff"}, "[0]", "not valid UTF-8"},
		{"nil big.Int", []*big.Int{nil}, "[0]", "nil *big.Int"},
	}
	for _, c := range bad {
		_, err := FromGo(c.x)
		var ee *EncodeError
		if !errors.As(err, &ee) {
			t.Errorf("%s: FromGo error %v, want *EncodeError", c.name, err)
			continue
		}
		if ee.Path != c.path || !strings.Contains(ee.Reason, c.msg) {
			t.Errorf("%s: got path %q reason %q; want path %q reason mentioning %q", c.name, ee.Path, ee.Reason, c.path, c.msg)
		}
	}
}

// randomValue builds a random record of every type, with surrogates,
// NaN payloads and big ints, at most depth levels deep.
func randomValue(r *rand.Rand, depth int) Value {
	n := 7
	if depth > 0 {
		n = 10
	}
	switch r.IntN(n) {
	case 0:
		return None{}
	case 1:
		return Bool(r.IntN(2) == 0)
	case 2:
		if r.IntN(3) == 0 {
			x := new(big.Int).Lsh(big.NewInt(r.Int64()), uint(r.IntN(200)))
			if r.IntN(2) == 0 {
				x.Neg(x)
			}
			return BigInt(x)
		}
		return IntOf(r.Int64() - r.Int64())
	case 3:
		return Float(r.Uint64())
	case 4:
		return randomStr(r)
	case 5:
		b := make(Bytes, r.IntN(6))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case 6:
		return Str("")
	case 7, 8:
		items := make([]Value, r.IntN(5))
		for i := range items {
			items[i] = randomValue(r, depth-1)
		}
		if r.IntN(2) == 0 {
			return List(items)
		}
		return Tuple(items)
	default:
		d := Dict{}
		for range r.IntN(5) {
			d[randomStr(r)] = randomValue(r, depth-1)
		}
		return d
	}
}

func randomStr(r *rand.Rand) Str {
	var b []byte
	for range r.IntN(5) {
		var cp rune
		switch r.IntN(4) {
		case 0:
			cp = rune(r.IntN(0x80))
		case 1:
			cp = 0xD800 + rune(r.IntN(0x800)) // surrogates
		case 2:
			cp = rune(r.IntN(0x10000))
		default:
			cp = rune(r.IntN(0x110000))
		}
		b, _ = AppendCodePoint(b, cp)
	}
	return Str(b)
}

// TestRecordRandomRoundTrip encodes random records of every type and
// checks that Decode takes each encoding back to the same bytes.
func TestRecordRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		v := randomValue(r, 4)
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("%d: Encode: %v", i, err)
		}
		dv, err := Decode(enc)
		if err != nil {
			t.Fatalf("%d: Decode(%s): %v", i, enc, err)
		}
		again, err := Encode(dv)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("%d: Encode(Decode(%s)) = %s, %v", i, enc, again, err)
		}
		if MustDigest(dv) != MustDigest(v) {
			t.Fatalf("%d: digest changed through Decode", i)
		}
	}
}
