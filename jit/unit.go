package jit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// UnitKind is the kind meta of a unit's result entry.
const UnitKind = "unit"

// unitObjectName is the output name of a unit's object in its entry.
const unitObjectName = "object.so"

// Unit statuses (api.Unit.Status).
const (
	unitHit      = "hit"
	unitCompiled = "compiled"
	unitShared   = "shared"
)

// unitBuild is one unit of a request build that missed: its identity and
// what its lookup found. One build's.
type unitBuild struct {
	unit
	// name is "orchestration <file>" or "kernels[i] <file>".
	name string
	// id is the request's identity with the unit's record and key.
	id *identity
	// object is the unit entry's object, on a hit.
	object *object
	// v is the header variant that matched, on a hit.
	v variant
	// fresh is the unit's compile (a miss's, or a hit's in verify mode);
	// done ends this build's hold of it (see flightGroup).
	fresh *unitObject
	done  func()
	// src is the unit's source as the request's identity fingerprinted it.
	src       source
	status    string
	reason    string
	compileMS float64
	// warnings are those of the entries the unit's remote lookup was
	// served (remoteResult), which the request reports.
	warnings []string
}

// unitName names unit index of req as a miss line does.
func unitName(req *api.Request, index int) string {
	if index == 0 {
		return "orchestration " + filepath.Base(req.Orchestration.Source)
	}
	return fmt.Sprintf("kernels[%d] %s", index-1, filepath.Base(req.Kernels[index-1].Source))
}

// unitBuilds returns the units of req, each with its identity.
func (d *Driver) unitBuilds(req *api.Request, id *identity) ([]*unitBuild, error) {
	units := requestUnits(req, id)
	out := make([]*unitBuild, len(units))
	for i, u := range units {
		uid := *id
		uid.record = d.unitRecord(req, id, i, u)
		enc, err := inventory.Encode(uid.record)
		if err != nil {
			return nil, fmt.Errorf("unit record of %s: %w", unitName(req, i), err)
		}
		uid.encoded, uid.key, uid.unit = enc, sha256.Sum256(enc), unitName(req, i)
		out[i] = &unitBuild{unit: u, name: uid.unit, id: &uid, src: id.sources[i]}
	}
	return out, nil
}

// lookupUnit looks unit ub up in the store and, when the store misses,
// in its remote tiers (remoteResult; not in verify mode, where every
// unit compiles): a teammate's object is a remote hit for that unit,
// stored locally and read from the store as a local one (so counted as
// a unit hit, not as a request's remote hit). On a hit it sets
// ub.object and ub.v; on a miss ub.reason says why.
func (d *Driver) lookupUnit(ctx context.Context, ub *unitBuild) {
	d.lookupStoredUnit(ctx, ub)
	if ub.object != nil || d.opt.Verify {
		return
	}
	v, h, served, _ := d.remoteResult(ctx, ub.id) // a tier's failure is the request's to report
	ub.warnings = served
	if h == nil || len(h.Entry.Outputs) != 1 {
		return
	}
	if o, err := hitObject(h); err == nil {
		ub.object, ub.v, ub.status = o, v, unitHit
	}
}

// lookupStoredUnit looks unit ub up in the store: on a hit it sets
// ub.object and ub.v; on a miss ub.reason says why. A unit entry that
// cannot be read (damaged, the store failing) is a miss: the unit
// compiles.
func (d *Driver) lookupStoredUnit(ctx context.Context, ub *unitBuild) {
	v, rk, why, err := d.variantOf(ctx, ub.id, nil)
	switch {
	case err != nil:
		ub.reason = err.Error()
		return
	case why != "":
		ub.reason = why
		return
	}
	// The entry is looked up first: a Get that misses counts a request
	// miss, and this is a unit's (counted by compileUnits).
	_, err = cache.Lookup(ctx, d.opt.Store, rk)
	var me *cache.MissError
	if errors.As(err, &me) {
		ub.reason = me.Reason
		return
	}
	hit, err := d.opt.Store.Get(ctx, rk)
	switch {
	case errors.As(err, &me):
		ub.reason = me.Reason
		return
	case err != nil:
		ub.reason = "cache lookup: " + err.Error()
		return
	case len(hit.Entry.Outputs) != 1:
		ub.reason = "the unit entry holds no single object"
		return
	}
	o, err := hitObject(hit)
	if err != nil {
		ub.reason = "object unreadable: " + err.Error()
		return
	}
	ub.object, ub.v, ub.status = o, v, unitHit
}

