package jit

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
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
func checkEntries(req *api.Request, units []unit, res *compileResult, tmpDir string) error {
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
			err := objectExports(res.binaries[u.role], w[0], tmpDir)
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

// exportsMemo remembers, by an object's SHA-256 and a symbol, that the
// object exports the symbol, so that a unit found in its entry is not
// read again for it.
var exportsMemo memo[exportsKey, bool]

type exportsKey struct {
	digest [32]byte
	symbol string
}

// objectExports is exports of o: its file, or, for an object in the
// store that exportsMemo does not vouch for, a copy streamed into a
// build directory under tmpDir (the ELF reader reads at offsets; the
// store's reader streams).
func objectExports(o *object, name, tmpDir string) error {
	k := exportsKey{o.digest, name}
	if _, ok := exportsMemo.get(k); ok {
		return nil
	}
	p := o.path
	if p == "" {
		dir, release, err := newBuildDir(tmpDir) // swept if this process dies
		if err != nil {
			return err
		}
		defer release()
		p = filepath.Join(dir, "object")
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		r, err := o.open()
		if err == nil {
			_, err = io.Copy(f, r)
			r.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := exports(f, name); err != nil {
		return err
	}
	exportsMemo.put(k, true)
	return nil
}

// exports reports whether the ELF shared object bin defines the global
// (or weak) dynamic symbol name: nil when it does, errNotExported when it
// does not, another error when bin is not an ELF shared object.
func exports(bin io.ReaderAt, name string) error {
	f, err := elf.NewFile(bin)
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
