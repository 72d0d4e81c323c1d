//go:build cgo

package envaudit

import "bytes"

// walkOrder ranks every node in the order Python's ast.walk would reach
// the ast node it stands for: ast.walk is breadth first, so a node comes
// before every deeper one, and nodes of one depth come in the preorder of
// the tree with each node's children in the order of its ast fields. The
// rank is depth<<32 | preorder position.
//
// The depth counts only ancestors that are ast nodes: tree-sitter's
// wrappers (block, argument_list, parenthesized_expression, else_clause,
// the assignment under an expression statement, the type of an annotation,
// a dictionary pair, ...) are none; a decorator and an if clause stand for
// the def and comprehension they belong to; each elif nests one level
// deeper, as ast's If.orelse does; a chain of one boolean operator is one
// BoolOp. A conditional expression visits its test before its body
// (IfExp's fields: test, body, orelse). The mapping covers the forms reads
// occur in; for others the order may differ from ast.walk's, which only
// --order upstream shows.
func (t *pyTree) walkOrder() []int64 {
	n := int32(len(t.nodes))
	depth := make([]int32, n)
	for i := int32(0); i < n; i++ {
		p := t.nodes[i].parent
		if p < 0 {
			continue
		}
		d := depth[p]
		if t.astNode(p) {
			d++
		}
		switch t.nodes[i].kind {
		case pyElif, pyElse:
			if t.nodes[p].kind == pyIf {
				for c := t.nodes[p].first; c >= 0 && c != i; c = t.nodes[c].next {
					if t.nodes[c].kind == pyElif {
						d++
					}
				}
			}
		}
		depth[i] = d
	}
	pos := make([]int32, n)
	next := int32(0)
	var visit func(i int32)
	visit = func(i int32) {
		pos[i] = next
		next++
		nd := &t.nodes[i]
		if nd.kind == pyConditional {
			body := nd.first
			if body >= 0 && t.nodes[body].next >= 0 {
				test := t.nodes[body].next
				visit(test)
				visit(body)
				for c := t.nodes[test].next; c >= 0; c = t.nodes[c].next {
					visit(c)
				}
				return
			}
		}
		for c := nd.first; c >= 0; c = t.nodes[c].next {
			visit(c)
		}
	}
	if n > 0 {
		visit(0)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(depth[i])<<32 | int64(pos[i])
	}
	return out
}

// astNode reports whether node i stands for a node of Python's ast (see
// walkOrder).
func (t *pyTree) astNode(i int32) bool {
	nd := &t.nodes[i]
	switch nd.kind {
	case pyBlock, pyArgumentList, pyParenthesized, pyDecorated, pyElse, pyFinally, pyWithClause,
		pyTypeNode, pyPair, pyConcatenatedString, pyDefaultParameter, pyTypedDefaultParameter, pyAsPatternTarget:
		return false
	case pyAssignment, pyAugmentedAssignment:
		// The statement is the Assign; a chain is one Assign.
		p := nd.parent
		return p < 0 || (t.nodes[p].kind != pyExpressionStatement && t.nodes[p].kind != pyAssignment)
	case pyString:
		// Implicitly concatenated strings are one Constant or JoinedStr.
		p := nd.parent
		return p < 0 || t.nodes[p].kind != pyConcatenatedString
	case pyAsPattern:
		p := nd.parent
		return p < 0 || t.nodes[p].kind != pyWithItem
	case pyDictionarySplat:
		p := nd.parent
		return p < 0 || t.nodes[p].kind != pyDictionary
	case pyBoolean:
		// `a and b and c` is one BoolOp; tree-sitter nests the left.
		p := nd.parent
		if p >= 0 && t.nodes[p].kind == pyBoolean && nd.field == fLeft {
			return t.boolOperator(p) != t.boolOperator(i)
		}
	}
	return true
}

// boolOperator reports whether boolean_operator i is an and (else an or).
func (t *pyTree) boolOperator(i int32) bool {
	l, r := t.child(i, fLeft), t.child(i, fRight)
	if l < 0 || r < 0 {
		return false
	}
	return bytes.Contains(t.src[t.nodes[l].stop:t.nodes[r].start], []byte("and"))
}
