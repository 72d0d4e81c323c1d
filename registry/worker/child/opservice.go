package child

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
// offers operations to it (PROVIDE: the operations of the modules a resolved
// implementation depends on, with their callables registered); an
// orchestration resolves and executes them from inside its own execution,
// in this process. The functions run on the thread of the task that called
// the orchestration; a child serves one mailbox operation at a time, so the
// state below needs no lock beyond the one that guards its creation.

var (
	opChild      *child // the child this process serves
	opProvided   = map[registry.Hashid]mailbox.ProvidedOp{}
	opHandles    = map[uint64]*opHandle{}
	opNextHandle uint64

	opServiceOnce sync.Once
	opServiceMem  cmem
)

// opHandle is a handle of the host operation service: valid until
// released or until the task that created it ends.
type opHandle struct {
	hashid  registry.Hashid
	implID  string
	tensors []opTensorDesc
}

type opTensorDesc struct {
	dtype   uint32
	shape   []uint64
	strides []uint64 // effective (opquery.Tensor.EffectiveStrides)
}

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
		for i, fn := range []any{opResolve, opDescribe, opScratchFn, opExecute, opRelease} {
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
func endTaskOpHandles() { clear(opHandles) }

// version is a MAJOR.MINOR.PATCH triple; a pre-release or build suffix is
// ignored here (the parent's resolution compares full semver).
type version [3]uint64

func parseVersion(s string) (version, bool) {
	s, _, _ = strings.Cut(s, "+")
	s, _, _ = strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	var v version
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func (v version) cmp(w version) int { return slices.Compare(v[:], w[:]) }

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
	if binary.LittleEndian.Uint32(r[0:]) < sizeofOpResolveReq {
		return rc(opEInvalid)
	}
	msgCap := binary.LittleEndian.Uint32(r[4:])
	msgPtr := uintptr(binary.LittleEndian.Uint64(r[40:]))
	fail := func(code int32, msg string) uintptr {
		writeMsg(msgPtr, msgCap, msg)
		return rc(code)
	}
	name := cString(uintptr(binary.LittleEndian.Uint64(r[8:])), 256)
	minS := cString(uintptr(binary.LittleEndian.Uint64(r[16:])), 64)
	maxS := cString(uintptr(binary.LittleEndian.Uint64(r[24:])), 64)
	q := uintptr(binary.LittleEndian.Uint64(r[32:]))
	if name == "" || q == 0 {
		return fail(opEInvalid, "resolve: no operation name or query")
	}
	qb := cBytes(q, sizeofOpQuery)
	nt := binary.LittleEndian.Uint32(qb[4:])
	tp := uintptr(binary.LittleEndian.Uint64(qb[16:]))
	if binary.LittleEndian.Uint32(qb[0:]) != opABIVersion || nt > mailbox.MaxOpTensors || (nt > 0 && tp == 0) {
		return fail(opEInvalid, "resolve: malformed query")
	}
	var tensors []opTensorDesc
	for i := range int(nt) {
		e := cBytes(tp+uintptr(sizeofOpTensor*i), sizeofOpTensor)
		nd := binary.LittleEndian.Uint32(e[4:])
		if nd > mailbox.MaxDims {
			return fail(opEInvalid, fmt.Sprintf("resolve: tensor %d has %d dimensions", i, nd))
		}
		t := opTensorDesc{dtype: binary.LittleEndian.Uint32(e[0:])}
		var st []uint64
		for d := range int(nd) {
			t.shape = append(t.shape, binary.LittleEndian.Uint64(e[8+8*d:]))
			st = append(st, binary.LittleEndian.Uint64(e[40+8*d:]))
		}
		if nd > 0 && st[0] > 1 {
			return fail(opEInvalid, fmt.Sprintf("resolve: tensor %d: its first axis has stride %d (the first axis is contiguous)", i, st[0]))
		}
		t.strides = opquery.Tensor{Shape: t.shape, Strides: st}.EffectiveStrides()
		tensors = append(tensors, t)
	}
	var lo, hi version
	var haveLo, haveHi bool
	if minS != "" {
		if lo, haveLo = parseVersion(minS); !haveLo {
			return fail(opEInvalid, "resolve: bad min_version "+minS)
		}
	}
	if maxS != "" {
		if hi, haveHi = parseVersion(maxS); !haveHi || !haveLo || hi[0] != lo[0] {
			return fail(opEInvalid, "resolve: max_version needs a min_version of the same major")
		}
	}
	type cand struct {
		h  registry.Hashid
		op mailbox.ProvidedOp
	}
	var cands []cand
	var newest uint64
	for h, op := range opProvided {
		if op.OpName == name {
			if v, ok := parseVersion(op.OpVersion); ok {
				newest = max(newest, v[0])
				cands = append(cands, cand{h, op})
			}
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.op.Priority != b.op.Priority {
			return int(b.op.Priority) - int(a.op.Priority)
		}
		return strings.Compare(a.op.ImplID, b.op.ImplID)
	})
	var why []string
	for _, k := range cands {
		v, _ := parseVersion(k.op.OpVersion)
		switch {
		case !haveLo && v[0] != newest,
			haveLo && (v.cmp(lo) < 0 || v[0] != lo[0]),
			haveHi && v.cmp(hi) > 0:
			why = append(why, k.op.ImplID+": version "+k.op.OpVersion)
			continue
		}
		slot, err := c.table.Resolve(k.h)
		if err != nil {
			delete(opProvided, k.h) // unregistered since
			continue
		}
		s := &c.slots[slot]
		if !s.loaded {
			if err := c.prewarm(slot); err != nil {
				why = append(why, k.op.ImplID+": "+err.Error())
				continue
			}
		}
		if !s.state.isProvider() {
			why = append(why, k.op.ImplID+": "+notProvider)
			continue
		}
		n := s.state.negotiateAt(q)
		switch {
		case n.err != "":
			why = append(why, k.op.ImplID+": "+n.err)
		case n.implID != k.op.ImplID:
			why = append(why, fmt.Sprintf("%s: the orchestration reports impl_id %q", k.op.ImplID, n.implID))
		case n.code != 0:
			why = append(why, k.op.ImplID+": validate: "+n.msg)
		case n.host > 0 || n.device > 0:
			why = append(why, k.op.ImplID+": needs scratch, which an execution cannot allocate")
		default:
			opNextHandle++
			opHandles[opNextHandle] = &opHandle{hashid: k.h, implID: k.op.ImplID, tensors: tensors}
			binary.LittleEndian.PutUint64(cBytes(handleOut, 8), opNextHandle)
			return 0
		}
	}
	msg := "no compatible implementation of " + name
	if len(why) > 0 {
		msg += ": " + strings.Join(why, "; ")
	} else {
		msg += " is offered (the host operation service offers the operations of the modules this one depends on)"
	}
	return fail(opENotFound, msg)
}

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

func opScratchFn(user, h, out uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	if opHandles[uint64(h)] == nil || out == 0 {
		return rc(opEInvalid)
	}
	b := cBytes(out, sizeofOpScratch)
	binary.LittleEndian.PutUint64(b[8:], 0)
	binary.LittleEndian.PutUint64(b[16:], 0)
	return 0
}

func opRelease(user, h uintptr) uintptr {
	if opNegotiating {
		return rc(opEReentry)
	}
	if opHandles[uint64(h)] == nil {
		return rc(opEInvalid)
	}
	delete(opHandles, uint64(h))
	return 0
}

// opExecute is ptojit_op_service.execute: the args must match the
// negotiated tensors and lie in the arena; the implementation's
// orchestration then runs on them, synchronously.
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
	r, _, _ := purego.SyscallN(s.state.entry, s.state.rt.addr(0), args)
	return r
}

