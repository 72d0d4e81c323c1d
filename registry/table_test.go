package registry

// The TargetTable's own rules, tested where they live (the Registrar's and
// the child's tests in registry/worker exercise them again through child
// processes):
//
//	Descriptor mismatch     TestTargetTableDescriptorMismatch
//	Target refcount         TestTargetTableRefcount
//	Unregister cleanup      TestTargetTableReleaseOrder

import (
	"crypto/sha256"
	"testing"
)

// tableCallable returns a ChipCallable payload, its a2a3sim descriptor's
// digest and its hashid.
func tableCallable(t *testing.T, tag string) (payload []byte, descDigest [32]byte, h Hashid) {
	t.Helper()
	c := &ChipCallable{Signature: []Direction{In, Out}, FuncName: "orch", Binary: []byte(tag)}
	payload, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ChipDescriptor("a2a3sim", "rt", payload)
	if err != nil {
		t.Fatal(err)
	}
	return payload, sha256.Sum256(d), ComputeHashid(d)
}

func wantCode(t *testing.T, what string, err error, code ErrorCode) {
	t.Helper()
	if CodeOf(err) != code {
		t.Fatalf("%s: %v; want %s", what, err, code)
	}
}

func TestTargetTableDescriptorMismatch(t *testing.T) {
	tt := NewTargetTable(LocalChip, 4)
	payload, dd, h := tableCallable(t, "a")
	pd := sha256.Sum256(payload)
	_, otherDD, other := tableCallable(t, "b")

	// A descriptor the target recomputed that is not the hashid's.
	_, err := tt.Install(h, ChipCallableKind, otherDD, pd)
	wantCode(t, "install under a foreign descriptor", err, HashidDescriptorMismatch)
	if n, _ := tt.Len(); n != 0 {
		t.Fatalf("a mismatch installed %d hashids", n)
	}
	// Through the payload path: the payload recomputes to another hashid.
	_, err = tt.InstallPayload(other, ChipCallableKind, "a2a3sim", "rt", payload)
	wantCode(t, "install a payload under another hashid", err, HashidDescriptorMismatch)

	if _, err := tt.Install(h, ChipCallableKind, dd, pd); err != nil {
		t.Fatal(err)
	}
	// Installed already: another payload digest or kind is a mismatch and
	// takes no reference.
	_, err = tt.Install(h, ChipCallableKind, dd, sha256.Sum256([]byte("other payload")))
	wantCode(t, "install with another payload digest", err, HashidDescriptorMismatch)
	if r := tt.Refs(h); r != 1 {
		t.Fatalf("refs %d after a refused install, want 1", r)
	}
	_, err = tt.Install(h, PythonSerializedKind, dd, pd)
	wantCode(t, "install another kind", err, CallableKindUnsupported)
}

func TestTargetTableRefcount(t *testing.T) {
	tt := NewTargetTable(LocalChip, 2)
	payload, _, h := tableCallable(t, "a")
	s1, err := tt.InstallPayload(h, ChipCallableKind, "a2a3sim", "rt", payload)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := tt.InstallPayload(h, ChipCallableKind, "a2a3sim", "rt", payload)
	if err != nil || s2 != s1 {
		t.Fatalf("second install: slot %d, %v; want the same slot %d", s2, err, s1)
	}
	if r := tt.Refs(h); r != 2 {
		t.Fatalf("refs %d after two installs, want 2", r)
	}
	if e, ok := tt.Entry(h); !ok || e.Refs != 2 || e.Hashid != h {
		t.Fatalf("entry %+v %v", e, ok)
	}
	// The first release keeps it installed.
	if freed, err := tt.Release(h); freed || err != nil {
		t.Fatalf("first release: freed %v, %v", freed, err)
	}
	if s, err := tt.Resolve(h); err != nil || s != s1 {
		t.Fatalf("resolve with one reference left: %d, %v", s, err)
	}
	if freed, err := tt.Release(h); !freed || err != nil {
		t.Fatalf("second release: freed %v, %v", freed, err)
	}
	_, err = tt.Resolve(h)
	wantCode(t, "resolve after the last release", err, HashidNotInstalled)
	_, err = tt.Release(h)
	wantCode(t, "release once more", err, HashidNotInstalled)
	if n, slots := tt.Len(); n != 0 || slots != 2 {
		t.Fatalf("len %d/%d", n, slots)
	}
	// Slots are independent of hashids: two others take the two slots.
	p2, _, h2 := tableCallable(t, "b")
	p3, _, h3 := tableCallable(t, "c")
	p4, _, h4 := tableCallable(t, "d")
	for _, c := range []struct {
		h Hashid
		p []byte
	}{{h2, p2}, {h3, p3}} {
		if _, err := tt.InstallPayload(c.h, ChipCallableKind, "a2a3sim", "rt", c.p); err != nil {
			t.Fatal(err)
		}
	}
	_, err = tt.InstallPayload(h4, ChipCallableKind, "a2a3sim", "rt", p4)
	wantCode(t, "a third hashid in two slots", err, LocalSlotExhausted)
}

// TestTargetTableReleaseOrder: at the final release the hashid stops
// resolving before the release hook clears the slot; while the hook runs
// the hashid is tombstoned; afterwards the slot is free again.
func TestTargetTableReleaseOrder(t *testing.T) {
	tt := NewTargetTable(LocalChip, 1)
	payload, _, h := tableCallable(t, "a")
	slot, err := tt.InstallPayload(h, ChipCallableKind, "a2a3sim", "rt", payload)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	tt.SetReleaseHook(func(s int, got Hashid) {
		calls++
		if s != slot || got != h {
			t.Errorf("hook for slot %d %v, want %d %v", s, got, slot, h)
		}
		if _, err := tt.Resolve(h); CodeOf(err) != HashidNotInstalled {
			t.Errorf("resolve during slot cleanup: %v; want %s", err, HashidNotInstalled)
		}
		if _, ok := tt.Entry(h); ok {
			t.Error("the entry is visible during slot cleanup")
		}
		if _, err := tt.InstallPayload(h, ChipCallableKind, "a2a3sim", "rt", payload); CodeOf(err) != RegisterTombstoneActive {
			t.Errorf("install during slot cleanup: %v; want %s", err, RegisterTombstoneActive)
		}
		if _, err := tt.Release(h); CodeOf(err) != UnregisterTombstoneActive {
			t.Errorf("release during slot cleanup: %v; want %s", err, UnregisterTombstoneActive)
		}
	})
	if freed, err := tt.Release(h); !freed || err != nil {
		t.Fatalf("release: %v %v", freed, err)
	}
	if calls != 1 {
		t.Fatalf("release hook ran %d times, want 1", calls)
	}
	if s, err := tt.InstallPayload(h, ChipCallableKind, "a2a3sim", "rt", payload); err != nil || s != slot {
		t.Fatalf("install after cleanup: slot %d, %v", s, err)
	}
}
