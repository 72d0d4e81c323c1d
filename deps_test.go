package ptojit_test

// This test keeps the import arrows of docs/design.md, as Go's own
// go/build/deps_test.go keeps the standard library's.

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ptojit/ptojit"

// arrows lists, for each layer of ptojit, the layers it may import. A package
// belongs to the layer with the longest matching path prefix; "." is the
// module's root package alone. "*" allows everything.
var arrows = map[string][]string{
	".":                       {}, // the repository's environment registry
	"inventory":               {},
	"registry":                {},
	"api":                     {"registry"},
	"api/client":              {"api", "filesys/flock", "filesys/owned"},
	"cache":                   {"internal/value", "filesys/owned"},
	"cache/remote":            {"cache", "internal/value"},
	"cache/remote/tiers":      {"cache/remote", "internal/config", "registry/module"},
	"cache/report":            {"cache", "cache/remote"},
	"filesys/durable":         {},
	"filesys/owned":           {},                                    // the ownership rule of the cache, module and runtime directories
	"filesys/flock":           {},                                    // the lock helper of the daemon, the module store and its pins
	"internal/config":         {"filesys/durable", "internal/value"}, // imported by cmd/ptojitd only
	"internal/value":          {},
	"daemon":                  {"api", "api/client", "filesys/durable"},
	"envaudit/envreg":         {},
	"envaudit":                {"envaudit/envreg"},
	"toolchain":               {"inventory", "registry"},
	"registry/worker":         {"registry/worker/mailbox", "registry/opquery", "registry"},
	"registry/worker/mailbox": {},
	"registry/worker/child":   {"registry/worker/mailbox", "registry/opquery", "registry", "registry/worker/internal/childfault"},
	// The child's fault-injection seam: only the child imports it outside
	// tests, so no program but a test binary can set it.
	"registry/worker/internal/childfault": {"registry/worker/mailbox", "registry"},
	"registry/module":                     {"inventory", "registry", "registry/semver", "filesys/durable", "filesys/flock", "filesys/owned"},
	"registry/opquery":                    {"registry/semver"},
	"registry/ops":                        {"registry/module", "registry/opquery", "registry/semver", "registry", "registry/worker", "inventory"},
	"registry/semver":                     {},
	"jit":                                 {"api", "api/client", "cache", "toolchain", "inventory", "registry", "envaudit/envreg", "filesys/durable", "."},
	"observe":                             {"api", "cache", "cache/remote", "cache/report", "daemon", "filesys/durable", "internal/config", "internal/value", "jit"},
	"cmd/internal/cli":                    {},
	"cmd/internal/clientcmd":              {"cmd/internal/cli", "api", "api/client", "inventory", "registry", "internal/value"},
	"cmd/ptojit":                          {"cmd/internal/cli", "cmd/internal/clientcmd", "api", "api/client", "inventory", "registry"},
	"cmd/ptojitd":                         {"*"},
	"bench":                               {"*"},
	"test":                                {"*"}, // the fault suite drives the binaries
	"test/soundness":                      {"*"}, // so does the soundness suite
	"test/realtoolchain":                  {"*"}, // and the real toolchain's test
	"test/fixture":                        {},    // test fixtures, imported by tests only
}

// stdlibOnly layers may import nothing outside the standard library and
// ptojit, directly or indirectly; extra lists the modules each may add.
//
// inventory's walk runs on a task stack of its own (golang.org/x/sync/errgroup
// is only its benchmark's baseline), so none of these layers, and not the
// client, links a module beyond the standard library's.
var stdlibOnly = map[string][]string{
	".":                       nil,
	"inventory":               nil,
	"registry":                nil,
	"api":                     nil,
	"api/client":              {"golang.org/x/sys"},
	"envaudit/envreg":         nil,
	"registry/module":         nil,
	"filesys/durable":         nil,
	"filesys/owned":           nil,
	"registry/opquery":        nil,
	"registry/semver":         nil,
	"internal/config":         nil,
	"internal/value":          nil,
	"daemon":                  {"golang.org/x/sys"},
	"cmd/internal/cli":        {"github.com/spf13/pflag"},
	"cmd/internal/clientcmd":  {"github.com/spf13/pflag"},
	"cmd/ptojit":              {"github.com/spf13/pflag"},
	"registry/worker/mailbox": {"golang.org/x/sys"},
	"filesys/flock":           {"golang.org/x/sys"},
}

func layerOf(rel string) (string, bool) {
	if rel == "" {
		return ".", true
	}
	best, found := "", false
	for l := range arrows {
		if (rel == l || strings.HasPrefix(rel, l+"/")) && (!found || len(l) > len(best)) {
			best, found = l, true
		}
	}
	return best, found
}

