package toolchain

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

// TestPythonSourcesUnnormalisedRoot: a root written with ".." (and a
// trailing slash) is read as the file system resolves it: the records are
// those of the directory it leads to, named relative to it, with no panic;
// only the root's own spelling, which the digest holds, differs.
func TestPythonSourcesUnnormalisedRoot(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "pkg")
	for _, p := range []string{"a.py", "sub/b.py", "sub/c.in"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(pkg, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "other", "deeper", "still"), 0o755); err != nil {
		t.Fatal(err)
	}
	want, err := PythonSourceRecords(pkg)
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{
		dir + "/other/deeper/still/../../../pkg",
		dir + "/other/../pkg/",
		dir + "/./pkg//",
	} {
		got, err := PythonSourceRecords(root)
		if err != nil {
			t.Fatalf("%s: %v", root, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d records, want %d", root, len(got), len(want))
		}
		if inventory.MustDigest(got) != inventory.MustDigest(want) {
			t.Errorf("%s: records %v, want %v", root, got, want)
		}
		if _, err := PythonSources(root); err != nil {
			t.Fatalf("PythonSources(%s): %v", root, err)
		}
	}
}
