package registry

import (
	"crypto/sha256"
	"errors"
	"sync"
)

// TargetTable is the identity state of one target namespace inside one
// target (a child worker endpoint):
//
//	identity_table  hashid -> local slot
//	identity_refs   hashid -> refcount
//	slot_table      local slot -> hashid, kind, descriptor and payload digests
//
// Slots are private to the target: they are returned only to the target's
// own execution engine (Install, Resolve) and must never be sent to the
// parent, put in a reply, a handle or a task frame.
//
// Install of a new hashid takes the lowest free slot; installing an
// installed hashid with the same kind and payload digest increments its
// refcount; any difference is HASHID_DESCRIPTOR_MISMATCH. Release decrements
// the refcount and, at zero, (1) removes the hashid from resolution, (2)
// calls the release hook, which clears the executable state of the slot,
// (3) frees the slot and forgets the hashid. While (2) runs the hashid is
// tombstoned: Resolve reports it not installed, Install fails with
// REGISTER_TOMBSTONE_ACTIVE and Release with UNREGISTER_TOMBSTONE_ACTIVE.
//
// A TargetTable is safe for concurrent use. Configure it (SetWorkerID,
// SetReleaseHook) before sharing it.
type TargetTable struct {
	ns       Namespace
	workerID int
	onFree   func(slot int, h Hashid)

	mu         sync.Mutex     // guards the fields below; the release hook runs without it
	identity   map[Hashid]int // installed hashid -> its slot
	slots      []slotEntry
	tombstones map[Hashid]int // hashid -> slot being cleared
}

type slotEntry struct {
	used             bool
	refs             int // 0 once the final Release began
	hashid           Hashid
	kind             Kind
	descriptorDigest [32]byte
	payloadDigest    [32]byte
}

// SlotEntry is the slot_table record of an installed hashid, for the
// target's own use (debug logs, executable state lookup).
type SlotEntry struct {
	Hashid           Hashid
	Kind             Kind
	DescriptorDigest [32]byte
	PayloadDigest    [32]byte
	Refs             int
}

// NewTargetTable returns an empty table for namespace ns with the given
// number of local slots.
func NewTargetTable(ns Namespace, slots int) *TargetTable {
	if slots < 0 {
		slots = 0
	}
	return &TargetTable{
		ns:         ns,
		workerID:   NoWorker,
		identity:   map[Hashid]int{},
		slots:      make([]slotEntry, slots),
		tombstones: map[Hashid]int{},
	}
}

// SetWorkerID sets the worker id that errors report.
func (t *TargetTable) SetWorkerID(id int) { t.workerID = id }

// SetReleaseHook sets the function that clears a slot's executable state
// during the final Release. It runs after the hashid stopped resolving and
// before the slot is reused, without the table's lock held.
func (t *TargetTable) SetReleaseHook(f func(slot int, h Hashid)) { t.onFree = f }

// Namespace returns the table's namespace.
func (t *TargetTable) Namespace() Namespace { return t.ns }

func (t *TargetTable) err(code ErrorCode, op string, h Hashid, format string, args ...any) *Error {
	e := newError(code, op, format, args...)
	e.WorkerID, e.Namespace, e.Hashid = t.workerID, t.ns, h.String()
	return e
}

// accepts reports whether the namespace resolves kind.
func (t *TargetTable) accepts(kind Kind) bool {
	ns, err := NamespaceOf(kind)
	return err == nil && ns == t.ns
}

