// Package mailbox is the wire that a Worker and its child processes speak:
// the frames of the mailbox, the encodings of their args, the shared-memory
// tensor arena, and the staging of register payloads in sealed memfds. The
// parent side (package registry/worker) and the chip child (package
// registry/worker/child) both build on it; it holds no process and no
// concurrency of either side. Its parsers take untrusted bytes and are
// fuzzed (fuzz_test.go, negotiate_test.go, with committed corpora).
//
// # Descriptors
//
// Every child inherits two descriptors:
//
//	3  its end of a SOCK_SEQPACKET socketpair: the mailbox (ChildMailboxFD)
//	4  the tensor arena, a memfd that the parent and every child map
//	   MAP_SHARED, so tensors travel as (offset, length) into it (ChildArenaFD)
//
// The mailbox carries one operation at a time: the parent side of each
// endpoint holds a per-endpoint lock from sending a request until its reply
// is read, and there are no sequence numbers. A timeout, a dead child or a
// malformed reply therefore retires the endpoint (and kills the child);
// the Worker replaces the child with a new process (package registry/worker).
//
// The register payload (a ChipCallable blob or a SPYC envelope) is staged
// in a memfd sealed against writing, growing and shrinking (StagePayload),
// and passed with the control frame as its one SCM_RIGHTS descriptor; the
// child checks the seals and the size (ReadStaged). Sealed memfds need
// Linux: elsewhere the package builds (so that `GOOS=darwin go vet` checks
// it) and refuses to create one.
//
// # Frames (mailbox layout version 3)
//
// All integers are little-endian. One frame is one SEQPACKET message of at
// most MailboxSize (4096) bytes:
//
//	offset  size  field
//	0       4     magic "PJMB"
//	4       2     layout version, 3
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
//	9 PROVIDE              digest[32], i32 priority, then op_name, op_version, impl_id,
//	                       module (u16 length + bytes each), the descriptor (u16 length
//	                       + the JSON of an opquery.Descriptor), the consumer's
//	                       digest[32]: offer the operation to the child's host
//	                       operation service, for calls from that callable
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
//	8 + 88*i    8     tensor i: u64 arena offset
//	            8     u64 nbytes
//	            4     u32 dtype (1 float32, 2 int32, 3 float16)
//	            4     u32 ndim (<= 4)
//	            32    u64 shape[4], first axis innermost; entries >= ndim are 0
//	            32    u64 strides[4] in elements; 0 is packed for its axis;
//	                  entries >= ndim are 0
//	8 + 88*t    8*s   u64 scalars (a float32 scalar in the low 32 bits)
//
// The blob is exactly 8 + 88t + 8s bytes, at most the task-args capacity
// (so at most 45 tensors without scalars). Layout version 1 had no
// strides (56-byte tensor references); a child of one version refuses the
// other's frames.
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
//	36      4     u32 stage: NEGOTIATE (REJECTED) the step that refused (1 the
//	              provider's entry points are missing or could not be called,
//	              2 validate, 3 the scratch query); 0 in every other reply
//	40      4     u32 message length m (<= 1024)
//	44      m     UTF-8 message: why the request failed; empty on success
//	              (NEGOTIATE: "impl_id=ID host=N device=M" on success;
//	              ACTIVATE: the impl id on success)
//
// Layout version 2 had no stage (the message length at 36).
// A reply whose digest differs from the request's is invalid
// (REPLY_HASHID_MISMATCH) and retires the endpoint. Statuses: 0 OK,
// 1 BAD_FRAME, 2 HASHID_DESCRIPTOR_MISMATCH, 3 CALLABLE_KIND_UNSUPPORTED,
// 4 LOCAL_SLOT_EXHAUSTED, 5 HASHID_NOT_INSTALLED, 6 PAYLOAD_INVALID,
// 7 PLATFORM_UNSUPPORTED, 8 PREWARM_FAILED, 9 EXEC_FAILED, 10 ARGS_INVALID,
// 11 REJECTED (the provider refused a negotiation, or its module init failed).
package mailbox
