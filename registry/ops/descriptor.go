package ops

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"reflect"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/opquery"
	"github.com/ptojit/ptojit/registry/semver"
)

func init() { module.SetOperationSchema(checkSchema) }

// The vocabulary of descriptors and queries is package opquery's; these
// names keep it reachable as ops.X.
type (
	DType    = opquery.DType
	SyncMode = opquery.SyncMode
	Bounds   = opquery.Bounds
)

// Element types: opquery's.
const (
	DTypeAny = opquery.DTypeAny
	F32      = opquery.F32
	I32      = opquery.I32
	F16      = opquery.F16
	BF16     = opquery.BF16
	I16      = opquery.I16
	I8       = opquery.I8
	U8       = opquery.U8
	F64      = opquery.F64
	I64      = opquery.I64
	Q8x32    = opquery.Q8x32
	Q4x32    = opquery.Q4x32
)

// Layouts, memory spaces and sync modes: opquery's.
const (
	LayoutContiguous   = opquery.LayoutContiguous
	LayoutOuterStrided = opquery.LayoutOuterStrided
	SpaceDevice        = opquery.SpaceDevice
	SpaceHost          = opquery.SpaceHost
	SyncBlocking       = opquery.SyncBlocking
	SyncAsync          = opquery.SyncAsync
)

// ParseDType reads a dtype name (opquery.ParseDType).
func ParseDType(s string) (DType, error) { return opquery.ParseDType(s) }

// ParseSyncMode reads "blocking" or "async" (opquery.ParseSyncMode).
func ParseSyncMode(s string) (SyncMode, error) { return opquery.ParseSyncMode(s) }

// Descriptor is one operation implementation's descriptor: an entry of a
// manifest's operations (see the package documentation for the schema):
// the fields the matching rules read (opquery.Descriptor, whose Platforms
// are those of Callables) and the callables.
// A plain value once parsed; Resolve hands out copies.
type Descriptor struct {
	opquery.Descriptor
	Callables []module.OperationCallable
}

// rawDescriptor is the JSON form; pointers tell absent from zero.
type rawDescriptor struct {
	ImplID       *string                    `json:"impl_id"`
	OpName       *string                    `json:"op_name"`
	OpVersion    *string                    `json:"op_version"`
	Priority     *int64                     `json:"priority"`
	Capabilities []string                   `json:"capabilities"`
	Numerics     []string                   `json:"numerics"`
	Inputs       *int                       `json:"inputs"`
	Outputs      *int                       `json:"outputs"`
	InputDTypes  []string                   `json:"input_dtypes"`
	OutputDTypes []string                   `json:"output_dtypes"`
	Layouts      []string                   `json:"layouts"`
	MemorySpaces []string                   `json:"memory_spaces"`
	Alignment    *uint64                    `json:"alignment"`
	Rank         []uint64                   `json:"rank"`
	Dims         []uint64                   `json:"dims"`
	Batch        []uint64                   `json:"batch"`
	SyncModes    []string                   `json:"sync_modes"`
	Parameters   []rawParam                 `json:"parameters"`
	Callables    []module.OperationCallable `json:"callables"`
}

type rawParam struct {
	Name    *string `json:"name"`
	Type    *string `json:"type"`
	Version *uint32 `json:"version"`
}

// unknownField returns a field of the JSON object b that rawDescriptor
// does not have, looking into its parameters and callables as the decoder
// does (names match without regard to case, as encoding/json matches them).
func unknownField(b []byte) (string, bool) {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return "", false
	}
	return unknownIn(v, reflect.TypeFor[rawDescriptor]())
}

// unknownIn returns the first key, in sorted order, of an object within v
// that the struct type t (or its element type) has no field for.
func unknownIn(v any, t reflect.Type) (string, bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if f, ok := unknownIn(e, t); ok {
				return f, true
			}
		}
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return "", false
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			i := slices.IndexFunc(reflect.VisibleFields(t), func(f reflect.StructField) bool {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				return f.IsExported() && strings.EqualFold(cmp.Or(name, f.Name), k)
			})
			if i < 0 {
				return k, true
			}
			if f, ok := unknownIn(v[k], reflect.VisibleFields(t)[i].Type); ok {
				return f, true
			}
		}
	}
	return "", false
}

// Limits of a descriptor.
const (
	MaxTensors  = opquery.MaxTensors // inputs + outputs
	MaxRank     = opquery.MaxRank
	maxListLen  = 64
	maxParams   = 16 // parameters of one descriptor
	maxPriority = 1<<31 - 1
)

// DescriptorError is a descriptor that is not valid: Field names the
// descriptor's field ("op_version").
type DescriptorError struct {
	Field  string
	Reason string
}

func (e *DescriptorError) Error() string { return fmt.Sprintf("field %s: %s", e.Field, e.Reason) }

