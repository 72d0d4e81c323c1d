package toolchain

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

// pyptoPython is a PyPTO checkout's python/ directory: with it,
// TestBuildVectorsAgainstPyPTO runs PyPTO's own code on fresh fixtures.
var pyptoPython = flag.String("pypto", "", "a PyPTO checkout's python/ directory (pypto/_identity.py, pypto/jit/_build_identity.py)")

type vectorFile struct {
	Files    map[string][2]string `json:"files"`
	Trees    map[string]any       `json:"trees"`
	Reported [][3]json.RawMessage `json:"reported"`
}

// decodeVector reads the JSON form pypto_vectors.py decodes: {"t": [...]}
// a tuple, {"b": hex} bytes, lists, strings and null as themselves.
func decodeVector(t *testing.T, raw any) inventory.Value {
	switch v := raw.(type) {
	case nil:
		return inventory.None{}
	case string:
		return inventory.Str(v)
	case bool:
		return inventory.Bool(v)
	case []any:
		l := inventory.List{}
		for _, x := range v {
			l = append(l, decodeVector(t, x))
		}
		return l
	case map[string]any:
		if items, ok := v["t"].([]any); ok {
			tu := inventory.Tuple{}
			for _, x := range items {
				tu = append(tu, decodeVector(t, x))
			}
			return tu
		}
		if h, ok := v["b"].(string); ok {
			b, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			return inventory.Bytes(b)
		}
	}
	t.Fatalf("vector value %#v has no record form", raw)
	return nil
}

// checkVectors compares ptojit with every vector of vf and returns the
// number compared.
func checkVectors(t *testing.T, vf *vectorFile) int {
	n := 0
	for path, want := range vf.Files {
		got, err := NativeBuildID(path)
		if err != nil || got.Kind != want[0] || got.Hex != want[1] {
			t.Errorf("NativeBuildID(%s) = %v %v, PyPTO %v", path, got, err, want)
		}
		n++
	}
	for path, want := range vf.Trees {
		got, err := PythonSources(path)
		switch w := want.(type) {
		case string:
			if err != nil || got != w {
				t.Errorf("PythonSources(%s) = %s %v, PyPTO %s", path, got, err, w)
			}
		default:
			if err == nil {
				t.Errorf("PythonSources(%s) = %s, PyPTO refuses it: %v", path, got, w)
			}
		}
		n++
	}
	for _, r := range vf.Reported {
		var epoch *string
		var value any
		var want string
		if json.Unmarshal(r[0], &epoch) != nil || json.Unmarshal(r[1], &value) != nil || json.Unmarshal(r[2], &want) != nil {
			t.Fatalf("bad vector %s", r)
		}
		got, err := ReportedBuild(deref(epoch), epoch != nil, decodeVector(t, value))
		if err != nil || got != want {
			t.Errorf("ReportedBuild(%v, %s) = %s %v, PyPTO %s", epoch, r[1], got, err, want)
		}
		n++
	}
	return n
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func readVectors(t *testing.T, path string) *vectorFile {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		t.Fatal(err)
	}
	return &vf
}

// TestBuildVectors compares ptojit's build-policy primitives with the
// committed vectors PyPTO's code computed (testdata/buildpolicy: the ELF
// inputs, their recipes in make.sh, the spec and the answers).
func TestBuildVectors(t *testing.T) {
	vf := readVectors(t, "testdata/buildpolicy/vectors.json")
	if n := checkVectors(t, vf); n < 40 {
		t.Fatalf("only %d vectors", n)
	}
}

// TestBuildVectorsAgainstPyPTO runs PyPTO's own code (-pypto) on fixtures
// built here, including what cannot be committed (a .git directory, a
// __pycache__, a directory symlink), and compares every answer.
func TestBuildVectorsAgainstPyPTO(t *testing.T) {
	if *pyptoPython == "" {
		t.Skip("PyPTO's python/pypto/_identity.py and python/pypto/jit/_build_identity.py are not given: run with -args -pypto=DIR, DIR a PyPTO checkout's python/ directory")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: PyPTO's code cannot run")
	}
	dir := t.TempDir()
	tree := filepath.Join(dir, "pkg")
	for rel, body := range map[string]string{
		"__init__.py": "pass\n", "sub/mod.py": "x = 1\n", "sub/t.cpp.in": "{{x}}\n", "sub/other.txt": "no\n",
		"__pycache__/a.py": "skip\n", ".git/b.py": "skip\n", "_assets/c.py": "skip\n", "deep/_assets/d.py": "skip\n",
	} {
		writeFixture(t, filepath.Join(tree, rel), body)
	}
	cycle := filepath.Join(dir, "cycle")
	writeFixture(t, filepath.Join(cycle, "m.py"), "pass\n")
	if err := os.Symlink(cycle, filepath.Join(cycle, "loop")); err != nil {
		t.Fatal(err)
	}
	elfs, _ := filepath.Glob("testdata/buildpolicy/elf/*")
	spec := map[string]any{"files": elfs, "trees": []string{tree, cycle, filepath.Join(dir, "missing")},
		"reported": [][2]any{{nil, "v"}, {"", "v"}, {"e", []any{map[string]any{"t": []any{"a", nil}}}}}}
	specPath := filepath.Join(dir, "spec.json")
	data, _ := json.Marshal(spec)
	writeFixture(t, specPath, string(data))
	cmd := exec.Command(py, "testdata/buildpolicy/pypto_vectors.py", *pyptoPython, specPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("PyPTO's code: %v\n%s", err, stderr.String())
	}
	var vf vectorFile
	if err := json.Unmarshal(out, &vf); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d vectors compared", checkVectors(t, &vf))
}

func writeFixture(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
