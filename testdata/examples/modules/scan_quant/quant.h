/* quant.h: the dequantizing prefix sum's checks. The input is a vector of
 * blocks of a quantized type (ptojit_sim.h 1.3: PTOJIT_DTYPE_Q8X32 or
 * PTOJIT_DTYPE_Q4X32), its one axis counting blocks; the output is a
 * float32 vector of PTOJIT_QUANT_BLOCK elements per input block. */
#ifndef QUANT_H
#define QUANT_H

#include <stdio.h>

#include "ptojit_sim.h"

#define QUANT_IMPL_ID "example.scan_quant.dequant_prefix_sum"

/* The bytes of one block of dtype, or 0 when dtype is no quantized type. */
static inline uint64_t quant_block_bytes(uint32_t dtype)
{
    switch (dtype) {
    case PTOJIT_DTYPE_Q8X32:
        return PTOJIT_Q8X32_BLOCK_BYTES;
    case PTOJIT_DTYPE_Q4X32:
        return PTOJIT_Q4X32_BLOCK_BYTES;
    }
    return 0;
}

/* Checks a kernel call: a quantized vector of blocks in, a float32 vector
 * of their elements out, each within its bytes; returns 0 when they fit. */
static inline int32_t quant_check(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 2 || args->scalar_count != 0) {
        return 1;
    }
    const ptojit_tensor *in = &args->tensors[0], *out = &args->tensors[1];
    uint64_t bb = quant_block_bytes(in->dtype);
    if (bb == 0 || out->dtype != PTOJIT_DTYPE_FLOAT32 || in->ndim != 1 || out->ndim != 1) {
        return 2;
    }
    if (out->shape[0] != in->shape[0] * PTOJIT_QUANT_BLOCK) {
        return 3;
    }
    if (in->shape[0] * bb > in->nbytes || out->shape[0] * sizeof(float) > out->nbytes) {
        return 4;
    }
    return 0;
}

#endif /* QUANT_H */
