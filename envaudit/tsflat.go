//go:build cgo

package envaudit

// The Python scanner parses with the tree-sitter C library that
// github.com/tree-sitter/go-tree-sitter compiles, but calls it from the C
// code below rather than through the Go API: the Go API crosses cgo for
// every node visited and every allocation the parser makes (its allocator
// calls back into Go), which made the walk slower than the parse. Here one
// cgo call parses a file and returns its named nodes as a flat array. The
// package documentation (Parsing Python) gives the measurements.
//
// The declarations repeat those of tree_sitter/api.h of go-tree-sitter
// v0.25.0 (go.mod pins it); TestFlatDeclsMatchHeader compiles them against
// the pinned header, and TestFlatMatchesCursor checks the result against
// the Go API.

/*
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>

typedef struct TSParser TSParser;
typedef struct TSTree TSTree;
typedef struct TSLanguage TSLanguage;
typedef struct { uint32_t row; uint32_t column; } TSPoint;
typedef struct { uint32_t context[4]; const void *id; const TSTree *tree; } TSNode;
typedef struct { const void *tree; const void *id; uint32_t context[3]; } TSTreeCursor;

extern void ts_set_allocator(void *(*)(size_t), void *(*)(size_t, size_t), void *(*)(void *, size_t), void (*)(void *));
extern TSParser *ts_parser_new(void);
extern void ts_parser_delete(TSParser *);
extern bool ts_parser_set_language(TSParser *, const TSLanguage *);
extern TSTree *ts_parser_parse_string(TSParser *, const TSTree *, const char *, uint32_t);
extern void ts_tree_delete(TSTree *);
extern TSNode ts_tree_root_node(const TSTree *);
extern bool ts_node_has_error(TSNode);
extern bool ts_node_is_error(TSNode);
extern bool ts_node_is_missing(TSNode);
extern bool ts_node_is_named(TSNode);
extern uint16_t ts_node_symbol(TSNode);
extern uint32_t ts_node_start_byte(TSNode);
extern uint32_t ts_node_end_byte(TSNode);
extern TSPoint ts_node_start_point(TSNode);
extern uint32_t ts_node_child_count(TSNode);
extern TSNode ts_node_child(TSNode, uint32_t);
extern TSTreeCursor ts_tree_cursor_new(TSNode);
extern void ts_tree_cursor_delete(TSTreeCursor *);
extern TSNode ts_tree_cursor_current_node(const TSTreeCursor *);
extern uint16_t ts_tree_cursor_current_field_id(const TSTreeCursor *);
extern bool ts_tree_cursor_goto_first_child(TSTreeCursor *);
extern bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *);
extern bool ts_tree_cursor_goto_parent(TSTreeCursor *);

static void ea_default_allocator(void) { ts_set_allocator(NULL, NULL, NULL, NULL); }

typedef struct {
	uint16_t symbol;
	uint16_t field;
	uint32_t start;
	uint32_t end;
	uint32_t row;
	int32_t parent;
} ea_node;

typedef struct {
	ea_node *nodes;  // malloc'd; the caller frees
	int64_t count;
	int32_t err_row; // -1: no syntax error
	int32_t err_col; // byte column of the error in its row
	int32_t err_missing;
	int32_t bad;     // index of the first node whose symbol is in forbid, -1: none
	uint16_t err_symbol;
} ea_result;

static void ea_first_error(TSNode n, ea_result *r) {
	for (;;) {
		uint32_t count = ts_node_child_count(n);
		bool deeper = false;
		for (uint32_t i = 0; i < count; i++) {
			TSNode c = ts_node_child(n, i);
			if (ts_node_is_error(c) || ts_node_is_missing(c)) {
				r->err_row = (int32_t)ts_node_start_point(c).row;
				r->err_col = (int32_t)ts_node_start_point(c).column;
				r->err_missing = ts_node_is_missing(c);
				r->err_symbol = ts_node_symbol(c);
				return;
			}
			if (ts_node_has_error(c)) {
				n = c;
				deeper = true;
				break;
			}
		}
		if (!deeper) {
			r->err_row = (int32_t)ts_node_start_point(n).row;
			r->err_col = (int32_t)ts_node_start_point(n).column;
			return;
		}
	}
}

// ea_parse parses src and records its named nodes in preorder, and the
// first node (named or not) whose symbol is set in the bitmap forbid (a
// token tree-sitter accepts and Python 3 does not) as a named node of
// its own. It returns false only when memory runs out.
static bool ea_parse(TSParser *p, const char *src, uint32_t len, const uint8_t *forbid, uint32_t nforbid, ea_result *r) {
	r->nodes = NULL;
	r->count = 0;
	r->err_row = -1;
	r->err_col = 0;
	r->err_missing = 0;
	r->bad = -1;
	TSTree *tree = ts_parser_parse_string(p, NULL, src, len);
	if (tree == NULL) {
		r->err_row = 0;
		return true;
	}
	TSNode root = ts_tree_root_node(tree);
	if (ts_node_has_error(root)) {
		ea_first_error(root, r);
		ts_tree_delete(tree);
		return true;
	}
	int64_t cap = (int64_t)len / 8 + 64, n = 0;
	ea_node *out = malloc(sizeof(ea_node) * cap);
	int32_t *stack = malloc(sizeof(int32_t) * 64);
	int64_t depth = 0, stack_cap = 64;
	if (out == NULL || stack == NULL) {
		free(out);
		free(stack);
		ts_tree_delete(tree);
		return false;
	}
	TSTreeCursor c = ts_tree_cursor_new(root);
	int32_t parent = -1;
	for (;;) {
		TSNode node = ts_tree_cursor_current_node(&c);
		bool named = ts_node_is_named(node);
		uint16_t sym = ts_node_symbol(node);
		bool bad = r->bad < 0 && sym < nforbid * 8 && (forbid[sym / 8] >> (sym % 8) & 1);
		if (named || bad) {
			if (n == cap) {
				cap *= 2;
				ea_node *grown = realloc(out, sizeof(ea_node) * cap);
				if (grown == NULL) {
					goto oom;
				}
				out = grown;
			}
			ea_node *e = &out[n];
			e->symbol = ts_node_symbol(node);
			e->field = ts_tree_cursor_current_field_id(&c);
			e->start = ts_node_start_byte(node);
			e->end = ts_node_end_byte(node);
			e->row = ts_node_start_point(node).row;
			e->parent = parent;
			if (bad) {
				r->bad = (int32_t)n;
			}
			n++;
		}
		// Only named nodes have children worth visiting: the others are
		// tokens.
		if (named && ts_tree_cursor_goto_first_child(&c)) {
			if (depth == stack_cap) {
				stack_cap *= 2;
				int32_t *grown = realloc(stack, sizeof(int32_t) * stack_cap);
				if (grown == NULL) {
					goto oom;
				}
				stack = grown;
			}
			stack[depth++] = parent;
			parent = (int32_t)(n - 1);
			continue;
		}
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c)) {
				goto done;
			}
			parent = stack[--depth];
		}
	}
done:
	ts_tree_cursor_delete(&c);
	free(stack);
	ts_tree_delete(tree);
	r->nodes = out;
	r->count = n;
	return true;
oom:
	ts_tree_cursor_delete(&c);
	free(stack);
	free(out);
	ts_tree_delete(tree);
	return false;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

func init() {
	// go-tree-sitter routes the C library's allocations through Go
	// callbacks, which call libc; tree-sitter's own defaults (libc) are
	// the same allocator without the crossing, and 1.5x faster for the
	// whole parse (BenchmarkParseSideBySide). Memory from either is
	// released with free, so the switch is safe at any time.
	C.ea_default_allocator()
}

// tsParser is a tree-sitter parser for Python; not safe for concurrent use.
type tsParser struct{ p *C.TSParser }

func newTSParser(lang unsafe.Pointer) (*tsParser, error) {
	p := C.ts_parser_new()
	if !C.ts_parser_set_language(p, (*C.TSLanguage)(lang)) {
		C.ts_parser_delete(p)
		return nil, errors.New("tree-sitter-python: incompatible language version")
	}
	return &tsParser{p: p}, nil
}

func (p *tsParser) close() {
	if p.p != nil {
		C.ts_parser_delete(p.p)
		p.p = nil
	}
}

// errOutOfMemory is the C walk running out of memory.
var errOutOfMemory = errors.New("out of memory parsing")

// parse parses src into t.nodes (named nodes in preorder, comments left
// out), or returns the first syntax error: one tree-sitter finds, or a
// construct its grammar accepts that Python 3.10 rejects (see
// pyRejected) under Python 3.v.
func (p *tsParser) parse(src []byte, tb *pyTables, v PythonVersion, t *pyTree) error {
	var r C.ea_result
	var ptr *C.char
	if len(src) > 0 {
		ptr = (*C.char)(unsafe.Pointer(&src[0]))
	}
	fb := tb.forbid[v-DefaultPythonVersion]
	forbid := (*C.uint8_t)(unsafe.Pointer(&fb[0]))
	if !C.ea_parse(p.p, ptr, C.uint32_t(len(src)), forbid, C.uint32_t(len(fb)), &r) {
		return errOutOfMemory
	}
	if r.err_row >= 0 {
		msg := "syntax error"
		if r.err_missing != 0 {
			msg = "missing " + tb.lang.NodeKindForId(uint16(r.err_symbol))
		}
		line, col := rowColumn(src, int(r.err_row), int(r.err_col))
		return &SyntaxError{Line: line, Column: col, Msg: msg}
	}
	defer C.free(unsafe.Pointer(r.nodes))
	flat := unsafe.Slice(r.nodes, int(r.count))
	// The first rejected construct in preorder: a node or token the
	// bitmap forbids, or PEP 695 type parameters under Python < 3.12.
	bad, why := int(r.bad), pyRejection{}
	if bad >= 0 {
		why = tb.rejected[uint16(flat[bad].symbol)]
	}
	if v < pyTypeParameters.Since {
		end := len(flat)
		if bad >= 0 {
			end = bad
		}
		for i := 0; i < end; i++ {
			if e := &flat[i]; uint16(e.symbol) == tb.typeParameter && uint16(e.field) == tb.typeParameters {
				bad, why = i, pyTypeParameters
				break
			}
		}
	}
	if bad >= 0 {
		line, col := position(src, int(flat[bad].start))
		return &SyntaxError{Line: line, Column: col, Msg: why.message(v)}
	}
	// index maps C indices to t.nodes indices; comments (leaves) are
	// dropped.
	index := t.grow(len(flat))
	t.nodes = t.nodes[:0]
	for i := range flat {
		e := &flat[i]
		k := pyOther
		if int(e.symbol) < len(tb.kinds) {
			k = tb.kinds[e.symbol]
		}
		if k == pyComment {
			index[i] = -1
			continue
		}
		var f pyField
		if int(e.field) < len(tb.fields) {
			f = tb.fields[e.field]
		}
		parent := int32(-1)
		if e.parent >= 0 {
			parent = index[e.parent]
		}
		index[i] = int32(len(t.nodes))
		t.nodes = append(t.nodes, pyNode{kind: k, field: f, start: uint32(e.start), stop: uint32(e.end),
			line: int32(e.row) + 1, parent: parent, first: -1, next: -1})
	}
	t.link()
	return t.checkTokens()
}

// useLibcAllocator points the C library's allocations at libc again, as
// init does; the benchmark of the allocators switches back and forth.
func useLibcAllocator() { C.ea_default_allocator() }
