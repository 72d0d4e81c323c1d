package child

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/opquery"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// The host operation service of a chip child: the ptojit_op_service that
// the tail of every ptojit_runtime points to (ptojit_sim.h). The parent
// offers operations to it (PROVIDE: an operation of a module, its
// descriptor, and the callable of a dependent module that may call it); an
// orchestration resolves and executes them from inside its own execution,
// in this process. Resolution applies package opquery's rules, the ones the
// daemon's resolution applies, to the operations offered to the calling
// callable (the task's, or the one a nested execute runs). The functions
// run on the thread of the task that called the orchestration; a child
// serves one mailbox operation at a time, so the state below needs no lock
// beyond the one that guards its creation.

var (
	opChild      *child // the child this process serves
	opProvided   = map[registry.Hashid]*providedOp{}
	opHandles    = map[uint64]*opHandle{}
	opNextHandle uint64
	// opCaller is the callable whose native code runs now: the task's,
	// or the implementation a nested execute runs.
	opCaller registry.Hashid

	opServiceOnce sync.Once
	opServiceMem  cmem
)

// providedOp is an operation offered to the service, and the callables
// that may resolve it.
type providedOp struct {
	op        mailbox.ProvidedOp
	desc      opquery.Descriptor
	consumers map[registry.Hashid]bool
}

// opHandle is a handle of the host operation service: valid until
// released or until the task that created it ends.
type opHandle struct {
	hashid       registry.Hashid
	implID       string
	tensors      []opTensorDesc
	host, device uint64   // the scratch negotiated
	scalars      []uint64 // the parameters resolved, in the descriptor's order
	desc         cmem     // the ptojit_op_description describe_contract lends
}

type opTensorDesc struct {
	dtype   uint32
	shape   []uint64
	strides []uint64 // effective (opquery.Tensor.EffectiveStrides)
}

// C layouts of the service's tail structures.
const (
	sizeofOpResolveTail = 96 // ptojit_op_resolve_request with its tail
	sizeofOpDescription = 80
)

// opServiceAddr returns the address of this process's ptojit_op_service
// (0 if it could not be built: the tail then offers none).
func opServiceAddr() uintptr {
	opServiceOnce.Do(func() {
		m, err := newCmem(sizeofOpService)
		if err != nil {
			return
		}
		binary.LittleEndian.PutUint32(m.b[0:], sizeofOpService)
		binary.LittleEndian.PutUint32(m.b[4:], opServiceVersion)
		for i, fn := range []any{opResolve, opDescribe, opScratchFn, opExecute, opRelease, opDescribeContract} {
			binary.LittleEndian.PutUint64(m.b[16+8*i:], uint64(purego.NewCallback(fn)))
		}
		opServiceMem = m
	})
	if opServiceMem.b == nil {
		return 0
	}
	return opServiceMem.addr(0)
}

func rc(v int32) uintptr { return uintptr(uint32(v)) }

// endTaskOpHandles drops the handles the finished task did not release.
func endTaskOpHandles() {
	for _, h := range opHandles {
		h.desc.free()
	}
	clear(opHandles)
}

// cStrings reads n C strings from the array at p.
func cStrings(p uintptr, n uint32) []string {
	if p == 0 || n == 0 || n > 64 {
		return nil
	}
	arr := cBytes(p, int(8*n))
	out := make([]string, n)
	for i := range out {
		out[i] = cString(uintptr(binary.LittleEndian.Uint64(arr[8*i:])), 256)
	}
	return out
}

