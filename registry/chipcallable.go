package registry

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Direction is the direction of a signature argument, with the stable values
// of simpler's ArgDirection. In JSON (the build request's signatures) it is
// written as its name and read from its name, in any case, or its number.
type Direction int32

// Directions.
const (
	Scalar Direction = 0
	In     Direction = 1
	Out    Direction = 2
	InOut  Direction = 3
)

var directionNames = [...]string{"SCALAR", "IN", "OUT", "INOUT"}

// Valid reports whether d is one of the four directions.
func (d Direction) Valid() bool { return d >= Scalar && d <= InOut }

// String returns "SCALAR", "IN", "OUT" or "INOUT" (or "Direction(N)").
func (d Direction) String() string {
	if d.Valid() {
		return directionNames[d]
	}
	return fmt.Sprintf("Direction(%d)", int32(d))
}

// MarshalJSON writes the name.
func (d Direction) MarshalJSON() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("invalid direction %d", int32(d))
	}
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a name (any case) or a number 0..3.
func (d *Direction) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		for i, n := range directionNames {
			if strings.EqualFold(s, n) {
				*d = Direction(i)
				return nil
			}
		}
		return fmt.Errorf("unknown direction %q (want SCALAR, IN, OUT or INOUT)", s)
	}
	var n int32
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("direction must be a name or a number 0..3, not %s", b)
	}
	if !Direction(n).Valid() {
		return fmt.Errorf("direction %d out of range 0..3", n)
	}
	*d = Direction(n)
	return nil
}

// Limits and offsets of the ChipCallable layout (see the package doc).
const (
	MaxSignature     = 256  // entries of ChipCallable.Signature
	MaxCoreSignature = 32   // entries of CoreCallable.Signature
	MaxChildren      = 1024 // ChipCallable.Children
	NameSize         = 64   // bytes of func_name and config_name, NUL included
	MaxNameLen       = NameSize - 1
	ChildAlign       = 64 // alignment of child offsets within storage

	ChipHeaderSize = 9376
	CoreHeaderSize = 192

	offSignature      = 0
	offSigCount       = 1024
	offBinarySize     = 1028
	offFuncName       = 1032
	offFuncNameLen    = 1096
	offChildFuncIDs   = 1100
	offChildOffsets   = 5196
	offChildCount     = 9292
	offConfigName     = 9296
	offConfigNameLen  = 9360
	offScalarCount    = 9364
	offCoreSignature  = 0
	offCoreSigCount   = 128
	offCoreBinarySize = 132
	offCoreResolved   = 136

	// maxStorage bounds storage so every offset fits a uint32 field.
	maxStorage = math.MaxUint32
)

// CoreCallable is one child kernel of a ChipCallable. Not safe for
// concurrent mutation.
type CoreCallable struct {
	Signature    []Direction // at most MaxCoreSignature
	ResolvedAddr uint64
	Binary       []byte
}

// Child is a CoreCallable with the function id the orchestration calls it by.
type Child struct {
	FuncID int32
	Core   CoreCallable
}

// ChipCallable is the decoded form of a ChipCallable blob. Not safe for
// concurrent mutation; a value that is only read may be shared.
type ChipCallable struct {
	Signature   []Direction // public entry signature, at most MaxSignature
	FuncName    string      // orchestration entry symbol, at most MaxNameLen bytes
	ConfigName  string      // config symbol, at most MaxNameLen bytes
	ScalarCount int32
	Binary      []byte  // orchestration binary
	Children    []Child // at most MaxChildren
}

func alignUp(n uint64) uint64 { return (n + ChildAlign - 1) &^ (ChildAlign - 1) }

func blobErr(op, format string, args ...any) *Error {
	return newError(CallableBlobInvalid, op, format, args...)
}

func checkSignature(op, what string, sig []Direction, max int) error {
	if len(sig) > max {
		return blobErr(op, "%s has %d entries, at most %d allowed", what, len(sig), max)
	}
	for i, d := range sig {
		if !d.Valid() {
			return blobErr(op, "%s entry %d: invalid direction %d", what, i, int32(d))
		}
	}
	return nil
}

// layout returns the storage offset of each child and the storage size.
func (c *ChipCallable) layout() (offsets []uint64, size uint64, err error) {
	sizes := make([]uint64, 1+len(c.Children))
	sizes[0] = uint64(len(c.Binary))
	for i := range c.Children {
		sizes[1+i] = uint64(len(c.Children[i].Core.Binary))
	}
	return c.layoutOf(sizes)
}

