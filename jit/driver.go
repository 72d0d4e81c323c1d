package jit

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	ptojit "github.com/ptojit/ptojit"
	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/envaudit/envreg"
	"github.com/ptojit/ptojit/filesys/durable"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/toolchain"
)

// DefaultRegistry returns the environment registry used when
// Options.Registry is nil: the repository's _environment.json
// (ptojit.EnvironmentRegistry).
func DefaultRegistry() *envreg.Registry { return defaultRegistry() }

// defaultRegistry parses the embedded registry once: a daemon makes a
// Driver for every request.
var defaultRegistry = sync.OnceValue(func() *envreg.Registry {
	r, err := envreg.ParseRegistry([]byte(ptojit.EnvironmentRegistry))
	if err != nil {
		panic("jit: embedded environment registry: " + err.Error())
	}
	return r
})

// EpochVariable is the environment variable whose value is the key's epoch:
// changing it gives every build a new key.
const EpochVariable = "PYPTO_CACHE_EPOCH"

// PolicyVariable selects the identity policy when the request names none.
const PolicyVariable = "PYPTO_CACHE_IDENTITY"

// Output names in the output directory and the cache entry.
const (
	CallableName      = "chip_callable.bin"
	OrchestrationName = "orchestration.so"
)

// KernelName returns the output name of a kernel's shared object.
func KernelName(funcID int32) string { return fmt.Sprintf("kernel_%d.so", funcID) }

// maxManifestVariants bounds the header variants remembered per key.
const maxManifestVariants = 16

// Options configure a Driver.
type Options struct {
	// Store is the artifact cache; nil makes every build uncached. The
	// driver counts events (uncached, error, damaged, verify_mismatch) on
	// it when it implements cache.EventCounter. A store with remote tiers
	// behind it (package cache/remote's Tiered: a cache.Core whose Get
	// reads the tiers after a local miss, copies their hits into the
	// local store and publishes what is Put) is also asked, after a local
	// miss, for the key's manifest in the tiers (see remoteStore).
	Store cache.Core
	// StoreErr, with Store nil, is why the cache in StoreDir could not be
	// opened: every build runs uncached and carries a warning naming the
	// directory, the cause and the remedy.
	StoreErr error
	StoreDir string
	// Identities memoizes installation identities; nil gives the Driver
	// its own.
	Identities *toolchain.InstallationIdentityCache
	// Getenv reads the build's environment (semantic, fresh_request and
	// tool_resolution variables); nil means os.Getenv.
	Getenv func(string) string
	// Environ is the environment the tools run with; nil means
	// os.Environ(). LC_ALL=C is always added.
	Environ []string
	// Registry classifies environment variables; nil means
	// DefaultRegistry().
	Registry *envreg.Registry
	// TempDir holds the compilers' working directories; "" means
	// os.TempDir().
	TempDir string
	// Verify compiles every hit again and compares its outputs with the
	// stored ones, byte for byte (the verify mode, PTOJIT_CACHE_VERIFY): a
	// difference fails the build with a *VerifyError and is counted as
	// cache.EventVerifyMismatch; the fresh outputs are never published.
	Verify bool
	// Listings, when set, answers the checks of searched-and-absent
	// paths on a lookup from directory listings a Watcher keeps valid
	// (a daemon's); nil checks each path with a stat.
	Listings *DirListings
	// BeforeRevalidate, when set, runs after the compilers finished and
	// before the sources are fingerprinted again (tests change a source
	// there to prove that nothing is published).
	BeforeRevalidate func()
}

// Driver turns build requests into chip callables: identity, cache lookup,
// compilation, publication. It is safe for concurrent use: concurrent
// builds share the store and the identity memo and nothing else. A daemon
// creates one Driver and calls Build for every request.
type Driver struct {
	opt Options
}

