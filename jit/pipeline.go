package jit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/toolchain"
)

// ccecArch maps a device platform to the CANN compiler's AI core
// architecture.
var ccecArch = map[string]string{"a2a3": "dav-c220", "a5": "dav-c310"}

// ccecCandidates are where a CANN installation keeps its compiler.
var ccecCandidates = []string{"bin/ccec", "compiler/ccec_compiler/bin/ccec", "tools/ccec_compiler/bin/ccec"}

// compile runs the pipeline of req's platform with the tools the identity
// resolved. The caller calls the result's release once done with its
// objects.
func (d *Driver) compile(ctx context.Context, req *api.Request, id *identity) (*compileResult, error) {
	units := requestUnits(req, id)
	res, err := d.compileSome(ctx, req, id, units)
	if err != nil {
		return nil, err
	}
	if err := checkEntries(req, units, res, d.tempDir()); err != nil {
		res.release()
		return nil, err
	}
	return res, nil
}

// requestUnits lists the units of req: the orchestration, then the
// kernels in request order (as id.recipes and id.sources).
func requestUnits(req *api.Request, id *identity) []unit {
	units := []unit{{role: "orchestration", source: req.Orchestration.Source, output: OrchestrationName, recipe: id.recipes[0]}}
	for i, k := range req.Kernels {
		units = append(units, unit{role: kernelRole(k.FuncID), source: k.Source, output: KernelName(k.FuncID), recipe: id.recipes[1+i]})
	}
	return units
}

// compileSome compiles units of req (all of them, or the ones no unit
// entry holds) with the tools the identity resolved.
func (d *Driver) compileSome(ctx context.Context, req *api.Request, id *identity, units []unit) (*compileResult, error) {
	c := &compiler{
		cc:    id.inputs.HostCC,
		cxx:   id.inputs.HostCXX,
		ptoas: id.inputs.PtoasLauncher,
		env:   d.environ(),
		base:  id.base,
	}
	if !registry.IsSim(req.Platform) {
		root := req.Toolchain.CannRoot
		if root == "" {
			root = d.opt.Getenv(toolchain.CannRootEnv)
		}
		ccec := findCCEC(root)
		if ccec == "" {
			return nil, &ToolchainError{Msg: fmt.Sprintf("platform %s needs the CANN compiler (ccec): none found; set toolchain.cann_root or %s to a CANN installation, or build for %ssim", req.Platform, toolchain.CannRootEnv, req.Platform)}
		}
		c.ccec, c.ccecArch = ccec, ccecArch[req.Platform]
		if c.cc == "" || c.cxx == "" {
			// The orchestration runs on the device's host CPU and is
			// built by CANN's compiler as well.
			c.cc, c.cxx = ccec, ccec
		}
	}
	return c.compileAll(ctx, d.tempDir(), units)
}

// tempDir is the directory builds compile and pack in.
func (d *Driver) tempDir() string {
	if d.opt.TempDir != "" {
		return d.opt.TempDir
	}
	return os.TempDir()
}

func findCCEC(root string) string {
	if root == "" {
		return ""
	}
	for _, c := range ccecCandidates {
		p := filepath.Join(root, c)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}
