// Package simtest builds small sim-platform chip callables for tests and
// benchmarks of the worker: C sources compiled by the host compiler into
// shared objects against ptojit_sim.h and packed into ChipCallable blobs.
// It needs a C compiler (CC, else cc) and the module's source tree.
package simtest

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ptojit/ptojit/registry"
)

//go:embed csrc/*.c
var sources embed.FS

// IncludeDir returns the directory of ptojit_sim.h in this source tree.
func IncludeDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("simtest: cannot locate the source tree")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "examples", "toolchain", "runtime", "include")
	if _, err := os.Stat(filepath.Join(dir, "ptojit_sim.h")); err != nil {
		return "", fmt.Errorf("simtest: ptojit_sim.h: %w", err)
	}
	return dir, nil
}

// Compile compiles the embedded source name (e.g. "add.c") into a shared
// object in dir and returns its bytes.
func Compile(dir, name string) ([]byte, error) {
	inc, err := IncludeDir()
	if err != nil {
		return nil, err
	}
	src, err := sources.ReadFile("csrc/" + name)
	if err != nil {
		return nil, err
	}
	return CompileSource(dir, name, src, inc)
}

// CompileSource compiles C source text into a shared object in dir.
func CompileSource(dir, name string, src []byte, include string) ([]byte, error) {
	cpath := filepath.Join(dir, name)
	if err := os.WriteFile(cpath, src, 0o644); err != nil {
		return nil, err
	}
	so := cpath + ".so"
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O2", "-I", include, "-o", so, cpath)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("simtest: compile %s: %v\n%s", name, err, out)
	}
	return os.ReadFile(so)
}

// VAddCallable is the example's chip callable: signature [IN, IN, OUT,
// SCALAR], scalar_count 1, orchestration vadd_orch (config vadd_config),
// kernels func_id 0 (add) and 1 (scale in place).
func VAddCallable(dir string) (*registry.ChipCallable, error) {
	orch, err := Compile(dir, "vadd_orch.c")
	if err != nil {
		return nil, err
	}
	add, err := Compile(dir, "add.c")
	if err != nil {
		return nil, err
	}
	scale, err := Compile(dir, "scale.c")
	if err != nil {
		return nil, err
	}
	return &registry.ChipCallable{
		Signature:   []registry.Direction{registry.In, registry.In, registry.Out, registry.Scalar},
		FuncName:    "vadd_orch",
		ConfigName:  "vadd_config",
		ScalarCount: 1,
		Binary:      orch,
		Children: []registry.Child{
			{FuncID: 0, Core: registry.CoreCallable{Signature: []registry.Direction{registry.In, registry.In, registry.Out}, Binary: add}},
			{FuncID: 1, Core: registry.CoreCallable{Signature: []registry.Direction{registry.InOut, registry.Scalar}, Binary: scale}},
		},
	}, nil
}

// EmptyCallable is a chip callable whose orchestration returns at once:
// empty signature, no kernels.
func EmptyCallable(dir string) (*registry.ChipCallable, error) {
	orch, err := Compile(dir, "empty_orch.c")
	if err != nil {
		return nil, err
	}
	return &registry.ChipCallable{FuncName: "empty_orch", ConfigName: "empty_config", Binary: orch}, nil
}
