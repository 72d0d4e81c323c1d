package toolchain

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
)

// attachBuild gives each usable component of in the build-policy record
// PyPTO builds for it, when ptojit's installation has what PyPTO reads;
// the others keep their roots and are identified by contents.
func attachBuild(ctx context.Context, cfg *Config, in *ToolchainInputs) {
	if in.Pypto.Reason() == "" {
		in.Pypto.build = pyptoBuild(ctx, cfg, firstRoot(in.Pypto))
	}
	if in.Runtime.Reason() == "" {
		in.Runtime.build = runtimeBuild(cfg, firstRoot(in.Runtime))
	}
	if in.PtoIsa.Reason() == "" && in.PtoIsa.VerifiedRevision != "" {
		pin := in.PtoIsa.VerifiedRevision
		in.PtoIsa.build = &buildSpec{key: inventory.T(inventory.Str("pin"), inventory.Str(pin)),
			read: func(func(string) error) (inventory.Value, string) { return inventory.Str(pin), "" }}
	}
	if in.Ptoas.Reason() == "" {
		in.Ptoas.build = ptoasBuild(in.PtoasLauncher)
		if in.Ptoas.build == nil && in.PtoasLauncher != "" {
			in.Ptoas.build = consolePtoasBuild(cfg, in.PtoasLauncher)
		}
		if in.Ptoas.build == nil {
			// Neither an ELF file nor a Python launcher: its root's
			// contents, with the version (not the launcher's files
			// the content policy reads beside the version).
			root := cfg.PtoasRoot
			if root == "" {
				root = cfg.getenv(PtoasRootEnv)
			}
			abs, _ := filepath.Abs(root)
			in.Ptoas.Roots = rootInputs(abs, "ptoas", "--ptoas-root").Roots
		}
	}
	if in.DeviceToolchain.Reason() == "" && registry.IsSim(cfg.Platform) {
		in.DeviceToolchain.build = deviceBuild(cfg, in.HostCC, in.HostCXX)
	} else if in.DeviceToolchain.Reason() == "" {
		root := cfg.CannRoot
		if root == "" {
			root = cfg.getenv(CannRootEnv)
		}
		in.DeviceToolchain.build = cannBuild(cfg, root)
	}
}

// packageDir returns the real directory of Python package name at root or
// under it (root/name), "" when neither holds an __init__.py.
func packageDir(root, name string) string {
	for _, d := range []string{filepath.Join(root, name), root} {
		if filepath.Base(d) != name {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, "__init__.py")); err == nil && fi.Mode().IsRegular() {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				if abs, err := filepath.Abs(real); err == nil {
					return abs
				}
			}
		}
	}
	return ""
}

// pythonProbe prints sys.version and the cache tag, NUL-separated.
const pythonProbe = "import sys; sys.stdout.write(sys.version + '\\0' + str(sys.implementation.cache_tag))"

// pyptoBuild is PyPTO's pypto record: ([(package, sources)], native
// extension path, its evidence, sys.version, cache tag). The interpreter is
// python3 on the compilation path's PATH; without one both are None, and
// without a pypto_core*.so in the package its path and evidence are None.
func pyptoBuild(ctx context.Context, cfg *Config, root string) *buildSpec {
	pkg := packageDir(root, "pypto")
	if pkg == "" {
		return nil
	}
	native := firstMatch(pkg, "pypto_core*.so")
	var version, tag inventory.Value = inventory.None{}, inventory.None{}
	if py, err := lookPath(cfg, "python3"); err == nil {
		if out, err := probe(ctx, cfg, py, "-c", pythonProbe); err == nil {
			if v, t, ok := strings.Cut(out, "\x00"); ok {
				version, tag = inventory.StrFromOSBytes(v), inventory.StrFromOSBytes(t)
			}
		}
	}
	key := inventory.T(inventory.Str("pypto"), inventory.StrFromOSBytes(pkg), inventory.StrFromOSBytes(native), version, tag)
	return &buildSpec{key: key, readRecord: func(before func(string) error) (buildRecord, string) {
		var rec buildRecord
		srcs, err := sourcePackages(pkg, before, &rec)
		if err != nil {
			return rec, errReason(err)
		}
		np, nr, err := optionalFile(native, before)
		if err != nil {
			return rec, errReason(err)
		}
		rec.value = inventory.T(srcs, np, nr, version, tag)
		return rec, ""
	}}
}

