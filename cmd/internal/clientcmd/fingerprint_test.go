package clientcmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
)

func runClient(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Prog: "ptojit", Dir: dir}
	p := &cli.Program{Name: "ptojit", Commands: Commands()}
	code = p.Main(context.Background(), env, args)
	return out.String(), errb.String(), code
}

func TestFingerprintCommand(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"src/a.py": "a", "src/b.txt": "b", "lib/c.py": "c"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := func(p string, py bool) inventory.ContentRoot {
		r, err := inventory.NewContentRoot(p, py)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want, err := inventory.Fingerprint([]inventory.ContentRoot{root(dir+"/src", false), root(dir+"/lib/../lib", false)})
	if err != nil {
		t.Fatal(err)
	}

	// Relative paths resolve against env.Dir, keeping "..".
	out, errs, code := runClient(t, dir, "fingerprint", "src", "lib/../lib")
	if code != 0 || out != want.Digest.String()+"\n" {
		t.Fatalf("fingerprint: code %d out %q err %q, want %s", code, out, errs, want.Digest)
	}

	// --records prints the record whose digest is the result.
	out, _, code = runClient(t, dir, "fingerprint", "--records", "src", "lib/../lib")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	enc, _ := inventory.Encode(want.Record())
	if code != 0 || len(lines) != 2 || lines[0] != string(enc) || lines[1] != want.Digest.String() {
		t.Fatalf("--records: code %d out %q", code, out)
	}

	// --python-only
	py, err := inventory.Fingerprint([]inventory.ContentRoot{root(dir+"/src", true)})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _ = runClient(t, dir, "fingerprint", "--python-only", dir+"/src"); out != py.Digest.String()+"\n" {
		t.Errorf("--python-only: %q, want %s", out, py.Digest)
	}

	// --json
	out, _, code = runClient(t, dir, "fingerprint", "--json", "src", "lib/../lib")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("--json: %v %q", err, out)
	}
	if res["digest"] != want.Digest.String() || res["unavailable"] != nil || res["files"] != 3.0 || res["bytes"] != 3.0 {
		t.Errorf("--json: %v", res)
	}
	if s, ok := res["seconds"].(float64); !ok || s < 0 {
		t.Errorf("--json seconds: %v", res["seconds"])
	}

	// --extra over python-only roots, with and without a fingerprint.
	wantExtra, err := inventory.FingerprintExtraSources([]string{dir + "/src"}, inventory.Str("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _ = runClient(t, dir, "fingerprint", "--extra", "--extra-fingerprint", "v1", "src"); out != wantExtra.String()+"\n" {
		t.Errorf("--extra: %q, want %s", out, wantExtra)
	}
	wantEmpty, _ := inventory.FingerprintExtraSources(nil, nil)
	if out, _, code = runClient(t, dir, "fingerprint", "--extra"); code != 0 || out != wantEmpty.String()+"\n" {
		t.Errorf("--extra with no PATH: %d %q, want %s", code, out, wantEmpty)
	}

	// --extra --records: the content record, then the extra-sources record
	// whose digest is printed last.
	emptyContent, _ := inventory.Encode(inventory.T(inventory.Str("content"), inventory.List{}))
	for _, tc := range []struct {
		args    []string
		content string // the first record, when known here
		want    inventory.Sum
	}{
		{[]string{"--extra-fingerprint", "v1", "src"}, "", wantExtra},
		{nil, string(emptyContent), wantEmpty},
	} {
		args := append([]string{"fingerprint", "--extra", "--records"}, tc.args...)
		out, _, code = runClient(t, dir, args...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if code != 0 || len(lines) != 3 || lines[2] != tc.want.String() || sha256.Sum256([]byte(lines[1])) != tc.want {
			t.Errorf("%q: code %d out %q", args, code, out)
			continue
		}
		if tc.content != "" && lines[0] != tc.content {
			t.Errorf("%q: content record %q, want %q", args, lines[0], tc.content)
		}
	}

	// Unavailable: exit 1, the reason on stderr, nothing on stdout.
	os.Symlink("nowhere", dir+"/src/broken")
	out, errs, code = runClient(t, dir, "fingerprint", "src")
	if code != 1 || out != "" || !strings.Contains(errs, "broken: broken symlink") {
		t.Errorf("unavailable: code %d out %q err %q", code, out, errs)
	}
	out, errs, code = runClient(t, dir, "fingerprint", "--json", "src")
	if code != 1 || !strings.Contains(errs, "broken symlink") {
		t.Errorf("unavailable --json: code %d err %q", code, errs)
	}
	res = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["digest"] != nil || !strings.Contains(res["unavailable"].(string), "broken symlink") {
		t.Errorf("unavailable --json: %v %q", err, out)
	}
	if _, errs, code = runClient(t, dir, "fingerprint"); code != 2 || !strings.Contains(errs, "want at least one PATH") {
		t.Errorf("no PATH: code %d err %q", code, errs)
	}

	// Usage errors.
	if _, _, code = runClient(t, dir, "fingerprint", "--extra-fingerprint", "x", "src"); code != 2 {
		t.Errorf("--extra-fingerprint without --extra: code %d", code)
	}
}
