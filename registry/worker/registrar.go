package worker

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ptojit/ptojit/registry"
)

// CallableHandle is the public token of one live registration. Its exported
// fields are the callable's stable identity; it carries no slot. Only a
// Registrar creates valid handles: a handle built from its public fields is
// forged, one whose fields were changed is mutated, one that was
// unregistered is stale, one from another Registrar is foreign. Submit and
// unregister paths take a CallableHandle (never a bare hashid string) and
// validate it with the Registrar that returned it.
//
// A CallableHandle is a value; copies are the same handle. Safe for
// concurrent use.
type CallableHandle struct {
	Hashid          registry.Hashid
	Kind            registry.Kind
	TargetNamespace registry.Namespace

	id    uint64     // registration id, unique within owner, never reused
	owner *Registrar // the Registrar that returned the handle
}

// String returns "CallableHandle(KIND, NAMESPACE, hashid)".
func (h CallableHandle) String() string {
	return fmt.Sprintf("CallableHandle(%v, %s, %v)", h.Kind, h.TargetNamespace, h.Hashid)
}

// Target is one endpoint that installs callables: a local child worker's
// resolver domain (LOCAL_CHIP or LOCAL_PYTHON). Register installs hashid
// from the payload (recomputing its descriptor) or increments its refcount;
// Unregister drops one reference.
//
// Register reports a definite refusal, after which the target installed
// nothing, by returning an error that contains a *Error (for example
// HASHID_DESCRIPTOR_MISMATCH or LOCAL_SLOT_EXHAUSTED from a TargetTable) and
// is not a context error. Any other error (a timeout, a dead child, a broken
// reply) means the outcome is unknown.
//
// Implementations must be safe for concurrent use by one Registrar.
type Target interface {
	ID() int
	Namespace() registry.Namespace
	Register(ctx context.Context, h registry.Hashid, kind registry.Kind, payload []byte) error
	Unregister(ctx context.Context, h registry.Hashid) error
}

// Registrar is a Worker's parent-side live-registration table. It publishes
// a handle only after every target in the registration scope installed the
// hashid, keeps the scope of each live handle for Unregister, and refuses,
// for its whole lifetime, every target/hashid pair whose cleanup could not be
// confirmed (REGISTER_CLEANUP_UNCERTAIN).
//
// Registration failure contract (Register):
//
//  1. The descriptor's hashid is computed; every target in scope must belong
//     to the kind's namespace and no target/hashid pair may be uncertain,
//     else nothing is sent.
//  2. An unpublished entry with a fresh registration id is allocated.
//  3. REGISTER goes to every target at once; each reports its own status.
//  4. All succeeded: the entry is published and the handle returned.
//  5. Otherwise the entry is dropped and no handle exists. UNREGISTER goes,
//     in reverse scope order, only to the targets that confirmed; a target
//     whose cleanup fails, or whose register outcome is unknown (see
//     Target), is marked uncertain for this hashid. The error has code
//     REGISTER_PARTIAL_FAILURE and wraps every target error and a
//     REGISTER_CLEANUP_UNCERTAIN error per newly uncertain target.
//
// Cleanup runs with a context that is not cancelled with the caller's.
//
// A Registrar is safe for concurrent use. Callers must not unregister a
// handle while a run may still submit it (the seed's dispatch contract).
type Registrar struct {
	mu        sync.Mutex // guards the fields below; never held while a Target is called
	nextID    uint64
	pending   map[uint64]*registration // allocated, not yet published
	live      map[uint64]*registration
	uncertain map[pairKey]struct{}
}

type pairKey struct {
	target int
	hashid registry.Hashid
}

type registration struct {
	hashid  registry.Hashid
	kind    registry.Kind
	ns      registry.Namespace
	payload []byte
	targets []Target
}

// NewRegistrar returns an empty Registrar.
func NewRegistrar() *Registrar {
	return &Registrar{
		pending:   map[uint64]*registration{},
		live:      map[uint64]*registration{},
		uncertain: map[pairKey]struct{}{},
	}
}

func regErr(code registry.ErrorCode, op string, worker int, ns registry.Namespace, h registry.Hashid, cause error) *registry.Error {
	return &registry.Error{Code: code, WorkerID: worker, Namespace: ns, Hashid: h.String(), Op: op, Err: cause}
}

