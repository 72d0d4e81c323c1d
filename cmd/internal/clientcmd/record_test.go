package clientcmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// runProgram runs the client's commands as cmd/ptojit does, with stdin and
// buffers for the output, and returns the exit code and the output.
func runProgram(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &cli.Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errOut,
		Getenv: func(string) string { return "" },
		Prog:   "ptojit",
	}
	p := &cli.Program{Name: "ptojit", Summary: "test", Commands: Commands()}
	code = p.Main(context.Background(), env, args)
	return code, out.String(), errOut.String()
}

const (
	rowsColsWire   = `["pypto.identity",1,["dict",[[["str","636f6c73"],["int","64"]],[["str","726f7773"],["int","32"]]]]]`
	rowsColsDigest = "373f5e508df2604779ef1dea2b6b97285ddea93cf783ad2176c7b4cbbcfbb6da"
)

func TestRecordCommand(t *testing.T) {
	if len(rowsColsWire) != 99 {
		t.Fatalf("len(rowsColsWire) = %d; the offsets below assume 99", len(rowsColsWire))
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec := write("rows.rec", rowsColsWire+"\n")
	recExact := write("exact.rec", rowsColsWire)
	recTwoNewlines := write("two.rec", rowsColsWire+"\n\n")
	recCRLF := write("crlf.rec", rowsColsWire+"\r\n")
	recSpaced := write("spaced.rec", `["pypto.identity", 1,["none"]]`)
	recUnsorted := write("unsorted.rec", `["pypto.identity",1,["dict",[[["str","62"],["none"]],[["str","61"],["none"]]]]]`)
	jsonFile := write("rows.json", "{\"cols\": 64,\n \"rows\": 32}\n")
	badJSON := write("bad.json", `{"a":1,}`)
	tupleRec := write("tuple.rec", `["pypto.identity",1,["tuple",[["bytes","00"]]]]`)

	cases := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string // exact, when code is 0
		stderr string // substring
	}{
		{"encode json stdin", `{"rows": 32, "cols": 64}`, []string{"record", "encode"}, 0, rowsColsWire + "\n", ""},
		{"encode json dash", `{"rows": 32, "cols": 64}`, []string{"record", "encode", "-"}, 0, rowsColsWire + "\n", ""},
		{"digest json stdin", `{"rows": 32, "cols": 64}`, []string{"record", "digest"}, 0, rowsColsDigest + "\n", ""},
		{"digest json file", "", []string{"record", "digest", jsonFile}, 0, rowsColsDigest + "\n", ""},
		{"digest wire file with newline", "", []string{"record", "digest", "--wire", rec}, 0, rowsColsDigest + "\n", ""},
		{"digest wire file exact", "", []string{"record", "digest", "--wire", recExact}, 0, rowsColsDigest + "\n", ""},
		{"encode wire flag after file", "", []string{"record", "encode", recExact, "--wire"}, 0, rowsColsWire + "\n", ""},
		{"encode wire tuple and bytes", "", []string{"record", "encode", "--wire", tupleRec}, 0, `["pypto.identity",1,["tuple",[["bytes","00"]]]]` + "\n", ""},
		{"wire stdin", rowsColsWire, []string{"record", "digest", "--wire"}, 0, rowsColsDigest + "\n", ""},
		{"json surrogate escape", `"\ud800x"`, []string{"record", "encode"}, 0, `["pypto.identity",1,["str","eda08078"]]` + "\n", ""},

		{"wire two newlines", "", []string{"record", "digest", "--wire", recTwoNewlines}, 2, "", "two.rec: invalid identity record at byte 99: unexpected bytes after the record"},
		{"wire CRLF", "", []string{"record", "digest", "--wire", recCRLF}, 2, "", "at byte 99"},
		{"wire whitespace", "", []string{"record", "encode", "--wire", recSpaced}, 2, "", "spaced.rec: invalid identity record at byte 18: whitespace"},
		{"wire unsorted", "", []string{"record", "digest", "--wire", recUnsorted}, 2, "", "at byte 54: dict keys are not sorted"},
		{"json given as wire", `{"rows": 32}`, []string{"record", "digest", "--wire"}, 2, "", "stdin: invalid identity record at byte 0"},
		{"wire given as json", `["pypto.identity",1,["tuple",[]]]`, []string{"record", "encode"}, 0, `["pypto.identity",1,["list",[["str","707970746f2e6964656e74697479"],["int","1"],["list",[["str","7475706c65"],["list",[]]]]]]]` + "\n", "pass --wire"},
		{"bad json", "", []string{"record", "encode", badJSON}, 2, "", "bad.json: invalid JSON at byte 7"},
		{"empty stdin", "", []string{"record", "digest"}, 2, "", "stdin: invalid JSON at byte 0"},
		{"missing file", "", []string{"record", "digest", filepath.Join(dir, "absent.json")}, 2, "", "absent.json"},

		{"encode tagged json", `{"t": {"$tuple": [{"$bytes": "00"}]}, "$$k": {"$float": "7ff8000000000001"}}`, []string{"record", "encode"}, 0, `["pypto.identity",1,["dict",[[["str","246b"],["float64","7ff8000000000001"]],[["str","74"],["tuple",[["bytes","00"]]]]]]]` + "\n", ""},
		{"decode", "", []string{"record", "decode", tupleRec}, 0, `{"$tuple": [{"$bytes": "00"}]}` + "\n", ""},
		{"decode json flag", rowsColsWire, []string{"record", "decode", "--json"}, 0, `{"cols": 64, "rows": 32}` + "\n", ""},
		{"decode not canonical", "", []string{"record", "decode", recUnsorted}, 2, "", "unsorted.rec: invalid identity record at byte 54"},
		{"decode json input", `{"rows": 32}`, []string{"record", "decode"}, 2, "", "stdin: invalid identity record at byte 0"},
		{"decode has no --wire", "", []string{"record", "decode", "--wire"}, 2, "", "unknown flag"},
		{"decode json false", rowsColsWire, []string{"record", "decode", "--json=false"}, 2, "", "only output form"},
		{"encode lines", "[1]\n{\"$tuple\": []}\n", []string{"record", "encode", "--lines"}, 0, `["pypto.identity",1,["list",[["int","1"]]]]` + "\n" + `["pypto.identity",1,["tuple",[]]]` + "\n", ""},
		{"digest lines without final newline", "null\nnull", []string{"record", "digest", "--lines"}, 0, "1e1e02c6a8c8a6bca1bc4f83e0ab0b8a4373b5f5442012765b47fc917a41a829\n1e1e02c6a8c8a6bca1bc4f83e0ab0b8a4373b5f5442012765b47fc917a41a829\n", ""},
		{"decode lines", rowsColsWire + "\n" + `["pypto.identity",1,["none"]]` + "\n", []string{"record", "decode", "--lines"}, 0, `{"cols": 64, "rows": 32}` + "\nnull\n", ""},
		{"lines bad line", "1\n\n2\n", []string{"record", "encode", "--lines"}, 2, "", "stdin: line 2: invalid JSON at byte 0"},
		{"wire lines bad line", rowsColsWire + "\n" + rowsColsWire + " \n", []string{"record", "encode", "--wire", "--lines"}, 2, "", "stdin: line 2: invalid identity record at byte 99"},
		{"bad tag", `{"$set": []}`, []string{"record", "encode"}, 2, "", `stdin: invalid JSON at byte 1: unknown tag "$set"`},

		{"two files", "", []string{"record", "digest", jsonFile, jsonFile}, 2, "", "at most one FILE"},
		{"unknown flag", "", []string{"record", "digest", "--json"}, 2, "", "unknown flag"},
		{"no subcommand", "", []string{"record"}, 2, "", "Usage: ptojit record"},
		{"unknown subcommand", "", []string{"record", "hash"}, 2, "", `unknown command "record hash"`},
		{"help flag", "", []string{"record", "digest", "--help"}, 0, "", ""},
	}
	for _, c := range cases {
		code, stdout, stderr := runProgram(t, c.stdin, c.args...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", c.name, code, c.code, stdout, stderr)
			continue
		}
		if c.code == 0 && c.stdout != "" && stdout != c.stdout {
			t.Errorf("%s: stdout %q, want %q", c.name, stdout, c.stdout)
		}
		if c.code != 0 && stdout != "" {
			t.Errorf("%s: failed but printed %q", c.name, stdout)
		}
		if c.stderr == "" && stderr != "" {
			t.Errorf("%s: unexpected stderr %q", c.name, stderr)
		}
		if !strings.Contains(stderr, c.stderr) {
			t.Errorf("%s: stderr %q, want it to contain %q", c.name, stderr, c.stderr)
		}
	}
}

