package ops

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ptojit/ptojit/registry/opquery"
	"github.com/ptojit/ptojit/registry/semver"
)

// QueryText is a query as the command line writes it (op resolve and op
// run): each field the value of the flag of its name.
type QueryText struct {
	Op, Version, DType, Shape, Strides   string
	Backends, Tensors, Require, Numerics []string
	Params                               []string
	Sync                                 string
	HostBudget, DeviceBudget             string
	Exact                                string
}

// QueryTextError is a query the command line wrote wrong: its message
// names the flag.
type QueryTextError struct{ Msg string }

func (e *QueryTextError) Error() string { return e.Msg }

// queryTextf is a QueryTextError.
func queryTextf(format string, args ...any) error {
	return &QueryTextError{Msg: fmt.Sprintf(format, args...)}
}

// Query turns the text into a query; every error is a *QueryTextError.
func (o *QueryText) Query() (Query, error) {
	q := Query{OpName: o.Op, Backends: o.Backends, Capabilities: o.Require, Numerics: o.Numerics,
		ExactImplID: o.Exact, HostBudget: Unlimited, DeviceBudget: Unlimited}
	if o.Op == "" {
		return q, queryTextf("--op NAME is required")
	}
	if !opquery.ValidName(o.Op, 2) {
		// A malformed name is the command line's mistake, not a lookup
		// that found nothing: exit 2, before the store is opened.
		return q, queryTextf("--op %q: not a namespaced operation name (dotted [a-z0-9_-] components, at least two, e.g. example.sequence.prefix_sum)", o.Op)
	}
	if o.Version != "" {
		lo, hi, _ := strings.Cut(o.Version, ",")
		q.MinVersion, q.MaxVersion = lo, hi
		for _, v := range []string{lo, hi} {
			if _, err := semver.Parse(v); v != "" && err != nil {
				return q, queryTextf("--version %s: %v", o.Version, err)
			}
		}
	}
	m, err := ParseSyncMode(o.Sync)
	if err != nil {
		return q, queryTextf("--sync: %v", err)
	}
	for _, s := range o.Params {
		p, err := parseParam(s)
		if err != nil {
			return q, err
		}
		q.Params = append(q.Params, p)
	}
	q.SyncMode = m
	for _, b := range []struct {
		s   string
		dst *int64
	}{{o.HostBudget, &q.HostBudget}, {o.DeviceBudget, &q.DeviceBudget}} {
		if b.s == "" {
			continue
		}
		v, err := strconv.ParseInt(b.s, 10, 64)
		if err != nil || v < 0 {
			return q, queryTextf("budget %q: not a number of bytes", b.s)
		}
		*b.dst = v
	}
	return o.tensors(q)
}

// tensors adds the tensors the text describes to q.
func (o *QueryText) tensors(q Query) (Query, error) {
	if (o.DType != "" || o.Shape != "" || o.Strides != "") && len(o.Tensors) > 0 {
		return q, queryTextf("give --dtype/--shape/--strides or --tensor, not both")
	}
	if len(o.Tensors) == 0 {
		if o.DType == "" || o.Shape == "" {
			return q, queryTextf("describe the tensors: --dtype D --shape N[,N...], or --tensor DTYPE:SHAPE[:STRIDES]...")
		}
		t, err := parseTensor(o.DType, o.Shape, o.Strides)
		if err != nil {
			return q, err
		}
		q.Tensors, q.Uniform = []Tensor{t}, true
		return q, nil
	}
	for _, s := range o.Tensors {
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return q, queryTextf("--tensor %q: want DTYPE:SHAPE[:STRIDES]", s)
		}
		parts = append(parts, "")
		t, err := parseTensor(parts[0], parts[1], parts[2])
		if err != nil {
			return q, err
		}
		q.Tensors = append(q.Tensors, t)
	}
	return q, nil
}

// parseList reads a comma-separated list of non-negative integers.
func parseList(s, what string) ([]uint64, error) {
	if s == "" {
		return nil, nil
	}
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, queryTextf("%s %q: not a list of non-negative integers", what, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseParam reads NAME[@VERSION]=VALUE; the value's type is the
// descriptor's, checked at resolution.
func parseParam(s string) (Param, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || value == "" {
		return Param{}, queryTextf("--param %q: want NAME[@VERSION]=VALUE", s)
	}
	p := Param{Name: name, Version: 1, Value: value}
	if n, v, ok := strings.Cut(name, "@"); ok {
		ver, err := strconv.ParseUint(v, 10, 32)
		if err != nil || ver == 0 {
			return Param{}, queryTextf("--param %q: version %q is not a number from 1", s, v)
		}
		p.Name, p.Version = n, uint32(ver)
	}
	return p, nil
}

// parseTensor reads one tensor: a dtype, a shape and strides.
func parseTensor(dtype, shape, strides string) (Tensor, error) {
	d, err := ParseDType(dtype)
	if err != nil || d == DTypeAny {
		return Tensor{}, queryTextf("dtype %q: a concrete dtype (f32, f16, bf16, f64, i64, i32, i16, i8, u8, q8x32, q4x32)", dtype)
	}
	sh, err := parseList(shape, "shape")
	if err != nil {
		return Tensor{}, err
	}
	st, err := parseList(strides, "strides")
	if err != nil {
		return Tensor{}, err
	}
	if len(sh) > MaxRank || (len(st) > 0 && len(st) != len(sh)) {
		return Tensor{}, queryTextf("shape %q with strides %q: at most %d dimensions, one stride per dimension", shape, strides, MaxRank)
	}
	return Tensor{DType: d, Shape: sh, Strides: st}, nil
}
