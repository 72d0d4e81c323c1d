package worker

// The seed's Validation table for the Registrar, with fake targets
// (descriptor hashes, shared vectors and hashid parsing are tested in
// package registry):
//
//	Descriptor mismatch        TestDescriptorMismatch
//	No public slot             TestNoPublicSlot
//	Submit handle only         TestHandleValidation (a handle built from a hashid is forged)
//	Private slot resolve       TestWholeScopeRegister, TestSlotIndependence
//	Slot independence          TestSlotIndependence
//	Duplicate register         TestDuplicateRegisterAndTargetRefcount
//	Target refcount            TestDuplicateRegisterAndTargetRefcount, TestSlotExhaustion
//	Whole-scope register       TestWholeScopeRegister
//	Pre-start register         TestPreStartRegisterAttach
//	Partial register failure   TestPartialRegisterFailure, TestUnknownRegisterOutcome
//	Cleanup uncertainty        TestRegistrarCleanupUncertainty
//	Unregister cleanup         TestRegistrarUnregisterCleanup
//	Unsupported kind           TestUnsupportedKindAndNamespace
//	No slot consistency        TestSlotIndependence
//
// L3 run unchanged, task frame digest and post-start register need child
// processes: validation_test.go.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ptojit/ptojit/registry"
)

// fakeTarget is an in-process Target backed by a TargetTable, with injected
// faults and a log of the control operations it received.
type fakeTarget struct {
	id       int
	table    *registry.TargetTable
	platform string // the platform it recomputes chip descriptors for

	mu             sync.Mutex
	log            []string
	failRegister   error // returned by Register without installing
	failUnregister error // returned by Unregister without releasing
}

func newFake(id int, ns registry.Namespace, slots int) *fakeTarget {
	t := registry.NewTargetTable(ns, slots)
	t.SetWorkerID(id)
	return &fakeTarget{id: id, table: t, platform: "a2a3sim"}
}

func (f *fakeTarget) ID() int                       { return f.id }
func (f *fakeTarget) Namespace() registry.Namespace { return f.table.Namespace() }

func (f *fakeTarget) Register(ctx context.Context, h registry.Hashid, kind registry.Kind, payload []byte) error {
	f.mu.Lock()
	f.log = append(f.log, "register")
	fail := f.failRegister
	f.mu.Unlock()
	if fail != nil {
		return fail
	}
	_, err := f.table.InstallPayload(h, kind, f.platform, "rt", payload)
	return err
}

func (f *fakeTarget) Unregister(ctx context.Context, h registry.Hashid) error {
	f.mu.Lock()
	f.log = append(f.log, "unregister")
	fail := f.failUnregister
	f.mu.Unlock()
	if fail != nil {
		return fail
	}
	_, err := f.table.Release(h)
	return err
}

func (f *fakeTarget) ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// orderLog records the order in which several targets saw unregisters.
type orderTarget struct {
	*fakeTarget
	order *[]int
	mu    *sync.Mutex
}

func (o orderTarget) Unregister(ctx context.Context, h registry.Hashid) error {
	o.mu.Lock()
	*o.order = append(*o.order, o.id)
	o.mu.Unlock()
	return o.fakeTarget.Unregister(ctx, h)
}

func targets(fs ...*fakeTarget) []Target {
	out := make([]Target, len(fs))
	for i, f := range fs {
		out[i] = f
	}
	return out
}

// chipCallable returns a ChipCallable payload and its a2a3sim descriptor.
func chipCallable(t testing.TB, tag string) ([]byte, []byte) {
	t.Helper()
	c := &registry.ChipCallable{Signature: []registry.Direction{registry.In, registry.Out}, FuncName: "orch", Binary: []byte(tag)}
	blob, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := registry.ChipDescriptor("a2a3sim", "rt", blob)
	if err != nil {
		t.Fatal(err)
	}
	return blob, d
}

func pyCallable(t testing.TB, tag string) ([]byte, []byte) {
	t.Helper()
	spyc := registry.AppendSPYC(nil, []byte(tag))
	d, err := registry.PythonDescriptor(spyc)
	if err != nil {
		t.Fatal(err)
	}
	return spyc, d
}

