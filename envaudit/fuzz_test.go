//go:build cgo

package envaudit

import (
	"bytes"
	"slices"
	"testing"
)

// checkLines asserts that every read's line is a line of src and that
// reads come in source order.
func checkLines(t *testing.T, src []byte, reads []Read) {
	t.Helper()
	n := bytes.Count(src, []byte("\n")) + 1
	for i, r := range reads {
		if r.Line < 1 || r.Line > n {
			t.Fatalf("read %+v outside the %d lines of the source", r, n)
		}
		if i > 0 && r.Line < reads[i-1].Line {
			t.Fatalf("reads out of order: %+v after %+v", r, reads[i-1])
		}
		if r.Function == "" {
			t.Fatalf("read %+v without a function", r)
		}
	}
}

func FuzzScanCpp(f *testing.F) {
	f.Add([]byte(`auto v = std::getenv("A" "B"); // getenv("C")`))
	f.Add([]byte("R\"x(getenv(\"A\"))x\" getenv(u8\"B\") 1'2'3 getenv(n) get\\\nenv(\"C\")"))
	f.Fuzz(func(t *testing.T, src []byte) {
		reads := ScanCpp(src)
		checkLines(t, src, reads)
		// Prose after the source cannot change what the source reads.
		more := ScanCpp(append(slices.Clip(src), "\n// getenv(\"TRAILING\")\n"...))
		if len(more) < len(reads) {
			t.Fatalf("a trailing comment removed reads: %v then %v", reads, more)
		}
	})
}

func FuzzScanPython(f *testing.F) {
	f.Add([]byte("import os\nos.getenv('A')\n"))
	f.Add([]byte("from os import environ as E\nK = b'X'\ndef f(K):\n    return E[K], dict(E)\n"))
	full := NewPythonScanner()
	full.Full = true
	quick := NewPythonScanner()
	f.Cleanup(func() { full.Close(); quick.Close() })
	f.Fuzz(func(t *testing.T, src []byte) {
		reads, err := full.Scan(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			return
		}
		checkLines(t, src, reads)
		q, err := quick.Scan(src)
		if err != nil || !slices.Equal(q, reads) && len(q)+len(reads) > 0 {
			t.Fatalf("prefiltered scan: %v, %v; full scan: %v", q, err, reads)
		}
	})
}

func FuzzScanGo(f *testing.F) {
	f.Add([]byte("package a\nimport \"os\"\nconst N = \"A\" + \"B\"\nfunc f() { os.Getenv(N); os.Environ() }\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		reads, err := ScanGo("a.go", src)
		if err != nil {
			return
		}
		checkLines(t, src, reads)
	})
}
