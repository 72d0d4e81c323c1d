package inventory

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// jsonRejects lists inputs ParseJSON refuses (as Python's json.loads
// does), with the offset of the first problem and a word of the reason.
var jsonRejects = []struct {
	name   string
	in     string
	offset int
	reason string
}{
	{"empty", ``, 0, "end of input"},
	{"only space", "  \n", 3, "end of input"},
	{"only BOM", "\xef\xbb\xbf", 3, "end of input"},
	{"trailing comma in object", `{"a":1,}`, 7, "string key"},
	{"trailing comma in array", `[1,]`, 3, `unexpected ']'`},
	{"missing comma", `[1 2]`, 3, `',' or ']'`},
	{"missing colon", `{"a" 1}`, 5, `':'`},
	{"number key", `{1:2}`, 1, "string key"},
	{"single quotes", `'a'`, 0, `unexpected '\''`},
	{"leading zero", `01`, 0, "leading zero"},
	{"negative leading zero", `-01`, 1, "leading zero"},
	{"plus sign", `+1`, 0, `unexpected '+'`},
	{"bare fraction", `.5`, 0, `unexpected '.'`},
	{"dot without digits", `1.`, 2, "digit after '.'"},
	{"exponent without digits", `1e`, 2, "exponent"},
	{"exponent sign only", `1e+`, 3, "exponent"},
	{"minus only", `-`, 1, "digit"},
	{"hex number", `0x10`, 1, "after the value"},
	{"two values", `1 2`, 2, "after the value"},
	{"NUL after value", "[1]\x00", 3, "after the value"},
	{"True", `True`, 0, `unexpected 'T'`},
	{"truncated null", `nul`, 3, "end of input"},
	{"lowercase nan", `nan`, 1, `unexpected 'a'`},
	{"truncated -Infinity", `-Inf`, 4, "end of input"},
	{"-NaN", `-NaN`, 1, "digit"},
	{"raw control character", "\"a\x01\"", 2, "control character"},
	{"raw newline", "\"a\nb\"", 2, "control character"},
	{"unknown escape", `"\q"`, 1, "invalid escape"},
	{"short \\u", `"\u12"`, 1, `\u escape`},
	{"bad hex in \\u", `"\u12G4"`, 1, `\u escape`},
	{"escape at end", `"\`, 2, "end of input"},
	{"unterminated string", `"abc`, 4, "end of input"},
	{"invalid UTF-8", "\"a\xff\"", 2, "invalid UTF-8"},
	{"overlong UTF-8", "\"\xc0\xaf\"", 1, "invalid UTF-8"},
	{"invalid UTF-8 outside a string", "[1,\xff]", 3, "byte 0xff"},
	{"unclosed array", `[1`, 2, "end of input"},
	{"unclosed object", `{"a":1`, 6, "end of input"},
	{"int too long", strings.Repeat("7", MaxIntDigits+1), 0, "more than 4300 digits"},
	{"comment", `[1] // x`, 4, "after the value"},
	{"unknown tag", `{"$set":[1]}`, 1, "unknown tag"},
	{"single dollar", `{"$":1}`, 1, "unknown tag"},
	{"tag after a key", `{"a":1,"$tuple":[]}`, 7, "only key"},
	{"key after a tag", `{"$tuple":[],"a":1}`, 12, "only key"},
	{"tag twice", `{"$bytes":"","$bytes":""}`, 12, "only key"},
	{"tuple of an object", `{"$tuple":{}}`, 10, "an array"},
	{"bytes of a number", `{"$bytes":1}`, 10, "hex digits"},
	{"bytes odd hex", `{"$bytes":"abc"}`, 10, "even number"},
	{"bytes not hex", `{"$bytes":"zz"}`, 10, "hex digits"},
	{"float short", `{"$float":"3ff00000"}`, 10, "16 hex digits"},
	{"float long", `{"$float":"3ff000000000000000"}`, 10, "16 hex digits"},
	{"str not UTF-8", `{"$str":"61ff"}`, 8, "byte 1"},
	{"dict of an object", `{"$dict":{}}`, 9, "pairs"},
	{"dict pair too short", `{"$dict":[["a"]]}`, 14, "',' between"},
	{"dict pair too long", `{"$dict":[["a",1,2]]}`, 16, "']' closing"},
	{"dict int key", `{"$dict":[[1,2]]}`, 11, "key is a int"},
	{"dict duplicate key", `{"$dict":[["a",1],["a",2]]}`, 19, "twice"},
}

func TestJSONRejects(t *testing.T) {
	for _, c := range jsonRejects {
		v, err := ParseJSON([]byte(c.in))
		var je *JSONError
		if !errors.As(err, &je) {
			t.Errorf("%s: ParseJSON(%q) = %v, %v; want *JSONError", c.name, c.in, v, err)
			continue
		}
		if je.Offset != c.offset || !strings.Contains(je.Reason, c.reason) {
			t.Errorf("%s: ParseJSON(%q): offset %d reason %q; want offset %d, reason mentioning %q", c.name, c.in, je.Offset, je.Reason, c.offset, c.reason)
		}
		if !strings.HasPrefix(err.Error(), "invalid JSON at byte ") {
			t.Errorf("%s: error text %q", c.name, err)
		}
	}
}

// TestJSONAccepts covers readings that the golden vectors cannot show as
// JSON text lines: raw surrogate bytes, a BOM, the digit limit.
func TestJSONAccepts(t *testing.T) {
	cases := []struct {
		name, in, wire string
	}{
		{"raw non-BMP", "\"😀\"", `["str","f09f9880"]`},
		{"raw surrogate bytes (surrogatepass)", "\"\xed\xa0\x80\"", `["str","eda080"]`},
		{"raw surrogate pair bytes stay two code points", "\"\xed\xa0\xbd\xed\xb8\x80\"", `["str","eda0bdedb880"]`},
		{"BOM", "\xef\xbb\xbf[1]", `["list",[["int","1"]]]`},
		{"escaped NUL", `"\u0000"`, `["str","00"]`},
		{"key with escapes", `{"\u0061\ud800":1}`, `["dict",[[["str","61eda080"],["int","1"]]]]`},
		{"max digits", strings.Repeat("9", MaxIntDigits), `["int","` + strings.Repeat("9", MaxIntDigits) + `"]`},
		{"minus zero int", `-0`, `["int","0"]`},
		{"exponent int is float", `1e0`, `["float64","3ff0000000000000"]`},
		{"huge exponent", `1e99999999999999999999`, `["float64","7ff0000000000000"]`},
		{"long mantissa rounds", `0.1000000000000000055511151231257827021181583404541015625`, `["float64","3fb999999999999a"]`},
		{"tuple", `{"$tuple": [1, {"$tuple": []}]}`, `["tuple",[["int","1"],["tuple",[]]]]`},
		{"bytes", `{"$bytes": "00fF"}`, `["bytes","00ff"]`},
		{"empty bytes", `{ "$bytes" : "" }`, `["bytes",""]`},
		{"float NaN payload", `{"$float": "7FF8000000000001"}`, `["float64","7ff8000000000001"]`},
		{"float minus zero", `{"$float": "8000000000000000"}`, `["float64","8000000000000000"]`},
		{"str of two surrogates", `{"$str": "eda0bdedb880"}`, `["str","eda0bdedb880"]`},
		{"escaped dollar key", `{"$$tuple": 1, "$$$": 2, "a$": 3}`, `["dict",[[["str","2424"],["int","2"]],[["str","247475706c65"],["int","1"]],[["str","6124"],["int","3"]]]]`},
		{"dict pairs", `{"$dict": [[{"$str": "eda0bdedb880"}, null], ["$x", []]]}`, `["dict",[[["str","2478"],["list",[]]],[["str","eda0bdedb880"],["none"]]]]`},
		{"empty dict pairs", `{"$dict": []}`, `["dict",[]]`},
		{"dict value tagged", `{"a": {"$bytes": "01"}}`, `["dict",[[["str","61"],["bytes","01"]]]]`},
	}
	for _, c := range cases {
		v, err := ParseJSON([]byte(c.in))
		if err != nil {
			t.Errorf("%s: ParseJSON(%q): %v", c.name, c.in, err)
			continue
		}
		got, err := Encode(v)
		if want := p + c.wire + "]"; err != nil || string(got) != want {
			t.Errorf("%s: ParseJSON(%q) encodes as %s, %v; want %s", c.name, c.in, got, err, want)
		}
	}
}

func TestJSONDepth(t *testing.T) {
	if _, err := ParseJSON([]byte(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth))); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	for _, n := range []int{MaxDepth + 1, 1_000_000} {
		_, err := ParseJSON([]byte(strings.Repeat(`{"a":[`, n)))
		var je *JSONError
		if !errors.As(err, &je) || !strings.Contains(je.Reason, "nesting") {
			t.Errorf("depth %d: %v, want a nesting error", n, err)
		}
	}
}

