package ops

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry/module"
)

// fakeNegotiator accepts every candidate without a child: the pure
// resolution path. reject names impl_ids validate refuses.
type fakeNegotiator struct {
	reject map[string]string
	calls  int
}

func (f *fakeNegotiator) negotiate(ch *Choice, q *Query) error {
	f.calls++
	if msg, ok := f.reject[ch.ImplID]; ok {
		return &rejectErr{kind: "validate", reason: "validate: " + msg}
	}
	return nil
}

func descriptor(t testing.TB, impl string, prio int, extra string) *Descriptor {
	t.Helper()
	d, err := ParseDescriptor([]byte(fmt.Sprintf(`{"impl_id":%q,"op_name":"example.sequence.prefix_sum","op_version":"1.2.0","priority":%d,
		"input_dtypes":["f32"],"output_dtypes":["f32"],"rank":[1,1],"sync_modes":["blocking"]%s,
		"callables":[{"platform":"a2a3sim","artifact":"c.bin"}]}`, impl, prio, extra)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func vec(n uint64) Query {
	return Query{OpName: "example.sequence.prefix_sum", Tensors: []Tensor{{DType: F32, Shape: []uint64{n}}}, Uniform: true,
		HostBudget: Unlimited, DeviceBudget: Unlimited}
}

func summary(r *Result) string {
	var b strings.Builder
	for _, c := range r.Compatible {
		fmt.Fprintf(&b, "ok %s %d\n", c.ImplID, c.Priority)
	}
	for _, x := range r.Rejected {
		fmt.Fprintf(&b, "no %s %s\n", x.ImplID, x.Reason)
	}
	return b.String()
}

func permutations(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(slices.Clone(p))
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

// TestResolveDeterministic resolves the same implementations presented in
// every order (6! = 720 orders of six): the same order, the same choice and
// the same rejections each time.
func TestResolveDeterministic(t *testing.T) {
	cands := []*Candidate{
		{Desc: descriptor(t, "a.scan.f32", 100, ""), Module: "a"},
		{Desc: descriptor(t, "b.scan.f32", 100, ""), Module: "b"},
		{Desc: descriptor(t, "c.scan.f32", 50, ""), Module: "c"},
		{Desc: descriptor(t, "d.scan.f32", 200, `,"dims":[0,8]`), Module: "d"},
		{Desc: descriptor(t, "e.scan.f32", 300, ""), Module: "e"},
		{Desc: descriptor(t, "f.scan.f32", 100, `,"capabilities":["x.fast"]`), Module: "f"},
	}
	var want string
	permutations(len(cands), func(p []int) {
		order := make([]*Candidate, len(p))
		for i, k := range p {
			order[i] = cands[k]
		}
		q := vec(16)
		res, err := resolve(order, &q, []string{"a2a3sim"}, "", &fakeNegotiator{reject: map[string]string{"e.scan.f32": "too long"}})
		if err != nil {
			t.Fatal(err)
		}
		got := summary(res)
		if want == "" {
			want = got
		}
		if got != want {
			t.Fatalf("order %v:\n%s\nwant:\n%s", p, got, want)
		}
	})
	if !strings.HasPrefix(want, "ok a.scan.f32 100\nok b.scan.f32 100\nok f.scan.f32 100\nok c.scan.f32 50\n") ||
		!strings.Contains(want, "no d.scan.f32 dims: input 0 dimension 0 is 16, outside 0..8") ||
		!strings.Contains(want, "no e.scan.f32 validate: too long") {
		t.Errorf("resolution:\n%s", want)
	}
}

func TestResolveExactAndVersions(t *testing.T) {
	cands := []*Candidate{
		{Desc: descriptor(t, "a.scan.f32", 100, ""), Module: "a"},
		{Desc: descriptor(t, "c.scan.f32", 50, ""), Module: "c"},
	}
	q := vec(16)
	q.ExactImplID = "c.scan.f32"
	res, err := resolve(cands, &q, []string{"a2a3sim"}, "", &fakeNegotiator{})
	if err != nil || res.Chosen().ImplID != "c.scan.f32" || len(res.Compatible) != 1 {
		t.Fatalf("exact: %v %+v", err, res)
	}
	q.ExactImplID = "nope"
	if _, err := resolve(cands, &q, []string{"a2a3sim"}, "", &fakeNegotiator{}); err == nil {
		t.Fatal("an exact id that names nothing resolved")
	}
	for _, c := range []struct{ lo, hi, want string }{
		{"1.0.0", "1.1.9", "outside [1.0.0, 1.1.9]"},
		{"2.0.0", "", "outside >= 2.0.0 within major 2"},
		{"1.2.0", "2.0.0", "spans major versions"},
		{"", "1.3.0", "needs a minimum"},
	} {
		q := vec(4)
		q.MinVersion, q.MaxVersion = c.lo, c.hi
		res, err := resolve(cands, &q, []string{"a2a3sim"}, "", &fakeNegotiator{})
		msg := fmt.Sprint(err)
		if res != nil {
			msg += summary(res)
		}
		if !strings.Contains(msg, c.want) {
			t.Errorf("[%s, %s]: %s", c.lo, c.hi, msg)
		}
	}
	q = vec(4)
	q.MinVersion = "1.0.0"
	if res, err := resolve(cands, &q, []string{"a2a3sim"}, "", &fakeNegotiator{}); err != nil || len(res.Compatible) != 2 {
		t.Errorf(">= 1.0.0: %v", err)
	}
	res, err = resolve(cands, &q, []string{"a2a3sim"}, "other_runtime", &fakeNegotiator{})
	if err == nil || strings.Count(summary(res), "backend: built for runtime , the workers run other_runtime") != 2 {
		t.Errorf("runtime mismatch: %v", err)
	}
}

// BenchmarkResolve1000 resolves among 1,000 implementations of one
// operation (a quarter refused by their descriptors, the rest negotiated
// by a negotiator that answers at once: the resolution path without the
// child round trips) and reports the median and p99 of one resolution,
// beside a baseline in the same run: sorting the 1,000 (priority, impl_id)
// pairs alone.
func BenchmarkResolve1000(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var cands []*Candidate
	for i := range 1000 {
		extra := ""
		if i%4 == 3 {
			extra = `,"dims":[0,8]`
		}
		cands = append(cands, &Candidate{Desc: descriptor(b, fmt.Sprintf("m%04d.scan.f32", i), r.IntN(1000), extra), Module: fmt.Sprintf("m%04d", i)})
	}
	r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	type pair struct {
		prio int64
		id   string
	}
	var res, base []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := vec(16)
		t0 := time.Now()
		out, err := resolve(cands, &q, []string{"a2a3sim"}, "", &fakeNegotiator{})
		res = append(res, time.Since(t0))
		if err != nil || len(out.Compatible) != 750 || len(out.Rejected) != 250 {
			b.Fatalf("%v: %d compatible", err, len(out.Compatible))
		}
		t0 = time.Now()
		ps := make([]pair, len(cands))
		for k, c := range cands {
			ps[k] = pair{c.Desc.Priority, c.Desc.ImplID}
		}
		slices.SortFunc(ps, func(a, b pair) int {
			if a.prio != b.prio {
				if a.prio > b.prio {
					return -1
				}
				return 1
			}
			return strings.Compare(a.id, b.id)
		})
		base = append(base, time.Since(t0))
	}
	slices.Sort(res)
	slices.Sort(base)
	b.ReportMetric(float64(res[len(res)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(res[len(res)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(base[len(base)/2].Microseconds()), "sort-only-p50-µs")
}

// TestDescriptorErrors: every refusal names the field, as a module.json
// field through the manifest parser.
func TestDescriptorErrors(t *testing.T) {
	base := `"impl_id":"a.b","op_name":"x.y","op_version":"1.0.0","input_dtypes":["f32"],"output_dtypes":["f32"],"rank":[1,1],"sync_modes":["blocking"],"callables":[{"platform":"a2a3sim","artifact":"c"}]`
	for _, c := range []struct{ extra, want string }{
		{`,"flavour":1`, "field operations[2].flavour: unknown field"},
		{`,"priority":"high"`, "field operations[2].priority: wrong type: string"},
		{`,"layouts":["tiled"]`, `field operations[2].layouts[0]: "tiled" is not one of contiguous, outer_strided`},
		{`,"dims":[4,2]`, "field operations[2].dims: [4, 2]: min above max"},
		{`,"alignment":3`, "field operations[2].alignment: 3 is not a power of two"},
		{`,"memory_spaces":["device","device"]`, `field operations[2].memory_spaces[1]: "device" is listed twice (a set)`},
		{`,"inputs":0,"outputs":0`, "field operations[2].inputs: 0 inputs and 0 outputs"},
		{`,"parameters":[{"name":"scale","type":"f16","version":1}]`, `field operations[2].parameters[0].type: "f16" is not one of f32, f64, i32, i64`},
		{`,"parameters":[{"name":"scale","type":"f32","version":0}]`, "field operations[2].parameters[0].version: 0: versions start at 1"},
		{`,"parameters":[{"name":"scale","type":"f32"}]`, "field operations[2].parameters[0]: name, type and version are required"},
		{`,"parameters":[{"name":"s","type":"f32","version":1},{"name":"s","type":"i32","version":1}]`, `field operations[2].parameters[1].name: "s" is declared twice`},
		{`,"parameters":[{"name":"s","type":"f32","version":1,"unit":"m"}]`, "field operations[2].unit: unknown field"},
	} {
		raw := []byte("{" + base + c.extra + "}")
		err := checkSchema(raw, "operations[2]")
		if err == nil || !strings.Contains(err.Error(), "module.json: "+c.want) {
			t.Errorf("%s: %v", c.extra, err)
		}
	}
	for _, c := range []struct{ raw, want string }{
		{`{"impl_id":"a","op_name":"prefix_sum","op_version":"1.0.0","input_dtypes":["f32"],"output_dtypes":["f32"],"rank":[1,1],"sync_modes":["blocking"],"callables":[{"platform":"a2a3sim","artifact":"c"}]}`, "field op_name: \"prefix_sum\" is not a namespaced name"},
		{`{"impl_id":"a","op_name":"x.y","op_version":"1","input_dtypes":["f32"],"output_dtypes":["f32"],"rank":[1,1],"sync_modes":["blocking"],"callables":[{"platform":"a2a3sim","artifact":"c"}]}`, "field op_version:"},
		{`{"impl_id":"a","op_name":"x.y","op_version":"1.0.0"}`, "field input_dtypes: missing (required)"},
		{`{"impl_id":"a","op_name":"x.y","op_version":"1.0.0","input_dtypes":["f32","any"],"output_dtypes":["f32"],"rank":[1,1],"sync_modes":["blocking"],"callables":[{"platform":"a2a3sim","artifact":"c"}]}`, `field input_dtypes: "any" stands alone`},
	} {
		if _, err := ParseDescriptor([]byte(c.raw)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.raw, err)
		}
	}
}

// TestOldDescriptorsLeftOut: a module stored before the operation schema
// existed (a descriptor with only impl_id and callables) resolves nothing
// and is reported, without hiding the other modules' operations.
func TestOldDescriptorsLeftOut(t *testing.T) {
	good := `{"impl_id":"b.x","op_name":"x.y","op_version":"1.0.0","input_dtypes":["f32"],"output_dtypes":["f32"],"rank":[1,1],"sync_modes":["blocking"],"callables":[{"platform":"a2a3sim","artifact":"c"}]}`
	mods := []*module.Installed{
		{PackageID: "a", Version: "1.0.0", Manifest: &module.Manifest{PackageID: "a", Version: "1.0.0",
			Operations: []module.Operation{{Raw: []byte(`{"callables":[],"impl_id":"a.x"}`), ImplID: "a.x"}}}},
		{PackageID: "b", Version: "1.0.0", Manifest: &module.Manifest{PackageID: "b", Version: "1.0.0",
			Operations: []module.Operation{{Raw: []byte(good), ImplID: "b.x"}}}},
	}
	cands, problems := CandidatesOf(mods)
	if len(cands) != 1 || cands[0].Desc.ImplID != "b.x" || len(problems) != 1 ||
		!strings.Contains(problems[0].Error(), "module a@1.0.0: operations[0]: field op_name: missing (required) (left out)") {
		t.Errorf("candidates %d, problems %v", len(cands), problems)
	}
}