func TestWholeScopeRegister(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	fs := []*fakeTarget{newFake(0, registry.LocalChip, 4), newFake(1, registry.LocalChip, 4), newFake(2, registry.LocalChip, 4)}
	blob, desc := chipCallable(t, "k")
	h, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(fs...))
	if err != nil {
		t.Fatal(err)
	}
	if h.Hashid != registry.ComputeHashid(desc) || h.Kind != registry.ChipCallableKind || h.TargetNamespace != registry.LocalChip {
		t.Fatalf("handle %v", h)
	}
	for _, f := range fs {
		if f.table.Refs(h.Hashid) != 1 {
			t.Errorf("target %d: refs %d", f.id, f.table.Refs(h.Hashid))
		}
		if _, err := f.table.Resolve(h.Hashid); err != nil {
			t.Errorf("target %d: %v", f.id, err)
		}
	}
	if err := r.Validate(h); err != nil {
		t.Fatal(err)
	}
	if err := r.Unregister(ctx, h); err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if _, err := f.table.Resolve(h.Hashid); !errors.Is(err, registry.HashidNotInstalled) {
			t.Errorf("target %d after unregister: %v", f.id, err)
		}
	}
}

func TestDuplicateRegisterAndTargetRefcount(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	fs := []*fakeTarget{newFake(0, registry.LocalPython, 2), newFake(1, registry.LocalPython, 2)}
	spyc, desc := pyCallable(t, "lambda")
	h1, err1 := r.Register(ctx, registry.PythonSerializedKind, spyc, desc, targets(fs...))
	h2, err2 := r.Register(ctx, registry.PythonSerializedKind, spyc, desc, targets(fs...))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if h1 == h2 || h1.Hashid != h2.Hashid {
		t.Fatalf("handles %#v %#v: want distinct handles with one hashid", h1, h2)
	}
	for _, f := range fs {
		if n := f.table.Refs(h1.Hashid); n != 2 {
			t.Fatalf("target %d refs %d, want 2", f.id, n)
		}
		if installed, _ := f.table.Len(); installed != 1 {
			t.Fatalf("target %d: %d installed, want one shared entry", f.id, installed)
		}
	}
	if err := r.Unregister(ctx, h1); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(h2); err != nil {
		t.Fatalf("unregistering h1 invalidated h2: %v", err)
	}
	if err := r.Validate(h1); !errors.Is(err, registry.HandleStale) {
		t.Fatalf("h1 after unregister: %v", err)
	}
	for _, f := range fs {
		if _, err := f.table.Resolve(h2.Hashid); err != nil || f.table.Refs(h2.Hashid) != 1 {
			t.Fatalf("target %d: h2 no longer resolves: %v", f.id, err)
		}
	}
	if err := r.Unregister(ctx, h1); !errors.Is(err, registry.HandleStale) {
		t.Fatalf("second unregister of h1: %v", err)
	}
	if err := r.Unregister(ctx, h2); err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if installed, _ := f.table.Len(); installed != 0 {
			t.Fatalf("target %d still holds %d", f.id, installed)
		}
	}
}

func TestSlotIndependence(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	a, b := newFake(0, registry.LocalChip, 4), newFake(1, registry.LocalChip, 4)
	// b already holds two other callables, so its free slot differs.
	for _, tag := range []string{"x", "y"} {
		blob, desc := chipCallable(t, tag)
		if _, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(b)); err != nil {
			t.Fatal(err)
		}
	}
	blob, desc := chipCallable(t, "shared")
	h, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(a, b))
	if err != nil {
		t.Fatal(err)
	}
	sa, errA := a.table.Resolve(h.Hashid)
	sb, errB := b.table.Resolve(h.Hashid)
	if errA != nil || errB != nil || sa == sb {
		t.Fatalf("slots %d (%v) and %d (%v): want different private slots", sa, errA, sb, errB)
	}
	if err := r.CheckDispatch(h, registry.LocalChip, a.id); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckDispatch(h, registry.LocalChip, b.id); err != nil {
		t.Fatal(err)
	}
}

