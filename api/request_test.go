package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadRequest(t *testing.T) {
	r, err := ReadRequest(iotest.OneByteReader(strings.NewReader(good)))
	if err != nil || r.Platform != "a2a3sim" {
		t.Fatalf("ReadRequest: %+v, %v", r, err)
	}
	// A document over the limit is refused without being parsed.
	big := good + strings.Repeat(" ", MaxRequestBytes)
	var re *RequestError
	if _, err := ReadRequest(strings.NewReader(big)); !errors.As(err, &re) || !strings.Contains(err.Error(), fmt.Sprint(MaxRequestBytes)) {
		t.Errorf("oversized request: %v", err)
	}
	// A read error is a RequestError that unwraps to it.
	boom := errors.New("boom")
	_, err = ReadRequest(io.MultiReader(strings.NewReader(good[:20]), iotest.ErrReader(boom)))
	if !errors.As(err, &re) || !errors.Is(err, boom) || err.Error() != "request: boom" {
		t.Errorf("failing reader: %v", err)
	}
	// A truncated document and a wrong type name the field, the line and
	// the column.
	var fe *FieldError
	for doc, msg := range map[string]string{
		`{"platform": `:   "ends early",
		`{"platform": 1}`: "must be a string",
	} {
		_, err = ReadRequest(strings.NewReader(doc))
		if !errors.As(err, &fe) || fe.Field != "platform" || fe.Line != 1 || fe.Col != 14 || !strings.Contains(fe.Msg, msg) {
			t.Errorf("%s: %v, want a FieldError at platform, 1:14, saying %q", doc, err, msg)
		}
	}
}

func TestPaths(t *testing.T) {
	r, err := ParseRequest([]byte(strings.Replace(good, `"toolchain"`, `"extra_roots": ["inc"], "extra_sources": ["app"], "toolchain"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Resolve("/q"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Paths() {
		got = append(got, p.Field+"="+p.Path)
	}
	want := "orchestration.source=/q/orch.c kernels[0].source=/q/k0.c kernels[1].source=/abs/k1.c extra_roots[0]=/q/inc extra_sources[0]=/q/app toolchain.runtime_root=/rt output_dir=/q/" + DefaultOutputDir
	if strings.Join(got, " ") != want {
		t.Errorf("Paths:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// A document parsed again under the same name skips the syntax check only
// when its bytes are the same: positions still locate errors, and a changed
// document is checked again.
func TestParseRequestRemembersCheckedDocuments(t *testing.T) {
	good := []byte("{\n  \"platform\": \"a2a3sim\",\n  \"runtime\": \"rt\",\n  \"orchestration\": {\"source\": \"o.c\", \"function\": \"f\"},\n  \"kernels\": [\n    {\"func_id\": 0, \"source\": \"k.c\", \"signature\": [\"IN\"]}\n  ]\n}\n")
	const file = "memo-test.json"
	locate := func() *FieldError {
		t.Helper()
		req, err := ParseRequestFile(good, file)
		if err != nil {
			t.Fatal(err)
		}
		var fe *FieldError
		if !errors.As(req.Locate(&FieldError{Field: "kernels[0].source", Msg: "missing file"}), &fe) {
			t.Fatal("no field error")
		}
		return fe
	}
	first := locate()
	if first.Line != 6 || first.File != file {
		t.Fatalf("first parse locates kernels[0].source at %s:%d, want %s:6", first.File, first.Line, file)
	}
	if again := locate(); again.Line != first.Line || again.Col != first.Col {
		t.Fatalf("a remembered document locates at %d:%d, the first parse at %d:%d", again.Line, again.Col, first.Line, first.Col)
	}
	bad := bytes.Replace(good, []byte(`"kernels": [`), []byte(`"kernels": [,`), 1)
	_, err := ParseRequestFile(bad, file)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.File != file || !strings.Contains(err.Error(), "invalid JSON") {
		t.Fatalf("a changed document under the same name: %v, want its syntax error", err)
	}
}

// A document parsed again with the same bytes is decoded once: each parse
// returns its own copy of the request, equal to a fresh decoding, that
// shares no slice with the kept one or with other copies.
func TestParseRequestKeepsDecodedRequest(t *testing.T) {
	doc := []byte(`{"platform": "a2a3sim", "runtime": "rt",
  "orchestration": {"source": "o.c", "function": "f", "config": "c"},
  "kernels": [{"func_id": 0, "source": "k.c", "signature": ["IN", "OUT"]},
              {"func_id": 1, "source": "k1.c", "signature": ["INOUT"]}],
  "signature": ["IN", "OUT", "SCALAR"], "scalar_count": 1,
  "extra_roots": ["inc"], "extra_sources": ["app"],
  "extra_fingerprint": {"a": 1}, "options": {"o": [1, 2]},
  "toolchain": {"policy": "content", "runtime_root": "/rt"},
  "output_dir": "out", "base_dir": "/b", "name": "n"}`)
	const file = "keep-test.json"
	first, err := ParseRequestFile(doc, file)
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes under another name: decoded on their own.
	fresh, err := ParseRequestFile(doc, "keep-test-fresh.json")
	if err != nil {
		t.Fatal(err)
	}
	want := *fresh
	want.src = nil
	second, err := ParseRequestFile(doc, file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("second parse differs:\n%+v\n%+v", first, second)
	}
	second.src, first.src = nil, nil
	// Change everything the first parse returned: the next parse must
	// not see it.
	mutateSlices(t, reflect.ValueOf(first).Elem())
	third, err := ParseRequestFile(doc, file)
	if err != nil {
		t.Fatal(err)
	}
	third.src = nil
	if !reflect.DeepEqual(*third, want) || !reflect.DeepEqual(*second, want) {
		t.Fatalf("a change to one parse's request reached another:\nthird  %+v\nsecond %+v\nwant   %+v", third, second, want)
	}
}

// mutateSlices changes every element of every slice reachable from v,
// and fails when a slice field is nil or empty (the test document must set
// every slice field, so a new one is covered).
func mutateSlices(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if f.Kind() == reflect.Slice && f.Len() == 0 {
				t.Fatalf("the test document leaves %s.%s empty", v.Type().Name(), v.Type().Field(i).Name)
			}
			mutateSlices(t, f)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			switch e.Kind() {
			case reflect.Uint8:
				e.SetUint(e.Uint() ^ 0xff)
			case reflect.String:
				e.SetString(e.String() + "!")
			case reflect.Struct:
				mutateSlices(t, e)
			default:
				if e.CanInt() {
					e.SetInt(e.Int() + 7)
				} else {
					t.Fatalf("mutateSlices: element kind %s", e.Kind())
				}
			}
		}
	}
}
