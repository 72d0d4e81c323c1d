/* Kernel func_id 1: t[i] *= s in place; s is the float32 in the low 32 bits
 * of scalars[0]. */
#include <string.h>
#include "ptojit_sim.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->tensor_count != 1 || args->scalar_count != 1) {
        return -20;
    }
    const ptojit_tensor *t = &args->tensors[0];
    if (t->dtype != PTOJIT_DTYPE_FLOAT32) {
        return -21;
    }
    uint32_t bits = (uint32_t)args->scalars[0];
    float s;
    memcpy(&s, &bits, sizeof s);
    float *p = t->data;
    for (uint64_t i = 0; i < t->nbytes / 4; i++) {
        p[i] *= s;
    }
    return 0;
}