// TestNoPublicSlot: the handle's public fields are identity only, and no
// exported Registrar method returns an integer.
func TestNoPublicSlot(t *testing.T) {
	ht := reflect.TypeFor[CallableHandle]()
	var exported []string
	for f := range ht.Fields() {
		if f.IsExported() {
			exported = append(exported, f.Name+" "+f.Type.String())
		}
	}
	want := []string{"Hashid registry.Hashid", "Kind registry.Kind", "TargetNamespace registry.Namespace"}
	if !slices.Equal(exported, want) {
		t.Fatalf("CallableHandle exported fields %v, want %v", exported, want)
	}
	rt := reflect.TypeFor[*Registrar]()
	for m := range rt.Methods() {
		for i := range m.Type.NumOut() {
			switch m.Type.Out(i).Kind() {
			case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
				t.Errorf("Registrar.%s returns %v", m.Name, m.Type.Out(i))
			}
		}
	}
}

func TestPartialRegisterFailure(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	var order []int
	var mu sync.Mutex
	f0, f1, f2, f3 := newFake(0, registry.LocalChip, 4), newFake(1, registry.LocalChip, 0), newFake(2, registry.LocalChip, 4), newFake(3, registry.LocalChip, 4)
	f3.failRegister = &registry.Error{Code: registry.HashidDescriptorMismatch, WorkerID: 3}
	ts := []Target{orderTarget{f0, &order, &mu}, orderTarget{f1, &order, &mu}, orderTarget{f2, &order, &mu}, orderTarget{f3, &order, &mu}}
	blob, desc := chipCallable(t, "k")
	h, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, ts)
	if h != (CallableHandle{}) {
		t.Fatalf("a handle was returned: %v", h)
	}
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, registry.LocalSlotExhausted) || !errors.Is(err, registry.HashidDescriptorMismatch) {
		t.Fatalf("err = %v", err)
	}
	var e *registry.Error
	if !errors.As(err, &e) || e.WorkerID != 1 || e.Namespace != registry.LocalChip || e.Hashid != registry.ComputeHashid(desc).String() || e.Op != "register" {
		t.Fatalf("error fields %+v", e)
	}
	// Reverse cleanup, only to the targets that confirmed.
	if !slices.Equal(order, []int{2, 0}) {
		t.Fatalf("cleanup order %v, want [2 0]", order)
	}
	for _, f := range []*fakeTarget{f0, f1, f2, f3} {
		if installed, _ := f.table.Len(); installed != 0 {
			t.Errorf("target %d still holds the callable", f.id)
		}
		if r.Uncertain(f.id, registry.ComputeHashid(desc)) {
			t.Errorf("target %d marked uncertain after a confirmed cleanup", f.id)
		}
	}
	if len(r.Live()) != 0 {
		t.Fatalf("live registrations after failure: %v", r.Live())
	}
	// The failure left nothing behind: the same callable registers on a
	// scope that can hold it.
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(f0, f2)); err != nil {
		t.Fatal(err)
	}
}

