package mailbox

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Bounds of PROVIDE args.
const (
	MaxProvideField      = 256  // each string field
	MaxProvideDescriptor = 3072 // the descriptor
)

// ProvidedOp describes an operation offered to the children's host
// operation service (PROVIDE), and to whom.
type ProvidedOp struct {
	OpName    string
	OpVersion string
	ImplID    string
	Priority  int32
	// Module is the package_id of the module providing it.
	Module string
	// Descriptor is the implementation's descriptor as the JSON encoding
	// of an opquery.Descriptor: the service matches queries with it.
	Descriptor []byte
	// Consumer is the digest of the callable that may resolve it: one of
	// a module that declares Module as a dependency. A PROVIDE adds one
	// consumer; the service offers an operation only to its consumers.
	Consumer [DigestSize]byte
}

// AppendProvideArgs appends PROVIDE args to dst: digest[32], i32 priority,
// then op_name, op_version, impl_id and module, each as u16 length + bytes
// (at most MaxProvideField), the descriptor as u16 length + bytes (at most
// MaxProvideDescriptor), and the consumer's digest[32].
func AppendProvideArgs(dst []byte, digest [DigestSize]byte, op ProvidedOp) ([]byte, error) {
	dst = append(dst, digest[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(op.Priority))
	for _, s := range []string{op.OpName, op.OpVersion, op.ImplID, op.Module} {
		if len(s) > MaxProvideField {
			return dst, fmt.Errorf("provide: field of %d bytes", len(s))
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(s)))
		dst = append(dst, s...)
	}
	if len(op.Descriptor) > MaxProvideDescriptor {
		return dst, fmt.Errorf("provide: descriptor of %d bytes, at most %d", len(op.Descriptor), MaxProvideDescriptor)
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(op.Descriptor)))
	dst = append(dst, op.Descriptor...)
	return append(dst, op.Consumer[:]...), nil
}

// ParseProvideArgs decodes PROVIDE args. The digest is returned whenever
// the args are long enough to carry one, even with an error, so that a
// refusal can name it.
func ParseProvideArgs(b []byte) ([DigestSize]byte, ProvidedOp, error) {
	if len(b) < DigestSize+4 {
		return [DigestSize]byte{}, ProvidedOp{}, errors.New("PROVIDE args too short")
	}
	d := [DigestSize]byte(b[:DigestSize])
	op := ProvidedOp{Priority: int32(binary.LittleEndian.Uint32(b[DigestSize:]))}
	rest := b[DigestSize+4:]
	var desc string
	for i, dst := range []*string{&op.OpName, &op.OpVersion, &op.ImplID, &op.Module, &desc} {
		limit := MaxProvideField
		if i == 4 {
			limit = MaxProvideDescriptor
		}
		if len(rest) < 2 || len(rest) < 2+int(binary.LittleEndian.Uint16(rest)) || int(binary.LittleEndian.Uint16(rest)) > limit {
			return d, ProvidedOp{}, errors.New("PROVIDE args malformed")
		}
		n := int(binary.LittleEndian.Uint16(rest))
		*dst, rest = string(rest[2:2+n]), rest[2+n:]
	}
	if len(rest) != DigestSize {
		return d, ProvidedOp{}, errors.New("PROVIDE args do not end with the consumer's digest")
	}
	op.Descriptor = []byte(desc)
	op.Consumer = [DigestSize]byte(rest)
	return d, op, nil
}
