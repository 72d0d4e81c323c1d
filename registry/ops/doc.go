// Package ops implements namespaced operations over runtime modules:
// the operation descriptors a manifest declares, the resolution of a query
// among the implementations of the enabled modules, and handles that pin an
// implementation's module while they execute it on a Worker's chip children.
//
// # Descriptors
//
// Each entry of a manifest's operations is one implementation. The package
// installs its schema into package module (module.SetOperationSchema), so
// every manifest read from a package or a source directory is checked field
// by field; errors name the field ("operations[1].op_version"). The
// canonical payload of a manifest carries each descriptor as its plain
// JSON, so fields left out stay out of the signed bytes (packages signed
// before a field existed keep their signature).
//
//	impl_id        string, required: dotted identifier, unique among the enabled modules
//	op_name        string, required: namespaced dotted name, at least two
//	               components (example.sequence.prefix_sum); no central list
//	op_version     string, required: semantic version of the operation's contract,
//	               independent of the package version
//	priority       integer, optional (0): higher is preferred
//	capabilities   [string], optional: capability names (dotted), a set
//	numerics       [string], optional: numerical guarantees (dotted), a set
//	inputs         integer, optional (1): input tensors
//	outputs        integer, optional (1): output tensors; 1..16 tensors in all
//	input_dtypes   [string], required: the dtypes every input may have, or ["any"]
//	               (the provider's validate then decides)
//	output_dtypes  [string], required: likewise for every output
//	layouts        [string], optional (["contiguous"]): contiguous (packed),
//	               outer_strided (the first axis contiguous, outer axes with
//	               explicit strides of at least their packed extent)
//	memory_spaces  [string], optional (["device"]): device (the worker's shared
//	               tensor arena), host
//	alignment      integer, optional (0: the element size): byte alignment of
//	               every tensor, a power of two
//	rank           [min, max], required: inclusive rank bounds (at most 4)
//	dims           [min, max], optional: bounds of every dimension's extent
//	batch          [min, max], optional: bounds of the product of the outer axes
//	sync_modes     [string], required: a set of blocking, async
//	parameters     [{name, type, version}], optional: the operation parameters,
//	               in the order the callable takes them as its scalar arguments
//	               (its chip signature's SCALAR entries, at most 16); type is one
//	               of f32, f64, i32, i64 (carried as the 64-bit scalar: float bits,
//	               or two's complement, in the low bits), version (from 1) names
//	               the parameter's meaning: a query must pass every parameter
//	               with exactly that version, or the implementation is rejected
//	               (kind parameter)
//	callables      [{platform, artifact, hashid}], required: the ChipCallable of
//	               each platform (package module checks the artifact and hashid)
//
// Dtypes are f32, f16, bf16, f64, i64, i32, i16, i8 and u8, and ptojit's
// block-quantized q8x32 (id 10) and q4x32 (id 11), numbered as enum
// ptojit_dtype of ptojit_sim.h (1.3 added the quantized ones). Tensor axes
// are listed innermost first; strides are in elements and 0 means packed.
// A quantized type holds blocks of 32 elements, each a little-endian f32
// scale and then 32 int8 (q8x32, 36 bytes a block) or 32 int4 in two's
// complement, two to a byte with the even element in the low nibble (q4x32,
// 20 bytes), element i being scale * q[i]; a tensor of one is described in
// blocks: its first axis counts blocks, contiguous at one block, and its
// outer strides are in blocks (package opquery).
//
// # Provider entry points
//
// Each implementation's orchestration exports ptojit_op_impl_id,
// ptojit_op_validate and ptojit_op_scratch (ptojit_sim.h). They are pure
// negotiation: they see the concrete tensor descriptors and (ABI 1.2, the
// query's tail) the operation parameters with the values the query passes,
// so validate may refuse a value it cannot take; they allocate nothing,
// launch nothing and call back into nothing. They run only in a chip child
// (worker.Worker.Negotiate, mailbox op NEGOTIATE), after the module's
// package was authenticated again (Store.ReadPackage); never in the daemon or
// the command-line process. The worker resolves the symbols when it loads the
// callable and calls them only on an explicit NEGOTIATE. The implementation
// id an orchestration reports must equal the manifest's impl_id.
//
// # Activation and module hooks
//
// An orchestration may also export ptojit_module_init and
// ptojit_module_shutdown (ptojit_sim.h). ActivateModule activates a module
// on chip children: it registers the module's callables for the platform,
// and each child reports each callable's ptojit_op_impl_id and runs its init
// (mailbox op ACTIVATE; once per loaded callable). The reported ids must
// equal provided_ops (those of the operations with a callable for the
// platform), none may be reported twice or be provided by another enabled
// module, and no init may fail; otherwise the error is an *ActivationError
// naming the module, the callable and the reason, and every init that ran
// has been followed by its shutdown (the child runs it at once after a failed
// init; DEACTIVATE for the others). ModuleActivation.Deactivate runs the
// shutdowns and unregisters the callables. InstallCheck is the hook module
// installs run before they commit (module.Options.Activate): one sim child
// per sim platform of the package, activated, then deactivated.
//
// The Service activates a module the first time it needs one of its
// callables (to negotiate, or as a dependency offered to the host operation
// service: each operation of a module the handle's implementation, or one
// of its dependencies, depends on is offered with its descriptor to the
// callables of the modules that declare that dependency, and to no other),
// on every chip child, and keeps it activated while any of its
// callables is in use: the last release, Close, and a child's end run the
// shutdowns. A candidate whose module fails to activate is rejected with
// kind "activation". Before it activates a module, the Service checks the
// trust store as committed (module.Store.CheckLoad): a module whose
// publisher, signing key or package digest is revoked is rejected with
// kind "revoked", naming the revocation, and its init never runs. A
// revocation disables the modules it revokes, so a resolution that finds
// nothing also lists, with kind "revoked", the operations of installed
// modules a revocation disabled.
//
// # Resolution
//
// A Query names op_name, an inclusive op_version interval within one major
// version (default: the newest major version any implementation has),
// allowed backends (platforms), required capabilities and numerics, the sync
// mode, the concrete tensors (inputs then outputs; or one tensor for every
// tensor of a one-shape operation), host and device scratch budgets, the
// operation parameters (Query.Params: name, version, value; execution hands
// them to the provider as the callable's scalar arguments, in the
// descriptor's order), and optionally ExactImplID. Every implementation of
// op_name is checked against its descriptor (version, backend and runtime,
// capability, numerics, sync, parameter,
// arity, rank, dims, batch, dtype, layout, memory space: package opquery
// implements these rules, the budgets and the order); the ones that fit
// are activated (their module activated on every child, see above) and
// negotiated on a child: validate on the actual tensors, then the scratch
// query, whose answer must fit the budgets. Compatible implementations sort by
// descending priority, then ascending impl_id, whatever the order in which
// modules were installed; ExactImplID leaves no fallback. Every rejected
// implementation is listed (Result.Rejected) with its kind and reason.
// Resolution holds the Service's lock (the registry lock) throughout.
//
// # Handles
//
// Resolve copies the query's tensor descriptors and returns a Handle that
// owns its binding: the callable's registration on the children and a pin
// (module.Store.Pin, a shared flock per module) on the implementation's module
// and every module it depends on. While any process holds a pin, the store
// refuses to disable, remove, replace or roll back the module, with an error
// naming the pinning operation (module.PinnedError); only a revocation
// disables a pinned module, and the handle keeps working until released.
// Once pinned, Resolve checks again that the module and every module it
// depends on are still the enabled versions it resolved and still
// loadable. Describe returns the
// negotiated contract, Scratch the scratch sizes; the caller allocates scratch
// in the Worker's arena and passes it to Execute as the last tensors (device,
// then host), and the provider never frees it. Execute checks that the buffers
// match the contract (dtype, shape, strides as their effective values so that
// 0 and the packed stride are one, extent, alignment, scratch) and that each
// lies within a live allocation of the Worker's arena (a freed buffer, one
// freed and allocated again, or another arena's is refused, naming the
// tensor), and refuses otherwise; it never re-resolves or falls back. Calls on one handle are
// serialized; independent handles run concurrently on the children. Release
// waits for the call in flight, then drops its activations (the module's
// last one runs its shutdowns and unregisters its callables) and unpins. A child that dies
// during an execution fails that execution with worker.ErrChildExited; the
// handle can still be released, and later calls go to a live child. Service.Close
// reports (and releases) handles still live.
package ops
