/* kernel_dequant.c: out[i] = x[0] + ... + x[i], where x is the input
 * dequantized (ptojit_dequant: element j of a block is its scale times its
 * j-th integer). The running sum is kept in double and rounded once per
 * element. */
#include "quant.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    int32_t rc = quant_check(args);
    if (rc != 0) {
        return rc;
    }
    const ptojit_tensor *in = &args->tensors[0];
    const unsigned char *blocks = in->data;
    float *out = args->tensors[1].data;
    uint64_t bb = quant_block_bytes(in->dtype);
    double sum = 0;
    for (uint64_t b = 0; b < in->shape[0]; b++) {
        for (uint32_t j = 0; j < PTOJIT_QUANT_BLOCK; j++) {
            sum += ptojit_dequant(in->dtype, blocks + b * bb, j);
            out[b * PTOJIT_QUANT_BLOCK + j] = (float)sum;
        }
    }
    return 0;
}
