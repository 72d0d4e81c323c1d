package toolchain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/inventory"
)

// ToolResolutionVars are the environment variables that change which
// programs and files the host compiler uses in ways its own reports
// (-print-prog-name, -print-search-dirs, -E -v) do not show. When one is
// set the device toolchain of a sim platform is unavailable.
var ToolResolutionVars = []string{"LD_PRELOAD", "LD_AUDIT", "GCC_EXEC_PREFIX", "COMPILER_PATH"}

// linkInputs are the files a shared object links with, asked for by
// -print-file-name (the C++ library of the C++ driver).
var (
	cLinkInputs   = []string{"crti.o", "crtn.o", "crtbeginS.o", "crtendS.o", "libgcc.a", "libgcc_s.so", "libgcc_s.so.1", "libc.so", "libc.so.6", "libc_nonshared.a", "libm.so", "libm.so.6"}
	cxxLinkInputs = []string{"libstdc++.so", "libstdc++.so.6"}
)

// maxParallelProbes bounds the compiler probes run at once.
const maxParallelProbes = 4

// HostCompiler is what the host C/C++ compiler reports about itself. Plain
// data, safe for concurrent reads.
type HostCompiler struct {
	CC, CXX     string // absolute paths of the drivers
	CCVersion   string // complete --version outputs
	CXXVersion  string
	Programs    []string // cc1, cc1plus, as, ld as resolved
	InstallDir  string   // "install:" of -print-search-dirs
	ProgramDirs []string // "programs:" of -print-search-dirs that exist
	LinkInputs  []string // what -print-file-name found
	IncludeDirs []string // the include search lists of -E -v (C then C++)
	SharedLibs  []string // what ldd says the drivers and programs load
	// ClangDirs are the resource directory and the selected GCC
	// installation of each clang driver (addClang).
	ClangDirs []string
}

// resolveHostCompiler identifies the host C and C++ compilers of a sim
// platform and returns their inputs and paths.
func resolveHostCompiler(ctx context.Context, cfg *Config) (ComponentInputs, string, string) {
	cc, ccErr := selectCompiler(cfg, "CC", "cc")
	cxx, cxxErr := selectCompiler(cfg, "CXX", "c++")
	switch {
	case ccErr != "":
		return Unavailable(ccErr), cc, cxx
	case cxxErr != "":
		return Unavailable(cxxErr), cc, cxx
	}
	for _, v := range ToolResolutionVars {
		if cfg.getenv(v) != "" {
			return Unavailable(v + " is set: the compiler's tool resolution cannot be accounted for"), cc, cxx
		}
	}
	hc, err := ProbeHostCompiler(ctx, cfg, cc, cxx)
	if err != nil {
		return Unavailable("host compiler: " + err.Error()), cc, cxx
	}
	roots, reason := hc.roots()
	if reason != "" {
		return Unavailable(reason), cc, cxx
	}
	declared, reason := declaredRoots(cfg.DeviceRoots)
	if reason != "" {
		return Unavailable(reason), cc, cxx
	}
	roots = append(roots, declared...)
	return proven(ComponentInputs{
		Roots:           roots,
		ReportedVersion: "cc --version:\n" + hc.CCVersion + "c++ --version:\n" + hc.CXXVersion,
	}), cc, cxx
}

// selectCompiler resolves the compiler the build uses: $env or def on PATH.
func selectCompiler(cfg *Config, env, def string) (string, string) {
	name := cfg.getenv(env)
	if name == "" {
		name = def
	}
	if f := strings.Fields(name); len(f) != 1 || f[0] != name {
		return "", env + " is a command with arguments or spaces; only a single program can be identified"
	}
	p, err := lookPath(cfg, name)
	if err != nil {
		return "", "host compiler " + name + ": " + err.Error()
	}
	return p, ""
}