// New returns a Driver.
func New(opt Options) *Driver {
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Registry == nil {
		opt.Registry = DefaultRegistry()
	}
	if opt.Identities == nil {
		opt.Identities = toolchain.NewInstallationIdentityCache(toolchain.Options{})
	}
	return &Driver{opt: opt}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// phases times a build's phases (api.Timings.Phases). A nil *phases
// times nothing.
type phases struct {
	m map[string]int64
	t time.Time
}

func newPhases() *phases { return &phases{m: map[string]int64{}, t: time.Now()} }

// mark adds the time since the last mark to phase name.
func (p *phases) mark(name string) {
	if p == nil {
		return
	}
	now := time.Now()
	p.m[name] += now.Sub(p.t).Microseconds()
	p.t = now
}

// RequestError is a request that cannot be built as written (a missing
// source, a relative path). Field names the request field.
type RequestError = api.FieldError

// Build builds req, whose paths must be absolute (api.Request.Resolve). It
// always returns a Response; the error is non-nil exactly when the
// response's status is "error" or "cancelled" (ctx ended: the build's
// client went away; not counted as an error), and is the same error.
func (d *Driver) Build(ctx context.Context, req *api.Request) (*api.Response, error) {
	AwaitSync(ctx) // before any memo is used
	start := time.Now()
	resp := &api.Response{}
	err := d.build(ctx, req, resp)
	resp.Timings.Total = ms(time.Since(start))
	if err != nil {
		resp.Status = api.StatusError
		resp.Error = err.Error()
		if ctx.Err() != nil {
			resp.Status = api.StatusCancelled
			return resp, err
		}
		if d.opt.Store != nil {
			_ = cache.Count(ctx, d.opt.Store, cache.EventError, errorKind(err))
		}
		return resp, err
	}
	return resp, nil
}

// errorKind is the short reason an error is counted under.
func errorKind(err error) string {
	var ce *CompileError
	var fe *api.FieldError
	var te *ToolchainError
	switch {
	case errors.As(err, &ce):
		return "compile failed"
	case errors.As(err, &fe):
		return "invalid request"
	case errors.As(err, &te):
		return "toolchain"
	}
	return "build failed"
}

func (d *Driver) build(ctx context.Context, req *api.Request, resp *api.Response) error {
	began := time.Now()
	t := began
	ph := newPhases()
	resp.Timings.Phases = ph.m
	id, err := d.identify(ctx, req, ph)
	resp.Timings.Identity = ms(time.Since(t))
	if err != nil {
		return err
	}
	if id.usable {
		resp.Key = id.key.String()
	}
	store := d.opt.Store
	resp.Warnings = append(resp.Warnings, id.warnings...)
	if reasons := d.uncachedReasons(id, resp); len(reasons) > 0 {
		return d.buildUncached(ctx, req, id, reasons, resp)
	}

	t = time.Now()
	hit, why, err := d.lookupPhases(ctx, id, ph)
	resp.Timings.Lookup = ms(time.Since(t))
	if err != nil {
		// The store can fail; the build cannot. A cancelled build is
		// an error, though.
		if ctx.Err() != nil {
			return err
		}
		resp.Warnings = append(resp.Warnings, d.storeWarning(err))
		_ = cache.Count(ctx, store, cache.EventError, "cache lookup failed")
		return d.buildUncached(ctx, req, id, []reason{{"cache lookup failed", "cache lookup failed: " + err.Error()}}, resp)
	}
	var r *flightResult
	if hit != nil {
		r = hit.result()
	} else if r, why, err = d.compileShared(ctx, req, id, began, why, resp, ph); err != nil {
		return err
	}
	t = time.Now()
	r, why, err = d.answerFlight(ctx, req, id, r, began, why, resp, ph)
	defer r.finish()
	resp.Timings.Publish = r.publishMS + ms(time.Since(t))
	ph.mark("output")
	if err != nil {
		return err
	}
	d.setStatus(ctx, r, why, resp)
	if resp.Status == api.StatusMiss {
		d.explainMiss(ctx, req, id, resp)
		nameUnitChanges(req, resp)
	}
	if resp.Status == api.StatusHit || resp.Status == api.StatusMiss {
		d.recordLatest(ctx, req, id, r.result)
		ph.mark("latest")
	}
	return nil
}

// answerFlight answers req with the outputs of r (verified against a
// fresh compile first in verify mode) and returns the flight answered
// and the miss reason. A local hit whose bytes a reader finds damaged
// (the store removed the entry and counted a damaged lookup) is a
// damaged miss: the build compiles and answers with that.
func (d *Driver) answerFlight(ctx context.Context, req *api.Request, id *identity, r *flightResult, began time.Time, why string, resp *api.Response, ph *phases) (*flightResult, string, error) {
	out := r.blobs()
	err := d.verifyFlight(ctx, req, id, r, out, began, resp, ph)
	if err == nil {
		err = d.answer(req, r.outs, out, resp)
	}
	var me *cache.MissError
	if r.stored == nil || !errors.As(err, &me) || !errors.Is(err, cache.ErrDamaged) {
		return r, why, err
	}
	resp.Outputs, resp.Callable, resp.Hashid = nil, "", ""
	if r, why, err = d.compileShared(ctx, req, id, began, me.Reason, resp, ph); err != nil {
		return r, why, err
	}
	out = r.blobs()
	if err = d.verifyFlight(ctx, req, id, r, out, began, resp, ph); err == nil {
		err = d.answer(req, r.outs, out, resp)
	}
	return r, why, err
}

// verifyFlight is verifyHit for a hit in verify mode (every output read
// first); it does nothing otherwise.
func (d *Driver) verifyFlight(ctx context.Context, req *api.Request, id *identity, r *flightResult, out *blobs, began time.Time, resp *api.Response, ph *phases) error {
	if !r.hit || !d.opt.Verify {
		return nil
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := d.verifyHit(ctx, req, id, r, began, resp, ph); err != nil {
		return err
	}
	return nil
}

// compileShared compiles id's outputs and publishes them, one compile per
// key at a time: concurrent builds of the key share it (flightGroup). It
// returns the flight's result and the miss reason, why unless the
// compile was another build's; the flight's timings and warnings go into
// resp, a failed one's warnings too.
func (d *Driver) compileShared(ctx context.Context, req *api.Request, id *identity, began time.Time, why string, resp *api.Response, ph *phases) (*flightResult, string, error) {
	r, done, err, shared := compileFlight.do(ctx, d.flightKey(id), func(fctx context.Context) (*flightResult, error) {
		return d.compileAndPublish(fctx, req, id, began)
	})
	if err != nil {
		if r != nil {
			// A failed compile still reports what the flight met.
			resp.Warnings = append(resp.Warnings, r.warnings...)
		}
		done()
		return nil, "", err
	}
	own := *r // this build's hold of the flight's result
	own.done = done
	r = &own
	if shared && !r.hit {
		why = "compiled by a concurrent build of the same key"
	}
	if !r.hit {
		resp.Units = unitsOf(r.units, shared)
	}
	resp.Timings.Compile = r.compileMS
	resp.Timings.Lookup += r.remoteMS
	resp.Warnings = append(resp.Warnings, r.warnings...)
	ph.mark("compile")
	return r, why, nil
}

// setStatus sets resp's status from the flight's result r (a hit, a miss
// with reason why, or uncached when the store did not keep the outputs)
// and counts what the store's counters take of it.
func (d *Driver) setStatus(ctx context.Context, r *flightResult, why string, resp *api.Response) {
	store := d.opt.Store
	switch {
	case r.hit:
		resp.Status = api.StatusHit
		resp.HitTier = r.tier
		resp.SavedMS = ms(r.storedCompile) // a remote hit is counted by the store that served it
	case r.putErr != nil:
		// The outputs are right; the store failed to keep them.
		resp.Status = api.StatusUncached
		if isPlainReadOnly(r.putErr) {
			resp.Unavailable = []string{"not published: " + r.putErr.Error()}
			_ = cache.Count(ctx, store, cache.EventUncached, notPublishedCounter)
		} else {
			resp.Unavailable = []string{"cache write failed: " + r.putErr.Error()}
			resp.Warnings = append(resp.Warnings, d.storeWarning(r.putErr))
			_ = cache.Count(ctx, store, cache.EventError, "cache write failed")
		}
	case r.notPublished != "":
		resp.Status = api.StatusUncached
		resp.Unavailable = []string{r.notPublished}
		_ = cache.Count(ctx, store, cache.EventUncached, notPublishedCounter) // every notPublished says "not published: ..."
	default:
		resp.Status = api.StatusMiss
		resp.MissReason = why
	}
}

// reason is why a build is not cached: text is what the response (and
// the key report) lists, counter the name of the store's uncached counter
// it adds to. The counter names the kind of reason (a component, a source
// role, a variable), so that the counters do not grow one key per path.
type reason struct{ counter, text string }

// notPublishedCounter counts the builds whose outputs were not published.
const notPublishedCounter = "not published"

// reasonTexts returns the texts of rs.
func reasonTexts(rs []reason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.text)
	}
	return out
}

