package inventory

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// p is the prefix of every record; the value starts at offset 20.
const p = `["pypto.identity",1,`

func TestDecodePrefixLength(t *testing.T) {
	if len(p) != 20 {
		t.Fatalf("len(p) = %d; the offsets below assume 20", len(p))
	}
}

// decodeRejects lists non-canonical inputs with the offset of their first
// problem and a word the reason must contain.
var decodeRejects = []struct {
	name   string
	in     string
	offset int
	reason string
}{
	{"empty", ``, 0, "end of input"},
	{"object", `{}`, 0, `'{'`},
	{"leading space", ` ` + p + `["none"]]`, 0, "whitespace"},
	{"wrong magic", `["pypto.ident",1,["none"]]`, 13, `unexpected '"'`},
	{"space after comma", `["pypto.identity", 1,["none"]]`, 18, "whitespace"},
	{"schema 2", `["pypto.identity",2,["none"]]`, 18, "unsupported schema 2"},
	{"schema 01", `["pypto.identity",01,["none"]]`, 18, "unsupported schema 01"},
	{"schema 10", `["pypto.identity",10,["none"]]`, 18, "unsupported schema 10"},
	{"schema string", `["pypto.identity","1",["none"]]`, 18, "schema"},
	{"no value", `["pypto.identity",1]`, 19, `unexpected ']'`},
	{"truncated", p + `["none"]`, 28, "end of input"},
	{"trailing space", p + `["none"]] `, 29, "after the record"},
	{"trailing newline", p + `["none"]]` + "\n", 29, "after the record"},
	{"two records", p + `["none"]]` + p + `["none"]]`, 29, "after the record"},
	{"unknown tag", p + `["set",[]]]`, 22, `unknown tag "set"`},
	{"tag case", p + `["Tuple",[]]]`, 22, `unknown tag "Tuple"`},
	{"long tag", p + `["float64x","0"]]`, 22, "unknown tag"},
	{"tag not a string", p + `[none]]`, 21, `unexpected 'n'`},
	{"none with payload", p + `["none",null]]`, 27, `unexpected ','`},
	{"bool as int", p + `["bool",1]]`, 28, "true or false"},
	{"bool capitalized", p + `["bool",True]]`, 28, "true or false"},
	{"bool misspelled", p + `["bool",ture]]`, 29, `unexpected 'u'`},
	{"int leading zeros", p + `["int","007"]]`, 28, "leading zero"},
	{"int negative leading zero", p + `["int","-007"]]`, 29, "leading zero"},
	{"int minus zero", p + `["int","-0"]]`, 28, `"-0"`},
	{"int empty", p + `["int",""]]`, 28, "decimal digit"},
	{"int plus", p + `["int","+1"]]`, 28, "decimal digit"},
	{"int minus only", p + `["int","-"]]`, 29, "decimal digit"},
	{"int fraction", p + `["int","1.0"]]`, 29, `unexpected '.'`},
	{"int unquoted", p + `["int",1]]`, 27, `unexpected '1'`},
	{"int too long", p + `["int","` + strings.Repeat("9", MaxIntDigits+1) + `"]]`, 28, "more than 4300 digits"},
	{"float short", p + `["float64","3ff"]]`, 35, "16 lowercase hex digits"},
	{"float empty", p + `["float64",""]]`, 32, "16 lowercase hex digits"},
	{"float long", p + `["float64","3ff00000000000000"]]`, 48, "more than 16 hex digits"},
	{"float uppercase", p + `["float64","3FF0000000000000"]]`, 33, "uppercase hex"},
	{"float 0x", p + `["float64","0x3ff0000000000000"]]`, 33, `unexpected 'x'`},
	{"float decimal", p + `["float64",1.0]]`, 31, `unexpected '1'`},
	{"float tag float", p + `["float","3ff0000000000000"]]`, 22, `unknown tag "float"`},
	{"str uppercase hex", p + `["str","4A"]]`, 29, "uppercase hex"},
	{"str odd hex", p + `["str","abc"]]`, 31, "odd number"},
	{"str not hex", p + `["str","rows"]]`, 28, "lowercase hex digit"},
	{"str json escape", p + `["str","\u0061"]]`, 28, `'\\'`},
	{"str unterminated", p + `["str","61`, 30, "end of input"},
	{"str invalid utf8", p + `["str","61ff"]]`, 30, "not valid code points"},
	{"str overlong", p + `["str","c0af"]]`, 28, "not valid code points"},
	{"str above U+10FFFF", p + `["str","f4908080"]]`, 28, "not valid code points"},
	{"str truncated sequence", p + `["str","6162e282"]]`, 32, "not valid code points"},
	{"str surrogate truncated", p + `["str","eda0"]]`, 28, "not valid code points"},
	{"str non-ASCII byte", p + `["str","é"]]`, 28, "byte 0xc3"},
	{"bytes uppercase", p + `["bytes","FF"]]`, 30, "uppercase hex"},
	{"bytes odd", p + `["bytes","0"]]`, 31, "odd number"},
	{"list trailing comma", p + `["list",[["none"],]]]`, 38, `unexpected ']'`},
	{"list leading comma", p + `["list",[,["none"]]]]`, 29, `unexpected ','`},
	{"list space", p + `["list",[ ]]]`, 29, "whitespace"},
	{"list unclosed", p + `["list",[["none"]]]`, 39, "end of input"},
	{"list not nested", p + `["list",["none"]]]`, 29, `unexpected '"'`},
	{"tuple as list of values", p + `["tuple",["int","1"]]]`, 30, `unexpected '"'`},
	{"dict unsorted", p + `["dict",[[["str","62"],["none"]],[["str","61"],["none"]]]]]`, 54, "not sorted"},
	{"dict duplicate", p + `["dict",[[["str","61"],["none"]],[["str","61"],["none"]]]]]`, 54, "duplicate"},
	{"dict prefix sorts first", p + `["dict",[[["str","6162"],["none"]],[["str","61"],["none"]]]]]`, 56, "not sorted"},
	{"dict surrogate after private use", p + `["dict",[[["str","ee8080"],["none"]],[["str","eda080"],["none"]]]]]`, 58, "not sorted"},
	{"dict int key", p + `["dict",[[["int","1"],["none"]]]]]`, 30, `dict key is tagged "int"`},
	{"dict bytes key", p + `["dict",[[["bytes","61"],["none"]]]]]`, 30, `dict key is tagged "bytes"`},
	{"dict list key", p + `["dict",[[["list",[]],["none"]]]]]`, 30, `dict key is tagged "list"`},
	{"dict pair of three", p + `["dict",[[["str","61"],["none"],["none"]]]]]`, 51, `unexpected ','`},
	{"dict pair of one", p + `["dict",[[["str","61"]]]]]`, 42, `unexpected ']'`},
	{"dict flat pairs", p + `["dict",[["str","61"],["none"]]]]`, 30, `unexpected '"'`},
	{"dict as object", p + `["dict",{}]]`, 28, `unexpected '{'`},
	{"NUL byte", p + "[\"none\"\x00]]", 27, `'\x00'`},
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range decodeRejects {
		v, err := Decode([]byte(c.in))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: Decode(%q) = %v, %v; want *DecodeError", c.name, c.in, v, err)
			continue
		}
		if de.Offset != c.offset || !strings.Contains(de.Reason, c.reason) {
			t.Errorf("%s: Decode(%q): offset %d reason %q; want offset %d, reason mentioning %q", c.name, c.in, de.Offset, de.Reason, c.offset, c.reason)
		}
		if !strings.HasPrefix(err.Error(), "invalid identity record at byte ") {
			t.Errorf("%s: error text %q", c.name, err)
		}
	}
}

