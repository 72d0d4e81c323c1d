package opquery

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/ptojit/ptojit/registry/semver"
)

// DType is a tensor element type: the enum ptojit_dtype of ptojit_sim.h.
type DType uint32

// Element types. DTypeAny appears only in descriptors: any element type,
// which the provider's validate then decides.
const (
	DTypeAny DType = 0
	F32      DType = 1
	I32      DType = 2
	F16      DType = 3
	BF16     DType = 4
	I16      DType = 5
	I8       DType = 6
	U8       DType = 7
	F64      DType = 8
	I64      DType = 9
	// Q8x32 and Q4x32 are ptojit's block-quantized types (ptojit_sim.h
	// 1.3): blocks of QuantBlock elements, each block a little-endian f32
	// scale followed by the block's signed integers, 8-bit (Q8x32, 36
	// bytes a block) or 4-bit two's complement, two to a byte, element
	// 2k in the low nibble of byte k (Q4x32, 20 bytes a block). Element i
	// of a block is scale * q[i]. A tensor of one counts blocks on its
	// first axis, whose stride is one block; the strides of its outer axes
	// are in blocks.
	Q8x32    DType = 10
	Q4x32    DType = 11
	maxDType       = Q4x32
)

// QuantBlock is the number of elements of one block of Q8x32 and Q4x32.
const QuantBlock = 32

var dtypeNames = [...]string{"any", "f32", "i32", "f16", "bf16", "i16", "i8", "u8", "f64", "i64", "q8x32", "q4x32"}
var dtypeSizes = [...]uint64{0, 4, 4, 2, 2, 2, 1, 1, 8, 8, 4 + QuantBlock, 4 + QuantBlock/2}

func (d DType) String() string {
	if d <= maxDType {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint32(d))
}

// Size is the bytes of one unit of the first axis (0 for DTypeAny or an
// unknown type): the element size, or for a quantized type the bytes of
// one block.
func (d DType) Size() uint64 {
	if d <= maxDType {
		return dtypeSizes[d]
	}
	return 0
}

// Quantized reports whether d is a block-quantized type: its first axis
// counts blocks of QuantBlock elements, and its strides are in blocks.
func (d DType) Quantized() bool { return d == Q8x32 || d == Q4x32 }

// Align is the alignment a tensor of d needs when its descriptor names
// none: the element size, or for a quantized type that of its f32 scales.
func (d DType) Align() uint64 {
	if d.Quantized() {
		return 4
	}
	return d.Size()
}

// ParseDType reads a dtype name: f32, f16, bf16, f64, i64, i32, i16, i8,
// u8, q8x32, q4x32 (and "any", which only descriptors may use).
func ParseDType(s string) (DType, error) {
	if i := slices.Index(dtypeNames[:], s); i >= 0 {
		return DType(i), nil
	}
	return 0, fmt.Errorf("unknown dtype %q (one of %s)", s, strings.Join(dtypeNames[1:], ", "))
}

// Layouts a descriptor may accept.
const (
	// LayoutContiguous: every axis packed (all strides 0, or the packed ones).
	LayoutContiguous = "contiguous"
	// LayoutOuterStrided: the first (innermost) axis contiguous, outer axes
	// with explicit strides of at least the packed extent.
	LayoutOuterStrided = "outer_strided"
)

// Memory spaces a descriptor may accept.
const (
	SpaceDevice = "device" // the worker's shared tensor arena
	SpaceHost   = "host"
)

// SyncMode is how execute completes: the enum ptojit_sync_mode.
type SyncMode uint32

const (
	SyncBlocking SyncMode = 1
	SyncAsync    SyncMode = 2
)

func (m SyncMode) String() string {
	switch m {
	case SyncBlocking:
		return "blocking"
	case SyncAsync:
		return "async"
	}
	return fmt.Sprintf("sync(%d)", uint32(m))
}

// ParseSyncMode reads "blocking" or "async".
func ParseSyncMode(s string) (SyncMode, error) {
	switch s {
	case "blocking":
		return SyncBlocking, nil
	case "async":
		return SyncAsync, nil
	}
	return 0, fmt.Errorf("unknown sync mode %q (blocking or async)", s)
}

// Limits of a descriptor and a query.
const (
	MaxTensors = 16 // inputs + outputs
	MaxRank    = 4
)

