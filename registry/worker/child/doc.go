// Package child is the chip child process of a Worker (package
// registry/worker): the loop that serves its mailbox (Main), the loader that
// makes sim chip callables executable (purego, no cgo), the child's side of
// NEGOTIATE, ACTIVATE, DEACTIVATE and PROVIDE, and the host operation
// service it offers the natives it runs. It speaks the wire of package
// registry/worker/mailbox and keeps its identity table with
// registry.TargetTable; it does not import the parent.
//
// A program runs a chip child by calling Main with descriptors 3 (the
// mailbox) and 4 (the arena) inherited from the Worker that started it:
// ptojitd's hidden __worker-child command does, as does every test binary
// that starts chip children (in its TestMain).
//
// # Registration
//
// The register payload (a ChipCallable blob or a SPYC envelope) arrives
// staged in a sealed memfd, the one SCM_RIGHTS descriptor of the control
// frame. The child checks the seals and the size, re-parses the payload,
// recomputes the descriptor with its own platform and runtime, and installs
// only if the digest equals the frame's (else HASHID_DESCRIPTOR_MISMATCH);
// an unsupported kind is refused before anything is parsed. A chip child
// then prewarms: it writes the orchestration shared object to a private
// temporary file, dlopens it, resolves the entry and config symbols, loads
// every kernel shared object likewise (ptojit_kernel), and marks the slot
// loaded only after all of that succeeded. Prewarm resolves symbols only
// and runs no orchestration code: the config symbol runs before
// the slot's first task. A failed prewarm rolls the install back. A task
// that finds its slot installed but not loaded prepares it first and logs
// a warning. The prewarm hook of the host_build_graph runtime is a no-op
// success (seed 000: that runtime resolves its orchestration on the host
// during prepare and has no AICPU callable prewarm): its callables are
// prepared by their first task, negotiation or activation, without a
// warning, and a callable that cannot be prepared fails there
// (PREWARM_FAILED), not at registration.
//
// Private slots never leave the child: replies carry a status and the
// digest, tasks carry the digest, and the child resolves digest -> slot
// immediately before executing.
//
// # Sim execution
//
// On a2a3sim and a5sim a ChipCallable's orchestration and kernels are host
// shared objects following testdata/examples/toolchain/runtime/include/
// ptojit_sim.h. The child builds the ptojit_runtime (func_id -> kernel) and
// each task's ptojit_args in anonymous mappings outside the Go heap, points
// tensor data into its arena mapping, and calls the entry through purego:
// no cgo is needed. The ptojit_args it builds are ABI 1.1: struct_size 40
// and the strides tail (every tensor's strides as the task carried them,
// 0 packed); a tensor whose first axis is not contiguous, or whose strides
// span more than its bytes, is refused. Binaries built against ABI 1.0 read
// the unchanged prefix. The host operation service reads the tail of the
// ptojit_args a caller passes only when its struct_size covers it. Other platforms are refused at prewarm
// (PLATFORM_UNSUPPORTED).
//
// Prewarm also resolves, without calling them, an operation provider's
// ptojit_op_impl_id, ptojit_op_validate and ptojit_op_scratch; only NEGOTIATE
// calls them. The ptojit_runtime handed to an orchestration carries the
// size-prefixed tail of ptojit_sim.h (struct_size 32) pointing to this
// process's host operation service (opservice.go): an orchestration resolves
// and executes the operations the parent offered with PROVIDE, in this
// process, from inside its own task. PROVIDE names the operation's
// descriptor and the consumer callable it is offered to (one of a module
// that declares the provider's module as a dependency), so a caller sees
// only its own module's dependencies; resolution runs package opquery's
// Match on them (the daemon's rules, exact_impl_id and the budgets of the
// request's tail, the operation parameters of its second tail, each with
// its version and type), negotiates on the provider's entry points, and
// lends the resolved descriptor (describe_contract); execute checks the
// negotiated tensors and the caller's scratch buffers, and hands the
// provider the resolved parameters as its scalars (the caller passes
// none). Handles it leaves open end with
// the task, and calls made while a provider negotiates are refused.
//
// Module hooks: prewarm also resolves the optional ptojit_module_init and
// ptojit_module_shutdown. ACTIVATE runs init once per loaded callable
// (later activations only count), and a failed init runs shutdown before
// the reply. Shutdown runs when the last activation is dropped
// (DEACTIVATE), and, for callables still activated, when the slot is
// cleared (its last registration dropped), on SHUTDOWN and when the parent
// closes the mailbox: a callable whose init ran always sees its shutdown
// while the child lives. Calls into the host operation service from init or
// shutdown are refused (PTOJIT_OP_E_REENTRY).
//
// # Files
//
// Each file uses only the declarations of the files before it in this
// order, never of one after it (filecycles_test.go at the repository root
// checks it): abi.go (the C layouts of ptojit_sim.h) and cmem.go (memory
// outside the Go heap); sim.go (the loader and the executable state of a
// callable, its task call and its module shutdown); child.go (the child's
// state, prewarm and slot cleanup); negotiate.go, activate.go, install.go
// and opservice.go (the requests, and the host operation service); task.go;
// serve.go (Main, the mailbox loop and the dispatch of requests).
package child
