package toolchain

import (
	"context"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/inventory"
)

// clangRecord is ptojit's build-policy record of a clang driver, which
// PyPTO's build policy does not identify (see clang.go):
//
//	("ptojit-clang", invoked, --version text, the invoked file's evidence,
//	 [(program, real path, evidence)] for each program the plan runs,
//	 [(library, evidence)] for the shared libraries those programs load,
//	 resource directory,
//	 (selected GCC installation or None, [(file, evidence)] the link reads),
//	 [(configuration file, evidence)])
//
// A file's evidence is NativeBuildID's: the GNU build-id of an ELF file
// (clang, libLLVM, libclang-cpp, the linker, libstdc++, libgcc_s), the
// SHA-256 of anything else (the crt objects, libgcc.a, linker scripts).
// The compiler the plan runs must be the invoked file (or the file ccache
// runs, as for gcc), and every program an ELF file. The directory holding
// the selected GCC installation is watched, so that a GCC installed beside
// it, which clang may select instead, drops the memo.
func clangRecord(cfg *Config, invoked string, before func(string) error) (inventory.Value, string) {
	ctx := context.Background()
	var (
		wg               sync.WaitGroup
		plan             clangPlan
		version, verErr  string
		planErr, versErr error
	)
	wg.Go(func() { plan, planErr = probeClangPlan(ctx, cfg, invoked) })
	wg.Go(func() { version, verErr, versErr = probeBoth(ctx, cfg, invoked, "--version") })
	wg.Wait()
	for _, err := range []error{versErr, planErr} {
		if err != nil {
			return nil, "compiler " + invoked + ": " + err.Error()
		}
	}
	version = strings.TrimSpace(version + verErr)
	if !isClang(version) {
		return nil, "Cannot identify the compiler driver actually executed: " + invoked
	}
	if _, reason := acceptDriver(cfg, plan.Compiler, invoked); reason != "" {
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
	programs := inventory.List{}
	for _, p := range plan.Programs {
		real, reason := executable(cfg, p)
		if reason != "" {
			return nil, reason
		}
		rec, err := fileRecord(p, before)
		if err != nil {
			return nil, errReason(err)
		}
		programs = append(programs, inventory.T(inventory.StrFromOSBytes(p), inventory.StrFromOSBytes(real), rec))
	}
	libPaths, err := sharedLibs(ctx, cfg, plan.Programs)
	if err != nil {
		return nil, "compiler " + invoked + ": " + err.Error()
	}
	libs, reason := fileRecords(libPaths, before)
	if reason != "" {
		return nil, reason
	}
	var gcc inventory.Value = inventory.None{}
	if plan.GCCInstallation != "" {
		gcc = inventory.StrFromOSBytes(plan.GCCInstallation)
		if err := before(filepath.Dir(filepath.Clean(plan.GCCInstallation))); err != nil {
			return nil, "cannot watch " + filepath.Dir(plan.GCCInstallation) + ": " + err.Error()
		}
	}
	linked, reason := fileRecords(plan.LinkFiles, before)
	if reason != "" {
		return nil, reason
	}
	configs, reason := fileRecords(plan.ConfigFiles, before)
	if reason != "" {
		return nil, reason
	}
	return inventory.T(inventory.Str(clangTag), inventory.StrFromOSBytes(invoked), inventory.StrFromOSBytes(version),
		invokedID, programs, libs, inventory.StrFromOSBytes(plan.ResourceDir),
		inventory.T(gcc, linked), configs), ""
}

// fileRecords is [(real path, evidence)] for paths (libraries, link
// inputs), or the reason one cannot be read. Each file is watched through
// the directory holding it and the one holding the name it was found by,
// not through every symlink on the way, as fileRecord would: on a merged
// /usr system the loader and the linker name /lib/x86_64-linux-gnu/...,
// and a watch on / (which holds the symlink lib) would drop the memo at
// every change anywhere below it (InstallationIdentityCache.Forget).
func fileRecords(paths []string, before func(string) error) (inventory.List, string) {
	out := inventory.List{}
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, errReason(err)
		}
		if real != p {
			if err := before(filepath.Dir(filepath.Clean(p))); err != nil {
				return nil, "cannot watch " + filepath.Dir(p) + ": " + err.Error()
			}
		}
		rec, err := fileRecord(real, before)
		if err != nil {
			return nil, errReason(err)
		}
		out = append(out, inventory.T(inventory.StrFromOSBytes(real), rec))
	}
	return out, ""
}