func checkOpArgs(arena []byte, oh *opHandle, args uintptr) error {
	a := cBytes(args, sizeofArgs)
	nt := binary.LittleEndian.Uint32(a[4:])
	tp := uintptr(binary.LittleEndian.Uint64(a[8:]))
	var sp uintptr // the strides rows of the 1.1 tail, when the caller passed them
	if binary.LittleEndian.Uint32(a[20:]) >= sizeofArgsV11 {
		sp = uintptr(binary.LittleEndian.Uint64(cBytes(args, sizeofArgsV11)[32:]))
	}
	if binary.LittleEndian.Uint32(a[0:]) != simABIVersion || int(nt) != len(oh.tensors) || (nt > 0 && tp == 0) {
		return errors.New("tensor count")
	}
	if len(arena) == 0 {
		return errors.New("no arena")
	}
	base := uint64(uintptr(unsafe.Pointer(&arena[0])))
	for i, w := range oh.tensors {
		e := cBytes(tp+uintptr(sizeofTensor*i), sizeofTensor)
		data, n := binary.LittleEndian.Uint64(e[0:]), binary.LittleEndian.Uint64(e[8:])
		if data < base || data-base > uint64(len(arena)) || n > uint64(len(arena))-(data-base) {
			return errors.New("outside the arena")
		}
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

// provide serves PROVIDE in a chip child.
func (c *child) provide(args []byte) (mailbox.Status, mailbox.Reply) {
	d, op, err := mailbox.ParseProvideArgs(args)
	rep := mailbox.Reply{Digest: d}
	if err != nil {
		rep.Message = err.Error()
		return mailbox.StatusBadFrame, rep
	}
	if _, err := c.table.Resolve(registry.Hashid(d)); err != nil {
		rep.Message = err.Error()
		return mailbox.StatusNotInstalled, rep
	}
	opProvided[registry.Hashid(d)] = op
	return mailbox.StatusOK, rep
}
