package child

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/opquery"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// simLoader loads chip callables into one child process. Not safe for
// concurrent use (a child has one mailbox operation in flight).
type simLoader struct {
	dir     string  // private temporary directory of this child
	gen     int     // makes every materialized file name unique
	service uintptr // this process's ptojit_op_service, which every runtime's tail points to
}

// newSimLoader returns a loader whose callables' runtimes offer service,
// the address of a ptojit_op_service (0: none).
func newSimLoader(service uintptr) (*simLoader, error) {
	dir, err := os.MkdirTemp("", "ptojit-child-")
	if err != nil {
		return nil, err
	}
	return &simLoader{dir: dir, service: service}, nil
}

func (l *simLoader) close() { os.RemoveAll(l.dir) }

// clean removes the private directory from text that a loader produced
// (dlerror messages name the file), so no local path leaves the child.
func (l *simLoader) clean(s string) string { return strings.ReplaceAll(s, l.dir, "<private>") }

// simCallable is the executable state of one prewarmed chip callable.
type simCallable struct {
	libs   []uintptr // dlopen handles, orchestration first
	entry  uintptr
	config uintptr
	// configured is set once the config symbol ran (on the first task,
	// never at prewarm); blockDim is what it returned.
	configured bool
	blockDim   uint32
	rt         cmem // ptojit_runtime followed by the kernel entries
	tensors    int  // tensor arguments the signature takes
	scalars    int  // scalar arguments the signature takes

	// The operation provider's entry points (negotiate.go), resolved
	// during prewarm and called only by NEGOTIATE; 0 when not exported.
	opImplID, opValidate, opScratch uintptr

	// The module hooks (activate.go), resolved during prewarm and called
	// only by ACTIVATE and DEACTIVATE; 0 when not exported. activations
	// counts the ACTIVATEs not yet dropped: init ran when it became 1 and
	// shutdown runs when it returns to 0, or at release.
	modInit, modShutdown uintptr
	activations          int
}

// load materializes and opens one shared object from bytes.
func (l *simLoader) load(what string, bin []byte) (uintptr, error) {
	l.gen++
	path := filepath.Join(l.dir, fmt.Sprintf("%s-%d.so", what, l.gen))
	if err := os.WriteFile(path, bin, 0o600); err != nil {
		return 0, fmt.Errorf("materialize %s: %s", what, l.clean(err.Error()))
	}
	// The mapping outlives the file: remove it at once so nothing is left
	// behind if the child is killed.
	defer os.Remove(path)
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("dlopen %s: %s", what, l.clean(err.Error()))
	}
	return h, nil
}