// uncachedReasons returns why a build of id runs without the store: its
// identity is unavailable, a fresh_request variable is set, or there is
// no store (a store that failed to open adds its warning to resp).
func (d *Driver) uncachedReasons(id *identity, resp *api.Response) []reason {
	reasons := slices.Clone(id.unavailable)
	for _, f := range id.fresh {
		reasons = append(reasons, reason{f + " is set", f + " is set (fresh_request): no lookup, no publish"})
	}
	switch {
	case d.opt.Store == nil && d.opt.StoreErr != nil:
		reasons = append(reasons, reason{"cache unusable", "cache unusable: " + d.opt.StoreErr.Error()})
		resp.Warnings = append(resp.Warnings, cache.StoreWarning(d.opt.StoreDir, d.opt.StoreErr))
	case d.opt.Store == nil:
		reasons = append(reasons, reason{"no cache store", "no cache store"})
	}
	return reasons
}

// isPlainReadOnly reports whether err is the refusal of a store that was
// asked to be read-only (PTOJIT_CACHE_READONLY): no warning then.
func isPlainReadOnly(err error) bool {
	return err == cache.ErrReadOnly // wrapped, it carries the cause: no space, a read-only file system
}

// storeWarning is the warning of a build the store failed: it names the
// cache directory, the cause and the remedy.
func (d *Driver) storeWarning(err error) string {
	dir := "(in memory)"
	if s, ok := d.localStore().(interface{ Dir() string }); ok {
		dir = s.Dir()
	}
	return cache.StoreWarning(dir, err)
}

// buildUncached compiles req without the store, answers and counts.
func (d *Driver) buildUncached(ctx context.Context, req *api.Request, id *identity, reasons []reason, resp *api.Response) error {
	t := time.Now()
	res, err := d.compile(ctx, req, id)
	if err != nil {
		return err
	}
	defer res.release()
	outs, objs, release, err := pack(req, res, d.tempDir())
	resp.Timings.Compile = ms(time.Since(t))
	if err != nil {
		return err
	}
	defer release()
	t = time.Now()
	err = d.answer(req, outs, &blobs{objs: objs}, resp)
	resp.Timings.Publish = ms(time.Since(t))
	if err != nil {
		return err
	}
	resp.Status = api.StatusUncached
	resp.Unavailable = reasonTexts(reasons)
	if len(resp.Warnings) == 0 && d.opt.Store != nil {
		// A store failure was counted as an error where it happened.
		_ = cache.Count(ctx, d.opt.Store, cache.EventUncached, reasons[0].counter)
	}
	return nil
}

// compileFlight dedupes concurrent compiles of one key in this process
// (every Driver of a store shares it: the daemon makes a Driver per
// request).
var compileFlight = flightGroup[*flightResult]{release: (*flightResult).free}