func derr(field, format string, args ...any) error {
	return &DescriptorError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// checkSchema is the operation schema the module package applies to every
// untrusted manifest.
func checkSchema(canon json.RawMessage, field string) error {
	if _, err := ParseDescriptor(canon); err != nil {
		var de *DescriptorError
		if errors.As(err, &de) {
			return &module.FieldError{File: module.ManifestName, Field: field + "." + de.Field, Reason: de.Reason}
		}
		return &module.FieldError{File: module.ManifestName, Field: field, Reason: err.Error()}
	}
	return nil
}

func validName(s string, min int) bool { return opquery.ValidName(s, min) }

// ParseDescriptor parses and validates one descriptor. Errors are
// *DescriptorError naming the field.
func ParseDescriptor(b []byte) (*Descriptor, error) {
	r, err := decodeDescriptor(b)
	if err != nil {
		return nil, err
	}
	d := &Descriptor{Descriptor: opquery.Descriptor{Inputs: 1, Outputs: 1, Layouts: []string{LayoutContiguous}, MemorySpaces: []string{SpaceDevice}}}
	for _, part := range []func(*rawDescriptor) error{d.parseIdentity, d.parseTensors, d.parseShape, d.parseExecution} {
		if err := part(r); err != nil {
			return nil, err
		}
	}
	if len(r.Callables) == 0 {
		return nil, derr("callables", "empty: one callable per platform")
	}
	d.Callables = slices.Clone(r.Callables)
	for _, c := range d.Callables {
		d.Platforms = append(d.Platforms, c.Platform)
	}
	return d, nil
}

// decodeDescriptor decodes the JSON of a descriptor, refusing unknown
// fields and missing required ones.
func decodeDescriptor(b []byte) (*rawDescriptor, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	r := &rawDescriptor{}
	if err := dec.Decode(r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, derr(te.Field, "wrong type: %s, want %s", te.Value, te.Type)
		}
		if f, ok := unknownField(b); ok {
			return nil, derr(f, "unknown field (see the operation descriptor schema)")
		}
		return nil, derr("", "%v", err)
	}
	for _, req := range []struct {
		name string
		ok   bool
	}{{"impl_id", r.ImplID != nil}, {"op_name", r.OpName != nil}, {"op_version", r.OpVersion != nil},
		{"input_dtypes", r.InputDTypes != nil}, {"output_dtypes", r.OutputDTypes != nil}, {"rank", r.Rank != nil},
		{"sync_modes", r.SyncModes != nil}, {"callables", r.Callables != nil}} {
		if !req.ok {
			return nil, derr(req.name, "missing (required)")
		}
	}
	return r, nil
}

// parseIdentity takes the implementation id, the operation's name and
// version, the priority, the capabilities and the numerics of r.
func (d *Descriptor) parseIdentity(r *rawDescriptor) error {
	d.ImplID, d.OpName = *r.ImplID, *r.OpName
	if !validName(d.ImplID, 1) {
		return derr("impl_id", "%q is not a dotted identifier", d.ImplID)
	}
	if !validName(d.OpName, 2) {
		return derr("op_name", "%q is not a namespaced name (dotted [a-z0-9_-] components, at least two, e.g. example.sequence.prefix_sum)", d.OpName)
	}
	v, err := semver.Parse(*r.OpVersion)
	if err != nil {
		return derr("op_version", "%v", err)
	}
	d.OpVersion = v
	if r.Priority != nil {
		if *r.Priority < -maxPriority || *r.Priority > maxPriority {
			return derr("priority", "%d is outside ±%d", *r.Priority, maxPriority)
		}
		d.Priority = *r.Priority
	}
	for _, f := range []struct {
		name string
		in   []string
		out  *[]string
	}{{"capabilities", r.Capabilities, &d.Capabilities}, {"numerics", r.Numerics, &d.Numerics}} {
		if err := checkSet(f.name, f.in, func(s string) error {
			if !validName(s, 1) {
				return fmt.Errorf("%q is not a dotted identifier", s)
			}
			return nil
		}); err != nil {
			return err
		}
		*f.out = slices.Clone(f.in)
	}
	return nil
}

