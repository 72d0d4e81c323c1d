package worker

import "github.com/ptojit/ptojit/registry/worker/mailbox"

// The wire types a Worker's callers use, re-exported from package mailbox
// so that callers need one import: task arguments and the tensor arena
// they point into, and the operation negotiation and provision arguments.
type (
	TaskArgs      = mailbox.TaskArgs
	Tensor        = mailbox.Tensor
	DType         = mailbox.DType
	Arena         = mailbox.Arena
	Buffer        = mailbox.Buffer
	OpTensor      = mailbox.OpTensor
	OpParam       = mailbox.OpParam
	NegotiateArgs = mailbox.NegotiateArgs
	Negotiation   = mailbox.Negotiation
	ProvidedOp    = mailbox.ProvidedOp
	// NegotiateStage is the step of a negotiation that refused.
	NegotiateStage = mailbox.NegotiateStage
)

// The steps of a negotiation that can refuse (NegotiationRefusal.Stage).
const (
	StageProvider = mailbox.StageProvider
	StageValidate = mailbox.StageValidate
	StageScratch  = mailbox.StageScratch
)

// Element types of a Tensor.
const (
	Float32 = mailbox.Float32
	Int32   = mailbox.Int32
	Float16 = mailbox.Float16
	Q8x32   = mailbox.Q8x32
	Q4x32   = mailbox.Q4x32
)

// Limits of one task's arguments and of one negotiation.
const (
	MaxTensors   = mailbox.MaxTensors
	MaxScalars   = mailbox.MaxScalars
	MaxDims      = mailbox.MaxDims
	MaxOpTensors = mailbox.MaxOpTensors
)

// Errors of the arena.
var (
	ErrArenaFull    = mailbox.ErrArenaFull
	ErrNotAllocated = mailbox.ErrNotAllocated
)

// Float32Scalar returns the raw scalar value that carries f.
func Float32Scalar(f float32) uint64 { return mailbox.Float32Scalar(f) }
