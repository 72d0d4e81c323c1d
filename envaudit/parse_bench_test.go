//go:build cgo

package envaudit

import (
	"slices"
	"testing"
	"time"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// BenchmarkParseSideBySide builds the node list of every Python fixture,
// in every iteration and in turn, four ways, and reports the median time
// of each (µs per pass over the fixtures) and the median per-iteration
// ratios to flat-libc:
//
//	flat-libc     tsflat.go's one cgo call per file, allocations through
//	              libc (what init sets)
//	flat-gocb     the same with go-tree-sitter's allocator, whose every
//	              malloc and free calls back from C into Go
//	cursor-libc   go-tree-sitter's Go API (TreeCursor, a cgo call per node
//	              and field), allocations through libc
//	cursor-gocb   go-tree-sitter as it comes: its Go API and its allocator
//
// The allocator is process-wide; switching it between passes is safe
// because both allocators end in libc's malloc and free.
func BenchmarkParseSideBySide(b *testing.B) {
	srcs, _ := benchSources(b, "testdata/python/*.py")
	tb := pyTablesOnce()
	s := NewPythonScanner()
	defer s.Close()
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(tb.lang); err != nil {
		b.Fatal(err)
	}
	defer useLibcAllocator()
	flat := func() {
		for _, src := range srcs {
			if err := s.parser.parse(src, tb, DefaultPythonVersion, &pyTree{src: src}); err != nil {
				b.Fatal(err)
			}
		}
	}
	cursor := func() {
		for _, src := range srcs {
			cursorTree(b, p, tb, src)
		}
	}
	timeIt := func(gocb bool, f func()) float64 {
		if gocb {
			sitter.SetAllocator(nil, nil, nil, nil)
		} else {
			useLibcAllocator()
		}
		t := time.Now()
		f()
		return float64(time.Since(t).Nanoseconds()) / 1e3
	}
	names := []string{"flat-libc", "flat-gocb", "cursor-libc", "cursor-gocb"}
	times := make([][]float64, len(names))
	ratios := make([][]float64, len(names))
	for b.Loop() {
		t := []float64{timeIt(false, flat), timeIt(true, flat), timeIt(false, cursor), timeIt(true, cursor)}
		for i := range t {
			times[i] = append(times[i], t[i])
			ratios[i] = append(ratios[i], t[i]/t[0])
		}
	}
	b.ReportMetric(0, "ns/op")
	for i, n := range names {
		b.ReportMetric(benchMedian(times[i]), n+"-us")
		if i > 0 {
			b.ReportMetric(benchMedian(ratios[i]), n+"/flat-libc")
		}
	}
}

func benchMedian(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
