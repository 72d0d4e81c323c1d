package jit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// A .pto kernel is assembled by ptoas into C++ that defines the module's
// entry function (e.g. "__global__ AICORE void vec_add(__gm__ float *a,
// ...)", a C++ function on sim platforms) and no ptojit_kernel. The
// pipeline then compiles a generated shim that includes the assembled
// file and defines ptojit_kernel, which passes the call's tensors, in
// order, to the entry's pointer parameters and its scalars, in order, to
// the others. An assembled file that defines ptojit_kernel itself (the
// example toolchain's stand-in ptoas copies C++) is compiled as it is.

// ptoEntry is the entry function of a .pto module.
type ptoEntry struct {
	name   string
	params []ptoParam
}

// ptoParam is the kind of one parameter of an entry function.
type ptoParam int

const (
	ptoPointer ptoParam = iota // !pto.ptr<T> or a memref: a tensor's data
	ptoF32                     // f32: the low 32 bits of a scalar
	ptoF64                     // f64: a scalar's 64 bits
	ptoInt                     // iN, uiN, index: a scalar's integer value
)

// maxPtoModule bounds the .pto text parsed for its entry.
const maxPtoModule = 64 << 20

// ptoFunc is one func.func of a module.
type ptoFunc struct {
	name     string
	params   []string // the parameters' types
	defined  bool     // it has a body
	explicit bool     // attributes hold pto.entry (or hacc.entry)
}

// parsePtoEntry finds the entry of a .pto module as ptoas does: the
// function definition marked {pto.entry} (or the legacy {hacc.entry}),
// else the module's only function definition.
func parsePtoEntry(src []byte) (ptoEntry, error) {
	if len(src) > maxPtoModule {
		return ptoEntry{}, fmt.Errorf("larger than %d bytes", maxPtoModule)
	}
	var defs, marked []ptoFunc
	text := string(src)
	for {
		i := strings.Index(text, "func.func")
		if i < 0 {
			break
		}
		text = text[i+len("func.func"):]
		f, rest, err := parsePtoFunc(text)
		if err != nil {
			return ptoEntry{}, err
		}
		text = rest
		if f.defined {
			defs = append(defs, f)
			if f.explicit {
				marked = append(marked, f)
			}
		}
	}
	var f ptoFunc
	switch {
	case len(marked) == 1:
		f = marked[0]
	case len(marked) > 1:
		return ptoEntry{}, fmt.Errorf("%d functions are marked pto.entry: a kernel has one entry", len(marked))
	case len(defs) == 1:
		f = defs[0]
	case len(defs) == 0:
		return ptoEntry{}, errors.New("no function definition (func.func with a body)")
	default:
		return ptoEntry{}, fmt.Errorf("%d function definitions and none marked {pto.entry}: mark the kernel's entry", len(defs))
	}
	e := ptoEntry{name: f.name}
	for i, t := range f.params {
		k, err := ptoParamKind(t)
		if err != nil {
			return ptoEntry{}, fmt.Errorf("@%s parameter %d: %w", f.name, i, err)
		}
		e.params = append(e.params, k)
	}
	return e, nil
}

// parsePtoFunc parses what follows "func.func": the visibility, @name,
// the parameter list, attributes and the body's opening brace.
func parsePtoFunc(text string) (ptoFunc, string, error) {
	var f ptoFunc
	s := strings.TrimLeft(text, " \t\r\n")
	for _, vis := range []string{"private ", "public ", "nested "} {
		s = strings.TrimLeft(strings.TrimPrefix(s, vis), " \t\r\n")
	}
	if !strings.HasPrefix(s, "@") {
		return f, "", errors.New("func.func without @name")
	}
	n := 1
	for n < len(s) && (isIdentByte(s[n]) || s[n] == '$' || s[n] == '.') {
		n++
	}
	f.name, s = s[1:n], strings.TrimLeft(s[n:], " \t\r\n")
	if !isCIdent(f.name) {
		return f, "", fmt.Errorf("@%s is not a C++ function name", f.name)
	}
	if !strings.HasPrefix(s, "(") {
		return f, "", fmt.Errorf("@%s: no parameter list", f.name)
	}
	end := closing(s, 0)
	if end < 0 {
		return f, "", fmt.Errorf("@%s: the parameter list does not end", f.name)
	}
	for _, p := range splitTop(s[1:end]) {
		if _, t, ok := strings.Cut(p, ":"); ok {
			t = strings.TrimSpace(t)
			if j := strings.IndexByte(t, '{'); j >= 0 { // argument attributes
				t = strings.TrimSpace(t[:j])
			}
			f.params = append(f.params, t)
		} else if strings.TrimSpace(p) != "" {
			f.params = append(f.params, strings.TrimSpace(p)) // a declaration's bare type
		}
	}
	s = s[end+1:]
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "attributes"):
			j := strings.IndexByte(s, '{')
			k := -1
			if j >= 0 {
				k = closing(s, j)
			}
			if k < 0 {
				return f, "", fmt.Errorf("@%s: the attributes do not end", f.name)
			}
			attrs := s[j : k+1]
			f.explicit = f.explicit || strings.Contains(attrs, "pto.entry") || strings.Contains(attrs, "hacc.entry")
			s = s[k+1:]
		case strings.HasPrefix(s, "->"):
			j := strings.IndexAny(s, "{\n")
			if j < 0 {
				return f, s, nil
			}
			if strings.Contains(s[:j], "attributes") {
				s = s[strings.Index(s, "attributes"):]
			} else {
				s = s[j:]
			}
		case strings.HasPrefix(s, "{"):
			f.defined = true
			return f, s[1:], nil
		default:
			return f, s, nil // a declaration
		}
	}
}

