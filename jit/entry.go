package jit

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/registry"
)

// kernelEntry is the symbol a sim worker looks up in every kernel object
// (PTOJIT_KERNEL_SYMBOL of ptojit_sim.h).
const kernelEntry = "ptojit_kernel"

// EntryError is a compiled object that does not export a symbol its
// loader looks up: a callable built from it could not be loaded, so it is
// not published.
type EntryError struct {
	Object string // the output's name, e.g. "kernel_0.so"
	Symbol string
	Why    string // what looks it up
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("%s does not export %s (%s)", e.Object, e.Symbol, e.Why)
}

// checkEntries checks that every object of a sim build exports what the
// worker loads: each kernel ptojit_kernel, the orchestration its function
// and config symbols. A failure is a CompileError of the unit whose
// object lacks the symbol.
func checkEntries(req *api.Request, units []unit, res *compileResult) error {
	if !registry.IsSim(req.Platform) {
		return nil // device objects are loaded by CANN's runtime
	}
	for _, u := range units {
		var want [][2]string
		if u.role == "orchestration" {
			want = append(want, [2]string{req.Orchestration.Function, "orchestration.function"})
			if req.Orchestration.Config != "" {
				want = append(want, [2]string{req.Orchestration.Config, "orchestration.config"})
			}
		} else {
			want = append(want, [2]string{kernelEntry, "the entry the " + req.Platform + " worker loads from every kernel"})
		}
		for _, w := range want {
			err := exports(res.binaries[u.role], w[0])
			if err == nil {
				continue
			}
			if errors.Is(err, errNotExported) {
				err = &EntryError{Object: u.output, Symbol: w[0], Why: w[1]}
			}
			return &CompileError{Role: u.role, Source: filepath.Base(u.source), Tool: "symbol check", Err: err}
		}
	}
	return nil
}

// errNotExported is exports' answer for an object without the symbol.
var errNotExported = errors.New("not exported")

// exports reports whether the ELF shared object bin defines the global
// (or weak) dynamic symbol name: nil when it does, errNotExported when it
// does not, another error when bin is not an ELF shared object.
func exports(bin []byte, name string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF shared object: %w", err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("reading its dynamic symbols: %w", err)
	}
	for _, s := range syms {
		bind := elf.ST_BIND(s.Info)
		if s.Name == name && s.Section != elf.SHN_UNDEF && (bind == elf.STB_GLOBAL || bind == elf.STB_WEAK) {
			return nil
		}
	}
	return errNotExported
}