// ProbeHostCompiler asks the drivers cc and cxx for their versions, the
// programs and directories they use, and their include search lists.
func ProbeHostCompiler(ctx context.Context, cfg *Config, cc, cxx string) (*HostCompiler, error) {
	hc := &HostCompiler{CC: cc, CXX: cxx}
	var (
		versions  [2]string
		progs     [4]string
		search    string
		vOut      [2]string
		plans     [2]string
		linkFound = make([]string, len(cLinkInputs)+len(cxxLinkInputs))
		named     = [2]bool{clangNamed(cc), clangNamed(cxx)}
	)
	jobs := []hostProbe{
		{cc, []string{"--version"}, &versions[0], false},
		{cxx, []string{"--version"}, &versions[1], false},
		{cc, []string{"-E", "-v", "-x", "c", os.DevNull}, &vOut[0], true},
		{cxx, []string{"-E", "-v", "-x", "c++", os.DevNull}, &vOut[1], true},
	}
	// A driver named clang says in its plan what it runs and links,
	// which the questions asked of gcc answer only in part; each clang
	// process costs about ten of gcc's (it loads libLLVM). Its program
	// directory is LLVM's bin (every LLVM tool installed, 415 MB with
	// MLIR's on Debian): what it runs from there the plan names.
	if !named[0] {
		jobs = append(jobs, hostProbe{cc, []string{"-print-search-dirs"}, &search, false},
			hostProbe{cc, []string{"-print-prog-name=cc1"}, &progs[0], false},
			hostProbe{cc, []string{"-print-prog-name=as"}, &progs[2], false},
			hostProbe{cc, []string{"-print-prog-name=ld"}, &progs[3], false})
		for i, f := range cLinkInputs {
			jobs = append(jobs, hostProbe{cc, []string{"-print-file-name=" + f}, &linkFound[i], false})
		}
	}
	if !named[1] {
		jobs = append(jobs, hostProbe{cxx, []string{"-print-prog-name=cc1plus"}, &progs[1], false})
		for i, f := range cxxLinkInputs {
			jobs = append(jobs, hostProbe{cxx, []string{"-print-file-name=" + f}, &linkFound[len(cLinkInputs)+i], false})
		}
	}
	for i, drv := range []string{cc, cxx} {
		if named[i] {
			jobs = append(jobs, hostProbe{drv, clangPlanArgs, &plans[i], true})
		}
	}
	if err := runHostProbes(ctx, cfg, jobs); err != nil {
		return nil, err
	}
	hc.CCVersion, hc.CXXVersion = versions[0], versions[1]
	hc.addPrograms(cfg, progs[:])
	hc.InstallDir, hc.ProgramDirs = ParseSearchDirs(search)
	for _, f := range linkFound {
		f = strings.TrimSpace(f)
		if filepath.IsAbs(f) {
			if _, err := os.Stat(f); err == nil {
				hc.LinkInputs = append(hc.LinkInputs, f)
			}
		}
	}
	for _, out := range vOut {
		hc.IncludeDirs = append(hc.IncludeDirs, ParseIncludeDirs(out)...)
	}
	if err := hc.addClang(ctx, cfg, versions, plans); err != nil {
		return nil, err
	}
	libs, err := sharedLibs(ctx, cfg, append([]string{cc, cxx}, hc.Programs...))
	if err != nil {
		return nil, err
	}
	hc.SharedLibs = libs
	return hc, nil
}

// addPrograms adds the programs -print-prog-name answered (progs; "" for
// a question not asked), found on PATH when answered by a bare name.
func (hc *HostCompiler) addPrograms(cfg *Config, progs []string) {
	for _, p := range progs {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			found, err := lookPath(cfg, p)
			if err != nil {
				continue // built into the driver (clang's cc1) or unused
			}
			p = found
		}
		hc.Programs = append(hc.Programs, p)
	}
}

