/* kernel_scale.c: func_id 1, z *= s.
 * tensors[0] = z (INOUT, float32), scalars[0] = the float32 bits of s in its
 * low 32 bits. */
#include "vadd.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 1 || args->scalar_count != 1) {
        return 1;
    }
    ptojit_tensor *z = &args->tensors[0];
    float s = vadd_scalar_f32(args->scalars[0]);
    float *zs = z->data;
    uint64_t n = vadd_elems(z);
    for (uint64_t i = 0; i < n; i++) {
        zs[i] *= s;
    }
    return 0;
}
