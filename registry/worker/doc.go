// Package worker runs compiled callables in local child worker processes:
// an L3 Worker owns N chip children (LOCAL_CHIP) and optional Python SUB
// children (LOCAL_PYTHON), registers callables on them by hashid before
// dispatch, and runs an orchestration function in the parent that submits
// tasks to them. An L4 Worker has next-level Worker children instead of chip
// children (Config.WorkerChildren): Python dispatch loops that, like SUB
// children, are LOCAL_PYTHON targets, and that SubmitNextLevel reaches with
// a Python handle. A ChipWorker is the L2 path: one chip child that runs a
// registered handle directly (Call), with no orchestrator.
//
// # Processes
//
// A chip child is the ptojit engine (or a test binary) re-executed in its
// hidden child mode, which calls ChildMain. A SUB child is python3 running
// the loop in subchild.py. Every child inherits two descriptors:
//
//	3  its end of a SOCK_SEQPACKET socketpair: the mailbox
//	4  the tensor arena, a memfd that the parent and every child map
//	   MAP_SHARED, so tensors travel as (offset, length) into it
//
// The mailbox carries one operation at a time: the parent side of each
// endpoint holds a per-endpoint lock from sending a request until its reply
// is read, and there are no sequence numbers. A timeout, a dead child or a
// malformed reply therefore retires the endpoint (and kills the child).
//
// # Registration
//
// Worker.Register computes the canonical descriptor and hashid and hands
// them to a Registrar, which sends REGISTER_CALLABLE to every
// active child of the namespace (whole scope) and publishes a handle only
// when all installed it; on any failure the Registrar cleans up in reverse
// and marks unconfirmed target/hashid pairs uncertain for the Worker's
// lifetime (REGISTER_PARTIAL_FAILURE, REGISTER_CLEANUP_UNCERTAIN).
// Registrations made before Start are installed on each child (Registrar
// Attach) before the child is asked for READY.
//
// The register payload (a ChipCallable blob or a SPYC envelope) is staged in
// a memfd sealed against writing, growing and shrinking, and passed with the
// control frame as its one SCM_RIGHTS descriptor. The child checks the
// seals and the size, re-parses the payload, recomputes the descriptor with
// its own platform and runtime, and installs only if the digest equals the
// frame's (else HASHID_DESCRIPTOR_MISMATCH); an unsupported kind is refused
// before anything is parsed. A chip child then prewarms: it writes the
// orchestration shared object to a private temporary file, dlopens it,
// resolves the entry and config symbols, loads every kernel shared object
// likewise (ptojit_kernel), and marks the slot loaded only after all of that
// succeeded. Prewarm resolves symbols only and runs no orchestration code
// (seed 000): the config symbol runs before the slot's first task. A failed prewarm rolls the install back. A task that finds its
// slot installed but not loaded prepares it first and logs a warning.
//
// Private slots never leave the child: replies carry a status and the
// digest, tasks carry the digest, and the child resolves digest -> slot
// immediately before executing. Final unregister follows the seed's six
// steps through registry.TargetTable: decrement; keep if still referenced;
// else stop resolution, clear the executable state (dlclose), free the slot
// and forget the hashid.
//
// # Frames
//
// The mailbox frames, their args, the arena and the staged payloads are
// the wire of package registry/worker/mailbox, whose documentation is their
// byte layout (mailbox layout version 1).
//
// # Sim execution
//
// On a2a3sim and a5sim a ChipCallable's orchestration and kernels are host
// shared objects following testdata/examples/toolchain/runtime/include/
// ptojit_sim.h. The child builds the ptojit_runtime (func_id -> kernel) and
// each task's ptojit_args in anonymous mappings outside the Go heap, points
// tensor data into its arena mapping, and calls the entry through purego:
// no cgo is needed. Other platforms are refused at prewarm
// (PLATFORM_UNSUPPORTED).
//
// Prewarm also resolves, without calling them, an operation provider's
// ptojit_op_impl_id, ptojit_op_validate and ptojit_op_scratch; only NEGOTIATE
// calls them. The ptojit_runtime handed to an orchestration carries the
// size-prefixed tail of ptojit_sim.h (struct_size 32) pointing to this
// process's host operation service (opservice.go): an orchestration resolves
// and executes the operations the parent offered with PROVIDE, in this
// process, from inside its own task; handles it leaves open end with the
// task, and calls made while a provider negotiates are refused.
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
package worker