// definiteRefusal reports whether a target's register error guarantees that
// the target installed nothing.
func definiteRefusal(err error) bool {
	var e *registry.Error
	return errors.As(err, &e) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// checkDescriptorHeader checks the schema version and kind at the start of a
// descriptor.
func checkDescriptorHeader(kind registry.Kind, descriptor []byte) error {
	if len(descriptor) < 8 {
		return fmt.Errorf("descriptor is %d bytes, shorter than its 8-byte header", len(descriptor))
	}
	v, k := binary.LittleEndian.Uint32(descriptor), binary.LittleEndian.Uint32(descriptor[4:])
	if v != registry.DescriptorSchemaVersion || registry.Kind(k) != kind {
		return fmt.Errorf("descriptor schema %d kind %d, want schema %d kind %d", v, k, registry.DescriptorSchemaVersion, uint32(kind))
	}
	return nil
}

// Register installs a callable on every target in scope and returns its
// handle. descriptor is the canonical descriptor of payload (ChipDescriptor
// or PythonDescriptor); targets is the whole scope (every active endpoint of
// the kind's namespace; it may be empty before any child started, see
// Attach). Repeated calls return independent handles with the same hashid.
func (r *Registrar) Register(ctx context.Context, kind registry.Kind, payload, descriptor []byte, targets []Target) (CallableHandle, error) {
	const op = "register"
	h := registry.ComputeHashid(descriptor)
	ns, err := registry.NamespaceOf(kind)
	if err != nil {
		return CallableHandle{}, regErr(registry.CallableKindUnsupported, op, registry.NoWorker, "", h, fmt.Errorf("%v", kind))
	}
	if err := checkDescriptorHeader(kind, descriptor); err != nil {
		return CallableHandle{}, regErr(registry.HashidDescriptorMismatch, op, registry.NoWorker, ns, h, err)
	}
	seen := map[int]bool{}
	for _, t := range targets {
		if t.Namespace() != ns {
			return CallableHandle{}, regErr(registry.TargetNamespaceMismatch, op, t.ID(), ns, h, fmt.Errorf("target is in namespace %s", t.Namespace()))
		}
		if seen[t.ID()] {
			return CallableHandle{}, regErr(registry.TargetNamespaceMismatch, op, t.ID(), ns, h, errors.New("target appears twice in the scope"))
		}
		seen[t.ID()] = true
	}

	reg := &registration{hashid: h, kind: kind, ns: ns, payload: payload, targets: slices.Clone(targets)}
	r.mu.Lock()
	for _, t := range targets {
		if _, bad := r.uncertain[pairKey{t.ID(), h}]; bad {
			r.mu.Unlock()
			return CallableHandle{}, regErr(registry.RegisterCleanupUncertain, op, t.ID(), ns, h, errors.New("an earlier cleanup of this hashid on this worker was not confirmed; restart the Worker"))
		}
	}
	r.nextID++
	id := r.nextID
	r.pending[id] = reg
	r.mu.Unlock()

	errs := broadcast(targets, func(t Target) error { return t.Register(ctx, h, kind, payload) })

	failed := slices.IndexFunc(errs, func(e error) bool { return e != nil })
	if failed < 0 {
		r.mu.Lock()
		delete(r.pending, id)
		r.live[id] = reg
		r.mu.Unlock()
		return CallableHandle{Hashid: h, Kind: kind, TargetNamespace: ns, id: id, owner: r}, nil
	}

	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()

	var causes []error
	for i, e := range errs {
		if e != nil {
			causes = append(causes, fmt.Errorf("worker %d: %w", targets[i].ID(), e))
		}
	}
	cctx := context.WithoutCancel(ctx)
	for i := len(targets) - 1; i >= 0; i-- {
		t := targets[i]
		switch {
		case errs[i] == nil:
			if err := t.Unregister(cctx, h); err != nil {
				r.markUncertain(t.ID(), h)
				causes = append(causes, regErr(registry.RegisterCleanupUncertain, "register cleanup", t.ID(), ns, h, err))
			}
		case !definiteRefusal(errs[i]):
			r.markUncertain(t.ID(), h)
			causes = append(causes, regErr(registry.RegisterCleanupUncertain, "register cleanup", t.ID(), ns, h, errors.New("register outcome unknown")))
		}
	}
	return CallableHandle{}, regErr(registry.RegisterPartialFailure, op, targets[failed].ID(), ns, h, errors.Join(causes...))
}

// broadcast calls f on every target concurrently and returns the errors in
// target order.
func broadcast(targets []Target, f func(Target) error) []error {
	errs := make([]error, len(targets))
	if len(targets) == 1 {
		errs[0] = f(targets[0])
		return errs
	}
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { errs[i] = f(t) })
	}
	wg.Wait()
	return errs
}

