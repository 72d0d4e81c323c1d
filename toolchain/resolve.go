package toolchain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
)

// Environment variables the adapters read as defaults.
const (
	PtoasRootEnv  = "PTOAS_ROOT"
	CannRootEnv   = "ASCEND_HOME_PATH"
	PtoIsaRootEnv = "PTO_ISA_ROOT"
)

// ConfigError is a Config that Resolve cannot work with (an unknown policy
// or platform). Plain data, safe for concurrent reads.
type ConfigError struct{ Field, Reason string }

func (e *ConfigError) Error() string { return "toolchain " + e.Field + ": " + e.Reason }

// probeTimeout bounds every tool probe (--version and friends).
const probeTimeout = 30 * time.Second

// maxProbeOutput bounds what a probe may print.
const maxProbeOutput = 1 << 20

// Resolve runs the five adapters and returns their inputs. Components that
// cannot be accounted for carry an unavailable reason; the error is non-nil
// only for an unusable Config (unknown policy or platform).
func Resolve(ctx context.Context, cfg Config) (*ToolchainInputs, error) {
	return resolve(ctx, cfg, nil)
}

// resolve is Resolve; watch, when set, is called with every directory whose
// change may change the resolution (beyond the content roots, which
// Capture reports): the PTO-ISA worktree and its .git directory, the ptoas
// root and launcher directory, the CANN root and its info files'
// directories.
func resolve(ctx context.Context, cfg Config, watch func(string) error) (*ToolchainInputs, error) {
	policy := cfg.Policy
	if policy == "" {
		p, err := ParsePolicy(cfg.getenv(PolicyEnv))
		if err != nil {
			return nil, &ConfigError{Field: "policy", Reason: err.Error() + " in " + PolicyEnv}
		}
		policy = p
	} else if _, err := ParsePolicy(string(policy)); err != nil {
		return nil, &ConfigError{Field: "policy", Reason: err.Error()}
	}
	if !slices.Contains(registry.Platforms, cfg.Platform) {
		return nil, &ConfigError{Field: "platform", Reason: fmt.Sprintf("unknown platform %q (want one of %s)", cfg.Platform, strings.Join(registry.Platforms, ", "))}
	}
	in := &ToolchainInputs{Policy: policy}
	if policy == PolicyBuild {
		in.Epoch, in.EpochSet = cfg.lookupEpoch()
		if cfg.PtoIsaPin == "" {
			cfg.PtoIsaPin = runtimePin(cfg.RuntimeRoot)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { in.Pypto = resolvePackage(ctx, &cfg, cfg.PyptoRoot, "PyPTO", "--pypto-root") })
	wg.Go(func() { in.Runtime = resolvePackage(ctx, &cfg, cfg.RuntimeRoot, "runtime", "--runtime-root") })
	var watchErr error
	var wmu sync.Mutex
	note := func(dir string) {
		if watch == nil || dir == "" {
			return
		}
		wmu.Lock()
		defer wmu.Unlock()
		if err := watch(dir); err != nil && watchErr == nil {
			watchErr = err
		}
	}
	wg.Go(func() {
		in.PtoIsa = resolvePtoIsa(ctx, &cfg, func(d string) error { note(d); return nil })
		if root := firstRoot(in.PtoIsa); root != "" {
			note(filepath.Join(root, ".git"))
		}
	})
	wg.Go(func() {
		in.Ptoas, in.PtoasLauncher = resolvePtoas(ctx, &cfg)
		if in.PtoasLauncher != "" {
			note(filepath.Dir(in.PtoasLauncher))
		}
	})
	wg.Go(func() {
		if registry.IsSim(cfg.Platform) {
			in.DeviceToolchain, in.HostCC, in.HostCXX = resolveHostCompiler(ctx, &cfg)
		} else {
			in.DeviceToolchain = resolveCann(ctx, &cfg)
			root := cfg.CannRoot
			if root == "" {
				root = cfg.getenv(CannRootEnv)
			}
			if root != "" {
				note(root)
				dirs, _ := filepath.Glob(filepath.Join(root, "*-linux"))
				for _, d := range dirs {
					note(d)
				}
			}
		}
	})
	wg.Wait()
	if policy == PolicyBuild {
		attachBuild(ctx, &cfg, in)
	}
	if watchErr != nil {
		return in, watchErr
	}
	return in, nil
}

func firstRoot(ci ComponentInputs) string {
	if len(ci.Roots) == 0 {
		return ""
	}
	return ci.Roots[0].Path()
}

// rootHint says where a root is set: the request field, the toolchain
// command's flag and the variable, e.g. "toolchain.ptoas_root in the
// request, --ptoas-root or PTOAS_ROOT".
func rootHint(flag, env string) string {
	field := "toolchain." + strings.ReplaceAll(strings.TrimPrefix(flag, "--"), "-", "_")
	if env == "" {
		return field + " in the request or " + flag
	}
	return field + " in the request, " + flag + " or " + env
}

// rootInputs is the whole-content inventory of one root, not yet proven
// complete. An existing directory with nothing in it is unavailable: seed
// 003, "an empty required installation inventory is unavailable" (a
// directory whose only entries contribute nothing is caught when it is
// read).
func rootInputs(path, what, flag string) ComponentInputs {
	if path == "" {
		return Unavailable("no " + what + " root: set " + rootHint(flag, ""))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Unavailable(what + " root " + path + ": " + errText(err) + "; set " + rootHint(flag, "") + " to the installation")
	}
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return Unavailable(what + " root " + path + ": " + errText(err))
		}
		if len(ents) == 0 {
			return Unavailable(what + " root " + path + " is empty: an empty required inventory is unavailable; set " + rootHint(flag, "") + " to the installation")
		}
	}
	r, err := inventory.NewContentRoot(path, false)
	if err != nil {
		return Unavailable(what + " root " + path + ": " + err.Error())
	}
	return ComponentInputs{Roots: []inventory.ContentRoot{r}}
}

