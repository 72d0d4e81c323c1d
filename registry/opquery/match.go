package opquery

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/registry/semver"
)

// Unlimited is a budget without a limit.
const Unlimited = -1

// Query asks for an operation (see the package documentation).
type Query struct {
	OpName string
	// MinVersion and MaxVersion are the inclusive op_version interval,
	// within one major version. Empty MinVersion: the newest major version
	// any candidate has; empty MaxVersion: the rest of MinVersion's major.
	MinVersion, MaxVersion string
	// Backends are the platforms allowed; empty means every one.
	Backends []string
	// Capabilities and Numerics the implementation must declare.
	Capabilities, Numerics []string
	// SyncMode is the mode execute must support (SyncBlocking when 0).
	SyncMode SyncMode
	// Tensors are the concrete tensors, inputs then outputs. With Uniform,
	// Tensors has one entry that describes every tensor of the operation.
	Tensors []Tensor
	Uniform bool
	// HostBudget and DeviceBudget bound the scratch in bytes; Unlimited
	// (negative) means no bound. Zero allows no scratch.
	HostBudget, DeviceBudget int64
	// ExactImplID, when set, names the one implementation to take: no
	// fallback to another.
	ExactImplID string
	// Params are the operation parameters passed, each naming the version
	// of its meaning; a candidate must declare exactly these, each of that
	// version.
	Params []Param
}

// Describe names the query in messages: op_name, the version interval
// asked for and the exact implementation id.
func (q *Query) Describe() string {
	s := q.OpName
	if q.MinVersion != "" {
		s += " " + q.MinVersion
		if q.MaxVersion != "" {
			s += ".." + q.MaxVersion
		}
	}
	if q.ExactImplID != "" {
		s += " (exactly " + q.ExactImplID + ")"
	}
	return s
}

// Candidate is one implementation to match: its descriptor, the module
// that provides it (package_id) and the runtime that module's callables
// are built for.
type Candidate struct {
	Desc    *Descriptor
	Module  string
	Runtime string
}

