package ptojit_test

// This test keeps the files of the worker packages in one order: a file
// may use the declarations of the files below it, never of one that uses
// its own, so each file can be read (and moved) after the ones it needs.

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// acyclicPackages are the packages whose non-test files may not reference
// each other in a cycle.
var acyclicPackages = []string{
	"registry/worker",
	"registry/worker/child",
	"registry/worker/mailbox",
}

// fileGraph is the reference graph between the files of one package: uses
// maps a file to the files whose declarations it uses, each with the
// identifiers it uses there.
type fileGraph struct {
	files []string                       // base names, sorted
	uses  map[string]map[string][]string // from -> to -> identifiers, sorted
}

// buildFileGraph type-checks the named files of one package and returns
// its file graph. exports maps an import path to its export data file (as
// go list -export prints it).
func buildFileGraph(dir string, names []string, exports map[string]string) (*fileGraph, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := exports[path]
		if !ok || p == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check(dir, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-check %s: %w", dir, err)
	}
	g := &fileGraph{uses: map[string]map[string][]string{}}
	for _, n := range names {
		g.files = append(g.files, filepath.Base(n))
	}
	slices.Sort(g.files)
	fileOf := func(p token.Pos) string { return filepath.Base(fset.Position(p).Filename) }
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		from, to := fileOf(id.Pos()), fileOf(obj.Pos())
		if from == to {
			continue
		}
		if g.uses[from] == nil {
			g.uses[from] = map[string][]string{}
		}
		name := obj.Name()
		if v, ok := obj.(*types.Var); ok && v.IsField() {
			name = "field " + name
		} else if f, ok := obj.(*types.Func); ok && f.Signature().Recv() != nil {
			name = "method " + name
		}
		if !slices.Contains(g.uses[from][to], name) {
			g.uses[from][to] = append(g.uses[from][to], name)
		}
	}
	for _, m := range g.uses {
		for _, ids := range m {
			slices.Sort(ids)
		}
	}
	return g, nil
}

// cycles returns one description per strongly connected component of more
// than one file: its files, then a cycle through them with the identifiers
// each file uses from the next.
func (g *fileGraph) cycles() []string {
	// Tarjan's algorithm, in file order so the report is stable.
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var sccs [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range g.targets(v) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			if len(scc) > 1 {
				slices.Sort(scc)
				sccs = append(sccs, scc)
			}
		}
	}
	for _, f := range g.files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	var out []string
	for _, scc := range sccs {
		path := g.cycleIn(scc)
		var b strings.Builder
		fmt.Fprintf(&b, "files %s reference each other: ", strings.Join(scc, ", "))
		for i, f := range path[:len(path)-1] {
			fmt.Fprintf(&b, "%s uses %s of %s", f, strings.Join(g.uses[f][path[i+1]], ", "), path[i+1])
			if i < len(path)-2 {
				b.WriteString("; ")
			}
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}

func (g *fileGraph) targets(from string) []string {
	var ts []string
	for to := range g.uses[from] {
		ts = append(ts, to)
	}
	slices.Sort(ts)
	return ts
}

// cycleIn returns a shortest cycle through the first file of scc, as a path
// that starts and ends with it.
func (g *fileGraph) cycleIn(scc []string) []string {
	start := scc[0]
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.targets(v) {
			if !slices.Contains(scc, w) {
				continue
			}
			if w == start {
				path := []string{start}
				for u := v; u != start; u = prev[u] {
					path = append(path, u)
				}
				path = append(path, start)
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return scc // unreachable for a strongly connected component
}

func TestNoFileCycles(t *testing.T) {
	var patterns []string
	for _, p := range acyclicPackages {
		patterns = append(patterns, "./"+p)
	}
	exports := map[string]string{}
	for _, line := range goList(t, nil, append([]string{"-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}, patterns...)...) {
		if path, file, ok := strings.Cut(line, " "); ok {
			exports[path] = file
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range goList(t, nil, append([]string{"-f", "{{.Dir}} {{join .GoFiles \" \"}}"}, patterns...)...) {
		f := strings.Fields(line)
		g, err := buildFileGraph(f[0], f[1:], exports)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.files) < 2 {
			t.Errorf("%s: only %d files; is the file list right?", f[0], len(g.files))
		}
		rel, err := filepath.Rel(wd, f[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d files, %d of them use others", rel, len(g.files), len(g.uses))
		for _, c := range g.cycles() {
			t.Errorf("%s: %s", rel, c)
		}
	}
}

// TestFileCyclesFound runs the check on a fixture with two cycles: one
// through three files, one through a method that a file declares on
// another's type and the other calls.
func TestFileCyclesFound(t *testing.T) {
	dir := filepath.Join("testdata", "filecycle")
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	exports := map[string]string{}
	for _, line := range goList(t, nil, "-export", "-f", "{{.ImportPath}} {{.Export}}", "strings") {
		if path, file, ok := strings.Cut(line, " "); ok {
			exports[path] = file
		}
	}
	g, err := buildFileGraph(dir, names, exports)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"files a.go, b.go, c.go reference each other: a.go uses B of b.go; b.go uses C, field n of c.go; c.go uses A of a.go",
		"files d.go, e.go reference each other: d.go uses method Close of e.go; e.go uses D, field open of d.go",
	}
	if got := g.cycles(); !slices.Equal(got, want) {
		t.Errorf("cycles:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