// resolvePtoIsa identifies PTO-ISA by the pin when the checkout is proven
// to be the pinned tree, else by its contents.
func resolvePtoIsa(ctx context.Context, cfg *Config, beforeDir func(string) error) ComponentInputs {
	root := cfg.PtoIsaRoot
	if root == "" {
		root = cfg.getenv(PtoIsaRootEnv)
	}
	if root == "" {
		return Unavailable("no PTO-ISA root: set " + rootHint("--pto-isa-root", PtoIsaRootEnv))
	}
	if cfg.PtoIsaURL != "" && cfg.PtoIsaPin != "" {
		if _, err := EnsurePtoIsaRoot(ctx, cfg.PtoIsaURL, cfg.PtoIsaPin, root); err != nil {
			return Unavailable(err.Error())
		}
	}
	// PTO-ISA is headers and sources the compile includes: the tree is the
	// whole component.
	ci := rootInputs(root, "PTO-ISA", "--pto-isa-root")
	if ci.UnavailableReason != "" || cfg.PtoIsaPin == "" {
		return proven(ci)
	}
	check, err := CheckPtoIsa(root, cfg.PtoIsaPin, beforeDir)
	if err == nil && check.Verified {
		ci.VerifiedRevision = strings.ToLower(cfg.PtoIsaPin)
	}
	return proven(ci)
}

// resolvePtoas selects the ptoas launcher and probes its --version.
func resolvePtoas(ctx context.Context, cfg *Config) (ComponentInputs, string) {
	root := cfg.PtoasRoot
	if root == "" {
		root = cfg.getenv(PtoasRootEnv)
	}
	if root == "" {
		return Unavailable("no ptoas root: set " + rootHint("--ptoas-root", PtoasRootEnv)), ""
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Unavailable("ptoas root: " + err.Error()), ""
	}
	launcher := ""
	for _, cand := range []string{abs, filepath.Join(abs, "bin", "ptoas"), filepath.Join(abs, "ptoas")} {
		if isExecutableFile(cand) {
			launcher = cand
			break
		}
	}
	if _, err := os.Stat(abs); err != nil {
		return Unavailable("ptoas root " + abs + ": " + errText(err) + "; set " + rootHint("--ptoas-root", PtoasRootEnv) + " to the ptoas installation"), ""
	}
	if launcher == "" {
		return Unavailable("no ptoas launcher in the ptoas root " + abs + ": want an executable bin/ptoas or ptoas there"), ""
	}
	ci := rootInputs(abs, "ptoas", "--ptoas-root")
	if ci.UnavailableReason != "" {
		return ci, launcher
	}
	out, err := probe(ctx, cfg, launcher, "--version")
	if err != nil || strings.TrimSpace(out) == "" {
		return proven(ci), launcher // failed probe: the root's contents identify it
	}
	ci.ReportedVersion = out
	if ci.Roots, err = ptoasFiles(ctx, cfg, launcher); err != nil {
		return Unavailable("ptoas " + launcher + ": " + err.Error()), launcher
	}
	return proven(ci), launcher
}

