/* kernel_running_mean.c: out[i] = (in[0] + ... + in[i]) / (i + 1), the
 * running mean of a float32 vector. The prefix sum is kept in double and
 * each mean rounded once. */
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
        out[i] = (float)(sum / (double)(i + 1));
    }
    return 0;
}
