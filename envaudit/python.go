//go:build cgo

package envaudit

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

// PythonScanner finds the environment reads of Python sources. It owns a
// tree-sitter parser, which is not safe for concurrent use: use one
// PythonScanner per goroutine, and Close it.
type PythonScanner struct {
	parser *tsParser
	// Full disables the textual prefilter (files mentioning neither
	// "getenv" nor "environ" cannot hold a recognised read: they are
	// parsed and checked, not analysed); benchmarks set it to measure the
	// full analysis.
	Full bool
	// Python is the grammar accepted; 0 means DefaultPythonVersion.
	Python PythonVersion
	// nodes and scratch are the buffers of the last Scan, reused by the
	// next: no Read refers to them.
	nodes   []pyNode
	scratch []int32
}

// NewPythonScanner returns a scanner with its own parser.
func NewPythonScanner() *PythonScanner {
	p, err := newTSParser(python.Language())
	if err != nil {
		panic("envaudit: " + err.Error()) // ABI mismatch: a build defect
	}
	return &PythonScanner{parser: p}
}

// Close frees the parser.
func (s *PythonScanner) Close() { s.parser.close() }

// Scan returns the reads of the Python source src in source order. A file
// Python 3.10 would not compile (see decodeSource, and tokens its grammar
// rejects that tree-sitter accepts) is a *SyntaxError: every file is
// parsed, whether or not it can hold a read.
func (s *PythonScanner) Scan(src []byte) ([]Read, error) {
	src, err := decodeSource(src)
	if err != nil {
		return nil, err
	}
	t := &pyTree{src: src, nodes: s.nodes[:0], scratch: s.scratch}
	defer func() { s.nodes, s.scratch = t.nodes[:0], t.scratch }()
	if err := s.parser.parse(src, pyTablesOnce(), s.Python.orDefault(), t); err != nil {
		return nil, err
	}
	if !s.Full && !bytes.Contains(src, []byte("getenv")) && !bytes.Contains(src, []byte("environ")) {
		return nil, nil
	}
	return t.reads(), nil
}

// Kinds and fields of the nodes the scanner looks at; everything else is
// pyOther.
type pyKind uint8

const (
	pyOther pyKind = iota
	pyModule
	pyFunction
	pyClass
	pyLambda
	pyIdentifier
	pyAttribute
	pyCall
	pySubscript
	pyArgumentList
	pyKeywordArgument
	pyString
	pyConcatenatedString
	pyStringStart
	pyStringEnd
	pyInterpolation
	pyParenthesized
	pyAssignment
	pyAugmentedAssignment
	pyFor
	pyForIn
	pyNamedExpression
	pyDelete
	pyExcept
	pyAsPattern
	pyAsPatternTarget
	pyGlobal
	pyNonlocal
	pyImport
	pyImportFrom
	pyAliasedImport
	pyDottedName
	pyRelativeImport
	pyParameters
	pyLambdaParameters
	pyTypedParameter
	pyDefaultParameter
	pyTypedDefaultParameter
	pyListSplatPattern
	pyDictSplatPattern
	pyPatternList
	pyTuplePattern
	pyListPattern
	pyTuple
	pyList
	pyExpressionList
	pyListSplat
	pyBlock
	pyExpressionStatement
	pyCasePattern
	pySplatPattern
	pyDictionarySplat
	pyComment
	pyWildcardImport
	pyInteger
	pyDecorated
	pyDecorator
	pyElse
	pyElif
	pyIf
	pyFinally
	pyWithClause
	pyWithItem
	pyTypeNode
	pyPair
	pyIfClause
	pyBoolean
	pyConditional
	pyDictionary
	pyComparison
	pyKindCount
)

