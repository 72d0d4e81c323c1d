package clientcmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/registry"
)

// runCallableCLI runs the client's commands as cmd/ptojit does and returns the
// exit code and the output.
func runCallableCLI(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &cli.Env{
		Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(string) string { return "" }, Prog: "ptojit",
	}
	p := &cli.Program{Name: "ptojit", Summary: "test", Commands: Commands()}
	code = p.Main(context.Background(), env, args)
	return code, out.String(), errOut.String()
}

// callableVector is a line of the shared simpler vectors.
type callableVector struct {
	Kind, Platform, Runtime string
	BlobHex                 string `json:"blob_hex"`
	SPYCHex                 string `json:"spyc_hex"`
	DescriptorHex           string `json:"descriptor_hex"`
	Hashid                  string
}

func loadCallableVectors(t *testing.T) []callableVector {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "registry", "testdata", "callable-hashids.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []callableVector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v callableVector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatal("no vectors")
	}
	return out
}

func writeCallableFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func callableHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHashidCommandVectors(t *testing.T) {
	dir := t.TempDir()
	for i, v := range loadCallableVectors(t) {
		var args []string
		var payload []byte
		if v.Kind == "CHIP_CALLABLE" {
			payload = callableHex(t, v.BlobHex)
			args = []string{"hashid", "--platform", v.Platform, "--runtime", v.Runtime, writeCallableFile(t, dir, "blob", payload)}
		} else {
			payload = callableHex(t, v.SPYCHex)
			args = []string{"hashid", "--python", writeCallableFile(t, dir, "spyc", payload)}
		}
		code, out, errOut := runCallableCLI(t, nil, args...)
		if code != 0 || out != v.Hashid+"\n" {
			t.Fatalf("vector %d: exit %d, stdout %q, stderr %q; want %s", i, code, out, errOut, v.Hashid)
		}
		// The same from standard input, as JSON with the descriptor bytes.
		stdinArgs := append(append([]string{}, args[:len(args)-1]...), "-")
		if v.Kind != "CHIP_CALLABLE" {
			stdinArgs = []string{"hashid", "--python", "-"}
		}
		code, out, errOut = runCallableCLI(t, payload, append(stdinArgs, "--json")...)
		var rep struct{ Hashid, Kind, Descriptor string }
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("vector %d --json: exit %d %q %q", i, code, out, errOut)
		}
		if rep.Hashid != v.Hashid || rep.Kind != v.Kind || rep.Descriptor != v.DescriptorHex {
			t.Fatalf("vector %d --json: %+v", i, rep)
		}
	}
}

func TestHashidCommandErrors(t *testing.T) {
	dir := t.TempDir()
	good, err := (&registry.ChipCallable{Signature: []registry.Direction{registry.In}, Binary: []byte("orch")}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	blob := writeCallableFile(t, dir, "good.callable", good)
	truncated := writeCallableFile(t, dir, "short.callable", good[:100])
	spyc := writeCallableFile(t, dir, "bad.spyc", []byte("SPYC\x02\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no flags", []string{"hashid", blob}, 2, "--platform and --runtime"},
		{"no runtime", []string{"hashid", "--platform", "a5", blob}, 2, "--platform and --runtime"},
		{"two blobs", []string{"hashid", "--platform", "a5", "--runtime", "r", blob, blob}, 2, "exactly one BLOB"},
		{"unknown platform", []string{"hashid", "--platform", "a7", "--runtime", "r", blob}, 2, "PLATFORM_UNSUPPORTED"},
		{"python with platform", []string{"hashid", "--python", spyc, "--platform", "a5"}, 2, "--python takes no"},
		{"invalid blob", []string{"hashid", "--platform", "a5", "--runtime", "r", truncated}, 2, "short.callable: parse callable: CALLABLE_BLOB_INVALID"},
		{"invalid spyc", []string{"hashid", "--python", spyc}, 2, "bad.spyc: parse spyc: SPYC_PAYLOAD_INVALID"},
		{"missing file", []string{"hashid", "--python", filepath.Join(dir, "nope")}, 2, "nope: no such file"}, // a missing input
	}
	for _, c := range cases {
		code, out, errOut := runCallableCLI(t, nil, c.args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.err) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", c.name, code, out, errOut, c.code, c.err)
		}
	}
	// A platform changes the hashid; the same platform family keeps the arch.
	_, a, _ := runCallableCLI(t, nil, "hashid", "--platform", "a5", "--runtime", "r", blob)
	_, b, _ := runCallableCLI(t, nil, "hashid", "--platform", "a5sim", "--runtime", "r", blob)
	if a == b || !strings.HasPrefix(a, "sha256:") {
		t.Fatalf("a5 %q a5sim %q", a, b)
	}
}

func TestHashidCheck(t *testing.T) {
	valid := "sha256:" + strings.Repeat("0f", 32)
	if code, out, errOut := runCallableCLI(t, nil, "hashid", "check", valid); code != 0 || out != "" || errOut != "" {
		t.Fatalf("valid: exit %d %q %q", code, out, errOut)
	}
	for _, s := range []string{"", "sha256:" + strings.Repeat("0F", 32), strings.Repeat("0f", 32), valid + "0", valid[:70], "md5:" + valid[7:]} {
		code, out, errOut := runCallableCLI(t, nil, "hashid", "check", s)
		if code != 1 || out != "" || !strings.Contains(errOut, "HASHID_FORMAT_INVALID") {
			t.Errorf("check %q: exit %d, stdout %q, stderr %q", s, code, out, errOut)
		}
	}
	if code, _, _ := runCallableCLI(t, nil, "hashid", "check"); code != 2 {
		t.Errorf("no argument: exit %d", code)
	}
	if code, _, _ := runCallableCLI(t, nil, "hashid", "check", valid, valid); code != 2 {
		t.Errorf("two arguments: exit %d", code)
	}
}
