package module

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/filesys/durable"
)

// benchModules generates n modules with edges edges in all: module i
// depends on up to three earlier modules, and the last ones on a fourth,
// until the count is reached. Returns the packages in install order
// (dependencies first).
func benchModules(b *testing.B, n, edges int) [][]byte {
	k := testKey("acme")
	total := 0
	deps := make([][]int, n)
	for i := 1; i < n; i++ {
		for _, j := range []int{i - 1, i / 2, i / 3} {
			if j < i && total < edges && !containsInt(deps[i], j) {
				deps[i] = append(deps[i], j)
				total++
			}
		}
	}
	for i := n - 1; i > 3 && total < edges; i-- {
		if j := i - 4; !containsInt(deps[i], j) {
			deps[i] = append(deps[i], j)
			total++
		}
	}
	if total != edges {
		b.Fatalf("generated %d edges, want %d", total, edges)
	}
	out := make([][]byte, n)
	for i := range n {
		var ds []Dependency
		for _, j := range deps[i] {
			ds = append(ds, dep(fmt.Sprintf("bench.m%04d", j), "1.0.0", "1.9.99"))
		}
		id := fmt.Sprintf("bench.m%04d", i)
		out[i] = testPack(b, testManifest(b, id, "1.0.0", "org.acme", []string{id + ".impl"}, ds...), k)
	}
	return out
}

func containsInt(l []int, x int) bool {
	for _, y := range l {
		if y == x {
			return true
		}
	}
	return false
}

// benchStore installs pkgs into a new store in dir.
func benchStore(b *testing.B, dir string, pkgs [][]byte) *Store {
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b)
	if err := s.TrustAdd(ctx, "org.acme", pub(testKey("acme"))); err != nil {
		b.Fatal(err)
	}
	for i, p := range pkgs {
		if _, err := s.Install(ctx, p); err != nil {
			b.Fatalf("install %d: %v", i, err)
		}
	}
	return s
}

// BenchmarkInstall1000 installs 1,000 generated modules with 3,000 edges,
// one transaction each (verify, validate the whole graph, durable writes of
// the package and state.json), and, interleaved in the same iteration, the
// baseline: the same 1,000 durable writes of the package files and of a
// state file growing to the same size, with no verification or graph work.
// It reports ms/install for both and their ratio.
func BenchmarkInstall1000(b *testing.B) {
	pkgs := benchModules(b, 1000, 3000)
	var inst, base time.Duration
	for range b.N {
		t0 := time.Now()
		s := benchStore(b, b.TempDir(), pkgs)
		inst += time.Since(t0)
		st, _ := os.ReadFile(filepath.Join(s.dir, stateFile))
		per := len(st) / len(pkgs)
		dir := b.TempDir()
		t0 = time.Now()
		for i, p := range pkgs {
			if err := durable.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d", i)), p, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := durable.WriteFile(filepath.Join(dir, "state"), st[:per*(i+1)], 0o644); err != nil {
				b.Fatal(err)
			}
		}
		base += time.Since(t0)
	}
	n := float64(b.N * len(pkgs))
	b.ReportMetric(float64(inst.Microseconds())/1000/n, "ms/install")
	b.ReportMetric(float64(base.Microseconds())/1000/n, "baseline-ms/install")
	b.ReportMetric(float64(inst)/float64(base), "ratio")
}

// sharedStore is the 1,000-module store of the read benchmarks, built once
// per test process.
var sharedStore struct {
	once sync.Once
	s    *Store
}

func benchShared(b *testing.B) *Store {
	sharedStore.once.Do(func() {
		dir, err := os.MkdirTemp("", "ptojit-module-bench-")
		if err != nil {
			b.Fatal(err)
		}
		sharedStore.s = benchStore(b, dir, benchModules(b, 1000, 3000))
	})
	if sharedStore.s == nil {
		b.Fatal("the shared store could not be built")
	}
	return sharedStore.s
}

// BenchmarkValidateGraph validates the graph of 1,000 enabled modules with
// 3,000 edges and computes the load order.
func BenchmarkValidateGraph(b *testing.B) {
	s := benchShared(b)
	st, _, _ := s.snapshot()
	b.ResetTimer()
	for range b.N {
		order, err := validateGraph(st)
		if err != nil || len(order) != 1000 {
			b.Fatal(len(order), err)
		}
	}
}

// BenchmarkLs is "module ls" on the 1,000-module store: open the store
// (read state.json and trust.json, parse and validate every manifest,
// recover) and list; interleaved with the baseline of reading state.json
// and decoding it with encoding/json into untyped values.
func BenchmarkLs(b *testing.B) {
	s := benchShared(b)
	var ls, base time.Duration
	for range b.N {
		t0 := time.Now()
		s2, err := Open(s.dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		l, err := s2.List()
		if err != nil || len(l) != 1000 {
			b.Fatal(len(l), err)
		}
		for _, m := range l {
			fmt.Fprintf(io.Discard, "%s %s %v %s %s\n", m.PackageID, m.Version, m.Enabled, m.Publisher, m.Digest[:12])
		}
		ls += time.Since(t0)
		t0 = time.Now()
		raw, err := os.ReadFile(filepath.Join(s.dir, stateFile))
		if err != nil {
			b.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			b.Fatal(err)
		}
		base += time.Since(t0)
	}
	b.ReportMetric(float64(ls.Microseconds())/1000/float64(b.N), "ms/ls")
	b.ReportMetric(float64(base.Microseconds())/1000/float64(b.N), "baseline-ms/read")
	b.ReportMetric(float64(ls)/float64(base), "ratio")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedStore.s != nil {
		os.RemoveAll(sharedStore.s.dir)
	}
	os.Exit(code)
}
