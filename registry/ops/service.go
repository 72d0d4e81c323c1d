package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/opquery"
	"github.com/ptojit/ptojit/registry/worker"
)

// Service resolves operations among the enabled modules of a store and
// executes them on a Worker's chip children. Safe for concurrent use.
type Service struct {
	store    *module.Store
	w        *worker.Worker
	platform string
	runtime  string
	chips    int

	mu      sync.Mutex // the registry lock: resolution, activations, handle set
	acts    map[actKey]*activation
	mods    map[string]*modRef // by module digest: its activation on the children
	handles map[*Handle]struct{}
	pkgs    map[string]*module.Package // by digest: packages are immutable
	next    int                        // round-robin over children
	closed  bool
}

// actKey names a callable of one module (two modules may ship the same
// callable).
type actKey struct {
	module string // the module's digest
	hashid registry.Hashid
}

// modRef is a module activated on the children: its callables registered
// and their module init run. The last callable activation that goes away
// deactivates it (module shutdown, unregistration).
type modRef struct {
	act  *ModuleActivation
	refs int
}

// activation is a callable of an activated module: negotiation and handles
// use it; when the last user is gone it drops its module's reference.
type activation struct {
	key      actKey
	mod      *modRef
	h        worker.CallableHandle
	refs     int
	tensors  int // tensor arguments of its chip signature
	scalars  int // scalar arguments of its chip signature
	verified bool
	// offeredTo are the consumer callables it is offered to on the
	// children's host operation service.
	offeredTo map[registry.Hashid]bool
}

// Config configures a Service.
type Config struct {
	Store *module.Store
	// Worker is a started Worker with ChipWorkers chip children (ids
	// 0..ChipWorkers-1) running Platform.
	Worker      *worker.Worker
	ChipWorkers int
	Platform    string
	// Runtime is the Worker's runtime: candidates built for another are
	// rejected (their hashids would differ).
	Runtime string
}

// New returns a Service over the enabled modules of cfg.Store.
func New(cfg Config) *Service {
	return &Service{store: cfg.Store, w: cfg.Worker, platform: cfg.Platform, runtime: cfg.Runtime, chips: cfg.ChipWorkers,
		acts: map[actKey]*activation{}, mods: map[string]*modRef{}, handles: map[*Handle]struct{}{}, pkgs: map[string]*module.Package{}}
}

// Candidates returns every implementation the enabled modules provide, in
// load order of their modules, descriptors parsed. Descriptors that do not
// parse (a module installed before the schema existed) are left out.
func (s *Service) Candidates() ([]*Candidate, error) {
	mods, err := s.store.LoadOrder()
	if err != nil {
		return nil, err
	}
	cands, _ := CandidatesOf(mods)
	return cands, nil
}

// CandidatesOf returns the implementations mods provide (the enabled
// modules in load order, as Store.LoadOrder returns them), and one error per
// descriptor that does not parse (left out: a module installed before the
// operation schema existed resolves nothing until it is repacked).
func CandidatesOf(mods []*module.Installed) ([]*Candidate, []error) {
	byID := map[string]*module.Installed{}
	for _, m := range mods {
		byID[m.PackageID] = m
	}
	var deps func(id string, seen map[string]bool)
	deps = func(id string, seen map[string]bool) {
		m := byID[id]
		if m == nil {
			return
		}
		for _, d := range m.Manifest.Dependencies {
			if !seen[d.ModuleID] {
				seen[d.ModuleID] = true
				deps(d.ModuleID, seen)
			}
		}
	}
	var out []*Candidate
	var problems []error
	for _, m := range mods {
		seen := map[string]bool{}
		deps(m.PackageID, seen)
		var ds []string
		for id := range seen {
			ds = append(ds, id)
		}
		slices.Sort(ds)
		for i, op := range m.Manifest.Operations {
			d, err := ParseDescriptor(op.Raw)
			if err != nil {
				problems = append(problems, fmt.Errorf("module %s: operations[%d]: %w (left out)", m.ID(), i, err))
				continue
			}
			out = append(out, &Candidate{Desc: d, Module: m.PackageID, ModuleVersion: m.Version, Deps: ds, Runtime: m.Manifest.Runtime, installed: m})
		}
	}
	return out, problems
}