// ValidName reports whether s is a dotted identifier ([a-z0-9_-]
// components joined by single dots) of at most 128 bytes with at least min
// components. An op_name has at least two.
func ValidName(s string, min int) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	parts := strings.Split(s, ".")
	if len(parts) < min {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for _, c := range p {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Bounds is an inclusive range [Min, Max].
type Bounds struct{ Min, Max uint64 }

// Descriptor holds the fields of an operation implementation's descriptor
// that the rules read (see the package documentation of registry/ops for
// the schema).
type Descriptor struct {
	ImplID       string
	OpName       string
	OpVersion    semver.Version
	Priority     int64
	Capabilities []string
	Numerics     []string
	Inputs       int
	Outputs      int
	InputDTypes  []DType // DTypeAny allowed
	OutputDTypes []DType
	Layouts      []string
	MemorySpaces []string
	Alignment    uint64 // bytes; 0 means the element size
	Rank         Bounds
	Dims         *Bounds // every dimension's extent; nil: any
	Batch        *Bounds // the product of the outer axes; nil: any
	SyncModes    []SyncMode
	// Params are the operation's parameters, in the order execution
	// passes them (the callable's scalar arguments).
	Params []ParamSpec
	// Platforms are those of the implementation's callables, in the
	// descriptor's order.
	Platforms []string
}

// Parameter types: how a parameter's value travels as a 64-bit scalar.
const (
	ParamF32 = "f32" // the float32 bits in the low 32 bits
	ParamF64 = "f64" // the float64 bits
	ParamI32 = "i32" // two's complement in the low 32 bits
	ParamI64 = "i64"
)

// ParamTypes are the parameter types a descriptor may name, in the order
// of their C codes (enum ptojit_param_type: 1 is ParamF32).
var ParamTypes = []string{ParamF32, ParamF64, ParamI32, ParamI64}

// ParamTypeCode returns the C code of a parameter type, 0 for none.
func ParamTypeCode(typ string) uint32 { return uint32(slices.Index(ParamTypes, typ) + 1) }

// ParamTypeOf returns the parameter type of a C code, "" for none.
func ParamTypeOf(code uint32) string {
	if code == 0 || code > uint32(len(ParamTypes)) {
		return ""
	}
	return ParamTypes[code-1]
}

// ParamSpec is one parameter an operation declares: its name, its type
// and the version of its meaning, which a query must name exactly.
type ParamSpec struct {
	Name    string
	Type    string
	Version uint32
}

// Param is a parameter value a query passes: the name, the version of its
// meaning the caller speaks, and the value as text (a decimal number; its
// type is the descriptor's). A native caller passes the value already
// encoded instead: Type names the parameter type it is encoded as and Bits
// holds the scalar, and Value is not read.
type Param struct {
	Name    string
	Version uint32
	Value   string
	Type    string
	Bits    uint64
}

// Encode returns the value as the 64-bit scalar that carries a parameter
// of type typ. A value already encoded (Type set) must be of type typ.
func (p Param) Encode(typ string) (uint64, error) {
	if p.Type != "" {
		if p.Type != typ {
			return 0, fmt.Errorf("passed as %s, the implementation declares %s", p.Type, typ)
		}
		return p.Bits, nil
	}
	switch typ {
	case ParamF32:
		f, err := strconv.ParseFloat(p.Value, 32)
		if err != nil {
			return 0, fmt.Errorf("%q is not an f32", p.Value)
		}
		return uint64(math.Float32bits(float32(f))), nil
	case ParamF64:
		f, err := strconv.ParseFloat(p.Value, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an f64", p.Value)
		}
		return math.Float64bits(f), nil
	case ParamI32:
		n, err := strconv.ParseInt(p.Value, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q is not an i32", p.Value)
		}
		return uint64(uint32(int32(n))), nil
	case ParamI64:
		n, err := strconv.ParseInt(p.Value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an i64", p.Value)
		}
		return uint64(n), nil
	}
	return 0, fmt.Errorf("unknown parameter type %q", typ)
}

// TensorAlignment is the byte alignment a tensor of element type t needs:
// the descriptor's alignment, or the element size when it names none.
func (d *Descriptor) TensorAlignment(t DType) uint64 {
	if d.Alignment != 0 {
		return d.Alignment
	}
	return t.Align()
}

// Tensor is a concrete tensor descriptor of a query: element type, shape
// and strides in elements, first axis innermost. Strides may be empty
// (packed); a zero stride means packed for that axis. For a quantized
// DType the unit is a block instead of an element: the first axis counts
// blocks (stride one block), and strides are in blocks.
type Tensor struct {
	DType   DType
	Shape   []uint64
	Strides []uint64
	// MemorySpace is SpaceDevice (the default when empty) or SpaceHost.
	MemorySpace string
}

// Clone returns a copy that shares no memory with t.
func (t Tensor) Clone() Tensor {
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

// EffectiveStrides returns the stride in elements of every axis: the one
// given, or for an axis whose stride is 0 or absent the packed one (the
// stride of the axis inside it times that axis's extent; 1 for the first
// axis). Two tensors of one shape lay out their elements alike exactly when
// their effective strides are equal.
func (t Tensor) EffectiveStrides() []uint64 {
	out := make([]uint64, len(t.Shape))
	s := uint64(1)
	for i := range t.Shape {
		if i > 0 {
			s *= t.Shape[i-1]
		}
		if i < len(t.Strides) && t.Strides[i] != 0 {
			s = t.Strides[i]
		}
		out[i] = s
	}
	return out
}

// layout reports whether every stride is 0 or the packed one (packed), and
// whether the first axis is contiguous and every outer stride covers the
// axes inside it (outerStrided).
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
