package worker

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/registry"
)

// NegotiationRejected: the provider's validate or scratch query refused
// the tensors of a NEGOTIATE request; nothing was allocated or launched.
const NegotiationRejected registry.ErrorCode = "NEGOTIATION_REJECTED"

// Symbols of an operation provider's orchestration (ptojit_sim.h).
const (
	opImplIDSymbol   = "ptojit_op_impl_id"
	opValidateSymbol = "ptojit_op_validate"
	opScratchSymbol  = "ptojit_op_scratch"
)

// The C layouts of ptojit_op_query, ptojit_op_tensor and ptojit_op_scratch.
const (
	opABIVersion      = 1
	sizeofOpQuery     = 24 // abi_version, tensor_count, input_count, sync_mode, tensors
	sizeofOpTensor    = 72 // dtype, ndim, shape[4], strides[4]
	sizeofOpScratch   = 24 // ptojit_op_scratch_request: abi_version, reserved, host_bytes, device_bytes
	opMessageCapacity = 512
)

// MaxOpTensors bounds the tensors of one negotiation.
const MaxOpTensors = 16

// OpTensor is a tensor descriptor a provider negotiates on: element type,
// shape and strides in elements (0 means packed), first axis innermost.
type OpTensor struct {
	DType   uint32
	Shape   []uint64
	Strides []uint64 // empty, or one per dimension
}

// NegotiateArgs are the args of NEGOTIATE after the digest: the query's
// tensors (inputs first), how many are inputs, and the sync mode.
//
//	offset     size  field
//	0          4     u32 tensor count t (<= MaxOpTensors)
//	4          4     u32 input count (<= t)
//	8          4     u32 sync mode (1 blocking, 2 async)
//	12         4     u32 reserved 0
//	16 + 72*i  4     tensor i: u32 dtype
//	           4     u32 ndim (<= 4)
//	           32    u64 shape[4]
//	           32    u64 strides[4] (elements; 0 packed)
//
// A successful reply's message is "impl_id=ID host=N device=M": the
// provider's implementation id and its scratch request in bytes. A refusal
// (status REJECTED) carries validate's return code as detail and its
// message.
type NegotiateArgs struct {
	Inputs   int
	SyncMode uint32
	Tensors  []OpTensor
}

// Negotiation is a provider's answer: its implementation id and the
// scratch it needs for the negotiated tensors.
type Negotiation struct {
	ImplID        string
	HostScratch   uint64
	DeviceScratch uint64
}

func appendNegotiateArgs(dst []byte, a NegotiateArgs) ([]byte, error) {
	if len(a.Tensors) > MaxOpTensors || a.Inputs < 0 || a.Inputs > len(a.Tensors) {
		return dst, fmt.Errorf("negotiate: %d tensors (%d inputs), at most %d", len(a.Tensors), a.Inputs, MaxOpTensors)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a.Tensors)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(a.Inputs))
	dst = binary.LittleEndian.AppendUint32(dst, a.SyncMode)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	for i, t := range a.Tensors {
		if len(t.Shape) > MaxDims || (len(t.Strides) != 0 && len(t.Strides) != len(t.Shape)) {
			return dst, fmt.Errorf("negotiate: tensor %d: rank %d with %d strides", i, len(t.Shape), len(t.Strides))
		}
		dst = binary.LittleEndian.AppendUint32(dst, t.DType)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(t.Shape)))
		for _, v := range [][]uint64{t.Shape, t.Strides} {
			for d := range MaxDims {
				var x uint64
				if d < len(v) {
					x = v[d]
				}
				dst = binary.LittleEndian.AppendUint64(dst, x)
			}
		}
	}
	return dst, nil
}

func parseNegotiateArgs(b []byte) (NegotiateArgs, error) {
	if len(b) < 16 {
		return NegotiateArgs{}, fmt.Errorf("negotiate args of %d bytes", len(b))
	}
	t := binary.LittleEndian.Uint32(b)
	in := binary.LittleEndian.Uint32(b[4:])
	if t > MaxOpTensors || in > t || len(b) != 16+sizeofOpTensor*int(t) {
		return NegotiateArgs{}, fmt.Errorf("negotiate args: %d tensors, %d inputs, %d bytes", t, in, len(b))
	}
	a := NegotiateArgs{Inputs: int(in), SyncMode: binary.LittleEndian.Uint32(b[8:])}
	for i := range int(t) {
		e := b[16+sizeofOpTensor*i:]
		nd := binary.LittleEndian.Uint32(e[4:])
		if nd > MaxDims {
			return NegotiateArgs{}, fmt.Errorf("negotiate args: tensor %d has %d dimensions", i, nd)
		}
		ot := OpTensor{DType: binary.LittleEndian.Uint32(e), Shape: make([]uint64, nd), Strides: make([]uint64, nd)}
		for d := range int(nd) {
			ot.Shape[d] = binary.LittleEndian.Uint64(e[8+8*d:])
			ot.Strides[d] = binary.LittleEndian.Uint64(e[40+8*d:])
		}
		a.Tensors = append(a.Tensors, ot)
	}
	return a, nil
}