// flightKey names a key in one store.
func (d *Driver) flightKey(id *identity) string {
	return fmt.Sprintf("%p/%s", d.localStore(), id.key)
}

// flightResult is what a compile flight hands every build that joined it.
type flightResult struct {
	outs []cache.Output
	// objs are the outputs' bytes (a compile's: files, or entries of
	// the store), or, for a hit, stored is the store's or the remote
	// tier's hit they are read from when needed (a Hit is safe for
	// concurrent use).
	objs   []*object
	stored *cache.Hit
	// release removes the files of objs a compile wrote, once no build
	// uses them (see flightGroup); done, in a build's copy of the
	// result, ends that build's hold of it.
	release, done func()
	// hit: a build that finished just before the flight began published
	// the key, or the remote tier had it; nothing was compiled. tier says
	// which.
	hit  bool
	tier string
	// result is the key of the result entry answered or published (the
	// header variant the build used).
	result cache.Key
	// remoteMS is the time of a remote hit's lookup, fetch and local
	// store (part of the response's lookup time).
	remoteMS float64
	// notPublished says why the outputs were not published ("" if they
	// were), when it was not the store's failure.
	notPublished string
	// putErr is the store's failure to publish the outputs.
	putErr error
	// warnings are what the flight met that its builds report (the
	// remote tier's failures).
	warnings             []string
	compileMS, publishMS float64
	// storedCompile is a hit's stored compile time (the time it saved).
	storedCompile time.Duration
	// units are the compiled units of a compile: each found in its own
	// entry or compiled.
	units []*unitBuild
}

// compileAndPublish looks the key up once more (a flight that just ended
// may have published it), else compiles, packs and publishes. began is
// when the build request arrived.
func (d *Driver) compileAndPublish(ctx context.Context, req *api.Request, id *identity, began time.Time) (*flightResult, error) {
	if hit, _, err := d.lookupQuiet(ctx, id); err == nil && hit != nil {
		return hit.result(), nil
	}
	r, warnings := d.remoteLookup(ctx, id)
	if r != nil {
		return r, nil
	}
	t := time.Now()
	if err := settle(ctx, req, id, d.knownHeaders(ctx, id), began); err != nil {
		return &flightResult{warnings: warnings}, err
	}
	res, units, releaseUnits, err := d.compileUnits(ctx, req, id)
	if err != nil {
		return &flightResult{warnings: warnings}, err
	}
	outs, objs, pe, releasePack, err := d.packed(ctx, req, res)
	if err != nil {
		releaseUnits()
		return &flightResult{warnings: warnings}, err
	}
	for _, ub := range units {
		warnings = append(warnings, ub.warnings...)
	}
	r = &flightResult{outs: outs, objs: objs, compileMS: ms(time.Since(t)), warnings: warnings, units: units}
	r.release = func() {
		releasePack()
		releaseUnits()
	}
	t = time.Now()
	if d.opt.BeforeRevalidate != nil {
		d.opt.BeforeRevalidate()
	}
	if ctx.Err() != nil {
		// Cancelled: nobody waits for this flight any more, and
		// nothing is published for it.
		r.release()
		return &flightResult{warnings: warnings}, context.Cause(ctx)
	}
	r.result, r.notPublished, r.putErr = d.publish(ctx, id, res, outs, objs, time.Since(res.started))
	if r.notPublished == "" && r.putErr == nil {
		d.publishUnits(ctx, units)
		d.putPack(ctx, id, pe)
	}
	r.publishMS = ms(time.Since(t))
	return r, nil
}

// finish ends a build's hold of r (see flightResult.done).
func (r *flightResult) finish() {
	if r != nil && r.done != nil {
		r.done()
	}
}

// free releases the files of r (a flight's result, once no build holds
// it).
func (r *flightResult) free() {
	if r != nil && r.release != nil {
		r.release()
	}
}

// manifest is the direct-mode record stored with a key: the header sets
// seen for it, most recent first, each with the key of its result entry.
type manifest struct {
	Variants []variant `json:"variants"`
}

type variant struct {
	Headers []headerDigest `json:"headers"`
	// Absent are the paths searched before the headers' directories that
	// did not exist at the build (negative dependencies, see the package
	// doc): any of them existing makes the variant not match.
	Absent []string `json:"absent,omitempty"`
	Result string   `json:"result"`
	// plans, in a decoded manifest decodedManifests remembers, holds the
	// Absent paths grouped by directory for each base directory
	// (absentPlan), so a daemon's hit looks them up without building a
	// path each.
	plans *sync.Map
}

// lookupPhases finds the result of the key, timing its phases in ph: the
// manifest names the header variants; the first whose headers all still
// have their digests gives the result key. With no manifest or no matching
// variant the result of the empty header set is looked up, which exists
// only for sources that include nothing. The store counts the one Get as a
// hit or a miss.
func (d *Driver) lookupPhases(ctx context.Context, id *identity, ph *phases) (*storedHit, string, error) {
	rk, why, err := d.resultKeyPhases(ctx, id, ph)
	if err != nil {
		return nil, "", err
	}
	defer ph.mark("verify")
	return d.get(ctx, rk, why)
}

// storedHit is a local hit: its entry, its use counted; its outputs'
// bytes are read (and verified by the store) only when needed.
type storedHit struct {
	Entry *cache.Entry
	Hit   *cache.Hit
}

