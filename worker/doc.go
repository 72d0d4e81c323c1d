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
// # Frames (mailbox layout version 1)
//
// All integers are little-endian. One frame is one SEQPACKET message of at
// most MailboxSize (4096) bytes:
//
//	offset  size  field
//	0       4     magic "PJMB"
//	4       2     layout version, 1
//	6       2     op; a reply sets bit 15 (0x8000) of the request's op
//	8       4     status: 0 in requests; a reply's Status
//	12      4     args length n; the frame is exactly 24+n bytes
//	16      8     MAILBOX_OFF_CALLABLE: reserved, always 0
//	24      n     MAILBOX_OFF_ARGS: the args area, n <= 4072
//
// Ops and their args:
//
//	1 TASK                 digest[32], then the task-args blob (capacity 4040)
//	2 REGISTER_CALLABLE    digest[32], u32 kind (1 CHIP_CALLABLE, 2 PYTHON_SERIALIZED),
//	                       u32 payload reference type (1: sealed memfd passed as the
//	                       message's one SCM_RIGHTS descriptor), u64 payload length
//	3 UNREGISTER_CALLABLE  digest[32]
//	4 INIT                 u32 worker id, u32 role (1 chip, 2 SUB, 3 Worker child), u32 slots, u32 flags,
//	                       u64 arena size, u32 slot base, u32 reserved 0,
//	                       u32 len + platform, u32 len + runtime (each <= 64 bytes)
//	5 READY                empty
//	6 NOP                  empty: the bare round trip
//	7 SHUTDOWN             empty
//	8 NEGOTIATE            digest[32], then the negotiation blob (NegotiateArgs): the
//	                       provider's impl id, validate and scratch query on the tensors
//	9 PROVIDE              digest[32], i32 priority, then op_name, op_version, impl_id
//	                       (u16 length + bytes each): offer the operation to the
//	                       child's host operation service
//	10 ACTIVATE            digest[32]: report the orchestration's impl id and, on the
//	                       first activation of the callable in this child, run its
//	                       ptojit_module_init (a failed init runs its shutdown at once)
//	11 DEACTIVATE          digest[32]: drop one activation; the last runs
//	                       ptojit_module_shutdown
//
// The digest is the raw 32-byte SHA-256 of the canonical descriptor (the
// hashid without its "sha256:" prefix and hex). No frame carries a slot, a
// hashid string or a namespace: the child's role determines its namespace.
//
// Task-args blob (tensors in signature order, then scalars):
//
//	offset      size  field
//	0           4     u32 tensor count t (<= 64)
//	4           4     u32 scalar count s (<= 64)
//	8 + 56*i    8     tensor i: u64 arena offset
//	            8     u64 nbytes
//	            4     u32 dtype (1 float32, 2 int32, 3 float16)
//	            4     u32 ndim (<= 4)
//	            32    u64 shape[4]; entries >= ndim are 0
//	8 + 56*t    8*s   u64 scalars (a float32 scalar in the low 32 bits)
//
// The blob is exactly 8 + 56t + 8s bytes.
//
// Reply args (every reply):
//
//	offset  size  field
//	0       32    digest of the request (zero for INIT, READY, NOP, SHUTDOWN)
//	32      4     u32 detail: TASK the orchestration's return code; READY the
//	              number of installed hashids; NEGOTIATE (REJECTED) validate's code;
//	              ACTIVATE flags (1 impl id exported, 2 init ran, 4 shutdown
//	              exported) or (REJECTED) init's code; DEACTIVATE 1 when
//	              shutdown ran
//	36      4     u32 message length m (<= 1024)
//	40      m     UTF-8 message: why the request failed; empty on success
//	              (NEGOTIATE: "impl_id=ID host=N device=M" on success;
//	              ACTIVATE: the impl id on success)
//
// A reply whose digest differs from the request's is invalid
// (REPLY_HASHID_MISMATCH) and retires the endpoint. Statuses: 0 OK,
// 1 BAD_FRAME, 2 HASHID_DESCRIPTOR_MISMATCH, 3 CALLABLE_KIND_UNSUPPORTED,
// 4 LOCAL_SLOT_EXHAUSTED, 5 HASHID_NOT_INSTALLED, 6 PAYLOAD_INVALID,
// 7 PLATFORM_UNSUPPORTED, 8 PREWARM_FAILED, 9 EXEC_FAILED, 10 ARGS_INVALID,
// 11 REJECTED (the provider refused a negotiation, or its module init failed).
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
