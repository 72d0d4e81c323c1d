package opquery

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry/semver"
)

func ver(t testing.TB, s string) semver.Version {
	t.Helper()
	v, err := semver.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// desc is a descriptor that the query of vec matches.
func desc(t testing.TB, impl string, prio int64) *Descriptor {
	return &Descriptor{ImplID: impl, OpName: "x.op", OpVersion: ver(t, "1.2.0"), Priority: prio, Inputs: 1, Outputs: 1,
		InputDTypes: []DType{F32}, OutputDTypes: []DType{F32}, Layouts: []string{LayoutContiguous},
		MemorySpaces: []string{SpaceDevice}, Rank: Bounds{Min: 1, Max: 2}, SyncModes: []SyncMode{SyncBlocking}, Platforms: []string{"p1"}}
}

func vec(n uint64) Query {
	return Query{OpName: "x.op", Tensors: []Tensor{{DType: F32, Shape: []uint64{n}}}, Uniform: true,
		HostBudget: Unlimited, DeviceBudget: Unlimited}
}

func env() Env { return Env{Platforms: []string{"p1"}, Runtime: "rt"} }

// matched lists the impl_ids of fits in order.
func matched(cands []Candidate, fits []Fit) []string {
	var ids []string
	for _, f := range fits {
		ids = append(ids, cands[f.Cand].Desc.ImplID)
	}
	return ids
}

// TestRejections: each rule family refuses a candidate that breaks it,
// with its kind and reason, and the unchanged candidate matches.
func TestRejections(t *testing.T) {
	for _, c := range []struct {
		name       string
		edit       func(d *Descriptor, q *Query, e *Env, runtime *string)
		kind, want string
	}{
		{"match", func(*Descriptor, *Query, *Env, *string) {}, "", ""},
		{"version", func(d *Descriptor, q *Query, _ *Env, _ *string) { q.MinVersion = "1.3.0" },
			"version", "version: op_version 1.2.0 is outside >= 1.3.0 within major 1"},
		{"platform", func(d *Descriptor, _ *Query, _ *Env, _ *string) { d.Platforms = []string{"p2"} },
			"backend", "backend: callables for p2; the query allows every backend and this runtime executes p1"},
		{"backends", func(_ *Descriptor, q *Query, _ *Env, _ *string) { q.Backends = []string{"p2"} },
			"backend", "backend: callables for p1; the query allows p2 and this runtime executes p1"},
		{"runtime", func(_ *Descriptor, _ *Query, _ *Env, rt *string) { *rt = "other" },
			"backend", "backend: built for runtime other, the workers run rt"},
		{"capability", func(d *Descriptor, q *Query, _ *Env, _ *string) {
			d.Capabilities = []string{"x.a"}
			q.Capabilities = []string{"x.a", "x.b"}
		}, "capability", "capability: x.b is not declared (declares x.a)"},
		{"numerics", func(_ *Descriptor, q *Query, _ *Env, _ *string) { q.Numerics = []string{"x.exact"} },
			"numerics", "numerics: x.exact is not guaranteed (guarantees none)"},
		{"sync", func(_ *Descriptor, q *Query, _ *Env, _ *string) { q.SyncMode = SyncAsync },
			"sync", "sync: mode async is not supported"},
		{"arity", func(_ *Descriptor, q *Query, _ *Env, _ *string) { q.Uniform = false },
			"arity", "arity: takes 1 inputs and 1 outputs, the query has 1 tensors"},
		{"rank", func(_ *Descriptor, q *Query, _ *Env, _ *string) { q.Tensors[0].Shape = []uint64{2, 2, 2} },
			"rank", "rank: input 0 has rank 3, the implementation takes 1..2"},
		{"dims", func(d *Descriptor, _ *Query, _ *Env, _ *string) { d.Dims = &Bounds{Min: 1, Max: 4} },
			"dims", "dims: input 0 dimension 0 is 8, outside 1..4"},
		{"batch", func(d *Descriptor, q *Query, _ *Env, _ *string) {
			d.Batch = &Bounds{Min: 1, Max: 2}
			q.Tensors[0].Shape = []uint64{8, 3}
		}, "batch", "batch: input 0 has a batch of 3, outside 1..2"},
		{"output dtype", func(d *Descriptor, _ *Query, _ *Env, _ *string) { d.OutputDTypes = []DType{I32, F16} },
			"dtype", "dtype: output 0 is f32, the implementation takes i32, f16"},
		{"layout", func(_ *Descriptor, q *Query, _ *Env, _ *string) {
			q.Tensors[0].Shape, q.Tensors[0].Strides = []uint64{4, 2}, []uint64{1, 8}
		}, "layout", "layout: input 0 is outer-strided, the implementation takes contiguous"},
		{"memory space", func(_ *Descriptor, q *Query, _ *Env, _ *string) { q.Tensors[0].MemorySpace = SpaceHost },
			"memory_space", "memory space: input 0 is in host memory, the implementation takes device"},
		{"host budget", func(_ *Descriptor, q *Query, e *Env, _ *string) {
			q.HostBudget = 16
			e.Negotiate = func(f *Fit) error { f.HostScratch = 17; return nil }
		}, "memory", "memory budget: needs 17 bytes of host scratch, the budget is 16"},
		{"device budget", func(_ *Descriptor, q *Query, e *Env, _ *string) {
			q.DeviceBudget = 0
			e.Negotiate = func(f *Fit) error { f.DeviceScratch = 1; return nil }
		}, "memory", "memory budget: needs 1 bytes of device scratch, the budget is 0"},
		{"refusal", func(_ *Descriptor, _ *Query, e *Env, _ *string) {
			e.Negotiate = func(*Fit) error { return fmt.Errorf("wrapped: %w", &Refusal{Kind: "validate", Reason: "validate: no"}) }
		}, "validate", "validate: no"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, q, e, rt := desc(t, "a.impl", 0), vec(8), env(), "rt"
			c.edit(d, &q, &e, &rt)
			cands := []Candidate{{Desc: d, Module: "m", Runtime: rt}}
			fits, rej, err := Match(cands, &q, e)
			if err != nil {
				t.Fatal(err)
			}
			if c.kind == "" {
				if len(fits) != 1 || len(rej) != 0 || fits[0].Platform != "p1" || len(fits[0].Tensors) != 2 {
					t.Fatalf("fits %+v, rejected %v", fits, rej)
				}
				return
			}
			want := []Rejection{{ImplID: "a.impl", Module: "m", Kind: c.kind, Reason: c.want}}
			if len(fits) != 0 || !slices.Equal(rej, want) {
				t.Fatalf("fits %+v, rejected %+v; want %+v", fits, rej, want)
			}
		})
	}
}