// prepare loads a chip callable: the orchestration shared object, its entry
// and config symbols, and every child kernel's ptojit_kernel. It resolves
// symbols only: no code of the orchestration runs during prewarm,
// not even the config symbol, which the first task calls (configure).
func (l *simLoader) prepare(c *registry.ChipCallable) (_ *simCallable, err error) {
	s := &simCallable{}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	for _, d := range c.Signature {
		if d == registry.Scalar {
			s.scalars++
		} else {
			s.tensors++
		}
	}
	if c.FuncName == "" {
		return nil, errors.New("the callable names no orchestration entry symbol")
	}
	h, err := l.load("orchestration", c.Binary)
	if err != nil {
		return nil, err
	}
	s.libs = append(s.libs, h)
	if s.entry, err = purego.Dlsym(h, c.FuncName); err != nil {
		return nil, fmt.Errorf("entry symbol %q: %s", c.FuncName, l.clean(err.Error()))
	}
	// Resolved only: a provider's negotiation runs on an explicit
	// NEGOTIATE request, never during prewarm.
	s.opImplID, _ = purego.Dlsym(h, opImplIDSymbol)
	s.opValidate, _ = purego.Dlsym(h, opValidateSymbol)
	s.opScratch, _ = purego.Dlsym(h, opScratchSymbol)
	s.modInit, _ = purego.Dlsym(h, modInitSymbol)
	s.modShutdown, _ = purego.Dlsym(h, modShutdownSymbol)
	if c.ConfigName != "" {
		if s.config, err = purego.Dlsym(h, c.ConfigName); err != nil {
			return nil, fmt.Errorf("config symbol %q: %s", c.ConfigName, l.clean(err.Error()))
		}
	}
	if s.rt, err = newCmem(sizeofRuntime + sizeofKernel*len(c.Children)); err != nil {
		return nil, err
	}
	for i, ch := range c.Children {
		h, err := l.load(fmt.Sprintf("kernel%d", ch.FuncID), ch.Core.Binary)
		if err != nil {
			return nil, err
		}
		s.libs = append(s.libs, h)
		fn, err := purego.Dlsym(h, kernelSymbol)
		if err != nil {
			return nil, fmt.Errorf("kernel func_id %d: %s", ch.FuncID, l.clean(err.Error()))
		}
		e := s.rt.b[sizeofRuntime+sizeofKernel*i:]
		binary.LittleEndian.PutUint32(e[0:], uint32(ch.FuncID))
		binary.LittleEndian.PutUint64(e[8:], uint64(fn))
	}
	binary.LittleEndian.PutUint32(s.rt.b[0:], simABIVersion)
	binary.LittleEndian.PutUint32(s.rt.b[4:], uint32(len(c.Children)))
	binary.LittleEndian.PutUint32(s.rt.b[16:], sizeofRuntime) // the tail: the host operation service
	binary.LittleEndian.PutUint64(s.rt.b[24:], uint64(l.service))
	if len(c.Children) > 0 {
		binary.LittleEndian.PutUint64(s.rt.b[8:], uint64(s.rt.addr(sizeofRuntime)))
	}
	return s, nil
}

// release clears the executable state: runs the module shutdown of a
// callable still activated, then closes every shared object.
func (s *simCallable) release() {
	if s == nil {
		return
	}
	s.shutdownAll()
	for i := len(s.libs) - 1; i >= 0; i-- {
		purego.Dlclose(s.libs[i])
	}
	s.libs = nil
	s.rt.free()
	s.rt = cmem{}
	s.entry = 0
}

// shutdownAll runs the module shutdown of a callable still activated, once,
// and forgets its activations.
func (s *simCallable) shutdownAll() {
	if s.activations == 0 {
		return
	}
	s.activations = 0
	if s.modShutdown != 0 {
		opNegotiating = true
		purego.SyscallN(s.modShutdown)
		opNegotiating = false
	}
}

// opNegotiating is set while the child runs provider or module code that
// may not call back into the host operation service: a provider's
// ptojit_op_impl_id, validate or scratch query, or a module's init or
// shutdown. The service refuses every call meanwhile (PTOJIT_OP_E_REENTRY).
var opNegotiating bool

// shapeBytes returns the bytes that t's dtype, shape and strides span
// (opquery.Tensor.Bytes); ok is false when that number does not fit in 64
// bits.
func shapeBytes(t mailbox.Tensor) (n uint64, ok bool) {
	if len(t.Strides) == 0 {
		n, over := t.DType.Size(), uint64(0)
		for _, d := range t.Shape {
			var hi uint64
			hi, n = bits.Mul64(n, d)
			over |= hi
		}
		return n, over == 0 || slices.Contains(t.Shape, 0)
	}
	return opquery.Tensor{DType: opquery.DType(t.DType), Shape: t.Shape, Strides: t.Strides}.Bytes()
}

// checkLayout refuses strides the ABI does not allow: one per dimension,
// and a contiguous first axis (0 or 1).
func checkLayout(t mailbox.Tensor) error {
	if len(t.Strides) == 0 {
		return nil
	}
	if len(t.Strides) != len(t.Shape) {
		return fmt.Errorf("%d dimensions with %d strides", len(t.Shape), len(t.Strides))
	}
	if len(t.Strides) > 0 && t.Strides[0] > 1 {
		return fmt.Errorf("its first axis has stride %d (the first axis is contiguous)", t.Strides[0])
	}
	return nil
}

