package mailbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Mailbox layout constants (see the package documentation for the byte
// layout).
const (
	// LayoutVersion is the mailbox layout version. Parent and child must
	// agree; there is no migration path. Version 2 added the strides of
	// the task-args tensor reference, version 3 the stage of a reply.
	LayoutVersion = 3

	// MailboxSize is the largest frame, header included.
	MailboxSize = 4096
	// HeaderSize is the fixed frame header.
	HeaderSize = 24
	// OffCallable is MAILBOX_OFF_CALLABLE: the reserved u64 that is 0 in
	// every frame of this layout.
	OffCallable = 16
	// OffArgs is MAILBOX_OFF_ARGS: the start of the args area.
	OffArgs = HeaderSize
	// ArgsCapacity is the size of the args area.
	ArgsCapacity = MailboxSize - HeaderSize
	// DigestSize is the raw sha256 digest that prefixes task, register and
	// unregister args and every reply.
	DigestSize = 32
	// TaskArgsCapacity is the task-args blob capacity: the args area minus
	// the digest prefix.
	TaskArgsCapacity = ArgsCapacity - DigestSize

	// MaxTensors and MaxScalars bound one task's arguments.
	MaxTensors = 64
	MaxScalars = 64
	// MaxDims is PTOJIT_MAX_DIMS of ptojit_sim.h.
	MaxDims = 4
	// tensorRefSize is one tensor reference in the task-args blob.
	tensorRefSize = 8 + 8 + 4 + 4 + 8*MaxDims + 8*MaxDims
	// MaxReplyMessage bounds the text of a failed reply.
	MaxReplyMessage = 1024
	// MaxPayload bounds a staged register payload (1 GiB).
	MaxPayload = 1 << 30
	// MaxName bounds platform and runtime names in INIT.
	MaxName = 64
)

// Descriptors a chip child inherits from the parent.
const (
	ChildMailboxFD = 3 // the child's end of the SOCK_SEQPACKET mailbox
	ChildArenaFD   = 4 // the arena memfd
)

var frameMagic = [4]byte{'P', 'J', 'M', 'B'}

// Op is a frame's operation. A reply carries the request's op with ReplyBit
// set.
type Op uint16

// Operations.
const (
	OpTask       Op = 1  // run a registered callable
	OpRegister   Op = 2  // REGISTER_CALLABLE
	OpUnregister Op = 3  // UNREGISTER_CALLABLE
	OpInit       Op = 4  // first frame: the child's identity and configuration
	OpReady      Op = 5  // the child reports ready (after pre-start registrations)
	OpNop        Op = 6  // bare round trip: the child replies at once
	OpShutdown   Op = 7  // the child replies, then exits
	OpNegotiate  Op = 8  // an operation provider's validate and scratch query
	OpProvide    Op = 9  // offer an operation to the host operation service of the child
	OpActivate   Op = 10 // a module callable's impl id and ptojit_module_init
	OpDeactivate Op = 11 // a module callable's ptojit_module_shutdown

	ReplyBit Op = 0x8000
)

func (o Op) String() string {
	name := map[Op]string{OpTask: "TASK", OpRegister: "REGISTER_CALLABLE", OpUnregister: "UNREGISTER_CALLABLE",
		OpInit: "INIT", OpReady: "READY", OpNop: "NOP", OpShutdown: "SHUTDOWN", OpNegotiate: "NEGOTIATE", OpProvide: "PROVIDE",
		OpActivate: "ACTIVATE", OpDeactivate: "DEACTIVATE"}[o&^ReplyBit]
	if name == "" {
		name = fmt.Sprintf("op(%d)", uint16(o&^ReplyBit))
	}
	if o&ReplyBit != 0 {
		name += " reply"
	}
	return name
}

// Status is a reply's status.
type Status uint32

// Reply statuses.
const (
	StatusOK                 Status = 0
	StatusBadFrame           Status = 1              // the request frame was malformed
	StatusDescriptorMismatch Status = 2              // HASHID_DESCRIPTOR_MISMATCH
	StatusKindUnsupported    Status = 3              // CALLABLE_KIND_UNSUPPORTED
	StatusSlotExhausted      Status = 4              // LOCAL_SLOT_EXHAUSTED
	StatusNotInstalled       Status = 5              // no identity_table entry for the digest
	StatusPayloadInvalid     Status = 6              // the staged payload does not parse
	StatusPlatformMismatch   Status = 7              // the descriptor's platform is not the child's
	StatusPrewarmFailed      Status = 8              // loading the executable state failed
	StatusExecFailed         Status = 9              // the callable ran and reported failure
	StatusArgsInvalid        Status = 10             // task args do not fit the callable or the arena
	StatusRejected           Status = 11             // the provider's validate or scratch query refused the tensors
	StatusMax                       = StatusRejected // the largest status of this layout
)

func (s Status) String() string {
	names := [...]string{"OK", "BAD_FRAME", "HASHID_DESCRIPTOR_MISMATCH", "CALLABLE_KIND_UNSUPPORTED",
		"LOCAL_SLOT_EXHAUSTED", "HASHID_NOT_INSTALLED", "PAYLOAD_INVALID", "PLATFORM_UNSUPPORTED",
		"PREWARM_FAILED", "EXEC_FAILED", "ARGS_INVALID", "REJECTED"}
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("status(%d)", uint32(s))
}

// statusCodes is the one table between reply statuses and the error
// codes they stand for (the values of registry.ErrorCode and of the
// worker's codes, by name, since this package imports nothing of
// ptojit). A status's first row is the code it stands for; a later row
// maps one more code to it.
var statusCodes = [...]struct {
	status Status
	code   string
}{
	{StatusBadFrame, "MAILBOX_FRAME_INVALID"},
	{StatusDescriptorMismatch, "HASHID_DESCRIPTOR_MISMATCH"},
	{StatusKindUnsupported, "CALLABLE_KIND_UNSUPPORTED"},
	{StatusSlotExhausted, "LOCAL_SLOT_EXHAUSTED"},
	{StatusNotInstalled, "HASHID_NOT_INSTALLED"},
	{StatusPayloadInvalid, "CALLABLE_BLOB_INVALID"},
	{StatusPayloadInvalid, "SPYC_PAYLOAD_INVALID"},
	{StatusPlatformMismatch, "PLATFORM_UNSUPPORTED"},
	{StatusPrewarmFailed, "PREWARM_FAILED"},
	{StatusExecFailed, "TASK_FAILED"},
	{StatusArgsInvalid, "TASK_ARGS_INVALID"},
	{StatusRejected, "NEGOTIATION_REJECTED"},
}

// Code returns the error code a failed reply's status stands for: "" for
// StatusOK, MAILBOX_FRAME_INVALID for a status this layout does not have.
func (s Status) Code() string {
	if s == StatusOK {
		return ""
	}
	for _, r := range statusCodes {
		if r.status == s {
			return r.code
		}
	}
	return "MAILBOX_FRAME_INVALID"
}

// StatusOfCode returns the status that stands for error code c, and
// false when no status does.
func StatusOfCode(c string) (Status, bool) {
	for _, r := range statusCodes {
		if r.code == c {
			return r.status, true
		}
	}
	return StatusOK, false
}

// FrameError is a malformed frame. Safe to share.
type FrameError struct{ Msg string }

func (e *FrameError) Error() string { return "mailbox frame: " + e.Msg }

func frameErr(format string, args ...any) error {
	return &FrameError{Msg: fmt.Sprintf(format, args...)}
}

// Frame is a decoded mailbox frame: a header and its args area. Args aliases
// the decoded buffer. A plain value, safe to share while not mutated.
type Frame struct {
	Op     Op
	Status Status
	Args   []byte
}

// AppendFrame appends the encoding of a frame to dst.
func AppendFrame(dst []byte, op Op, status Status, args []byte) ([]byte, error) {
	if len(args) > ArgsCapacity {
		return dst, frameErr("args of %d bytes exceed the capacity of %d", len(args), ArgsCapacity)
	}
	dst = append(dst, frameMagic[:]...)
	dst = binary.LittleEndian.AppendUint16(dst, LayoutVersion)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(op))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(status))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(args)))
	dst = binary.LittleEndian.AppendUint64(dst, 0) // MAILBOX_OFF_CALLABLE: reserved
	return append(dst, args...), nil
}

