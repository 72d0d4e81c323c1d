package jit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// A kernel's compile recipe reaches its compiler (defines, an include
// directory and a forced include under <base>, a header name forced in,
// the core type's macro, __CPU_SIM on a sim platform), enters the key
// (the record shows it; a changed define is another key) and a path that
// names no directory is refused naming the field.
func TestCompileRecipe(t *testing.T) {
	dir, req := copyExamples(t)
	inc := filepath.Join(dir, "vadd", "inc")
	if err := os.Mkdir(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(inc, "pre.h"), "#define PRE_INCLUDED 1\n")
	writeFile(t, filepath.Join(inc, "scale_check.h"), "#define SCALE_CHECKED 1\n")
	src := filepath.Join(dir, "vadd", "kernel_scale.c")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	guard := `#include "scale_check.h"
#if !defined(PRE_INCLUDED) || !defined(SCALE_CHECKED) || VADD_FACTOR != 1 || !defined(__CPU_SIM) || !defined(__DAV_VEC__) || defined(__DAV_CUBE__) || !defined(UINT8_MAX)
#error the compile recipe did not reach the compiler
#endif
`
	writeFile(t, src, guard+string(b))
	req.BaseDir = filepath.Join(dir, "vadd")
	req.Kernels[1].CoreType = "vec"
	req.Kernels[1].Compile = &api.Compile{
		Std:            "gnu17",
		Defines:        []string{"VADD_FACTOR=1"},
		IncludeDirs:    []string{"<base>/inc"},
		ForcedIncludes: []string{"<base>/inc/pre.h", "stdint.h"},
		Flags:          []string{"-O3"},
	}
	store := cache.NewMemory(cache.Options{})
	first := build(t, newDriver(t, store), req, api.StatusMiss)
	build(t, newDriver(t, store), req, api.StatusHit)

	rep, err := newDriver(t, store).KeyOf(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-std=gnu17", "-O2", "-fPIC", "-shared", "-D__CPU_SIM", "-D__DAV_VEC__", "-DVADD_FACTOR=1"}
	got := recordStrings(t, rep.Record, "build", "kernels", 1, "compile")
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) || !slices.Contains(got, "inc/pre.h") || !slices.Contains(got, "stdint.h") || got[len(got)-1] != "-O3" {
		t.Errorf("kernel 1's recipe in the record: %q", got)
	}
	if orch := recordStrings(t, rep.Record, "build", "orchestration_compile"); !slices.Equal(orch[:5], []string{"-std=gnu11", "-O2", "-fPIC", "-shared", "-D__CPU_SIM"}) {
		t.Errorf("the orchestration's recipe in the record: %q", orch)
	}

	req.Kernels[1].Compile.Defines = []string{"VADD_FACTOR=1", "OTHER"}
	if r := build(t, newDriver(t, store), req, api.StatusMiss); r.Key == first.Key {
		t.Error("another define, the same key")
	}

	req.Kernels[1].Compile.IncludeDirs = []string{"<base>/missing"}
	_, err = newDriver(t, store).Build(context.Background(), req)
	var fe *api.FieldError
	if !errors.As(err, &fe) || fe.Field != "kernels[1].compile.include_dirs[0]" || !strings.Contains(fe.Msg, "does not exist") {
		t.Errorf("a missing include directory: %v", err)
	}
	req.Kernels[1].Compile.IncludeDirs = nil
	req.Kernels[1].Compile.ForcedIncludes = []string{"<pto_isa>/include/none.h"}
	_, err = newDriver(t, store).Build(context.Background(), req)
	if !errors.As(err, &fe) || fe.Field != "kernels[1].compile.forced_includes[0]" {
		t.Errorf("a missing forced include: %v", err)
	}
}

// recordStrings returns the list of strings at a path of dict keys and
// list indices in a key record.
func recordStrings(t *testing.T, rec inventory.Value, path ...any) []string {
	t.Helper()
	v := rec
	if tu, ok := v.(inventory.Tuple); ok {
		v = tu[len(tu)-1]
	}
	for _, p := range path {
		switch p := p.(type) {
		case string:
			d, ok := v.(inventory.Dict)
			if !ok {
				t.Fatalf("%v: not a dict at %q", path, p)
			}
			v = d[inventory.Str(p)]
		case int:
			l, ok := v.(inventory.List)
			if !ok || p >= len(l) {
				t.Fatalf("%v: not a list at %d", path, p)
			}
			v = l[p]
		}
	}
	l, ok := v.(inventory.List)
	if !ok {
		t.Fatalf("%v: %T, not a list", path, v)
	}
	var out []string
	for _, x := range l {
		out = append(out, string(x.(inventory.Str)))
	}
	return out
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