// Install installs h, whose descriptor the target recomputed locally from the
// staged payload (descriptorDigest = sha256 of that descriptor) and whose
// staged payload has digest payloadDigest. It returns the local slot.
//
// Errors: CALLABLE_KIND_UNSUPPORTED (kind not resolved by this namespace,
// checked before anything else), HASHID_DESCRIPTOR_MISMATCH (descriptorDigest
// is not h, or h is installed with another kind or payload digest),
// REGISTER_TOMBSTONE_ACTIVE, LOCAL_SLOT_EXHAUSTED.
func (t *TargetTable) Install(h Hashid, kind Kind, descriptorDigest, payloadDigest [32]byte) (int, error) {
	const op = "install"
	if !t.accepts(kind) {
		return 0, t.err(CallableKindUnsupported, op, h, "namespace %s does not resolve %v", t.ns, kind)
	}
	if descriptorDigest != h.Digest() {
		return 0, t.err(HashidDescriptorMismatch, op, h, "recomputed descriptor has hashid %v", Hashid(descriptorDigest))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.tombstones[h]; ok {
		return 0, t.err(RegisterTombstoneActive, op, h, "final unregister still clearing its slot")
	}
	if slot, ok := t.identity[h]; ok {
		e := &t.slots[slot]
		if e.kind != kind || e.payloadDigest != payloadDigest || e.descriptorDigest != descriptorDigest {
			return 0, t.err(HashidDescriptorMismatch, op, h, "installed with another payload digest or kind")
		}
		e.refs++
		return slot, nil
	}
	for slot := range t.slots {
		if !t.slots[slot].used {
			t.slots[slot] = slotEntry{used: true, refs: 1, hashid: h, kind: kind, descriptorDigest: descriptorDigest, payloadDigest: payloadDigest}
			t.identity[h] = slot
			return slot, nil
		}
	}
	return 0, t.err(LocalSlotExhausted, op, h, "all %d local slots in use", len(t.slots))
}

// InstallPayload recomputes the descriptor of a staged payload (a
// ChipCallable blob for platform and runtime, or a SPYC envelope), and
// installs h with it; the payload digest is the SHA-256 of the staged bytes.
func (t *TargetTable) InstallPayload(h Hashid, kind Kind, platform, runtime string, payload []byte) (int, error) {
	if !t.accepts(kind) {
		return 0, t.err(CallableKindUnsupported, "install", h, "namespace %s does not resolve %v", t.ns, kind)
	}
	d, err := Descriptor(kind, platform, runtime, payload)
	if err != nil {
		var re *Error
		if errors.As(err, &re) {
			c := *re
			c.WorkerID, c.Namespace, c.Hashid, c.Op = t.workerID, t.ns, h.String(), "install: "+c.Op
			return 0, &c
		}
		return 0, err
	}
	return t.Install(h, kind, sha256.Sum256(d), sha256.Sum256(payload))
}

// Resolve returns the local slot of h: HASHID_NOT_INSTALLED when h is not
// installed or its final unregister has begun.
func (t *TargetTable) Resolve(h Hashid) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slot, ok := t.identity[h]; ok {
		return slot, nil
	}
	return 0, t.err(HashidNotInstalled, "resolve", h, "")
}

// Release drops one reference to h and reports whether that freed its slot.
// Errors: HASHID_NOT_INSTALLED, UNREGISTER_TOMBSTONE_ACTIVE.
func (t *TargetTable) Release(h Hashid) (freed bool, err error) {
	const op = "unregister"
	t.mu.Lock()
	if _, ok := t.tombstones[h]; ok {
		t.mu.Unlock()
		return false, t.err(UnregisterTombstoneActive, op, h, "final unregister still clearing its slot")
	}
	slot, ok := t.identity[h]
	if !ok {
		t.mu.Unlock()
		return false, t.err(HashidNotInstalled, op, h, "")
	}
	t.slots[slot].refs--
	if t.slots[slot].refs > 0 {
		t.mu.Unlock()
		return false, nil
	}
	// Stop resolution first; the slot stays allocated while its state is cleared.
	delete(t.identity, h)
	t.tombstones[h] = slot
	t.mu.Unlock()

	if t.onFree != nil {
		t.onFree(slot, h)
	}

	t.mu.Lock()
	t.slots[slot] = slotEntry{}
	delete(t.tombstones, h)
	t.mu.Unlock()
	return true, nil
}

// Refs returns the refcount of h (0 when not installed).
func (t *TargetTable) Refs(h Hashid) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	slot, ok := t.identity[h]
	if !ok {
		return 0
	}
	return t.slots[slot].refs
}

// Entry returns the slot_table record of an installed hashid.
func (t *TargetTable) Entry(h Hashid) (SlotEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	slot, ok := t.identity[h]
	if !ok {
		return SlotEntry{}, false
	}
	e := t.slots[slot]
	return SlotEntry{Hashid: e.hashid, Kind: e.kind, DescriptorDigest: e.descriptorDigest, PayloadDigest: e.payloadDigest, Refs: e.refs}, true
}

// Len returns the number of installed hashids and of slots.
func (t *TargetTable) Len() (installed, slots int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.identity), len(t.slots)
}
