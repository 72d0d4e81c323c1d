package envaudit

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

func TestPythonFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/python/*.py")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	full := NewPythonScanner()
	defer full.Close()
	full.Full = true
	filtered := NewPythonScanner()
	defer filtered.Close()
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			reads, err := full.Scan(src)
			if err != nil {
				t.Fatal(err)
			}
			checkWants(t, name, reads, wants(t, name, src, "# want"))
			// The prefilter must never hide a read.
			quick, err := filtered.Scan(src)
			if err != nil {
				t.Fatal(err)
			}
			if len(quick) != len(reads) {
				t.Errorf("prefiltered scan found %d reads, full scan %d", len(quick), len(reads))
			}
		})
	}
}

func TestCppFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/cpp/*")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			checkWants(t, name, ScanCpp(src), wants(t, name, src, "// want", "/* want"))
		})
	}
}

// TestGoFixtures scans each txtar archive under testdata/go as one package.
func TestGoFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/go/*.txtar")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			ar, err := txtar.ParseFile(name)
			if err != nil {
				t.Fatal(err)
			}
			p := NewGoPackage()
			for _, f := range ar.Files {
				if err := p.Add(f.Name, f.Data, !strings.HasPrefix(f.Name, "noscan/")); err != nil {
					t.Fatal(err)
				}
			}
			got := p.Reads()
			for _, f := range ar.Files {
				if strings.HasPrefix(f.Name, "noscan/") {
					if len(got[f.Name]) > 0 {
						t.Errorf("%s: scanned a file added for constants only", f.Name)
					}
					continue
				}
				checkWants(t, name+":"+f.Name, got[f.Name], wants(t, f.Name, f.Data, "// want"))
			}
		})
	}
}

func TestPythonSyntaxError(t *testing.T) {
	s := NewPythonScanner()
	defer s.Close()
	_, err := s.Scan([]byte("import os\n\ndef (((:\n    os.getenv('A')\n"))
	se, ok := err.(*SyntaxError)
	if !ok {
		t.Fatalf("got %v, want a *SyntaxError", err)
	}
	if se.Line < 1 || se.Line > 4 {
		t.Errorf("syntax error at line %d, want a line of the file", se.Line)
	}
	// Every file is parsed, whether or not it can hold a read: PyPTO's
	// lint fails on any file Python cannot parse (issue 18).
	if reads, err := s.Scan([]byte("def (((:\n")); err == nil {
		t.Errorf("broken file without reads: %v, no error", reads)
	}
}

func TestGoSyntaxError(t *testing.T) {
	if _, err := ScanGo("x.go", []byte("package x\nfunc (\n")); err == nil {
		t.Fatal("no error for a broken Go file")
	}
}

// TestPythonLiteralValues: string literals decode exactly as Python
// decodes them (issue 18): each literal's value is written out by hand and,
// where python3 is installed, checked against Python's own ast.literal_eval.
func TestPythonLiteralValues(t *testing.T) {
	cases := []struct{ lit, want string }{
		{`"N\N{LATIN SMALL LETTER A}_0"`, "Na_0"},
		{`"\N{latin small letter a}"`, "a"},
		{`"\N{LF}\N{NEL}"`, "\n\u0085"},
		{`"\N{HANGUL SYLLABLE GAG}\N{HANGUL SYLLABLE A}"`, "각아"},
		{`"\N{CJK UNIFIED IDEOGRAPH-20000}"`, "\U00020000"},
		{`"\0\08\777"`, "\x00\x008\u01ff"},
		{`b"\101\102"`, "AB"},
		{`"\x41\u00e9\U0001F600"`, "Aé\U0001F600"},
		{`"LINE_\` + "\n" + `CONT"`, "LINE_CONT"},
		{`"""A` + "\r\n" + `B"""`, "A\nB"},
		{`r"\N{X}\"q"`, `\N{X}\"q`},
		{`f"{{x}}\t"`, "{x}\t"},
		{`rf"{{\n}}"`, `{\n}`},
		{`b"\N{X}\u0041"`, `\N{X}\u0041`},
		{`"\c\8"`, `\c\8`},
	}
	s := NewPythonScanner()
	defer s.Close()
	var src strings.Builder
	src.WriteString("import os\n")
	for _, c := range cases {
		src.WriteString("os.getenv(" + c.lit + ")\n")
	}
	reads, err := s.Scan([]byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(reads) != len(cases) {
		t.Fatalf("%d reads for %d literals", len(reads), len(cases))
	}
	for i, c := range cases {
		if reads[i].Variable != c.want {
			t.Errorf("%s = %q, want %q", c.lit, reads[i].Variable, c.want)
		}
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return
	}
	// One process evaluates every literal (none has a placeholder, so
	// evaluating runs no code) and prints each value's hex.
	var lits []string
	for _, c := range cases {
		lits = append(lits, c.lit)
	}
	in, _ := json.Marshal(lits)
	prog := "import json,sys\nfor s in json.load(sys.stdin):\n" +
		"    v = eval(compile(s, '<literal>', 'eval'), {})\n" +
		"    print((v if isinstance(v, bytes) else v.encode('utf-8', 'surrogatepass')).hex())"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", prog)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	got := strings.Fields(string(out))
	if len(got) != len(cases) {
		t.Fatalf("python3 printed %d values for %d literals", len(got), len(cases))
	}
	for i, c := range cases {
		if v, _ := hex.DecodeString(got[i]); string(v) != c.want {
			t.Errorf("python3 decodes %s as %q, the test says %q", c.lit, v, c.want)
		}
	}
}