// Negotiate runs the provider entry points of h's orchestration on child
// id: its implementation id, validate on the tensors and, when validate
// accepts them, the scratch query. They are pure negotiation: the child
// calls nothing else of the callable. A refusal is a *registry.Error with
// code NEGOTIATION_REJECTED whose message is the provider's.
func (w *Worker) Negotiate(id int, h CallableHandle, a NegotiateArgs) (Negotiation, error) {
	e, err := w.endpoint(id)
	if err != nil {
		return Negotiation{}, err
	}
	if err := w.reg.CheckDispatch(h, e.ns, e.id); err != nil {
		return Negotiation{}, err
	}
	d := h.Hashid.Digest()
	e.mu.Lock()
	st, r, err := e.roundTrip(OpNegotiate, func(b []byte) ([]byte, error) {
		args, err := appendNegotiateArgs(append(make([]byte, 0, 16+sizeofOpTensor*len(a.Tensors)+DigestSize), d[:]...), a)
		if err != nil {
			return b, err
		}
		return AppendFrame(b, OpNegotiate, StatusOK, args)
	}, -1, 0)
	if err == nil && r.Digest != d {
		err = e.fail("negotiate", fmt.Errorf("%w: reply names %v", registry.ReplyHashidMismatch, registry.Hashid(r.Digest)))
	}
	e.mu.Unlock()
	if err != nil {
		return Negotiation{}, err
	}
	if st != StatusOK {
		return Negotiation{}, e.statusErr("negotiate", h.Hashid, st, r)
	}
	var n Negotiation
	for _, f := range strings.Fields(r.Message) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "impl_id":
			n.ImplID = v
		case "host":
			n.HostScratch, err = strconv.ParseUint(v, 10, 64)
		case "device":
			n.DeviceScratch, err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			return Negotiation{}, fmt.Errorf("negotiate: worker %d: malformed reply %q", id, r.Message)
		}
	}
	return n, nil
}

// Alive reports whether child id is still in use (not retired after a
// death, a timeout or a protocol error).
func (w *Worker) Alive(id int) bool {
	e, err := w.endpoint(id)
	return err == nil && e.active()
}

// negotiate serves NEGOTIATE in a chip child.
func (c *child) negotiate(args []byte) (Status, Reply) {
	d, blob, err := SplitTaskArgs(args)
	if err != nil {
		return StatusBadFrame, Reply{Message: err.Error()}
	}
	rep := Reply{Digest: d}
	slot, err := c.table.Resolve(registry.Hashid(d))
	if err != nil {
		rep.Message = err.Error()
		return StatusNotInstalled, rep
	}
	a, err := parseNegotiateArgs(blob)
	if err != nil {
		rep.Message = err.Error()
		return StatusBadFrame, rep
	}
	s := &c.slots[slot]
	if !s.loaded {
		if err := c.prewarm(slot); err != nil {
			rep.Message = err.Error()
			return StatusPrewarmFailed, rep
		}
	}
	code, msg := s.state.negotiate(a)
	rep.Detail, rep.Message = uint32(code), msg
	if code != 0 || strings.HasPrefix(msg, "!") {
		rep.Message = strings.TrimPrefix(msg, "!")
		return StatusRejected, rep
	}
	return StatusOK, rep
}

// negotiate calls the provider's entry points. It returns validate's or
// the scratch query's non-zero code with the provider's message, or 0 and
// the success message of NEGOTIATE. A message starting with "!" is a
// refusal with code 0 (a missing entry point).
func (s *simCallable) negotiate(a NegotiateArgs) (int32, string) {
	if !s.isProvider() {
		return 0, "!" + notProvider
	}
	m, err := newCmem(sizeofOpQuery + MaxOpTensors*sizeofOpTensor)
	if err != nil {
		return 0, "!" + err.Error()
	}
	defer m.free()
	tOff := sizeofOpQuery
	q := m.b
	binary.LittleEndian.PutUint32(q[0:], opABIVersion)
	binary.LittleEndian.PutUint32(q[4:], uint32(len(a.Tensors)))
	binary.LittleEndian.PutUint32(q[8:], uint32(a.Inputs))
	binary.LittleEndian.PutUint32(q[12:], a.SyncMode)
	binary.LittleEndian.PutUint64(q[16:], uint64(m.addr(tOff)))
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
	return 0, fmt.Sprintf("impl_id=%s host=%d device=%d", r.implID, r.host, r.device)
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

// cString copies a NUL-terminated C string of at most n bytes.
func cString(p uintptr, n int) string {
	if p == 0 {
		return ""
	}
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), n)
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(c)
	}
	return sb.String()
}