// result is the flight result of the hit h.
func (h *storedHit) result() *flightResult {
	return &flightResult{outs: h.Entry.Outputs, stored: h.Hit, hit: true, tier: TierLocal, result: h.Entry.Key, storedCompile: h.Entry.CompileTime}
}

// get looks the result entry rk up in the local store; why is the reason
// of a miss when rk is not a matching header variant's. The store's Get
// counts the hit and updates its last use; damage a reader of it finds
// later is a damaged miss (see answerFlight), like the damage Get finds.
// A store's remote tiers are not asked here but once, in the key's
// flight (remoteLookup: its manifest there, then its result), so that a
// slow tier costs a build one timeout, not one more before the flight.
func (d *Driver) get(ctx context.Context, rk cache.Key, why string) (*storedHit, string, error) {
	hit, err := d.localStore().Get(ctx, rk)
	if err == nil {
		return &storedHit{Entry: hit.Entry, Hit: hit}, "", nil
	}
	var me *cache.MissError
	switch {
	case errors.As(err, &me) && why == "":
		return nil, me.Reason, nil
	case errors.Is(err, cache.ErrMiss):
		return nil, why, nil
	}
	return nil, "", fmt.Errorf("cache lookup: %w", err)
}

// lookupQuiet is lookup that reads (and so counts) the result only when its
// entry exists: the second look of a build that already counted its miss.
func (d *Driver) lookupQuiet(ctx context.Context, id *identity) (*storedHit, string, error) {
	rk, why, err := d.resultKey(ctx, id)
	if err != nil || why != "" {
		return nil, why, err
	}
	if _, err := cache.Lookup(ctx, d.opt.Store, rk); errors.Is(err, cache.ErrMiss) {
		return nil, "no entry", nil
	} else if err != nil {
		return nil, "", fmt.Errorf("cache lookup: %w", err)
	}
	return d.get(ctx, rk, why)
}

// resultKey returns the key of the result entry to read and, when no
// header variant matched, why.
func (d *Driver) resultKey(ctx context.Context, id *identity) (cache.Key, string, error) {
	return d.resultKeyPhases(ctx, id, nil)
}

// resultKeyPhases is resultKey that times its phases in ph.
func (d *Driver) resultKeyPhases(ctx context.Context, id *identity, ph *phases) (cache.Key, string, error) {
	_, rk, why, err := d.variantOf(ctx, id, ph)
	return rk, why, err
}

// variantOf is resultKeyPhases that also returns the header variant that
// matched (the zero variant when none did).
func (d *Driver) variantOf(ctx context.Context, id *identity, ph *phases) (variant, cache.Key, string, error) {
	defer ph.mark("headers")
	// The result of the empty header set, encoded only when no variant
	// matches: a hit takes its key from the manifest.
	noHeaders := func() cache.Key { return cache.Key(inventory.MustDigest(resultRecord(id.record, nil))) }
	e, err := cache.Lookup(ctx, d.opt.Store, cache.Key(id.key))
	ph.mark("lookup")
	var me *cache.MissError
	switch {
	case errors.As(err, &me) && me.Corrupt:
		return variant{}, noHeaders(), "manifest " + me.Reason, nil
	case errors.Is(err, cache.ErrMiss):
		return variant{}, noHeaders(), "no entry for the key", nil
	case err != nil:
		return variant{}, cache.Key{}, "", fmt.Errorf("cache lookup: %w", err)
	}
	m, err := d.storedManifest(ctx, e)
	var un *undecodableManifest
	switch {
	case errors.As(err, &me):
		return variant{}, noHeaders(), "manifest " + me.Reason, nil // a damaged blob, counted and removed
	case errors.As(err, &un) || errors.Is(err, errManifestShape):
		return variant{}, noHeaders(), d.damagedManifest(ctx, id, err), nil
	case err != nil:
		return variant{}, cache.Key{}, "", fmt.Errorf("cache lookup: %w", err)
	}
	v, rk, why, ok := d.matchVariant(id, m.Variants)
	if !ok {
		return variant{}, noHeaders(), why, nil
	}
	return v, rk, "", nil
}

// damagedManifest removes the key's manifest entry, whose JSON does not
// parse (or that holds no manifest), and counts it as damaged, as the
// store does with a damaged entry Get finds; it returns the reason of the
// miss.
func (d *Driver) damagedManifest(ctx context.Context, id *identity, err error) string {
	_ = cache.Delete(ctx, d.opt.Store, cache.Key(id.key))
	_ = cache.Count(ctx, d.opt.Store, cache.EventDamaged, "manifest")
	return "manifest " + cache.ReasonDamaged + err.Error()
}

// knownHeaders returns the headers the key's manifest names, for settle:
// absolute (the manifest names those under the base directory relative
// to it).
func (d *Driver) knownHeaders(ctx context.Context, id *identity) []string {
	e, err := cache.Lookup(ctx, d.opt.Store, cache.Key(id.key))
	if err != nil {
		return nil
	}
	m, err := d.storedManifest(ctx, e)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, v := range m.Variants {
		for _, h := range v.Headers {
			if !seen[h.Path] {
				seen[h.Path] = true
				out = append(out, id.base.abs(h.Path))
			}
		}
	}
	return out
}