// readResolveTails reads the tails of the ptojit_op_resolve_request at req
// that its struct_size covers into q: exact_impl_id, capabilities,
// numerics and budgets, then the operation parameters. Without the first
// tail the query requires no capabilities and allows no scratch.
func readResolveTails(req uintptr, size uint32, q *opquery.Query) error {
	if size >= sizeofOpResolveTail {
		t := cBytes(req, sizeofOpResolveTail)
		q.ExactImplID = cString(uintptr(binary.LittleEndian.Uint64(t[48:])), 256)
		q.Capabilities = cStrings(uintptr(binary.LittleEndian.Uint64(t[56:])), binary.LittleEndian.Uint32(t[72:]))
		q.Numerics = cStrings(uintptr(binary.LittleEndian.Uint64(t[64:])), binary.LittleEndian.Uint32(t[76:]))
		q.HostBudget = int64(binary.LittleEndian.Uint64(t[80:]))
		q.DeviceBudget = int64(binary.LittleEndian.Uint64(t[88:]))
	}
	if size < sizeofOpResolveParams {
		return nil
	}
	t := cBytes(req, sizeofOpResolveParams)
	pp, n := uintptr(binary.LittleEndian.Uint64(t[96:])), binary.LittleEndian.Uint32(t[104:])
	if n > maxOpParams || (n > 0 && pp == 0) {
		return fmt.Errorf("%d parameters (at most %d)", n, maxOpParams)
	}
	for i := range uintptr(n) {
		e := cBytes(pp+sizeofOpParam*i, sizeofOpParam)
		p := opquery.Param{Name: cString(uintptr(binary.LittleEndian.Uint64(e[0:])), 256), Version: binary.LittleEndian.Uint32(e[8:]),
			Type: opquery.ParamTypeOf(binary.LittleEndian.Uint32(e[12:])), Bits: binary.LittleEndian.Uint64(e[16:])}
		if p.Type == "" {
			return fmt.Errorf("parameter %d (%s): type %d is not one of enum ptojit_param_type", i, p.Name, binary.LittleEndian.Uint32(e[12:]))
		}
		q.Params = append(q.Params, p)
	}
	return nil
}

// opParams pairs a descriptor's parameters with the values a fit encoded
// for them (opquery.Fit.Scalars, in the same order), as a provider's
// validate and scratch query see them.
func opParams(specs []opquery.ParamSpec, values []uint64) []mailbox.OpParam {
	var out []mailbox.OpParam
	for i, p := range specs {
		if i < len(values) {
			out = append(out, mailbox.OpParam{Name: p.Name, Version: p.Version, Type: opquery.ParamTypeCode(p.Type), Value: values[i]})
		}
	}
	return out
}

// opResolve is ptojit_op_service.resolve.
func opResolve(user, req, handleOut uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	c := opChild
	if c == nil || req == 0 || handleOut == 0 {
		return rc(opEInvalid)
	}
	r := cBytes(req, sizeofOpResolveReq)
	size := binary.LittleEndian.Uint32(r[0:])
	if size < sizeofOpResolveReq {
		return rc(opEInvalid)
	}
	msgCap := binary.LittleEndian.Uint32(r[4:])
	msgPtr := uintptr(binary.LittleEndian.Uint64(r[40:]))
	fail := func(code int32, msg string) uintptr {
		writeMsg(msgPtr, msgCap, msg)
		return rc(code)
	}
	q := opquery.Query{
		OpName:     cString(uintptr(binary.LittleEndian.Uint64(r[8:])), 256),
		MinVersion: cString(uintptr(binary.LittleEndian.Uint64(r[16:])), 64),
		MaxVersion: cString(uintptr(binary.LittleEndian.Uint64(r[24:])), 64),
		// Without the tail: no capabilities, and no scratch.
	}
	if err := readResolveTails(req, size, &q); err != nil {
		return fail(opEInvalid, "resolve: "+err.Error())
	}
	qp := uintptr(binary.LittleEndian.Uint64(r[32:]))
	if q.OpName == "" || qp == 0 {
		return fail(opEInvalid, "resolve: no operation name or query")
	}
	if msg := readQueryTensors(qp, &q); msg != "" {
		return fail(opEInvalid, msg)
	}
	cands, hashids := offeredCandidates(c)
	fits, rejected, err := opquery.Match(cands, &q, opquery.Env{Platforms: []string{c.init.Platform},
		Negotiate: c.negotiator(cands, hashids, &q)})
	if err != nil {
		return fail(opEInvalid, "resolve: "+err.Error())
	}
	if len(fits) == 0 {
		msg := "no compatible implementation of " + q.Describe()
		var why []string
		for _, r := range rejected {
			why = append(why, r.ImplID+": "+r.Reason)
		}
		if len(why) > 0 {
			msg += ": " + strings.Join(why, "; ")
		} else {
			msg += ": no module this one depends on offers it (the service offers the operations of the calling module's dependencies only)"
		}
		return fail(opENotFound, msg)
	}
	f := fits[0]
	p := opProvided[hashids[f.Cand]]
	oh := &opHandle{hashid: hashids[f.Cand], implID: p.desc.ImplID, host: f.HostScratch, device: f.DeviceScratch, scalars: f.Scalars}
	for _, t := range f.Tensors {
		oh.tensors = append(oh.tensors, opTensorDesc{dtype: uint32(t.DType), shape: t.Shape, strides: t.EffectiveStrides()})
	}
	if oh.desc, err = describeMem(p, f); err != nil {
		return fail(opEInvalid, "resolve: "+err.Error())
	}
	opNextHandle++
	opHandles[opNextHandle] = oh
	binary.LittleEndian.PutUint64(cBytes(handleOut, 8), opNextHandle)
	return 0
}

