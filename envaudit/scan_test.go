//go:build cgo

package envaudit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	// The prefilter skips files that cannot hold a read, parseable or not.
	if reads, err := s.Scan([]byte("def (((:\n")); err != nil || reads != nil {
		t.Errorf("prefiltered broken file: %v, %v", reads, err)
	}
}

func TestGoSyntaxError(t *testing.T) {
	if _, err := ScanGo("x.go", []byte("package x\nfunc (\n")); err == nil {
		t.Fatal("no error for a broken Go file")
	}
}
