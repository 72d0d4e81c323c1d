/* orchestration.c: the dequantizing prefix sum's orchestration and provider
 * entry points. Chip signature [IN, OUT]: a q8x32 or q4x32 vector of n
 * blocks in, a float32 vector of 32n elements out; kernel 0 does the work.
 * It names the quantized types, so its module's kernel_abi min is 1.3. */
#include "quant.h"

static const ptojit_config quant_config = {
    .abi_version = PTOJIT_SIM_ABI_VERSION,
    .block_dim = 1,
};

const ptojit_config *quant_orch_config(void) { return &quant_config; }

const char *ptojit_op_impl_id(void) { return QUANT_IMPL_ID; }

int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap)
{
    if (q->abi_version != PTOJIT_OP_ABI_VERSION) {
        snprintf(msg, cap, "op abi_version %u, this provider knows %u", q->abi_version, PTOJIT_OP_ABI_VERSION);
        return 1;
    }
    if (q->tensor_count != 2 || q->input_count != 1) {
        snprintf(msg, cap, "takes one input and one output vector, got %u tensors (%u inputs)", q->tensor_count, q->input_count);
        return 2;
    }
    const ptojit_op_tensor *in = &q->tensors[0], *out = &q->tensors[1];
    if (quant_block_bytes(in->dtype) == 0 || out->dtype != PTOJIT_DTYPE_FLOAT32 || in->ndim != 1 || out->ndim != 1) {
        snprintf(msg, cap, "takes a q8x32 or q4x32 vector and a float32 vector");
        return 3;
    }
    if (out->shape[0] != in->shape[0] * PTOJIT_QUANT_BLOCK) {
        snprintf(msg, cap, "the output has %llu elements; %llu blocks dequantize to %llu", (unsigned long long)out->shape[0],
                 (unsigned long long)in->shape[0], (unsigned long long)in->shape[0] * PTOJIT_QUANT_BLOCK);
        return 4;
    }
    if (in->strides[0] > 1 || out->strides[0] > 1) {
        snprintf(msg, cap, "takes packed vectors");
        return 5;
    }
    return 0;
}

int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out)
{
    (void)q;
    out->host_bytes = 0;
    out->device_bytes = 0;
    return 0;
}

int32_t quant_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) {
        return 1;
    }
    if (args->tensor_count != 2 || args->scalar_count != 0) {
        return 2;
    }
    ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);
    if (k == 0) {
        return 3;
    }
    int32_t rc = k(args);
    return rc == 0 ? 0 : 100 + rc;
}