func TestRegistrarCleanupUncertainty(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	f0, f1, f2 := newFake(0, registry.LocalChip, 4), newFake(1, registry.LocalChip, 4), newFake(2, registry.LocalChip, 4)
	blob, desc := chipCallable(t, "k")
	hid := registry.ComputeHashid(desc)
	// A live handle with the same hashid, registered on f0 only.
	live, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(f0))
	if err != nil {
		t.Fatal(err)
	}
	f0.failUnregister = errors.New("child did not answer")
	f1.failRegister = &registry.Error{Code: registry.LocalSlotExhausted, WorkerID: 1}
	_, err = r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(f0, f1, f2))
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, registry.RegisterCleanupUncertain) {
		t.Fatalf("err = %v", err)
	}
	if !r.Uncertain(0, hid) || r.Uncertain(1, hid) || r.Uncertain(2, hid) {
		t.Fatalf("uncertain: %v %v %v, want only target 0", r.Uncertain(0, hid), r.Uncertain(1, hid), r.Uncertain(2, hid))
	}
	if installed, _ := f2.table.Len(); installed != 0 {
		t.Fatal("target 2 was not cleaned up")
	}
	// Refused for the Registrar's lifetime, before anything is sent, even
	// once the fault is gone.
	f0.failUnregister, f1.failRegister = nil, nil
	before := len(f0.ops())
	for range 2 {
		_, err = r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(f0, f2))
		if !errors.Is(err, registry.RegisterCleanupUncertain) || registry.CodeOf(err) != registry.RegisterCleanupUncertain {
			t.Fatalf("re-register on the uncertain pair: %v", err)
		}
	}
	if len(f0.ops()) != before {
		t.Fatalf("an uncertain target was contacted: %v", f0.ops()[before:])
	}
	if err := r.CheckDispatch(live, registry.LocalChip, 0); !errors.Is(err, registry.RegisterCleanupUncertain) {
		t.Fatalf("dispatch to the uncertain target: %v", err)
	}
	// Other pairs are unaffected.
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(f1, f2)); err != nil {
		t.Fatal(err)
	}
	blob2, desc2 := chipCallable(t, "other")
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob2, desc2, targets(f0)); err != nil {
		t.Fatal(err)
	}
	// A replacement of target 0 (Detach, then Attach of a new process with
	// the same id) is no Worker restart: the pair stays blocked, the live
	// handle of that hashid is not installed on the replacement, and its
	// dispatch there is refused.
	r.Detach(0)
	n0 := newFake(0, registry.LocalChip, 4)
	if err := r.Attach(ctx, n0); err != nil {
		t.Fatalf("attach the replacement: %v", err)
	}
	if !r.Uncertain(0, hid) {
		t.Fatal("replacing target 0 lifted its uncertain pair")
	}
	if n, _ := n0.table.Len(); n != 1 || slices.Contains(n0.ops(), "unregister") {
		t.Fatalf("the replacement holds %d identities (ops %v), want only the other hashid's", n, n0.ops())
	}
	if err := r.CheckDispatch(live, registry.LocalChip, 0); !errors.Is(err, registry.RegisterCleanupUncertain) {
		t.Fatalf("dispatch to the replacement of the uncertain target: %v", err)
	}
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, []Target{n0}); !errors.Is(err, registry.RegisterCleanupUncertain) {
		t.Fatalf("re-register on the replacement: %v", err)
	}
	// A fresh Registrar (a restarted Worker) has no uncertain pairs.
	if NewRegistrar().Uncertain(0, hid) {
		t.Fatal("uncertainty leaked across Registrars")
	}
}

func TestUnknownRegisterOutcome(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	f0, f1 := newFake(0, registry.LocalPython, 4), newFake(1, registry.LocalPython, 4)
	f1.failRegister = fmt.Errorf("reply: %w", context.DeadlineExceeded)
	spyc, desc := pyCallable(t, "p")
	_, err := r.Register(ctx, registry.PythonSerializedKind, spyc, desc, targets(f0, f1))
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	// f1 may have installed: it is not sent a cleanup that could drop
	// someone else's reference, but marked uncertain.
	if got := f1.ops(); !slices.Equal(got, []string{"register"}) {
		t.Fatalf("target 1 ops %v", got)
	}
	if !r.Uncertain(1, registry.ComputeHashid(desc)) || r.Uncertain(0, registry.ComputeHashid(desc)) {
		t.Fatal("want only target 1 uncertain")
	}
}

func TestCleanupSurvivesCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := NewRegistrar()
	f0 := newFake(0, registry.LocalChip, 4)
	f1 := newFake(1, registry.LocalChip, 4)
	f1.failRegister = &registry.Error{Code: registry.LocalSlotExhausted}
	cancel()
	blob, desc := chipCallable(t, "k")
	var sawCtxErr error
	probe := ctxProbe{f0, &sawCtxErr}
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, []Target{probe, f1}); !errors.Is(err, registry.RegisterPartialFailure) {
		t.Fatal(err)
	}
	if sawCtxErr != nil {
		t.Fatalf("cleanup ran with a cancelled context: %v", sawCtxErr)
	}
	if installed, _ := f0.table.Len(); installed != 0 {
		t.Fatal("not cleaned up")
	}
}

type ctxProbe struct {
	*fakeTarget
	saw *error
}

func (p ctxProbe) Unregister(ctx context.Context, h registry.Hashid) error {
	*p.saw = ctx.Err()
	return p.fakeTarget.Unregister(ctx, h)
}