func (r *Registrar) markUncertain(target int, h registry.Hashid) {
	r.mu.Lock()
	r.uncertain[pairKey{target, h}] = struct{}{}
	r.mu.Unlock()
}

// Uncertain reports whether the target/hashid pair is refused for the
// Registrar's lifetime because a cleanup was not confirmed.
func (r *Registrar) Uncertain(targetID int, h registry.Hashid) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.uncertain[pairKey{targetID, h}]
	return ok
}

// Validate checks that h is a live handle returned by this Registrar with
// unchanged fields: HANDLE_FORGED, HANDLE_FOREIGN, HANDLE_STALE or
// HANDLE_MUTATED otherwise.
func (r *Registrar) Validate(h CallableHandle) error {
	_, err := r.lookup("validate", h)
	return err
}

func (r *Registrar) lookup(op string, h CallableHandle) (*registration, error) {
	fail := func(code registry.ErrorCode, why string) (*registration, error) {
		return nil, regErr(code, op, registry.NoWorker, h.TargetNamespace, h.Hashid, errors.New(why))
	}
	if h.owner == nil || h.id == 0 {
		return fail(registry.HandleForged, "handle was not returned by a registration")
	}
	if h.owner != r {
		return fail(registry.HandleForeign, "handle belongs to another Worker")
	}
	r.mu.Lock()
	reg, ok := r.live[h.id]
	r.mu.Unlock()
	if !ok {
		return fail(registry.HandleStale, "handle was unregistered")
	}
	if reg.hashid != h.Hashid || reg.kind != h.Kind || reg.ns != h.TargetNamespace {
		return fail(registry.HandleMutated, "handle fields differ from its registration")
	}
	return reg, nil
}

// ValidateFor checks h like Validate and that the execution path, which
// resolves namespace ns, can resolve it (HANDLE_NAMESPACE_MISMATCH).
func (r *Registrar) ValidateFor(h CallableHandle, ns registry.Namespace) error {
	if _, err := r.lookup("validate", h); err != nil {
		return err
	}
	if h.TargetNamespace != ns {
		return regErr(registry.HandleNamespaceMismatch, "validate", registry.NoWorker, h.TargetNamespace, h.Hashid, fmt.Errorf("execution path resolves %s", ns))
	}
	return nil
}

// CheckDispatch is the submit-time preflight for sending h to one target:
// ValidateFor(h, ns), and the target/hashid pair must not be uncertain
// (REGISTER_CLEANUP_UNCERTAIN). It does not pin the registration.
func (r *Registrar) CheckDispatch(h CallableHandle, ns registry.Namespace, targetID int) error {
	if err := r.ValidateFor(h, ns); err != nil {
		return err
	}
	if r.Uncertain(targetID, h.Hashid) {
		return regErr(registry.RegisterCleanupUncertain, "dispatch", targetID, ns, h.Hashid, errors.New("hashid is uncertain on this worker"))
	}
	return nil
}

// Unregister consumes a live handle: it becomes stale at once, and every
// target of its registration scope is told to drop one reference. A target
// that fails is marked uncertain for the hashid; the error then has code
// REGISTER_CLEANUP_UNCERTAIN and wraps each failure. Other live handles with
// the same hashid stay valid.
func (r *Registrar) Unregister(ctx context.Context, h CallableHandle) error {
	const op = "unregister"
	if _, err := r.lookup(op, h); err != nil {
		return err
	}
	r.mu.Lock()
	reg, ok := r.live[h.id]
	var targets []Target
	if ok {
		delete(r.live, h.id)
		targets = slices.Clone(reg.targets)
	}
	r.mu.Unlock()
	if !ok { // a concurrent Unregister consumed it first
		return regErr(registry.HandleStale, op, registry.NoWorker, h.TargetNamespace, h.Hashid, errors.New("handle was unregistered"))
	}
	slices.Reverse(targets)
	errs := broadcast(targets, func(t Target) error { return t.Unregister(ctx, h.Hashid) })
	var causes []error
	first := registry.NoWorker
	for i, e := range errs {
		if e != nil {
			r.markUncertain(targets[i].ID(), h.Hashid)
			causes = append(causes, fmt.Errorf("worker %d: %w", targets[i].ID(), e))
			if first == registry.NoWorker {
				first = targets[i].ID()
			}
		}
	}
	if len(causes) > 0 {
		return regErr(registry.RegisterCleanupUncertain, op, first, reg.ns, h.Hashid, errors.Join(causes...))
	}
	return nil
}

