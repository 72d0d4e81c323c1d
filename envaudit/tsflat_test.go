//go:build cgo

package envaudit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// TestFlatMatchesCursor checks the C walk against go-tree-sitter's own
// API on every Python fixture: same named nodes (comments aside), kinds,
// fields, byte ranges, lines and parents.
func TestFlatMatchesCursor(t *testing.T) {
	files, _ := filepath.Glob("testdata/python/*.py")
	tb := pyTablesOnce()
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(tb.lang); err != nil {
		t.Fatal(err)
	}
	s := NewPythonScanner()
	defer s.Close()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got := &pyTree{src: src}
		if err := s.parser.parse(src, tb, DefaultPythonVersion, got); err != nil {
			t.Fatal(err)
		}
		want := cursorTree(t, p, tb, src)
		if len(got.nodes) != len(want) {
			t.Fatalf("%s: %d nodes, the cursor walk %d", name, len(got.nodes), len(want))
		}
		for i := range want {
			if got.nodes[i] != want[i] {
				t.Fatalf("%s: node %d is %+v, the cursor walk %+v", name, i, got.nodes[i], want[i])
			}
		}
	}
}

// cursorTree builds the node list with the Go API.
func cursorTree(t testing.TB, p *sitter.Parser, tb *pyTables, src []byte) []pyNode {
	tree := p.Parse(src, nil)
	defer tree.Close()
	c := tree.Walk()
	defer c.Close()
	tmp := &pyTree{src: src}
	var stack []int32
	parent := int32(-1)
	for {
		n := c.Node()
		id := n.KindId()
		named := tb.named[id]
		if named && tb.kinds[id] != pyComment {
			tmp.nodes = append(tmp.nodes, pyNode{kind: tb.kinds[id], field: tb.fields[c.FieldId()],
				start: uint32(n.StartByte()), stop: uint32(n.EndByte()), line: int32(n.StartPosition().Row) + 1,
				parent: parent, first: -1, next: -1})
		}
		if named && tb.kinds[id] != pyComment && c.GotoFirstChild() {
			stack = append(stack, parent)
			parent = int32(len(tmp.nodes) - 1)
			continue
		}
		for !c.GotoNextSibling() {
			if !c.GotoParent() {
				tmp.link()
				return tmp.nodes
			}
			parent, stack = stack[len(stack)-1], stack[:len(stack)-1]
		}
	}
}

// TestFlatDeclsMatchHeader compiles the declarations that tsflat.go copies
// from go-tree-sitter together with the tree_sitter/api.h of the version
// go.mod pins: the C compiler rejects a prototype that differs from the
// header's, and static assertions compare each copied struct's size,
// alignment and field offsets with the header's struct of the same name.
// A changed layout would otherwise read garbage without a compile error.
func TestFlatDeclsMatchHeader(t *testing.T) {
	src, err := os.ReadFile("tsflat.go")
	if err != nil {
		t.Fatal(err)
	}
	// The declarations are the preamble up to its first definition.
	pre, _, ok := strings.Cut(string(src), "\nstatic ")
	_, pre, ok2 := strings.Cut(pre, "\n/*\n")
	if !ok || !ok2 {
		t.Fatal("tsflat.go: no cgo preamble")
	}
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tree-sitter/go-tree-sitter").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	include := filepath.Join(strings.TrimSpace(string(dir)), "include")

	var structs, rest, asserts strings.Builder
	copied := 0
	for line := range strings.Lines(pre) {
		def, isStruct := strings.CutPrefix(line, "typedef struct {")
		body, name, ok := strings.Cut(def, "} ")
		if !isStruct || !ok {
			rest.WriteString(line)
			continue
		}
		copied++
		name = strings.TrimSuffix(strings.TrimSpace(name), ";")
		// The copy is renamed so that both definitions can be compared.
		fmt.Fprintf(&structs, "typedef struct {%s} copy_%s;\n", body, name)
		fmt.Fprintf(&asserts, "_Static_assert(sizeof(copy_%[1]s) == sizeof(%[1]s) && _Alignof(copy_%[1]s) == _Alignof(%[1]s), %[1]q);\n", name)
		for field := range strings.SplitSeq(body, ";") {
			f := strings.Fields(field)
			if len(f) == 0 {
				continue
			}
			fn, _, _ := strings.Cut(strings.TrimLeft(f[len(f)-1], "*"), "[")
			fmt.Fprintf(&asserts, "_Static_assert(offsetof(copy_%[1]s, %[2]s) == offsetof(%[1]s, %[2]s) && sizeof(((copy_%[1]s *)0)->%[2]s) == sizeof(((%[1]s *)0)->%[2]s), \"%[1]s.%[2]s\");\n", name, fn)
		}
	}
	if copied == 0 || !strings.Contains(rest.String(), "extern ") {
		t.Fatalf("tsflat.go preamble: %d structs and no prototypes found", copied)
	}
	prog := "#include <stddef.h>\n#include <tree_sitter/api.h>\n" + structs.String() + rest.String() + asserts.String()
	cfile := filepath.Join(t.TempDir(), "decls.c")
	if err := os.WriteFile(cfile, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	cc, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatalf("go env CC: %v", err)
	}
	args := append(strings.Fields(string(cc)), "-std=c11", "-fsyntax-only", "-Werror", "-I", include, cfile)
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("the declarations copied into tsflat.go differ from %s/tree_sitter/api.h: %v\n%s\n%s", include, err, out, prog)
	}
}

// TestPyTablesCoverGrammar checks that every kind and field the scanner
// names exists in the tree-sitter-python grammar go.mod pins: a node type
// or field the grammar renamed would otherwise map silently to pyOther or
// fNone, and the reads below it would go unseen.
func TestPyTablesCoverGrammar(t *testing.T) {
	tb := pyTablesOnce()
	if len(pyKindNames) != int(pyKindCount)-1 {
		t.Errorf("pyKindNames names %d kinds, want %d", len(pyKindNames), pyKindCount-1)
	}
	for name, k := range pyKindNames {
		if !slices.Contains(tb.kinds, k) {
			t.Errorf("the grammar has no named node %q", name)
		}
	}
	if len(pyFieldNames) != int(fFieldCount)-1 {
		t.Errorf("pyFieldNames names %d fields, want %d", len(pyFieldNames), fFieldCount-1)
	}
	for name, f := range pyFieldNames {
		if !slices.Contains(tb.fields, f) {
			t.Errorf("the grammar has no field %q", name)
		}
	}
}