// changedHeader returns the name of the first header whose digest
// differs from the recorded one (or that cannot be read), or "". Relative
// names are relative to the base directory.
func (d *Driver) changedHeader(id *identity, hs []headerDigest) string {
	for _, h := range hs {
		p := id.base.abs(h.Path)
		var digest string
		var err error
		if l := d.opt.Listings; l != nil && filepath.IsAbs(p) && filepath.Clean(p) == p && id.inToolchainRoot(p) {
			digest, err = watchedDigestOf(l, p)
		} else {
			digest, err = headerDigestOf(p)
		}
		if err != nil || digest != h.Digest {
			return h.Path
		}
	}
	return ""
}

// publish stores the outputs unless a source or header changed while the
// compilers ran; it returns the key of the result entry, why it did not
// publish, or "", and the store's error when the store failed.
func (d *Driver) publish(ctx context.Context, id *identity, res *compileResult, outs []cache.Output, objs []*object, took time.Duration) (cache.Key, string, error) {
	var none cache.Key
	if why := d.revalidate(id); why != "" {
		return none, why, nil
	}
	if len(res.appeared) > 0 {
		return none, "not published: a header may have appeared on the include path while the compilers ran (it is not a second older than their start, and they did not read it): " + id.base.rel(res.appeared[0]), nil
	}
	headers, err := hashHeaders(res.headers, res.started)
	if err != nil {
		return none, "not published: " + err.Error(), nil
	}
	for i := range headers {
		headers[i].Path = id.base.rel(headers[i].Path) // as the key writes paths
	}
	rrec := resultRecord(id.record, headers)
	renc, err := inventory.Encode(rrec)
	if err != nil {
		return none, "not published: " + err.Error(), nil
	}
	rk := cache.Key(sha256.Sum256(renc))
	hashid, err := objectHashid(id.platform, id.runtime, objs[len(objs)-1])
	if err != nil {
		return none, "not published: hashid: " + err.Error(), nil
	}
	rs, closeAll, err := readers(objs)
	if err != nil {
		return none, "not published: " + err.Error(), nil
	}
	defer closeAll()
	err = d.opt.Store.Put(ctx, &cache.Entry{
		Key:         rk,
		Record:      renc,
		Outputs:     outs,
		Meta:        map[string]string{"kind": "result", "key": id.key.String(), "hashid": hashid, "platform": id.platform, "runtime": id.runtime},
		CompileTime: took,
	}, rs)
	if err != nil {
		why, err := putFailure(err)
		return none, why, err
	}
	// The manifest is written after the result it names.
	if why, err := d.putManifest(ctx, id, headers, res.absent, rk); why != "" || err != nil {
		return none, why, err
	}
	return rk, "", nil
}

// putManifest adds to the manifest entry of id's key the header variant
// of headers (relative to the base directory) and the searched-and-absent
// paths absent, whose result entry is rk; it returns why it did not, or
// the store's error.
func (d *Driver) putManifest(ctx context.Context, id *identity, headers []headerDigest, absentPaths []string, rk cache.Key) (string, error) {
	absent := make([]string, len(absentPaths))
	for i, p := range absentPaths {
		absent[i] = id.base.rel(p)
	}
	return d.writeManifest(ctx, d.opt.Store, id, variant{Headers: headers, Absent: absent, Result: hex.EncodeToString(rk[:])})
}

// putFailure sorts an error of Put: a refusal of the entry itself (too
// large, over a limit of the encoding) is a reason not to publish; any
// other is the store's failure.
func putFailure(err error) (string, error) {
	var de *cache.DataError
	if errors.As(err, &de) {
		return "not published: " + err.Error(), nil
	}
	return "", err
}

// answer writes the outputs to the request's output directory and fills
// the response.
func (d *Driver) answer(req *api.Request, outs []cache.Output, data *blobs, resp *api.Response) error {
	written, err := writeOutputs(req.OutputDir, outs, data)
	if err != nil {
		return err
	}
	resp.Outputs = written
	for i, o := range outs {
		if o.Name == CallableName {
			resp.Callable = written[i].Path
			h, err := chipHashid(req.Platform, req.Runtime, o.Digest, o.Size, func() io.ReadCloser {
				r, _ := data.open(i)
				return r
			})
			if err != nil {
				return fmt.Errorf("hashid: %w", err)
			}
			resp.Hashid = h
		}
	}
	if resp.Callable == "" {
		return errors.New("the build has no chip callable")
	}
	return nil
}

// hashidMemo remembers the hashids of chip callables by platform, runtime
// and the blob's SHA-256, so that a hit does not hash its blob a second
// time, nor read it when its outputs are in place (writeOutputs checked
// the bytes against that digest, or the store verified them).
var hashidMemo memo[hashidKey, string]

type hashidKey struct {
	platform, runtime string
	digest            [32]byte
}

// chipHashid returns registry.ChipHashid of the blob of size bytes whose
// SHA-256 is digest; open opens a reader of it, called only when the memo
// does not know it. The blob streams through registry.ChipHashidFrom, so
// a cold memo costs no copy of a large callable in memory.
func chipHashid(platform, runtime string, digest [32]byte, size int64, open func() io.ReadCloser) (string, error) {
	k := hashidKey{platform, runtime, digest}
	if h, ok := hashidMemo.get(k); ok {
		return h, nil
	}
	r := open()
	defer r.Close()
	id, err := registry.ChipHashidFrom(platform, runtime, r, size)
	if err != nil {
		return "", err
	}
	h := id.String()
	hashidMemo.put(k, h)
	return h, nil
}