// TestDecodeDepth checks the nesting limit: MaxDepth nested lists decode,
// one more is rejected at the tag of the container that is too deep, and
// a hostile depth returns an error instead of exhausting the stack.
func TestDecodeDepth(t *testing.T) {
	nested := func(n int) []byte {
		return []byte(p + strings.Repeat(`["list",[`, n) + strings.Repeat(`]]`, n) + `]`)
	}
	ok := nested(MaxDepth)
	v, err := Decode(ok)
	if err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	if b, _ := Encode(v); !bytes.Equal(b, ok) {
		t.Errorf("depth %d does not re-encode", MaxDepth)
	}
	for _, n := range []int{MaxDepth + 1, 1_000_000} {
		_, err = Decode(nested(n))
		var de *DecodeError
		if want := len(p) + MaxDepth*len(`["list",[`) + 2; !errors.As(err, &de) || de.Offset != want {
			t.Errorf("depth %d: %v; want a *DecodeError at %d", n, err, want)
		}
	}
}

func TestDecodeTooLong(t *testing.T) {
	b := make([]byte, MaxRecordBytes+1)
	_, err := Decode(b)
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != MaxRecordBytes || !strings.Contains(de.Reason, "longer than") {
		t.Errorf("Decode of %d bytes: %v", len(b), err)
	}
}