var pyKindNames = map[string]pyKind{
	"module": pyModule, "function_definition": pyFunction, "class_definition": pyClass,
	"lambda": pyLambda, "identifier": pyIdentifier, "attribute": pyAttribute, "call": pyCall,
	"subscript": pySubscript, "argument_list": pyArgumentList, "keyword_argument": pyKeywordArgument,
	"string": pyString, "concatenated_string": pyConcatenatedString, "string_start": pyStringStart,
	"string_end": pyStringEnd, "interpolation": pyInterpolation,
	"parenthesized_expression": pyParenthesized, "assignment": pyAssignment,
	"augmented_assignment": pyAugmentedAssignment, "for_statement": pyFor, "for_in_clause": pyForIn,
	"named_expression": pyNamedExpression, "delete_statement": pyDelete, "except_clause": pyExcept,
	"as_pattern": pyAsPattern, "as_pattern_target": pyAsPatternTarget, "global_statement": pyGlobal,
	"nonlocal_statement": pyNonlocal, "import_statement": pyImport, "import_from_statement": pyImportFrom,
	"aliased_import": pyAliasedImport, "dotted_name": pyDottedName, "relative_import": pyRelativeImport,
	"parameters": pyParameters, "lambda_parameters": pyLambdaParameters, "typed_parameter": pyTypedParameter,
	"default_parameter": pyDefaultParameter, "typed_default_parameter": pyTypedDefaultParameter,
	"list_splat_pattern": pyListSplatPattern, "dictionary_splat_pattern": pyDictSplatPattern,
	"pattern_list": pyPatternList, "tuple_pattern": pyTuplePattern, "list_pattern": pyListPattern,
	"tuple": pyTuple, "list": pyList, "expression_list": pyExpressionList, "list_splat": pyListSplat,
	"block": pyBlock, "expression_statement": pyExpressionStatement, "case_pattern": pyCasePattern,
	"splat_pattern": pySplatPattern, "dictionary_splat": pyDictionarySplat, "comment": pyComment,
	"wildcard_import": pyWildcardImport, "integer": pyInteger,
	"decorated_definition": pyDecorated, "decorator": pyDecorator, "else_clause": pyElse,
	"elif_clause": pyElif, "if_statement": pyIf, "finally_clause": pyFinally, "with_clause": pyWithClause,
	"with_item": pyWithItem, "type": pyTypeNode, "pair": pyPair, "if_clause": pyIfClause,
	"boolean_operator": pyBoolean, "conditional_expression": pyConditional, "dictionary": pyDictionary,
	"comparison_operator": pyComparison,
}

type pyField uint8

const (
	fNone pyField = iota
	fName
	fLeft
	fRight
	fValue
	fFunction
	fArguments
	fObject
	fAttribute
	fSubscript
	fAlias
	fModuleName
	fBody
	fType
	fFieldCount
)

var pyFieldNames = map[string]pyField{
	"name": fName, "left": fLeft, "right": fRight, "value": fValue, "function": fFunction,
	"arguments": fArguments, "object": fObject, "attribute": fAttribute, "subscript": fSubscript,
	"alias": fAlias, "module_name": fModuleName, "body": fBody, "type": fType,
}

// pyTables maps the grammar's symbol and field ids to the kinds above,
// once per process.
type pyTables struct {
	lang   *sitter.Language
	kinds  []pyKind
	named  []bool
	fields []pyField
	// forbid is a bitmap of the symbols of pyRejected, rejected their
	// messages by symbol.
	forbid   [pyVersionCount][]byte
	rejected map[uint16]pyRejection
	// typeParameter and typeParameters are the symbol of type_parameter
	// and the field id of type_parameters (see checkTypeParameter).
	typeParameter  uint16
	typeParameters uint16
}

// pyRejection is why a node or token is rejected: Since is the first
// minor version that accepts it (0: none does), Msg the message (for a
// construct of a later version, what needs it: "except* needs").
type pyRejection struct {
	Since PythonVersion
	Msg   string
}

// message is the finding's text under version v.
func (r pyRejection) message(v PythonVersion) string {
	if r.Since == 0 {
		return r.Msg
	}
	return fmt.Sprintf("invalid syntax (%s Python 3.%d; the lint parses as Python 3.%d)", r.Msg, r.Since, v)
}

// pyRejected is the version table: the nodes and tokens tree-sitter-python
// accepts and Python 3.10 rejects, with the message of each and the version
// that accepts it. The key is the node kind; a leading "!" marks an
// anonymous token. The grammar's type_parameter node is not a key: the
// grammar builds it for every subscript in an annotation (`x: list[int]`
// is a generic_type holding one), and only one in the type_parameters
// field of a def or class header is PEP 695 syntax (see
// pyTypeParameters); a type statement is rejected as a whole.
var pyRejected = map[string]pyRejection{
	"print_statement":      {0, "Missing parentheses in call to 'print' (a Python 2 print statement)"},
	"exec_statement":       {0, "Missing parentheses in call to 'exec' (a Python 2 exec statement)"},
	"!<>":                  {0, "invalid syntax (the Python 2 operator <>)"},
	"except_group_clause":  {11, "except* needs"},
	"type_alias_statement": {12, "a type statement needs"},
}