// OutputError is an output that could not be written to the output
// directory.
type OutputError struct {
	Name string
	Err  error
}

func (e *OutputError) Error() string { return "output " + e.Name + ": " + e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// writeOutputs writes the outputs to dir as one set: each output that dir
// does not already hold (a file of the output's size, mode and SHA-256)
// is streamed into a temporary file beside its name (durable.CreateTemp)
// from the store's verifying reader, for a local hit, or through a
// hashing writer checked against its digest, for any other bytes; only
// once all are written are they renamed over the old ones. A local hit's
// output that dir holds is not read from the store at all, and one the
// output memo vouches for is not read either. A failed check, read or
// write (a full disk) removes every temporary file and leaves the old set
// whole; the directory never holds a partial or corrupt output. Writing
// makes no copy of an output in memory: a local hit's never is whole there.
func writeOutputs(dir string, outs []cache.Output, data *blobs) (_ []api.Output, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &OutputError{Name: "directory", Err: err}
	}
	type staged struct{ name, tmp, path string }
	var todo []staged
	defer func() {
		for _, s := range todo {
			os.Remove(s.tmp) // renamed ones are gone from todo
		}
	}()
	res := make([]api.Output, len(outs))
	for i, o := range outs {
		if o.Name == "" || o.Name != filepath.Base(o.Name) || o.Name == "." || o.Name == ".." {
			return nil, &OutputError{Name: o.Name, Err: errors.New("not a plain file name")}
		}
		mode := os.FileMode(o.Mode & 0o777)
		if mode == 0 {
			mode = 0o644
		}
		p := filepath.Join(dir, o.Name)
		res[i] = api.Output{Name: o.Name, Path: p, Size: o.Size, Digest: hex.EncodeToString(o.Digest[:])}
		if memoHolds(p, o.Digest, mode) || holds(p, o.Size, o.Digest, mode) {
			continue // the file in place has the output's bytes
		}
		tmp, err := stageOutput(p, o, mode, data, i)
		if err != nil {
			return nil, err
		}
		todo = append(todo, staged{o.Name, tmp, p})
	}
	wrote := len(todo) > 0
	for len(todo) > 0 {
		s := todo[0]
		if err := os.Rename(s.tmp, s.path); err != nil {
			return nil, &OutputError{Name: s.name, Err: err}
		}
		todo = todo[1:]
	}
	if wrote {
		sweepStaleTemps(dir, outs, time.Now())
	}
	return res, nil
}

// staleTempAge is the age past which a temporary file of an output (see
// writeTemp) is taken for that of a writer killed before its rename:
// writing an output takes milliseconds.
const staleTempAge = time.Hour

// sweepStaleTemps removes from dir the temporary files of outs older than
// staleTempAge, which killed builds left behind. Other files are never
// touched.
func sweepStaleTemps(dir string, outs []cache.Output, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !durable.IsTemp(n) {
			continue
		}
		if !slices.ContainsFunc(outs, func(o cache.Output) bool { return strings.HasPrefix(n, durable.TempPrefix(o.Name)) }) {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > staleTempAge {
			os.Remove(filepath.Join(dir, n))
		}
	}
}

// holds reports whether p is already a regular file of size bytes whose
// SHA-256 is sum, with the permissions mode, so that a hit into an
// unchanged output directory rewrites nothing (and leaves the files' times
// alone, which spares build systems a relink). It compares digests, reading
// the file once through SHA-256 and never the output's bytes. A file found
// to hold them is remembered with its stat data, as the header memo does
// (racily-clean rule included); writeOutputs asks the memo (memoHolds)
// first, so a file is not read again while its device, inode, size,
// modification and status change times stay the same: any write or
// replacement changes one of them.
func holds(p string, size int64, sum [32]byte, mode os.FileMode) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	read := time.Now()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size || fi.Mode().Perm() != mode {
		return false
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, size+1))
	if err != nil || n != size || [32]byte(h.Sum(nil)) != sum {
		return false
	}
	if key, ok := statKeyOf(fi); ok && rememberable(key, read, outputStableAge, f.Stat) {
		outputMemo.put(p, outputEntry{key: key, sum: sum, mode: mode})
	}
	return true
}

// memoHolds reports whether the output memo says p holds the bytes whose
// SHA-256 is sum with the permissions mode: p's stat data are still those
// holds remembered when it read p and found those bytes.
func memoHolds(p string, sum [32]byte, mode os.FileMode) bool {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != mode {
		return false
	}
	key, ok := statKeyOf(fi)
	if !ok {
		return false
	}
	e, hit := outputMemo.get(p)
	return hit && e.key == key && e.sum == sum && e.mode == mode
}

// blobs are the bytes of a build's outputs: a compile's objects (files,
// or entries of the store; writeOutputs checks them against their
// digests), or a hit's (stored), read from the store output by output
// only when needed, and verified by the store as it reads them. One
// build's.
type blobs struct {
	stored *cache.Hit
	objs   []*object
}

