package jit

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/envaudit/envreg"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/toolchain"
)

// identity is everything a build's key is made of.
type identity struct {
	platform, runtime string
	policy            toolchain.Policy
	record            inventory.Value // the key record
	encoded           []byte          // its encoding
	key               inventory.Sum
	usable            bool
	unavailable       []reason
	fresh             []string
	warnings          []string // what the build reports beside its outcome
	policySource      string
	inputs            *toolchain.ToolchainInputs
	toolchain         *toolchain.Identity
	sources           []source
	sourcesDigest     inventory.Sum // all source roots together
	extraPaths        []string
	extraFingerprint  inventory.Value
	extraDigest       inventory.Sum
	// base writes the paths of the key under it relative to it.
	base baseDir
	// recipes are the compile recipes of the units, the orchestration
	// first, then the kernels in request order (resolveRecipes); they
	// are part of the key.
	recipes []recipe
	// includes are the -I directories of every recipe, in order, each
	// once.
	includes []string
	// relative lists the paths keyRecord made relative to the base, each
	// as "field: path" (field the record's, path relative), in the order
	// keyRecord writes them.
	relative []string
	// unit, in a unit's identity (unitBuilds), names the unit: its
	// manifest entry says so (meta "unit").
	unit string
}

// source is one content root of the request's sources.
type source struct {
	name    string // "orchestration", "kernel.<func_id>", "extra_roots[i]"
	root    inventory.ContentRoot
	content *inventory.Content // nil when unavailable
}

