package jit

// The key records: every record whose digest keys an entry is built here
// (a request's key record, a header variant's result record, a unit's and
// a pack's); keyreport.go explains them (the key tree, flattened inputs,
// differences).

import (
	"encoding/hex"
	"fmt"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/envaudit/envreg"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
)

// Record tags. A key record is ("ptojit.build", keySchema, {...}); a unit
// record (unitTag) keys one compiled unit; a result record, which keys the
// outputs of one header variant of either, is ("ptojit.result", keySchema,
// key or unit record, [(header path, sha256 hex)...]). Schema 2 added unit
// entries: no entry of schema 1 is reused.
const (
	keyTag    = "ptojit.build"
	resultTag = "ptojit.result"
	keySchema = 2
)

// OldSchemaError is a key record of an earlier key schema, which an
// earlier ptojit wrote: its entries are not reused (they age out by trim).
type OldSchemaError struct{ Schema string }

func (e *OldSchemaError) Error() string {
	return fmt.Sprintf("key record schema %s, written by an earlier ptojit (this one writes schema %d): its entries are not reused", e.Schema, keySchema)
}

// keyRecord builds ("ptojit.build", keySchema, {...}). Every path under
// the base directory is written relative to it, in the paths of the
// request and inside the content records the digests cover: the key does
// not depend on where the project lives.
func (d *Driver) keyRecord(req *api.Request, id *identity, options inventory.Value) inventory.Value {
	id.relative = nil
	str := func(s string) inventory.Value { return inventory.Str(s) }
	path := func(field string, i int, p string) inventory.Value { return inventory.Str(id.relPath(field, i, p)) }
	sig := func(ds []registry.Direction) inventory.List {
		l := make(inventory.List, len(ds))
		for i, x := range ds {
			l[i] = inventory.IntOf(int64(x))
		}
		return l
	}
	kernels := inventory.List{}
	for i, k := range req.Kernels {
		kernels = append(kernels, inventory.Dict{
			"func_id":   inventory.IntOf(int64(k.FuncID)),
			"source":    path("build.kernels[%d].source", i, k.Source),
			"signature": sig(k.Signature),
			"compile":   id.recipes[1+i].record(id.base),
		})
	}
	build := inventory.Dict{
		"orchestration":         path("build.orchestration", -1, req.Orchestration.Source),
		"orchestration_compile": id.recipes[0].record(id.base),
		"function":              str(req.Orchestration.Function),
		"config":                str(req.Orchestration.Config),
		"kernels":               kernels,
		"signature":             sig(req.Signature),
		"scalar_count":          inventory.IntOf(int64(req.ScalarCount)),
	}
	for i, inc := range id.includes {
		id.relPath("include_dirs[%d]", i, inc) // the recipes' -I, listed once each
	}
	sources, extra, components := id.sourcesRecord(), id.extraRecord(), id.toolchainRecord()
	var epoch inventory.Value = inventory.None{}
	if e := d.opt.Getenv(EpochVariable); e != "" {
		epoch = inventory.StrFromOSBytes(e)
	}
	return inventory.T(inventory.Str(keyTag), inventory.IntOf(keySchema), inventory.Dict{
		"policy":        str(string(id.policy)),
		"platform":      str(req.Platform),
		"runtime":       str(req.Runtime),
		"pipeline":      inventory.Dict{"version": str(pipelineVersion)},
		"build":         build,
		"sources":       sources,
		"extra_sources": extra,
		"toolchain":     components,
		"options":       options,
		"environment":   d.semanticEnv(),
		"epoch":         epoch,
	})
}

// relPath returns p relative to the base when it lies under it, and then
// adds it to id.relative as field's: field itself for i < 0, else field
// formatted with i (made only then: a hit computes the record).
func (id *identity) relPath(field string, i int, p string) string {
	q := id.base.rel(p)
	if q != p {
		if i >= 0 {
			field = fmt.Sprintf(field, i)
		}
		id.relative = append(id.relative, field+": "+q)
	}
	return q
}

// sourcesRecord is the key record's "sources": each source root's content
// digest in the relative form, None when it is unavailable.
func (id *identity) sourcesRecord() inventory.Dict {
	sources := inventory.Dict{}
	for _, s := range id.sources {
		if s.content == nil {
			sources[inventory.Str(s.name)] = inventory.None{}
			continue
		}
		if p := s.root.Path(); id.base.rel(p) != p {
			id.relative = append(id.relative, "sources."+s.name+": "+id.base.rel(p))
		}
		sources[inventory.Str(s.name)] = inventory.Str(id.base.contentDigest(s.content.Roots).String())
	}
	return sources
}

// extraRecord is the key record's "extra_sources": their digest in the
// relative form, None when unavailable.
func (id *identity) extraRecord() inventory.Value {
	if id.extraDigest.IsZero() {
		return inventory.None{}
	}
	for i, p := range id.extraPaths {
		id.relPath("extra_sources[%d]", i, p)
	}
	return inventory.Str(id.extraDigest.String())
}

// toolchainRecord is the key record's "toolchain": each component's
// digest with the paths under the base relative to it (its content
// records or its build record), None when it has no identity.
func (id *identity) toolchainRecord() inventory.Dict {
	components := inventory.Dict{}
	if id.toolchain == nil {
		return components
	}
	for _, c := range id.toolchain.Components {
		if c.Digest.IsZero() {
			components[inventory.Str(c.Name)] = inventory.None{}
			continue
		}
		rc := id.base.componentDigest(c, id.inputs)
		for _, p := range rc.relative {
			id.relative = append(id.relative, "toolchain."+c.Name+": "+p)
		}
		components[inventory.Str(c.Name)] = inventory.Str(rc.digest.String())
	}
	return components
}