// configure calls the config symbol, once, before the first task: the
// orchestration's static configuration is orchestration code, which
// prewarm never runs.
func (s *simCallable) configure() error {
	if s.configured || s.config == 0 {
		return nil
	}
	p, _, _ := purego.SyscallN(s.config)
	if p == 0 {
		return errors.New("the config symbol returned NULL")
	}
	cfg := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), sizeofConfig)
	if v := binary.LittleEndian.Uint32(cfg[0:]); v != simABIVersion {
		return fmt.Errorf("config abi_version %d, this worker knows %d", v, simABIVersion)
	}
	s.blockDim = binary.LittleEndian.Uint32(cfg[4:])
	s.configured = true
	return nil
}

// run calls the orchestration entry with args whose tensors live in arena.
// scratch holds the ptojit_args structure. A non-zero return of the
// orchestration is returned as code with a nil error.
func (s *simCallable) run(arena []byte, scratch cmem, a mailbox.TaskArgs) (int32, error) {
	if len(a.Tensors) != s.tensors || len(a.Scalars) != s.scalars {
		return 0, fmt.Errorf("callable takes %d tensors and %d scalars, task passes %d and %d",
			s.tensors, s.scalars, len(a.Tensors), len(a.Scalars))
	}
	if err := s.configure(); err != nil {
		return 0, err
	}
	var base uintptr
	if len(arena) > 0 {
		base = uintptr(unsafe.Pointer(&arena[0]))
	}
	tOff := sizeofArgsV11
	sOff := tOff + mailbox.MaxTensors*sizeofTensor
	stOff := sOff + mailbox.MaxScalars*8 // the strides rows of the 1.1 tail
	for i, t := range a.Tensors {
		if t.Offset > uint64(len(arena)) || t.Nbytes > uint64(len(arena))-t.Offset {
			return 0, fmt.Errorf("tensor %d [%d, +%d) lies outside the %d-byte arena", i, t.Offset, t.Nbytes, len(arena))
		}
		if err := checkLayout(t); err != nil {
			return 0, fmt.Errorf("tensor %d: %v", i, err)
		}
		if n, ok := shapeBytes(t); t.DType.Size() == 0 || !ok || n > t.Nbytes {
			return 0, fmt.Errorf("tensor %d: shape, strides and dtype need more than its %d bytes", i, t.Nbytes)
		}
		row := scratch.b[stOff+8*mailbox.MaxDims*i:]
		for d := range mailbox.MaxDims {
			var v uint64
			if d < len(t.Strides) {
				v = t.Strides[d]
			}
			binary.LittleEndian.PutUint64(row[8*d:], v)
		}
		e := scratch.b[tOff+sizeofTensor*i:]
		binary.LittleEndian.PutUint64(e[0:], uint64(base)+t.Offset)
		binary.LittleEndian.PutUint64(e[8:], t.Nbytes)
		binary.LittleEndian.PutUint32(e[16:], uint32(t.DType))
		binary.LittleEndian.PutUint32(e[20:], uint32(len(t.Shape)))
		for d := range mailbox.MaxDims {
			var v uint64
			if d < len(t.Shape) {
				v = t.Shape[d]
			}
			binary.LittleEndian.PutUint64(e[24+8*d:], v)
		}
	}
	for i, v := range a.Scalars {
		binary.LittleEndian.PutUint64(scratch.b[sOff+8*i:], v)
	}
	h := scratch.b
	binary.LittleEndian.PutUint32(h[0:], simABIVersion)
	binary.LittleEndian.PutUint32(h[4:], uint32(len(a.Tensors)))
	binary.LittleEndian.PutUint64(h[8:], uint64(scratch.addr(tOff)))
	binary.LittleEndian.PutUint32(h[16:], uint32(len(a.Scalars)))
	binary.LittleEndian.PutUint32(h[20:], sizeofArgsV11) // struct_size: the strides tail is there
	binary.LittleEndian.PutUint64(h[24:], uint64(scratch.addr(sOff)))
	binary.LittleEndian.PutUint64(h[32:], uint64(scratch.addr(stOff)))
	r, _, _ := purego.SyscallN(s.entry, s.rt.addr(0), scratch.addr(0))
	return int32(uint32(r)), nil
}
