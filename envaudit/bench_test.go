//go:build cgo

package envaudit

import (
	"os"
	"path/filepath"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// benchSources returns the fixture files matching pattern.
func benchSources(b *testing.B, pattern string) ([][]byte, int64) {
	files, _ := filepath.Glob(pattern)
	var srcs [][]byte
	var n int64
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		srcs = append(srcs, src)
		n += int64(len(src))
	}
	return srcs, n
}

// BenchmarkScanPython parses and analyses the Python fixtures (every one
// holds reads, so the prefilter never skips).
func BenchmarkScanPython(b *testing.B) {
	srcs, n := benchSources(b, "testdata/python/*.py")
	s := NewPythonScanner()
	defer s.Close()
	s.Full = true
	b.SetBytes(n)
	for b.Loop() {
		for _, src := range srcs {
			if _, err := s.Scan(src); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkScanCpp(b *testing.B) {
	srcs, n := benchSources(b, "testdata/cpp/*")
	b.SetBytes(n)
	for b.Loop() {
		for _, src := range srcs {
			ScanCpp(src)
		}
	}
}

// BenchmarkParseFlat and BenchmarkParseCursor build the same node list from
// the Python fixtures: in one cgo call per file, and through go-tree-sitter's
// Go API (TreeCursor), which crosses cgo for every node and field.
func BenchmarkParseFlat(b *testing.B) {
	srcs, n := benchSources(b, "testdata/python/*.py")
	s := NewPythonScanner()
	defer s.Close()
	tb := pyTablesOnce()
	b.SetBytes(n)
	for b.Loop() {
		for _, src := range srcs {
			if err := s.parser.parse(src, tb, DefaultPythonVersion, &pyTree{src: src}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkParseCursor(b *testing.B) {
	srcs, n := benchSources(b, "testdata/python/*.py")
	tb := pyTablesOnce()
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(tb.lang); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	for b.Loop() {
		for _, src := range srcs {
			cursorTree(b, p, tb, src)
		}
	}
}
