package toolchain

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/inventory"
)

// gccPrograms are the programs GCC selects independently of its driver,
// asked for by -print-prog-name, as PyPTO asks.
var gccPrograms = [4]string{"cc1plus", "collect2", "as", "ld"}

// deviceBuild is PyPTO's device record of a sim platform: the list of the
// selected compilers' records, the C compiler's then the C++ compiler's.
func deviceBuild(cfg *Config, cc, cxx string) *buildSpec {
	if cc == "" || cxx == "" {
		return nil
	}
	env := *cfg
	key := inventory.T(inventory.Str("device"), inventory.StrFromOSBytes(cc), inventory.StrFromOSBytes(cxx))
	return &buildSpec{key: key, read: func(before func(string) error) (inventory.Value, string) {
		var l inventory.List
		for _, c := range []string{cc, cxx} {
			rec, reason := compilerRecord(&env, c, before)
			if reason != "" {
				return nil, reason
			}
			l = append(l, rec)
		}
		return l, ""
	}}
}

// compilerRecord is PyPTO's _compiler_identity of the compiler invoked:
// (invoked, --version text, invoked file's evidence, the evidence of the
// driver COLLECT_GCC names, [(program, path, evidence)...]).
func compilerRecord(cfg *Config, invoked string, before func(string) error) (inventory.Value, string) {
	ctx := context.Background()
	var (
		wg       sync.WaitGroup
		verbose  string
		version  string
		progs    [len(gccPrograms)]string
		errs     [len(gccPrograms) + 2]error
		verbBoth string
	)
	wg.Go(func() {
		out, errOut, err := probeBoth(ctx, cfg, invoked, "-E", "-x", "c++", "-v", os.DevNull)
		verbose, verbBoth, errs[0] = out, errOut, err
	})
	wg.Go(func() { version, errs[1] = probe(ctx, cfg, invoked, "--version") })
	for i, name := range gccPrograms {
		wg.Go(func() { progs[i], errs[i+2] = probe(ctx, cfg, invoked, "-print-prog-name="+name) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, "compiler " + invoked + ": " + err.Error()
		}
	}
	programs := inventory.List{}
	for i, name := range gccPrograms {
		answer := strings.TrimSpace(progs[i])
		if answer == "" || strings.Contains(answer, "\n") {
			return nil, "Cannot identify GCC's selected " + name + ": " + invoked
		}
		path, err := lookPath(cfg, answer)
		if err != nil {
			return nil, "GCC's selected " + name + " " + answer + ": " + err.Error()
		}
		rec, err := fileRecord(path, before)
		if err != nil {
			return nil, errReason(err)
		}
		programs = append(programs, inventory.T(inventory.Str(name), inventory.StrFromOSBytes(path), rec))
	}
	driver, reason := driverExecuted(cfg, verbose+verbBoth, invoked)
	if reason != "" {
		return nil, reason
	}
	native, err := filepath.EvalSymlinks(invoked)
	if err != nil {
		return nil, errReason(err)
	}
	invokedID, err := fileRecord(native, before)
	if err != nil {
		return nil, errReason(err)
	}
	driverID := invokedID
	if driver != native {
		if driverID, err = fileRecord(driver, before); err != nil {
			return nil, errReason(err)
		}
	}
	return inventory.T(inventory.StrFromOSBytes(invoked), inventory.StrFromOSBytes(strings.TrimSpace(version)),
		invokedID, driverID, programs), ""
}

// driverExecuted is the real path of the driver GCC ran (COLLECT_GCC in
// the -v output). A driver other than the invoked file is accepted only
// behind ccache, whose selection the invoked name states; any other
// wrapper has selection inputs nothing identifies.
func driverExecuted(cfg *Config, out, invoked string) (string, string) {
	name := ""
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "COLLECT_GCC="); ok {
			name = strings.TrimSpace(v)
		}
	}
	if name == "" {
		return "", "Cannot identify the GCC driver executed by " + invoked
	}
	p, err := lookPath(cfg, name)
	if err != nil {
		return "", "GCC driver " + name + ": " + err.Error()
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", errReason(err)
	}
	native, err := filepath.EvalSymlinks(invoked)
	if err == nil && real != native && filepath.Base(invoked) != "ccache" {
		return "", "Compiler wrapper has untracked selection inputs: " + invoked + " runs " + real
	}
	return real, ""
}