// KeyOf computes the key of req without building: every input, its digest
// and every reason the identity is unavailable. req's paths must be
// absolute.
func (d *Driver) KeyOf(ctx context.Context, req *api.Request) (*KeyReport, error) {
	id, err := d.identify(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	inputs, err := FlattenRecord(id.record)
	if err != nil {
		return nil, err
	}
	r := &KeyReport{
		Usable:       id.usable,
		Policy:       string(id.policy),
		PolicySource: id.policySource,
		Record:       id.record,
		RecordWire:   string(id.encoded),
		Inputs:       inputs,
		Unavailable:  reasonTexts(id.unavailable),
		Fresh:        id.fresh,
		BaseDir:      id.base.dir,
		Relative:     id.relative,
	}
	if id.usable {
		r.Key = id.key.String()
	}
	if !id.sourcesDigest.IsZero() {
		r.SourcesDigest = id.sourcesDigest.String()
	}
	if id.toolchain != nil && id.toolchain.Usable {
		r.ToolchainDigest = id.toolchain.Digest.String()
	}
	return r, nil
}

// accountedFor lists the tool_resolution variables whose effect the
// toolchain adapters identify: the tools and roots they select are resolved
// with them and identified by content or version (PATH, CC, CXX, the
// roots), the include and library search lists the compiler reports with
// them are read (CPATH and friends), or the adapter itself makes the
// identity unavailable when they are set (LD_PRELOAD, LD_AUDIT,
// GCC_EXEC_PREFIX, COMPILER_PATH). Any other tool_resolution variable that
// is set makes the identity unavailable.
var accountedFor = map[string]bool{
	"PATH": true, "CC": true, "CXX": true,
	"CPATH": true, "C_INCLUDE_PATH": true, "CPLUS_INCLUDE_PATH": true, "LIBRARY_PATH": true,
	toolchain.PtoasRootEnv: true, toolchain.PtoIsaRootEnv: true, toolchain.CannRootEnv: true,
	"LD_PRELOAD": true, "LD_AUDIT": true, "GCC_EXEC_PREFIX": true, "COMPILER_PATH": true,
}

// checkRequest validates req and checks that its paths are absolute and
// its sources exist.
func checkRequest(req *api.Request) error {
	if err := req.Validate(); err != nil {
		return err
	}
	for _, fp := range req.Paths() {
		if !filepath.IsAbs(fp.Path) {
			return &api.FieldError{Field: fp.Field, Msg: "path is not absolute (resolve the request against its directory first)"}
		}
	}
	if req.OutputDir == "" {
		return &api.FieldError{Field: "output_dir", Msg: "missing (resolve the request first)"}
	}
	check := func(field, p string) error {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			return &api.FieldError{Field: field, Msg: fmt.Sprintf("%s: %v", filepath.Base(p), unwrapPathError(err))}
		case !fi.Mode().IsRegular():
			return &api.FieldError{Field: field, Msg: filepath.Base(p) + " is not a regular file"}
		}
		return nil
	}
	if err := check("orchestration.source", req.Orchestration.Source); err != nil {
		return err
	}
	for i, k := range req.Kernels {
		if err := check(fmt.Sprintf("kernels[%d].source", i), k.Source); err != nil {
			return err
		}
	}
	return nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// identify computes the key record of req.
// ph, when not nil, times its phases.
func (d *Driver) identify(ctx context.Context, req *api.Request, ph *phases) (*identity, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	getenv := d.opt.Getenv
	id := &identity{platform: req.Platform, runtime: req.Runtime, base: baseOf(req, getenv)}
	if id.base.dir != "" && !id.base.exists() {
		field := "base_dir"
		if req.BaseDir == "" {
			field = BaseDirVariable
		}
		return nil, &api.FieldError{Field: field, Msg: id.base.dir + " is not a directory"}
	}

	for _, v := range d.opt.Registry.Variables(envreg.FreshRequest) {
		if getenv(v) != "" {
			id.fresh = append(id.fresh, v)
		}
	}

	policy, source, warning := choosePolicy(req.Toolchain.Policy, getenv(PolicyVariable))
	if req.Toolchain.PolicySource != "" {
		source = req.Toolchain.PolicySource
	}
	id.policySource = source
	if warning != "" {
		// As PyPTO: the value is refused, the identity unusable, and the
		// build still runs (uncached).
		id.unavailable = append(id.unavailable, reason{source + " invalid", warning})
		id.warnings = append(id.warnings, warning)
	}
	id.policy = policy

	options, err := recordField("options", req.Options, req.OptionsWire)
	if err != nil {
		return nil, err
	}
	extra, err := recordField("extra_fingerprint", req.ExtraFingerprint, req.ExtraFingerprintWire)
	if err != nil {
		return nil, err
	}
	switch extra.(type) {
	case inventory.None, inventory.Str:
	default:
		// FingerprintExtraSources takes a string: a structured fingerprint
		// contributes its digest.
		extra = inventory.Str(inventory.MustDigest(extra).String())
	}
	id.extraFingerprint = extra
	id.extraPaths = req.ExtraSources

	ph.mark("request")
	// Toolchain: resolved once, used for the identity and the compile.
	if err := d.identifyToolchain(ctx, req, id); err != nil {
		return nil, err
	}
	ph.mark("toolchain")
	if id.recipes, err = resolveRecipes(req, id.base.dir, getenv); err != nil {
		return nil, err
	}
	id.includes = recipeIncludes(id.recipes)

	// Sources: one root each, so that the key names the one that changed.
	id.identifySources(req, extra)
	ph.mark("sources")

	id.record = d.keyRecord(req, id, options)
	id.encoded, err = inventory.Encode(id.record)
	ph.mark("record")
	if err != nil {
		return nil, fmt.Errorf("key record: %w", err)
	}
	id.usable = len(id.unavailable) == 0
	if id.usable {
		id.key = sha256.Sum256(id.encoded) // the digest of the record
	}
	return id, nil
}

// identifyToolchain resolves and identifies the toolchain of req (into
// id.inputs and id.toolchain) and adds the reasons it is unavailable.
func (d *Driver) identifyToolchain(ctx context.Context, req *api.Request, id *identity) error {
	tc := req.Toolchain
	cfg := toolchain.Config{
		Policy:      id.policy,
		Platform:    req.Platform,
		PyptoRoot:   tc.PyptoRoot,
		RuntimeRoot: tc.RuntimeRoot,
		PtoIsaRoot:  tc.PtoIsaRoot,
		PtoIsaPin:   tc.PtoIsaPin,
		PtoIsaURL:   tc.PtoIsaURL,
		PtoasRoot:   tc.PtoasRoot,
		CannRoot:    tc.CannRoot,
		Environ:     d.environ(),
		Getenv:      d.opt.Getenv,
		// The resolution memo is keyed by the variables that can change
		// tool resolution: a new semantic value (an epoch) reuses it.
		ToolResolutionVar: d.toolResolutionVar,
	}
	inputs, err := d.opt.Identities.Resolve(ctx, cfg)
	if err != nil {
		return fmt.Errorf("toolchain: %w", err)
	}
	id.inputs = inputs
	tid, err := d.opt.Identities.Capture(ctx, inputs)
	if err != nil {
		return fmt.Errorf("toolchain identity: %w", err)
	}
	id.toolchain = tid
	id.unavailable = append(id.unavailable, componentReasons(tid)...)
	for _, v := range d.opt.Registry.Variables(envreg.ToolResolution) {
		if d.opt.Getenv(v) != "" && !accountedFor[v] {
			id.unavailable = append(id.unavailable, reason{v + " is set", v + " is set: no toolchain adapter identifies what it selects (tool_resolution)"})
		}
	}
	return nil
}

// identifySources fingerprints the sources of req and its extra sources
// (into id.sources, id.sourcesDigest and id.extraDigest) and adds the
// reasons they have no identity.
func (id *identity) identifySources(req *api.Request, extra inventory.Value) {
	id.sources = sourceRoots(req)
	budget := sourceBudget()
	id.unavailable = append(id.unavailable, fingerprintSources(id.sources, budget)...)
	var all inventory.List
	for _, s := range id.sources {
		if s.content != nil {
			all = append(all, s.content.Roots...)
		}
	}
	if len(id.unavailable) == 0 || allSourcesRead(id.sources) {
		id.sourcesDigest = inventory.MustDigest(inventory.T(inventory.Str("content"), all))
	}
	if sum, err := id.base.extraSourcesDigest(id.extraPaths, extra, budget); err != nil {
		id.unavailable = append(id.unavailable, reason{"extra_sources", "extra_sources: " + err.Error()})
	} else {
		id.extraDigest = sum
	}
}

func allSourcesRead(ss []source) bool {
	for _, s := range ss {
		if s.content == nil {
			return false
		}
	}
	return true
}

// toolResolutionVar reports whether the registry classifies name
// tool_resolution or not at all (a variable pass_env passes to the tools):
// what else the tools see cannot change which tools and files a resolution
// finds.
func (d *Driver) toolResolutionVar(name string) bool {
	cat, ok := d.opt.Registry.Category(name)
	return !ok || cat == envreg.ToolResolution
}

// environ is the tools' environment.
func (d *Driver) environ() []string {
	env := d.opt.Environ
	if env == nil {
		env = os.Environ()
	}
	return append(slices.Clip(env), "LC_ALL=C")
}

// sourceRoots lists the content roots of the request's sources.
func sourceRoots(req *api.Request) []source {
	var out []source
	add := func(name, p string) {
		r, err := inventory.NewContentRoot(p, false)
		if err != nil {
			out = append(out, source{name: name})
			return
		}
		out = append(out, source{name: name, root: r})
	}
	add("orchestration", req.Orchestration.Source)
	for _, k := range req.Kernels {
		add(kernelRole(k.FuncID), k.Source)
	}
	for i, p := range req.ExtraRoots {
		add(fmt.Sprintf("extra_roots[%d]", i), p)
	}
	return out
}

// componentReasons returns why tid's components are unavailable (the
// texts of tid.Reasons), each counted under its component's name.
func componentReasons(tid *toolchain.Identity) []reason {
	var out []reason
	for _, c := range tid.Components {
		if c.Unavailable != "" {
			out = append(out, reason{c.Name, c.Name + ": " + c.Unavailable})
		}
	}
	return out
}

// fingerprintSources reads every source root, within budget, and returns
// the reasons of those that are unavailable.
func fingerprintSources(ss []source, budget *inventory.Budget) []reason {
	var reasons []reason
	for i := range ss {
		s := &ss[i]
		if s.root.Path() == "" {
			reasons = append(reasons, reason{s.name, s.name + ": not a usable path"})
			continue
		}
		c, err := fingerprintSource(s.root, budget)
		if err != nil {
			s.content = nil
			reasons = append(reasons, reason{s.name, s.name + ": " + err.Error()})
			continue
		}
		s.content = c
	}
	return reasons
}

// revalidate fingerprints the mutable sources again and returns why the
// build must not be published ("" when nothing changed).
func (d *Driver) revalidate(id *identity) string {
	for _, s := range id.sources {
		if why := sourceChange(s); why != "" {
			return "not published: " + why
		}
	}
	sum, err := id.base.extraSourcesDigest(id.extraPaths, id.extraFingerprint, sourceBudget())
	if err != nil || sum != id.extraDigest {
		return "not published: extra_sources changed during the compile"
	}
	return ""
}

// sourceChange says how source s changed since the request's identity
// fingerprinted it, or "" when it did not.
func sourceChange(s source) string {
	c, err := inventory.FingerprintWith([]inventory.ContentRoot{s.root}, inventory.FingerprintOptions{Budget: sourceBudget()})
	if err != nil {
		return s.name + " became unavailable during the compile: " + err.Error()
	}
	if s.content == nil || c.Digest != s.content.Digest {
		return s.name + " changed during the compile"
	}
	return ""
}

// recordField reads an identity record given in the plain JSON form or
// the wire form; neither given is None.
func recordField(field string, plain []byte, wire string) (inventory.Value, error) {
	switch {
	case len(plain) > 0:
		v, err := inventory.ParseJSON(plain)
		if err != nil {
			return nil, &api.FieldError{Field: field, Msg: err.Error()}
		}
		return v, nil
	case wire != "":
		v, err := inventory.Decode([]byte(wire))
		if err != nil {
			return nil, &api.FieldError{Field: field + "_wire", Msg: err.Error()}
		}
		return v, nil
	}
	return inventory.None{}, nil
}

// choosePolicy returns the policy the request's field names, else the
// variable, else the default; an unknown value gives the default (to
// resolve the tools the build runs) and a warning naming where the value
// came from.
func choosePolicy(field, variable string) (p toolchain.Policy, where, warning string) {
	where, value := "toolchain.policy", field
	switch {
	case field == "" && variable == "":
		where = "default"
	case field == "":
		where, value = PolicyVariable, variable
	}
	p, err := toolchain.ParsePolicy(value)
	if err != nil {
		return toolchain.DefaultPolicy, where, where + ": " + err.Error() + ": the toolchain identity is unusable and the build runs uncached"
	}
	return p, where, ""
}

// inToolchainRoot reports whether the absolute, clean path p lies inside a
// content root of one of the identity's toolchain components: a header a
// daemon may check through its watcher (watchedDigestOf). An application's
// own headers lie outside them and are stat-checked on every request.
func (id *identity) inToolchainRoot(p string) bool {
	in := id.inputs
	if in == nil {
		return false
	}
	for _, name := range toolchain.Names {
		for _, r := range in.Component(name).Roots {
			if inRoot(p, r.Path()) {
				return true
			}
		}
	}
	return false
}

// inRoot reports whether the absolute, clean path p lies strictly inside
// the content root root. A root's path is clean but may be "/" (or "//",
// which inventory keeps and a clean p never starts with), which ends in
// the slash that under's prefix must not have.
func inRoot(p, root string) bool {
	if strings.HasSuffix(root, "/") {
		return len(p) > len(root) && strings.HasPrefix(p, root)
	}
	rest, ok := under(p, root)
	return ok && rest != "."
}
