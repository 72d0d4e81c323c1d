/* kernel_add.c: func_id 0, z = x + y.
 * tensors[0] = x (IN), tensors[1] = y (IN), tensors[2] = z (OUT), float32
 * vectors of equal length. */
#include "vadd.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 3) {
        return 1;
    }
    const ptojit_tensor *x = &args->tensors[0];
    const ptojit_tensor *y = &args->tensors[1];
    ptojit_tensor *z = &args->tensors[2];
    uint64_t n = vadd_elems(z);
    if (vadd_elems(x) != n || vadd_elems(y) != n) {
        return 2;
    }
    const float *xs = x->data;
    const float *ys = y->data;
    float *zs = z->data;
    for (uint64_t i = 0; i < n; i++) {
        zs[i] = xs[i] + ys[i];
    }
    return 0;
}
