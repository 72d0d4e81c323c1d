package inventory

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFormatJSON(t *testing.T) {
	cases := []struct {
		name string
		v    Value
		want string
	}{
		{"none", None{}, `null`},
		{"bools", List{Bool(true), Bool(false)}, `[true, false]`},
		{"ints", List{IntOf(0), IntOf(-7), BigInt(new(big.Int).Lsh(big.NewInt(1), 70))}, `[0, -7, 1180591620717411303424]`},
		{"floats as Python's repr", List{FloatOf(1), FloatOf(math.Copysign(0, -1)), FloatOf(0.1), FloatOf(1e16), FloatOf(1e15), FloatOf(1e-5), FloatOf(0.0001), FloatOf(1.5e300)},
			`[1.0, -0.0, 0.1, 1e+16, 1000000000000000.0, 1e-05, 0.0001, 1.5e+300]`},
		{"non-finite floats", List{FloatOf(math.Inf(-1)), Float(0x7ff8000000000001)}, `[{"$float": "fff0000000000000"}, {"$float": "7ff8000000000001"}]`},
		{"escapes", Str("a\"\\\n\r\t\b\f\x01\x7fé😀"), `"a\"\\\n\r\t\b\f\u0001\u007f\u00e9\ud83d\ude00"`},
		{"lone surrogates", Str("\xed\xa0\x80x\xed\xb0\x80"), `"\ud800x\udc00"`},
		{"low then high surrogate", Str("\xed\xb0\x80\xed\xa0\x80"), `"\udc00\ud800"`},
		{"high then low surrogate", Str("\xed\xa0\xbd\xed\xb8\x80"), `{"$str": "eda0bdedb880"}`},
		{"bytes", Bytes{0, 0xff}, `{"$bytes": "00ff"}`},
		{"tuple", Tuple{List{}, Tuple{}}, `{"$tuple": [[], {"$tuple": []}]}`},
		{"dict sorted, dollar keys doubled", Dict{"b": IntOf(1), "$a": IntOf(2), "a": Dict{}}, `{"$$a": 2, "a": {}, "b": 1}`},
		{"dict with a joining key", Dict{"\xed\xa0\xbd\xed\xb8\x80": None{}, "$": IntOf(1)}, `{"$dict": [["$", 1], [{"$str": "eda0bdedb880"}, null]]}`},
	}
	for _, c := range cases {
		got, err := FormatJSON(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: FormatJSON = %s, %v; want %s", c.name, got, err, c.want)
			continue
		}
		back, err := ParseJSON(got)
		if err != nil {
			t.Errorf("%s: ParseJSON(%s): %v", c.name, got, err)
			continue
		}
		if a, b := MustDigest(back), MustDigest(c.v); a != b {
			t.Errorf("%s: %s reads back as a different record", c.name, got)
		}
	}
}

func TestFormatJSONRefuses(t *testing.T) {
	l := List{nil}
	for _, v := range []Value{nil, l, Str("\xff"), Dict{"\xff": None{}}} {
		if got, err := FormatJSON(v); err == nil {
			t.Errorf("FormatJSON(%#v) = %s, want an error", v, got)
		}
	}
	cyc := List{None{}}
	cyc[0] = cyc
	if _, err := FormatJSON(cyc); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("FormatJSON(cycle): %v, want a cycle error", err)
	}
}

// TestJSONRoundTripRandom checks that every record goes wire -> JSON ->
// wire to the same bytes: random records of every type, lone and adjacent
// surrogates, NaN payloads, bytes, tuples, keys starting with '$'.
func TestJSONRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		v := randomValue(r, 4)
		if r.IntN(4) == 0 {
			v = Dict{"$" + randomStr(r): v, "$$": None{}}
		}
		checkJSONRoundTrip(t, v)
		if t.Failed() {
			t.Fatalf("value %d", i)
		}
	}
}

func checkJSONRoundTrip(t *testing.T, v Value) {
	t.Helper()
	enc, err := Encode(v)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	j, err := FormatJSON(v)
	if err != nil {
		t.Fatalf("FormatJSON(%s): %v", enc, err)
	}
	back, err := ParseJSON(j)
	if err != nil {
		t.Fatalf("ParseJSON(FormatJSON(%s)) = ParseJSON(%s): %v", enc, j, err)
	}
	again, err := Encode(back)
	if err != nil || !bytes.Equal(again, enc) {
		t.Fatalf("wire %s\n json %s\n back %s, %v", enc, j, again, err)
	}
}

// TestJSONRoundTripDepth checks that records nested MaxDepth deep, tuples
// and "$dict" dicts included, print and read back.
func TestJSONRoundTripDepth(t *testing.T) {
	for _, leaf := range []Value{Bytes{1}, Float(0x7ff0000000000001), Str("\xed\xa0\x80\xed\xb0\x80"), None{}} {
		for _, wrap := range []func(Value) Value{
			func(v Value) Value { return Tuple{v} },
			func(v Value) Value { return List{v} },
			func(v Value) Value { return Dict{"$k": v} },
			func(v Value) Value { return Dict{"\xed\xa0\x80\xed\xb0\x80": v} },
		} {
			v := leaf
			for range MaxDepth {
				v = wrap(v)
			}
			checkJSONRoundTrip(t, v)
			if _, err := ParseJSON(append(append([]byte(`[`), mustFormat(t, v)...), ']')); err == nil {
				t.Errorf("one more level than MaxDepth accepted")
			}
		}
	}
}

func mustFormat(t *testing.T, v Value) []byte {
	t.Helper()
	b, err := FormatJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