// pyTypeParameters is the rejection of a def or class header's type
// parameters (`def f[T](x: T)`, `class C[T]:`).
var pyTypeParameters = pyRejection{12, "type parameters need"}

var pyTablesOnce = sync.OnceValue(func() *pyTables {
	lang := sitter.NewLanguage(python.Language())
	t := &pyTables{lang: lang}
	n := int(lang.NodeKindCount())
	t.kinds = make([]pyKind, n)
	t.named = make([]bool, n)
	for id := 0; id < n; id++ {
		t.named[id] = lang.NodeKindIsNamed(uint16(id))
		if t.named[id] {
			t.kinds[id] = pyKindNames[lang.NodeKindForId(uint16(id))]
		}
	}
	for v := range t.forbid {
		t.forbid[v] = make([]byte, n/8+1)
	}
	t.rejected = map[uint16]pyRejection{}
	for id := 0; id < n; id++ {
		key := lang.NodeKindForId(uint16(id))
		if !t.named[id] {
			key = "!" + key
		}
		if key == "type_parameter" {
			t.typeParameter = uint16(id)
		}
		r, ok := pyRejected[key]
		if !ok {
			continue
		}
		t.rejected[uint16(id)] = r
		for v := range t.forbid {
			if r.Since == 0 || DefaultPythonVersion+PythonVersion(v) < r.Since {
				t.forbid[v][id/8] |= 1 << (id % 8)
			}
		}
	}
	t.typeParameters = lang.FieldIdForName("type_parameters")
	t.fields = make([]pyField, int(lang.FieldCount())+1)
	for id := 1; id < len(t.fields); id++ {
		t.fields[id] = pyFieldNames[lang.FieldNameForId(uint16(id))]
	}
	return t
})

// pyNode is one named node, copied out of the C tree so that the analysis
// runs without crossing cgo. Nodes are stored in preorder, so the subtree
// of node i is nodes[i+1 : nodes[i].end].
type pyNode struct {
	kind        pyKind
	field       pyField
	start, stop uint32 // byte range
	line        int32  // 1-based
	parent      int32
	first, next int32 // first named child, next named sibling; -1 for none
	end         int32 // index after the last node of the subtree
}

type pyTree struct {
	src   []byte
	nodes []pyNode
	// scratch is a buffer for parse and link, reused between files.
	scratch []int32
	// analysis state
	target   []bool  // node is in a store or delete position
	scopeOf  []int32 // innermost enclosing scope (module, def, class, lambda)
	scopes   map[int32]*pyScope
	globals  map[string]bool // names declared global anywhere
	bindings map[int32]map[string]bool
}

type pyScope struct {
	node      int32
	nodes     []int32 // nodes of this scope, not of nested ones
	stores    map[string]int
	aliases   map[string][]string
	constants map[string]string
	done      bool
}

// link sets the first, next and end of every node from the parents.
func (t *pyTree) link() {
	n := int32(len(t.nodes))
	lastChild := t.grow(int(n))
	for i := range lastChild {
		lastChild[i] = -1
	}
	for i := int32(0); i < n; i++ {
		p := t.nodes[i].parent
		t.nodes[i].end = i + 1
		if p < 0 {
			continue
		}
		if l := lastChild[p]; l >= 0 {
			t.nodes[l].next = i
		} else {
			t.nodes[p].first = i
		}
		lastChild[p] = i
	}
	// Preorder: a subtree ends where its last descendant does.
	for i := n - 1; i >= 0; i-- {
		if p := t.nodes[i].parent; p >= 0 && t.nodes[i].end > t.nodes[p].end {
			t.nodes[p].end = t.nodes[i].end
		}
	}
}

// grow returns t.scratch resized to n, reallocated only when too small.
func (t *pyTree) grow(n int) []int32 {
	if cap(t.scratch) < n {
		t.scratch = make([]int32, n, n+n/4)
	}
	return t.scratch[:n]
}

func (t *pyTree) text(i int32) string {
	n := &t.nodes[i]
	return string(t.src[n.start:n.stop])
}

// child returns the first child of i with field f, or -1.
func (t *pyTree) child(i int32, f pyField) int32 {
	for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
		if t.nodes[c].field == f {
			return c
		}
	}
	return -1
}

func (t *pyTree) isScope(i int32) bool {
	switch t.nodes[i].kind {
	case pyModule, pyFunction, pyClass, pyLambda:
		return true
	}
	return false
}

