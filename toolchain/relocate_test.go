package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

// relocatable builds, under dir, a pypto package, a runtime checkout
// (committed at a fixed time, so that two copies have one HEAD) with its
// Python packages, and a root identified by the content fallback, and
// returns their build-policy identities.
func relocatable(t *testing.T, dir string, edit map[string]string) []ComponentIdentity {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	files := map[string]string{
		"pypto/pypto/__init__.py":                  "pass\n",
		"pypto/pypto/jit.py":                       "x = 1\n",
		"runtime/python/simpler/__init__.py":       "pass\n",
		"runtime/python/simpler_setup/__init__.py": "y = 2\n",
		"runtime/include/rt.h":                     "int rt;\n",
		"pto-isa/include/pto.hpp":                  "int pto;\n",
	}
	for k, v := range edit {
		files[k] = v
	}
	writeFiles(t, dir, files)
	rt := filepath.Join(dir, "runtime")
	t.Setenv("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
	t.Setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
	runGit(t, rt, "init", "-q")
	runGit(t, rt, "add", ".")
	runGit(t, rt, "commit", "-qm", "fixture")

	cfg := Config{Environ: os.Environ()}
	in := &ToolchainInputs{Policy: PolicyBuild}
	py := proven(ComponentInputs{})
	py.build = pyptoBuild(context.Background(), &cfg, filepath.Join(dir, "pypto"))
	run := proven(ComponentInputs{})
	run.build = runtimeBuild(&cfg, rt)
	isa := proven(ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, filepath.Join(dir, "pto-isa"))}})
	var out []ComponentIdentity
	for _, c := range []struct {
		name string
		ci   ComponentInputs
	}{{Pypto, py}, {Runtime, run}, {PtoIsa, isa}} {
		id := buildIdentity(c.name, c.ci, in, nil)
		if id.Unavailable != "" {
			t.Fatalf("%s: %s", c.name, id.Unavailable)
		}
		out = append(out, id)
	}
	return out
}

// relTo is a rel function: paths under dir relative to it.
func relTo(dir string) func(inventory.Str) inventory.Str {
	return func(s inventory.Str) inventory.Str {
		if r, ok := strings.CutPrefix(string(s), dir+"/"); ok {
			return inventory.Str(r)
		}
		return s
	}
}

// TestRelocatedBuildDigest: the same files at two paths have different
// build-policy digests (PyPTO's records hold absolute paths) and one
// relocated digest per component, which names the paths it made
// relative; a copy that differs in one file keeps a different relocated
// digest; a path outside the directory stays absolute.
func TestRelocatedBuildDigest(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b", "deeper")
	ida, idb := relocatable(t, a, nil), relocatable(t, b, nil)
	wantPaths := map[string][]string{
		Pypto:   {"pypto/pypto"},
		Runtime: {"runtime", "runtime/python/simpler", "runtime/python/simpler_setup"},
		PtoIsa:  {"pto-isa"},
	}
	for i := range ida {
		if ida[i].Digest == idb[i].Digest {
			t.Errorf("%s: equal absolute digests at two paths", ida[i].Name)
		}
		sa, pa, oka := ida[i].RelocatedBuildDigest("", false, relTo(a))
		sb, pb, okb := idb[i].RelocatedBuildDigest("", false, relTo(b))
		if !oka || !okb || sa != sb {
			t.Errorf("%s: relocated digests %v %v (ok %v %v)", ida[i].Name, sa, sb, oka, okb)
		}
		if !slices.Equal(pa, wantPaths[ida[i].Name]) || !slices.Equal(pa, pb) {
			t.Errorf("%s: relative paths %q and %q, want %q", ida[i].Name, pa, pb, wantPaths[ida[i].Name])
		}
		// Nothing under another directory: the digest itself.
		if s, p, _ := ida[i].RelocatedBuildDigest("", false, relTo(b)); s != ida[i].Digest || len(p) != 0 {
			t.Errorf("%s: relocated under an unrelated directory: %v %q", ida[i].Name, s, p)
		}
		// The epoch enters the relocated digest too.
		if s, _, _ := ida[i].RelocatedBuildDigest("1", true, relTo(a)); s == sa {
			t.Errorf("%s: the epoch does not change the relocated digest", ida[i].Name)
		}
	}
	c := filepath.Join(t.TempDir(), "c")
	idc := relocatable(t, c, map[string]string{
		"pypto/pypto/jit.py":                       "x = 2\n",
		"runtime/python/simpler_setup/__init__.py": "y = 3\n",
		"pto-isa/include/pto.hpp":                  "int pto2;\n",
	})
	for i := range ida {
		sa, _, _ := ida[i].RelocatedBuildDigest("", false, relTo(a))
		if sc, _, _ := idc[i].RelocatedBuildDigest("", false, relTo(c)); sc == sa {
			t.Errorf("%s: a copy with an edited file has the same relocated digest", ida[i].Name)
		}
	}
	content := contentIdentity(Pypto, proven(ComponentInputs{Roots: []inventory.ContentRoot{mustRoot(t, filepath.Join(a, "pypto"))}}), inventory.FingerprintOptions{})
	if _, _, ok := content.RelocatedBuildDigest("", false, relTo(a)); ok {
		t.Error("a content-policy identity has a build record")
	}
}