// ptoasFiles are the content roots of a ptoas whose --version answered:
// the launcher and, for an ELF file, the shared libraries it loads
// (ldd). The complete --version text stays the reported version, as
// seed 003 asks, but it cannot tell builds apart: a local build of PTOAS
// from any commit prints "ptoas 0.27" (its CMake project version; only a
// build at an exact release tag prints another), so two builds with
// different passes or lowering would share an identity. The contents of
// the executable and of what it loads (for a build on Debian's LLVM 19,
// libMLIR and libLLVM) are the further part that does.
func ptoasFiles(ctx context.Context, cfg *Config, launcher string) ([]inventory.ContentRoot, error) {
	var libs []string
	if isELF(launcher) {
		var err error
		if libs, err = sharedLibs(ctx, cfg, []string{launcher}); err != nil {
			return nil, err
		}
	}
	var roots []inventory.ContentRoot
	seen := map[string]bool{}
	for _, p := range append([]string{launcher}, libs...) {
		res, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		if seen[res] {
			continue
		}
		seen[res] = true
		r, err := inventory.NewContentRoot(p, false)
		if err != nil {
			return nil, err
		}
		roots = append(roots, r)
	}
	return roots, nil
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// ProbeError is a tool probe that failed. Plain data, safe for concurrent
// reads.
type ProbeError struct {
	Tool   string // base name of the program
	Args   []string
	Reason string
	// Stderr is the first line of the program's standard error when it
	// exited with a failing status ("" otherwise): what the program said,
	// for callers that tell one outcome of the program from another.
	Stderr string
}

func (e *ProbeError) Error() string {
	return e.Tool + " " + strings.Join(e.Args, " ") + ": " + e.Reason
}

// probe runs prog with args in the compilation path's environment (with
// LC_ALL=C, so messages are not translated) and returns its standard
// output, or its standard error when the output is empty.
func probe(ctx context.Context, cfg *Config, prog string, args ...string) (string, error) {
	out, errOut, err := probeBoth(ctx, cfg, prog, args...)
	if err != nil {
		return "", err
	}
	if len(out) == 0 {
		return errOut, nil
	}
	return out, nil
}

// probeBoth runs prog with args and returns what it wrote to its standard
// output and error. The program writes into two unlinked files rather
// than pipes, so its output is complete when it exits: no copy of a pipe
// races a deadline, however loaded the machine. A probe such as cc -E -v
// runs cc1, so the probe runs in a process group of its own, and a
// timeout or a cancel kills the whole group.
func probeBoth(ctx context.Context, cfg *Config, prog string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	fail := func(reason string) (string, string, error) {
		return "", "", &ProbeError{Tool: filepath.Base(prog), Args: args, Reason: reason}
	}
	var files [2]*os.File
	for i := range files {
		f, err := os.CreateTemp("", "ptojit-probe-*")
		if err != nil {
			return fail("output file: " + errText(err))
		}
		os.Remove(f.Name())
		defer f.Close()
		files[i] = f
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(slices.Clone(cfg.environ()), "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = files[0], files[1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return os.ErrProcessDone
	}
	err := cmd.Run()
	var out [2]string
	for i, f := range files {
		b, rerr := io.ReadAll(io.NewSectionReader(f, 0, maxProbeOutput+1))
		if rerr != nil {
			return fail("output: " + errText(rerr))
		}
		if len(b) > maxProbeOutput {
			return fail("output exceeds the probe limit")
		}
		out[i] = string(b)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg := strings.TrimSpace(firstLine(out[1]))
			return "", "", &ProbeError{Tool: filepath.Base(prog), Args: args, Reason: ee.String() + optional(": ", msg), Stderr: msg}
		}
		return fail(errText(err))
	}
	return out[0], out[1], nil
}

func optional(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lookPath finds name as exec.LookPath does, but on the PATH of cfg, and
// returns an absolute path (symlinks kept, so the program sees the name it
// was installed under).
func lookPath(cfg *Config, name string) (string, error) {
	if strings.Contains(name, "/") {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		if !isExecutableFile(abs) {
			return "", errors.New("not an executable file")
		}
		return abs, nil
	}
	for _, dir := range filepath.SplitList(cfg.getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if isExecutableFile(p) {
			return filepath.Abs(p)
		}
	}
	return "", errors.New("not found on PATH")
}