func (t *pyTree) analyse() {
	n := int32(len(t.nodes))
	t.target = make([]bool, n)
	t.scopeOf = make([]int32, n)
	t.scopes = map[int32]*pyScope{}
	t.globals = map[string]bool{}
	t.bindings = map[int32]map[string]bool{}
	for i := int32(0); i < n; i++ {
		nd := &t.nodes[i]
		if nd.parent < 0 {
			t.scopeOf[i] = i
		} else if t.isScope(nd.parent) {
			t.scopeOf[i] = nd.parent
		} else {
			t.scopeOf[i] = t.scopeOf[nd.parent]
		}
		if t.isScope(i) {
			t.scopes[i] = &pyScope{node: i}
		}
		switch nd.kind {
		case pyAssignment, pyAugmentedAssignment, pyFor, pyForIn:
			if l := t.child(i, fLeft); l >= 0 {
				t.markTarget(l)
			}
		case pyNamedExpression:
			if l := t.child(i, fName); l >= 0 {
				t.markTarget(l)
			}
		case pyExcept, pyAsPattern:
			if l := t.child(i, fAlias); l >= 0 {
				t.markTarget(l)
			}
		case pyDelete:
			for c := nd.first; c >= 0; c = t.nodes[c].next {
				t.markTarget(c)
			}
		case pyGlobal:
			for c := nd.first; c >= 0; c = t.nodes[c].next {
				if t.nodes[c].kind == pyIdentifier {
					t.globals[t.text(c)] = true
				}
			}
		}
	}
	for i := int32(0); i < n; i++ {
		if t.nodes[i].parent >= 0 {
			s := t.scopes[t.scopeOf[i]]
			s.nodes = append(s.nodes, i)
		}
	}
	for _, s := range t.scopes {
		s.stores = map[string]int{}
		for _, i := range s.nodes {
			t.boundBy(i, func(name string) { s.stores[name]++ })
		}
	}
}

func (t *pyTree) markTarget(i int32) {
	t.target[i] = true
	switch t.nodes[i].kind {
	case pyPatternList, pyTuplePattern, pyListPattern, pyTuple, pyList, pyExpressionList,
		pyParenthesized, pyListSplatPattern, pyListSplat, pyAsPatternTarget:
		for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
			t.markTarget(c)
		}
	}
}

// boundBy calls bind for each name node i binds in the scope holding it.
func (t *pyTree) boundBy(i int32, bind func(string)) {
	nd := &t.nodes[i]
	switch nd.kind {
	case pyIdentifier:
		if t.target[i] || t.isParameterName(i) || t.isCaptureName(i) {
			bind(t.text(i))
		}
	case pyFunction, pyClass:
		if c := t.child(i, fName); c >= 0 {
			bind(t.text(c))
		}
	case pyImport, pyImportFrom:
		for c := nd.first; c >= 0; c = t.nodes[c].next {
			if t.nodes[c].field != fName {
				continue
			}
			switch t.nodes[c].kind {
			case pyDottedName:
				name := t.text(c)
				if nd.kind == pyImport {
					name, _, _ = strings.Cut(name, ".")
				}
				bind(name)
			case pyAliasedImport:
				if a := t.child(c, fAlias); a >= 0 {
					bind(t.text(a))
				}
			}
		}
	}
}

// isParameterName reports whether identifier i names a parameter.
func (t *pyTree) isParameterName(i int32) bool {
	p := t.nodes[i].parent
	if p < 0 {
		return false
	}
	switch t.nodes[p].kind {
	case pyParameters, pyLambdaParameters:
		return true
	case pyListSplatPattern, pyDictSplatPattern:
		pp := t.nodes[p].parent
		return pp >= 0 && (t.nodes[pp].kind == pyParameters || t.nodes[pp].kind == pyLambdaParameters || t.nodes[pp].kind == pyTypedParameter)
	case pyTypedParameter:
		return t.nodes[i].field == fNone
	case pyDefaultParameter, pyTypedDefaultParameter:
		return t.nodes[i].field == fName
	}
	return false
}

// isCaptureName reports whether identifier i is a capture in a match
// statement's case pattern.
func (t *pyTree) isCaptureName(i int32) bool {
	p := t.nodes[i].parent
	if p < 0 {
		return false
	}
	switch t.nodes[p].kind {
	case pySplatPattern:
		return true
	case pyAsPattern:
		return t.nodes[i].next < 0 && t.nodes[p].first != i
	case pyDottedName:
		pp := t.nodes[p].parent
		return pp >= 0 && t.nodes[pp].kind == pyCasePattern && t.nodes[p].first == i && t.nodes[i].next < 0
	}
	return false
}