// Resolve finds the best implementation for q, negotiates it on a child and
// returns a handle that owns it: its module and the modules it depends on
// stay pinned and its callable registered until Release. The Result lists
// the compatible candidates in order and every rejected one with its
// reason; on *NotFoundError the Result is set and the handle nil.
func (s *Service) Resolve(ctx context.Context, q Query) (*Handle, *Result, error) {
	// q is a copy, and opquery.Match writes only its SyncMode; the tensors
	// each candidate is negotiated on and bound to are Match's copies of
	// q.Tensors, so the caller's later changes do not reach the handle.
	mods, err := s.store.LoadOrder()
	if err != nil {
		return nil, nil, err
	}
	cands, _ := CandidatesOf(mods)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("ops: the service is closed")
	}
	n := &childNegotiator{s: s, ctx: ctx}
	defer n.release()
	res, err := resolve(cands, &q, []string{s.platform}, s.runtime, n)
	var nf *NotFoundError
	if errors.As(err, &nf) && res != nil {
		s.rejectRevoked(res, q.OpName)
	}
	if err != nil {
		return nil, res, err
	}
	ch := res.Compatible[0]
	h, err := s.bind(ctx, ch, n.acts[ch.ImplID], cands, mods)
	if err != nil {
		return nil, res, err
	}
	return h, res, nil
}

// rejectRevoked adds a rejection of kind "revoked" for every operation
// named op of an installed module that a revocation disabled, so that a
// resolution that finds nothing names the revocation. Called with s.mu
// held.
func (s *Service) rejectRevoked(res *Result, op string) {
	all, err := s.store.List()
	if err != nil {
		return
	}
	for _, m := range all {
		if m.Enabled {
			continue
		}
		var re *module.RevokedError
		if err := s.store.CheckLoad(m); !errors.As(err, &re) {
			continue
		}
		for _, o := range m.Manifest.Operations {
			d, err := ParseDescriptor(o.Raw)
			if err != nil || d.OpName != op {
				continue
			}
			res.Rejected = append(res.Rejected, Rejection{ImplID: d.ImplID, Module: m.PackageID, Kind: "revoked",
				Reason: "revoked (the module is disabled): " + re.Error()})
		}
	}
}

// bind makes the handle of a chosen candidate: pins, one more reference on
// its activation, and the operations of the modules it depends on
// activated and offered to the children's host operation service. mods
// are the enabled modules the resolution saw. Called with s.mu held.
func (s *Service) bind(ctx context.Context, ch Choice, act *activation, cands []*Candidate, mods []*module.Installed) (*Handle, error) {
	c := ch.cand
	pins, err := s.pinModules(c, mods)
	if err != nil {
		return nil, err
	}
	unpin := func() {
		for _, p := range pins {
			p.Release()
		}
	}
	var deps []*activation
	var depCands []*Candidate // by position in deps
	undo := func(err error) (*Handle, error) {
		for _, d := range deps {
			s.deactivate(ctx, d)
		}
		unpin()
		return nil, err
	}
	for _, dc := range cands {
		if !slices.Contains(c.Deps, dc.Module) || dc.Runtime != s.runtime ||
			!slices.ContainsFunc(dc.Desc.Callables, func(oc module.OperationCallable) bool { return oc.Platform == s.platform }) {
			continue
		}
		da, err := s.activate(ctx, dc, s.platform)
		if err != nil {
			return undo(fmt.Errorf("ops: %s depends on %s: %w", c.Module, dc.Desc.ImplID, err))
		}
		deps = append(deps, da)
		depCands = append(depCands, dc)
	}
	// Offer each dependency's operations to the callables of the modules
	// that declare it: the handle's own and those of its dependencies.
	users := append([]*Candidate{c}, depCands...)
	userActs := append([]*activation{act}, deps...)
	for k, da := range deps {
		dc := depCands[k]
		desc, err := json.Marshal(dc.Desc.Descriptor)
		if err != nil {
			return undo(err)
		}
		for u, uc := range users {
			if !declares(uc, dc.Module) || da.offeredTo[userActs[u].h.Hashid] {
				continue
			}
			op := worker.ProvidedOp{OpName: dc.Desc.OpName, OpVersion: dc.Desc.OpVersion.String(), ImplID: dc.Desc.ImplID,
				Priority: int32(dc.Desc.Priority), Module: dc.Module, Descriptor: desc, Consumer: userActs[u].h.Hashid.Digest()}
			if err := s.w.Provide(da.h, op); err != nil {
				return undo(fmt.Errorf("ops: offering %s to the host operation service: %w", dc.Desc.ImplID, err))
			}
			if da.offeredTo == nil {
				da.offeredTo = map[registry.Hashid]bool{}
			}
			da.offeredTo[userActs[u].h.Hashid] = true
		}
	}
	act.refs++
	h := &Handle{s: s, choice: ch, desc: *c.Desc, act: act, deps: deps, pins: pins, workerID: s.pickWorker()}
	s.handles[h] = struct{}{}
	return h, nil
}