// AppendTaskFrame appends a whole TASK frame to dst: the header with the
// reserved callable field 0, then the args area: the raw digest followed by
// the task-args blob of a. It encodes in place, without allocating.
func AppendTaskFrame(dst []byte, digest [DigestSize]byte, a TaskArgs) ([]byte, error) {
	start := len(dst)
	dst, _ = AppendFrame(dst, OpTask, StatusOK, digest[:])
	dst, err := AppendTaskArgs(dst, a)
	if err != nil {
		return dst[:start], err
	}
	binary.LittleEndian.PutUint32(dst[start+12:], uint32(len(dst)-start-HeaderSize))
	return dst, nil
}

// ParseFrame decodes one frame. It checks the magic, the layout version, the
// reserved callable field, and that the length field matches exactly.
func ParseFrame(b []byte) (Frame, error) {
	if len(b) < HeaderSize {
		return Frame{}, frameErr("%d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	if len(b) > MailboxSize {
		return Frame{}, frameErr("%d bytes, longer than the %d-byte mailbox", len(b), MailboxSize)
	}
	if [4]byte(b[0:4]) != frameMagic {
		return Frame{}, frameErr("bad magic %q", b[0:4])
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != LayoutVersion {
		return Frame{}, frameErr("layout version %d, want %d", v, LayoutVersion)
	}
	op := Op(binary.LittleEndian.Uint16(b[6:]))
	if base := op &^ ReplyBit; base < OpTask || base > OpDeactivate {
		return Frame{}, frameErr("unknown op %d", uint16(base))
	}
	st := Status(binary.LittleEndian.Uint32(b[8:]))
	if op&ReplyBit == 0 && st != StatusOK {
		return Frame{}, frameErr("request with non-zero status %d", uint32(st))
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if uint64(n) != uint64(len(b)-HeaderSize) {
		return Frame{}, frameErr("args length field %d, frame carries %d", n, len(b)-HeaderSize)
	}
	if c := binary.LittleEndian.Uint64(b[OffCallable:]); c != 0 {
		return Frame{}, frameErr("reserved callable field is %#x, must be 0", c)
	}
	return Frame{Op: op, Status: st, Args: b[HeaderSize:]}, nil
}

// DType is a tensor element type (enum ptojit_dtype).
type DType uint32

// Element types. Q8x32 and Q4x32 are block-quantized (ptojit_sim.h 1.3):
// blocks of 32 elements, each a little-endian f32 scale and then 32
// signed 8-bit integers (36 bytes) or 32 signed 4-bit ones, two to a byte,
// the even element in the low nibble (20 bytes). A tensor of one counts
// blocks on its first axis, and its strides are in blocks.
const (
	Float32 DType = 1
	Int32   DType = 2
	Float16 DType = 3
	Q8x32   DType = 10
	Q4x32   DType = 11
)

// Size is the bytes of one unit of a tensor's first axis: the element
// size, or the block size of a quantized type; 0 for an unknown type.
func (d DType) Size() uint64 {
	switch d {
	case Float32, Int32:
		return 4
	case Float16:
		return 2
	case Q8x32:
		return 36
	case Q4x32:
		return 20
	}
	return 0
}

// Tensor is a reference to a tensor in the shared-memory arena. A plain
// value, safe to share while not mutated.
type Tensor struct {
	Offset uint64   // from the start of the arena
	Nbytes uint64   // bytes addressable from Offset
	DType  DType    // element type
	Shape  []uint64 // elements per dimension, first axis innermost, at most MaxDims
	// Strides are in elements, one per dimension, or none (packed); a zero
	// stride means packed for its axis. ParseTaskArgs returns none when
	// every stride is zero.
	Strides []uint64

	from Buffer // the buffer it was made from (Buffer.Tensor), if any
}

// TaskArgs are the arguments of one task, in signature order split by kind:
// tensor arguments (IN, OUT, INOUT) in Tensors, scalar arguments in Scalars
// (raw 64-bit values; a float32 scalar carries its bits in the low 32 bits).
// A plain value, safe to share while not mutated.
type TaskArgs struct {
	Tensors []Tensor
	Scalars []uint64
}

// Float32Scalar returns the raw scalar value that carries f.
func Float32Scalar(f float32) uint64 { return uint64(math.Float32bits(f)) }

// CheckTaskArgs reports whether a has a task-args blob: the counts, the
// blob's size and every tensor's dimensions are within the limits.
func CheckTaskArgs(a TaskArgs) error {
	if len(a.Tensors) > MaxTensors || len(a.Scalars) > MaxScalars {
		return frameErr("%d tensors and %d scalars exceed the limits %d and %d", len(a.Tensors), len(a.Scalars), MaxTensors, MaxScalars)
	}
	if n := 8 + tensorRefSize*len(a.Tensors) + 8*len(a.Scalars); n > TaskArgsCapacity {
		return frameErr("task args of %d bytes exceed the capacity of %d", n, TaskArgsCapacity)
	}
	for i, t := range a.Tensors {
		if len(t.Shape) > MaxDims {
			return frameErr("tensor %d has %d dimensions, at most %d", i, len(t.Shape), MaxDims)
		}
		if len(t.Strides) != 0 && len(t.Strides) != len(t.Shape) {
			return frameErr("tensor %d has %d dimensions and %d strides", i, len(t.Shape), len(t.Strides))
		}
	}
	return nil
}

// AppendTaskArgs appends the task-args blob of a to dst; if a has none
// (CheckTaskArgs), it returns dst unchanged and the error.
func AppendTaskArgs(dst []byte, a TaskArgs) ([]byte, error) {
	if err := CheckTaskArgs(a); err != nil {
		return dst, err
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a.Tensors)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a.Scalars)))
	for _, t := range a.Tensors {
		dst = binary.LittleEndian.AppendUint64(dst, t.Offset)
		dst = binary.LittleEndian.AppendUint64(dst, t.Nbytes)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(t.DType))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(t.Shape)))
		for _, v := range [][]uint64{t.Shape, t.Strides} {
			for d := range MaxDims {
				var s uint64
				if d < len(v) {
					s = v[d]
				}
				dst = binary.LittleEndian.AppendUint64(dst, s)
			}
		}
	}
	for _, s := range a.Scalars {
		dst = binary.LittleEndian.AppendUint64(dst, s)
	}
	return dst, nil
}

