package child

import (
	"encoding/binary"
	"fmt"
	"strings"

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
	code, msg := s.state.negotiate(a)
	rep.Detail, rep.Message = uint32(code), msg
	if code != 0 || strings.HasPrefix(msg, "!") {
		rep.Message = strings.TrimPrefix(msg, "!")
		return mailbox.StatusRejected, rep
	}
	return mailbox.StatusOK, rep
}

// negotiate calls the provider's entry points. It returns validate's or
// the scratch query's non-zero code with the provider's message, or 0 and
// the success message of NEGOTIATE. A message starting with "!" is a
// refusal with code 0 (a missing entry point).
func (s *simCallable) negotiate(a mailbox.NegotiateArgs) (int32, string) {
	if !s.isProvider() {
		return 0, "!" + notProvider
	}
	pOff := sizeofOpQueryV12 + mailbox.MaxOpTensors*sizeofOpTensor
	nOff := pOff + mailbox.MaxOpParams*sizeofOpParam // the parameters' names
	m, err := newCmem(nOff + mailbox.MaxOpParams*(mailbox.MaxOpParamName+1))
	if err != nil {
		return 0, "!" + err.Error()
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
	r := s.negotiateAt(m.addr(0))
	if r.err != "" {
		return 0, "!" + r.err
	}
	if r.code != 0 {
		return r.code, r.msg
	}
	return 0, mailbox.Negotiation{ImplID: r.implID, HostScratch: r.host, DeviceScratch: r.device}.Message()
}

const notProvider = "the orchestration does not export " + opImplIDSymbol + ", " + opValidateSymbol + " and " + opScratchSymbol + " (ptojit_sim.h): it is no operation provider"

func (s *simCallable) isProvider() bool {
	return s.opImplID != 0 && s.opValidate != 0 && s.opScratch != 0
}

// negotiated is what a provider's entry points answered.
type negotiated struct {
	code         int32
	msg, err     string // the provider's refusal; a failure of the runtime
	implID       string
	host, device uint64
}

// negotiateAt calls the provider's entry points on the ptojit_op_query at
// q. Calls into the host operation service are refused meanwhile.
func (s *simCallable) negotiateAt(q uintptr) negotiated {
	m, err := newCmem(sizeofOpScratch + opMessageCapacity)
	if err != nil {
		return negotiated{msg: err.Error(), err: err.Error()}
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
		return negotiated{code: code, msg: msg, implID: id}
	}
	binary.LittleEndian.PutUint32(m.b[0:], opABIVersion)
	r, _, _ = purego.SyscallN(s.opScratch, q, m.addr(0))
	if code := int32(uint32(r)); code != 0 {
		return negotiated{code: code, msg: fmt.Sprintf("scratch query returned %d", code), implID: id}
	}
	return negotiated{implID: id, host: binary.LittleEndian.Uint64(m.b[8:]), device: binary.LittleEndian.Uint64(m.b[16:])}
}
