package api

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry"
)

const good = `{
  "platform": "a2a3sim",
  "runtime": "tensormap_and_ringbuffer",
  "orchestration": {"source": "orch.c", "function": "vadd_orch", "config": "vadd_orch_config"},
  "kernels": [
    {"func_id": 0, "source": "k0.c", "signature": ["IN", "IN", "OUT"]},
    {"func_id": 1, "source": "/abs/k1.c", "signature": [3, 0]}
  ],
  "signature": [1, 1, 2, "scalar"],
  "scalar_count": 1,
  "options": {"opt": 2},
  "toolchain": {"runtime_root": "../rt"}
}`

func TestParseRequest(t *testing.T) {
	r, err := ParseRequest([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if want := []registry.Direction{registry.In, registry.In, registry.Out, registry.Scalar}; len(r.Signature) != 4 || r.Signature[3] != want[3] || r.Signature[2] != want[2] {
		t.Errorf("signature = %v, want %v", r.Signature, want)
	}
	if r.Kernels[1].Signature[0] != registry.InOut {
		t.Errorf("kernels[1].signature[0] = %v", r.Kernels[1].Signature[0])
	}
	dir := filepath.FromSlash("/req/dir")
	if err := r.Resolve(dir); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{
		r.Orchestration.Source:  "/req/dir/orch.c",
		r.Kernels[1].Source:     "/abs/k1.c",
		r.Toolchain.RuntimeRoot: "/req/rt",
		r.OutputDir:             "/req/dir/" + DefaultOutputDir,
		r.Toolchain.PtoasRoot:   "",
		r.Kernels[0].Source:     "/req/dir/k0.c",
	} {
		if f != filepath.FromSlash(want) {
			t.Errorf("resolved %q, want %q", f, want)
		}
	}
	if err := r.Resolve("rel"); err == nil {
		t.Error("Resolve with a relative directory succeeded")
	}
	b, err := json.Marshal(r.Signature)
	if err != nil || string(b) != `["IN","IN","OUT","SCALAR"]` {
		t.Errorf("marshal signature = %s, %v", b, err)
	}
}

func TestRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		edit  func(string) string
		field string
	}{
		{func(s string) string { return strings.Replace(s, `"a2a3sim"`, `"x86"`, 1) }, "platform"},
		{func(s string) string { return strings.Replace(s, `"tensormap_and_ringbuffer"`, `"a b"`, 1) }, "runtime"},
		{func(s string) string { return strings.Replace(s, `"vadd_orch",`, `"1x",`, 1) }, "orchestration.function"},
		{func(s string) string {
			return strings.Replace(s, `"vadd_orch_config"`, `"`+strings.Repeat("c", 64)+`"`, 1)
		}, "orchestration.config"},
		{func(s string) string { return strings.Replace(s, `"func_id": 1`, `"func_id": 0`, 1) }, "kernels[1].func_id"},
		{func(s string) string { return strings.Replace(s, `"func_id": 1`, `"func_id": -1`, 1) }, "kernels[1].func_id"},
		{func(s string) string { return strings.Replace(s, `"scalar_count": 1`, `"scalar_count": 2`, 1) }, "scalar_count"},
		{func(s string) string { return strings.Replace(s, `"scalar_count": 1`, `"scalar_count": "1"`, 1) }, "scalar_count"},
		{func(s string) string { return strings.Replace(s, `"source": "orch.c",`, `"source": "",`, 1) }, "orchestration.source"},
		{func(s string) string { return strings.Replace(s, `{"opt": 2}`, `{"opt": 2}, "options_wire": "x"`, 1) }, "options_wire"},
		{func(s string) string {
			return strings.Replace(s, `"toolchain": {`, `"toolchain": {"policy": "fast", `, 1)
		}, "toolchain.policy"},
	} {
		_, err := ParseRequest([]byte(tc.edit(good)))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want a FieldError for %s", tc.field, err, tc.field)
		}
	}
	for _, bad := range []string{
		strings.Replace(good, `"runtime"`, `"runtimee"`, 1), // unknown field
		good + `{}`, // trailing data
		strings.Replace(good, `"IN", "IN", "OUT"]`, `"IN", "UP"]`, 1),
		`[]`,
	} {
		if _, err := ParseRequest([]byte(bad)); err == nil {
			t.Errorf("accepted %.60q", bad)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"platform":"a5","runtime":"r","orchestration":{"source":"o.pto","function":"f"},"kernels":[]}`))
	f.Add([]byte("{\n \"platform\": tru}"))
	f.Add([]byte(`{"kernels": [{"signature": ["IN", 7]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequestFile(b, "r.json")
		if err != nil {
			// Every error points into the document.
			var fe *FieldError
			if errors.As(err, &fe) && (fe.File != "r.json" || fe.Line < 1 || fe.Col < 1 || fe.Line > 1+strings.Count(string(b), "\n")) {
				t.Fatalf("error without a position in the document: %#v", fe)
			}
			return
		}
		// A valid request survives a round trip through JSON unchanged.
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("marshal a valid request: %v", err)
		}
		r2, err := ParseRequest(out)
		if err != nil {
			t.Fatalf("reparse %s: %v", out, err)
		}
		out2, _ := json.Marshal(r2)
		if string(out) != string(out2) {
			t.Fatalf("round trip changed the request:\n%s\n%s", out, out2)
		}
	})
}