// TestRecordCommandRoundTrip feeds the output of record encode back through
// record digest --wire and checks it against sha256 of the printed bytes.
func TestRecordCommandRoundTrip(t *testing.T) {
	in := `{"z": [1, 1.0, true, null, "\ud83d\ude00", "\ud83d"], "a": {"nested": [[], {}]}, "n": -12345678901234567890}`
	code, enc, stderr := runProgram(t, in, "record", "encode")
	if code != 0 {
		t.Fatalf("encode: exit %d: %s", code, stderr)
	}
	code, dig, stderr := runProgram(t, enc, "record", "digest", "--wire")
	if code != 0 {
		t.Fatalf("digest --wire: exit %d: %s", code, stderr)
	}
	sum := sha256.Sum256([]byte(strings.TrimSuffix(enc, "\n")))
	if want := hex.EncodeToString(sum[:]) + "\n"; dig != want {
		t.Errorf("digest --wire of encode's output = %q, want sha256 of it %q", dig, want)
	}
	code, dig2, _ := runProgram(t, in, "record", "digest")
	if code != 0 || dig2 != dig {
		t.Errorf("digest of the JSON = %q (exit %d), want %q", dig2, code, dig)
	}
}

// TestRecordDecodeRoundTrip checks that record decode prints a form that
// record encode takes back to the same bytes, for records plain JSON
// cannot hold.
func TestRecordDecodeRoundTrip(t *testing.T) {
	recs := []string{
		`["pypto.identity",1,["tuple",[["bytes","00ff"],["float64","7ff8000000000001"],["float64","fff0000000000000"],["float64","8000000000000000"]]]]`,
		`["pypto.identity",1,["dict",[[["str","24"],["none"]],[["str","2424"],["list",[]]],[["str","eda0bdedb880"],["str","eda080"]]]]]`,
		`["pypto.identity",1,["list",[["str","eda0bdedb880"],["str","edb080eda080"],["str","f09f9880"],["int","-123456789012345678901234567890"]]]]`,
		rowsColsWire,
	}
	for _, rec := range recs {
		code, js, stderr := runProgram(t, rec+"\n", "record", "decode")
		if code != 0 {
			t.Errorf("decode %s: exit %d: %s", rec, code, stderr)
			continue
		}
		code, enc, stderr := runProgram(t, js, "record", "encode")
		if code != 0 || enc != rec+"\n" {
			t.Errorf("decode %s\n  printed %s  encode printed %q (exit %d) %s", rec, js, enc, code, stderr)
		}
	}
	all := strings.Join(recs, "\n") + "\n"
	code, js, _ := runProgram(t, all, "record", "decode", "--lines")
	code2, enc, stderr := runProgram(t, js, "record", "encode", "--lines")
	if code != 0 || code2 != 0 || enc != all {
		t.Errorf("--lines round trip: exit %d/%d, got %q, want %q %s", code, code2, enc, all, stderr)
	}
}

func TestRecordHelp(t *testing.T) {
	for _, args := range [][]string{
		{"record", "encode", "--help"},
		{"record", "digest", "-h"},
		{"help", "record", "digest"},
	} {
		code, stdout, _ := runProgram(t, "", args...)
		if code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		for _, want := range []string{"--wire", "trailing newline", "byte offset", "[FILE|-]", "surrogate"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, stdout)
			}
		}
	}
	code, stdout, _ := runProgram(t, "", "help")
	if code != 0 || !strings.Contains(stdout, "record") {
		t.Errorf("help does not list record (exit %d):\n%s", code, stdout)
	}
}
