/* kernel_blocked.c: the inclusive prefix sum out[i] = in[0] + ... + in[i],
 * computed blockwise: the total of each block of SEQ_BLOCK elements into the
 * scratch tensor (one double per block), then each element as the totals of
 * the blocks before it plus its sum within its block. Sums are kept in
 * double and rounded once per element. */
#include "sequence.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    int32_t rc = seq_check(args);
    if (rc != 0) {
        return rc;
    }
    if (args->tensor_count != 3) {
        return 3;
    }
    const float *in = args->tensors[0].data;
    float *out = args->tensors[1].data;
    double *totals = args->tensors[2].data;
    uint64_t n = seq_elems(&args->tensors[0]);
    uint64_t blocks = (n + SEQ_BLOCK - 1) / SEQ_BLOCK;
    if (args->tensors[2].nbytes < blocks * sizeof(double)) {
        return 4;
    }
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t end = (b + 1) * SEQ_BLOCK < n ? (b + 1) * SEQ_BLOCK : n;
        double t = 0;
        for (uint64_t i = b * SEQ_BLOCK; i < end; i++) {
            t += in[i];
        }
        totals[b] = t;
    }
    double offset = 0;
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t end = (b + 1) * SEQ_BLOCK < n ? (b + 1) * SEQ_BLOCK : n;
        double local = 0;
        for (uint64_t i = b * SEQ_BLOCK; i < end; i++) {
            local += in[i];
            out[i] = (float)(offset + local);
        }
        offset += totals[b];
    }
    return 0;
}