// ParseTaskArgs decodes a task-args blob. The blob must be exactly as long as
// its counts say; unused shape entries must be zero.
func ParseTaskArgs(b []byte) (TaskArgs, error) {
	if len(b) < 8 {
		return TaskArgs{}, frameErr("task args of %d bytes, shorter than the 8-byte counts", len(b))
	}
	nt := binary.LittleEndian.Uint32(b[0:])
	ns := binary.LittleEndian.Uint32(b[4:])
	if nt > MaxTensors || ns > MaxScalars {
		return TaskArgs{}, frameErr("%d tensors and %d scalars exceed the limits %d and %d", nt, ns, MaxTensors, MaxScalars)
	}
	if want := 8 + tensorRefSize*int(nt) + 8*int(ns); len(b) != want {
		return TaskArgs{}, frameErr("task args of %d bytes, counts say %d", len(b), want)
	}
	a := TaskArgs{}
	p := b[8:]
	if nt > 0 {
		a.Tensors = make([]Tensor, nt)
	}
	for i := range a.Tensors {
		t := Tensor{
			Offset: binary.LittleEndian.Uint64(p[0:]),
			Nbytes: binary.LittleEndian.Uint64(p[8:]),
			DType:  DType(binary.LittleEndian.Uint32(p[16:])),
		}
		ndim := binary.LittleEndian.Uint32(p[20:])
		if ndim > MaxDims {
			return TaskArgs{}, frameErr("tensor %d has %d dimensions, at most %d", i, ndim, MaxDims)
		}
		t.Shape = make([]uint64, ndim)
		strides := make([]uint64, ndim)
		var strided bool
		for d := range MaxDims {
			s := binary.LittleEndian.Uint64(p[24+8*d:])
			st := binary.LittleEndian.Uint64(p[24+8*MaxDims+8*d:])
			if d < int(ndim) {
				t.Shape[d], strides[d] = s, st
				strided = strided || st != 0
			} else if s != 0 || st != 0 {
				return TaskArgs{}, frameErr("tensor %d has a non-zero unused dimension or stride %d", i, d)
			}
		}
		if strided {
			t.Strides = strides
		}
		a.Tensors[i] = t
		p = p[tensorRefSize:]
	}
	if ns > 0 {
		a.Scalars = make([]uint64, ns)
	}
	for i := range a.Scalars {
		a.Scalars[i] = binary.LittleEndian.Uint64(p[8*i:])
	}
	return a, nil
}

