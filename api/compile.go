package api

import (
	"fmt"
	"path"
	"strings"
)

// Compile is the compile recipe of one unit (orchestration.compile,
// kernels[i].compile): what a source needs beyond the pipeline's own flags.
// Every part names no file outside a named root, so that the key covers
// everything the compiler reads because of it:
//
//	"compile": {
//	  "std": "c++20",
//	  "defines": ["PTO_CPU_MAX_THREADS=1"],
//	  "include_dirs": ["<pto_isa>/include/pto", "<base>/third_party/inc"],
//	  "forced_includes": ["stdint.h", "<base>/common/prelude.h"],
//	  "flags": ["-O3", "-ffast-math"]
//	}
//
// A path starts with a named root (RecipeRoots): <base> (the request's base
// directory, else its file's directory), <runtime> and <pto_isa> (the toolchain's roots), then a path
// inside it that does not leave it. A forced include is such a path or the
// name of a header found on the include path ("stdint.h"). Flags come from
// an allowlist of flags that name no file (CheckFlag).
type Compile struct {
	// Std is the language standard (-std=VALUE); empty: the pipeline's
	// default for the source's language and the platform.
	Std string `json:"std,omitempty"`
	// Defines are macros, NAME or NAME=VALUE (-D).
	Defines []string `json:"defines,omitempty"`
	// IncludeDirs are -I directories searched after the pipeline's own.
	IncludeDirs []string `json:"include_dirs,omitempty"`
	// ForcedIncludes are headers read before the source (-include).
	ForcedIncludes []string `json:"forced_includes,omitempty"`
	// Flags are further flags of the allowlist, after the pipeline's.
	Flags []string `json:"flags,omitempty"`
}

// RecipeRoots are the roots a path of a compile recipe may name.
var RecipeRoots = []string{"base", "runtime", "pto_isa"}

// CoreTypes are the values of kernels[i].core_type: the AI core a kernel
// is written for, which selects __DAV_VEC__ or __DAV_CUBE__ on sim
// platforms.
var CoreTypes = []string{"vec", "cube"}

// clone returns a copy of c that shares no slice with it.
func (c *Compile) clone() *Compile {
	if c == nil {
		return nil
	}
	d := *c
	d.Defines = append([]string(nil), c.Defines...)
	d.IncludeDirs = append([]string(nil), c.IncludeDirs...)
	d.ForcedIncludes = append([]string(nil), c.ForcedIncludes...)
	d.Flags = append([]string(nil), c.Flags...)
	return &d
}

// validate checks a recipe at field (e.g. "kernels[1].compile").
func (c *Compile) validate(field string) error {
	if c == nil {
		return nil
	}
	if c.Std != "" && !isStd(c.Std) {
		return &FieldError{Field: field + ".std", Msg: fmt.Sprintf("%q is not a language standard (e.g. c++20, gnu11)", c.Std)}
	}
	for i, d := range c.Defines {
		if err := checkDefine(d); err != nil {
			return &FieldError{Field: fmt.Sprintf("%s.defines[%d]", field, i), Msg: err.Error()}
		}
	}
	for i, p := range c.IncludeDirs {
		if _, _, err := SplitRecipePath(p); err != nil {
			return &FieldError{Field: fmt.Sprintf("%s.include_dirs[%d]", field, i), Msg: err.Error()}
		}
	}
	for i, p := range c.ForcedIncludes {
		if err := checkForcedInclude(p); err != nil {
			return &FieldError{Field: fmt.Sprintf("%s.forced_includes[%d]", field, i), Msg: err.Error()}
		}
	}
	for i, f := range c.Flags {
		if err := CheckFlag(f); err != nil {
			return &FieldError{Field: fmt.Sprintf("%s.flags[%d]", field, i), Msg: err.Error()}
		}
	}
	return nil
}

// isStd reports whether s is a language standard's name: letters, digits
// and '+', starting with a letter ("c++20", "gnu11", "c2x").
func isStd(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z') && !(i > 0 && ('0' <= c && c <= '9' || c == '+')) {
			return false
		}
	}
	return s != "" && len(s) <= 16
}

// checkDefine checks NAME or NAME=VALUE: NAME a C identifier, VALUE one line.
func checkDefine(d string) error {
	name, value, _ := strings.Cut(d, "=")
	if !isSymbol(name) {
		return fmt.Errorf("%q: the macro name must be a C identifier (NAME or NAME=VALUE)", d)
	}
	if strings.ContainsAny(value, "\x00\n\r") {
		return fmt.Errorf("%q: the value holds a line break or NUL", d)
	}
	return nil
}

// SplitRecipePath splits "<root>/rel" into the root's name and the clean
// relative path inside it ("." for the root itself), refusing an unknown
// root, a missing root and a path that leaves its root.
func SplitRecipePath(p string) (root, rel string, err error) {
	if !strings.HasPrefix(p, "<") {
		return "", "", fmt.Errorf("%q does not start with a named root (%s)", p, rootList())
	}
	end := strings.IndexByte(p, '>')
	if end < 0 {
		return "", "", fmt.Errorf("%q: the root's name has no closing '>'", p)
	}
	root, rest := p[1:end], p[end+1:]
	if !contains(RecipeRoots, root) {
		return "", "", fmt.Errorf("%q: unknown root <%s> (the roots are %s)", p, root, rootList())
	}
	if rest != "" && !strings.HasPrefix(rest, "/") {
		return "", "", fmt.Errorf("%q: a '/' must follow <%s>", p, root)
	}
	rel = path.Clean("." + rest)
	if rel == ".." || strings.HasPrefix(rel, "../") || strings.ContainsRune(rel, 0) {
		return "", "", fmt.Errorf("%q leaves its root <%s>", p, root)
	}
	return root, rel, nil
}