// compileUnits looks every unit of req up and compiles those no unit
// entry holds, each in a flight of its unit key (unitFlight), at most
// Jobs of one request waiting for the compile pool at a time. The result
// holds every unit's object (the hits' from their entries) and, for the
// request's manifest, the headers and searched-and-absent paths of all
// units: the compiled ones' as their compilers reported them, the hits'
// from their matching variants. The compiled objects are files that stay
// until release.
func (d *Driver) compileUnits(ctx context.Context, req *api.Request, id *identity) (_ *compileResult, _ []*unitBuild, _ func(), err error) {
	ubs, err := d.unitBuilds(req, id)
	if err != nil {
		return nil, nil, nil, err
	}
	release := func() {
		for _, ub := range ubs {
			if ub.done != nil {
				ub.done()
			}
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(Jobs())
	for _, ub := range ubs {
		// In verify mode every unit compiles, and each found in its
		// entry is compared with its fresh object.
		if d.lookupUnit(ctx, ub); ub.object != nil && !d.opt.Verify {
			continue
		} else if ub.object == nil {
			_ = cache.Count(ctx, d.opt.Store, cache.EventUnitMiss, "")
		}
		g.Go(func() error { return d.compileUnit(gctx, req, id, ub) })
	}
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}
	if err := d.verifyUnits(ctx, id, ubs); err != nil {
		return nil, nil, nil, err
	}
	res := mergeUnits(id, ubs)
	units := make([]unit, len(ubs))
	for i, ub := range ubs {
		units[i] = ub.unit
	}
	if err := checkEntries(req, units, res, d.tempDir()); err != nil {
		return nil, nil, nil, err
	}
	return res, ubs, release, nil
}

// unitFlight runs one compile per unit key at a time in this process,
// for every request that needs the unit meanwhile (see flightGroup: a
// compile is canceled only when no request waits for it any more).
var unitFlight = flightGroup[*unitObject]{release: (*unitObject).free}

// unitObject is a unit a flight compiled, or found in its entry.
type unitObject struct {
	// bin is the object, a file of the compile's build directory, which
	// release removes.
	bin     *object
	release func()
	deps    *unitDeps
	started time.Time
	ms      float64
	// published is set once the flight stored the unit's entry.
	published bool
	// found is the unit's lookup when the flight found the entry that a
	// flight ended just before it published.
	found *unitBuild
}

// compileUnit compiles ub, or shares the flight of a concurrent request
// that compiles the same unit key, and records the object in ub.
//
// A flight looks the unit up once more before it compiles, and publishes
// the unit's entry before it ends (not in verify mode, where a unit found
// is compiled again and publishUnits stores only those that missed): a
// request that missed the unit just before another's flight of it ended
// then finds its entry instead of compiling it a second time.
func (d *Driver) compileUnit(ctx context.Context, req *api.Request, id *identity, ub *unitBuild) error {
	key := fmt.Sprintf("%p/%s", d.opt.Store, ub.id.key)
	o, done, err, shared := unitFlight.do(ctx, key, func(fctx context.Context) (*unitObject, error) {
		if !d.opt.Verify {
			probe := *ub
			if d.lookupStoredUnit(fctx, &probe); probe.object != nil {
				return &unitObject{found: &probe}, nil
			}
		}
		t := time.Now()
		res, err := d.compileSome(fctx, req, id, []unit{ub.unit})
		if err != nil {
			return nil, err
		}
		o := &unitObject{bin: res.binaries[ub.role], release: res.release, deps: res.units[ub.role], started: res.started, ms: ms(time.Since(t))}
		// A flight nobody waits for any more (every build that asked
		// was cancelled) publishes nothing.
		if !d.opt.Verify && fctx.Err() == nil {
			o.published = d.publishUnit(fctx, ub, o)
		}
		return o, nil
	})
	ub.done = done
	if err != nil {
		return err
	}
	if o.found != nil && ub.object == nil {
		ub.object, ub.v, ub.status, ub.reason = o.found.object, o.found.v, unitHit, ""
		return nil
	}
	ub.fresh = o
	if ub.object == nil {
		ub.status, ub.compileMS = unitCompiled, o.ms
		if shared {
			ub.status = unitShared
		}
	}
	return nil
}

// mergeUnits returns the compile result of the request whose units are
// ubs, each found or compiled.
func mergeUnits(id *identity, ubs []*unitBuild) *compileResult {
	res := &compileResult{binaries: map[string]*object{}, units: map[string]*unitDeps{}, started: time.Now()}
	sources := map[string]bool{}
	for _, ub := range ubs {
		sources[filepath.Clean(ub.source)] = true
	}
	for _, ub := range ubs {
		if ub.object != nil {
			res.binaries[ub.role] = ub.object
			for _, h := range ub.v.Headers {
				res.headers = append(res.headers, id.base.abs(h.Path))
			}
			for _, a := range ub.v.Absent {
				res.absent = append(res.absent, id.base.abs(a))
			}
			continue
		}
		o := ub.fresh
		res.binaries[ub.role] = o.bin
		res.units[ub.role] = o.deps
		res.headers = append(res.headers, o.deps.headers...)
		res.absent = append(res.absent, o.deps.absent...)
		res.appeared = append(res.appeared, o.deps.appeared...)
		if o.started.Before(res.started) {
			res.started = o.started
		}
	}
	res.headers = slices.DeleteFunc(res.headers, func(p string) bool { return sources[p] })
	for _, l := range []*[]string{&res.headers, &res.absent, &res.appeared} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return res
}

// publishUnits stores, in its own entry with its header variant, the
// object of every unit that compiled and that its flight did not store
// (in verify mode), which a store with remote tiers publishes to them;
// the request's outputs were published first.
func (d *Driver) publishUnits(ctx context.Context, ubs []*unitBuild) {
	for _, ub := range ubs {
		if ub.object == nil && ub.fresh != nil && !ub.fresh.published {
			d.publishUnit(ctx, ub, ub.fresh)
		}
	}
}

// publishUnit stores o, the compile of unit ub, in its own entry with
// its header variant (which a store with remote tiers publishes to
// them); it reports whether it stored them. A unit whose source changed since the request
// fingerprinted it, whose headers cannot be hashed or changed during the
// compile, or one of whose searched paths appeared, is not published;
// the store's failures are the request's to report.
func (d *Driver) publishUnit(ctx context.Context, ub *unitBuild, o *unitObject) bool {
	if ctx.Err() != nil {
		return false // nobody waits for it any more: cancelled
	}
	if len(o.deps.appeared) > 0 || sourceChange(ub.src) != "" {
		return false
	}
	headers, err := hashHeaders(o.deps.headers, o.started)
	if err != nil {
		return false
	}
	for i := range headers {
		headers[i].Path = ub.id.base.rel(headers[i].Path)
	}
	renc, err := inventory.Encode(resultRecord(ub.id.record, headers))
	if err != nil {
		return false
	}
	rk := cache.Key(sha256.Sum256(renc))
	rs, closeAll, err := readers([]*object{o.bin})
	if err != nil {
		return false
	}
	defer closeAll()
	err = d.opt.Store.Put(ctx, &cache.Entry{
		Key:         rk,
		Record:      renc,
		Outputs:     []cache.Output{{Name: unitObjectName, Mode: 0o755}},
		Meta:        map[string]string{"kind": UnitKind, "unit": ub.name, "key": ub.id.key.String(), "platform": ub.id.platform, "runtime": ub.id.runtime},
		CompileTime: time.Duration(o.ms * float64(time.Millisecond)),
	}, rs)
	if err != nil {
		return false
	}
	if why, err := d.putManifest(ctx, ub.id, headers, o.deps.absent, rk); why != "" || err != nil {
		return false
	}
	return true
}

// unitsOf returns the units of a build as the response lists them; shared
// marks those compiled by a concurrent build's flight.
func unitsOf(ubs []*unitBuild, shared bool) []api.Unit {
	out := make([]api.Unit, len(ubs))
	for i, ub := range ubs {
		u := api.Unit{Name: ub.name, Key: ub.id.key.String(), Status: ub.status, CompileMS: ub.compileMS}
		if ub.status != unitHit {
			u.Reason = ub.reason
		}
		if shared && ub.status != unitHit {
			u.Status = unitShared
		}
		out[i] = u
	}
	return out
}

// noEntryReason is the reason of a lookup whose key has no entry.
const noEntryReason = "no entry for the key"

// nameUnitChanges replaces the reason of every unit of resp that compiled
// because its key had no entry with the first input of resp.Changed (the
// request's inputs that differ from its latest earlier build) that
// concerns the unit: "source changed", "compile recipe changed", a
// toolchain component, a variable.
func nameUnitChanges(req *api.Request, resp *api.Response) {
	for i := range resp.Units {
		u := &resp.Units[i]
		if u.Status == unitHit || u.Reason != noEntryReason {
			continue
		}
		if why := unitChange(req, i, resp.Changed); why != "" {
			u.Reason = why
		}
	}
}

// unitChange returns the first change of changes that concerns unit
// index of req, in words, or "".
func unitChange(req *api.Request, index int, changes []api.Change) string {
	role, field := "orchestration", "build.orchestration"
	if index > 0 {
		role = kernelRole(req.Kernels[index-1].FuncID)
		field = fmt.Sprintf("build.kernels[%d]", index-1)
	}
	for _, c := range changes {
		n := c.Name
		switch {
		case n == "sources."+role:
			return "source changed"
		case n == field+"_compile" || n == field+".compile":
			return "compile recipe changed"
		case n == field || n == field+".source":
			return "source path changed"
		case strings.HasPrefix(n, "toolchain."):
			return "toolchain changed: " + strings.TrimPrefix(n, "toolchain.")
		case strings.HasPrefix(n, "environment."):
			return "environment changed: " + strings.TrimPrefix(n, "environment.")
		case n == "epoch" || n == "policy" || n == "platform" || n == "runtime" || strings.HasPrefix(n, "pipeline."):
			return strings.SplitN(n, ".", 2)[0] + " changed"
		}
	}
	return ""
}

// UnitsLine is the miss line's account of a build's units: "1 of 3 units
// compiled (kernels[0] kernel_add.c: source changed)".
func UnitsLine(us []api.Unit) string {
	var named, reasons []string
	for _, u := range us {
		if u.Status != unitHit {
			named = append(named, u.Name+": "+u.Reason)
			reasons = append(reasons, u.Reason)
		}
	}
	s := fmt.Sprintf("%d of %d units compiled", len(named), len(us))
	if len(named) == len(us) && len(us) > 1 && len(slices.Compact(reasons)) == 1 {
		return s + " (" + reasons[0] + ")" // a first build: every unit for one reason
	}
	if len(named) > 0 {
		s += " (" + strings.Join(named, "; ") + ")"
	}
	return s
}

// verifyUnits compares, in verify mode, the object of every unit found in
// its entry with the one its fresh compile produced. A difference is a
// *VerifyError naming the unit (counted as cache.EventVerifyMismatch)
// unless a source changed meanwhile.
func (d *Driver) verifyUnits(ctx context.Context, id *identity, ubs []*unitBuild) error {
	if !d.opt.Verify {
		return nil
	}
	for _, ub := range ubs {
		if ub.object == nil || ub.fresh == nil || ub.fresh.bin.digest == ub.object.digest {
			continue
		}
		if d.revalidate(id) != "" {
			return nil // the comparison proves nothing; the build compiles
		}
		_ = cache.Count(ctx, d.opt.Store, cache.EventVerifyMismatch, "")
		return &VerifyError{Key: ub.id.key.String(), Tier: TierLocal + " unit", Diffs: []OutputDiff{{
			Name:   ub.name,
			Stored: "sha256:" + hex.EncodeToString(ub.object.digest[:]),
			Fresh:  "sha256:" + hex.EncodeToString(ub.fresh.bin.digest[:]),
		}}}
	}
	return nil
}

// free removes the file of o (a flight's unit, once no build holds it).
func (o *unitObject) free() {
	if o != nil && o.release != nil {
		o.release()
	}
}