// semanticEnv is the key record's "environment": each semantic variable of
// the registry with its value, None when unset or empty.
func (d *Driver) semanticEnv() inventory.Dict {
	env := inventory.Dict{}
	for _, v := range d.opt.Registry.Variables(envreg.Semantic) {
		if val := d.opt.Getenv(v); val != "" {
			env[inventory.Str(v)] = inventory.StrFromOSBytes(val)
		} else {
			env[inventory.Str(v)] = inventory.None{}
		}
	}
	return env
}

// resultRecord is the record whose digest keys the outputs of one header
// variant of a key.
func resultRecord(keyRecord inventory.Value, headers []headerDigest) inventory.Value {
	l := make(inventory.List, len(headers))
	for i, h := range headers {
		l[i] = inventory.T(inventory.Str(h.Path), inventory.Str(h.Digest))
	}
	return inventory.T(inventory.Str(resultTag), inventory.IntOf(keySchema), keyRecord, l)
}

// Unit entries. Every compiled unit (the orchestration and each kernel)
// has a key of its own: the digest of its unit record,
//
//	("ptojit.unit", keySchema, {policy, platform, runtime, pipeline, kind,
//	  source, source_digest, compile, toolchain, environment, epoch})
//
// with the source's path relative to the base directory, its content
// digest, the unit's compile recipe, every toolchain component's digest
// (a change to any component recompiles every unit), the semantic
// environment and the epoch. The unit's key holds a manifest of header
// variants exactly as a request's key does (putManifest, variantOf); each
// variant names a result entry (resultRecord over the unit record) whose
// one output is the unit's object. A request that misses looks every unit
// up and compiles only those no entry holds.
const unitTag = "ptojit.unit"

// unitRecord builds the unit record of unit i of req (see unitTag).
func (d *Driver) unitRecord(req *api.Request, id *identity, i int, u unit) inventory.Value {
	str := func(s string) inventory.Value { return inventory.Str(s) }
	kind := "kernel"
	if i == 0 {
		kind = "orchestration"
	}
	var digest inventory.Value = inventory.None{}
	if s := id.sources[i]; s.content != nil {
		digest = str(id.base.contentDigest(s.content.Roots).String())
	}
	components := inventory.Dict{}
	if id.toolchain != nil {
		for _, c := range id.toolchain.Components {
			if c.Digest.IsZero() {
				components[inventory.Str(c.Name)] = inventory.None{}
				continue
			}
			components[inventory.Str(c.Name)] = str(id.base.componentDigest(c, id.inputs).digest.String())
		}
	}
	var epoch inventory.Value = inventory.None{}
	if e := d.opt.Getenv(EpochVariable); e != "" {
		epoch = inventory.StrFromOSBytes(e)
	}
	return inventory.T(inventory.Str(unitTag), inventory.IntOf(keySchema), inventory.Dict{
		"policy":        str(string(id.policy)),
		"platform":      str(req.Platform),
		"runtime":       str(req.Runtime),
		"pipeline":      inventory.Dict{"version": str(pipelineVersion)},
		"kind":          str(kind),
		"source":        str(id.base.rel(u.source)),
		"source_digest": digest,
		"compile":       u.recipe.record(id.base),
		"toolchain":     components,
		"environment":   d.semanticEnv(),
		"epoch":         epoch,
	})
}

// Pack entries. The packed ChipCallable of a request is a pure function
// of the request's shape and its units' objects, so it is kept as an
// entry of its own, keyed by the digest of its pack record,
//
//	("ptojit.pack", keySchema, {platform, runtime, pipeline, function,
//	  config, signature, scalar_count, orchestration,
//	  kernels: [(func_id, signature, object digest)...]})
//
// with the orchestration's object digest and the kernels' in request
// order. Its one output is the callable (CallableName), its hashid in the
// meta. A request miss whose units give the objects a pack entry holds
// re-packs nothing (early cutoff: an edit that yields the same objects).
const packTag = "ptojit.pack"

// packRecord returns the pack record of req whose units compiled to res.
func packRecord(req *api.Request, res *compileResult) inventory.Value {
	digest := func(o *object) inventory.Value {
		return inventory.Str(hex.EncodeToString(o.digest[:]))
	}
	signature := func(ds []registry.Direction) inventory.List {
		l := make(inventory.List, len(ds))
		for i, d := range ds {
			l[i] = inventory.IntOf(int64(d))
		}
		return l
	}
	kernels := make(inventory.List, len(req.Kernels))
	for i, k := range req.Kernels {
		kernels[i] = inventory.T(inventory.IntOf(int64(k.FuncID)), signature(k.Signature), digest(res.binaries[kernelRole(k.FuncID)]))
	}
	return inventory.T(inventory.Str(packTag), inventory.IntOf(keySchema), inventory.Dict{
		"platform":      inventory.Str(req.Platform),
		"runtime":       inventory.Str(req.Runtime),
		"pipeline":      inventory.Dict{"version": inventory.Str(pipelineVersion)},
		"function":      inventory.Str(req.Orchestration.Function),
		"config":        inventory.Str(req.Orchestration.Config),
		"signature":     signature(req.Signature),
		"scalar_count":  inventory.IntOf(int64(req.ScalarCount)),
		"orchestration": digest(res.binaries["orchestration"]),
		"kernels":       kernels,
	})
}
