package jit

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/registry"
)

// The structures of testdata/examples/toolchain/runtime/include/ptojit_sim.h.
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
		reserved    uint32
		scalars     *uint64
	}
	simKernelEntry struct {
		funcID int32
		_      uint32 // reserved
		fn     uintptr
	}
	simRuntime struct {
		abiVersion  uint32
		kernelCount uint32
		kernels     *simKernelEntry
	}
	simConfig struct {
		abiVersion uint32
		blockDim   uint32
	}
)

const simABIVersion = 1

// TestVaddComputes builds the example, unpacks the ChipCallable blob it
// produced, loads the orchestration and kernel binaries from it and calls
// the orchestration: out must be (a + b) * s.
func TestVaddComputes(t *testing.T) {
	if unsafe.Sizeof(simTensor{}) != 56 || unsafe.Sizeof(simArgs{}) != 32 || unsafe.Sizeof(simKernelEntry{}) != 16 || unsafe.Sizeof(simRuntime{}) != 16 {
		t.Skip("the sim ABI layout assumes a 64-bit host")
	}
	_, req := copyExamples(t)
	resp := build(t, newDriver(t, cache.NewMemory(cache.Options{})), req, api.StatusMiss)
	blob, err := os.ReadFile(resp.Callable)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := registry.ParseChipCallable(blob)
	if err != nil {
		t.Fatal(err)
	}
	if cc.FuncName != "vadd_orch" || cc.ConfigName != "vadd_orch_config" || cc.ScalarCount != 1 || len(cc.Children) != 2 {
		t.Fatalf("callable %q %q scalars %d children %d", cc.FuncName, cc.ConfigName, cc.ScalarCount, len(cc.Children))
	}
	if want := []registry.Direction{1, 1, 2, 0}; !equalDirs(cc.Signature, want) {
		t.Fatalf("signature %v, want %v", cc.Signature, want)
	}

	dir := t.TempDir()
	load := func(name string, bin []byte) uintptr {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			t.Fatalf("dlopen %s: %v", name, err)
		}
		t.Cleanup(func() { purego.Dlclose(h) })
		return h
	}
	sym := func(h uintptr, name string) uintptr {
		p, err := purego.Dlsym(h, name)
		if err != nil {
			t.Fatalf("dlsym %s: %v", name, err)
		}
		return p
	}
	orch := load("orchestration.so", cc.Binary)
	entries := make([]simKernelEntry, len(cc.Children))
	for i, ch := range cc.Children {
		h := load(KernelName(ch.FuncID), ch.Core.Binary)
		entries[i] = simKernelEntry{funcID: ch.FuncID, fn: sym(h, "ptojit_kernel")}
	}

	cfgFn := sym(orch, cc.ConfigName)
	r, _, _ := purego.SyscallN(cfgFn)
	cfg := *(**simConfig)(unsafe.Pointer(&r)) // C memory, not Go's
	if cfg == nil || cfg.abiVersion != simABIVersion || cfg.blockDim != 1 {
		t.Fatalf("config %+v", cfg)
	}

	const n = 37
	a, b, out := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		a[i] = float32(i) * 0.5
		b[i] = 3 - float32(i)
		out[i] = float32(math.NaN())
	}
	s := float32(-1.25)
	tensor := func(x []float32) simTensor {
		return simTensor{data: unsafe.Pointer(&x[0]), nbytes: uint64(4 * len(x)), dtype: 1, ndim: 1, shape: [4]uint64{uint64(len(x))}}
	}
	tensors := []simTensor{tensor(a), tensor(b), tensor(out)}
	scalars := []uint64{0xdeadbeef_00000000 | uint64(math.Float32bits(s))}
	args := &simArgs{abiVersion: simABIVersion, tensorCount: 3, tensors: &tensors[0], scalarCount: 1, scalars: &scalars[0]}
	rt := &simRuntime{abiVersion: simABIVersion, kernelCount: uint32(len(entries)), kernels: &entries[0]}

	var pin runtime.Pinner
	defer pin.Unpin()
	for _, p := range []any{&a[0], &b[0], &out[0], &tensors[0], &scalars[0], &entries[0], args, rt} {
		pin.Pin(p)
	}
	rc, _, _ := purego.SyscallN(sym(orch, cc.FuncName), uintptr(unsafe.Pointer(rt)), uintptr(unsafe.Pointer(args)))
	if int32(rc) != 0 {
		t.Fatalf("orchestration returned %d", int32(rc))
	}
	for i := range n {
		if want := (a[i] + b[i]) * s; out[i] != want {
			t.Errorf("out[%d] = %v, want %v", i, out[i], want)
		}
	}

	// Without the kernels the orchestration fails instead of crashing.
	rt.kernelCount = 0
	if rc, _, _ := purego.SyscallN(sym(orch, cc.FuncName), uintptr(unsafe.Pointer(rt)), uintptr(unsafe.Pointer(args))); int32(rc) == 0 {
		t.Error("orchestration without kernels returned 0")
	}
}

func equalDirs(a, b []registry.Direction) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
