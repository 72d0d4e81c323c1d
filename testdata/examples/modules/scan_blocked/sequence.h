/* sequence.h: helpers of the example sequence modules. Tensors are float32
 * vectors: element count = nbytes / 4. */
#ifndef SEQUENCE_H
#define SEQUENCE_H

#include <stdio.h>

#include "ptojit_sim.h"

static inline uint64_t seq_elems(const ptojit_tensor *t)
{
    return t->nbytes / sizeof(float);
}

/* Checks a kernel call with tensors (in: IN, out: OUT[, scratch]) of equal
 * float32 length; returns 0 when they fit. */
static inline int32_t seq_check(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count < 2 || args->tensor_count > 3 ||
        args->scalar_count != 0) {
        return 1;
    }
    if (seq_elems(&args->tensors[0]) != seq_elems(&args->tensors[1])) {
        return 2;
    }
    return 0;
}

/* seq_validate is the providers' validate: one float32 input and one
 * float32 output vector of the same length, packed. */
static inline int32_t seq_validate(const ptojit_op_query *q, char *msg, uint32_t cap)
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
    if (in->dtype != PTOJIT_DTYPE_FLOAT32 || out->dtype != PTOJIT_DTYPE_FLOAT32 || in->ndim != 1 || out->ndim != 1) {
        snprintf(msg, cap, "takes float32 vectors");
        return 3;
    }
    if (in->shape[0] != out->shape[0]) {
        snprintf(msg, cap, "input and output lengths differ (%llu and %llu)", (unsigned long long)in->shape[0],
                 (unsigned long long)out->shape[0]);
        return 4;
    }
    if (in->strides[0] > 1 || out->strides[0] > 1) {
        snprintf(msg, cap, "takes packed vectors");
        return 5;
    }
    return 0;
}

/* SEQ_CONFIG defines the orchestration's static configuration
 * (seq_orch_config). */
#define SEQ_CONFIG                                                                                    \
    static const ptojit_config seq_config = {                                                        \
        .abi_version = PTOJIT_SIM_ABI_VERSION,                                                       \
        .block_dim = 1,                                                                              \
    };                                                                                               \
    const ptojit_config *seq_orch_config(void) { return &seq_config; }

/* SEQ_ENTRY_POINTS defines the operation provider's entry points: the
 * implementation id IMPL_ID, seq_validate plus the extra check EXTRA (an
 * expression over q, msg and cap returning non-zero to refuse), and a scratch
 * request of SCRATCH_PER_BLOCK device bytes per block of SEQ_BLOCK elements. */
#define SEQ_BLOCK 64
#define SEQ_ENTRY_POINTS(IMPL_ID, EXTRA, SCRATCH_PER_BLOCK)                                          \
    const char *ptojit_op_impl_id(void) { return IMPL_ID; }                                          \
    int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap)                    \
    {                                                                                                \
        int32_t rc = seq_validate(q, msg, cap);                                                      \
        return rc != 0 ? rc : (EXTRA);                                                               \
    }                                                                                                \
    int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out)              \
    {                                                                                                \
        uint64_t n = q->tensors[0].shape[0];                                                         \
        out->host_bytes = 0;                                                                         \
        out->device_bytes = (SCRATCH_PER_BLOCK) * ((n + SEQ_BLOCK - 1) / SEQ_BLOCK);                 \
        return 0;                                                                                    \
    }

/* SEQ_PROVIDER defines a whole provider: config, entry points and an
 * orchestration seq_orch in which kernel 0 does the work (with the scratch
 * tensor as the third argument when SCRATCH_PER_BLOCK is non-zero). */
#define SEQ_PROVIDER(IMPL_ID, EXTRA, SCRATCH_PER_BLOCK)                                              \
    SEQ_CONFIG                                                                                       \
    SEQ_ENTRY_POINTS(IMPL_ID, EXTRA, SCRATCH_PER_BLOCK)                                              \
    int32_t seq_orch(const ptojit_runtime *rt, const ptojit_args *args)                              \
    {                                                                                                \
        if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) { \
            return 1;                                                                                \
        }                                                                                            \
        if (args->tensor_count != ((SCRATCH_PER_BLOCK) ? 3u : 2u) || args->scalar_count != 0) {      \
            return 2;                                                                                \
        }                                                                                            \
        ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);                                              \
        if (k == 0) {                                                                                \
            return 3;                                                                                \
        }                                                                                            \
        int32_t rc = k(args);                                                                        \
        return rc == 0 ? 0 : 100 + rc;                                                               \
    }

#endif /* SEQUENCE_H */