// Staged payload reference types of REGISTER_CALLABLE.
const (
	// RefSealedMemfd: the payload is the whole content of a sealed memfd
	// (F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE) passed as the one SCM_RIGHTS
	// descriptor of the control message.
	RefSealedMemfd = 1
)

// registerArgsSize is the size of REGISTER_CALLABLE args.
const registerArgsSize = DigestSize + 4 + 4 + 8

// RegisterArgs are the args of REGISTER_CALLABLE. A plain value.
type RegisterArgs struct {
	Digest     [DigestSize]byte
	Kind       uint32 // registry.Kind
	RefType    uint32 // RefSealedMemfd
	PayloadLen uint64
}

// Append appends the encoding of r to dst.
func (r RegisterArgs) Append(dst []byte) []byte {
	dst = append(dst, r.Digest[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, r.Kind)
	dst = binary.LittleEndian.AppendUint32(dst, r.RefType)
	return binary.LittleEndian.AppendUint64(dst, r.PayloadLen)
}

// ParseRegisterArgs decodes REGISTER_CALLABLE args.
func ParseRegisterArgs(b []byte) (RegisterArgs, error) {
	if len(b) != registerArgsSize {
		return RegisterArgs{}, frameErr("register args of %d bytes, want %d", len(b), registerArgsSize)
	}
	r := RegisterArgs{
		Digest:     [DigestSize]byte(b[:DigestSize]),
		Kind:       binary.LittleEndian.Uint32(b[32:]),
		RefType:    binary.LittleEndian.Uint32(b[36:]),
		PayloadLen: binary.LittleEndian.Uint64(b[40:]),
	}
	if r.RefType != RefSealedMemfd {
		return RegisterArgs{}, frameErr("unknown staged payload reference type %d", r.RefType)
	}
	if r.PayloadLen > MaxPayload {
		return RegisterArgs{}, frameErr("staged payload of %d bytes exceeds %d", r.PayloadLen, MaxPayload)
	}
	return r, nil
}

// ParseDigestArgs decodes args that are exactly one digest (UNREGISTER_CALLABLE).
func ParseDigestArgs(b []byte) ([DigestSize]byte, error) {
	if len(b) != DigestSize {
		return [DigestSize]byte{}, frameErr("digest args of %d bytes, want %d", len(b), DigestSize)
	}
	return [DigestSize]byte(b), nil
}

// SplitTaskArgs splits TASK args into the digest and the task-args blob.
func SplitTaskArgs(b []byte) ([DigestSize]byte, []byte, error) {
	if len(b) < DigestSize {
		return [DigestSize]byte{}, nil, frameErr("task args of %d bytes lack the %d-byte digest", len(b), DigestSize)
	}
	return [DigestSize]byte(b[:DigestSize]), b[DigestSize:], nil
}

// NegotiateStage is the step of a negotiation that refused: the stage of
// a REJECTED NEGOTIATE reply, so that no reader classifies the refusal by
// its message.
type NegotiateStage uint32

// Negotiation stages.
const (
	StageNone NegotiateStage = 0 // every reply but a refused NEGOTIATE
	// StageProvider: the orchestration exports no provider entry points,
	// or the child could not call them; detail is 0.
	StageProvider NegotiateStage = 1
	StageValidate NegotiateStage = 2 // validate refused the tensors; detail is its code
	StageScratch  NegotiateStage = 3 // the scratch query failed; detail is its code
	StageMax                     = StageScratch
)

// String names the stage as refusal kinds do: "provider", "validate",
// "scratch".
func (s NegotiateStage) String() string {
	switch s {
	case StageNone:
		return "none"
	case StageProvider:
		return "provider"
	case StageValidate:
		return "validate"
	case StageScratch:
		return "scratch"
	}
	return fmt.Sprintf("stage(%d)", uint32(s))
}

// Reply is the args area of a reply. A plain value.
type Reply struct {
	Digest  [DigestSize]byte // the request's digest; zero for ops without one
	Detail  uint32           // TASK: the orchestration's return code; READY: installed identities
	Stage   NegotiateStage   // NEGOTIATE (REJECTED): the step that refused; 0 elsewhere
	Message string           // why a request failed; empty on success
}

// replyHeader is the fixed part of a reply's args: digest, detail, stage
// and the message length.
const replyHeader = DigestSize + 12

// Append appends the encoding of r to dst, truncating the message to
// MaxReplyMessage bytes.
func (r Reply) Append(dst []byte) []byte {
	msg := r.Message
	if len(msg) > MaxReplyMessage {
		msg = msg[:MaxReplyMessage]
	}
	dst = append(dst, r.Digest[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, r.Detail)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.Stage))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(msg)))
	return append(dst, msg...)
}

