package ptojit_test

// This test keeps the import arrows of docs/design.md, as Go's own
// go/build/deps_test.go keeps the standard library's.

import (
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
	".":                      {}, // the repository's environment registry
	"inventory":              {},
	"registry":               {},
	"api":                    {"registry"},
	"api/client":             {"api", "internal/flock"},
	"cache":                  {},
	"cache/remote":           {"cache"},
	"internal/durable":       {},
	"internal/flock":         {},                   // the lock helper of the module store and its pins
	"internal/config":        {"internal/durable"}, // imported by cmd/ptojitd only
	"envaudit/envreg":        {},
	"envaudit":               {"envaudit/envreg"},
	"toolchain":              {"inventory", "registry"},
	"worker":                 {"registry"},
	"registry/module":        {"inventory", "registry", "internal/durable", "internal/flock"},
	"registry/ops":           {"registry/module", "registry", "worker", "inventory"},
	"jit":                    {"api", "api/client", "cache", "toolchain", "inventory", "registry", "envaudit/envreg", "."},
	"cmd/internal/cli":       {},
	"cmd/internal/clientcmd": {"cmd/internal/cli", "api", "api/client", "inventory", "registry"},
	"cmd/ptojit":             {"cmd/internal/cli", "cmd/internal/clientcmd", "api", "api/client", "inventory", "registry"},
	"cmd/ptojitd":            {"*"},
	"bench":                  {"*"},
	"test":                   {"*"}, // the fault suite drives the binaries
	"internal/fixture":       {},    // test fixtures, imported by tests only
}

// stdlibOnly layers may import nothing outside the standard library and
// ptojit, directly or indirectly; extra lists the modules each may add.
//
// inventory's walk runs on golang.org/x/sync/errgroup (that package
// alone), and so everything that fingerprints does: registry/module
// (inside the registry pattern) and the client.
var stdlibOnly = map[string][]string{
	".":                      nil,
	"inventory":              {errgroup},
	"registry":               {errgroup},
	"api":                    nil,
	"api/client":             {"golang.org/x/sys"},
	"envaudit/envreg":        nil,
	"registry/module":        {errgroup},
	"internal/durable":       nil,
	"internal/flock":         {"golang.org/x/sys"},
	"internal/config":        nil,
	"cmd/internal/cli":       {"github.com/spf13/pflag"},
	"cmd/internal/clientcmd": {"github.com/spf13/pflag", errgroup},
	"cmd/ptojit":             {"github.com/spf13/pflag", errgroup},
}

const errgroup = "golang.org/x/sync/errgroup"

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
		allowed := arrows[from]
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to, _ := layerOf(strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
			if to == from || slices.Contains(allowed, "*") || slices.Contains(allowed, to) {
				continue
			}
			t.Errorf("%s imports %s: layer %q may import only %v", f[0], imp, from, allowed)
		}
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
