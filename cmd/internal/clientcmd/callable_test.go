package clientcmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry"
)

func TestCallableInspect(t *testing.T) {
	dir := t.TempDir()
	c := &registry.ChipCallable{
		Signature: []registry.Direction{registry.InOut, registry.In, registry.Scalar},
		FuncName:  "vadd_orch", ConfigName: "vadd_config", ScalarCount: 1,
		Binary: []byte(strings.Repeat("o", 70)),
		Children: []registry.Child{
			{FuncID: 3, Core: registry.CoreCallable{Signature: []registry.Direction{registry.Out}, ResolvedAddr: 0xbeef, Binary: []byte("k0")}},
			{FuncID: -1, Core: registry.CoreCallable{Binary: []byte(strings.Repeat("k", 300))}},
		},
	}
	blob, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	path := writeCallableFile(t, dir, "vadd.callable", blob)

	code, out, errOut := runCallableCLI(t, nil, "callable", "inspect", path, "--json", "--platform", "a2a3sim", "--runtime", "rt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep callableReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want, _ := registry.ChipHashid("a2a3sim", "rt", blob)
	switch {
	case rep.Size != len(blob) || !rep.Canonical || rep.Hashid != want.String():
		t.Fatalf("header %+v", rep)
	case rep.FuncName != "vadd_orch" || rep.ConfigName != "vadd_config" || rep.ScalarCount != 1 || rep.BinarySize != 70:
		t.Fatalf("fields %+v", rep)
	case strings.Join(rep.Signature, ",") != "INOUT,IN,SCALAR":
		t.Fatalf("signature %v", rep.Signature)
	case len(rep.Children) != 2:
		t.Fatalf("children %+v", rep.Children)
	}
	ssh := registry.SignatureSchemaHash(c.Signature)
	// One spelling in every JSON output: plain hex, as hashid --json
	// prints it (issue 18).
	if rep.SignatureSchemaHash != fmt.Sprintf("%x", ssh) {
		t.Fatalf("signature schema hash %s", rep.SignatureSchemaHash)
	}
	code, out, errOut = runCallableCLI(t, nil, "hashid", "--json", "--platform", "a2a3sim", "--runtime", "rt", path)
	if code != 0 {
		t.Fatalf("hashid exit %d: %s", code, errOut)
	}
	var hrep hashidReport
	if err := json.Unmarshal([]byte(out), &hrep); err != nil {
		t.Fatal(err)
	}
	if hrep.SignatureSchemaHash != rep.SignatureSchemaHash {
		t.Fatalf("signature_schema_hash spelled %q by hashid --json, %q by callable inspect --json", hrep.SignatureSchemaHash, rep.SignatureSchemaHash)
	}
	// Child 0 follows the 70-byte binary at 128; child 1 at align64(128+192+2) = 384.
	c0, c1 := rep.Children[0], rep.Children[1]
	if c0.Offset != 128 || c0.FuncID != 3 || c0.ResolvedAddr != 0xbeef || c0.BinarySize != 2 || strings.Join(c0.Signature, ",") != "OUT" {
		t.Fatalf("child 0 %+v", c0)
	}
	if c1.Offset != 384 || c1.FuncID != -1 || c1.BinarySize != 300 || len(c1.Signature) != 0 {
		t.Fatalf("child 1 %+v", c1)
	}

	// Text form, from standard input.
	code, out, errOut = runCallableCLI(t, blob, "callable", "inspect", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, line := range []string{
		fmt.Sprintf("size                   %d bytes", len(blob)),
		"canonical              true",
		`func_name              "vadd_orch"`,
		"signature              [3] INOUT IN SCALAR",
		"children               2",
		"[0] func_id 3, offset 128, signature [1] OUT, resolved_addr 0xbeef, binary 2 bytes",
		"[1] func_id -1, offset 384, signature [0] (none), resolved_addr 0x0, binary 300 bytes",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("text output lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "hashid") {
		t.Errorf("hashid printed without --platform:\n%s", out)
	}

	// A non-canonical but valid blob: padding byte set.
	odd := append([]byte{}, blob...)
	odd[9370] = 1
	_, out, _ = runCallableCLI(t, odd, "callable", "inspect", "-", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Canonical {
		t.Fatalf("non-canonical blob: %v %+v", err, rep)
	}
}

func TestCallableInspectErrors(t *testing.T) {
	dir := t.TempDir()
	blob, _ := (&registry.ChipCallable{}).MarshalBinary()
	good := writeCallableFile(t, dir, "good", blob)
	bad := writeCallableFile(t, dir, "bad", blob[:9000])
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"callable", "inspect"}, 2, "exactly one BLOB"},
		{[]string{"callable", "inspect", good, good}, 2, "exactly one BLOB"},
		{[]string{"callable", "inspect", good, "--platform", "a5"}, 2, "go together"},
		{[]string{"callable", "inspect", good, "--platform", "x", "--runtime", "r"}, 2, "PLATFORM_UNSUPPORTED"},
		{[]string{"callable", "inspect", bad}, 2, "bad: parse callable: CALLABLE_BLOB_INVALID"}, // invalid input, named
		{[]string{"callable", "frobnicate"}, 2, "unknown command"},
	}
	for _, c := range cases {
		code, out, errOut := runCallableCLI(t, nil, c.args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d mentioning %q", c.args, code, out, errOut, c.code, c.err)
		}
	}
}

// TestInspectSharedVectors decodes every reference blob and checks the
// hashid printed beside it.
func TestInspectSharedVectors(t *testing.T) {
	for i, v := range loadCallableVectors(t) {
		if v.Kind != "CHIP_CALLABLE" {
			continue
		}
		code, out, errOut := runCallableCLI(t, callableHex(t, v.BlobHex), "callable", "inspect", "-", "--json", "--platform", v.Platform, "--runtime", v.Runtime)
		var rep callableReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("vector %d: exit %d %s", i, code, errOut)
		}
		if rep.Hashid != v.Hashid || !rep.Canonical || rep.FuncName != "orch" {
			t.Fatalf("vector %d: %+v", i, rep)
		}
	}
}