func TestHandleValidation(t *testing.T) {
	ctx := context.Background()
	r, other := NewRegistrar(), NewRegistrar()
	f := newFake(0, registry.LocalChip, 4)
	blob, desc := chipCallable(t, "k")
	h, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(f))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Register(ctx, registry.ChipCallableKind, blob, desc, nil)
	if err != nil {
		t.Fatal(err)
	}
	mutated := func(m func(*CallableHandle)) CallableHandle { c := h; m(&c); return c }
	otherHashid, _ := registry.ParseHashid("sha256:" + strings.Repeat("ab", 32))
	cases := []struct {
		name string
		h    CallableHandle
		code registry.ErrorCode
	}{
		{"zero", CallableHandle{}, registry.HandleForged},
		{"forged from public fields", CallableHandle{Hashid: h.Hashid, Kind: h.Kind, TargetNamespace: h.TargetNamespace}, registry.HandleForged},
		{"foreign", foreign, registry.HandleForeign},
		{"mutated hashid", mutated(func(c *CallableHandle) { c.Hashid = otherHashid }), registry.HandleMutated},
		{"mutated kind", mutated(func(c *CallableHandle) { c.Kind = registry.PythonSerializedKind }), registry.HandleMutated},
		{"mutated namespace", mutated(func(c *CallableHandle) { c.TargetNamespace = registry.LocalPython }), registry.HandleMutated},
	}
	for _, c := range cases {
		if err := r.Validate(c.h); !errors.Is(err, c.code) {
			t.Errorf("%s: Validate = %v, want %s", c.name, err, c.code)
		}
		before := len(f.ops())
		if err := r.Unregister(ctx, c.h); !errors.Is(err, c.code) {
			t.Errorf("%s: Unregister = %v, want %s", c.name, err, c.code)
		}
		if len(f.ops()) != before {
			t.Errorf("%s: Unregister reached a target", c.name)
		}
	}
	if err := r.ValidateFor(h, registry.LocalPython); !errors.Is(err, registry.HandleNamespaceMismatch) {
		t.Errorf("wrong namespace: %v", err)
	}
	if err := r.ValidateFor(h, registry.LocalChip); err != nil {
		t.Errorf("right namespace: %v", err)
	}
	if err := r.Validate(h); err != nil {
		t.Fatalf("the genuine handle: %v", err)
	}
	if err := r.Unregister(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(h); !errors.Is(err, registry.HandleStale) {
		t.Errorf("stale: %v", err)
	}
	if err := r.CheckDispatch(h, registry.LocalChip, 0); !errors.Is(err, registry.HandleStale) {
		t.Errorf("stale dispatch: %v", err)
	}
}

func TestUnsupportedKindAndNamespace(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	chip := newFake(0, registry.LocalChip, 4)
	py := newFake(1, registry.LocalPython, 4)
	blob, desc := chipCallable(t, "k")
	spyc, pdesc := pyCallable(t, "p")
	if _, err := r.Register(ctx, registry.Kind(7), blob, desc, targets(chip)); !errors.Is(err, registry.CallableKindUnsupported) {
		t.Errorf("kind 7: %v", err)
	}
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(chip, py)); !errors.Is(err, registry.TargetNamespaceMismatch) {
		t.Errorf("mixed scope: %v", err)
	}
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob, pdesc, targets(chip)); !errors.Is(err, registry.HashidDescriptorMismatch) {
		t.Errorf("python descriptor for a chip kind: %v", err)
	}
	if len(chip.ops())+len(py.ops()) != 0 {
		t.Fatal("a rejected registration reached a target")
	}
	// The target rejects an unsupported kind before install.
	d := sha256.Sum256(pdesc)
	if _, err := chip.table.Install(registry.ComputeHashid(pdesc), registry.PythonSerializedKind, d, sha256.Sum256(spyc)); !errors.Is(err, registry.CallableKindUnsupported) {
		t.Errorf("python kind on LOCAL_CHIP: %v", err)
	}
	if _, err := py.table.InstallPayload(registry.ComputeHashid(desc), registry.ChipCallableKind, "a2a3sim", "rt", blob); !errors.Is(err, registry.CallableKindUnsupported) {
		t.Errorf("chip kind on LOCAL_PYTHON: %v", err)
	}
	if _, err := chip.table.Install(registry.ComputeHashid(desc), registry.Kind(9), d, d); !errors.Is(err, registry.CallableKindUnsupported) {
		t.Errorf("kind 9: %v", err)
	}
	if n, _ := chip.table.Len(); n != 0 {
		t.Fatal("installed anyway")
	}
}