// pinModules pins the module of c and its dependencies for c's operation,
// then checks that the versions resolved (mods) are still the enabled
// ones and still loadable: a revocation disables without waiting for
// pins. On failure it releases the pins it took.
func (s *Service) pinModules(c *Candidate, mods []*module.Installed) ([]*module.Pin, error) {
	op := c.Desc.OpName
	var pins []*module.Pin
	unpin := func() {
		for _, p := range pins {
			p.Release()
		}
	}
	for _, id := range append([]string{c.Module}, c.Deps...) {
		p, err := s.store.Pin(id, op)
		if err != nil {
			unpin()
			return nil, err
		}
		pins = append(pins, p)
	}
	// Pinned: no change can replace the module or its dependencies now.
	// Check that the versions resolved are still the enabled ones, and
	// still loadable (a revocation disables without waiting for pins).
	seen := map[string]*module.Installed{}
	for _, m := range mods {
		seen[m.PackageID] = m
	}
	for _, id := range append([]string{c.Module}, c.Deps...) {
		was := seen[id]
		m, err := s.store.Lookup(id)
		if err != nil || was == nil || !m.Enabled || m.Digest != was.Digest {
			unpin()
			return nil, fmt.Errorf("ops: module %s changed while %s was resolved; resolve again", id, op)
		}
		if err := s.store.CheckLoad(m); err != nil {
			unpin()
			return nil, fmt.Errorf("ops: %s: %w", op, err)
		}
	}
	return pins, nil
}

// declares reports whether c's module declares a dependency on the module
// with package id dep.
func declares(c *Candidate, dep string) bool {
	return slices.ContainsFunc(c.installed.Manifest.Dependencies, func(d module.Dependency) bool { return d.ModuleID == dep })
}

// pickWorker returns a live child, round-robin. Called with s.mu held.
func (s *Service) pickWorker() int {
	ids := s.chipIDs()
	for range ids {
		id := ids[s.next%len(ids)]
		s.next++
		if s.w.Alive(id) {
			return id
		}
	}
	return -1
}

