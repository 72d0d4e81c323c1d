package toolchain

import (
	"context"
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/ptojit/ptojit/inventory"
)

// LoaderInjectionVars change what the dynamic loader maps for a program or
// library beyond what ldd's dependency walk reports for it.
var LoaderInjectionVars = []string{"LD_PRELOAD", "LD_AUDIT"}

// resolvePackage is the adapter of the PyPTO and runtime components: the
// root's whole contents, plus the native libraries its shared objects load
// from outside it. Native code is found by content (an ELF shared object,
// whatever its name), and what it loads by the dependency walk the host
// compiler adapter uses (sharedLibs: ldd in the compilation path's
// environment). A dependency that is not found, a walk that fails, or a
// loader injection variable set makes the component unavailable; only
// then is the inventory complete.
func resolvePackage(ctx context.Context, cfg *Config, path, what, flag string) ComponentInputs {
	ci := rootInputs(path, what, flag)
	if ci.UnavailableReason != "" {
		return ci
	}
	libs, reason := nativeDependencies(ctx, cfg, path)
	if reason != "" {
		return Unavailable(what + " native libraries: " + reason)
	}
	for _, l := range libs {
		r, err := inventory.NewContentRoot(l, false)
		if err != nil {
			return Unavailable(what + " native library: " + err.Error())
		}
		ci.Roots = append(ci.Roots, r)
	}
	return proven(ci)
}

// nativeDependencies returns the shared libraries outside root that the
// shared objects under root load, sorted and without duplicates.
func nativeDependencies(ctx context.Context, cfg *Config, root string) ([]string, string) {
	objs, err := sharedObjects(root)
	if err != nil {
		return nil, "cannot list shared objects: " + errText(err)
	}
	if len(objs) == 0 {
		return nil, ""
	}
	for _, v := range LoaderInjectionVars {
		if cfg.getenv(v) != "" {
			return nil, v + " is set: what the shared objects load cannot be accounted for"
		}
	}
	libs, err := sharedLibs(ctx, cfg, objs)
	if err != nil {
		return nil, err.Error()
	}
	resRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, errText(err)
	}
	var out []string
	for _, l := range libs {
		res, err := filepath.EvalSymlinks(l)
		if err != nil {
			return nil, "shared library " + l + ": " + errText(err)
		}
		if within(res, resRoot) || slices.Contains(out, l) {
			continue // inside the root: its contents are read already
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out, ""
}

// sharedObjects lists the ELF shared objects (e_type ET_DYN: libraries and
// position-independent executables) under root, in walk order, skipping
// what a content inventory skips (.git, __pycache__). Symlinks are not
// followed: what they name is listed where it lies under the root, and a
// target outside the root is a root file's content, not code the walk
// can place.
func sharedObjects(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == ".git" || d.Name() == "__pycache__") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if ok, err := isSharedObject(p); err != nil {
			return err
		} else if ok {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// isSharedObject reports whether the file at p starts with an ELF header
// whose type is ET_DYN.
func isSharedObject(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [18]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false, nil // shorter than an ELF header
	}
	if string(h[:4]) != "\x7fELF" {
		return false, nil
	}
	var order binary.ByteOrder = binary.LittleEndian
	if h[5] == 2 {
		order = binary.BigEndian
	}
	const etDyn = 3
	return order.Uint16(h[16:18]) == etDyn, nil
}