func TestDescriptorMismatch(t *testing.T) {
	blob, desc := chipCallable(t, "k")
	h := registry.ComputeHashid(desc)
	tbl := registry.NewTargetTable(registry.LocalChip, 4)
	// The target recomputes the descriptor for another platform.
	if _, err := tbl.InstallPayload(h, registry.ChipCallableKind, "a5sim", "rt", blob); !errors.Is(err, registry.HashidDescriptorMismatch) {
		t.Fatalf("other platform: %v", err)
	}
	// A payload that is not the one the hashid names.
	other, _ := chipCallable(t, "tampered")
	if _, err := tbl.InstallPayload(h, registry.ChipCallableKind, "a2a3sim", "rt", other); !errors.Is(err, registry.HashidDescriptorMismatch) {
		t.Fatalf("other payload: %v", err)
	}
	// Same hashid, different payload digest than the installed one.
	if _, err := tbl.Install(h, registry.ChipCallableKind, h.Digest(), sha256.Sum256(blob)); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Install(h, registry.ChipCallableKind, h.Digest(), sha256.Sum256([]byte("else"))); !errors.Is(err, registry.HashidDescriptorMismatch) {
		t.Fatalf("payload digest: %v", err)
	}
	if tbl.Refs(h) != 1 {
		t.Fatalf("a mismatch changed the refcount to %d", tbl.Refs(h))
	}
	// A malformed payload is rejected with its own code.
	if _, err := tbl.InstallPayload(h, registry.ChipCallableKind, "a2a3sim", "rt", blob[:100]); !errors.Is(err, registry.CallableBlobInvalid) {
		t.Fatalf("malformed blob: %v", err)
	}
	// Through the Registrar: the target refuses, no handle.
	r := NewRegistrar()
	f := newFake(4, registry.LocalChip, 4)
	f.platform = "a5sim"
	_, err := r.Register(context.Background(), registry.ChipCallableKind, blob, desc, targets(f))
	if !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, registry.HashidDescriptorMismatch) {
		t.Fatalf("registrar: %v", err)
	}
	if r.Uncertain(4, h) {
		t.Fatal("a definite refusal marked the target uncertain")
	}
}

func TestSlotExhaustion(t *testing.T) {
	tbl := registry.NewTargetTable(registry.LocalPython, 2)
	var hs []registry.Hashid
	for i := range 3 {
		spyc := registry.AppendSPYC(nil, fmt.Appendf(nil, "f%d", i))
		d, _ := registry.PythonDescriptor(spyc)
		hs = append(hs, registry.ComputeHashid(d))
		_, err := tbl.InstallPayload(hs[i], registry.PythonSerializedKind, "", "", spyc)
		if i < 2 && err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if !errors.Is(err, registry.LocalSlotExhausted) {
				t.Fatalf("third install: %v", err)
			}
			var e *registry.Error
			errors.As(err, &e)
			if e.Namespace != registry.LocalPython || e.Hashid != hs[2].String() || e.Op != "install" {
				t.Fatalf("error fields %+v", e)
			}
		}
	}
	// An installed hashid still gets another reference on a full table.
	e, _ := tbl.Entry(hs[0])
	if _, err := tbl.Install(hs[0], registry.PythonSerializedKind, hs[0].Digest(), e.PayloadDigest); err != nil || tbl.Refs(hs[0]) != 2 {
		t.Fatalf("ref on a full table: %v refs %d", err, tbl.Refs(hs[0]))
	}
	slot1, _ := tbl.Resolve(hs[1])
	if freed, err := tbl.Release(hs[1]); !freed || err != nil {
		t.Fatalf("release: %v %v", freed, err)
	}
	slot, err := tbl.Install(hs[2], registry.PythonSerializedKind, hs[2].Digest(), sha256.Sum256(registry.AppendSPYC(nil, []byte("f2"))))
	if err != nil || slot != slot1 {
		t.Fatalf("install after release: slot %d %v, want reused slot %d", slot, err, slot1)
	}
	if freed, err := tbl.Release(hs[0]); freed || err != nil {
		t.Fatalf("release with refs 2: freed=%v %v", freed, err)
	}
	if _, err := tbl.Release(hs[1]); !errors.Is(err, registry.HashidNotInstalled) {
		t.Fatalf("release of a freed hashid: %v", err)
	}
}