// ParseReply decodes the args area of a reply.
func ParseReply(b []byte) (Reply, error) {
	if len(b) < replyHeader {
		return Reply{}, frameErr("reply args of %d bytes, shorter than %d", len(b), replyHeader)
	}
	n := binary.LittleEndian.Uint32(b[DigestSize+8:])
	if n > MaxReplyMessage || int(n) != len(b)-replyHeader {
		return Reply{}, frameErr("reply message length %d, frame carries %d", n, len(b)-replyHeader)
	}
	st := NegotiateStage(binary.LittleEndian.Uint32(b[DigestSize+4:]))
	if st > StageMax {
		return Reply{}, frameErr("reply stage %d, at most %d", st, StageMax)
	}
	return Reply{
		Digest:  [DigestSize]byte(b[:DigestSize]),
		Detail:  binary.LittleEndian.Uint32(b[DigestSize:]),
		Stage:   st,
		Message: string(b[replyHeader:]),
	}, nil
}

// Child roles in INIT.
const (
	RoleChip = 1 // a chip child: LOCAL_CHIP
	RoleSub  = 2 // a Python SUB child: LOCAL_PYTHON
	// RoleWorkerChild is a next-level Worker child's Python dispatch loop
	// (an L4 Worker's child path): LOCAL_PYTHON, like SUB children.
	RoleWorkerChild = 3
)

