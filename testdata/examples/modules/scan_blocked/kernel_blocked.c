/* kernel_blocked.c: the inclusive prefix sum out[i] = in[0] + ... + in[i],
 * computed blockwise: the sum within each block of SEQ_BLOCK elements, then
 * each block offset by the total of the blocks before it. Sums are kept in
 * double and rounded once per element. */
#include "sequence.h"

#define SEQ_BLOCK 64

int32_t ptojit_kernel(const ptojit_args *args)
{
    int32_t rc = seq_check(args);
    if (rc != 0) {
        return rc;
    }
    const float *in = args->tensors[0].data;
    float *out = args->tensors[1].data;
    uint64_t n = seq_elems(&args->tensors[0]);
    double offset = 0;
    for (uint64_t start = 0; start < n; start += SEQ_BLOCK) {
        uint64_t end = start + SEQ_BLOCK < n ? start + SEQ_BLOCK : n;
        double local = 0;
        for (uint64_t i = start; i < end; i++) {
            local += in[i];
            out[i] = (float)(offset + local);
        }
        offset += local;
    }
    return 0;
}