// TestRegistrarUnregisterCleanup: the final release stops resolution before the slot's
// executable state is cleared, and the slot is reusable only afterwards.
func TestRegistrarUnregisterCleanup(t *testing.T) {
	tbl := registry.NewTargetTable(registry.LocalChip, 1)
	blob, desc := chipCallable(t, "k")
	h := registry.ComputeHashid(desc)
	slot, err := tbl.InstallPayload(h, registry.ChipCallableKind, "a2a3sim", "rt", blob)
	if err != nil {
		t.Fatal(err)
	}
	blob2, desc2 := chipCallable(t, "k2")
	h2 := registry.ComputeHashid(desc2)
	var during []error
	hookSlot := -1
	tbl.SetReleaseHook(func(s int, got registry.Hashid) {
		hookSlot = s
		_, rerr := tbl.Resolve(h)
		_, ierr := tbl.InstallPayload(h, registry.ChipCallableKind, "a2a3sim", "rt", blob)
		_, uerr := tbl.Release(h)
		_, oerr := tbl.InstallPayload(h2, registry.ChipCallableKind, "a2a3sim", "rt", blob2)
		during = []error{rerr, ierr, uerr, oerr}
	})
	freed, err := tbl.Release(h)
	if !freed || err != nil {
		t.Fatal(freed, err)
	}
	if hookSlot != slot {
		t.Fatalf("hook got slot %d, want %d", hookSlot, slot)
	}
	for i, code := range []registry.ErrorCode{registry.HashidNotInstalled, registry.RegisterTombstoneActive, registry.UnregisterTombstoneActive, registry.LocalSlotExhausted} {
		if !errors.Is(during[i], code) {
			t.Errorf("during cleanup, op %d: %v, want %s", i, during[i], code)
		}
	}
	if _, err := tbl.InstallPayload(h2, registry.ChipCallableKind, "a2a3sim", "rt", blob2); err != nil {
		t.Fatalf("slot not reusable after cleanup: %v", err)
	}
	if _, err := tbl.InstallPayload(h, registry.ChipCallableKind, "a2a3sim", "rt", blob); !errors.Is(err, registry.LocalSlotExhausted) {
		t.Fatalf("tombstone left behind: %v", err)
	}
}

func TestPreStartRegisterAttach(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	blob, desc := chipCallable(t, "k")
	spyc, pdesc := pyCallable(t, "p")
	h1, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, nil)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := r.Register(ctx, registry.ChipCallableKind, blob, desc, nil)
	hp, _ := r.Register(ctx, registry.PythonSerializedKind, spyc, pdesc, nil)
	chip, py := newFake(0, registry.LocalChip, 4), newFake(1, registry.LocalPython, 4)
	if err := r.Attach(ctx, chip); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach(ctx, py); err != nil {
		t.Fatal(err)
	}
	if chip.table.Refs(h1.Hashid) != 2 || py.table.Refs(hp.Hashid) != 1 {
		t.Fatalf("refs after attach: chip %d python %d", chip.table.Refs(h1.Hashid), py.table.Refs(hp.Hashid))
	}
	if n, _ := chip.table.Len(); n != 1 {
		t.Fatalf("chip target holds %d hashids", n)
	}
	// The attached targets are in scope for unregister.
	if err := r.Unregister(ctx, h1); err != nil {
		t.Fatal(err)
	}
	if chip.table.Refs(h2.Hashid) != 1 {
		t.Fatalf("refs %d", chip.table.Refs(h2.Hashid))
	}
	if err := r.Unregister(ctx, hp); err != nil {
		t.Fatal(err)
	}
	if n, _ := py.table.Len(); n != 0 {
		t.Fatal("python target not cleaned")
	}
	// A failing attach undoes what it installed.
	late := newFake(2, registry.LocalChip, 1)
	blob3, desc3 := chipCallable(t, "k3")
	if _, err := r.Register(ctx, registry.ChipCallableKind, blob3, desc3, targets(chip)); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach(ctx, late); !errors.Is(err, registry.RegisterPartialFailure) || !errors.Is(err, registry.LocalSlotExhausted) {
		t.Fatalf("attach to a one-slot target: %v", err)
	}
	if n, _ := late.table.Len(); n != 0 {
		t.Fatal("failed attach left state behind")
	}
	if got := late.ops(); !slices.Equal(got, []string{"register", "register", "unregister"}) {
		t.Fatalf("late ops %v", got)
	}
}