// parseTensors takes the tensor counts, dtypes, layouts, memory spaces and
// alignment of r.
func (d *Descriptor) parseTensors(r *rawDescriptor) error {
	if r.Inputs != nil {
		d.Inputs = *r.Inputs
	}
	if r.Outputs != nil {
		d.Outputs = *r.Outputs
	}
	if d.Inputs < 0 || d.Outputs < 0 || d.Inputs+d.Outputs == 0 || d.Inputs+d.Outputs > MaxTensors {
		return derr("inputs", "%d inputs and %d outputs: between 1 and %d tensors in all", d.Inputs, d.Outputs, MaxTensors)
	}
	for _, f := range []struct {
		name string
		in   []string
		out  *[]DType
	}{{"input_dtypes", r.InputDTypes, &d.InputDTypes}, {"output_dtypes", r.OutputDTypes, &d.OutputDTypes}} {
		if len(f.in) == 0 {
			return derr(f.name, "empty: name dtypes, or \"any\"")
		}
		if err := checkSet(f.name, f.in, func(s string) error { _, err := ParseDType(s); return err }); err != nil {
			return err
		}
		for _, s := range f.in {
			t, _ := ParseDType(s)
			*f.out = append(*f.out, t)
		}
		if len(*f.out) > 1 && slices.Contains(*f.out, DTypeAny) {
			return derr(f.name, "\"any\" stands alone")
		}
	}
	if r.Layouts != nil {
		if len(r.Layouts) == 0 {
			return derr("layouts", "empty")
		}
		if err := checkSet("layouts", r.Layouts, oneOf(LayoutContiguous, LayoutOuterStrided)); err != nil {
			return err
		}
		d.Layouts = slices.Clone(r.Layouts)
	}
	if r.MemorySpaces != nil {
		if len(r.MemorySpaces) == 0 {
			return derr("memory_spaces", "empty")
		}
		if err := checkSet("memory_spaces", r.MemorySpaces, oneOf(SpaceDevice, SpaceHost)); err != nil {
			return err
		}
		d.MemorySpaces = slices.Clone(r.MemorySpaces)
	}
	if r.Alignment != nil {
		if a := *r.Alignment; a != 0 && (bits.OnesCount64(a) != 1 || a > 1<<20) {
			return derr("alignment", "%d is not a power of two up to 1 MiB (bytes; 0 for the element size)", a)
		}
		d.Alignment = *r.Alignment
	}
	return nil
}

// parseShape takes the rank, dims and batch bounds of r.
func (d *Descriptor) parseShape(r *rawDescriptor) error {
	rank, err := bounds("rank", r.Rank)
	if err != nil {
		return err
	}
	if rank.Max > MaxRank {
		return derr("rank", "[%d, %d]: at most %d dimensions", rank.Min, rank.Max, MaxRank)
	}
	d.Rank = rank
	if r.Dims != nil {
		b, err := bounds("dims", r.Dims)
		if err != nil {
			return err
		}
		d.Dims = &b
	}
	if r.Batch != nil {
		b, err := bounds("batch", r.Batch)
		if err != nil {
			return err
		}
		d.Batch = &b
	}
	return nil
}

// parseExecution takes the sync modes and the parameters of r.
func (d *Descriptor) parseExecution(r *rawDescriptor) error {
	if len(r.SyncModes) == 0 {
		return derr("sync_modes", "empty: name blocking and/or async")
	}
	if err := checkSet("sync_modes", r.SyncModes, func(s string) error { _, err := ParseSyncMode(s); return err }); err != nil {
		return err
	}
	for _, s := range r.SyncModes {
		m, _ := ParseSyncMode(s)
		d.SyncModes = append(d.SyncModes, m)
	}
	if len(r.Parameters) > maxParams {
		return derr("parameters", "more than %d entries", maxParams)
	}
	for i, p := range r.Parameters {
		w := fmt.Sprintf("parameters[%d]", i)
		if p.Name == nil || p.Type == nil || p.Version == nil {
			return derr(w, "name, type and version are required")
		}
		if !validName(*p.Name, 1) {
			return derr(w+".name", "%q is not a dotted identifier", *p.Name)
		}
		if slices.ContainsFunc(d.Params, func(s opquery.ParamSpec) bool { return s.Name == *p.Name }) {
			return derr(w+".name", "%q is declared twice", *p.Name)
		}
		if !slices.Contains(opquery.ParamTypes, *p.Type) {
			return derr(w+".type", "%q is not one of %s", *p.Type, strings.Join(opquery.ParamTypes, ", "))
		}
		if *p.Version == 0 {
			return derr(w+".version", "0: versions start at 1")
		}
		d.Params = append(d.Params, opquery.ParamSpec{Name: *p.Name, Type: *p.Type, Version: *p.Version})
	}
	return nil
}

func oneOf(names ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(names, s) {
			return fmt.Errorf("%q is not one of %s", s, strings.Join(names, ", "))
		}
		return nil
	}
}

// checkSet checks a list used as a set: at most maxListLen entries, each
// valid, none twice.
func checkSet(name string, l []string, valid func(string) error) error {
	if len(l) > maxListLen {
		return derr(name, "more than %d entries", maxListLen)
	}
	for i, s := range l {
		if err := valid(s); err != nil {
			return derr(fmt.Sprintf("%s[%d]", name, i), "%v", err)
		}
		if slices.Index(l, s) != i {
			return derr(fmt.Sprintf("%s[%d]", name, i), "%q is listed twice (a set)", s)
		}
	}
	return nil
}

func bounds(name string, l []uint64) (Bounds, error) {
	if len(l) != 2 {
		return Bounds{}, derr(name, "%d numbers, want [min, max]", len(l))
	}
	if l[0] > l[1] {
		return Bounds{}, derr(name, "[%d, %d]: min above max", l[0], l[1])
	}
	return Bounds{Min: l[0], Max: l[1]}, nil
}