// addClang adds, for each driver whose --version text (versions: the C
// driver's, the C++ driver's) is clang's, what its plan (plans: the output
// of clangPlanArgs, "" when not asked yet) names: the programs it runs, the
// files its link reads, its configuration files, its resource directory
// and the GCC installation it selected. gcc reports all of these through
// the probes ProbeHostCompiler runs for every other compiler; clang does
// not.
func (hc *HostCompiler) addClang(ctx context.Context, cfg *Config, versions, plans [2]string) error {
	for i, driver := range []string{hc.CC, hc.CXX} {
		if !isClang(versions[i]) {
			if plans[i] != "" {
				return &ProbeError{Tool: filepath.Base(driver), Args: []string{"--version"}, Reason: "a driver named clang is not clang"}
			}
			continue
		}
		plan, err := clangPlanOf(ctx, cfg, driver, plans[i])
		if err != nil {
			return err
		}
		for _, p := range plan.Programs {
			if !slices.Contains(hc.Programs, p) {
				hc.Programs = append(hc.Programs, p)
			}
		}
		hc.LinkInputs = append(hc.LinkInputs, plan.LinkFiles...)
		hc.LinkInputs = append(hc.LinkInputs, plan.ConfigFiles...)
		for _, d := range []string{plan.ResourceDir, plan.GCCInstallation} {
			// A directory clang names but that does not exist (the
			// resource directory of a clang copied elsewhere) holds
			// nothing it reads.
			if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(hc.ClangDirs, d) {
				hc.ClangDirs = append(hc.ClangDirs, d)
			}
		}
	}
	return nil
}

// hostProbe is one run of a compiler driver: prog with args, whose
// standard output (standard error when both) goes to out.
type hostProbe struct {
	prog string
	args []string
	out  *string
	both bool
}

// runHostProbes runs probes, maxParallelProbes at a time, and returns the
// first error.
func runHostProbes(ctx context.Context, cfg *Config, jobs []hostProbe) error {
	sem := make(chan struct{}, maxParallelProbes)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var out string
			var err error
			if j.both {
				_, out, err = probeBoth(ctx, cfg, j.prog, j.args...)
			} else {
				out, _, err = probeBoth(ctx, cfg, j.prog, j.args...)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			*j.out = out
		})
	}
	wg.Wait()
	return first
}

// sharedLibs lists, without duplicates, the shared libraries the dynamic
// loader maps for each program, as ldd reports them in the compilation
// path's environment (so LD_LIBRARY_PATH counts). A program that is not a
// dynamic executable (a static binary, a script) has none; a library that
// is not found is an error.
func sharedLibs(ctx context.Context, cfg *Config, progs []string) ([]string, error) {
	ldd, err := lookPath(cfg, "ldd")
	if err != nil {
		return nil, &ProbeError{Tool: "ldd", Reason: "cannot list shared libraries: " + err.Error()}
	}
	progs = distinctFiles(progs)
	outs := make([]string, len(progs))
	errs := make([]error, len(progs))
	sem := make(chan struct{}, maxParallelProbes)
	var wg sync.WaitGroup
	for i, p := range progs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out, _, err := probeBoth(ctx, cfg, ldd, p)
			var pe *ProbeError
			if errors.As(err, &pe) && strings.Contains(pe.Stderr, "not a dynamic executable") {
				return // what ldd says of a static binary or a script
			}
			outs[i], errs[i] = out, err
		})
	}
	wg.Wait()
	var libs []string
	seen := map[string]bool{}
	for i, out := range outs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		found, missing := ParseLdd(out)
		if missing != "" {
			return nil, &ProbeError{Tool: "ldd", Args: []string{filepath.Base(progs[i])}, Reason: "shared library " + missing + " not found"}
		}
		for _, l := range found {
			if !seen[l] {
				seen[l] = true
				libs = append(libs, l)
			}
		}
	}
	return libs, nil
}

// distinctFiles returns paths without those that resolve to the file an
// earlier one does (clang-19, clang++-19 and the clang their plans run are
// one file, and ldd on it maps libLLVM).
func distinctFiles(paths []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p // ldd reports the failure
		}
		if !seen[real] {
			seen[real] = true
			out = append(out, p)
		}
	}
	return out
}

