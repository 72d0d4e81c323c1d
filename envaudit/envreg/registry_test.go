package envreg

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const validRegistry = `{
  "schema": 1,
  "variables": {
    "PYPTO_KNOWN": {"category": "semantic", "reason": "Changes generated operations."},
    "PATH": {"category": "tool_resolution", "reason": "Selects the compiler."},
    "PYPTO_FRESH": {"category": "fresh_request", "reason": "Asks for a rebuild."},
    "TERM": {"category": "nonsemantic", "reason": "Terminal colours only."},
    "CC": {"category": "tool_resolution", "reason": "Names the C compiler."}
  },
  "dynamic_reads": [
    {"path": "python/pypto/compiler.py", "function": "restore", "reason": "Restores overrides."}
  ]
}`

func TestParseRegistry(t *testing.T) {
	r, err := ParseRegistry([]byte(validRegistry))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Variables(ToolResolution); !slices.Equal(got, []string{"CC", "PATH"}) {
		t.Errorf("Variables(tool_resolution) = %v", got)
	}
	if got := r.Variables(""); len(got) != 5 || !slices.IsSorted(got) {
		t.Errorf("Variables(\"\") = %v", got)
	}
	if c, ok := r.Category("PYPTO_FRESH"); !ok || c != FreshRequest {
		t.Errorf("Category(PYPTO_FRESH) = %q, %v", c, ok)
	}
	if _, ok := r.Category("PYPTO_UNKNOWN"); ok {
		t.Error("Category of an unlisted name reported ok")
	}
	if r.Reason("TERM") != "Terminal colours only." {
		t.Errorf("Reason(TERM) = %q", r.Reason("TERM"))
	}
	if !r.Allows("python/pypto/compiler.py", "restore") || r.Allows("python/pypto/compiler.py", "compile") {
		t.Error("Allows does not follow the exception list")
	}
	if ex := r.Exceptions(); len(ex) != 1 || ex[0].Reason != "Restores overrides." {
		t.Errorf("Exceptions() = %+v", ex)
	}
	// dynamic_reads is optional.
	if _, err := ParseRegistry([]byte(`{"schema": 1, "variables": {}}`)); err != nil {
		t.Errorf("registry without dynamic_reads: %v", err)
	}
}

func TestParseRegistryInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, doc, entry, msg string
	}{
		{"not json", `{`, "", "not a JSON object"},
		{"not an object", `[]`, "", "not a JSON object"},
		{"no schema", `{"variables": {}}`, "schema", "must be 1"},
		{"schema 2", `{"schema": 2, "variables": {}}`, "schema", "must be 1"},
		{"schema string", `{"schema": "1", "variables": {}}`, "schema", "must be 1"},
		{"no variables", `{"schema": 1}`, "variables", "must be an object"},
		{"variables list", `{"schema": 1, "variables": []}`, "variables", "must be an object"},
		{"lower-case name", `{"schema": 1, "variables": {"path": {"category": "semantic", "reason": "r"}}}`, `variables["path"]`, "name does not match"},
		{"leading digit", `{"schema": 1, "variables": {"1X": {"category": "semantic", "reason": "r"}}}`, `variables["1X"]`, "name does not match"},
		{"dash", `{"schema": 1, "variables": {"A-B": {"category": "semantic", "reason": "r"}}}`, `variables["A-B"]`, "name does not match"},
		{"empty name", `{"schema": 1, "variables": {"": {"category": "semantic", "reason": "r"}}}`, `variables[""]`, "name does not match"},
		{"unknown category", `{"schema": 1, "variables": {"A": {"category": "unknown", "reason": "r"}}}`, `variables["A"]`, "category"},
		{"no category", `{"schema": 1, "variables": {"A": {"reason": "r"}}}`, `variables["A"]`, "category"},
		{"empty reason", `{"schema": 1, "variables": {"A": {"category": "semantic", "reason": ""}}}`, `variables["A"]`, "needs a reason"},
		{"blank reason", `{"schema": 1, "variables": {"A": {"category": "semantic", "reason": "  "}}}`, `variables["A"]`, "needs a reason"},
		{"reason not a string", `{"schema": 1, "variables": {"A": {"category": "semantic", "reason": 1}}}`, `variables["A"]`, "must be an object"},
		{"duplicate name", `{"schema": 1, "variables": {"A": {"category": "semantic", "reason": "r"}, "A": {"category": "nonsemantic", "reason": "r"}}}`, `variables["A"]`, "listed twice"},
		{"exceptions not a list", `{"schema": 1, "variables": {}, "dynamic_reads": {}}`, "dynamic_reads", "must be a list"},
		{"exception without reason", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "a.py", "function": "f"}]}`, "dynamic_reads[0]", "needs a path, a function and a reason"},
		{"exception without function", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "a.py", "function": " ", "reason": "r"}]}`, "dynamic_reads[0]", "needs a path, a function and a reason"},
		{"exception without path", `{"schema": 1, "variables": {}, "dynamic_reads": [{"function": "f", "reason": "r"}]}`, "dynamic_reads[0]", "needs a path, a function and a reason"},
		{"absolute path", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "/src/a.py", "function": "f", "reason": "r"}]}`, "dynamic_reads[0]", "exact relative path"},
		{"wildcard path", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "src/*.py", "function": "f", "reason": "r"}]}`, "dynamic_reads[0]", "exact relative path"},
		{"wildcard function", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "a.py", "function": "*", "reason": "r"}]}`, "dynamic_reads[0]", "exact relative path"},
		{"unclean path", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "./a.py", "function": "f", "reason": "r"}]}`, "dynamic_reads[0]", "must be clean"},
		{"parent path", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "../a.py", "function": "f", "reason": "r"}]}`, "dynamic_reads[0]", "must be clean"},
		{"backslash path", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "src\\a.py", "function": "f", "reason": "r"}]}`, "dynamic_reads[0]", "must be clean"},
		{"second exception bad", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "a.py", "function": "f", "reason": "r"}, {"path": "b.py", "function": "g"}]}`, "dynamic_reads[1]", "needs a path"},
		{"duplicate exception", `{"schema": 1, "variables": {}, "dynamic_reads": [{"path": "a.py", "function": "f", "reason": "r"}, {"path": "a.py", "function": "f", "reason": "s"}]}`, "dynamic_reads[1]", "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRegistry([]byte(tc.doc))
			var re *RegistryError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a *RegistryError", err)
			}
			if !strings.HasPrefix(re.Entry, tc.entry) || !strings.Contains(re.Error(), tc.msg) {
				t.Errorf("got entry %q, error %q; want entry %q and %q", re.Entry, re.Error(), tc.entry, tc.msg)
			}
		})
	}
}

func TestLoadRegistry(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(validRegistry), 0o644)
	os.WriteFile(bad, []byte(`{"schema": 1, "variables": {"x": {}}}`), 0o644)
	if _, err := LoadRegistry(good); err != nil {
		t.Fatal(err)
	}
	_, err := LoadRegistry(bad)
	var re *RegistryError
	if !errors.As(err, &re) || re.File != bad || !strings.Contains(err.Error(), `variables["x"]`) {
		t.Errorf("LoadRegistry(bad) = %v", err)
	}
	if _, err := LoadRegistry(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadRegistry(missing) = %v, want ErrNotExist", err)
	}
}

// TestRegistryJSONRoundTrip: what ParseRegistry accepts survives being
// written back in the documented shape.
func TestRegistryJSONRoundTrip(t *testing.T) {
	r, err := ParseRegistry([]byte(validRegistry))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(registryDoc(r))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := ParseRegistry(b)
	if err != nil {
		t.Fatalf("reparse: %v\n%s", err, b)
	}
	if !slices.Equal(r.Variables(""), r2.Variables("")) || !slices.Equal(r.Exceptions(), r2.Exceptions()) {
		t.Error("round trip changed the registry")
	}
}

func registryDoc(r *Registry) map[string]any {
	vars := map[string]Variable{}
	for _, n := range r.Variables("") {
		c, _ := r.Category(n)
		vars[n] = Variable{Category: c, Reason: r.Reason(n)}
	}
	return map[string]any{"schema": 1, "variables": vars, "dynamic_reads": r.Exceptions()}
}

func FuzzParseRegistry(f *testing.F) {
	f.Add([]byte(validRegistry))
	f.Add([]byte(`{"schema": 1, "variables": {}}`))
	f.Add([]byte(`{"schema": 1, "variables": {"A": {"category": "semantic", "reason": "r"}, "A": {}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRegistry(b)
		if err != nil {
			var re *RegistryError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RegistryError", err)
			}
			return
		}
		for _, n := range r.Variables("") {
			if !ValidName(n) {
				t.Fatalf("accepted name %q", n)
			}
		}
		out, err := json.Marshal(registryDoc(r))
		if err != nil {
			t.Fatal(err)
		}
		r2, err := ParseRegistry(out)
		if err != nil {
			t.Fatalf("reparse of accepted registry: %v", err)
		}
		if !slices.Equal(r.Variables(""), r2.Variables("")) {
			t.Fatal("round trip changed the variables")
		}
	})
}

func TestRegistrySecret(t *testing.T) {
	r, err := ParseRegistry([]byte(`{"schema": 1, "variables": {
		"KEY_ID": {"category": "nonsemantic", "reason": "credential", "secret": true},
		"PLAIN": {"category": "nonsemantic", "reason": "a location"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Secret("KEY_ID") || r.Secret("PLAIN") || r.Secret("UNKNOWN") {
		t.Errorf("Secret: KEY_ID %v, PLAIN %v, UNKNOWN %v", r.Secret("KEY_ID"), r.Secret("PLAIN"), r.Secret("UNKNOWN"))
	}
	for _, bad := range []string{
		`{"schema": 1, "variables": {"K": {"category": "semantic", "reason": "r", "secret": true}}}`,
		`{"schema": 1, "variables": {"K": {"category": "nonsemantic", "reason": "r", "secret": "yes"}}}`,
	} {
		if _, err := ParseRegistry([]byte(bad)); err == nil || !strings.Contains(err.Error(), `variables["K"]`) {
			t.Errorf("%s: %v, want an error naming the entry", bad, err)
		}
	}
}
