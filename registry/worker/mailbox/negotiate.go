package mailbox

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// MaxOpTensors bounds the tensors of one negotiation.
const MaxOpTensors = 16

// opTensorSize is one tensor of the negotiation blob.
const opTensorSize = 4 + 4 + 8*MaxDims + 8*MaxDims

// OpTensor is a tensor descriptor a provider negotiates on: element type,
// shape and strides in elements (0 means packed), first axis innermost.
type OpTensor struct {
	DType   uint32
	Shape   []uint64
	Strides []uint64 // empty, or one per dimension
}

// MaxOpParams bounds the operation parameters of one negotiation, and
// MaxOpParamName the bytes of a parameter's name.
const (
	MaxOpParams    = 16
	MaxOpParamName = 128
)

// OpParam is an operation parameter a provider negotiates on: its name,
// version and type (enum ptojit_param_type) as the descriptor declares
// them, and the query's value encoded as that type.
type OpParam struct {
	Name    string
	Version uint32
	Type    uint32
	Value   uint64
}

// NegotiateArgs are the args of NEGOTIATE after the digest: the query's
// tensors (inputs first), how many are inputs, the sync mode, and the
// operation parameters in the descriptor's order.
//
//	offset     size  field
//	0          4     u32 tensor count t (<= MaxOpTensors)
//	4          4     u32 input count (<= t)
//	8          4     u32 sync mode (1 blocking, 2 async)
//	12         4     u32 parameter count p (<= MaxOpParams; before the
//	                 parameters this field was reserved, always 0, and a
//	                 blob without parameters is unchanged)
//	16 + 72*i  4     tensor i: u32 dtype
//	           4     u32 ndim (<= 4)
//	           32    u64 shape[4]
//	           32    u64 strides[4] (elements; 0 packed)
//	then p parameters, each:
//	           4     u32 version
//	           4     u32 type (enum ptojit_param_type)
//	           8     u64 value
//	           2     u16 name length (1..MaxOpParamName), then the name
//
// A successful reply's message is "impl_id=ID host=N device=M": the
// provider's implementation id and its scratch request in bytes
// (Negotiation). A refusal (status REJECTED) carries the step that refused
// as its stage (NegotiateStage), that step's return code as detail, and
// the provider's message.
type NegotiateArgs struct {
	Inputs   int
	SyncMode uint32
	Tensors  []OpTensor
	Params   []OpParam
}

// AppendNegotiateArgs appends the negotiation blob of a to dst.
func AppendNegotiateArgs(dst []byte, a NegotiateArgs) ([]byte, error) {
	if len(a.Tensors) > MaxOpTensors || a.Inputs < 0 || a.Inputs > len(a.Tensors) {
		return dst, fmt.Errorf("negotiate: %d tensors (%d inputs), at most %d", len(a.Tensors), a.Inputs, MaxOpTensors)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a.Tensors)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(a.Inputs))
	if len(a.Params) > MaxOpParams {
		return dst, fmt.Errorf("negotiate: %d parameters, at most %d", len(a.Params), MaxOpParams)
	}
	dst = binary.LittleEndian.AppendUint32(dst, a.SyncMode)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a.Params)))
	for i, t := range a.Tensors {
		if len(t.Shape) > MaxDims || (len(t.Strides) != 0 && len(t.Strides) != len(t.Shape)) {
			return dst, fmt.Errorf("negotiate: tensor %d: rank %d with %d strides", i, len(t.Shape), len(t.Strides))
		}
		dst = binary.LittleEndian.AppendUint32(dst, t.DType)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(t.Shape)))
		for _, v := range [][]uint64{t.Shape, t.Strides} {
			for d := range MaxDims {
				var x uint64
				if d < len(v) {
					x = v[d]
				}
				dst = binary.LittleEndian.AppendUint64(dst, x)
			}
		}
	}
	for i, p := range a.Params {
		if len(p.Name) == 0 || len(p.Name) > MaxOpParamName {
			return dst, fmt.Errorf("negotiate: parameter %d: a name of %d bytes", i, len(p.Name))
		}
		dst = binary.LittleEndian.AppendUint32(dst, p.Version)
		dst = binary.LittleEndian.AppendUint32(dst, p.Type)
		dst = binary.LittleEndian.AppendUint64(dst, p.Value)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(p.Name)))
		dst = append(dst, p.Name...)
	}
	return dst, nil
}

