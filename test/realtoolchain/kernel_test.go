package realtoolchain

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The structures of ptojit_sim.h (ABI 1.0) a kernel call takes.
type (
	simTensor struct {
		data   unsafe.Pointer
		nbytes uint64
		dtype  uint32
		ndim   uint32
		shape  [4]uint64
	}
	simArgs struct {
		abiVersion  uint32
		tensorCount uint32
		tensors     *simTensor
		scalarCount uint32
		structSize  uint32
		scalars     *uint64
	}
)

// runKernel loads a kernel object, calls its ptojit_kernel with the
// float32 tensors and returns tensor out after the call.
func runKernel(path string, tensors [][]float32, out int) ([]float32, error) {
	if unsafe.Sizeof(simTensor{}) != 56 || unsafe.Sizeof(simArgs{}) != 32 {
		return nil, errors.New("the sim ABI layout assumes a 64-bit host")
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", path, err)
	}
	defer purego.Dlclose(h)
	fn, err := purego.Dlsym(h, "ptojit_kernel")
	if err != nil {
		return nil, err
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ts := make([]simTensor, len(tensors))
	for i, x := range tensors {
		pin.Pin(&x[0])
		ts[i] = simTensor{data: unsafe.Pointer(&x[0]), nbytes: uint64(4 * len(x)), dtype: 1, ndim: 1, shape: [4]uint64{uint64(len(x))}}
	}
	args := &simArgs{abiVersion: 1, tensorCount: uint32(len(ts)), tensors: &ts[0]}
	pin.Pin(&ts[0])
	pin.Pin(args)
	if rc, _, _ := purego.SyscallN(fn, uintptr(unsafe.Pointer(args))); int32(rc) != 0 {
		return nil, fmt.Errorf("ptojit_kernel returned %d", int32(rc))
	}
	return tensors[out], nil
}