// readQueryTensors reads the tensors of the query struct at qp into q,
// with its sync mode. It returns the failure message of a malformed
// query, "" when it is well formed.
func readQueryTensors(qp uintptr, q *opquery.Query) string {
	qb := cBytes(qp, sizeofOpQuery)
	nt := binary.LittleEndian.Uint32(qb[4:])
	tp := uintptr(binary.LittleEndian.Uint64(qb[16:]))
	if binary.LittleEndian.Uint32(qb[0:]) != opABIVersion || nt > mailbox.MaxOpTensors || (nt > 0 && tp == 0) {
		return "resolve: malformed query"
	}
	q.SyncMode = opquery.SyncMode(binary.LittleEndian.Uint32(qb[12:]))
	for i := range int(nt) {
		e := cBytes(tp+uintptr(sizeofOpTensor*i), sizeofOpTensor)
		nd := binary.LittleEndian.Uint32(e[4:])
		if nd > mailbox.MaxDims {
			return fmt.Sprintf("resolve: tensor %d has %d dimensions", i, nd)
		}
		t := opquery.Tensor{DType: opquery.DType(binary.LittleEndian.Uint32(e[0:]))}
		strided := false
		for d := range int(nd) {
			t.Shape = append(t.Shape, binary.LittleEndian.Uint64(e[8+8*d:]))
			t.Strides = append(t.Strides, binary.LittleEndian.Uint64(e[40+8*d:]))
			strided = strided || t.Strides[d] != 0
		}
		if !strided {
			t.Strides = nil
		}
		q.Tensors = append(q.Tensors, t)
	}
	return ""
}

// offeredCandidates returns the operations offered to the caller, those
// of the modules its module declares as dependencies, with the hashids
// of their callables; it forgets the ones unregistered since.
func offeredCandidates(c *child) ([]opquery.Candidate, []registry.Hashid) {
	var cands []opquery.Candidate
	var hashids []registry.Hashid
	for h, p := range opProvided {
		if !p.consumers[opCaller] {
			continue
		}
		if _, err := c.table.Resolve(h); err != nil {
			delete(opProvided, h) // unregistered since
			continue
		}
		cands = append(cands, opquery.Candidate{Desc: &p.desc, Module: p.op.Module})
		hashids = append(hashids, h)
	}
	return cands, hashids
}

