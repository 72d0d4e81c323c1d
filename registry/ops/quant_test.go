package ops_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/opquery"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

const (
	opDequant   = "example.sequence.dequant_prefix_sum"
	implDequant = "example.scan_quant.dequant_prefix_sum"
)

// quantBlocks encodes blocks of dtype (q8x32 or q4x32): block b has
// scale scales[b] and integers qs[b*32:], and returns them with the values
// they stand for (float32(scale * q), as the provider computes them).
func quantBlocks(dtype ops.DType, scales []float32, qs []int8) ([]byte, []float32) {
	var out []byte
	var vals []float32
	for b, sc := range scales {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(sc))
		block := qs[b*opquery.QuantBlock : (b+1)*opquery.QuantBlock]
		for j, q := range block {
			vals = append(vals, sc*float32(q))
			switch {
			case dtype == ops.Q8x32:
				out = append(out, byte(q))
			case j%2 == 0:
				out = append(out, byte(q)&0xf|byte(block[j+1])<<4)
			}
		}
	}
	return out, vals
}

// TestQuantizedExecution: a provider that consumes block-quantized
// tensors (example.scan_quant, kernel_abi 1.3) resolves on a query that
// describes them in blocks and executes on a child with the right numbers,
// q8x32 and q4x32 alike; the dtype ids and block sizes are the same on
// both sides of the mailbox.
func TestQuantizedExecution(t *testing.T) {
	for _, dt := range []ops.DType{ops.Q8x32, ops.Q4x32} {
		if got := mailbox.DType(dt).Size(); got != dt.Size() {
			t.Fatalf("%s: the mailbox sizes a block %d bytes, opquery %d", dt, got, dt.Size())
		}
	}
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan_quant"])
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	const blocks = 3
	scales := []float32{0.5, -0.125, 3}
	qs := make([]int8, blocks*opquery.QuantBlock)
	for i := range qs {
		qs[i] = int8(i%15 - 7) // -7..7: representable in 4 bits too
	}
	qs[5], qs[40] = 127, -128 // beyond 4 bits: only the q8x32 case keeps them
	for _, c := range []struct {
		dt ops.DType
		wt worker.DType
	}{{ops.Q8x32, worker.Q8x32}, {ops.Q4x32, worker.Q4x32}} {
		t.Run(c.dt.String(), func(t *testing.T) {
			q := append([]int8(nil), qs...)
			if c.dt == ops.Q4x32 {
				q[5], q[40] = 7, -8
			}
			data, vals := quantBlocks(c.dt, scales, q)
			query := ops.Query{OpName: opDequant, Tensors: []ops.Tensor{
				{DType: c.dt, Shape: []uint64{blocks}},
				{DType: ops.F32, Shape: []uint64{blocks * opquery.QuantBlock}},
			}, HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
			h, res, err := svc.Resolve(ctx, query)
			if err != nil {
				t.Fatalf("%v\n%s", err, reasons(res))
			}
			defer h.Release(ctx)
			if h.Describe().ImplID != implDequant {
				t.Fatalf("chose %s", h.Describe().ImplID)
			}
			a := w.Arena()
			in, err := a.Alloc(uint64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Free()
			out, err := a.Alloc(4 * uint64(len(vals)))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Free()
			copy(in.Bytes(), data)
			if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{in.Tensor(c.wt, blocks), out.Tensor(worker.Float32, uint64(len(vals)))}}); err != nil {
				t.Fatal(err)
			}
			var sum float64
			for i, got := range out.Float32s()[:len(vals)] {
				sum += float64(vals[i])
				if want := float32(sum); got != want {
					t.Fatalf("element %d: %v, want %v", i, got, want)
				}
			}
		})
	}
	// Described in elements instead of blocks, the output does not match
	// what the input dequantizes to: the provider's validate refuses.
	query := ops.Query{OpName: opDequant, Tensors: []ops.Tensor{
		{DType: ops.Q8x32, Shape: []uint64{blocks * opquery.QuantBlock}},
		{DType: ops.F32, Shape: []uint64{blocks * opquery.QuantBlock}},
	}, HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	_, res, err := svc.Resolve(ctx, query)
	var nf *ops.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(reasons(res), "blocks dequantize to") {
		t.Errorf("a quantized input described in elements: %v\n%s", err, reasons(res))
	}
}

// TestQuantizedNeedsABI13: the quantized provider's kernel_abi (1.3..1.3)
// is checked against the host's range: a host that runs 1.0..1.2 refuses
// it at install, naming both.
func TestQuantizedNeedsABI13(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	saved := module.HostKernelABI
	module.HostKernelABI = module.ABIRange{Min: "1.0", Max: "1.2"}
	_, err := s.Install(ctxT(t), arch["scan_quant"])
	module.HostKernelABI = saved
	var ke *module.KernelABIError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), "needs kernel ABI 1.3..1.3; this host runs 1.0..1.2") {
		t.Errorf("install on a 1.2 host: %v", err)
	}
}