func goList(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, msg)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func TestImportArrows(t *testing.T) {
	for _, line := range goList(t, nil, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		from, ok := layerOf(pkg)
		if !ok {
			t.Errorf("package %s is in no layer: add it to the arrows in deps_test.go and docs/design.md", f[0])
			continue
		}
		for _, msg := range crossings(f[0], from, f[1:]) {
			t.Error(msg)
		}
	}
}

// crossings lists the imports of pkg, a package of layer from, that its
// layer may not make.
func crossings(pkg, from string, imports []string) []string {
	var bad []string
	allowed := arrows[from]
	for _, imp := range imports {
		if imp != module && !strings.HasPrefix(imp, module+"/") {
			continue
		}
		to, _ := layerOf(strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
		if to == from || slices.Contains(allowed, "*") || slices.Contains(allowed, to) {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s imports %s: layer %q may import only %v", pkg, imp, from, allowed))
	}
	return bad
}

// TestImportArrowsCatchABadImport proves the check bites: the fixture
// package testdata/deps/badimport, taken as a package of a standard-library
// layer, imports the build driver, and the check must name that import.
func TestImportArrowsCatchABadImport(t *testing.T) {
	line := goList(t, nil, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./testdata/deps/badimport")
	f := strings.Fields(line[0])
	for _, layer := range []string{"inventory", "registry/worker", "daemon", "cmd/ptojit"} {
		bad := crossings(f[0], layer, f[1:])
		if len(bad) != 1 || !strings.Contains(bad[0], module+"/jit") {
			t.Errorf("as a package of layer %s, the fixture gives %q; want one crossing naming %s/jit", layer, bad, module)
		}
	}
	if bad := crossings(f[0], "cmd/ptojitd", f[1:]); len(bad) != 0 {
		t.Errorf("the engine may import everything, but the check reports %q", bad)
	}
}

func TestStandardLibraryOnly(t *testing.T) {
	for layer, extra := range stdlibOnly {
		if _, err := os.Stat(layer); err != nil {
			continue // the layer has no code yet
		}
		pattern := "./" + layer + "/..."
		if layer == "." {
			pattern = "."
		}
		// Only the layer's own packages: a nested layer (registry/ops
		// under registry) has its own rule.
		var pkgs []string
		for _, p := range goList(t, nil, pattern) {
			if l, _ := layerOf(strings.TrimPrefix(strings.TrimPrefix(p, module), "/")); l == layer {
				pkgs = append(pkgs, p)
			}
		}
		lines := goList(t, []string{"CGO_ENABLED=0"}, append([]string{"-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)...)
		for _, dep := range lines {
			if dep == "" || strings.HasPrefix(dep, module) {
				continue
			}
			if !slices.ContainsFunc(extra, func(m string) bool { return dep == m || strings.HasPrefix(dep, m+"/") }) {
				t.Errorf("%s depends on %s; it may use only the standard library%s", layer, dep, map[bool]string{true: " and " + strings.Join(extra, ", ")}[len(extra) > 0])
			}
		}
	}
}

// TestClientIsStatic proves that the thin client builds without cgo and
// links none of the heavy dependencies whose package initialization would
// slow every build's process start (docs/design.md "Process model").
func TestClientIsStatic(t *testing.T) {
	deps := goList(t, []string{"CGO_ENABLED=0"}, "-deps", "./cmd/ptojit")
	for _, d := range deps {
		for _, banned := range []string{"github.com/dgraph-io/badger", "github.com/go-git/", "github.com/tree-sitter/", "runtime/cgo", "github.com/ebitengine/purego", "github.com/redis/"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("cmd/ptojit depends on %s", d)
			}
		}
	}
	// Only package net (through pflag) uses cgo, and only for name
	// resolution: CGO_ENABLED=0 builds the client static. No ptojit
	// package of the client may use cgo.
	cgo := goList(t, nil, "-deps", "-f", "{{if .CgoFiles}}{{.ImportPath}}{{end}}", "./cmd/ptojit")
	for _, d := range cgo {
		if d != "" && d != "net" && d != "runtime/cgo" {
			t.Errorf("cmd/ptojit depends on cgo package %s", d)
		}
	}
}

// TestStoreImportsNoServer holds the store below the server: no package of
// cache (the store, its remote tiers, its reports) depends on the daemon's
// socket server, directly or through another package.
func TestStoreImportsNoServer(t *testing.T) {
	for _, d := range goList(t, nil, "-deps", "./cache/...") {
		if d == module+"/daemon" {
			t.Errorf("a package of cache depends on %s", d)
		}
	}
}

// TestFolderGraphIsAcyclic draws the house by folder: each top-level folder
// is one node, with an edge for every import between packages of two
// folders. No arrow may run back up, so the graph has no cycle.
func TestFolderGraphIsAcyclic(t *testing.T) {
	edges := map[string]map[string]bool{}
	for _, line := range goList(t, nil, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...") {
		f := strings.Fields(line)
		from := folderOf(f[0])
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if to := folderOf(imp); to != from {
				if edges[from] == nil {
					edges[from] = map[string]bool{}
				}
				edges[from][to] = true
			}
		}
	}
	if c := folderCycle(edges); c != nil {
		t.Errorf("drawn by folder, the imports run in a circle: %s", strings.Join(c, " -> "))
	}
}

// TestFolderCycleFindsACycle proves that the check bites.
func TestFolderCycleFindsACycle(t *testing.T) {
	edges := map[string]map[string]bool{
		"cmd":      {"registry": true, "api": true},
		"api":      {"registry": true},
		"registry": {"internal": true},
		"internal": {"api": true},
	}
	c := folderCycle(edges)
	if len(c) != 4 || c[0] != c[len(c)-1] {
		t.Fatalf("folderCycle = %q, want the circle api -> registry -> internal -> api", c)
	}
	delete(edges["internal"], "api")
	if c := folderCycle(edges); c != nil {
		t.Errorf("folderCycle of an acyclic graph = %q", c)
	}
}

// folderOf names the top-level folder of a package path ("." for the root).
func folderOf(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	if rel == "" {
		return "."
	}
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// folderCycle returns one cycle of the graph (its first node repeated at
// the end), or nil.
func folderCycle(edges map[string]map[string]bool) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = open
		stack = append(stack, n)
		next := make([]string, 0, len(edges[n]))
		for m := range edges[n] {
			next = append(next, m)
		}
		slices.Sort(next)
		for _, m := range next {
			switch state[m] {
			case open:
				i := slices.Index(stack, m)
				return append(slices.Clone(stack[i:]), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	nodes := make([]string, 0, len(edges))
	for n := range edges {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

// TestDesignDocument holds docs/design.md's table of packages to the code:
// every package that go list prints has a row, every row names a package,
// and each row's imports column states the arrows of the package's layer.
// The test reads the document and never writes it.
func TestDesignDocument(t *testing.T) {
	doc, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := designRows(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, p := range goList(t, nil, "./...") {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if rel == "" {
			rel = "."
		}
		pkgs = append(pkgs, rel)
	}
	for _, msg := range designMismatches(rows, pkgs) {
		t.Error("docs/design.md: " + msg)
	}
}

// TestDesignDocumentCatchesDrift proves the check bites: a missing row, a
// row for no package and a wrong imports column each give a message.
func TestDesignDocumentCatchesDrift(t *testing.T) {
	doc := "| package | its one job | may import, beside its own layer |\n|---|---|---|\n" +
		"| `inventory` | records | nothing of ptojit |\n" +
		"| `toolchain` | components | `inventory` |\n" +
		"| `gone` | a package that no longer exists | nothing of ptojit |\n"
	rows, err := designRows(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := designMismatches(rows, []string{"inventory", "toolchain", "jit"})
	want := []string{"no row for package jit", "a row for gone, which go list does not print", "toolchain may import"}
	if len(got) != len(want) {
		t.Fatalf("mismatches = %q, want %d of them", got, len(want))
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
			t.Errorf("mismatches = %q, want one containing %q", got, w)
		}
	}
	if _, err := designRows("no table here\n"); err == nil {
		t.Error("designRows of a document without the table: no error")
	}
}

// designRows reads the package table: package -> its imports column.
func designRows(doc string) (map[string]string, error) {
	const header = "| package | its one job | may import, beside its own layer |"
	i := strings.Index(doc, header)
	if i < 0 {
		return nil, fmt.Errorf("no table headed %q", header)
	}
	rows := map[string]string{}
	for n, line := range strings.Split(doc[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			return nil, fmt.Errorf("row %d of the package table has no package and three cells: %q", n+1, line)
		}
		rows[strings.Trim(strings.TrimSpace(cells[0]), "`")] = strings.TrimSpace(cells[2])
	}
	return rows, nil
}

// designMismatches lists where the table and the packages disagree.
func designMismatches(rows map[string]string, pkgs []string) []string {
	var bad []string
	for _, p := range pkgs {
		col, ok := rows[p]
		if !ok {
			bad = append(bad, "no row for package "+p)
			continue
		}
		rel := p
		if rel == "." {
			rel = ""
		}
		layer, _ := layerOf(rel)
		if want := importsColumn(arrows[layer]); col != want {
			bad = append(bad, fmt.Sprintf("%s may import %s (its layer %q), but its row says %s", p, want, layer, col))
		}
	}
	for r := range rows {
		if !slices.Contains(pkgs, r) {
			bad = append(bad, "a row for "+r+", which go list does not print")
		}
	}
	slices.Sort(bad)
	return bad
}

// importsColumn is how the table states a layer's arrows.
func importsColumn(allowed []string) string {
	switch {
	case slices.Contains(allowed, "*"):
		return "everything"
	case len(allowed) == 0:
		return "nothing of ptojit"
	}
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = "`" + a + "`"
	}
	return strings.Join(q, ", ")
}