// ParseNegotiateArgs decodes a negotiation blob.
func ParseNegotiateArgs(b []byte) (NegotiateArgs, error) {
	if len(b) < 16 {
		return NegotiateArgs{}, fmt.Errorf("negotiate args of %d bytes", len(b))
	}
	t := binary.LittleEndian.Uint32(b)
	in := binary.LittleEndian.Uint32(b[4:])
	np := binary.LittleEndian.Uint32(b[12:])
	if t > MaxOpTensors || in > t || np > MaxOpParams || len(b) < 16+opTensorSize*int(t) {
		return NegotiateArgs{}, fmt.Errorf("negotiate args: %d tensors, %d inputs, %d parameters, %d bytes", t, in, np, len(b))
	}
	params, err := parseOpParams(b[16+opTensorSize*int(t):], int(np))
	if err != nil {
		return NegotiateArgs{}, err
	}
	a := NegotiateArgs{Inputs: int(in), SyncMode: binary.LittleEndian.Uint32(b[8:])}
	for i := range int(t) {
		e := b[16+opTensorSize*i:]
		nd := binary.LittleEndian.Uint32(e[4:])
		if nd > MaxDims {
			return NegotiateArgs{}, fmt.Errorf("negotiate args: tensor %d has %d dimensions", i, nd)
		}
		ot := OpTensor{DType: binary.LittleEndian.Uint32(e), Shape: make([]uint64, nd), Strides: make([]uint64, nd)}
		for d := range int(nd) {
			ot.Shape[d] = binary.LittleEndian.Uint64(e[8+8*d:])
			ot.Strides[d] = binary.LittleEndian.Uint64(e[40+8*d:])
		}
		a.Tensors = append(a.Tensors, ot)
	}
	a.Params = params
	return a, nil
}

// parseOpParams decodes the n parameters that end a negotiation blob; b
// must hold exactly them.
func parseOpParams(b []byte, n int) ([]OpParam, error) {
	var out []OpParam
	for i := range n {
		if len(b) < 18 {
			return nil, fmt.Errorf("negotiate args: parameter %d is cut short", i)
		}
		l := int(binary.LittleEndian.Uint16(b[16:]))
		if l == 0 || l > MaxOpParamName || len(b) < 18+l {
			return nil, fmt.Errorf("negotiate args: parameter %d has a name of %d bytes", i, l)
		}
		out = append(out, OpParam{Version: binary.LittleEndian.Uint32(b), Type: binary.LittleEndian.Uint32(b[4:]),
			Value: binary.LittleEndian.Uint64(b[8:]), Name: string(b[18 : 18+l])})
		b = b[18+l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("negotiate args: %d bytes after the parameters", len(b))
	}
	return out, nil
}

// Negotiation is a provider's answer: its implementation id and the
// scratch it needs for the negotiated tensors. A successful NEGOTIATE
// reply carries it as its message (Message).
type Negotiation struct {
	ImplID        string
	HostScratch   uint64
	DeviceScratch uint64
}

// Message is the message of a successful NEGOTIATE reply:
// "impl_id=ID host=N device=M".
func (n Negotiation) Message() string {
	return fmt.Sprintf("impl_id=%s host=%d device=%d", n.ImplID, n.HostScratch, n.DeviceScratch)
}

// ParseNegotiation decodes the message of a successful NEGOTIATE reply.
// Fields it does not know are ignored; a scratch size that is not a number
// is an error.
func ParseNegotiation(msg string) (Negotiation, error) {
	var n Negotiation
	for _, f := range strings.Fields(msg) {
		var err error
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "impl_id":
			n.ImplID = v
		case "host":
			n.HostScratch, err = strconv.ParseUint(v, 10, 64)
		case "device":
			n.DeviceScratch, err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			return Negotiation{}, fmt.Errorf("malformed negotiation %q", msg)
		}
	}
	return n, nil
}