// jsonNumber is the grammar of a JSON number, to tell Python's int literals
// from its floats when converting encoding/json's output.
var jsonInt = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// fromStdJSON converts what encoding/json decodes (with UseNumber) into a
// Value by the plain-form rules, as an independent reading to compare with.
func fromStdJSON(t *testing.T, x any) Value {
	switch x := x.(type) {
	case nil:
		return None{}
	case bool:
		return Bool(x)
	case string:
		return Str(x)
	case json.Number:
		if jsonInt.MatchString(string(x)) {
			n, ok := new(big.Int).SetString(string(x), 10)
			if !ok {
				t.Fatalf("bad int %q", x)
			}
			return BigInt(n)
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			t.Fatalf("bad float %q: %v", x, err)
		}
		return FloatOf(f)
	case []any:
		out := List{}
		for _, e := range x {
			out = append(out, fromStdJSON(t, e))
		}
		return out
	case map[string]any:
		out := Dict{}
		for k, e := range x {
			out[Str(k)] = fromStdJSON(t, e)
		}
		return out
	}
	t.Fatalf("unexpected %T", x)
	return nil
}

// FuzzParseJSON checks that ParseJSON never panics, reports offsets inside
// the input, produces values that encode, and agrees with encoding/json on
// the grammar and, where encoding/json can carry the strings (valid UTF-8,
// no \u escapes), on the values.
func FuzzParseJSON(f *testing.F) {
	for _, c := range jsonRejects {
		f.Add([]byte(c.in))
	}
	for _, s := range []string{
		`{"rows": 32, "cols": 64}`, `[1, 1.0, -0, -0.0, 1e2, 12345678901234567890123]`,
		`"\ud83d\ude00"`, `"\ud800x"`, `{"a": [true, null, "\u00e9"]}`, `1E400`, `-1e-400`,
		`[NaN, Infinity, -Infinity]`, `{"a":1,"a":{"b":[]}}`, "\"\xed\xa0\x80\"", `"\"\\\/\b\f\n\r\t"`,
		`{"$tuple": [{"$bytes": "00"}, {"$float": "7ff8000000000001"}, {"$str": "eda0bdedb880"}]}`,
		`{"$dict": [["$$a", {"$tuple": []}]], "$$b": 1}`, `{"$$a": {"$dict": [[{"$str": "61"}, 1]]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseJSON(b)
		if err != nil {
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("error %v is not a *JSONError", err)
			}
			if je.Offset < 0 || je.Offset > len(b) {
				t.Fatalf("offset %d outside the input of %d bytes", je.Offset, len(b))
			}
		} else {
			enc, err := Encode(v)
			if err != nil {
				t.Fatalf("Encode(ParseJSON(%q)): %v", b, err)
			}
			// The encoding is canonical: Decode takes it back exactly.
			dv, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode(Encode(ParseJSON(%q))): %v", b, err)
			}
			if again, _ := Encode(dv); !bytes.Equal(again, enc) {
				t.Fatalf("Encode(Decode(%s)) = %s", enc, again)
			}
			// Its JSON form reads back as the same record.
			checkJSONRoundTrip(t, v)
		}

		// Compare with encoding/json where both read the same language:
		// no BOM, no Python constants, no limits reached.
		if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) || bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Infinity")) || bytes.Contains(b, []byte(`$`)) {
			return
		}
		stdOK := json.Valid(b)
		if err == nil && !stdOK {
			t.Fatalf("ParseJSON accepts %q, encoding/json does not", b)
		}
		if err != nil && stdOK {
			var je *JSONError
			errors.As(err, &je)
			limit := strings.Contains(je.Reason, "nesting") || strings.Contains(je.Reason, "digits") || strings.Contains(je.Reason, "UTF-8") || strings.Contains(je.Reason, "byte 0x")
			if !limit {
				t.Fatalf("encoding/json accepts %q, ParseJSON does not: %v", b, err)
			}
		}
		if err != nil || !stdOK || !utf8.Valid(b) || bytes.Contains(b, []byte(`\u`)) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		want, _ := Encode(fromStdJSON(t, x))
		got, _ := Encode(v)
		if !bytes.Equal(got, want) {
			t.Fatalf("ParseJSON(%q)\n got %s\nwant %s (encoding/json's reading)", b, got, want)
		}
	})
}
