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
//	callables      [{platform, artifact, hashid}], required: the ChipCallable of
//	               each platform (package module checks the artifact and hashid)
//
// Dtypes are f32, f16, bf16, f64, i64, i32, i16, i8 and u8, numbered as enum
// ptojit_dtype of ptojit_sim.h. Tensor axes are listed innermost first;
// strides are in elements and 0 means packed.
//
// # Provider entry points
//
// Each implementation's orchestration exports ptojit_op_impl_id,
// ptojit_op_validate and ptojit_op_scratch (ptojit_sim.h). They are pure
// negotiation: they see the concrete tensor descriptors, allocate nothing,
// launch nothing and call back into nothing. They run only in a chip child
// (worker.Worker.Negotiate, mailbox op NEGOTIATE), after the module's
// package was authenticated again (Store.ReadPackage); never in the daemon or
// the command-line process. The worker resolves the symbols when it loads the
// callable and calls them only on an explicit NEGOTIATE. The implementation
// id an orchestration reports must equal the manifest's impl_id.
//
// # Resolution
//
// A Query names op_name, an inclusive op_version interval within one major
// version (default: the newest major version any implementation has),
// allowed backends (platforms), required capabilities and numerics, the sync
// mode, the concrete tensors (inputs then outputs; or one tensor for every
// tensor of a one-shape operation), host and device scratch budgets, and
// optionally ExactImplID. Every implementation of op_name is checked against
// its descriptor (version, backend and runtime, capability, numerics, sync,
// arity, rank, dims, batch, dtype, layout, memory space); the ones that fit
// are activated (their callable registered on every child, whole scope) and
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
// naming the pinning operation (module.PinnedError). Describe returns the
// negotiated contract, Scratch the scratch sizes; the caller allocates scratch
// in the Worker's arena and passes it to Execute as the last tensors (device,
// then host), and the provider never frees it. Execute checks that the buffers
// match the contract (dtype, shape, extent, alignment, scratch) and refuses
// otherwise; it never re-resolves or falls back. Calls on one handle are
// serialized; independent handles run concurrently on the children. Release
// waits for the call in flight, then unregisters and unpins. A child that dies
// during an execution fails that execution with worker.ErrChildExited; the
// handle can still be released, and later calls go to a live child. Service.Close
// reports (and releases) handles still live.
package ops
