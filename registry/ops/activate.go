package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/worker"
)

// ActivationError is a module whose activation failed: nothing of it stays
// registered, and every module init that ran was followed by its shutdown.
type ActivationError struct {
	Module   string // package_id@version
	Platform string
	Callable string // the artifact of the callable at fault
	Reason   string
	Err      error // the worker's error, if the failure came from a child
}

func (e *ActivationError) Error() string {
	msg := fmt.Sprintf("activating module %s on %s: callable %s: %s", e.Module, e.Platform, e.Callable, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ActivationError) Unwrap() error { return e.Err }

// ModuleActivation is a module's callables for one platform registered on
// a Worker's chip children and activated there (each child reported their
// implementation ids and ran their module init). Deactivate runs the
// shutdowns and unregisters them. Not safe for concurrent use.
type ModuleActivation struct {
	Module   string
	Platform string
	w        *worker.Worker
	children []int // the live children it was activated on
	cs       []*activeCallable
	done     bool
}

// activeCallable is one callable of an activation.
type activeCallable struct {
	artifact string
	ops      []string // impl_ids of the operations whose callable it is
	h        worker.CallableHandle
	reg      bool
	on       []int               // children where ACTIVATE succeeded
	reports  []worker.Activation // by position in on
}

// ProvidedBy maps every implementation id that the modules mods provide
// (their provided_ops) to the module, leaving out the modules with package
// id except.
func ProvidedBy(mods []*module.Installed, except string) map[string]string {
	out := map[string]string{}
	for _, m := range mods {
		if m.PackageID == except || !m.Enabled {
			continue
		}
		for _, id := range m.Manifest.ProvidedOps {
			out[id] = m.ID()
		}
	}
	return out
}

// ActivateModule activates p's callables for platform on the live chip
// children among children of w: it registers each callable, asks each
// child for the implementation id its native code reports
// (ptojit_op_impl_id) and runs its ptojit_module_init, then checks that
// the reported ids equal the manifest's provided_ops (those of the
// operations with a callable for platform), that no id is reported twice,
// and that none is in taken (implementation id -> the other enabled module
// providing it). On any failure every init that ran is followed by its
// shutdown, the callables are unregistered and the error is an
// *ActivationError naming the module, the callable and the reason.
func ActivateModule(ctx context.Context, w *worker.Worker, children []int, p *module.Package, platform string, taken map[string]string) (_ *ModuleActivation, err error) {
	m := p.Manifest
	a := &ModuleActivation{Module: m.ID(), Platform: platform, w: w}
	byArt := map[string]*activeCallable{}
	expected := map[string]bool{}
	for _, op := range m.Operations {
		for _, oc := range op.Callables {
			if oc.Platform != platform {
				continue
			}
			expected[op.ImplID] = true
			c := byArt[oc.Artifact]
			if c == nil {
				c = &activeCallable{artifact: oc.Artifact}
				byArt[oc.Artifact] = c
				a.cs = append(a.cs, c)
			}
			c.ops = append(c.ops, op.ImplID)
		}
	}
	fail := a.failure
	if len(a.cs) == 0 {
		return nil, fail("-", "the module has no callable for this platform", nil)
	}
	var live []int
	for _, id := range children {
		if w.Alive(id) {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return nil, fail(a.cs[0].artifact, "no live child worker", nil)
	}
	a.children = live
	defer func() {
		if err != nil {
			if derr := a.Deactivate(context.WithoutCancel(ctx)); derr != nil {
				err = fmt.Errorf("%w (cleanup: %v)", err, derr)
			}
		}
	}()
	for _, c := range a.cs {
		blob := p.Artifact(c.artifact)
		if blob == nil {
			return a, fail(c.artifact, "the package holds no such artifact", nil)
		}
		if c.h, err = w.Register(ctx, registry.ChipCallableKind, blob); err != nil {
			return a, fail(c.artifact, "registering it", err)
		}
		c.reg = true
		for _, id := range live {
			r, err := w.Activate(ctx, id, c.h)
			if err != nil {
				if registry.CodeOf(err) == worker.ModuleInitFailed {
					var re *registry.Error
					reason := err.Error()
					if errors.As(err, &re) && re.Err != nil {
						reason = re.Err.Error()
					}
					return a, fail(c.artifact, fmt.Sprintf("module init failed on child %d: %s", id, reason), nil)
				}
				return a, fail(c.artifact, fmt.Sprintf("activating it on child %d", id), err)
			}
			c.on = append(c.on, id)
			c.reports = append(c.reports, r)
		}
	}
	if err := a.checkReports(len(live), expected, taken); err != nil {
		return a, err
	}
	return a, nil
}

// failure is the ActivationError of a's callable c.
func (a *ModuleActivation) failure(c, reason string, cause error) error {
	return &ActivationError{Module: a.Module, Platform: a.Platform, Callable: c, Reason: reason, Err: cause}
}

// checkReports checks what each of the first live children of a (in the
// order they were activated) reported for each callable of a: one implementation id per callable, its own,
// expected (in provided_ops), not taken by an enabled module, and every
// expected id reported.
func (a *ModuleActivation) checkReports(live int, expected map[string]bool, taken map[string]string) error {
	for i := range live {
		by := map[string]string{} // reported id -> the callable reporting it
		for _, c := range a.cs {
			r := c.reports[i]
			switch {
			case !r.HasImplID || r.ImplID == "":
				return a.failure(c.artifact, fmt.Sprintf("its orchestration reports no implementation id (it exports no %s), so %s is missing from what the module registers", "ptojit_op_impl_id", strings.Join(c.ops, ", ")), nil)
			case by[r.ImplID] != "":
				return a.failure(c.artifact, fmt.Sprintf("implementation id %s is reported twice: callable %s reports it too (duplicate registration)", r.ImplID, by[r.ImplID]), nil)
			case taken[r.ImplID] != "":
				return a.failure(c.artifact, fmt.Sprintf("implementation id %s is already provided by enabled module %s", r.ImplID, taken[r.ImplID]), nil)
			case !expected[r.ImplID]:
				return a.failure(c.artifact, fmt.Sprintf("its orchestration reports implementation id %s, which is not in provided_ops [%s]", r.ImplID, strings.Join(sortedKeys(expected), ", ")), nil)
			case !slices.Contains(c.ops, r.ImplID):
				return a.failure(c.artifact, fmt.Sprintf("its orchestration reports implementation id %s, but it is the callable of %s", r.ImplID, strings.Join(c.ops, ", ")), nil)
			}
			by[r.ImplID] = c.artifact
		}
		for _, want := range sortedKeys(expected) {
			if by[want] == "" {
				return a.failure("-", fmt.Sprintf("provided_ops %s is reported by no callable", want), nil)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Handle returns the registration of the callable in artifact, and whether
// the activation holds one.
func (a *ModuleActivation) Handle(artifact string) (worker.CallableHandle, bool) {
	for _, c := range a.cs {
		if c.artifact == artifact && c.reg {
			return c.h, true
		}
	}
	return worker.CallableHandle{}, false
}

// Deactivate runs the module shutdown of every callable activated (the
// children run it on the last activation) and unregisters the callables.
// A child that had died before holds nothing any more and is skipped; one
// that fails or dies now (a shutdown that crashed) is an error. A second
// call is a no-op.
func (a *ModuleActivation) Deactivate(ctx context.Context) error {
	if a == nil || a.done {
		return nil
	}
	a.done = true
	var errs []error
	gone := func(err error) bool { return err == nil || errors.Is(err, worker.ErrChildExited) }
	for i := len(a.cs) - 1; i >= 0; i-- {
		c := a.cs[i]
		for _, id := range c.on {
			if !a.w.Alive(id) {
				continue // it died earlier: nothing of it is left
			}
			if _, err := a.w.Deactivate(ctx, id, c.h); err != nil {
				errs = append(errs, fmt.Errorf("module %s: callable %s: shutdown on child %d: %w", a.Module, c.artifact, id, err))
			}
		}
		c.on = nil
		if c.reg {
			// When every child it ran on is dead, nothing of it is left
			// there, whatever the registrar says.
			if err := a.w.Unregister(ctx, c.h); !gone(err) && slices.ContainsFunc(a.children, a.w.Alive) {
				errs = append(errs, fmt.Errorf("module %s: callable %s: %w", a.Module, c.artifact, err))
			}
			c.reg = false
		}
	}
	return errors.Join(errs...)
}

// InstallCheck is the activation an install runs before it commits (the
// module store's Options.Activate hook): for each sim platform of the
// package it starts one chip child, activates the package's callables
// there (ActivateModule: the implementation ids their native code reports,
// their module init) and deactivates them again (their shutdown). Other
// platforms cannot run on this host and are reported as not checked.
type InstallCheck struct {
	// ChildCommand re-executes a program that calls child.Main
	// (ptojitd __worker-child); ChildEnv is the child's environment (nil:
	// this process's).
	ChildCommand []string
	ChildEnv     []string
	Stderr       io.Writer
	// ControlTimeout bounds each round trip with the child, module init
	// and shutdown included (worker.DefaultControlTimeout).
	ControlTimeout time.Duration
}

// Activate is the module.Options.Activate hook.
func (ic InstallCheck) Activate(ctx context.Context, p *module.Package, enabled []*module.Installed) ([]module.PlatformCheck, error) {
	m := p.Manifest
	var checks []module.PlatformCheck
	for _, plat := range m.Platforms {
		if !registry.IsSim(plat) {
			checks = append(checks, module.PlatformCheck{Platform: plat,
				Note: "no host execution engine for " + plat + " on this machine: its implementation ids and module init are unchecked"})
			continue
		}
		has := slices.ContainsFunc(m.Operations, func(op module.Operation) bool {
			return slices.ContainsFunc(op.Callables, func(c module.OperationCallable) bool { return c.Platform == plat })
		})
		if !has {
			checks = append(checks, module.PlatformCheck{Platform: plat, Note: "no operation has a callable for " + plat})
			continue
		}
		if err := ic.activateOn(ctx, p, plat, enabled); err != nil {
			return nil, err
		}
		checks = append(checks, module.PlatformCheck{Platform: plat, Checked: true})
	}
	return checks, nil
}

func (ic InstallCheck) activateOn(ctx context.Context, p *module.Package, platform string, enabled []*module.Installed) error {
	w, err := worker.New(worker.Config{ChildCommand: ic.ChildCommand, ChildEnv: ic.ChildEnv, ChipWorkers: 1,
		Platform: platform, Runtime: p.Manifest.Runtime, Stderr: ic.Stderr, ControlTimeout: ic.ControlTimeout})
	if err != nil {
		return fmt.Errorf("activating module %s on %s: %w", p.Manifest.ID(), platform, err)
	}
	defer w.Close()
	if err := w.Start(ctx); err != nil {
		return fmt.Errorf("activating module %s on %s: starting a child: %w", p.Manifest.ID(), platform, err)
	}
	a, err := ActivateModule(ctx, w, []int{0}, p, platform, ProvidedBy(enabled, p.Manifest.PackageID))
	if err != nil {
		return err
	}
	if err := a.Deactivate(ctx); err != nil {
		return fmt.Errorf("activating module %s on %s: shutdown: %w", p.Manifest.ID(), platform, err)
	}
	return nil
}