// isLoad reports whether identifier i is an expression that reads a name.
func (t *pyTree) isLoad(i int32) bool {
	if t.target[i] || t.isParameterName(i) || t.isCaptureName(i) {
		return false
	}
	p := t.nodes[i].parent
	if p < 0 {
		return false
	}
	f := t.nodes[i].field
	switch t.nodes[p].kind {
	case pyAttribute:
		return f == fObject
	case pyKeywordArgument, pyFunction, pyClass:
		return f != fName
	case pyGlobal, pyNonlocal, pyDottedName, pyAliasedImport, pyImport, pyImportFrom, pyRelativeImport:
		return false
	}
	return true
}

// parentOf returns the parent of i and i's field in it, looking through
// parentheses.
func (t *pyTree) parentOf(i int32) (int32, pyField) {
	for {
		p := t.nodes[i].parent
		if p < 0 || t.nodes[p].kind != pyParenthesized {
			return p, t.nodes[i].field
		}
		i = p
	}
}

// enclosingScope returns the scope whose bindings scope s inherits:
// functions and lambdas skip class bodies.
func (t *pyTree) enclosingScope(s int32) int32 {
	if t.nodes[s].parent < 0 {
		return -1
	}
	p := t.scopeOf[s]
	if k := t.nodes[s].kind; k == pyFunction || k == pyLambda {
		for t.nodes[p].kind == pyClass {
			p = t.scopeOf[p]
		}
	}
	return p
}

// scope returns the analysed scope s: its aliases and, for modules and
// classes, its constants.
func (t *pyTree) scope(s int32) *pyScope {
	sc := t.scopes[s]
	if sc.done {
		return sc
	}
	sc.done = true
	sc.aliases = map[string][]string{}
	if p := t.enclosingScope(s); p >= 0 {
		for name, q := range t.scope(p).aliases {
			if sc.stores[name] == 0 {
				sc.aliases[name] = q
			}
		}
	}
	t.addImportAliases(sc)
	for _, i := range sc.nodes {
		if t.nodes[i].kind != pyAssignment {
			continue
		}
		lefts, value := t.assignmentChain(i)
		if value < 0 || len(lefts) == 0 {
			continue
		}
		var osNames []string
		for _, q := range t.qualified(value, sc.aliases) {
			if strings.HasPrefix(q, "os.") {
				osNames = append(osNames, q)
			}
		}
		if len(osNames) == 0 {
			continue
		}
		// Only the first target of a chain: the inner assignments of
		// a chain are scope nodes themselves.
		if l := lefts[0]; t.nodes[l].kind == pyIdentifier {
			sc.addAlias(t.text(l), osNames...)
		}
	}
	if k := t.nodes[s].kind; k == pyModule || k == pyClass {
		sc.constants = t.constants(sc)
	}
	return sc
}

// addAlias adds the qualified names q to the names that name stands for
// in sc.
func (sc *pyScope) addAlias(name string, q ...string) {
	cur := sc.aliases[name]
	for _, x := range q {
		if !slices.Contains(cur, x) {
			cur = append(cur[:len(cur):len(cur)], x)
		}
	}
	sc.aliases[name] = cur
}

// addImportAliases adds to sc the names its import statements bind: a
// module's head name, an alias of a module, and the names imported from
// os (all of osStarNames for a wildcard).
func (t *pyTree) addImportAliases(sc *pyScope) {
	for _, i := range sc.nodes {
		nd := &t.nodes[i]
		switch nd.kind {
		case pyImport:
			for c := nd.first; c >= 0; c = t.nodes[c].next {
				switch t.nodes[c].kind {
				case pyDottedName:
					full := t.text(c)
					head, _, _ := strings.Cut(full, ".")
					sc.addAlias(head, head)
				case pyAliasedImport:
					if a, m := t.child(c, fAlias), t.child(c, fName); a >= 0 && m >= 0 {
						sc.addAlias(t.text(a), t.text(m))
					}
				}
			}
		case pyImportFrom:
			m := t.child(i, fModuleName)
			if m < 0 || t.nodes[m].kind != pyDottedName || t.text(m) != "os" {
				continue
			}
			for c := nd.first; c >= 0; c = t.nodes[c].next {
				if t.nodes[c].kind == pyWildcardImport {
					for _, name := range osStarNames {
						sc.addAlias(name, "os."+name)
					}
					continue
				}
				if t.nodes[c].field != fName {
					continue
				}
				switch t.nodes[c].kind {
				case pyDottedName:
					sc.addAlias(t.text(c), "os."+t.text(c))
				case pyAliasedImport:
					if a, n := t.child(c, fAlias), t.child(c, fName); a >= 0 && n >= 0 {
						sc.addAlias(t.text(a), "os."+t.text(n))
					}
				}
			}
		}
	}
}

