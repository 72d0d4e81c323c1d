// Package opquery decides, for an operation query, which implementation
// descriptors match it, why every other one does not, and in which order the
// matching ones are preferred; it imports the standard library and
// registry/semver only, so the daemon's operation service and a chip
// child's host operation service can share one implementation of these
// rules.
//
// # What is matched
//
// A Descriptor holds the fields of an operation descriptor (a GOP1
// descriptor) that the rules read, as plain data: what parses it (package
// registry/ops, from a module's manifest) fills it in, including the
// version as registry/semver parsed it and the
// platforms of its callables. A Candidate is a descriptor with the module
// that provides it and the runtime that module is built for.
//
// A Query names op_name, an inclusive op_version interval within one major
// version, allowed backends, required capabilities and numerics, the sync
// mode, the concrete tensors (inputs then outputs; or one tensor for every
// tensor of a one-shape operation), host and device scratch budgets, the
// operation parameters (name, version, and a value as text or already
// encoded with its type), and optionally ExactImplID.
//
// # The rules
//
// Match first checks the query itself: a namespaced op_name, at least one
// tensor (exactly one when Uniform), each with a concrete dtype, at most
// MaxRank dimensions, a stride per dimension or none, an extent that fits
// 64 bits and a known memory space. The version interval is then:
//
//   - MinVersion and MaxVersion: [MinVersion, MaxVersion], both of one major
//     version and not empty;
//   - MinVersion alone: MinVersion and above within its major version;
//   - neither: the newest major version any candidate of op_name has (from
//     its first prerelease on);
//   - MaxVersion alone is refused.
//
// Versions compare by semantic version precedence (semver.org 2.0.0; build
// metadata ignored). With ExactImplID only the candidate of that id is
// considered, and there is no fallback. Every other candidate of op_name is
// checked, the first mismatch giving its rejection kind: version; backend
// (a platform the caller executes, in the caller's order, that the
// descriptor has a callable for and the query allows; then the runtime);
// capability; numerics; sync; parameter (every parameter the descriptor
// declares passed, of exactly its version, with a value of its type (or
// encoded as that type), and no other); arity (inputs and outputs against the tensors); then for each tensor rank, dims (every extent), batch (the
// product of the outer axes), dtype ("any" takes every one), layout
// (contiguous: every stride packed; outer_strided: the first axis
// contiguous and every outer stride at least the packed extent) and
// memory_space (device when the tensor names none). A candidate that fits
// is negotiated by the caller (its Negotiate function), which may refuse it
// with a *Refusal, and its negotiated scratch must then fit the budgets
// (kind memory). Matching candidates are ordered by descending priority,
// then ascending impl_id, whatever the order they were given in; rejected
// ones are listed in ascending impl_id.
//
// A tensor given to an implementation must also be aligned as its
// descriptor says (Descriptor.TensorAlignment): the descriptor's alignment,
// or the element size when it names none (4, its scales', for a quantized
// type).
//
// Quantized tensors (Q8x32, Q4x32; seed 002: "the first tensor axis is
// contiguous (one block stride for quantized formats)") are described in
// blocks: the first axis counts blocks of QuantBlock elements and must be
// contiguous (stride 0 or 1: one block), the strides of the outer axes are
// in blocks (a Q4x32 element is half a byte, so no element stride could
// name every row), and dims, batch, layout and extent read those block
// counts as they read elements. A query's quantized tensor needs at least
// one axis.
package opquery
