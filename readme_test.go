package ptojit

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeReferences fails on a link or path of README.md, or a link of
// a page of docs/, that does not exist in the repository: the pages are
// read in a clone, so everything they point to must be inside it. A page's
// markdown links are relative to its directory; the README's paths in code
// spans, go doc arguments and Layout block to the repository's root (a
// page of docs/ also names paths of other trees in code spans, PyPTO's).
func TestReadmeReferences(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range append([]string{"README.md"}, pages...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		refs := pageReferences(filepath.ToSlash(page), string(b))
		if page == "README.md" && len(refs) < 10 {
			t.Fatalf("found only %d references in README.md; is the parser right?", len(refs))
		}
		for p := range refs {
			if p == ".." || strings.HasPrefix(p, "../") {
				t.Errorf("%s points outside the repository: %s", page, p)
				continue
			}
			if _, err := os.Stat(filepath.FromSlash(p)); err != nil {
				t.Errorf("%s refers to %s, which does not exist in the repository", page, p)
			}
		}
	}
}

// pageReferences returns the paths, relative to the repository's root,
// that the markdown text of page (itself relative to the root) refers to:
// its links, and for README.md its paths (readmePaths).
func pageReferences(page, text string) map[string]bool {
	refs := map[string]bool{}
	// Markdown links, relative to the page's directory.
	for _, m := range regexp.MustCompile(`\]\(([^)#\s]+)`).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(m[1], "://") && !strings.HasPrefix(m[1], "mailto:") {
			refs[path.Join(path.Dir(page), m[1])] = true
		}
	}
	if page == "README.md" {
		readmePaths(text, refs)
	}
	return refs
}

// readmePaths adds to refs the paths README.md's text names outside links,
// relative to the repository's root.
func readmePaths(text string, refs map[string]bool) {
	// Paths in code spans: ./pkg, anything with ../, files by their
	// suffix, and the top-level directories of the tree.
	pathLike := regexp.MustCompile(`^(\./|\.\./|docs/|bench/|testdata/|python/|cmd/|api/|jit/|cache/|toolchain/|registry/|inventory/|envaudit/|internal/|filesys/)|\.(md|sh|json|yaml|txt)$`)
	for _, m := range regexp.MustCompile("`([^`\\s]+)`").FindAllStringSubmatch(text, -1) {
		p := m[1]
		if strings.ContainsAny(p, "*<>$~{") || strings.Contains(p, "/out") || !pathLike.MatchString(p) {
			continue
		}
		if !strings.ContainsAny(p, "/") && !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "_") {
			continue // a bare file name (module.json) names a file of a format, not of the tree
		}
		refs[path.Clean(p)] = true
	}
	// go doc ./pkg and the first column of the Layout block.
	for _, m := range regexp.MustCompile(`go doc (\./[a-z/]+)`).FindAllStringSubmatch(text, -1) {
		refs[path.Clean(m[1])] = true
	}
	if _, layout, ok := strings.Cut(text, "## Layout\n\n```\n"); ok {
		layout, _, _ = strings.Cut(layout, "```")
		for _, line := range strings.Split(layout, "\n") {
			if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, " ") {
				refs[path.Clean(f[0])] = true
			}
		}
	}
}