// layoutOf is layout for binaries of the given sizes: sizes[0] the
// orchestration's, sizes[1+i] child i's (c's own binaries are not looked
// at).
func (c *ChipCallable) layoutOf(sizes []uint64) (offsets []uint64, size uint64, err error) {
	const op = "marshal callable"
	if err := checkSignature(op, "signature", c.Signature, MaxSignature); err != nil {
		return nil, 0, err
	}
	if len(c.FuncName) > MaxNameLen {
		return nil, 0, blobErr(op, "func name is %d bytes, at most %d allowed", len(c.FuncName), MaxNameLen)
	}
	if len(c.ConfigName) > MaxNameLen {
		return nil, 0, blobErr(op, "config name is %d bytes, at most %d allowed", len(c.ConfigName), MaxNameLen)
	}
	if len(c.Children) > MaxChildren {
		return nil, 0, blobErr(op, "%d children, at most %d allowed", len(c.Children), MaxChildren)
	}
	if len(sizes) != 1+len(c.Children) {
		return nil, 0, blobErr(op, "%d binary sizes for %d children", len(sizes), len(c.Children))
	}
	size = sizes[0]
	offsets = make([]uint64, len(c.Children))
	for i := range c.Children {
		core := &c.Children[i].Core
		if err := checkSignature(op, fmt.Sprintf("child %d signature", i), core.Signature, MaxCoreSignature); err != nil {
			return nil, 0, err
		}
		offsets[i] = alignUp(size)
		size = offsets[i] + CoreHeaderSize + sizes[1+i]
		if size > maxStorage || sizes[1+i] > maxStorage {
			break
		}
	}
	if size > maxStorage || sizes[0] > math.MaxUint32 {
		return nil, 0, blobErr(op, "storage exceeds %d bytes", uint64(maxStorage))
	}
	return offsets, size, nil
}

// header returns the ChipHeaderSize bytes that start the blob of c whose
// children lie at offsets and whose orchestration binary is binSize bytes.
func (c *ChipCallable) header(offsets []uint64, binSize uint64) []byte {
	b := make([]byte, ChipHeaderSize)
	le := binary.LittleEndian
	for i, d := range c.Signature {
		le.PutUint32(b[offSignature+4*i:], uint32(d))
	}
	le.PutUint32(b[offSigCount:], uint32(len(c.Signature)))
	le.PutUint32(b[offBinarySize:], uint32(binSize))
	copy(b[offFuncName:offFuncName+NameSize], c.FuncName)
	le.PutUint32(b[offFuncNameLen:], uint32(len(c.FuncName)))
	le.PutUint32(b[offChildCount:], uint32(len(c.Children)))
	copy(b[offConfigName:offConfigName+NameSize], c.ConfigName)
	le.PutUint32(b[offConfigNameLen:], uint32(len(c.ConfigName)))
	le.PutUint32(b[offScalarCount:], uint32(c.ScalarCount))
	for i := range c.Children {
		le.PutUint32(b[offChildFuncIDs+4*i:], uint32(c.Children[i].FuncID))
		le.PutUint32(b[offChildOffsets+4*i:], uint32(offsets[i]))
	}
	return b
}

// coreHeader returns the CoreHeaderSize bytes that start child core,
// whose binary is binSize bytes.
func coreHeader(core *CoreCallable, binSize uint64) []byte {
	cb := make([]byte, CoreHeaderSize)
	le := binary.LittleEndian
	for j, d := range core.Signature {
		le.PutUint32(cb[offCoreSignature+4*j:], uint32(d))
	}
	le.PutUint32(cb[offCoreSigCount:], uint32(len(core.Signature)))
	le.PutUint32(cb[offCoreBinarySize:], uint32(binSize))
	le.PutUint64(cb[offCoreResolved:], core.ResolvedAddr)
	return cb
}

// MarshalBinary writes the canonical blob: zero padding, each child at the
// next multiple of ChildAlign after the previous one. It fails with
// CALLABLE_BLOB_INVALID when a limit is exceeded or a direction is invalid.
func (c *ChipCallable) MarshalBinary() ([]byte, error) {
	offsets, size, err := c.layout()
	if err != nil {
		return nil, err
	}
	b := make([]byte, ChipHeaderSize+size)
	copy(b, c.header(offsets, uint64(len(c.Binary))))
	storage := b[ChipHeaderSize:]
	copy(storage, c.Binary)
	for i := range c.Children {
		core := &c.Children[i].Core
		cb := storage[offsets[i]:]
		copy(cb, coreHeader(core, uint64(len(core.Binary))))
		copy(cb[CoreHeaderSize:], core.Binary)
	}
	return b, nil
}