// Rejection is a candidate that does not fit the query, and why.
type Rejection struct {
	ImplID string `json:"impl_id"`
	Module string `json:"module"`
	// Kind is one of rank, layout, dtype, backend, capability, numerics,
	// version, sync, parameter, arity, dims, batch, memory_space, memory (a scratch
	// budget), or a kind of the caller's negotiation (a *Refusal: in the
	// daemon validate, scratch, impl_id, provider, activation).
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

func (r Rejection) String() string { return fmt.Sprintf("%s (%s): %s", r.ImplID, r.Module, r.Reason) }

// Refusal is a negotiation's refusal of a candidate: Match lists the
// candidate as rejected with Kind and Reason.
type Refusal struct{ Kind, Reason string }

func (e *Refusal) Error() string { return e.Reason }

// Fit is a candidate that fits its descriptor: the platform it runs on,
// the query's tensors for it (inputs then outputs, copies) and the scratch
// its negotiation asked for.
type Fit struct {
	Cand                       int // its index in the candidates given to Match
	Platform                   string
	Tensors                    []Tensor
	HostScratch, DeviceScratch uint64 // set by the negotiation
	// Scalars are the query's parameters in the descriptor's order,
	// encoded by their declared types.
	Scalars []uint64
}

// Env is what Match needs from its caller, as plain data and functions.
type Env struct {
	// Platforms are the platforms the caller can execute, in preference
	// order; Runtime the runtime its workers run ("" for any).
	Platforms []string
	Runtime   string
	// Negotiate runs a candidate that fits its descriptor on its tensors
	// and sets its scratch. A *Refusal rejects the candidate; any other
	// error ends the match. Nil accepts every candidate without scratch.
	Negotiate func(*Fit) error
}

// Match checks the query, then every candidate of q.OpName against its
// descriptor, negotiates the ones that fit (Env.Negotiate) and checks
// their scratch against the budgets. It returns the matching candidates by
// descending priority, then ascending impl_id, and the rejected ones in
// ascending impl_id. A zero q.SyncMode is set to SyncBlocking.
func Match(cands []Candidate, q *Query, env Env) (fits []Fit, rejected []Rejection, err error) {
	if err := checkQuery(q); err != nil {
		return nil, nil, err
	}
	var mine []int
	for i, c := range cands {
		if c.Desc.OpName == q.OpName {
			mine = append(mine, i)
		}
	}
	slices.SortFunc(mine, func(a, b int) int { return strings.Compare(cands[a].Desc.ImplID, cands[b].Desc.ImplID) })
	lo, hi, loose, err := versionRange(q, cands, mine)
	if err != nil {
		return nil, nil, err
	}
	all := make([]Fit, len(mine))
	var ok []*Fit
	for k, i := range mine {
		c := cands[i]
		if q.ExactImplID != "" && c.Desc.ImplID != q.ExactImplID {
			continue
		}
		f := &all[k]
		f.Cand = i
		kind, reason := check(c.Desc, q, lo, hi, loose, env.Platforms, f)
		if kind == "" && env.Runtime != "" && c.Runtime != env.Runtime {
			kind, reason = "backend", fmt.Sprintf("backend: built for runtime %s, the workers run %s", c.Runtime, env.Runtime)
		}
		if kind == "" && env.Negotiate != nil {
			if err := env.Negotiate(f); err != nil {
				var re *Refusal
				if !errors.As(err, &re) {
					return nil, nil, fmt.Errorf("%s (%s): %w", c.Desc.ImplID, c.Module, err)
				}
				kind, reason = re.Kind, re.Reason
			}
		}
		if kind == "" {
			kind, reason = overBudget(f, q)
		}
		if kind != "" {
			rejected = append(rejected, Rejection{ImplID: c.Desc.ImplID, Module: c.Module, Kind: kind, Reason: reason})
			continue
		}
		ok = append(ok, f)
	}
	slices.SortFunc(ok, func(a, b *Fit) int {
		da, db := cands[a.Cand].Desc, cands[b.Cand].Desc
		if da.Priority != db.Priority {
			if da.Priority > db.Priority {
				return -1
			}
			return 1
		}
		return strings.Compare(da.ImplID, db.ImplID)
	})
	if len(ok) > 0 {
		fits = make([]Fit, len(ok))
		for k, f := range ok {
			fits[k] = *f
		}
	}
	return fits, rejected, nil
}

// checkQuery checks that q names a namespaced operation, describes its
// tensors (concrete dtypes, ranks, strides, extents, memory spaces) and
// passes each parameter once, and sets its default sync mode.
func checkQuery(q *Query) error {
	if !ValidName(q.OpName, 2) {
		return fmt.Errorf("operation name %q is not a namespaced name", q.OpName)
	}
	if q.SyncMode == 0 {
		q.SyncMode = SyncBlocking
	}
	if len(q.Tensors) == 0 {
		return errors.New("the query describes no tensors")
	}
	if q.Uniform && len(q.Tensors) != 1 {
		return errors.New("a uniform query describes exactly one tensor")
	}
	for i, t := range q.Tensors {
		if t.DType == DTypeAny || t.DType.Size() == 0 {
			return fmt.Errorf("tensor %d: a concrete dtype is needed", i)
		}
		if t.DType.Quantized() && len(t.Shape) == 0 {
			return fmt.Errorf("tensor %d: a %s tensor needs a first axis, which counts its blocks of %d elements", i, t.DType, QuantBlock)
		}
		if len(t.Shape) > MaxRank || (len(t.Strides) != 0 && len(t.Strides) != len(t.Shape)) {
			return fmt.Errorf("tensor %d: %d dimensions (at most %d) with %d strides", i, len(t.Shape), MaxRank, len(t.Strides))
		}
		if _, ok := t.Bytes(); !ok {
			return fmt.Errorf("tensor %d: its extent overflows 64 bits", i)
		}
		if t.MemorySpace != "" && t.MemorySpace != SpaceDevice && t.MemorySpace != SpaceHost {
			return fmt.Errorf("tensor %d: memory space %q (device or host)", i, t.MemorySpace)
		}
	}
	for i, p := range q.Params {
		if !ValidName(p.Name, 1) {
			return fmt.Errorf("parameter %d: %q is not a dotted identifier", i, p.Name)
		}
		if slices.IndexFunc(q.Params, func(o Param) bool { return o.Name == p.Name }) != i {
			return fmt.Errorf("parameter %s is passed twice", p.Name)
		}
	}
	return nil
}

// versionRange returns the query's interval; for an empty MinVersion, the
// newest major version among the candidates mine (indexes into cands).
func versionRange(q *Query, cands []Candidate, mine []int) (lo, hi semver.Version, loose bool, err error) {
	if q.MinVersion == "" {
		if q.MaxVersion != "" {
			return lo, hi, false, errors.New("a maximum version needs a minimum version")
		}
		var major uint64
		for _, i := range mine {
			major = max(major, cands[i].Desc.OpVersion.Major)
		}
		// MAJOR.0.0-0 is the lowest version of the major version.
		lo, err = semver.Parse(fmt.Sprintf("%d.0.0-0", major))
		return lo, lo, true, err
	}
	if lo, err = semver.Parse(q.MinVersion); err != nil {
		return lo, hi, false, fmt.Errorf("minimum version: %w", err)
	}
	if q.MaxVersion == "" {
		return lo, lo, true, nil
	}
	if hi, err = semver.Parse(q.MaxVersion); err != nil {
		return lo, hi, false, fmt.Errorf("maximum version: %w", err)
	}
	if hi.Major != lo.Major {
		return lo, hi, false, fmt.Errorf("version interval [%s, %s] spans major versions (an interval stays within one)", q.MinVersion, q.MaxVersion)
	}
	if hi.Compare(lo) < 0 {
		return lo, hi, false, fmt.Errorf("version interval [%s, %s] is empty", q.MinVersion, q.MaxVersion)
	}
	return lo, hi, false, nil
}

func overBudget(f *Fit, q *Query) (string, string) {
	if q.HostBudget >= 0 && f.HostScratch > uint64(q.HostBudget) {
		return "memory", fmt.Sprintf("memory budget: needs %d bytes of host scratch, the budget is %d", f.HostScratch, q.HostBudget)
	}
	if q.DeviceBudget >= 0 && f.DeviceScratch > uint64(q.DeviceBudget) {
		return "memory", fmt.Sprintf("memory budget: needs %d bytes of device scratch, the budget is %d", f.DeviceScratch, q.DeviceBudget)
	}
	return "", ""
}

// check compares a descriptor with the query; it returns the kind and
// reason of the first mismatch, and on success fills in f's platform and
// tensors.
func check(d *Descriptor, q *Query, lo, hi semver.Version, loose bool, platforms []string, f *Fit) (string, string) {
	v := d.OpVersion
	if v.Compare(lo) < 0 || (loose && v.Major != lo.Major) || (!loose && v.Compare(hi) > 0) {
		want := fmt.Sprintf("[%s, %s]", lo, hi)
		if loose {
			want = fmt.Sprintf(">= %s within major %d", lo, lo.Major)
		}
		return "version", fmt.Sprintf("version: op_version %s is outside %s", v, want)
	}
	f.Platform = ""
	for _, p := range platforms {
		if slices.Contains(d.Platforms, p) && (len(q.Backends) == 0 || slices.Contains(q.Backends, p)) {
			f.Platform = p
			break
		}
	}
	if f.Platform == "" {
		return "backend", fmt.Sprintf("backend: callables for %s; the query allows %s and this runtime executes %s",
			strings.Join(d.Platforms, ", "), orEvery(q.Backends), strings.Join(platforms, ", "))
	}
	for _, c := range q.Capabilities {
		if !slices.Contains(d.Capabilities, c) {
			return "capability", fmt.Sprintf("capability: %s is not declared (declares %s)", c, orNone(d.Capabilities))
		}
	}
	for _, c := range q.Numerics {
		if !slices.Contains(d.Numerics, c) {
			return "numerics", fmt.Sprintf("numerics: %s is not guaranteed (guarantees %s)", c, orNone(d.Numerics))
		}
	}
	if !slices.Contains(d.SyncModes, q.SyncMode) {
		return "sync", fmt.Sprintf("sync: mode %s is not supported", q.SyncMode)
	}
	if kind, reason := checkParams(d, q, f); kind != "" {
		return kind, reason
	}
	n := d.Inputs + d.Outputs
	tensors := q.Tensors
	if q.Uniform {
		tensors = make([]Tensor, n)
		for i := range tensors {
			tensors[i] = q.Tensors[0]
		}
	} else if len(tensors) != n {
		return "arity", fmt.Sprintf("arity: takes %d inputs and %d outputs, the query has %d tensors", d.Inputs, d.Outputs, len(tensors))
	}
	for i, t := range tensors {
		if kind, reason := checkTensor(d, i, t); kind != "" {
			return kind, reason
		}
	}
	f.Tensors = make([]Tensor, len(tensors))
	for i, t := range tensors {
		f.Tensors[i] = t.Clone()
	}
	return "", ""
}

// checkTensor checks the query's tensor t, the i-th of the operation's
// inputs and then outputs, against d: rank, dims, batch, dtype, layout
// and memory space. It returns the kind and reason of the first mismatch,
// or "", "".
func checkTensor(d *Descriptor, i int, t Tensor) (string, string) {
	role, dts := fmt.Sprintf("input %d", i), d.InputDTypes
	if i >= d.Inputs {
		role, dts = fmt.Sprintf("output %d", i-d.Inputs), d.OutputDTypes
	}
	if r := uint64(len(t.Shape)); r < d.Rank.Min || r > d.Rank.Max {
		return "rank", fmt.Sprintf("rank: %s has rank %d, the implementation takes %d..%d", role, r, d.Rank.Min, d.Rank.Max)
	}
	if d.Dims != nil {
		for k, e := range t.Shape {
			if e < d.Dims.Min || e > d.Dims.Max {
				return "dims", fmt.Sprintf("dims: %s dimension %d is %d, outside %d..%d", role, k, e, d.Dims.Min, d.Dims.Max)
			}
		}
	}
	if d.Batch != nil && len(t.Shape) > 0 {
		b := uint64(1)
		for _, e := range t.Shape[1:] {
			b *= e
		}
		if b < d.Batch.Min || b > d.Batch.Max {
			return "batch", fmt.Sprintf("batch: %s has a batch of %d, outside %d..%d", role, b, d.Batch.Min, d.Batch.Max)
		}
	}
	if dts[0] != DTypeAny && !slices.Contains(dts, t.DType) {
		return "dtype", fmt.Sprintf("dtype: %s is %s, the implementation takes %s", role, t.DType, dtypeList(dts))
	}
	packed, outer := t.layout()
	if !(packed && slices.Contains(d.Layouts, LayoutContiguous) || outer && slices.Contains(d.Layouts, LayoutOuterStrided)) {
		what := "not outer-strided (the first axis must be contiguous)"
		if outer {
			what = "outer-strided"
		}
		return "layout", fmt.Sprintf("layout: %s is %s, the implementation takes %s", role, what, strings.Join(d.Layouts, ", "))
	}
	space := t.MemorySpace
	if space == "" {
		space = SpaceDevice
	}
	if !slices.Contains(d.MemorySpaces, space) {
		return "memory_space", fmt.Sprintf("memory space: %s is in %s memory, the implementation takes %s", role, space, strings.Join(d.MemorySpaces, ", "))
	}
	return "", ""
}

// checkParams matches the query's parameters with the descriptor's: every
// declared one passed, of its version, with a value of its type, and none
// other. On success f.Scalars holds them in the descriptor's order.
func checkParams(d *Descriptor, q *Query, f *Fit) (string, string) {
	f.Scalars = nil
	for _, p := range q.Params {
		if !slices.ContainsFunc(d.Params, func(s ParamSpec) bool { return s.Name == p.Name }) {
			return "parameter", fmt.Sprintf("parameter: %s is not a parameter of this implementation (it declares %s)", p.Name, paramList(d.Params))
		}
	}
	for _, s := range d.Params {
		i := slices.IndexFunc(q.Params, func(p Param) bool { return p.Name == s.Name })
		if i < 0 {
			return "parameter", fmt.Sprintf("parameter: %s (version %d, %s) is required and not passed", s.Name, s.Version, s.Type)
		}
		p := q.Params[i]
		if p.Version != s.Version {
			return "parameter", fmt.Sprintf("parameter: %s is version %d here, the query passes version %d", s.Name, s.Version, p.Version)
		}
		v, err := p.Encode(s.Type)
		if err != nil {
			return "parameter", fmt.Sprintf("parameter: %s: %v", s.Name, err)
		}
		f.Scalars = append(f.Scalars, v)
	}
	return "", ""
}

func paramList(l []ParamSpec) string {
	if len(l) == 0 {
		return "none"
	}
	s := make([]string, len(l))
	for i, p := range l {
		s[i] = fmt.Sprintf("%s@%d %s", p.Name, p.Version, p.Type)
	}
	return strings.Join(s, ", ")
}

func dtypeList(l []DType) string {
	s := make([]string, len(l))
	for i, d := range l {
		s[i] = d.String()
	}
	return strings.Join(s, ", ")
}

func orEvery(l []string) string {
	if len(l) == 0 {
		return "every backend"
	}
	return strings.Join(l, ", ")
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
