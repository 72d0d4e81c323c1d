package worker

import (
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Worker-level error codes, beside the registry's, for replies that the
// seed names no code for.
const (
	// PrewarmFailed: the target could not load the callable's executable
	// state; it rolled the registration back.
	PrewarmFailed registry.ErrorCode = "PREWARM_FAILED"
	// TaskFailed: the callable ran and reported failure.
	TaskFailed registry.ErrorCode = "TASK_FAILED"
	// TaskArgsInvalid: the task's arguments do not fit the callable or the
	// arena; nothing ran.
	TaskArgsInvalid registry.ErrorCode = "TASK_ARGS_INVALID"
	// FrameInvalid: a peer sent a malformed mailbox frame.
	FrameInvalid registry.ErrorCode = "MAILBOX_FRAME_INVALID"
)

// NegotiationRejected: the provider's validate or scratch query refused
// the tensors of a NEGOTIATE request; nothing was allocated or launched.
const NegotiationRejected registry.ErrorCode = "NEGOTIATION_REJECTED"

// ModuleInitFailed: a callable's ptojit_module_init returned non-zero on
// ACTIVATE; the child ran its ptojit_module_shutdown before replying.
const ModuleInitFailed registry.ErrorCode = "MODULE_INIT_FAILED"

// codeOf maps a reply status to an error code (package mailbox's table).
func codeOf(s mailbox.Status) registry.ErrorCode {
	return registry.ErrorCode(s.Code())
}

// EndpointError is a failure of the mailbox itself: the child died, timed
// out, or broke the protocol. The outcome of the operation in flight is
// unknown, and the endpoint is no longer used. Safe to share.
type EndpointError struct {
	WorkerID int
	Op       string
	Err      error
}

// Error names the operation and the cause; callers that report several
// workers add the worker id (as the Registrar does).
func (e *EndpointError) Error() string {
	return fmt.Sprintf("mailbox %s: %v", e.Op, e.Err)
}

func (e *EndpointError) Unwrap() error { return e.Err }

// ErrChildExited is the cause of an EndpointError when the child process is
// gone.
var ErrChildExited = errors.New("child process exited")

// ErrTimeout is the cause of an EndpointError when a control operation's
// reply did not arrive in time.
var ErrTimeout = errors.New("no reply before the control timeout")
