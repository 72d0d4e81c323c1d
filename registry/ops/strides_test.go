package ops_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
	"github.com/ptojit/ptojit/registry/worker/simtest"
)

const (
	opRows   = "example.sequence.row_prefix_sum"
	implRows = "example.scan_rows.row_prefix_sum.f32"
)

// TestStridedExecution: an outer-strided contract resolves and executes as
// negotiated: example.scan_rows sums every row of an input whose rows lie
// 8 elements apart into an output whose rows lie 6 apart, scaled by its
// operation parameter, every element is checked against the reference,
// and the padding between rows is left alone. Execute refuses buffers whose strides differ from the contract,
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
	}, HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited,
		Params: []ops.Param{{Name: "scale", Version: 1, Value: "1.5"}}}
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
			if want := float32(sum * 1.5); got != want {
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

// TestSimABIHeader: the kernel ABI version ptojit_sim.h declares is the one
// this build's children and the module store's host range name.
func TestSimABIHeader(t *testing.T) {
	inc, err := simtest.IncludeDir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(inc, "ptojit_sim.h"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"PTOJIT_SIM_ABI_VERSION": registry.SimABIMajor, "PTOJIT_SIM_ABI_MINOR": registry.SimABIMinor} {
		if !strings.Contains(string(b), fmt.Sprintf("#define %s %du\n", name, want)) {
			t.Errorf("ptojit_sim.h does not define %s as %d", name, want)
		}
	}
	if want := fmt.Sprintf("%d.%d", registry.SimABIMajor, registry.SimABIMinor); module.HostKernelABI.Max != want {
		t.Errorf("host kernel ABI range %v, want up to %s", module.HostKernelABI, want)
	}
}

// TestKernelABIAtLoad: a module installed by a build whose children run a
// newer kernel ABI is rejected, with kind kernel_abi and both ranges, when
// this build would load it; its callables never reach a child.
func TestKernelABIAtLoad(t *testing.T) {
	priv, _, _ := examples(t)
	ar := pack(t, readSource(t, "scan"), priv, func(m *module.Manifest) { m.KernelABI = &module.ABIRange{Min: "1.4", Max: "1.4"} })
	s := newStore(t)
	saved := module.HostKernelABI
	module.HostKernelABI = module.ABIRange{Min: "1.0", Max: "1.4"}
	_, err := s.Install(ctxT(t), ar)
	module.HostKernelABI = saved
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := newService(t, s, 1)
	_, res, err := svc.Resolve(ctxT(t), vecQuery(opPrefix, 8))
	var nf *ops.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(reasons(res), implScan+" [kernel_abi] kernel ABI: module example.scan@1.0.0 needs kernel ABI 1.4..1.4; this host runs 1.0..1.3") {
		t.Errorf("%v\n%s", err, reasons(res))
	}
}

// TestOperationParameters: example.scan_rows declares the parameter scale
// (version 1, f32): a query that passes it of another version, leaves it
// out, or passes another is rejected with kind parameter and its own
// message; the value the query passes is the one execution hands the
// provider.
func TestOperationParameters(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan_rows"])
	svc, w := newService(t, s, 1)
	ctx := ctxT(t)
	query := func(params ...ops.Param) ops.Query {
		return ops.Query{OpName: opRows, Tensors: []ops.Tensor{{DType: ops.F32, Shape: []uint64{4, 2}}}, Uniform: true,
			HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited, Params: params}
	}
	var nf *ops.NotFoundError
	for _, c := range []struct {
		params []ops.Param
		want   string
	}{
		{[]ops.Param{{Name: "scale", Version: 2, Value: "2"}}, "parameter: scale is version 1 here, the query passes version 2"},
		{nil, "parameter: scale (version 1, f32) is required and not passed"},
		{[]ops.Param{{Name: "scale", Version: 1, Value: "2"}, {Name: "bias", Version: 1, Value: "1"}}, "parameter: bias is not a parameter of this implementation (it declares scale@1 f32)"},
		{[]ops.Param{{Name: "scale", Version: 1, Value: "x"}}, `parameter: scale: "x" is not an f32`},
		// The provider's validate sees the parameter (the query's ABI 1.2
		// tail) and refuses a value it cannot take.
		{[]ops.Param{{Name: "scale", Version: 1, Value: "+Inf"}}, "[validate] validate: scale inf is not finite"},
	} {
		_, res, err := svc.Resolve(ctx, query(c.params...))
		want := c.want
		if !strings.HasPrefix(want, "[") {
			want = "[parameter] " + want
		}
		if !errors.As(err, &nf) || !strings.Contains(reasons(res), implRows+" "+want) {
			t.Errorf("%v: %v\n%s", c.params, err, reasons(res))
		}
	}
	for _, scale := range []float32{1, -0.5, 3} {
		h, _, err := svc.Resolve(ctx, query(ops.Param{Name: "scale", Version: 1, Value: fmt.Sprint(scale)}))
		if err != nil {
			t.Fatal(err)
		}
		in, _ := w.Arena().Alloc(32)
		out, _ := w.Arena().Alloc(32)
		xs := in.Float32s()[:8]
		for i := range xs {
			xs[i] = float32(i + 1)
		}
		err = h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{in.Tensor(worker.Float32, 4, 2), out.Tensor(worker.Float32, 4, 2)}})
		if err != nil {
			t.Fatal(err)
		}
		for r := range 2 {
			var sum float64
			for i := range 4 {
				sum += float64(xs[4*r+i])
				if got, want := out.Float32s()[4*r+i], float32(sum*float64(scale)); got != want {
					t.Errorf("scale %v row %d element %d: %v, want %v", scale, r, i, got, want)
				}
			}
		}
		in.Free()
		out.Free()
		h.Release(ctx)
	}
}
