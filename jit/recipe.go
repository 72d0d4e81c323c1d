package jit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/toolchain"
)

// pipelineVersion names the compile recipe (the flags below and in
// resolveRecipe, the entry shim of a .pto kernel, output naming). It is
// part of every key: change it whenever the recipe changes. Version 3
// added per-unit recipes, C++20 and __CPU_SIM on sim platforms and
// <pto_isa>/include/pto on the include path.
const pipelineVersion = "ptojit-sim/3"

// The pipeline's own flags of every unit, before the recipe's.
var sharedFlags = []string{"-O2", "-fPIC", "-shared"}

// The language standards of a unit that names none.
const (
	defaultCStd   = "gnu11"
	defaultCXXStd = "c++20"
)

// recipe is the resolved compile recipe of one unit: every flag the
// compiler gets besides the dependency output, the output and the source.
// Paths are absolute.
type recipe struct {
	std      string
	defines  []string // -D values, in order
	includes []string // -I directories, in order
	// quote is the -iquote directory of a .pto source (its assembled
	// form lives in a temporary directory); "" otherwise.
	quote string
	// forced are -include operands: absolute files, or header names
	// searched for on the include path.
	forced []string
	flags  []string
}

// args returns the recipe's flags, paths under the base directory named
// relative to it.
func (r *recipe) args(base baseDir) []string {
	fl := []string{"-std=" + r.std}
	fl = append(fl, sharedFlags...)
	for _, d := range r.defines {
		fl = append(fl, "-D"+d)
	}
	if r.quote != "" {
		fl = append(fl, "-iquote", base.rel(r.quote))
	}
	for _, d := range r.includes {
		fl = append(fl, "-I", base.rel(d))
	}
	for _, f := range r.forced {
		if filepath.IsAbs(f) {
			f = base.rel(f)
		}
		fl = append(fl, "-include", f)
	}
	return append(fl, r.flags...)
}

// searchesWorkDir reports whether the compiler looks in its working
// directory first for a forced include: a header name is searched there
// before the include path.
func (r *recipe) searchesWorkDir() bool {
	for _, f := range r.forced {
		if !filepath.IsAbs(f) {
			return true
		}
	}
	return false
}

// record is the recipe in the key record: its flags, as the compiler gets
// them (relative to the base directory).
func (r *recipe) record(base baseDir) inventory.Value {
	l := inventory.List{}
	for _, a := range r.args(base) {
		l = append(l, inventory.Str(a))
	}
	return l
}

// recipeRoots resolves the named roots of a request's recipes: "" for one
// the request does not have. <base> is the base directory, else the
// directory of the request's file.
func recipeRoots(req *api.Request, base string, getenv func(string) string) map[string]string {
	if base == "" && req.File != "" {
		base = filepath.Dir(req.File)
	}
	isa := req.Toolchain.PtoIsaRoot
	if isa == "" {
		isa = getenv(toolchain.PtoIsaRootEnv)
	}
	return map[string]string{"base": base, "runtime": req.Toolchain.RuntimeRoot, "pto_isa": isa}
}

// resolveRecipes returns the recipe of every unit, the orchestration
// first, then the kernels in request order. A path of a recipe under an
// unknown or absent root, or naming no directory (no file for a forced
// include), is an error naming the field.
func resolveRecipes(req *api.Request, base string, getenv func(string) string) ([]recipe, error) {
	roots := recipeRoots(req, base, getenv)
	pipeline := pipelineIncludes(roots)
	out := make([]recipe, 0, 1+len(req.Kernels))
	r, err := resolveRecipe(req.Platform, req.Orchestration.Source, "", req.Orchestration.Compile, "orchestration.compile", roots, pipeline)
	if err != nil {
		return nil, err
	}
	out = append(out, r)
	for i, k := range req.Kernels {
		r, err := resolveRecipe(req.Platform, k.Source, k.CoreType, k.Compile, fmt.Sprintf("kernels[%d].compile", i), roots, pipeline)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// pipelineIncludes lists the include directories every unit gets, those
// that exist: <runtime>/include, <pto_isa>/include and
// <pto_isa>/include/pto (PTO-ISA's own sources include "common/..." from
// there).
func pipelineIncludes(roots map[string]string) []string {
	var out []string
	for _, d := range [][2]string{{"runtime", "include"}, {"pto_isa", "include"}, {"pto_isa", "include/pto"}} {
		root := roots[d[0]]
		if root == "" {
			continue
		}
		inc := filepath.Join(root, d[1])
		if fi, err := os.Stat(inc); err == nil && fi.IsDir() {
			out = append(out, inc)
		}
	}
	return out
}

// resolveRecipe resolves the recipe of one unit at field.
func resolveRecipe(platform, source, coreType string, c *api.Compile, field string, roots map[string]string, pipeline []string) (recipe, error) {
	cxx := isCXX(source)
	r := recipe{std: defaultCStd, includes: append([]string(nil), pipeline...)}
	if cxx {
		r.std = defaultCXXStd
	}
	if registry.IsSim(platform) {
		r.defines = append(r.defines, "__CPU_SIM")
		switch coreType {
		case "vec":
			r.defines = append(r.defines, "__DAV_VEC__")
		case "cube":
			r.defines = append(r.defines, "__DAV_CUBE__")
		}
	}
	if strings.EqualFold(filepath.Ext(source), ".pto") {
		r.quote = filepath.Dir(source)
	}
	if c == nil {
		return r, nil
	}
	if c.Std != "" {
		r.std = c.Std
	}
	r.defines = append(r.defines, c.Defines...)
	for i, p := range c.IncludeDirs {
		d, err := recipePath(p, roots, true)
		if err != nil {
			return recipe{}, &api.FieldError{Field: fmt.Sprintf("%s.include_dirs[%d]", field, i), Msg: err.Error()}
		}
		r.includes = append(r.includes, d)
	}
	for i, p := range c.ForcedIncludes {
		if api.IsHeaderName(p) {
			r.forced = append(r.forced, p)
			continue
		}
		f, err := recipePath(p, roots, false)
		if err != nil {
			return recipe{}, &api.FieldError{Field: fmt.Sprintf("%s.forced_includes[%d]", field, i), Msg: err.Error()}
		}
		r.forced = append(r.forced, f)
	}
	r.flags = append(r.flags, c.Flags...)
	return r, nil
}

// recipePath resolves "<root>/rel" to an absolute path that must be a
// directory (dir) or a regular file.
func recipePath(p string, roots map[string]string, dir bool) (string, error) {
	name, rel, err := api.SplitRecipePath(p)
	if err != nil {
		return "", err
	}
	root := roots[name]
	if root == "" {
		return "", fmt.Errorf("%q: the request has no <%s> root", p, name)
	}
	abs := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q: %s does not exist", p, abs)
	case dir && !fi.IsDir():
		return "", fmt.Errorf("%q: %s is not a directory", p, abs)
	case !dir && !fi.Mode().IsRegular():
		return "", fmt.Errorf("%q: %s is not a regular file", p, abs)
	}
	return abs, nil
}

// recipeIncludes lists the -I directories of every recipe, in order, each
// once.
func recipeIncludes(rs []recipe) []string {
	var out []string
	for _, r := range rs {
		for _, d := range r.includes {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}
