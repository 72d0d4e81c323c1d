package mailbox

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxProvideField bounds each string field of PROVIDE args.
const MaxProvideField = 256

// ProvidedOp describes an operation offered to the children's host
// operation service (PROVIDE).
type ProvidedOp struct {
	OpName    string
	OpVersion string
	ImplID    string
	Priority  int32
}

// AppendProvideArgs appends PROVIDE args to dst: digest[32], i32 priority,
// then op_name, op_version and impl_id, each as u16 length + bytes (at most
// MaxProvideField).
func AppendProvideArgs(dst []byte, digest [DigestSize]byte, op ProvidedOp) ([]byte, error) {
	dst = append(dst, digest[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(op.Priority))
	for _, s := range []string{op.OpName, op.OpVersion, op.ImplID} {
		if len(s) > MaxProvideField {
			return dst, fmt.Errorf("provide: field of %d bytes", len(s))
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(s)))
		dst = append(dst, s...)
	}
	return dst, nil
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
	for _, dst := range []*string{&op.OpName, &op.OpVersion, &op.ImplID} {
		if len(rest) < 2 || len(rest) < 2+int(binary.LittleEndian.Uint16(rest)) {
			return d, ProvidedOp{}, errors.New("PROVIDE args malformed")
		}
		n := int(binary.LittleEndian.Uint16(rest))
		*dst, rest = string(rest[2:2+n]), rest[2+n:]
	}
	if len(rest) != 0 {
		return d, ProvidedOp{}, errors.New("PROVIDE args longer than their fields")
	}
	return d, op, nil
}
