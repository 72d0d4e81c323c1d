package registry

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorCode is a stable, machine-readable error code. It implements error so
// that errors.Is(err, code) reports whether any *Error in err's chain carries
// that code.
type ErrorCode string

func (c ErrorCode) Error() string { return string(c) }

// The codes the callable identity specification requires.
const (
	// HashidFormatInvalid: a string is not "sha256:" + 64 lowercase hex.
	HashidFormatInvalid ErrorCode = "HASHID_FORMAT_INVALID"
	// HashidDescriptorMismatch: a hashid was registered or requested with a
	// descriptor or payload digest that differs from the installed (or
	// recomputed) one.
	HashidDescriptorMismatch ErrorCode = "HASHID_DESCRIPTOR_MISMATCH"
	// CallableKindUnsupported: the kind is unknown, or the target namespace
	// does not resolve it.
	CallableKindUnsupported ErrorCode = "CALLABLE_KIND_UNSUPPORTED"
	// LocalSlotExhausted: a target has no free local slot.
	LocalSlotExhausted ErrorCode = "LOCAL_SLOT_EXHAUSTED"
	// RegisterPartialFailure: some target in scope failed to install; no
	// handle was published.
	RegisterPartialFailure ErrorCode = "REGISTER_PARTIAL_FAILURE"
	// RegisterCleanupUncertain: cleanup of a failed registration could not
	// be confirmed; the target/hashid pair is refused for the Registrar's
	// lifetime.
	RegisterCleanupUncertain ErrorCode = "REGISTER_CLEANUP_UNCERTAIN"
	// RegisterTombstoneActive: a register reached a hashid whose final
	// unregister is still clearing its slot.
	RegisterTombstoneActive ErrorCode = "REGISTER_TOMBSTONE_ACTIVE"
	// UnregisterTombstoneActive: an unregister reached a hashid whose final
	// unregister is still clearing its slot.
	UnregisterTombstoneActive ErrorCode = "UNREGISTER_TOMBSTONE_ACTIVE"
)

// Codes ptojit adds for conditions the specification describes without
// naming a code.
const (
	// CallableBlobInvalid: a ChipCallable blob (or value to marshal) breaks
	// the layout rules.
	CallableBlobInvalid ErrorCode = "CALLABLE_BLOB_INVALID"
	// SPYCPayloadInvalid: a Python payload's SPYC header is malformed.
	SPYCPayloadInvalid ErrorCode = "SPYC_PAYLOAD_INVALID"
	// PlatformUnsupported: the platform has no known target architecture,
	// or the runtime name is empty.
	PlatformUnsupported ErrorCode = "PLATFORM_UNSUPPORTED"
	// HashidNotInstalled: a target was asked to resolve or release a hashid
	// it has not installed.
	HashidNotInstalled ErrorCode = "HASHID_NOT_INSTALLED"
	// HandleForged: a CallableHandle was not returned by any Registrar
	// (built from its public fields).
	HandleForged ErrorCode = "HANDLE_FORGED"
	// HandleStale: the handle's registration was unregistered.
	HandleStale ErrorCode = "HANDLE_STALE"
	// HandleMutated: the handle's public fields differ from its live
	// registration record.
	HandleMutated ErrorCode = "HANDLE_MUTATED"
	// HandleForeign: the handle was returned by another Registrar (Worker).
	HandleForeign ErrorCode = "HANDLE_FOREIGN"
	// HandleNamespaceMismatch: the execution path cannot resolve the
	// handle's namespace.
	HandleNamespaceMismatch ErrorCode = "HANDLE_NAMESPACE_MISMATCH"
	// TargetNamespaceMismatch: a target in a registration scope belongs to
	// another namespace than the callable's kind demands.
	TargetNamespaceMismatch ErrorCode = "TARGET_NAMESPACE_MISMATCH"
	// ReplyHashidMismatch: a control reply names another hashid than the
	// request did.
	ReplyHashidMismatch ErrorCode = "REPLY_HASHID_MISMATCH"
)

// Codes lists every code, in the order above.
var Codes = []ErrorCode{
	HashidFormatInvalid, HashidDescriptorMismatch, CallableKindUnsupported,
	LocalSlotExhausted, RegisterPartialFailure, RegisterCleanupUncertain,
	RegisterTombstoneActive, UnregisterTombstoneActive,
	CallableBlobInvalid, SPYCPayloadInvalid, PlatformUnsupported,
	HashidNotInstalled, HandleForged, HandleStale, HandleMutated,
	HandleForeign, HandleNamespaceMismatch, TargetNamespaceMismatch,
	ReplyHashidMismatch,
}

// NoWorker is the WorkerID of an error that concerns no particular worker.
const NoWorker = -1

// Error is a registry error. Its message names the operation, the code, the
// worker id, the namespace and the hashid; it never contains local paths
// (the package handles no paths). Safe to share once built.
type Error struct {
	Code      ErrorCode
	WorkerID  int // NoWorker when no worker is involved
	Namespace Namespace
	Hashid    string // "" when unknown
	Op        string // "register", "unregister", "install", "parse", ...
	Err       error  // the underlying cause, or nil
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Code))
	var ctx []string
	if e.WorkerID != NoWorker {
		ctx = append(ctx, fmt.Sprintf("worker %d", e.WorkerID))
	}
	if e.Namespace != "" {
		ctx = append(ctx, string(e.Namespace))
	}
	if e.Hashid != "" {
		ctx = append(ctx, e.Hashid)
	}
	if len(ctx) > 0 {
		b.WriteString(" [")
		b.WriteString(strings.Join(ctx, ", "))
		b.WriteString("]")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's code.
func (e *Error) Is(target error) bool {
	c, ok := target.(ErrorCode)
	return ok && c == e.Code
}

// CodeOf returns the code of the first *Error in err's chain, or "".
func CodeOf(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// newError returns an *Error with no worker.
func newError(code ErrorCode, op string, format string, args ...any) *Error {
	var cause error
	if format != "" {
		cause = fmt.Errorf(format, args...)
	}
	return &Error{Code: code, WorkerID: NoWorker, Op: op, Err: cause}
}