// TestDecodeValues checks that Decode builds the right Go values, not only
// bytes that re-encode.
func TestDecodeValues(t *testing.T) {
	v, err := Decode([]byte(p + `["dict",[[["str","61"],["tuple",[["int","-9223372036854775808"],["int","9223372036854775808"],["float64","8000000000000000"],["bytes","00ff"],["str","eda080"],["bool",true],["none"],["list",[]]]]]]]]`))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := v.(Dict)
	if !ok || len(d) != 1 {
		t.Fatalf("got %#v, want a Dict of one pair", v)
	}
	tup, ok := d["a"].(Tuple)
	if !ok || len(tup) != 8 {
		t.Fatalf("d[a] = %#v, want a Tuple of 8", d["a"])
	}
	if i, ok := tup[0].(Int); !ok || i.String() != "-9223372036854775808" {
		t.Errorf("tup[0] = %#v", tup[0])
	} else if _, small := i.Int64(); !small {
		t.Error("min int64 decoded as a big Int")
	}
	if i, ok := tup[1].(Int); !ok || i.String() != "9223372036854775808" {
		t.Errorf("tup[1] = %#v", tup[1])
	}
	if f, ok := tup[2].(Float); !ok || f != Float(0x8000000000000000) {
		t.Errorf("tup[2] = %#v", tup[2])
	}
	if b, ok := tup[3].(Bytes); !ok || !bytes.Equal(b, []byte{0, 0xff}) {
		t.Errorf("tup[3] = %#v", tup[3])
	}
	if s, ok := tup[4].(Str); !ok || s != "\xed\xa0\x80" {
		t.Errorf("tup[4] = %#v", tup[4])
	}
	if b, ok := tup[5].(Bool); !ok || !bool(b) {
		t.Errorf("tup[5] = %#v", tup[5])
	}
	if _, ok := tup[6].(None); !ok {
		t.Errorf("tup[6] = %#v", tup[6])
	}
	if l, ok := tup[7].(List); !ok || l == nil || len(l) != 0 {
		t.Errorf("tup[7] = %#v, want an empty non-nil List", tup[7])
	}
}

// FuzzDecode checks that Decode never panics, that every error is a
// *DecodeError with an offset inside the input, and that every accepted
// input re-encodes to itself, also through its JSON form.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeRejects {
		f.Add([]byte(c.in))
	}
	f.Add([]byte(p + `["dict",[[["str","61"],["tuple",[["int","-1"],["float64","7ff8000000000001"],["bytes","00"],["str","eda0bdedb880"],["bool",false],["none"],["list",[]]]]]]]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DecodeError", err)
			}
			if de.Offset < 0 || de.Offset > len(b) {
				t.Fatalf("offset %d outside the input of %d bytes", de.Offset, len(b))
			}
			return
		}
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)): %v", b, err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("Encode(Decode(b)) != b\n   b %q\n got %q", b, enc)
		}
		// Every record has a JSON form that reads back as itself.
		checkJSONRoundTrip(t, v)
	})
}