// identifierTargets reports whether every target of the assignment chain
// that assignment a belongs to is a plain name.
func (t *pyTree) identifierTargets(a int32) bool {
	for {
		if l := t.child(a, fLeft); l < 0 || t.nodes[l].kind != pyIdentifier {
			return false
		}
		p := t.nodes[a].parent
		if p < 0 || t.nodes[p].kind != pyAssignment || t.nodes[a].field != fRight {
			return true
		}
		a = p
	}
}

// assignmentChain returns the targets of a = b = value (in order) and the
// value, -1 when there is none (an annotation).
func (t *pyTree) assignmentChain(i int32) ([]int32, int32) {
	var lefts []int32
	for {
		if l := t.child(i, fLeft); l >= 0 {
			lefts = append(lefts, l)
		}
		r := t.child(i, fRight)
		if r < 0 || t.nodes[r].kind != pyAssignment {
			return lefts, r
		}
		i = r
	}
}

// constants returns the string constants of a module or class scope.
func (t *pyTree) constants(sc *pyScope) map[string]string {
	consts := map[string]string{}
	body := sc.node
	if t.nodes[body].kind == pyClass {
		body = t.child(body, fBody)
		if body < 0 {
			return consts
		}
	}
	for st := t.nodes[body].first; st >= 0; st = t.nodes[st].next {
		if t.nodes[st].kind != pyExpressionStatement {
			continue
		}
		a := t.nodes[st].first
		if a < 0 || t.nodes[a].kind != pyAssignment {
			continue
		}
		lefts, value := t.assignmentChain(a)
		if value < 0 {
			continue
		}
		v, ok := t.stringValue(value, consts)
		if !ok {
			continue
		}
		for _, l := range lefts {
			if t.nodes[l].kind == pyIdentifier && sc.stores[t.text(l)] == 1 {
				consts[t.text(l)] = v
			}
		}
	}
	for name := range t.globals {
		delete(consts, name)
	}
	return consts
}

// qualified returns the dotted names expression i may denote.
func (t *pyTree) qualified(i int32, aliases map[string][]string) []string {
	switch t.nodes[i].kind {
	case pyIdentifier:
		return aliases[t.text(i)]
	case pyParenthesized:
		if c := t.nodes[i].first; c >= 0 && t.nodes[c].next < 0 {
			return t.qualified(c, aliases)
		}
	case pyAttribute:
		o, a := t.child(i, fObject), t.child(i, fAttribute)
		if o < 0 || a < 0 {
			return nil
		}
		base := t.qualified(o, aliases)
		if len(base) == 0 {
			return nil
		}
		attr := t.text(a)
		out := make([]string, len(base))
		for k, b := range base {
			out[k] = b + "." + attr
		}
		return out
	}
	return nil
}

// osStarNames are the environment names `from os import *` binds.
var osStarNames = []string{"getenv", "getenvb", "environ", "environb"}

var pyGetenvFuncs = []string{
	"os.getenv", "os.getenvb",
	"os.environ.get", "os.environ.pop", "os.environ.setdefault",
	"os.environb.get", "os.environb.pop", "os.environb.setdefault",
	"os.environ.__contains__", "os.environb.__contains__",
}

func (t *pyTree) reads() []Read {
	t.analyse()
	walk := t.walkOrder()
	var out []Read
	for i := int32(0); i < int32(len(t.nodes)); i++ {
		nd := &t.nodes[i]
		matched, arg := false, int32(-1)
		switch nd.kind {
		case pyCall:
			matched, arg = t.callRead(i)
		case pySubscript:
			matched, arg = t.subscriptRead(i)
		case pyIdentifier, pyAttribute:
			matched, arg = t.nameRead(i)
		}
		if !matched {
			continue
		}
		r := Read{Line: int(nd.line), Function: t.functionOf(i), walk: walk[i]}
		if arg >= 0 {
			if v, ok := t.stringValue(arg, t.effectiveConstants(i)); ok {
				r.Variable = v
			}
		}
		out = append(out, r)
	}
	return out
}