// ptoParamKind classifies an MLIR parameter type.
func ptoParamKind(t string) (ptoParam, error) {
	switch {
	case strings.HasPrefix(t, "!pto.ptr<"), strings.HasPrefix(t, "memref<"):
		return ptoPointer, nil
	case t == "f32":
		return ptoF32, nil
	case t == "f64":
		return ptoF64, nil
	case t == "index", strings.HasPrefix(t, "i") && isDigits(t[1:]), strings.HasPrefix(t, "ui") && isDigits(t[2:]), strings.HasPrefix(t, "si") && isDigits(t[2:]):
		return ptoInt, nil
	}
	return 0, fmt.Errorf("type %s cannot be passed from a sim call (pointers, f32, f64 and integers can)", t)
}

// shim returns the C++ of the generated entry: the assembled file, then
// ptojit_kernel calling e.
func (e ptoEntry) shim(assembled, source string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Generated by ptojit (%s): the entry the sim worker loads from\n// a kernel ptoas assembled from %s, calling its function %s.\n", pipelineVersion, source, e.name)
	// As PTO-ISA's own tests force them in: its headers use the fixed
	// width types without including <cstdint>.
	b.WriteString("#include <cstddef>\n#include <cstdint>\n#include <cstring>\n")
	fmt.Fprintf(&b, "#include %q\n", assembled)
	b.WriteString(`#include "ptojit_sim.h"

namespace {
// A tensor's data, passed to a pointer parameter of any element type.
struct ptojit_pto_ptr {
    void *p;
    template <typename T> operator T *() const { return static_cast<T *>(p); }
};
float ptojit_pto_f32(uint64_t raw) { uint32_t bits = static_cast<uint32_t>(raw); float f; std::memcpy(&f, &bits, sizeof f); return f; }
double ptojit_pto_f64(uint64_t raw) { double d; std::memcpy(&d, &raw, sizeof d); return d; }
} // namespace

`)
	tensors, scalars := 0, 0
	var args []string
	for _, p := range e.params {
		switch p {
		case ptoPointer:
			args = append(args, fmt.Sprintf("ptojit_pto_ptr{args->tensors[%d].data}", tensors))
			tensors++
		case ptoF32:
			args = append(args, fmt.Sprintf("ptojit_pto_f32(args->scalars[%d])", scalars))
			scalars++
		case ptoF64:
			args = append(args, fmt.Sprintf("ptojit_pto_f64(args->scalars[%d])", scalars))
			scalars++
		case ptoInt:
			args = append(args, fmt.Sprintf("static_cast<int64_t>(args->scalars[%d])", scalars))
			scalars++
		}
	}
	fmt.Fprintf(&b, `extern "C" int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != %d || args->scalar_count != %d) {
        return 1;
    }
    %s(%s);
    return 0;
}
`, tensors, scalars, e.name, strings.Join(args, ", "))
	return b.Bytes()
}

// closing returns the index of the bracket that closes the one at open
// ('(', '[', '{' or '<'), counting all four kinds, or -1.
func closing(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			if i > 0 && s[i] == '>' && s[i-1] == '-' {
				continue // "->"
			}
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits s at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func isIdentByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// isCIdent reports whether s is a C identifier.
func isCIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) || i == 0 && '0' <= s[i] && s[i] <= '9' {
			return false
		}
	}
	return s != ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