func rootList() string {
	var b strings.Builder
	for i, r := range RecipeRoots {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("<" + r + ">")
	}
	return b.String()
}

// checkForcedInclude checks a path under a named root or the name of a
// header on the include path: a relative name of letters, digits, '_',
// '-', '+', '.' and '/', none of its elements "..".
func checkForcedInclude(p string) error {
	if strings.HasPrefix(p, "<") {
		_, _, err := SplitRecipePath(p)
		return err
	}
	if !IsHeaderName(p) {
		return fmt.Errorf("%q is neither a path under a named root (%s) nor a header name such as stdint.h", p, rootList())
	}
	return nil
}

// IsHeaderName reports whether p is the name of a header looked up on the
// include path: relative, clean, of letters, digits, '_', '-', '+', '.'
// and '/', with no ".." element.
func IsHeaderName(p string) bool {
	if p == "" || path.Clean(p) != p || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9') && !strings.ContainsRune("_-+./", rune(c)) {
			return false
		}
	}
	return true
}

// refusedFlags say why a flag that reads or writes a file, or selects
// another program, is refused; the first prefix that matches answers.
var refusedFlags = []struct{ prefix, why string }{
	{"-I", "an include directory goes in include_dirs, under a named root"},
	{"-include", "a forced include goes in forced_includes"},
	{"-isystem", "an include directory goes in include_dirs, under a named root"},
	{"-iquote", "an include directory goes in include_dirs, under a named root"},
	{"-idirafter", "an include directory goes in include_dirs, under a named root"},
	{"-fplugin", "it loads a plugin the key does not cover"},
	{"-fprofile", "it reads or writes a profile file"},
	{"-fauto-profile", "it reads a profile file"},
	{"-fsanitize-", "its lists are files the key does not cover"},
	{"-fuse-ld", "it selects another linker"},
	{"-fdump-", "it writes files beside the build"},
	{"-fsave-optimization-record", "it writes files beside the build"},
	{"-ftime-trace", "it writes files beside the build"},
	{"-fstack-usage", "it writes files beside the build"},
	{"-fcallgraph-info", "it writes files beside the build"},
	{"-fmodule", "it reads module files the key does not cover"},
	{"-fprebuilt-module", "it reads module files the key does not cover"},
	{"-fcrash-diagnostics", "it writes files beside the build"},
	{"-ffile-prefix-map", "the pipeline maps the base directory itself"},
	{"-fdebug-prefix-map", "the pipeline maps the base directory itself"},
	{"-fmacro-prefix-map", "the pipeline maps the base directory itself"},
	{"-frecord-", "it records the command line, which names this machine's paths"},
	{"-ftest-coverage", "it writes files beside the build"},
	{"-fopt-info", "it may write files beside the build"},
	{"-mllvm", "it passes options to LLVM that the allowlist cannot check"},
}

// CheckFlag accepts a flag of the allowlist, which names no file: -std=STD,
// -DNAME[=VALUE], -UNAME, -O[0123sgz] or -Ofast, and -fNAME[=VALUE] and
// -mNAME[=VALUE] whose value holds no '/' (and none of the -f flags that
// read or write files, load plugins or pick programs, and none whose value
// is "native", which makes the code depend on this machine's CPU). It
// refuses anything else (-B, --sysroot, -specs=, -Wl,, @file, -I, ...) with
// a reason that names the flag.
func CheckFlag(f string) error {
	for _, r := range refusedFlags {
		if strings.HasPrefix(f, r.prefix) {
			return fmt.Errorf("flag %q is refused: %s", f, r.why)
		}
	}
	if strings.HasSuffix(f, "=native") {
		return fmt.Errorf("flag %q is refused: its code depends on this machine's CPU, which the key does not cover (name the architecture)", f)
	}
	switch {
	case strings.HasPrefix(f, "-std="):
		if !isStd(f[len("-std="):]) {
			return fmt.Errorf("flag %q: not a language standard", f)
		}
		return nil
	case strings.HasPrefix(f, "-D"):
		if err := checkDefine(f[2:]); err != nil {
			return fmt.Errorf("flag %q: %v (write the macro in the same entry)", f, err)
		}
		return nil
	case strings.HasPrefix(f, "-U"):
		if !isSymbol(f[2:]) {
			return fmt.Errorf("flag %q: -U needs a macro name in the same entry", f)
		}
		return nil
	case strings.HasPrefix(f, "-O"):
		if !contains([]string{"", "0", "1", "2", "3", "s", "g", "z", "fast"}, f[2:]) {
			return fmt.Errorf("flag %q: not an optimization level (-O0..-O3, -Os, -Og, -Oz, -Ofast)", f)
		}
		return nil
	case strings.HasPrefix(f, "-f"), strings.HasPrefix(f, "-m"):
		if !isNamedFlag(f[2:]) {
			return fmt.Errorf("flag %q is refused: -f and -m flags may hold letters, digits and _-+=.,: only (no path)", f)
		}
		return nil
	}
	return fmt.Errorf("flag %q is not in the allowlist (-std=, -D, -U, -O, and -f or -m without a path): the key could not cover what it reads", f)
}

// isNamedFlag reports whether s is NAME[=VALUE] of letters, digits and
// "_-+=.,:", starting with a letter or digit.
func isNamedFlag(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("_-+=.,:", rune(c))) {
			return false
		}
	}
	return s != ""
}
