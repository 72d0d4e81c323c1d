package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

const (
	opRows   = "example.sequence.row_prefix_sum"
	implRows = "example.scan_rows.row_prefix_sum.f32"
)

// TestStridedExecution: an outer-strided contract resolves and executes as
// negotiated: example.scan_rows sums every row of an input whose rows lie
// 8 elements apart into an output whose rows lie 6 apart, every element is
// checked against the reference, and the padding between rows is left
// alone. Execute refuses buffers whose strides differ from the contract,
// and a first axis that is not contiguous is rejected at resolution.
func TestStridedExecution(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan_rows"])
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	const n, rows, si, so = 5, 3, 8, 6
	q := ops.Query{OpName: opRows, Tensors: []ops.Tensor{
		{DType: ops.F32, Shape: []uint64{n, rows}, Strides: []uint64{1, si}},
		{DType: ops.F32, Shape: []uint64{n, rows}, Strides: []uint64{0, so}},
	}, HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	h, res, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatalf("%v\n%s", err, reasons(res))
	}
	defer h.Release(ctx)
	if h.Describe().ImplID != implRows {
		t.Fatalf("chose %s", h.Describe().ImplID)
	}
	a := w.Arena()
	in, err := a.Alloc(4 * ((rows-1)*si + n))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Free()
	out, err := a.Alloc(4 * ((rows-1)*so + n))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	xs, ys := in.Float32s()[:(rows-1)*si+n], out.Float32s()[:(rows-1)*so+n]
	for i := range xs {
		xs[i] = float32(i%7)*0.25 + 1
	}
	const pad = -7.5
	for i := range ys {
		ys[i] = pad
	}
	tin := in.Tensor(worker.Float32, n, rows)
	tin.Strides = []uint64{1, si}
	tout := out.Tensor(worker.Float32, n, rows)
	tout.Strides = []uint64{0, so}
	if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{tin, tout}}); err != nil {
		t.Fatal(err)
	}
	for r := range rows {
		var sum float64
		for i := range so {
			if r*so+i >= len(ys) {
				break
			}
			got := ys[r*so+i]
			if i >= n {
				if got != pad {
					t.Errorf("padding element %d after row %d was written: %v", i, r, got)
				}
				continue
			}
			sum += float64(xs[r*si+i])
			if want := float32(sum); got != want {
				t.Errorf("row %d element %d: %v, want %v", r, i, got, want)
			}
		}
	}
	// Packed buffers do not match the negotiated strides.
	for _, c := range []struct {
		in, out []uint64
		want    string
	}{
		{nil, []uint64{0, so}, "tensor 0 has strides [1 5], negotiated [1 8]"},
		{[]uint64{1, si}, []uint64{1, so + 1}, "tensor 1 has strides [1 7], negotiated [1 6]"},
	} {
		a, b := tin, tout
		a.Strides, b.Strides = c.in, c.out
		err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{a, b}})
		var ce *ops.ContractError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strides %v, %v: %v, want %q", c.in, c.out, err, c.want)
		}
	}
	// A first axis with a stride is no layout the provider declares.
	q.Tensors[0].Strides = []uint64{2, 16}
	_, res, err = svc.Resolve(ctx, q)
	var nf *ops.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(reasons(res), "[layout] layout: input 0 is not outer-strided (the first axis must be contiguous)") {
		t.Errorf("strided first axis: %v\n%s", err, reasons(res))
	}
}
