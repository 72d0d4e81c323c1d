package ops

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/registry/module"
)

// Tensor is a concrete tensor descriptor of a query: element type, shape
// and strides in elements, first axis innermost. Strides may be empty
// (packed); a zero stride means packed for that axis.
type Tensor struct {
	DType   DType
	Shape   []uint64
	Strides []uint64
	// MemorySpace is SpaceDevice (the default when empty) or SpaceHost.
	MemorySpace string
}

func (t Tensor) clone() Tensor {
	t.Shape, t.Strides = slices.Clone(t.Shape), slices.Clone(t.Strides)
	return t
}

func (t Tensor) String() string {
	s := t.DType.String() + ":" + joinU(t.Shape)
	if len(t.Strides) > 0 {
		s += ":" + joinU(t.Strides)
	}
	return s
}

func joinU(l []uint64) string {
	parts := make([]string, len(l))
	for i, v := range l {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// packed reports whether every stride is 0 or the packed one, and
// outerStrided whether the first axis is contiguous and every outer
// stride covers the axes inside it.
func (t Tensor) layout() (packed, outerStrided bool) {
	if len(t.Strides) == 0 {
		return true, true
	}
	packed, outerStrided = true, true
	ext := uint64(1)
	for i, n := range t.Shape {
		s := t.Strides[i]
		if s != 0 && s != ext {
			packed = false
			if i == 0 || s < ext {
				outerStrided = false
			}
		}
		if s == 0 || s == ext {
			ext *= n
		} else {
			ext = s * n
		}
	}
	return packed, outerStrided
}

// Bytes returns the bytes the tensor spans: its last element's offset
// plus one element, by its strides; ok is false on overflow.
func (t Tensor) Bytes() (n uint64, ok bool) {
	size := t.DType.Size()
	if slices.Contains(t.Shape, 0) {
		return 0, true
	}
	var last, ext uint64 = 0, 1
	for i, d := range t.Shape {
		s := ext
		if i < len(t.Strides) && t.Strides[i] != 0 {
			s = t.Strides[i]
		}
		hi, lo := bits.Mul64(s, d-1)
		if hi != 0 || lo > ^uint64(0)-last {
			return 0, false
		}
		last += lo
		hi, ext = bits.Mul64(s, d)
		if hi != 0 {
			return 0, false
		}
	}
	hi, lo := bits.Mul64(last+1, size)
	return lo, hi == 0
}

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
}

// Candidate is one implementation known to the resolver: its descriptor
// and the module that provides it.
type Candidate struct {
	Desc          *Descriptor
	Module        string // package_id
	ModuleVersion string
	Deps          []string // package_ids the module depends on, transitively
	Runtime       string   // the runtime the module's callables are built for

	installed *module.Installed
}

// Rejection is a candidate that does not fit the query, and why.
type Rejection struct {
	ImplID string `json:"impl_id"`
	Module string `json:"module"`
	// Kind is one of rank, layout, dtype, backend, capability, numerics,
	// version, sync, arity, dims, batch, memory_space, memory (a scratch
	// budget), validate, scratch, impl_id, provider (no entry points),
	// activation (its module's activation failed: ActivationError).
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

func (r Rejection) String() string { return fmt.Sprintf("%s (%s): %s", r.ImplID, r.Module, r.Reason) }

// Choice is a compatible candidate with what negotiation gave.
type Choice struct {
	ImplID        string `json:"impl_id"`
	Module        string `json:"module"`
	Version       string `json:"version"` // op_version
	Priority      int64  `json:"priority"`
	Platform      string `json:"platform"`
	HostScratch   uint64 `json:"host_scratch"`
	DeviceScratch uint64 `json:"device_scratch"`

	cand    *Candidate
	tensors []Tensor // the query's tensors for this candidate: inputs then outputs
}

// Result is the outcome of a resolution: the compatible candidates in
// order (the first is chosen) and every rejected candidate with its reason,
// by impl_id.
type Result struct {
	Compatible []Choice
	Rejected   []Rejection
}

// Chosen is the first compatible candidate, or nil.
func (r *Result) Chosen() *Choice {
	if len(r.Compatible) == 0 {
		return nil
	}
	return &r.Compatible[0]
}

// NotFoundError says that no candidate fits; Result lists why.
type NotFoundError struct {
	Query  string
	Result *Result
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no compatible implementation of %s", e.Query)
	if len(e.Result.Rejected) == 0 {
		b.WriteString(": no enabled module provides it")
	}
	for _, r := range e.Result.Rejected {
		fmt.Fprintf(&b, "\n  rejected %s", r)
	}
	return b.String()
}

// negotiator runs a candidate's validate and scratch query on its tensors.
// An error with a *Rejection is a refusal; anything else fails the
// resolution.
type negotiator interface {
	negotiate(c *Choice, q *Query) error
}

// rejectErr makes a negotiation refusal.
type rejectErr struct{ kind, reason string }

func (e *rejectErr) Error() string { return e.reason }

// versionRange returns the query's interval; for an empty MinVersion, the
// newest major version among cands.
func versionRange(q *Query, cands []*Candidate) (lo, hi module.Version, loose bool, err error) {
	if q.MinVersion == "" {
		if q.MaxVersion != "" {
			return lo, hi, false, errors.New("a maximum version needs a minimum version")
		}
		var major uint64
		for _, c := range cands {
			major = max(major, c.Desc.OpVersion.Major)
		}
		lo, _ = module.ParseVersion(fmt.Sprintf("%d.0.0-0", major))
		return lo, lo, true, nil
	}
	if lo, err = module.ParseVersion(q.MinVersion); err != nil {
		return lo, hi, false, fmt.Errorf("minimum version: %w", err)
	}
	if q.MaxVersion == "" {
		return lo, lo, true, nil
	}
	if hi, err = module.ParseVersion(q.MaxVersion); err != nil {
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

func (q *Query) describe() string {
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

// resolve checks every candidate of q.OpName against its descriptor, then
// negotiates the ones that fit, and orders the compatible ones by
// descending priority, then ascending impl_id. platforms are the
// platforms the caller can execute, in preference order, and runtime the
// runtime its workers run ("" for any).
func resolve(cands []*Candidate, q *Query, platforms []string, runtime string, neg negotiator) (*Result, error) {
	if !validName(q.OpName, 2) {
		return nil, fmt.Errorf("operation name %q is not a namespaced name", q.OpName)
	}
	if q.SyncMode == 0 {
		q.SyncMode = SyncBlocking
	}
	if len(q.Tensors) == 0 {
		return nil, errors.New("the query describes no tensors")
	}
	if q.Uniform && len(q.Tensors) != 1 {
		return nil, errors.New("a uniform query describes exactly one tensor")
	}
	for i, t := range q.Tensors {
		if t.DType == DTypeAny || t.DType.Size() == 0 {
			return nil, fmt.Errorf("tensor %d: a concrete dtype is needed", i)
		}
		if len(t.Shape) > MaxRank || (len(t.Strides) != 0 && len(t.Strides) != len(t.Shape)) {
			return nil, fmt.Errorf("tensor %d: %d dimensions (at most %d) with %d strides", i, len(t.Shape), MaxRank, len(t.Strides))
		}
		if _, ok := t.Bytes(); !ok {
			return nil, fmt.Errorf("tensor %d: its extent overflows 64 bits", i)
		}
		if t.MemorySpace != "" && t.MemorySpace != SpaceDevice && t.MemorySpace != SpaceHost {
			return nil, fmt.Errorf("tensor %d: memory space %q (device or host)", i, t.MemorySpace)
		}
	}
	var mine []*Candidate
	for _, c := range cands {
		if c.Desc.OpName == q.OpName {
			mine = append(mine, c)
		}
	}
	slices.SortFunc(mine, func(a, b *Candidate) int { return strings.Compare(a.Desc.ImplID, b.Desc.ImplID) })
	lo, hi, loose, err := versionRange(q, mine)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var comp []*Choice
	for _, c := range mine {
		if q.ExactImplID != "" && c.Desc.ImplID != q.ExactImplID {
			continue
		}
		ch := &Choice{ImplID: c.Desc.ImplID, Module: c.Module, Version: c.Desc.OpVersion.String(), Priority: c.Desc.Priority, cand: c}
		kind, reason := check(c.Desc, q, lo, hi, loose, platforms, ch)
		if kind == "" && runtime != "" && c.Runtime != runtime {
			kind, reason = "backend", fmt.Sprintf("backend: built for runtime %s, the workers run %s", c.Runtime, runtime)
		}
		if kind != "" {
			res.Rejected = append(res.Rejected, Rejection{ImplID: c.Desc.ImplID, Module: c.Module, Kind: kind, Reason: reason})
			continue
		}
		if err := neg.negotiate(ch, q); err != nil {
			var re *rejectErr
			if !errors.As(err, &re) {
				return nil, fmt.Errorf("%s (%s): %w", c.Desc.ImplID, c.Module, err)
			}
			res.Rejected = append(res.Rejected, Rejection{ImplID: c.Desc.ImplID, Module: c.Module, Kind: re.kind, Reason: re.reason})
			continue
		}
		if kind, reason := overBudget(ch, q); kind != "" {
			res.Rejected = append(res.Rejected, Rejection{ImplID: c.Desc.ImplID, Module: c.Module, Kind: kind, Reason: reason})
			continue
		}
		comp = append(comp, ch)
	}
	slices.SortFunc(comp, func(a, b *Choice) int {
		if a.Priority != b.Priority {
			if a.Priority > b.Priority {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ImplID, b.ImplID)
	})
	res.Compatible = make([]Choice, len(comp))
	for i, c := range comp {
		res.Compatible[i] = *c
	}
	if len(res.Compatible) == 0 {
		return res, &NotFoundError{Query: q.describe(), Result: res}
	}
	return res, nil
}

func overBudget(ch *Choice, q *Query) (string, string) {
	if q.HostBudget >= 0 && ch.HostScratch > uint64(q.HostBudget) {
		return "memory", fmt.Sprintf("memory budget: needs %d bytes of host scratch, the budget is %d", ch.HostScratch, q.HostBudget)
	}
	if q.DeviceBudget >= 0 && ch.DeviceScratch > uint64(q.DeviceBudget) {
		return "memory", fmt.Sprintf("memory budget: needs %d bytes of device scratch, the budget is %d", ch.DeviceScratch, q.DeviceBudget)
	}
	return "", ""
}

// check compares a descriptor with the query; it returns the kind and
// reason of the first mismatch, and on success fills in ch's platform and
// tensors.
func check(d *Descriptor, q *Query, lo, hi module.Version, loose bool, platforms []string, ch *Choice) (string, string) {
	v := d.OpVersion
	if v.Compare(lo) < 0 || (loose && v.Major != lo.Major) || (!loose && v.Compare(hi) > 0) {
		want := fmt.Sprintf("[%s, %s]", lo, hi)
		if loose {
			want = fmt.Sprintf(">= %s within major %d", lo, lo.Major)
		}
		return "version", fmt.Sprintf("version: op_version %s is outside %s", v, want)
	}
	var have []string
	for _, c := range d.Callables {
		have = append(have, c.Platform)
	}
	ch.Platform = ""
	for _, p := range platforms {
		if slices.Contains(have, p) && (len(q.Backends) == 0 || slices.Contains(q.Backends, p)) {
			ch.Platform = p
			break
		}
	}
	if ch.Platform == "" {
		return "backend", fmt.Sprintf("backend: callables for %s; the query allows %s and this runtime executes %s",
			strings.Join(have, ", "), orEvery(q.Backends), strings.Join(platforms, ", "))
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
	}
	ch.tensors = make([]Tensor, len(tensors))
	for i, t := range tensors {
		ch.tensors[i] = t.clone()
	}
	return "", ""
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