// TestVersionInterval: the same-major inclusive interval, MinVersion alone,
// the newest major by default, and the intervals refused.
func TestVersionInterval(t *testing.T) {
	var cands []Candidate
	for _, v := range []string{"1.0.0", "1.2.0-rc.1", "1.2.0", "1.9.9", "2.0.0-alpha", "2.1.0"} {
		d := desc(t, "v"+v, 0)
		d.OpVersion = ver(t, v)
		cands = append(cands, Candidate{Desc: d, Module: "m", Runtime: "rt"})
	}
	for _, c := range []struct{ lo, hi, want string }{
		{"", "", "v2.0.0-alpha v2.1.0"},
		{"1.0.0", "", "v1.0.0 v1.2.0 v1.2.0-rc.1 v1.9.9"},
		{"1.2.0-rc.1", "1.2.0", "v1.2.0 v1.2.0-rc.1"},
		{"1.2.0-rc.2", "1.9.9", "v1.2.0 v1.9.9"},
		{"1.0.1", "1.1.0", ""},
		{"", "1.3.0", "error: a maximum version needs a minimum version"},
		{"1.2.0", "2.0.0", "error: version interval [1.2.0, 2.0.0] spans major versions (an interval stays within one)"},
		{"1.2.0", "1.1.0", "error: version interval [1.2.0, 1.1.0] is empty"},
		{"x", "", `error: minimum version: version "x" is not MAJOR.MINOR.PATCH`},
		{"1.0.0", "y", `error: maximum version: version "y" is not MAJOR.MINOR.PATCH`},
	} {
		q := vec(8)
		q.MinVersion, q.MaxVersion = c.lo, c.hi
		fits, _, err := Match(cands, &q, env())
		got := strings.Join(matched(cands, fits), " ")
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != c.want {
			t.Errorf("[%s, %s]: %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

func TestVersionCompare(t *testing.T) {
	// semver.org's example, in ascending precedence; build metadata is
	// not part of the parsed plain data.
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	for i, a := range order {
		for j, b := range order {
			if got, want := ver(t, a).Compare(ver(t, b)), cmpInt(i, j); got != want {
				t.Errorf("%s vs %s: %d, want %d", a, b, got, want)
			}
		}
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestOrderAndExact: matches by descending priority then ascending
// impl_id whatever the order given, rejections by impl_id; ExactImplID
// takes that one implementation or none.
func TestOrderAndExact(t *testing.T) {
	small := desc(t, "a.small", 100)
	small.Dims = &Bounds{Min: 0, Max: 4}
	ds := []*Descriptor{desc(t, "d.mid", 50), desc(t, "c.top", 100), small, desc(t, "b.top", 100), desc(t, "e.best", 200)}
	want := "e.best b.top c.top d.mid"
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}} {
		var cands []Candidate
		for _, k := range order {
			cands = append(cands, Candidate{Desc: ds[k], Module: "m", Runtime: "rt"})
		}
		q := vec(8)
		fits, rej, err := Match(cands, &q, env())
		if got := strings.Join(matched(cands, fits), " "); err != nil || got != want || len(rej) != 1 || rej[0].ImplID != "a.small" {
			t.Fatalf("order %v: %v %q %v", order, err, got, rej)
		}
		// The exact id of a rejected candidate leaves no fallback.
		q = vec(8)
		q.ExactImplID = "a.small"
		if fits, rej, err := Match(cands, &q, env()); err != nil || len(fits) != 0 || len(rej) != 1 {
			t.Fatalf("exact a.small: %v %v %v", err, fits, rej)
		}
		q = vec(8)
		q.ExactImplID = "d.mid"
		if fits, _, _ := Match(cands, &q, env()); strings.Join(matched(cands, fits), " ") != "d.mid" {
			t.Fatalf("exact d.mid: %v", matched(cands, fits))
		}
	}
}

// TestOrderMany: among many candidates of few priorities, given in a
// scrambled order, equal priorities order by impl_id and the rejections
// are by impl_id.
func TestOrderMany(t *testing.T) {
	var cands []Candidate
	for i := range 100 {
		k := i * 37 % 100 // a permutation of 0..99
		d := desc(t, fmt.Sprintf("m%02d.impl", k), int64(k%3))
		if k%5 == 0 {
			d.Dims = &Bounds{Min: 0, Max: 4}
		}
		cands = append(cands, Candidate{Desc: d, Module: "m", Runtime: "rt"})
	}
	q := vec(8)
	fits, rej, err := Match(cands, &q, env())
	if err != nil {
		t.Fatal(err)
	}
	var want, wantRej []string
	for prio := 2; prio >= 0; prio-- {
		for k := range 100 {
			if k%3 == prio && k%5 != 0 {
				want = append(want, fmt.Sprintf("m%02d.impl", k))
			}
		}
	}
	for k := 0; k < 100; k += 5 {
		wantRej = append(wantRej, fmt.Sprintf("m%02d.impl", k))
	}
	var gotRej []string
	for _, r := range rej {
		gotRej = append(gotRej, r.ImplID)
	}
	if got := matched(cands, fits); !slices.Equal(got, want) || !slices.Equal(gotRej, wantRej) {
		t.Errorf("order %v\nwant %v\nrejected %v\nwant %v", got, want, gotRej, wantRej)
	}
}

// TestQueryChecks: a malformed query fails the match, before any
// candidate.
func TestQueryChecks(t *testing.T) {
	for _, c := range []struct {
		edit func(q *Query)
		want string
	}{
		{func(q *Query) { q.OpName = "prefix_sum" }, `operation name "prefix_sum" is not a namespaced name`},
		{func(q *Query) { q.Tensors = nil }, "the query describes no tensors"},
		{func(q *Query) { q.Tensors = append(q.Tensors, q.Tensors[0]) }, "a uniform query describes exactly one tensor"},
		{func(q *Query) { q.Tensors[0].DType = DTypeAny }, "tensor 0: a concrete dtype is needed"},
		{func(q *Query) { q.Tensors[0].Shape = make([]uint64, MaxRank+1) }, "tensor 0: 5 dimensions (at most 4) with 0 strides"},
		{func(q *Query) { q.Tensors[0].Strides = []uint64{1, 1} }, "tensor 0: 1 dimensions (at most 4) with 2 strides"},
		{func(q *Query) { q.Tensors[0].Shape = []uint64{1 << 40, 1 << 30} }, "tensor 0: its extent overflows 64 bits"},
		{func(q *Query) { q.Tensors[0].MemorySpace = "disk" }, `tensor 0: memory space "disk" (device or host)`},
	} {
		q := vec(8)
		c.edit(&q)
		negotiated := false
		e := env()
		e.Negotiate = func(*Fit) error { negotiated = true; return nil }
		if _, _, err := Match([]Candidate{{Desc: desc(t, "a.impl", 0), Module: "m", Runtime: "rt"}}, &q, e); err == nil || err.Error() != c.want || negotiated {
			t.Errorf("%v (negotiated %v), want %s", err, negotiated, c.want)
		}
	}
	q := vec(8)
	if _, _, err := Match(nil, &q, env()); err != nil || q.SyncMode != SyncBlocking {
		t.Errorf("default sync mode: %v %v", err, q.SyncMode)
	}
}

// TestNegotiateError: an error that is not a refusal ends the match,
// naming the candidate.
func TestNegotiateError(t *testing.T) {
	boom := errors.New("child died")
	e := env()
	e.Negotiate = func(*Fit) error { return boom }
	q := vec(8)
	_, _, err := Match([]Candidate{{Desc: desc(t, "a.impl", 0), Module: "m", Runtime: "rt"}}, &q, e)
	if !errors.Is(err, boom) || err.Error() != "a.impl (m): child died" {
		t.Fatalf("%v", err)
	}
}

func TestTensorAlignment(t *testing.T) {
	d := desc(t, "a.impl", 0)
	if a := d.TensorAlignment(F64); a != 8 {
		t.Errorf("default alignment of f64: %d", a)
	}
	d.Alignment = 64
	if a := d.TensorAlignment(I8); a != 64 {
		t.Errorf("declared alignment: %d", a)
	}
}

func TestTensorLayout(t *testing.T) {
	for _, c := range []struct {
		t             Tensor
		packed, outer bool
		bytes         uint64
	}{
		{Tensor{DType: F32, Shape: []uint64{4, 3}}, true, true, 48},
		{Tensor{DType: F32, Shape: []uint64{4, 3}, Strides: []uint64{0, 0}}, true, true, 48},
		{Tensor{DType: F32, Shape: []uint64{4, 3}, Strides: []uint64{1, 4}}, true, true, 48},
		{Tensor{DType: F32, Shape: []uint64{4, 3}, Strides: []uint64{1, 8}}, false, true, 4 * (3 + 2*8 + 1)},
		{Tensor{DType: F32, Shape: []uint64{4, 3}, Strides: []uint64{2, 8}}, false, false, 4 * (3*2 + 2*8 + 1)},
		{Tensor{DType: F32, Shape: []uint64{4, 3}, Strides: []uint64{1, 2}}, false, false, 4 * (3 + 2*2 + 1)},
		{Tensor{DType: I8, Shape: []uint64{0, 3}}, true, true, 0},
	} {
		p, o := c.t.layout()
		n, ok := c.t.Bytes()
		if p != c.packed || o != c.outer || n != c.bytes || !ok {
			t.Errorf("%v: packed %v outer %v bytes %d; want %v %v %d", c.t, p, o, n, c.packed, c.outer, c.bytes)
		}
	}
	for _, o := range []Tensor{
		{DType: F64, Shape: []uint64{1 << 40, 1 << 30}},
		// The last offset overflows, the outer extent does not.
		{DType: I8, Shape: []uint64{2, 3<<62 + 2}, Strides: []uint64{1 << 62, 1}},
	} {
		if _, ok := o.Bytes(); ok {
			t.Errorf("%v: an overflowing extent was accepted", o)
		}
	}
}

// TestDeclaredGuarantees: a query's required capabilities and numerics
// match a descriptor that declares them (and more), and each one it lacks
// rejects it.
func TestDeclaredGuarantees(t *testing.T) {
	for _, c := range []struct {
		caps, nums []string
		kind       string
	}{
		{nil, []string{"x.exact", "x.f64"}, ""},
		{[]string{"x.a"}, []string{"x.f64"}, ""},
		{nil, []string{"x.fast"}, "numerics"},
		{[]string{"x.b"}, nil, "capability"},
	} {
		d, q := desc(t, "a.impl", 0), vec(8)
		d.Capabilities, d.Numerics = []string{"x.a"}, []string{"x.exact", "x.f64"}
		q.Capabilities, q.Numerics = c.caps, c.nums
		cands := []Candidate{{Desc: d, Module: "m", Runtime: "rt"}}
		fits, rej, err := Match(cands, &q, env())
		if err != nil {
			t.Fatal(err)
		}
		if c.kind == "" && (len(fits) != 1 || len(rej) != 0) || c.kind != "" && (len(fits) != 0 || len(rej) != 1 || rej[0].Kind != c.kind) {
			t.Errorf("capabilities %v numerics %v: fits %v rejected %v, want kind %q", c.caps, c.nums, matched(cands, fits), rej, c.kind)
		}
	}
}

// TestAnyDType: a descriptor taking "any" dtype matches every concrete
// dtype of the query, and the provider's validate (the negotiation) then
// accepts or refuses it; a listed dtype takes only itself.
func TestAnyDType(t *testing.T) {
	for _, dt := range []DType{F32, I32, F16, I8, F64} {
		d, q, e := desc(t, "a.impl", 0), vec(8), env()
		d.InputDTypes, d.OutputDTypes = []DType{DTypeAny}, []DType{DTypeAny}
		q.Tensors[0].DType = dt
		negotiated := 0
		e.Negotiate = func(f *Fit) error {
			negotiated++
			if f.Tensors[0].DType != F32 {
				return &Refusal{Kind: "validate", Reason: "validate: only f32 after all, got " + f.Tensors[0].DType.String()}
			}
			return nil
		}
		cands := []Candidate{{Desc: d, Module: "m", Runtime: "rt"}}
		fits, rej, err := Match(cands, &q, e)
		if err != nil {
			t.Fatal(err)
		}
		if negotiated != 1 {
			t.Errorf("%s: validate ran %d times, want once (any matches every dtype)", dt, negotiated)
		}
		switch {
		case dt == F32 && (len(fits) != 1 || len(rej) != 0):
			t.Errorf("f32: validate accepted, yet fits %v rejected %v", fits, rej)
		case dt != F32 && (len(fits) != 0 || len(rej) != 1 || rej[0].Kind != "validate"):
			t.Errorf("%s: validate refused, yet fits %v rejected %v", dt, fits, rej)
		}
	}
	// A listed dtype is not "any".
	d, q := desc(t, "a.impl", 0), vec(8)
	q.Tensors[0].DType = I32
	if fits, rej, _ := Match([]Candidate{{Desc: d, Module: "m", Runtime: "rt"}}, &q, env()); len(fits) != 0 || len(rej) != 1 || rej[0].Kind != "dtype" {
		t.Errorf("f32 descriptor, i32 query: fits %v rejected %v", fits, rej)
	}
}

// TestFitTensorsAreCopies: the tensors of a fit share no memory with the
// query's, so changing the query after Match changes nothing matched.
func TestFitTensorsAreCopies(t *testing.T) {
	for _, uniform := range []bool{true, false} {
		q := Query{OpName: "x.op", Tensors: []Tensor{{DType: F32, Shape: []uint64{8, 2}, Strides: []uint64{1, 8}}}, Uniform: true,
			HostBudget: Unlimited, DeviceBudget: Unlimited}
		if !uniform {
			q.Uniform = false
			q.Tensors = append(q.Tensors, q.Tensors[0].Clone())
		}
		d := desc(t, "a.impl", 0)
		fits, _, err := Match([]Candidate{{Desc: d, Module: "m", Runtime: "rt"}}, &q, env())
		if err != nil || len(fits) != 1 {
			t.Fatalf("uniform %v: %v %v", uniform, fits, err)
		}
		for i := range q.Tensors {
			q.Tensors[i].Shape[0], q.Tensors[i].Strides[1] = 99, 99
			q.Tensors[i].DType = I32
		}
		for i, ft := range fits[0].Tensors {
			if ft.DType != F32 || !slices.Equal(ft.Shape, []uint64{8, 2}) || !slices.Equal(ft.Strides, []uint64{1, 8}) {
				t.Errorf("uniform %v: fit tensor %d changed with the query: %v", uniform, i, ft)
			}
		}
	}
}

// TestBatchAndSpaceBounds: the batch bound is inclusive at both ends and
// counts only the outer axes (a vector is a batch of 1); a host tensor matches a descriptor taking
// host memory, and a tensor naming no space is device memory.
func TestBatchAndSpaceBounds(t *testing.T) {
	for _, c := range []struct {
		shape []uint64
		ok    bool
	}{
		{[]uint64{1000}, false},    // no outer axis: a batch of 1, below
		{[]uint64{1000, 2}, true},  // the lower bound
		{[]uint64{5, 2, 3}, true},  // the upper bound, 6
		{[]uint64{5, 7}, false},    // above
		{[]uint64{5, 1, 1}, false}, // 1, below
		{[]uint64{1, 3, 3}, false}, // 9, above
		{[]uint64{100, 3}, true},   // the inner extent does not count
	} {
		d, q := desc(t, "a.impl", 0), vec(8)
		d.Rank, d.Batch = Bounds{Min: 1, Max: 3}, &Bounds{Min: 2, Max: 6}
		q.Tensors[0].Shape = c.shape
		fits, rej, err := Match([]Candidate{{Desc: d, Module: "m", Runtime: "rt"}}, &q, env())
		if err != nil || (len(fits) == 1) != c.ok || !c.ok && rej[0].Kind != "batch" {
			t.Errorf("shape %v: fits %d rejected %v %v, want ok %v", c.shape, len(fits), rej, err, c.ok)
		}
	}
	for _, c := range []struct {
		spaces []string
		space  string
		ok     bool
	}{
		{[]string{SpaceHost}, SpaceHost, true},
		{[]string{SpaceHost}, "", false},
		{[]string{SpaceHost}, SpaceDevice, false},
		{[]string{SpaceDevice}, "", true},
		{[]string{SpaceDevice, SpaceHost}, SpaceHost, true},
	} {
		d, q := desc(t, "a.impl", 0), vec(8)
		d.MemorySpaces = c.spaces
		q.Tensors[0].MemorySpace = c.space
		fits, rej, err := Match([]Candidate{{Desc: d, Module: "m", Runtime: "rt"}}, &q, env())
		if err != nil || (len(fits) == 1) != c.ok || !c.ok && rej[0].Kind != "memory_space" {
			t.Errorf("spaces %v, tensor in %q: fits %d rejected %v %v, want ok %v", c.spaces, c.space, len(fits), rej, err, c.ok)
		}
	}
}

func TestEffectiveStrides(t *testing.T) {
	for _, c := range []struct {
		t    Tensor
		want []uint64
	}{
		{Tensor{DType: F32, Shape: []uint64{4, 3, 2}}, []uint64{1, 4, 12}},
		{Tensor{DType: F32, Shape: []uint64{4, 3, 2}, Strides: []uint64{0, 0, 0}}, []uint64{1, 4, 12}},
		{Tensor{DType: F32, Shape: []uint64{4, 3, 2}, Strides: []uint64{1, 8, 0}}, []uint64{1, 8, 24}},
		{Tensor{DType: F32, Shape: []uint64{4, 3, 2}, Strides: []uint64{0, 0, 100}}, []uint64{1, 4, 100}},
		{Tensor{DType: F32}, []uint64{}},
	} {
		if got := c.t.EffectiveStrides(); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.t, got, c.want)
		}
	}
}

// TestParams: a descriptor's parameters must each be passed, of exactly
// their version, with a value of their type, and nothing else; the fit
// carries them encoded, in the descriptor's order.
func TestParams(t *testing.T) {
	specs := []ParamSpec{{Name: "scale", Type: ParamF32, Version: 2}, {Name: "offset", Type: ParamI64, Version: 1}}
	both := []Param{{Name: "offset", Version: 1, Value: "-3"}, {Name: "scale", Version: 2, Value: "2.5"}}
	for _, c := range []struct {
		params []Param
		want   string // the rejection's reason, "" when it fits
	}{
		{both, ""},
		{both[:1], "parameter: scale (version 2, f32) is required and not passed"},
		{[]Param{both[0], {Name: "scale", Version: 1, Value: "2.5"}}, "parameter: scale is version 2 here, the query passes version 1"},
		{[]Param{both[0], {Name: "scale", Version: 3, Value: "2.5"}}, "parameter: scale is version 2 here, the query passes version 3"},
		{[]Param{both[0], {Name: "scale", Version: 2, Value: "big"}}, `parameter: scale: "big" is not an f32`},
		{[]Param{{Name: "offset", Version: 1, Value: "1.5"}, both[1]}, `parameter: offset: "1.5" is not an i64`},
		{append(slices.Clone(both), Param{Name: "gain", Version: 1, Value: "1"}), "parameter: gain is not a parameter of this implementation (it declares scale@2 f32, offset@1 i64)"},
		// Values a native caller encoded: taken as they are when of the
		// declared type, with the same version check.
		{[]Param{both[0], {Name: "scale", Version: 2, Type: ParamF32, Bits: uint64(math.Float32bits(2.5)), Value: "ignored"}}, ""},
		{[]Param{both[0], {Name: "scale", Version: 1, Type: ParamF32, Bits: uint64(math.Float32bits(2.5))}}, "parameter: scale is version 2 here, the query passes version 1"},
		{[]Param{both[0], {Name: "scale", Version: 2, Type: ParamI32, Bits: 2}}, "parameter: scale: passed as i32, the implementation declares f32"},
	} {
		d, q := desc(t, "a.impl", 0), vec(8)
		d.Params, q.Params = specs, c.params
		fits, rej, err := Match([]Candidate{{Desc: d, Module: "m", Runtime: "rt"}}, &q, env())
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if len(fits) != 1 || !slices.Equal(fits[0].Scalars, []uint64{uint64(math.Float32bits(2.5)), uint64(0xfffffffffffffffd)}) {
				t.Errorf("%v: fits %+v rejected %v", c.params, fits, rej)
			}
			continue
		}
		if len(fits) != 0 || len(rej) != 1 || rej[0].Kind != "parameter" || rej[0].Reason != c.want {
			t.Errorf("%v: fits %v rejected %+v, want %q", c.params, fits, rej, c.want)
		}
	}
	// A descriptor without parameters takes a query without them, and
	// refuses one with any.
	d, q := desc(t, "a.impl", 0), vec(8)
	if fits, _, _ := Match([]Candidate{{Desc: d, Module: "m", Runtime: "rt"}}, &q, env()); len(fits) != 1 || len(fits[0].Scalars) != 0 {
		t.Errorf("no parameters: %+v", fits)
	}
	q.Params = []Param{{Name: "scale", Version: 1, Value: "1"}, {Name: "scale", Version: 1, Value: "2"}}
	if _, _, err := Match([]Candidate{{Desc: d, Module: "m", Runtime: "rt"}}, &q, env()); err == nil || err.Error() != "parameter scale is passed twice" {
		t.Errorf("a parameter twice: %v", err)
	}
}

// TestQuantizedTensors: the block-quantized types are named and sized by
// their blocks; a quantized tensor's first axis counts blocks with a stride
// of one block and its outer strides are in blocks; matching reads them so,
// and a query's quantized tensor needs its first axis.
func TestQuantizedTensors(t *testing.T) {
	for _, c := range []struct {
		name  string
		dt    DType
		size  uint64
		align uint64
	}{{"q8x32", Q8x32, 36, 4}, {"q4x32", Q4x32, 20, 4}} {
		dt, err := ParseDType(c.name)
		if err != nil || dt != c.dt || dt.String() != c.name || dt.Size() != c.size || !dt.Quantized() || dt.Align() != c.align {
			t.Errorf("%s: parsed %v (%v), size %d, quantized %v, align %d", c.name, dt, err, dt.Size(), dt.Quantized(), dt.Align())
		}
		if (&Descriptor{}).TensorAlignment(dt) != c.align {
			t.Errorf("%s: default alignment %d, want %d (its scales')", c.name, (&Descriptor{}).TensorAlignment(dt), c.align)
		}
	}
	if F32.Quantized() || I8.Quantized() {
		t.Error("an element type counts as quantized")
	}
	// 3 rows of 4 blocks, rows 6 blocks apart: (2*6 + 3 + 1) blocks of 20 bytes.
	q4 := Tensor{DType: Q4x32, Shape: []uint64{4, 3}, Strides: []uint64{1, 6}}
	if n, ok := q4.Bytes(); !ok || n != 16*20 {
		t.Errorf("q4x32 [4,3] rows 6 blocks apart spans %d bytes, want %d", n, 16*20)
	}

	// Dequantize: a q8x32 vector of 4 blocks in, 128 f32 out.
	d := desc(t, "q.impl", 0)
	d.InputDTypes = []DType{Q8x32, Q4x32}
	d.Layouts = []string{LayoutContiguous, LayoutOuterStrided}
	query := func(in Tensor) Query {
		return Query{OpName: "x.op", Tensors: []Tensor{in, {DType: F32, Shape: []uint64{128}}}, HostBudget: Unlimited, DeviceBudget: Unlimited}
	}
	cands := []Candidate{{Desc: d, Module: "m", Runtime: "rt"}}
	for name, in := range map[string]Tensor{
		"q8x32":                 {DType: Q8x32, Shape: []uint64{4}},
		"q4x32 one block apart": {DType: Q4x32, Shape: []uint64{4}, Strides: []uint64{1}},
		"rows in blocks":        {DType: Q8x32, Shape: []uint64{2, 2}, Strides: []uint64{1, 3}},
	} {
		q := query(in)
		if fits, rej, err := Match(cands, &q, env()); err != nil || len(fits) != 1 {
			t.Errorf("%s: fits %v rejected %v err %v", name, fits, rej, err)
		}
	}
	for name, c := range map[string]struct {
		in   Tensor
		kind string
	}{
		"first axis strided": {Tensor{DType: Q8x32, Shape: []uint64{4}, Strides: []uint64{2}}, "layout"},
		"another format":     {Tensor{DType: I8, Shape: []uint64{128}}, "dtype"},
	} {
		q := query(c.in)
		if fits, rej, err := Match(cands, &q, env()); err != nil || len(fits) != 0 || len(rej) != 1 || rej[0].Kind != c.kind {
			t.Errorf("%s: fits %v rejected %v err %v; want a %s rejection", name, fits, rej, err, c.kind)
		}
	}
	q := query(Tensor{DType: Q4x32})
	if _, _, err := Match(cands, &q, env()); err == nil || !strings.Contains(err.Error(), "tensor 0: a q4x32 tensor needs a first axis") {
		t.Errorf("a quantized tensor of rank 0: %v", err)
	}
}
