package child

import (
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// The C ABI of testdata/examples/toolchain/runtime/include/ptojit_sim.h
// (x86-64 and arm64 LP64 layouts).
const (
	simABIVersion = registry.SimABIMajor // minor 1 added the strides tail of ptojit_args
	kernelSymbol  = "ptojit_kernel"
	sizeofTensor  = 56 // data, nbytes, dtype, ndim, shape[4]
	sizeofArgs    = 32 // the 1.0 prefix: abi_version, tensor_count, tensors, scalar_count, struct_size, scalars
	sizeofArgsV11 = 40 // and the 1.1 tail: strides
	sizeofKernel  = 16 // func_id, reserved, fn
	sizeofRuntime = 32 // abi_version, kernel_count, kernels; tail: struct_size, reserved, operations
	sizeofConfig  = 8  // abi_version, block_dim
	scratchBytes  = sizeofArgsV11 + mailbox.MaxTensors*sizeofTensor + mailbox.MaxScalars*8 + mailbox.MaxTensors*mailbox.MaxDims*8
)

// Symbols of an operation provider's orchestration (ptojit_sim.h).
const (
	opImplIDSymbol   = "ptojit_op_impl_id"
	opValidateSymbol = "ptojit_op_validate"
	opScratchSymbol  = "ptojit_op_scratch"
)

// The C layouts of ptojit_op_query, ptojit_op_tensor and ptojit_op_scratch.
const (
	opABIVersion      = 1
	sizeofOpQuery     = 24 // abi_version, tensor_count, input_count, sync_mode, tensors
	sizeofOpQueryV12  = 40 // and the 1.2 tail: struct_size, param_count, params
	sizeofOpTensor    = 72 // dtype, ndim, shape[4], strides[4]
	sizeofOpScratch   = 24 // ptojit_op_scratch_request: abi_version, reserved, host_bytes, device_bytes
	opMessageCapacity = 512
)

// Symbols of a runtime module's optional hooks (ptojit_sim.h).
const (
	modInitSymbol     = "ptojit_module_init"
	modShutdownSymbol = "ptojit_module_shutdown"
)

// C layouts of ptojit_op_service and ptojit_op_resolve_request.
const (
	sizeofOpService       = 64 // struct_size, version, user, 6 functions (describe_contract: the tail)
	sizeofOpResolveReq    = 48
	sizeofOpResolveParams = 112 // with the parameters tail
	sizeofOpParam         = 24  // ptojit_op_param: name, version, type, value
	maxOpParams           = 16
	opServiceVersion      = 1
	opEReentry            = -2
	opENotFound           = -3
	opEInvalid            = -4
)