// callRead reports whether the call node i reads the environment (a
// getenv function, or a method of os.environ), and its argument node
// naming the variable (-1 when none).
func (t *pyTree) callRead(i int32) (matched bool, arg int32) {
	arg = -1
	f := t.child(i, fFunction)
	if f < 0 {
		return false, -1
	}
	names := t.qualified(f, t.scope(t.scopeOf[i]).aliases)
	for _, q := range names {
		if slices.Contains(pyGetenvFuncs, q) {
			matched, arg = true, t.firstArgument(i)
			break
		}
	}
	if !matched {
		for _, q := range names {
			if strings.HasPrefix(q, "os.environ.") || strings.HasPrefix(q, "os.environb.") {
				matched = true
			}
		}
	}
	return matched, arg
}

// subscriptRead reports whether the subscript node i reads os.environ
// (not as a plain assignment target), and its single subscript node (-1
// when none).
func (t *pyTree) subscriptRead(i int32) (matched bool, arg int32) {
	arg = -1
	if t.target[i] && !t.augmentedTarget(i) {
		return false, -1
	}
	v := t.child(i, fValue)
	if v >= 0 && t.isEnviron(v) {
		matched = true
		if s := t.child(i, fSubscript); s >= 0 && (t.nodes[s].next < 0 || t.nodes[t.nodes[s].next].field != fSubscript) {
			arg = s
		}
	}
	return matched, arg
}

// nameRead reports whether the name or attribute node i is a read of its
// own (os.environ or a reader used other than by a call, an attribute, a
// subscript or an alias), and for `K in os.environ` the node of K (-1
// otherwise).
func (t *pyTree) nameRead(i int32) (matched bool, arg int32) {
	arg = -1
	nd := &t.nodes[i]
	if (nd.kind == pyIdentifier && !t.isLoad(i) || nd.kind == pyAttribute && t.target[i]) && !t.augmentedTarget(i) {
		return false, -1
	}
	environ, reader := t.environOrReader(i)
	if !environ && !reader {
		return false, -1
	}
	p, f := t.parentOf(i)
	if p >= 0 {
		switch t.nodes[p].kind {
		case pyCall:
			// os.getenv(...) itself is the call's read.
			if reader && f == fFunction {
				return false, -1
			}
		case pyAttribute:
			if f == fObject {
				return false, -1
			}
		case pySubscript:
			if f == fValue {
				return false, -1
			}
		case pyComparison:
			// `K in os.environ`, `K not in os.environ`: a
			// read of K, as os.environ.__contains__(K) is.
			if l := t.nodes[p].first; l != i && t.nodes[l].next == i && t.nodes[i].next < 0 {
				if op := strings.Join(strings.Fields(string(t.src[t.nodes[l].stop:nd.start])), " "); op == "in" || op == "not in" {
					arg = l
				}
			}
		case pyAssignment:
			// Stored in names: an alias, whose uses are
			// reads. Stored anywhere else (an attribute, an
			// item, an unpacking): the uses escape the scan.
			if f == fRight && t.identifierTargets(p) {
				return false, -1
			}
		}
	}
	matched = true
	return matched, arg
}

// augmentedTarget reports whether expression i is the target of an
// augmented assignment (`os.environ |= {...}`, `os.environ[k] += v`, the
// target in parentheses or not), which loads the target before it stores
// it.
func (t *pyTree) augmentedTarget(i int32) bool {
	for {
		p := t.nodes[i].parent
		if p < 0 {
			return false
		}
		switch t.nodes[p].kind {
		case pyAugmentedAssignment:
			return t.nodes[i].field == fLeft
		case pyParenthesized, pyTuplePattern:
			if t.nodes[p].first != i || t.nodes[i].next >= 0 {
				return false
			}
			i = p
		default:
			return false
		}
	}
}

// environOrReader reports whether expression i may denote os.environ (or
// environb), and whether it may denote a function that reads the
// environment (os.getenv, os.environ.get, any other os.environ method).
// Either, used as a value, lets the environment be read where the scan
// cannot see.
func (t *pyTree) environOrReader(i int32) (environ, reader bool) {
	for _, q := range t.qualified(i, t.scope(t.scopeOf[i]).aliases) {
		switch {
		case q == "os.environ" || q == "os.environb":
			environ = true
		case slices.Contains(pyGetenvFuncs, q) || strings.HasPrefix(q, "os.environ.") || strings.HasPrefix(q, "os.environb."):
			reader = true
		}
	}
	return environ, reader
}

