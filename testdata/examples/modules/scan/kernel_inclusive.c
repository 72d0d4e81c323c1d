/* kernel_inclusive.c: out[i] = in[0] + ... + in[i] (inclusive prefix sum).
 * The running sum is kept in double and rounded once per element. */
#include "sequence.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    int32_t rc = seq_check(args);
    if (rc != 0) {
        return rc;
    }
    const float *in = args->tensors[0].data;
    float *out = args->tensors[1].data;
    uint64_t n = seq_elems(&args->tensors[0]);
    double sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        sum += in[i];
        out[i] = (float)sum;
    }
    return 0;
}