// negotiator returns the Negotiate function of a match among cands: it
// prewarms a fit's callable and asks its orchestration to validate the
// query's tensors in q's sync mode (read when the match negotiates, after
// it set the default), refusing the fit as the answer says, and takes the
// scratch sizes it asks for.
func (c *child) negotiator(cands []opquery.Candidate, hashids []registry.Hashid, q *opquery.Query) func(f *opquery.Fit) error {
	return func(f *opquery.Fit) error {
		d := cands[f.Cand].Desc
		slot, err := c.table.Resolve(hashids[f.Cand])
		if err != nil {
			return &opquery.Refusal{Kind: "provider", Reason: "provider: " + err.Error()}
		}
		s := &c.slots[slot]
		if !s.loaded {
			if err := c.prewarm(slot); err != nil {
				return &opquery.Refusal{Kind: "provider", Reason: "provider: " + err.Error()}
			}
		}
		if s.state.scalars != len(d.Params) {
			return &opquery.Refusal{Kind: "parameter", Reason: fmt.Sprintf("parameter: the callable takes %d scalars, the descriptor declares %d parameters", s.state.scalars, len(d.Params))}
		}
		args := mailbox.NegotiateArgs{Inputs: d.Inputs, SyncMode: uint32(q.SyncMode), Params: opParams(d.Params, f.Scalars)}
		for _, t := range f.Tensors {
			args.Tensors = append(args.Tensors, mailbox.OpTensor{DType: uint32(t.DType), Shape: t.Shape, Strides: t.Strides})
		}
		n, ref := s.state.negotiate(args)
		if ref != nil {
			return &opquery.Refusal{Kind: ref.stage.String(), Reason: ref.stage.String() + ": " + ref.msg}
		}
		if n.ImplID != d.ImplID {
			return &opquery.Refusal{Kind: "impl_id", Reason: fmt.Sprintf("impl_id: the orchestration reports %q", n.ImplID)}
		}
		want := d.Inputs + d.Outputs
		if n.DeviceScratch > 0 {
			want++
		}
		if n.HostScratch > 0 {
			want++
		}
		if s.state.tensors != want {
			return &opquery.Refusal{Kind: "scratch", Reason: fmt.Sprintf("scratch: the callable takes %d tensors, the scratch asked for needs %d", s.state.tensors, want)}
		}
		f.HostScratch, f.DeviceScratch = n.HostScratch, n.DeviceScratch
		return nil
	}
}

// describeMem builds the ptojit_op_description of a resolved fit outside
// the Go heap: the structure, the negotiated tensors, then the strings.
func describeMem(p *providedOp, f opquery.Fit) (cmem, error) {
	strs := []string{p.desc.ImplID, p.desc.OpName, p.desc.OpVersion.String(), p.op.Module}
	n := sizeofOpDescription + sizeofOpTensor*len(f.Tensors)
	for _, s := range strs {
		n += len(s) + 1
	}
	m, err := newCmem(n)
	if err != nil {
		return m, err
	}
	b := m.b
	binary.LittleEndian.PutUint32(b[0:], sizeofOpDescription)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(f.Tensors)))
	off := sizeofOpDescription + sizeofOpTensor*len(f.Tensors)
	for i, s := range strs {
		copy(b[off:], s)
		b[off+len(s)] = 0
		binary.LittleEndian.PutUint64(b[8+8*i:], uint64(m.addr(off)))
		off += len(s) + 1
	}
	binary.LittleEndian.PutUint64(b[40:], uint64(p.desc.Priority))
	binary.LittleEndian.PutUint32(b[48:], uint32(p.desc.Inputs))
	binary.LittleEndian.PutUint64(b[56:], f.HostScratch)
	binary.LittleEndian.PutUint64(b[64:], f.DeviceScratch)
	binary.LittleEndian.PutUint64(b[72:], uint64(m.addr(sizeofOpDescription)))
	for i, t := range f.Tensors {
		e := b[sizeofOpDescription+sizeofOpTensor*i:]
		binary.LittleEndian.PutUint32(e[0:], uint32(t.DType))
		binary.LittleEndian.PutUint32(e[4:], uint32(len(t.Shape)))
		for d := range t.Shape {
			binary.LittleEndian.PutUint64(e[8+8*d:], t.Shape[d])
			if d < len(t.Strides) {
				binary.LittleEndian.PutUint64(e[40+8*d:], t.Strides[d])
			}
		}
	}
	return m, nil
}