// isEnviron reports whether expression i may denote os.environ (or
// environb).
func (t *pyTree) isEnviron(i int32) bool {
	environ, _ := t.environOrReader(i)
	return environ
}

// firstArgument returns the first positional argument of call i, else its
// key= argument, else -1.
func (t *pyTree) firstArgument(call int32) int32 {
	args := t.child(call, fArguments)
	if args < 0 {
		return -1
	}
	if t.nodes[args].kind != pyArgumentList {
		return args // a generator expression: not a string
	}
	for c := t.nodes[args].first; c >= 0; c = t.nodes[c].next {
		if k := t.nodes[c].kind; k != pyKeywordArgument && k != pyDictionarySplat {
			return c
		}
	}
	for c := t.nodes[args].first; c >= 0; c = t.nodes[c].next {
		if t.nodes[c].kind == pyKeywordArgument {
			if n := t.child(c, fName); n >= 0 && t.text(n) == "key" {
				return t.child(c, fValue)
			}
		}
	}
	return -1
}

// functionOf returns the innermost def enclosing i, or "<module>".
func (t *pyTree) functionOf(i int32) string {
	for p := t.nodes[i].parent; p >= 0; p = t.nodes[p].parent {
		if t.nodes[p].kind == pyFunction {
			if n := t.child(p, fName); n >= 0 {
				return t.text(n)
			}
		}
	}
	return ModuleFunction
}

// effectiveConstants returns the constants visible at node i: the module's,
// minus every name bound anywhere inside an enclosing def, lambda or class,
// plus the class's own when i is in a class body.
func (t *pyTree) effectiveConstants(i int32) map[string]string {
	consts := t.scope(0).constants
	copied := false
	for p := t.nodes[i].parent; p > 0; p = t.nodes[p].parent {
		if k := t.nodes[p].kind; k != pyFunction && k != pyLambda && k != pyClass {
			continue
		}
		for name := range t.subtreeBindings(p) {
			if _, ok := consts[name]; ok {
				if !copied {
					consts, copied = maps.Clone(consts), true
				}
				delete(consts, name)
			}
		}
	}
	if s := t.scopeOf[i]; t.nodes[s].kind == pyClass {
		cc := t.scope(s).constants
		if len(cc) > 0 {
			if !copied {
				consts = maps.Clone(consts)
			}
			maps.Copy(consts, cc)
		}
	}
	return consts
}

// subtreeBindings returns every name bound anywhere inside scope node s,
// nested scopes included, s's own name excluded.
func (t *pyTree) subtreeBindings(s int32) map[string]bool {
	if b, ok := t.bindings[s]; ok {
		return b
	}
	b := map[string]bool{}
	for i := s + 1; i < t.nodes[s].end; i++ {
		t.boundBy(i, func(name string) { b[name] = true })
	}
	t.bindings[s] = b
	return b
}

// stringValue evaluates i as a string constant: a str literal, a bytes
// literal that decodes as ASCII, their implicit concatenation, or a name in
// consts.
func (t *pyTree) stringValue(i int32, consts map[string]string) (string, bool) {
	switch t.nodes[i].kind {
	case pyIdentifier:
		v, ok := consts[t.text(i)]
		return v, ok
	case pyParenthesized:
		if c := t.nodes[i].first; c >= 0 && t.nodes[c].next < 0 {
			return t.stringValue(c, consts)
		}
	case pyString:
		v, _, ok := t.literal(i)
		return v, ok
	case pyConcatenatedString:
		var b strings.Builder
		kind := -1
		for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
			v, isBytes, ok := t.literal(c)
			if !ok {
				return "", false
			}
			k := 0
			if isBytes {
				k = 1
			}
			if kind >= 0 && k != kind {
				return "", false // str and bytes do not concatenate
			}
			kind = k
			b.WriteString(v)
		}
		return b.String(), kind >= 0
	}
	return "", false
}

// literal decodes string node i: a str literal, an f-string without a
// placeholder, or a bytes literal that decodes as ASCII. ok is false for
// anything else, and for a \N{...} name the table lacks.
func (t *pyTree) literal(i int32) (val string, isBytes, ok bool) {
	if t.nodes[i].kind != pyString {
		return "", false, false
	}
	v, isBytes, msg := t.decodeLiteral(i)
	if v == nil || msg != "" {
		return "", false, false
	}
	if isBytes {
		for _, c := range v {
			if c >= 0x80 {
				return "", false, false
			}
		}
	}
	return string(v), isBytes, true
}