// blobs returns the bytes of r's outputs.
func (r *flightResult) blobs() *blobs {
	return &blobs{stored: r.stored, objs: r.objs}
}

// open returns a reader of output i: the hit's, which verifies the bytes
// as they stream (verified), or the object's.
func (b *blobs) open(i int) (r io.ReadCloser, verified bool) {
	if b.stored != nil {
		return b.stored.Open(i), true
	}
	r, err := b.objs[i].open()
	if err != nil {
		return io.NopCloser(failedRead{err}), false
	}
	return r, false
}

// readError remembers the error of the reader it wraps, so that a copy's
// failure is told apart: the source's (a damaged blob) or the
// destination's (a full disk).
type readError struct {
	r   io.Reader
	err error
}

func (r *readError) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// stageOutput writes output i of data, o, to a temporary file beside p
// with the permissions mode, streaming: from the store's verifying reader,
// or through SHA-256 checked against o.Digest; its size is checked either
// way. It returns the temporary file's name; on any failure it leaves no
// file. A read that fails is the reader's error (a store's damage, a
// *cache.MissError matching cache.ErrDamaged), any other an *OutputError.
func stageOutput(p string, o cache.Output, mode os.FileMode, data *blobs, i int) (string, error) {
	r, verified := data.open(i)
	defer r.Close()
	src := &readError{r: r}
	h := sha256.New()
	var in io.Reader = src
	if !verified {
		in = io.TeeReader(src, h)
	}
	tmp, n, err := writeTemp(p, io.LimitReader(in, o.Size+1), mode)
	switch {
	case src.err != nil:
		return "", fmt.Errorf("output %s: %w", o.Name, src.err)
	case err != nil:
		return "", &OutputError{Name: o.Name, Err: err}
	case n != o.Size || !verified && [32]byte(h.Sum(nil)) != o.Digest:
		os.Remove(tmp)
		return "", &OutputError{Name: o.Name, Err: errors.New("bytes do not match the output's digest; nothing written")}
	}
	return tmp, nil
}

// check reads every output of a hit through the store's verifying
// reader: its damage is a *cache.MissError matching cache.ErrDamaged.
func (b *blobs) check() error {
	for i := range b.stored.Entry.Outputs {
		r := b.stored.Open(i)
		_, err := io.Copy(io.Discard, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// outputMemo remembers the outputs holds found in place.
var outputMemo memo[string, outputEntry]

type outputEntry struct {
	key  statKey
	sum  [32]byte
	mode os.FileMode
}

// outputStableAge is stableAge for outputs (tests lower it).
var outputStableAge = stableAge

// writeTemp writes what r yields, with mode, to a new temporary file for p
// (named as durable.IsTemp expects, so sweepStaleTemps knows it) and
// returns its name and size; on failure nothing is left.
func writeTemp(p string, r io.Reader, mode os.FileMode) (_ string, n int64, err error) {
	f, err := durable.CreateTemp(p, 0o600)
	if err != nil {
		return "", 0, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if n, err = io.Copy(f, r); err != nil {
		return "", 0, err
	}
	if err = f.Chmod(mode); err != nil {
		return "", 0, err
	}
	if err = f.Close(); err != nil {
		return "", 0, err
	}
	return tmp, n, nil
}

// pack returns the cache outputs of a compile: the shared objects and, last,
// the ChipCallable blob, streamed into a file of a new build directory
// under tmpDir (registry.WriteChipCallable: no binary is whole in
// memory); release removes that directory.
func pack(req *api.Request, res *compileResult, tmpDir string) (outs []cache.Output, objs []*object, release func(), err error) {
	cc := registry.ChipCallable{
		Signature:   req.Signature,
		FuncName:    req.Orchestration.Function,
		ConfigName:  req.Orchestration.Config,
		ScalarCount: req.ScalarCount,
	}
	bins := []*object{res.binaries["orchestration"]}
	for _, k := range req.Kernels {
		cc.Children = append(cc.Children, registry.Child{FuncID: k.FuncID, Core: registry.CoreCallable{Signature: k.Signature}})
		bins = append(bins, res.binaries[kernelRole(k.FuncID)])
	}
	sizes := make([]uint64, len(bins))
	for i, b := range bins {
		sizes[i] = uint64(b.size)
	}
	dir, release, err := newBuildDir(tmpDir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pack chip callable: build directory: %w", err)
	}
	packs.Add(1)
	p := filepath.Join(dir, CallableName)
	blob, err := writeObject(p, func(w io.Writer) error {
		_, err := registry.WriteChipCallable(w, &cc, sizes, func(j int) (io.ReadCloser, error) { return bins[j].open() })
		return err
	})
	if err != nil {
		release()
		return nil, nil, nil, fmt.Errorf("pack chip callable: %w", err)
	}
	outs, objs = packOutputs(req, res, blob)
	return outs, objs, release, nil
}

// writeObject creates file p, writes it with write through SHA-256 and
// returns its object.
func writeObject(p string, write func(io.Writer) error) (*object, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	return &object{size: fi.Size(), digest: [32]byte(h.Sum(nil)), path: p}, nil
}

func kernelRole(funcID int32) string { return fmt.Sprintf("kernel.%d", funcID) }
