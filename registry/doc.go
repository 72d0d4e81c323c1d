// Package registry defines callable identity for ptojit and its local child
// workers: the canonical descriptors and hashids of compiled callables, the
// ChipCallable blob layout, SPYC Python payload headers, the typed error
// codes and the target-local identity tables (TargetTable): byte formats and
// the tables a target keeps, no concurrency of the parent (the parent-side
// live-registration table, Registrar, and its CallableHandles are in package
// worker). It uses the standard library only, so the thin client links it.
//
// A callable is identified everywhere by its hashid, a SHA-256 over canonical
// descriptor bytes. Integer slots exist only inside a target (TargetTable)
// and never leave it: no exported function of this package returns a slot
// except the target-local TargetTable itself.
//
// All bytes below are byte-compatible with the public simpler runtime, so a
// Python runtime and ptojit compute the same hashid for the same callable.
//
// # Descriptor primitives
//
//	u32(x)    4 bytes, unsigned little-endian
//	str(s)    u32(len(s)) then the UTF-8 bytes of s
//	bytes(b)  u32(len(b)) then b
//
// # CHIP_CALLABLE descriptor (schema 1, kind 1)
//
//	u32(1)                          descriptor_schema_version
//	u32(1)                          callable_kind CHIP_CALLABLE
//	str(target_arch)                "a2a3" for a2a3, a2a3sim; "a5" for a5, a5sim
//	str(platform)                   a2a3sim | a2a3 | a5sim | a5
//	str(runtime)                    e.g. tensormap_and_ringbuffer
//	bytes(sha256(blob))             32 bytes: the exact ChipCallable blob
//	bytes(signature_schema_hash)    32 bytes: see below
//
// signature_schema_hash = sha256 of CHIP_SIGNATURE_SCHEMA_V1:
//
//	u32(1) u32(sig_count) u32(direction[0]) ... u32(direction[sig_count-1])
//
// with the directions of the ChipCallable's public signature: SCALAR 0, IN 1,
// OUT 2, INOUT 3. It covers nothing else (no child signatures, names or
// binaries: those are covered by the blob digest).
//
// Outside the descriptor, signature_schema_hash and every other digest
// (blob and payload SHA-256) are written as 64 lowercase hex digits without
// a prefix, in every JSON output; only a hashid carries "sha256:".
//
// # PYTHON_SERIALIZED descriptor (schema 1, kind 2)
//
//	u32(1)                          descriptor_schema_version
//	u32(2)                          callable_kind PYTHON_SERIALIZED
//	u32(payload_format_version)     the SPYC header version (1)
//	u32(serializer_id)              the SPYC header serializer (1 = cloudpickle)
//	bytes(sha256(payload))          32 bytes: the serializer output, not the header
//
// # Hashid
//
//	hashid = "sha256:" + 64 lowercase hex digits of sha256(descriptor)
//
// ParseHashid accepts exactly that form; anything else (another prefix,
// uppercase hex, 63 or 65 digits, whitespace) is HASHID_FORMAT_INVALID. A
// Hashid is a [32]byte; hex appears only at the edges.
//
// # SPYC payload (Python callable envelope)
//
// A 16-byte little-endian header followed by the serializer output:
//
//	offset  size  field
//	0       4     magic "SPYC"
//	4       1     version, 1
//	5       1     serializer, 1 (cloudpickle)
//	6       2     flags, 0
//	8       8     payload size: exactly the number of bytes after the header
//
// ParseSPYC rejects any other magic, version, serializer or flags, and a size
// that differs from the bytes present (SPYC_PAYLOAD_INVALID).
//
// # ChipCallable blob
//
// Little-endian; the header is 9376 bytes:
//
//	offset  size   field
//	0       1024   int32 signature[256]        directions; entries >= sig_count are 0
//	1024    4      int32 sig_count             0..256
//	1028    4      uint32 binary_size          orchestration binary size
//	1032    64     char func_name[64]          NUL-padded
//	1096    4      uint32 func_name_len        0..63
//	1100    4096   int32 child_func_ids[1024]
//	5196    4096   uint32 child_offsets[1024]  offsets into storage
//	9292    4      int32 child_count           0..1024
//	9296    64     char config_name[64]        NUL-padded
//	9360    4      uint32 config_name_len      0..63
//	9364    4      int32 scalar_count
//	9368    8      padding (0)
//	9376           storage
//
// Storage starts with the orchestration binary (binary_size bytes). Child i's
// CoreCallable starts at storage offset child_offsets[i], a multiple of 64 at
// or after the end of the previous child (the first: at or after the end of
// the orchestration binary). The writer places each child at the next
// multiple of 64 and fills gaps with zeros. The blob ends exactly at the end
// of the last child (or of the orchestration binary when there are none):
// total size = 9376 + that end.
//
// A CoreCallable (header 192 bytes):
//
//	offset  size  field
//	0       128   int32 signature[32]
//	128     4     int32 sig_count             0..32
//	132     4     uint32 binary_size
//	136     8     uint64 resolved_addr
//	144     48    padding (0)
//	192           binary (binary_size bytes)
//
// ParseChipCallable checks every count, offset and size against the blob
// length before reading, so a hostile blob is rejected
// (CALLABLE_BLOB_INVALID), never read out of bounds. It accepts non-zero
// padding and gaps (they are part of the hashed bytes); MarshalBinary of the
// parsed value reproduces the input exactly when the input is canonical
// (zero padding, children packed at the next multiple of 64).
//
// # Errors
//
// Every error this package returns for a registry condition is an *Error
// carrying an ErrorCode, the worker id (NoWorker when none), the namespace,
// the hashid and the operation. ErrorCode implements error, so
// errors.Is(err, registry.LocalSlotExhausted) finds a code anywhere in a
// wrapped or joined chain. Messages never contain local file paths.
//
// # Namespaces, handles and tables
//
// A target namespace (LOCAL_CHIP for CHIP_CALLABLE, LOCAL_PYTHON for
// PYTHON_SERIALIZED) names the resolver domain of a handle. Each target
// endpoint owns a TargetTable: identity_table (hashid -> local slot),
// identity_refs (hashid -> refcount) and slot_table (slot -> hashid, kind,
// digests). A parent owns one worker.Registrar, which publishes a
// CallableHandle only after every target in scope installed the hashid and
// validates handles before they are used (see package worker). A target
// signals a definite refusal (nothing installed) by returning an error
// containing an *Error; any other error leaves the outcome unknown.
package registry
