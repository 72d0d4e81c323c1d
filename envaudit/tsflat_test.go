package envaudit

import (
	"os"
	"path/filepath"
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
		if err := s.parser.parse(src, tb, got); err != nil {
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
