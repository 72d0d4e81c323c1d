package jit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
)

// Tests of the request extras against the rules of issue 18.
// Each states the rule it checks.

func keyOf(t *testing.T, d *Driver, req *api.Request) *KeyReport {
	t.Helper()
	rep, err := d.KeyOf(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Rule: "Additional application sources are reread for each request."
// and "fingerprint_extra_sources() filters directory inputs to Python
// sources; directly supplied files contribute regardless of extension.
// Empty additional-source lists are valid."
func TestSeed003ExtraSourcesRereadEachRequest(t *testing.T) {
	dir, req := copyExamples(t)
	d := newDriver(t, nil)
	empty := keyOf(t, d, req)
	if !empty.Usable {
		t.Fatalf("no extra sources: %v", empty.Unavailable)
	}
	app := filepath.Join(dir, "app")
	write(t, filepath.Join(app, "model.py"), "A = 1\n")
	write(t, filepath.Join(app, "notes.txt"), "n1")
	write(t, filepath.Join(dir, "weights.bin"), "w1")
	req.ExtraSources = []string{app, filepath.Join(dir, "weights.bin")}
	a := keyOf(t, d, req)
	if !a.Usable || a.Key == empty.Key {
		t.Fatalf("extra sources not in the key: usable %v %v", a.Usable, a.Unavailable)
	}
	// The same driver rereads them: a changed Python file changes the key.
	write(t, filepath.Join(app, "model.py"), "A = 2\n")
	b := keyOf(t, d, req)
	if b.Key == a.Key {
		t.Fatal("a changed extra source kept the key: not reread")
	}
	// A directory contributes its Python files only; a file given
	// directly contributes whatever its name.
	write(t, filepath.Join(app, "notes.txt"), "n2")
	if c := keyOf(t, d, req); c.Key != b.Key {
		t.Error("a non-Python file of an extra-source directory changed the key")
	}
	write(t, filepath.Join(dir, "weights.bin"), "w2")
	if c := keyOf(t, d, req); c.Key == b.Key {
		t.Error("a directly supplied file did not change the key")
	}
	// A missing extra source is unavailable, never skipped.
	req.ExtraSources = append(req.ExtraSources, filepath.Join(dir, "missing.py"))
	if m := keyOf(t, d, req); m.Usable || m.Key != "" || !strings.Contains(strings.Join(m.Unavailable, "\n"), "extra_sources") {
		t.Errorf("missing extra source: usable %v, %q", m.Usable, m.Unavailable)
	}
}

// Rule: "fingerprint_content() hashes the bytes of each supplied file
// and recursively enumerates directory inputs" and "Errors are not silently
// treated as empty files or omitted dependencies": each extra root is a
// named input of the key, read whole.
func TestSeed003ExtraRootsAreContent(t *testing.T) {
	dir, req := copyExamples(t)
	d := newDriver(t, nil)
	lib := filepath.Join(dir, "lib")
	write(t, filepath.Join(lib, "helper.h"), "#define N 1\n")
	write(t, filepath.Join(lib, "data.txt"), "d1")
	req.ExtraRoots = []string{lib}
	a := keyOf(t, d, req)
	if !a.Usable {
		t.Fatal(a.Unavailable)
	}
	named := false
	for _, in := range a.Inputs {
		named = named || in.Name == "sources.extra_roots[0]"
	}
	if !named {
		t.Error("no input sources.extra_roots[0]")
	}
	// Every file counts, not only sources.
	write(t, filepath.Join(lib, "data.txt"), "d2")
	if b := keyOf(t, d, req); b.Key == a.Key {
		t.Error("a changed file of an extra root kept the key")
	}
	req.ExtraRoots = append(req.ExtraRoots, filepath.Join(dir, "gone"))
	if m := keyOf(t, d, req); m.Usable || !strings.Contains(strings.Join(m.Unavailable, "\n"), "extra_roots[1]") {
		t.Errorf("missing extra root: usable %v, %q", m.Usable, m.Unavailable)
	}
}

// Rule: "An application's extra fingerprint supplements those inputs;
// it cannot replace missing files or toolchain evidence." and "An extra
// application fingerprint cannot turn this result into a usable toolchain
// identity."
func TestSeed003ExtraFingerprintNeverReplacesEvidence(t *testing.T) {
	dir, req := copyExamples(t)
	d := newDriver(t, nil)
	base := keyOf(t, d, req)
	req.ExtraFingerprint = json.RawMessage(`"app-v1"`)
	v1 := keyOf(t, d, req)
	req.ExtraFingerprint = json.RawMessage(`{"model": "m", "rev": 2}`)
	v2 := keyOf(t, d, req)
	if !v1.Usable || !v2.Usable || v1.Key == base.Key || v2.Key == v1.Key {
		t.Fatalf("extra fingerprint does not supplement the key: %s %s %s", base.Key, v1.Key, v2.Key)
	}
	// Missing toolchain evidence stays missing, with any fingerprint.
	noPtoas := *req
	noPtoas.Toolchain.PtoasRoot = ""
	if r := keyOf(t, d, &noPtoas); r.Usable || r.Key != "" || !strings.HasPrefix(strings.Join(r.Unavailable, "\n"), "ptoas: ") {
		t.Errorf("extra fingerprint stood in for ptoas: usable %v key %q %q", r.Usable, r.Key, r.Unavailable)
	}
	// Missing files stay missing too: extra sources and extra roots.
	missing := *req
	missing.ExtraSources = []string{filepath.Join(dir, "missing.py")}
	if r := keyOf(t, d, &missing); r.Usable || r.Key != "" {
		t.Errorf("extra fingerprint stood in for a missing extra source: %q", r.Unavailable)
	}
	missing = *req
	missing.ExtraRoots = []string{filepath.Join(dir, "missing")}
	if r := keyOf(t, d, &missing); r.Usable || r.Key != "" {
		t.Errorf("extra fingerprint stood in for a missing extra root: %q", r.Unavailable)
	}
	// Nor does a build with it publish: it compiles uncached.
	if r, err := d.Build(context.Background(), &noPtoas); err == nil && r.Status == api.StatusHit {
		t.Errorf("a build without ptoas evidence hit the cache")
	}
}
