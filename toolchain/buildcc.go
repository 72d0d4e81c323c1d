package toolchain

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
// driver COLLECT_GCC names, [(program, path, evidence)...]). The invoked
// file and each program must be ELF files, as PyPTO requires.
func compilerRecord(cfg *Config, invoked string, before func(string) error) (inventory.Value, string) {
	if !isELF(invoked) {
		return nil, "Unsupported compiler launcher (requires dependency adapter): " + invoked
	}
	if clangNamed(invoked) {
		return clangRecord(cfg, invoked, before)
	}
	ctx := context.Background()
	var (
		wg               sync.WaitGroup
		verbose, verbErr string
		version, verErr  string
		progs            [len(gccPrograms)]string
		errs             [len(gccPrograms) + 2]error
	)
	wg.Go(func() { verbose, verbErr, errs[0] = probeBoth(ctx, cfg, invoked, "-E", "-x", "c++", "-v", os.DevNull) })
	wg.Go(func() { version, verErr, errs[1] = probeBoth(ctx, cfg, invoked, "--version") })
	for i, name := range gccPrograms {
		wg.Go(func() {
			out, errOut, err := probeBoth(ctx, cfg, invoked, "-print-prog-name="+name)
			progs[i], errs[i+2] = out+errOut, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, "compiler " + invoked + ": " + err.Error()
		}
	}
	if !strings.Contains(verbose+verbErr, "COLLECT_GCC=") && isClang(version+verErr) {
		return clangRecord(cfg, invoked, before)
	}
	programs := inventory.List{}
	for i, name := range gccPrograms {
		answer := strings.TrimSpace(progs[i])
		if answer == "" || strings.Contains(answer, "\n") {
			return nil, "Cannot identify GCC's selected " + name + ": " + invoked
		}
		path, reason := executable(cfg, answer)
		if reason != "" {
			return nil, reason
		}
		rec, err := fileRecord(path, before)
		if err != nil {
			return nil, errReason(err)
		}
		programs = append(programs, inventory.T(inventory.Str(name), inventory.StrFromOSBytes(path), rec))
	}
	driver, reason := driverExecuted(cfg, verbose+verbErr, invoked)
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
	return inventory.T(inventory.StrFromOSBytes(invoked), inventory.StrFromOSBytes(strings.TrimSpace(version+verErr)),
		invokedID, driverID, programs), ""
}

// executable is PyPTO's _executable: name found as a shell finds it, its
// real path, which must be an ELF file.
func executable(cfg *Config, name string) (string, string) {
	p, err := lookPath(cfg, name)
	if err != nil {
		return "", "Compiler executable is unavailable: " + name
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", errReason(err)
	}
	if !isELF(real) {
		return "", "Unsupported compiler launcher (requires dependency adapter): " + p
	}
	return real, ""
}

// wrapperRedirects are the ccache settings that send compilation beyond
// the driver COLLECT_GCC names.
var wrapperRedirects = []string{"compiler", "path", "prefix_command", "prefix_command_cpp"}

// driverExecuted is the real path of the driver GCC ran (the first
// COLLECT_GCC in the -v output). A driver other than the invoked file is
// accepted only when the invoked file is ccache, whose selection the
// invoked name states, and ccache --show-config sets none of
// wrapperRedirects; any other wrapper has selection inputs nothing
// identifies.
func driverExecuted(cfg *Config, out, invoked string) (string, string) {
	name, found := "", false
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "COLLECT_GCC="); ok {
			name, found = strings.TrimSpace(v), true
			break
		}
	}
	if !found {
		return "", "Cannot identify the compiler driver actually executed: " + invoked
	}
	return acceptDriver(cfg, name, invoked)
}

// acceptDriver is the real path of name, the driver a compiler reports it
// executed, when that is the invoked file or ccache runs it without
// redirects (see driverExecuted).
func acceptDriver(cfg *Config, name, invoked string) (string, string) {
	real, err := filepath.EvalSymlinks(name)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return "", errReason(err)
	}
	native, err := filepath.EvalSymlinks(invoked)
	if err != nil {
		return "", errReason(err)
	}
	if real == native {
		return real, ""
	}
	base := filepath.Base(native)
	if base != "ccache" {
		return "", "Compiler wrapper with untracked selection inputs: " + base + " at " + invoked
	}
	if redirects := ccacheRedirects(cfg, native); len(redirects) > 0 {
		return "", "Compiler wrapper redirects compilation beyond this inventory: " + base + " has " + strings.Join(redirects, ", ")
	}
	return real, ""
}

// ccacheRedirects reads ccache --show-config ("(origin) key = value"
// lines) and returns each redirect set, with its origin.
func ccacheRedirects(cfg *Config, ccache string) []string {
	out, errOut, err := probeBoth(context.Background(), cfg, ccache, "--show-config")
	if err != nil {
		return []string{"its configuration could not be read (" + err.Error() + ")"}
	}
	var found []string
	for _, line := range strings.Split(out+errOut, "\n") {
		origin, setting, ok := strings.Cut(line, ") ")
		if !ok {
			continue
		}
		key, value, ok := strings.Cut(setting, " = ")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if ok && value != "" && slices.Contains(wrapperRedirects, key) {
			found = append(found, key+"="+value+" from "+strings.TrimSpace(origin)+")")
		}
	}
	return found
}