func (s *Service) chipIDs() []int {
	ids := make([]int, s.chips)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// activate activates the module of c on the children (once: its callables
// registered, their implementation ids checked and their module init run,
// see ActivateModule) and returns the activation of c's callable for
// platform, with one more reference. Called with s.mu held.
func (s *Service) activate(ctx context.Context, c *Candidate, platform string) (*activation, error) {
	var oc *module.OperationCallable
	for i := range c.Desc.Callables {
		if c.Desc.Callables[i].Platform == platform {
			oc = &c.Desc.Callables[i]
		}
	}
	if oc == nil {
		return nil, fmt.Errorf("no callable for %s", platform)
	}
	hid, err := registry.ParseHashid(oc.Hashid)
	if err != nil {
		return nil, fmt.Errorf("callable hashid: %w", err)
	}
	key := actKey{c.installed.Digest, hid}
	if a := s.acts[key]; a != nil {
		a.refs++
		return a, nil
	}
	mr := s.mods[c.installed.Digest]
	if mr == nil {
		// Its native code is about to run: the trust store as committed
		// now decides (a revoked module's init never runs).
		if err := s.store.CheckLoad(c.installed); err != nil {
			return nil, err
		}
		p := s.pkgs[c.installed.Digest]
		if p == nil {
			// Authenticated again: archive, signature, artifacts and hashids.
			if p, err = s.store.ReadPackage(c.installed); err != nil {
				return nil, err
			}
			s.pkgs[c.installed.Digest] = p
		}
		mods, err := s.store.LoadOrder()
		if err != nil {
			return nil, err
		}
		ma, err := ActivateModule(ctx, s.w, s.chipIDs(), p, platform, ProvidedBy(mods, c.Module))
		if err != nil {
			return nil, err
		}
		mr = &modRef{act: ma}
		s.mods[c.installed.Digest] = mr
	}
	h, ok := mr.act.Handle(oc.Artifact)
	blob := s.pkgs[c.installed.Digest].Artifact(oc.Artifact)
	cc, err := registry.ParseChipCallable(blob)
	if !ok || err != nil || h.Hashid != hid {
		if mr.refs == 0 {
			s.dropModule(ctx, c.installed.Digest, mr)
		}
		return nil, fmt.Errorf("module %s: callable %s of %s is not what its activation registered", c.installed.ID(), oc.Artifact, c.Desc.ImplID)
	}
	mr.refs++
	a := &activation{key: key, mod: mr, h: h, refs: 1}
	for _, d := range cc.Signature {
		if d != registry.Scalar {
			a.tensors++
		} else {
			a.scalars++
		}
	}
	s.acts[key] = a
	return a, nil
}

// deactivate drops one reference; the last drops its module's reference,
// and the module's last deactivates it: its module shutdown runs on the
// children and its callables are unregistered. Called with s.mu held. A
// child that died holds nothing any more: its failure is not an error.
func (s *Service) deactivate(ctx context.Context, a *activation) error {
	a.refs--
	if a.refs > 0 {
		return nil
	}
	delete(s.acts, a.key)
	a.mod.refs--
	if a.mod.refs > 0 {
		return nil
	}
	return s.dropModule(ctx, a.key.module, a.mod)
}

// dropModule deactivates a module nothing uses any more. Called with s.mu
// held.
func (s *Service) dropModule(ctx context.Context, digest string, mr *modRef) error {
	delete(s.mods, digest)
	return mr.act.Deactivate(context.WithoutCancel(ctx))
}

// childNegotiator negotiates on a child: it activates each candidate for
// the resolution and keeps the activations until release.
type childNegotiator struct {
	s    *Service
	ctx  context.Context
	acts map[string]*activation // by impl_id
}

// negotiateParams pairs a descriptor's parameters with the values the
// query's parameters were encoded to (opquery.Fit.Scalars, in the same
// order), as the provider's validate and scratch query see them.
func negotiateParams(specs []opquery.ParamSpec, values []uint64) []worker.OpParam {
	var out []worker.OpParam
	for i, p := range specs {
		if i < len(values) {
			out = append(out, worker.OpParam{Name: p.Name, Version: p.Version, Type: opquery.ParamTypeCode(p.Type), Value: values[i]})
		}
	}
	return out
}

func (n *childNegotiator) negotiate(ch *Choice, q *Query) error {
	s := n.s
	a, err := s.activate(n.ctx, ch.cand, ch.Platform)
	var ae *ActivationError
	if errors.As(err, &ae) {
		return &rejectErr{kind: "activation", reason: "activation: " + err.Error()}
	}
	var re *module.RevokedError
	if errors.As(err, &re) {
		return &rejectErr{kind: "revoked", reason: "revoked: " + err.Error()}
	}
	var ke *module.KernelABIError
	if errors.As(err, &ke) {
		return &rejectErr{kind: "kernel_abi", reason: "kernel ABI: " + err.Error()}
	}
	if err != nil {
		return err
	}
	if n.acts == nil {
		n.acts = map[string]*activation{}
	}
	n.acts[ch.ImplID] = a
	d := ch.cand.Desc
	if a.scalars != len(d.Params) {
		return &rejectErr{kind: "parameter", reason: fmt.Sprintf("parameter: the callable takes %d scalars, the descriptor declares %d parameters", a.scalars, len(d.Params))}
	}
	args := worker.NegotiateArgs{Inputs: d.Inputs, SyncMode: uint32(q.SyncMode), Params: negotiateParams(d.Params, ch.scalars)}
	for _, t := range ch.tensors {
		args.Tensors = append(args.Tensors, worker.OpTensor{DType: uint32(t.DType), Shape: t.Shape, Strides: t.Strides})
	}
	var last error
	for range 2 { // a child that dies negotiating is retired; try another
		id := s.pickWorker()
		if id < 0 {
			return errors.New("no live child to negotiate on")
		}
		res, err := s.w.Negotiate(id, a.h, args)
		var nr *worker.NegotiationRefusal
		if registry.CodeOf(err) == worker.NegotiationRejected && errors.As(err, &nr) {
			return &rejectErr{kind: nr.Stage.String(), reason: nr.Stage.String() + ": " + nr.Message}
		}
		if err != nil {
			last = err
			var ee *worker.EndpointError
			if errors.As(err, &ee) {
				continue
			}
			return err
		}
		if res.ImplID != d.ImplID {
			return &rejectErr{kind: "impl_id", reason: fmt.Sprintf("impl_id: the orchestration reports %q, the manifest declares %q", res.ImplID, d.ImplID)}
		}
		want := d.Inputs + d.Outputs
		if res.DeviceScratch > 0 {
			want++
		}
		if res.HostScratch > 0 {
			want++
		}
		if a.tensors != want {
			return &rejectErr{kind: "scratch", reason: fmt.Sprintf("scratch: the callable takes %d tensors; %d inputs, %d outputs and the scratch asked for need %d", a.tensors, d.Inputs, d.Outputs, want)}
		}
		a.verified = true
		ch.HostScratch, ch.DeviceScratch = res.HostScratch, res.DeviceScratch
		return nil
	}
	return last
}

// release drops the resolution's activations (a chosen one keeps the
// handle's own reference).
func (n *childNegotiator) release() {
	for _, a := range n.acts {
		n.s.deactivate(n.ctx, a)
	}
}

// Handles returns the live handles.
func (s *Service) Handles() []*Handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs []*Handle
	for h := range s.handles {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b *Handle) int { return strings.Compare(a.choice.ImplID, b.choice.ImplID) })
	return hs
}

// LiveHandlesError is a Close with handles not yet released.
type LiveHandlesError struct{ Operations []string }

func (e *LiveHandlesError) Error() string {
	return fmt.Sprintf("ops: closing with %d live handles (%s): release every handle before closing", len(e.Operations), strings.Join(e.Operations, ", "))
}

// Close ends the service. Live handles are a caller error: they are
// reported (*LiveHandlesError) and released. Every module the service
// activated is deactivated: the children run its module shutdown.
func (s *Service) Close(ctx context.Context) error {
	hs := s.Handles()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	var e *LiveHandlesError
	if len(hs) > 0 {
		e = &LiveHandlesError{}
		for _, h := range hs {
			e.Operations = append(e.Operations, h.choice.ImplID)
			h.Release(ctx)
		}
	}
	// Every module still activated is deactivated: its shutdown runs.
	s.mu.Lock()
	var errs []error
	for d, mr := range s.mods {
		errs = append(errs, s.dropModule(ctx, d, mr))
	}
	clear(s.acts)
	s.mu.Unlock()
	if e != nil {
		return e
	}
	return errors.Join(errs...)
}