// ParseChipCallable decodes and validates a blob. Every count, offset and
// size is checked against len(blob) before it is used; the result's byte
// slices are copies, not aliases of blob. Errors have code
// CALLABLE_BLOB_INVALID.
func ParseChipCallable(blob []byte) (*ChipCallable, error) {
	var c ChipCallable
	if _, err := decodeChipCallable(blob, &c); err != nil {
		return nil, err
	}
	c.Binary = clone(c.Binary)
	for i := range c.Children {
		c.Children[i].Core.Binary = clone(c.Children[i].Core.Binary)
	}
	return &c, nil
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

// ChipSignature validates blob like ParseChipCallable and returns only its
// public signature, without copying any binary.
func ChipSignature(blob []byte) ([]Direction, error) {
	var c ChipCallable
	if _, err := decodeChipCallable(blob, &c); err != nil {
		return nil, err
	}
	return c.Signature, nil
}

// ChildOffsets validates blob like ParseChipCallable and returns the storage
// offset of each child as the blob records it (storage starts at byte
// ChipHeaderSize of the blob).
func ChildOffsets(blob []byte) ([]uint64, error) {
	var c ChipCallable
	return decodeChipCallable(blob, &c)
}

func readSignature(op, what string, b []byte, count int32, max int) ([]Direction, error) {
	if count < 0 || int(count) > max {
		return nil, blobErr(op, "%s count %d outside 0..%d", what, count, max)
	}
	sig := make([]Direction, count)
	for i := range sig {
		d := Direction(int32(binary.LittleEndian.Uint32(b[4*i:])))
		if !d.Valid() {
			return nil, blobErr(op, "%s entry %d: invalid direction %d", what, i, int32(d))
		}
		sig[i] = d
	}
	return sig, nil
}

func readName(op, what string, b []byte, n uint32) (string, error) {
	if n > MaxNameLen {
		return "", blobErr(op, "%s length %d exceeds %d", what, n, MaxNameLen)
	}
	return string(b[:n]), nil
}

// decodeChipCallable fills c with slices aliasing blob and returns the
// children's storage offsets.
func decodeChipCallable(blob []byte, c *ChipCallable) (offsets []uint64, err error) {
	const op = "parse callable"
	le := binary.LittleEndian
	if len(blob) < ChipHeaderSize {
		return nil, blobErr(op, "blob is %d bytes, shorter than the %d-byte header", len(blob), ChipHeaderSize)
	}
	if uint64(len(blob)-ChipHeaderSize) > maxStorage {
		return nil, blobErr(op, "storage exceeds %d bytes", uint64(maxStorage))
	}
	if c.Signature, err = readSignature(op, "signature", blob[offSignature:], int32(le.Uint32(blob[offSigCount:])), MaxSignature); err != nil {
		return nil, err
	}
	if c.FuncName, err = readName(op, "func name", blob[offFuncName:], le.Uint32(blob[offFuncNameLen:])); err != nil {
		return nil, err
	}
	if c.ConfigName, err = readName(op, "config name", blob[offConfigName:], le.Uint32(blob[offConfigNameLen:])); err != nil {
		return nil, err
	}
	c.ScalarCount = int32(le.Uint32(blob[offScalarCount:]))
	childCount := int32(le.Uint32(blob[offChildCount:]))
	if childCount < 0 || childCount > MaxChildren {
		return nil, blobErr(op, "child count %d outside 0..%d", childCount, MaxChildren)
	}
	storage := blob[ChipHeaderSize:]
	n := uint64(len(storage))
	binSize := uint64(le.Uint32(blob[offBinarySize:]))
	if binSize > n {
		return nil, blobErr(op, "orchestration binary size %d exceeds the %d bytes of storage", binSize, n)
	}
	c.Binary = storage[:binSize]
	end := binSize
	c.Children = make([]Child, childCount)
	offsets = make([]uint64, childCount)
	for i := range c.Children {
		ch := &c.Children[i]
		ch.FuncID = int32(le.Uint32(blob[offChildFuncIDs+4*i:]))
		off := uint64(le.Uint32(blob[offChildOffsets+4*i:]))
		switch {
		case off%ChildAlign != 0:
			return nil, blobErr(op, "child %d offset %d is not a multiple of %d", i, off, ChildAlign)
		case off < end:
			return nil, blobErr(op, "child %d offset %d overlaps the preceding bytes (which end at %d)", i, off, end)
		case off+CoreHeaderSize > n:
			return nil, blobErr(op, "child %d header at %d exceeds the %d bytes of storage", i, off, n)
		}
		offsets[i] = off
		cb := storage[off:]
		if ch.Core.Signature, err = readSignature(op, fmt.Sprintf("child %d signature", i), cb[offCoreSignature:], int32(le.Uint32(cb[offCoreSigCount:])), MaxCoreSignature); err != nil {
			return nil, err
		}
		size := uint64(le.Uint32(cb[offCoreBinarySize:]))
		if off+CoreHeaderSize+size > n {
			return nil, blobErr(op, "child %d binary (%d bytes at %d) exceeds the %d bytes of storage", i, size, off+CoreHeaderSize, n)
		}
		ch.Core.ResolvedAddr = le.Uint64(cb[offCoreResolved:])
		ch.Core.Binary = cb[CoreHeaderSize : CoreHeaderSize+size]
		end = off + CoreHeaderSize + size
	}
	if end != n {
		return nil, blobErr(op, "blob has %d bytes after the end of its last part", n-end)
	}
	return offsets, nil
}

// IsCanonical reports whether blob is a valid ChipCallable that
// MarshalBinary reproduces byte for byte.
func IsCanonical(blob []byte) bool {
	var c ChipCallable
	if _, err := decodeChipCallable(blob, &c); err != nil {
		return false
	}
	out, err := c.MarshalBinary()
	return err == nil && string(out) == string(blob)
}