// opDescribe is ptojit_op_service.describe: the implementation id.
func opDescribe(user, h, buf, capacity uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	oh := opHandles[uint64(h)]
	if oh == nil {
		return rc(opEInvalid)
	}
	writeMsg(buf, uint32(capacity), oh.implID)
	return 0
}

// opDescribeContract is ptojit_op_service.describe_contract: the resolved
// descriptor, borrowed until release.
func opDescribeContract(user, h, out uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	oh := opHandles[uint64(h)]
	if oh == nil || out == 0 {
		return rc(opEInvalid)
	}
	binary.LittleEndian.PutUint64(cBytes(out, 8), uint64(oh.desc.addr(0)))
	return 0
}

func opScratchFn(user, h, out uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	oh := opHandles[uint64(h)]
	if oh == nil || out == 0 {
		return rc(opEInvalid)
	}
	b := cBytes(out, sizeofOpScratch)
	binary.LittleEndian.PutUint64(b[8:], oh.host)
	binary.LittleEndian.PutUint64(b[16:], oh.device)
	return 0
}

func opRelease(user, h uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	oh := opHandles[uint64(h)]
	if oh == nil {
		return rc(opEInvalid)
	}
	oh.desc.free()
	delete(opHandles, uint64(h))
	return 0
}

// opExecute is ptojit_op_service.execute: the args must match the
// negotiated tensors and scratch and lie in the arena; the
// implementation's orchestration then runs on them, synchronously, as the
// caller of the service meanwhile.
func opExecute(user, h, args uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	c := opChild
	oh := opHandles[uint64(h)]
	if c == nil || oh == nil || args == 0 {
		return rc(opEInvalid)
	}
	if err := checkOpArgs(c.arena, oh, args); err != nil {
		return rc(opEInvalid)
	}
	slot, err := c.table.Resolve(oh.hashid)
	if err != nil {
		return rc(opENotFound)
	}
	s := &c.slots[slot]
	if !s.loaded {
		if err := c.prewarm(slot); err != nil {
			return rc(opENotFound)
		}
	}
	pa, m, err := withParams(args, oh.scalars)
	if err != nil {
		return rc(opEInvalid)
	}
	defer m.free()
	caller := opCaller
	opCaller = oh.hashid
	r, _, _ := purego.SyscallN(s.state.entry, s.state.rt.addr(0), pa)
	opCaller = caller
	return r
}

// withParams returns the ptojit_args to hand the implementation: the
// caller's at args, which pass no scalars, or, when the handle resolved
// parameters, a copy of them (the prefix and the tail their struct_size
// covers) whose scalars are those parameters. The copy lives in the cmem
// returned.
func withParams(args uintptr, scalars []uint64) (uintptr, cmem, error) {
	a := cBytes(args, sizeofArgs)
	if binary.LittleEndian.Uint32(a[16:]) != 0 {
		return 0, cmem{}, errors.New("the caller passes scalars (the service passes the resolved parameters)")
	}
	if len(scalars) == 0 {
		return args, cmem{}, nil
	}
	n := sizeofArgs
	if binary.LittleEndian.Uint32(a[20:]) >= sizeofArgsV11 {
		n = sizeofArgsV11
	}
	m, err := newCmem(n + 8*len(scalars))
	if err != nil {
		return 0, m, err
	}
	copy(m.b, cBytes(args, n))
	for i, v := range scalars {
		binary.LittleEndian.PutUint64(m.b[n+8*i:], v)
	}
	binary.LittleEndian.PutUint32(m.b[16:], uint32(len(scalars)))
	binary.LittleEndian.PutUint64(m.b[24:], uint64(m.addr(n)))
	return m.addr(0), m, nil
}

