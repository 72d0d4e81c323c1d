package envaudit

import (
	"os"
	"path/filepath"
	"testing"
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