func TestRequestErrorPositions(t *testing.T) {
	doc := "{\n  \"platform\": \"a2a3sim\",\n  \"runtime\": \"r\",\n  \"orchestration\": {\"source\": \"o.c\", \"function\": \"f\"},\n" +
		"  \"kernels\": [{\"func_id\": 0, \"source\": \"k.c\", \"signature\": [\"IN\", \"OUT\"]}]\n}"
	for _, tc := range []struct{ edit, want string }{
		{strings.Replace(doc, `"OUT"]`, `"UP"]`, 1), `r.json:5:67: kernels[0].signature[1]: unknown direction "UP": want IN, OUT, INOUT or SCALAR`},
		{strings.Replace(doc, `["IN", "OUT"]`, `"IN"`, 1), `r.json:5:60: kernels[0].signature: must be a list of directions: IN, OUT, INOUT, SCALAR, not the string "IN"`},
		{strings.Replace(doc, `"func_id": 0`, `"func_id": 1.5`, 1), `r.json:5:27: kernels[0].func_id: must be an integer from -2147483648 to 2147483647, not 1.5`},
		{strings.Replace(doc, "  \"platform\": \"a2a3sim\",\n", "", 1), `r.json:1:1: platform: missing (one of a2a3sim, a5sim, a2a3, a5)`},
		{strings.Replace(doc, `"runtime"`, `"bogus"`, 1), `r.json:3:3: bogus: unknown field "bogus"; the fields here are platform, runtime, orchestration, kernels, signature, scalar_count, extra_roots, extra_sources, extra_fingerprint, extra_fingerprint_wire, options, options_wire, toolchain, output_dir, base_dir, name`},
		{strings.Replace(doc, `"runtime": "r",`, `"runtime": "r", "name": 7,`, 1), `r.json:3:27: name: must be a string, not the number 7`},
		{strings.Replace(doc, `"runtime": "r",`, `"runtime": "r", "name": "a\nb",`, 1), `r.json:3:27: name: "a\nb" holds the control character U+000A`},
		{strings.Replace(doc, `"runtime": "r",`, `"runtime": "r", "name": "  ",`, 1), `r.json:3:27: name: only spaces: give a name or leave the field out`},
		{strings.Replace(doc, `"runtime": "r",`, `"runtime": "r", "name": "`+strings.Repeat("n", MaxName+1)+`",`, 1), `r.json:3:27: name: 257 bytes, at most 256`},
		{strings.Replace(doc, `"platform": "a2a3sim"`, `"platform": "x86"`, 1), `r.json:2:15: platform: "x86" is not one of a2a3sim, a5sim, a2a3, a5`},
		{doc[:40], `r.json:3:14: runtime: the document ends early: a value, ',' or a closing bracket is missing`},
	} {
		_, err := ParseRequestFile([]byte(tc.edit), "r.json")
		if err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
	}
}

// A name is kept as given and is no path: Resolve leaves it alone, and
// File is never read from the document.
func TestRequestName(t *testing.T) {
	r, err := ParseRequestFile([]byte(strings.Replace(good, `"toolchain"`, `"name": "model.layer3/gemm", "toolchain"`, 1)), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Resolve("/q"); err != nil {
		t.Fatal(err)
	}
	if r.Name != "model.layer3/gemm" || r.File != "" {
		t.Errorf("name %q, file %q", r.Name, r.File)
	}
	if _, err := ParseRequestFile([]byte(strings.Replace(good, `"toolchain"`, `"File": "/etc/x", "toolchain"`, 1)), "r.json"); err == nil || !strings.Contains(err.Error(), `unknown field "File"`) {
		t.Errorf("a File member: %v, want an unknown field", err)
	}
}