func TestErrorMessages(t *testing.T) {
	r := NewRegistrar()
	f := newFake(7, registry.LocalChip, 0)
	blob, desc := chipCallable(t, "k")
	_, err := r.Register(context.Background(), registry.ChipCallableKind, blob, desc, targets(f))
	msg := err.Error()
	for _, want := range []string{"register", "worker 7", "LOCAL_CHIP", registry.ComputeHashid(desc).String(), "REGISTER_PARTIAL_FAILURE", "LOCAL_SLOT_EXHAUSTED"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "/") {
		t.Errorf("message %q contains a path separator", msg)
	}
	for _, c := range registry.Codes {
		if !strings.Contains(c.Error(), "_") || strings.ToUpper(string(c)) != string(c) {
			t.Errorf("code %q", c)
		}
	}
}

// TestConcurrentRegistrations runs registrations and unregistrations of
// shared hashids from many goroutines (meaningful under -race) and checks
// that the targets end empty.
func TestConcurrentRegistrations(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	fs := []*fakeTarget{newFake(0, registry.LocalChip, 8), newFake(1, registry.LocalChip, 8), newFake(2, registry.LocalChip, 8)}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			blob, desc := chipCallable(t, fmt.Sprint(g%3))
			for range 20 {
				h, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(fs...))
				// Goroutines with the same tag share a hashid: a register
				// that meets another's final unregister still clearing a
				// slot is refused (REGISTER_TOMBSTONE_ACTIVE, a definite
				// refusal that leaves nothing behind) and is tried again.
				for try := 0; errors.Is(err, registry.RegisterTombstoneActive) && try < 1000; try++ {
					runtime.Gosched()
					h, err = r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(fs...))
				}
				if err != nil {
					errs <- err
					return
				}
				if err := r.CheckDispatch(h, registry.LocalChip, 1); err != nil {
					errs <- err
					return
				}
				if err := r.Unregister(ctx, h); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, f := range fs {
		if n, _ := f.table.Len(); n != 0 {
			t.Fatalf("target %d holds %d", f.id, n)
		}
	}
	if len(r.Live()) != 0 {
		t.Fatal("live handles remain")
	}
}

// uncomparable is a Target whose dynamic type cannot be compared with ==.
type uncomparable struct {
	*fakeTarget
	tags []string
}

func TestAttachUncomparableTarget(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	blob, desc := chipCallable(t, "k")
	h, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(0, registry.LocalChip, 2)
	if err := r.Attach(ctx, uncomparable{f, nil}); err != nil {
		t.Fatal(err)
	}
	// Attaching the same endpoint again installs nothing more.
	if err := r.Attach(ctx, uncomparable{f, []string{"again"}}); err != nil {
		t.Fatal(err)
	}
	if f.table.Refs(h.Hashid) != 1 {
		t.Fatalf("refs %d", f.table.Refs(h.Hashid))
	}
	if err := r.Unregister(ctx, h); err != nil || f.table.Refs(h.Hashid) != 0 {
		t.Fatalf("unregister: %v refs %d", err, f.table.Refs(h.Hashid))
	}
}

// Unregistering one handle from several goroutines at once: exactly one
// call consumes it, the others report HANDLE_STALE, and the target drops
// one reference.
func TestConcurrentUnregisterOneHandle(t *testing.T) {
	ctx := context.Background()
	r := NewRegistrar()
	f := newFake(0, registry.LocalChip, 4)
	blob, desc := chipCallable(t, "u")
	for range 1000 {
		h, err := r.Register(ctx, registry.ChipCallableKind, blob, desc, targets(f))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				<-start
				errs[i] = r.Unregister(ctx, h)
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, registry.HandleStale):
				t.Fatalf("unregister: %v", err)
			}
		}
		if ok != 1 || f.table.Refs(h.Hashid) != 0 {
			t.Fatalf("%d unregisters succeeded, refs %d; want 1 and 0", ok, f.table.Refs(h.Hashid))
		}
	}
}