// ParseLdd reads ldd's output: the absolute paths of the libraries it
// lists ("name => /path (addr)" or "/path (addr)"), in order, and the first
// library it could not find ("name => not found"), if any. Entries without
// a file (linux-vdso.so.1) are skipped.
func ParseLdd(out string) (libs []string, missing string) {
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, target, arrow := strings.Cut(line, " => ")
		if !arrow {
			target = name
		}
		if strings.HasPrefix(target, "not found") {
			if missing == "" {
				missing = strings.TrimSpace(name)
			}
			continue
		}
		if i := strings.LastIndex(target, " ("); i >= 0 {
			target = target[:i]
		}
		if filepath.IsAbs(target) {
			libs = append(libs, target)
		}
	}
	return libs, missing
}

// roots lists the content roots of the compiler: drivers, programs,
// install and program directories, link inputs and include directories,
// each once, leaving out any that lies inside a directory already listed.
func (hc *HostCompiler) roots() ([]inventory.ContentRoot, string) {
	var paths []string
	paths = append(paths, hc.CC, hc.CXX)
	paths = append(paths, hc.Programs...)
	if hc.InstallDir != "" {
		paths = append(paths, hc.InstallDir)
	}
	paths = append(paths, hc.ProgramDirs...)
	paths = append(paths, hc.ClangDirs...)
	paths = append(paths, hc.LinkInputs...)
	paths = append(paths, hc.IncludeDirs...)
	paths = append(paths, hc.SharedLibs...)

	var dirs []string // resolved directories kept so far
	var out []kept
	seen := map[string]bool{}
	for _, p := range paths {
		res, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, "host compiler input " + p + ": " + errText(err)
		}
		if seen[res] {
			continue
		}
		inside := false
		for _, d := range dirs {
			if within(res, d) {
				inside = true
			}
		}
		if inside {
			continue
		}
		seen[res] = true
		fi, err := os.Stat(res)
		if err != nil {
			return nil, "host compiler input " + p + ": " + errText(err)
		}
		if fi.IsDir() {
			dirs = append(dirs, res)
			// Drop files and directories kept earlier that lie inside.
			out = filterKept(out, res)
		}
		out = append(out, kept{p, res})
	}
	roots := make([]inventory.ContentRoot, 0, len(out))
	for _, k := range out {
		r, err := inventory.NewContentRoot(k.path, false)
		if err != nil {
			return nil, "host compiler input: " + err.Error()
		}
		roots = append(roots, r)
	}
	return roots, ""
}

// kept is a root path and where it resolves.
type kept struct{ path, resolved string }

// filterKept drops the roots inside dir.
func filterKept(in []kept, dir string) []kept {
	out := in[:0]
	for _, k := range in {
		if !within(k.resolved, dir) {
			out = append(out, k)
		}
	}
	return out
}

// ParseSearchDirs reads the output of -print-search-dirs: the "install:"
// directory and the "programs:" directories that exist.
func ParseSearchDirs(out string) (install string, programs []string) {
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if v, ok := strings.CutPrefix(line, "install: "); ok {
			install = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "programs: ="); ok {
			seen := map[string]bool{}
			for _, d := range filepath.SplitList(v) {
				if d == "" || !filepath.IsAbs(d) {
					continue
				}
				clean := filepath.Clean(d)
				if seen[clean] {
					continue
				}
				seen[clean] = true
				if fi, err := os.Stat(d); err == nil && fi.IsDir() {
					programs = append(programs, d)
				}
			}
		}
	}
	if install != "" && !filepath.IsAbs(install) {
		install = ""
	}
	return install, programs
}

// ParseIncludeDirs reads the include search lists that `-E -v` prints on
// standard error, between `#include "..." search starts here:` and `End of
// search list.`; a " (framework directory)" suffix is removed. Only
// absolute paths are returned.
func ParseIncludeDirs(out string) []string {
	var dirs []string
	in := false
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "#include ") && strings.HasSuffix(line, "search starts here:"):
			in = true
		case line == "End of search list.":
			in = false
		case in && strings.HasPrefix(line, " "):
			d := strings.TrimSuffix(strings.TrimSpace(line), " (framework directory)")
			if filepath.IsAbs(d) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}