// runtimeBuild is PyPTO's runtime record for a git checkout: (HEAD, root,
// simpler sources, simpler_setup sources, _task_interface path, its
// evidence, build/lib/pto_isa_build.json bytes or None). A root that is
// not a checkout has no revision PyPTO could read: nil.
func runtimeBuild(cfg *Config, root string) *buildSpec {
	if root == "" {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(root, ".git")); err != nil {
		return nil
	}
	simpler := firstPackage(root, "simpler")
	setup := firstPackage(root, "simpler_setup")
	native := ""
	for _, d := range []string{filepath.Join(root, "python"), root, filepath.Join(root, "build", "lib")} {
		if native = firstMatch(d, "_task_interface*.so"); native != "" {
			break
		}
	}
	env := *cfg
	key := inventory.T(inventory.Str("runtime"), inventory.StrFromOSBytes(root), inventory.StrFromOSBytes(simpler),
		inventory.StrFromOSBytes(setup), inventory.StrFromOSBytes(native))
	return &buildSpec{key: key, readRecord: func(before func(string) error) (buildRecord, string) {
		return runtimeRecord(&env, root, simpler, setup, native, before)
	}}
}

func firstPackage(root, name string) string {
	if d := packageDir(filepath.Join(root, "python"), name); d != "" {
		return d
	}
	return packageDir(root, name)
}

// runtimeRecord asks git for HEAD and for a clean worktree as PyPTO does
// (git status --porcelain=v1 --untracked-files=all prints nothing), then
// reads the files.
func runtimeRecord(cfg *Config, root, simpler, setup, native string, before func(string) error) (buildRecord, string) {
	var rec buildRecord
	if err := watchDirs(root, before); err != nil {
		return rec, errReason(err)
	}
	git, err := lookPath(cfg, "git")
	if err != nil {
		return rec, "Runtime source build revision is unavailable: " + root + ": git " + err.Error()
	}
	rev, err := gitOutput(cfg, git, root, "rev-parse", "HEAD")
	if err != nil || strings.TrimSpace(rev) == "" {
		return rec, "Runtime source build revision is unavailable: " + root + optional(": ", errorText(err))
	}
	dirty, err := gitOutput(cfg, git, root, "status", "--porcelain=v1", "--untracked-files=all")
	if err != nil {
		return rec, "Runtime source checkout status is unavailable: " + root + ": " + err.Error()
	}
	if strings.TrimSpace(dirty) != "" {
		return rec, "Runtime source checkout has uncommitted changes: " + root
	}
	var srcs [2]inventory.Value
	for i, d := range []string{simpler, setup} {
		if srcs[i], err = sourcePackages(d, before, &rec); err != nil {
			return rec, errReason(err)
		}
	}
	np, nr, err := optionalFile(native, before)
	if err != nil {
		return rec, errReason(err)
	}
	var meta inventory.Value = inventory.None{}
	if b, err := os.ReadFile(filepath.Join(root, "build", "lib", "pto_isa_build.json")); err == nil {
		meta = inventory.Bytes(b)
	}
	rec.value = inventory.T(inventory.Str(strings.TrimSpace(rev)), inventory.StrFromOSBytes(root), srcs[0], srcs[1], np, nr, meta)
	return rec, ""
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// gitOutput runs git -C root args and returns its standard output and
// error together, as PyPTO's _run does.
func gitOutput(cfg *Config, git, root string, args ...string) (string, error) {
	out, errOut, err := probeBoth(context.Background(), cfg, git, append([]string{"-C", root}, args...)...)
	return out + errOut, err
}

// ptoasBuild is PyPTO's record of a standalone ELF ptoas: (real path,
// evidence); nil for any other launcher.
func ptoasBuild(launcher string) *buildSpec {
	if launcher == "" || !isELF(launcher) {
		return nil
	}
	return &buildSpec{key: inventory.T(inventory.Str("ptoas-elf"), inventory.StrFromOSBytes(launcher)),
		read: func(before func(string) error) (inventory.Value, string) {
			real, err := filepath.EvalSymlinks(launcher)
			if err != nil {
				return nil, errReason(err)
			}
			rec, err := fileRecord(launcher, before)
			if err != nil {
				return nil, errReason(err)
			}
			return inventory.T(inventory.StrFromOSBytes(real), rec), ""
		}}
}

// lookupEpoch returns PYPTO_CACHE_EPOCH and whether it is set: a
// non-empty value, or an entry "PYPTO_CACHE_EPOCH=" in the environment.
func (c *Config) lookupEpoch() (string, bool) {
	if v := c.getenv(EpochEnv); v != "" {
		return v, true
	}
	for _, kv := range c.environ() {
		if kv == EpochEnv+"=" {
			return "", true
		}
	}
	return "", false
}

// runtimePin is the PTO-ISA pin the runtime checkout states in its
// pto_isa.pin (the first line, trimmed), "" when it states none.
func runtimePin(root string) string {
	if root == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(root, "pto_isa.pin"))
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}