func checkOpArgs(arena []byte, oh *opHandle, args uintptr) error {
	a := cBytes(args, sizeofArgs)
	nt := binary.LittleEndian.Uint32(a[4:])
	tp := uintptr(binary.LittleEndian.Uint64(a[8:]))
	want := len(oh.tensors)
	if oh.device > 0 {
		want++
	}
	if oh.host > 0 {
		want++
	}
	if binary.LittleEndian.Uint32(a[0:]) != simABIVersion || int(nt) != want || (nt > 0 && tp == 0) {
		return errors.New("tensor count")
	}
	var sp uintptr // the strides rows of the 1.1 tail, when the caller passed them
	if binary.LittleEndian.Uint32(a[20:]) >= sizeofArgsV11 {
		sp = uintptr(binary.LittleEndian.Uint64(cBytes(args, sizeofArgsV11)[32:]))
	}
	if len(arena) == 0 {
		return errors.New("no arena")
	}
	base := uint64(uintptr(unsafe.Pointer(&arena[0])))
	for i := range want {
		e := cBytes(tp+uintptr(sizeofTensor*i), sizeofTensor)
		data, n := binary.LittleEndian.Uint64(e[0:]), binary.LittleEndian.Uint64(e[8:])
		if data < base || data-base > uint64(len(arena)) || n > uint64(len(arena))-(data-base) {
			return errors.New("outside the arena")
		}
		if i >= len(oh.tensors) {
			// Scratch, device then host: at least what was negotiated.
			need := oh.device
			if i == want-1 && oh.host > 0 {
				need = oh.host
			}
			if n < need {
				return errors.New("scratch")
			}
			continue
		}
		w := oh.tensors[i]
		t := mailbox.Tensor{DType: mailbox.DType(binary.LittleEndian.Uint32(e[16:]))}
		nd := binary.LittleEndian.Uint32(e[20:])
		if nd > mailbox.MaxDims || uint32(t.DType) != w.dtype || int(nd) != len(w.shape) {
			return errors.New("descriptor")
		}
		for d := range int(nd) {
			t.Shape = append(t.Shape, binary.LittleEndian.Uint64(e[24+8*d:]))
		}
		if sp != 0 {
			row := cBytes(sp+uintptr(8*mailbox.MaxDims*i), 8*mailbox.MaxDims)
			for d := range int(nd) {
				t.Strides = append(t.Strides, binary.LittleEndian.Uint64(row[8*d:]))
			}
		}
		if !slices.Equal(t.Shape, w.shape) {
			return errors.New("shape")
		}
		if checkLayout(t) != nil || !slices.Equal(opquery.Tensor{Shape: t.Shape, Strides: t.Strides}.EffectiveStrides(), w.strides) {
			return errors.New("strides")
		}
		if need, ok := shapeBytes(t); t.DType.Size() == 0 || !ok || need > n {
			return errors.New("extent")
		}
	}
	return nil
}

// provide serves PROVIDE in a chip child: the operation is offered, for
// calls from the consumer callable.
func (c *child) provide(args []byte) (mailbox.Status, mailbox.Reply) {
	d, op, err := mailbox.ParseProvideArgs(args)
	rep := mailbox.Reply{Digest: d}
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusBadFrame, rep
	}
	var desc opquery.Descriptor
	if err := json.Unmarshal(op.Descriptor, &desc); err != nil || desc.ImplID != op.ImplID || desc.OpName != op.OpName {
		rep.Message = fmt.Sprintf("PROVIDE descriptor of %s does not parse as its operation's", op.ImplID)
		return mailbox.StatusBadFrame, rep
	}
	if _, err := c.table.Resolve(registry.Hashid(d)); err != nil {
		rep.Message = err.Error()
		return mailbox.StatusNotInstalled, rep
	}
	p := opProvided[registry.Hashid(d)]
	if p == nil || p.op.ImplID != op.ImplID {
		p = &providedOp{consumers: map[registry.Hashid]bool{}}
		opProvided[registry.Hashid(d)] = p
	}
	p.op, p.desc = op, desc
	p.consumers[registry.Hashid(op.Consumer)] = true
	return mailbox.StatusOK, rep
}