// Attach adds a target that started after registrations were made: every
// live registration of the target's namespace is installed on it, once per
// live handle (so its refcounts match), and the target joins those
// registrations' scopes, except those whose hashid is uncertain on the
// target's id: that pair stays blocked for the Registrar's lifetime, so the
// target is neither sent it nor joins its scope. On the first failure the installs Attach made are
// undone (a failed undo marks the pair uncertain) and the target joins no
// scope; the error has code REGISTER_PARTIAL_FAILURE. Attach must not run
// concurrently with Register calls of the same namespace (their scope would
// miss t); concurrent Unregister calls are handled.
func (r *Registrar) Attach(ctx context.Context, t Target) error {
	const op = "attach"
	r.mu.Lock()
	ids := make([]uint64, 0, len(r.live))
	for id, reg := range r.live {
		_, uncertain := r.uncertain[pairKey{t.ID(), reg.hashid}]
		if reg.ns == t.Namespace() && !uncertain && !slices.ContainsFunc(reg.targets, func(x Target) bool { return x.ID() == t.ID() }) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	regs := make([]*registration, len(ids))
	for i, id := range ids {
		regs[i] = r.live[id]
	}
	r.mu.Unlock()

	for i, reg := range regs {
		err := t.Register(ctx, reg.hashid, reg.kind, reg.payload)
		if err == nil {
			continue
		}
		causes := []error{fmt.Errorf("worker %d: %w", t.ID(), err)}
		if !definiteRefusal(err) {
			r.markUncertain(t.ID(), reg.hashid)
		}
		cctx := context.WithoutCancel(ctx)
		for j := i - 1; j >= 0; j-- {
			if uerr := t.Unregister(cctx, regs[j].hashid); uerr != nil {
				r.markUncertain(t.ID(), regs[j].hashid)
				causes = append(causes, regErr(registry.RegisterCleanupUncertain, "attach cleanup", t.ID(), reg.ns, regs[j].hashid, uerr))
			}
		}
		return regErr(registry.RegisterPartialFailure, op, t.ID(), reg.ns, reg.hashid, errors.Join(causes...))
	}

	// Join the scopes; a handle unregistered meanwhile never saw t, so t's
	// reference for it is dropped here.
	var gone []registry.Hashid
	r.mu.Lock()
	for i, id := range ids {
		if reg, ok := r.live[id]; ok && reg == regs[i] {
			reg.targets = append(reg.targets, t)
		} else {
			gone = append(gone, regs[i].hashid)
		}
	}
	r.mu.Unlock()
	var causes []error
	for _, h := range gone {
		if err := t.Unregister(context.WithoutCancel(ctx), h); err != nil {
			r.markUncertain(t.ID(), h)
			causes = append(causes, regErr(registry.RegisterCleanupUncertain, "attach cleanup", t.ID(), t.Namespace(), h, err))
		}
	}
	return errors.Join(causes...)
}

// Detach takes every target with id out of every live registration's
// scope: the target's process is gone, and a replacement has the same id
// and attaches afresh. The uncertain pairs of id stay: seed 000 blocks a
// marked digest until the Worker restarts, and a replacement is no
// restart. Like Attach, it must not run concurrently with Register or
// Unregister calls.
func (r *Registrar) Detach(id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, reg := range r.live {
		reg.targets = slices.DeleteFunc(reg.targets, func(t Target) bool { return t.ID() == id })
	}
}

// Live returns the handles of every live registration, in registration
// order.
func (r *Registrar) Live() []CallableHandle {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]CallableHandle, 0, len(r.live))
	for id, reg := range r.live {
		out = append(out, CallableHandle{Hashid: reg.hashid, Kind: reg.kind, TargetNamespace: reg.ns, id: id, owner: r})
	}
	slices.SortFunc(out, func(a, b CallableHandle) int { return cmp.Compare(a.id, b.id) })
	return out
}