// initFixedSize is the fixed part of INIT args.
const initFixedSize = 4 + 4 + 4 + 4 + 8 + 4 + 4

// InitArgs are the args of INIT, the first frame a child receives. A plain
// value.
type InitArgs struct {
	WorkerID  uint32
	Role      uint32 // RoleChip, RoleSub or RoleWorkerChild
	Slots     uint32 // identity_table capacity
	Flags     uint32 // InitDebug; a child ignores the other bits (tests use them for faults)
	ArenaSize uint64 // bytes of the arena (descriptor 4)
	SlotBase  uint32 // first private slot the child allocates (slot independence tests)
	Reserved  uint32
	Platform  string
	Runtime   string
}

// InitDebug is the INIT flag that asks the child to log identity-table
// events to stderr.
const InitDebug = 1 << 0

// Append appends the encoding of a to dst.
func (a InitArgs) Append(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, a.WorkerID)
	dst = binary.LittleEndian.AppendUint32(dst, a.Role)
	dst = binary.LittleEndian.AppendUint32(dst, a.Slots)
	dst = binary.LittleEndian.AppendUint32(dst, a.Flags)
	dst = binary.LittleEndian.AppendUint64(dst, a.ArenaSize)
	dst = binary.LittleEndian.AppendUint32(dst, a.SlotBase)
	dst = binary.LittleEndian.AppendUint32(dst, a.Reserved)
	dst = appendStr(dst, a.Platform)
	return appendStr(dst, a.Runtime)
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func readStr(b []byte) (string, []byte, error) {
	if len(b) < 4 {
		return "", nil, errors.New("truncated string length")
	}
	n := binary.LittleEndian.Uint32(b)
	if n > MaxName || int(n) > len(b)-4 {
		return "", nil, fmt.Errorf("string of %d bytes", n)
	}
	return string(b[4 : 4+n]), b[4+n:], nil
}

// ParseInitArgs decodes INIT args.
func ParseInitArgs(b []byte) (InitArgs, error) {
	if len(b) < initFixedSize {
		return InitArgs{}, frameErr("init args of %d bytes, shorter than %d", len(b), initFixedSize)
	}
	a := InitArgs{
		WorkerID:  binary.LittleEndian.Uint32(b[0:]),
		Role:      binary.LittleEndian.Uint32(b[4:]),
		Slots:     binary.LittleEndian.Uint32(b[8:]),
		Flags:     binary.LittleEndian.Uint32(b[12:]),
		ArenaSize: binary.LittleEndian.Uint64(b[16:]),
		SlotBase:  binary.LittleEndian.Uint32(b[24:]),
		Reserved:  binary.LittleEndian.Uint32(b[28:]),
	}
	if a.Role != RoleChip && a.Role != RoleSub && a.Role != RoleWorkerChild {
		return InitArgs{}, frameErr("unknown role %d", a.Role)
	}
	var err error
	rest := b[initFixedSize:]
	if a.Platform, rest, err = readStr(rest); err != nil {
		return InitArgs{}, frameErr("init platform: %v", err)
	}
	if a.Runtime, rest, err = readStr(rest); err != nil {
		return InitArgs{}, frameErr("init runtime: %v", err)
	}
	if len(rest) != 0 {
		return InitArgs{}, frameErr("init args carry %d trailing bytes", len(rest))
	}
	return a, nil
}
