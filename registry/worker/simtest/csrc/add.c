/* Kernel func_id 0: out[i] = a[i] + b[i] over float32 tensors a, b, out. */
#include "ptojit_sim.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->tensor_count < 3) {
        return -10;
    }
    const ptojit_tensor *a = &args->tensors[0], *b = &args->tensors[1], *o = &args->tensors[2];
    if (a->dtype != PTOJIT_DTYPE_FLOAT32 || b->dtype != a->dtype || o->dtype != a->dtype) {
        return -11;
    }
    if (a->nbytes != b->nbytes || a->nbytes != o->nbytes) {
        return -12;
    }
    const float *x = a->data, *y = b->data;
    float *z = o->data;
    for (uint64_t i = 0; i < a->nbytes / 4; i++) {
        z[i] = x[i] + y[i];
    }
    return 0;
}
