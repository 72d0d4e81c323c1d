package api

import (
	"errors"
	"strings"
	"testing"
)

// withKernelCompile puts a compile recipe (JSON) into kernels[1].
func withKernelCompile(recipe string) string {
	return strings.Replace(good, `"signature": [3, 0]}`, `"signature": [3, 0], "core_type": "vec", "compile": `+recipe+`}`, 1)
}

func TestCompileRecipe(t *testing.T) {
	doc := withKernelCompile(`{"std": "c++20", "defines": ["PTO_CPU_MAX_THREADS=1", "X"],
		"include_dirs": ["<pto_isa>/include/pto", "<base>"], "forced_includes": ["stdint.h", "<base>/inc/pre.h"],
		"flags": ["-O3", "-ffast-math", "-march=x86-64-v2", "-UNDEBUG", "-std=gnu++20", "-fno-exceptions"]}`)
	doc = strings.Replace(doc, `"config": "vadd_orch_config"}`, `"config": "vadd_orch_config", "compile": {"std": "gnu11"}}`, 1)
	r, err := ParseRequest([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	k := r.Kernels[1]
	if k.CoreType != "vec" || k.Compile == nil || k.Compile.Std != "c++20" || len(k.Compile.Flags) != 6 || r.Orchestration.Compile.Std != "gnu11" {
		t.Errorf("parsed %+v %+v", k, r.Orchestration.Compile)
	}
	// A parse of the same bytes (from the memo) does not share the recipe.
	r.Kernels[1].Compile.Defines[0] = "CHANGED"
	again, err := ParseRequest([]byte(doc))
	if err != nil || again.Kernels[1].Compile.Defines[0] != "PTO_CPU_MAX_THREADS=1" {
		t.Errorf("second parse: %v, %v", again.Kernels[1].Compile, err)
	}
}

// A flag outside the allowlist, a path that leaves its root or names no
// root, and a bad core type are refused naming the field and the value.
func TestCompileRecipeRefused(t *testing.T) {
	for _, tc := range []struct{ recipe, field, want string }{
		{`{"flags": ["-fplugin=/tmp/evil.so"]}`, "kernels[1].compile.flags[0]", `"-fplugin=/tmp/evil.so" is refused`},
		{`{"flags": ["-O2", "-B/opt/bin"]}`, "kernels[1].compile.flags[1]", `"-B/opt/bin" is not in the allowlist`},
		{`{"flags": ["--sysroot=/x"]}`, "kernels[1].compile.flags[0]", `"--sysroot=/x" is not in the allowlist`},
		{`{"flags": ["-specs=x.specs"]}`, "kernels[1].compile.flags[0]", `"-specs=x.specs" is not in the allowlist`},
		{`{"flags": ["-Wl,-rpath,/x"]}`, "kernels[1].compile.flags[0]", `"-Wl,-rpath,/x" is not in the allowlist`},
		{`{"flags": ["@args.txt"]}`, "kernels[1].compile.flags[0]", `"@args.txt" is not in the allowlist`},
		{`{"flags": ["-I/usr/include"]}`, "kernels[1].compile.flags[0]", `include_dirs`},
		{`{"flags": ["-include", "x.h"]}`, "kernels[1].compile.flags[0]", `forced_includes`},
		{`{"flags": ["-fprofile-use=p.gcda"]}`, "kernels[1].compile.flags[0]", `profile`},
		{`{"flags": ["-mfoo=../x/y"]}`, "kernels[1].compile.flags[0]", `no path`},
		{`{"flags": ["-march=native"]}`, "kernels[1].compile.flags[0]", `this machine's CPU`},
		{`{"flags": ["-mllvm"]}`, "kernels[1].compile.flags[0]", `LLVM`},
		{`{"flags": ["-D"]}`, "kernels[1].compile.flags[0]", `"-D"`},
		{`{"flags": ["-O9"]}`, "kernels[1].compile.flags[0]", `not an optimization level`},
		{`{"include_dirs": ["<pto_isa>/../etc"]}`, "kernels[1].compile.include_dirs[0]", `leaves its root <pto_isa>`},
		{`{"include_dirs": ["/usr/include"]}`, "kernels[1].compile.include_dirs[0]", `does not start with a named root`},
		{`{"include_dirs": ["<home>/inc"]}`, "kernels[1].compile.include_dirs[0]", `unknown root <home>`},
		{`{"forced_includes": ["../x.h"]}`, "kernels[1].compile.forced_includes[0]", `neither a path under a named root`},
		{`{"defines": ["1X=2"]}`, "kernels[1].compile.defines[0]", `C identifier`},
		{`{"std": "c++20 -B/x"}`, "kernels[1].compile.std", `not a language standard`},
	} {
		_, err := ParseRequest([]byte(withKernelCompile(tc.recipe)))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.want) {
			t.Errorf("%s: %v, want a FieldError at %s saying %s", tc.recipe, err, tc.field, tc.want)
		}
	}
	_, err := ParseRequest([]byte(strings.Replace(withKernelCompile(`{}`), `"vec"`, `"scalar"`, 1)))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "kernels[1].core_type" {
		t.Errorf("core type scalar: %v", err)
	}
}
