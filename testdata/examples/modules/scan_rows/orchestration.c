/* orchestration.c: the row prefix sum's orchestration and provider entry
 * points. Chip signature [IN, OUT, SCALAR]: matrices of one shape [n, rows],
 * each contiguous or outer-strided, and the operation parameter scale
 * (version 1, f32), which validate refuses when it is not finite; kernel 0
 * does the work. */
#include <math.h>
#include <string.h>

#include "rows.h"

static const ptojit_config rows_config = {
    .abi_version = PTOJIT_SIM_ABI_VERSION,
    .block_dim = 1,
};

const ptojit_config *rows_orch_config(void) { return &rows_config; }

const char *ptojit_op_impl_id(void) { return ROWS_IMPL_ID; }

int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap)
{
    if (q->abi_version != PTOJIT_OP_ABI_VERSION) {
        snprintf(msg, cap, "op abi_version %u, this provider knows %u", q->abi_version, PTOJIT_OP_ABI_VERSION);
        return 1;
    }
    if (q->tensor_count != 2 || q->input_count != 1) {
        snprintf(msg, cap, "takes one input and one output matrix, got %u tensors (%u inputs)", q->tensor_count, q->input_count);
        return 2;
    }
    const ptojit_op_tensor *in = &q->tensors[0], *out = &q->tensors[1];
    if (in->dtype != PTOJIT_DTYPE_FLOAT32 || out->dtype != PTOJIT_DTYPE_FLOAT32 || in->ndim != 2 || out->ndim != 2) {
        snprintf(msg, cap, "takes float32 matrices");
        return 3;
    }
    if (in->shape[0] != out->shape[0] || in->shape[1] != out->shape[1]) {
        snprintf(msg, cap, "input and output shapes differ");
        return 4;
    }
    if (in->strides[0] > 1 || out->strides[0] > 1) {
        snprintf(msg, cap, "rows must be contiguous");
        return 5;
    }
    /* The parameters (the query's ABI 1.2 tail; this module's kernel_abi
     * min is 1.2, so every runtime that loads it fills the tail in). */
    if (q->struct_size < PTOJIT_OP_QUERY_SIZE_PARAMS || q->param_count != 1 || strcmp(q->params[0].name, "scale") != 0 ||
        q->params[0].type != PTOJIT_PARAM_F32) {
        snprintf(msg, cap, "takes one parameter, scale (f32)");
        return 6;
    }
    uint32_t bits = (uint32_t)q->params[0].value;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    if (!isfinite(scale)) {
        snprintf(msg, cap, "scale %g is not finite", (double)scale);
        return 7;
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

int32_t rows_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) {
        return 1;
    }
    if (args->tensor_count != 2 || args->scalar_count != 1) {
        return 2;
    }
    ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);
    if (k == 0) {
        return 3;
    }
    int32_t rc = k(args);
    return rc == 0 ? 0 : 100 + rc;
}
