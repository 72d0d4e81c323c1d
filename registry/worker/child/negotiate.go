package child

import (
	"encoding/binary"
	"fmt"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// negotiate serves NEGOTIATE in a chip child.
func (c *child) negotiate(args []byte) (mailbox.Status, mailbox.Reply) {
	d, blob, err := mailbox.SplitTaskArgs(args)
	if err != nil {
		return mailbox.StatusBadFrame, mailbox.Reply{Message: err.Error()}
	}
	rep := mailbox.Reply{Digest: d}
	slot, err := c.table.Resolve(registry.Hashid(d))
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusNotInstalled, rep
	}
	a, err := mailbox.ParseNegotiateArgs(blob)
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusBadFrame, rep
	}
	s := &c.slots[slot]
	if !s.loaded {
		if err := c.prewarm(slot); err != nil {
			rep.Message = err.Error()
			return mailbox.StatusPrewarmFailed, rep
		}
	}
	n, ref := s.state.negotiate(a)
	if ref != nil {
		rep.Stage, rep.Detail, rep.Message = ref.stage, uint32(ref.code), ref.msg
		return mailbox.StatusRejected, rep
	}
	rep.Message = n.Message()
	return mailbox.StatusOK, rep
}

// refusal is a negotiation refused: the step that refused, its return
// code (0 for StageProvider) and the provider's or the child's message.
type refusal struct {
	stage mailbox.NegotiateStage
	code  int32
	msg   string
}

// negotiate calls the provider's entry points. It returns the provider's
// answer, or the refusal of the step that refused.
func (s *simCallable) negotiate(a mailbox.NegotiateArgs) (mailbox.Negotiation, *refusal) {
	if !s.isProvider() {
		return mailbox.Negotiation{}, &refusal{stage: mailbox.StageProvider, msg: notProvider}
	}
	pOff := sizeofOpQueryV12 + mailbox.MaxOpTensors*sizeofOpTensor
	nOff := pOff + mailbox.MaxOpParams*sizeofOpParam // the parameters' names
	m, err := newCmem(nOff + mailbox.MaxOpParams*(mailbox.MaxOpParamName+1))
	if err != nil {
		return mailbox.Negotiation{}, &refusal{stage: mailbox.StageProvider, msg: err.Error()}
	}
	defer m.free()
	tOff := sizeofOpQueryV12
	q := m.b
	binary.LittleEndian.PutUint32(q[0:], opABIVersion)
	binary.LittleEndian.PutUint32(q[4:], uint32(len(a.Tensors)))
	binary.LittleEndian.PutUint32(q[8:], uint32(a.Inputs))
	binary.LittleEndian.PutUint32(q[12:], a.SyncMode)
	binary.LittleEndian.PutUint64(q[16:], uint64(m.addr(tOff)))
	// The 1.2 tail: the operation parameters.
	binary.LittleEndian.PutUint32(q[24:], sizeofOpQueryV12)
	binary.LittleEndian.PutUint32(q[28:], uint32(len(a.Params)))
	binary.LittleEndian.PutUint64(q[32:], uint64(m.addr(pOff)))
	for i, p := range a.Params {
		e := m.b[pOff+sizeofOpParam*i:]
		name := nOff + (mailbox.MaxOpParamName+1)*i
		copy(m.b[name:], p.Name) // NUL-terminated: the mapping is zeroed
		binary.LittleEndian.PutUint64(e[0:], uint64(m.addr(name)))
		binary.LittleEndian.PutUint32(e[8:], p.Version)
		binary.LittleEndian.PutUint32(e[12:], p.Type)
		binary.LittleEndian.PutUint64(e[16:], p.Value)
	}
	for i, t := range a.Tensors {
		e := m.b[tOff+sizeofOpTensor*i:]
		binary.LittleEndian.PutUint32(e[0:], t.DType)
		binary.LittleEndian.PutUint32(e[4:], uint32(len(t.Shape)))
		for d := range t.Shape {
			binary.LittleEndian.PutUint64(e[8+8*d:], t.Shape[d])
			if d < len(t.Strides) {
				binary.LittleEndian.PutUint64(e[40+8*d:], t.Strides[d])
			}
		}
	}
	return s.negotiateAt(m.addr(0))
}

const notProvider = "the orchestration does not export " + opImplIDSymbol + ", " + opValidateSymbol + " and " + opScratchSymbol + " (ptojit_sim.h): it is no operation provider"

func (s *simCallable) isProvider() bool {
	return s.opImplID != 0 && s.opValidate != 0 && s.opScratch != 0
}

// negotiateAt calls the provider's entry points on the ptojit_op_query at
// q. Calls into the host operation service are refused meanwhile.
func (s *simCallable) negotiateAt(q uintptr) (mailbox.Negotiation, *refusal) {
	m, err := newCmem(sizeofOpScratch + opMessageCapacity)
	if err != nil {
		return mailbox.Negotiation{}, &refusal{stage: mailbox.StageProvider, msg: err.Error()}
	}
	defer m.free()
	opNegotiating = true
	defer func() { opNegotiating = false }()
	p, _, _ := purego.SyscallN(s.opImplID)
	id := sanitizeID(cString(p, 256))
	mOff := sizeofOpScratch
	r, _, _ := purego.SyscallN(s.opValidate, q, m.addr(mOff), opMessageCapacity)
	if code := int32(uint32(r)); code != 0 {
		msg := cString(m.addr(mOff), opMessageCapacity)
		if msg == "" {
			msg = fmt.Sprintf("validate returned %d", code)
		}
		return mailbox.Negotiation{}, &refusal{stage: mailbox.StageValidate, code: code, msg: msg}
	}
	binary.LittleEndian.PutUint32(m.b[0:], opABIVersion)
	r, _, _ = purego.SyscallN(s.opScratch, q, m.addr(0))
	if code := int32(uint32(r)); code != 0 {
		return mailbox.Negotiation{}, &refusal{stage: mailbox.StageScratch, code: code, msg: fmt.Sprintf("scratch query returned %d", code)}
	}
	return mailbox.Negotiation{ImplID: id, HostScratch: binary.LittleEndian.Uint64(m.b[8:]), DeviceScratch: binary.LittleEndian.Uint64(m.b[16:])}, nil
}
