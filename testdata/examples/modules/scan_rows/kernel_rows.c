/* kernel_rows.c: out[r][i] = scale * (in[r][0] + ... + in[r][i]) for every
 * row r, each row at its tensor's outer stride; scale is the operation
 * parameter (version 1: a factor, an f32 in the low 32 bits of scalar 0).
 * The running sum and the product are kept in double and rounded once per
 * element. */
#include <string.h>

#include "rows.h"

int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 2 || args->scalar_count != 1 || args->tensors[0].ndim != 2 ||
        args->tensors[1].ndim != 2) {
        return 1;
    }
    const ptojit_tensor *ti = &args->tensors[0], *to = &args->tensors[1];
    if (ti->shape[0] != to->shape[0] || ti->shape[1] != to->shape[1]) {
        return 2;
    }
    if (rows_span(args, 0) == 0 || rows_span(args, 1) == 0) {
        return 3;
    }
    const float *in = ti->data;
    float *out = to->data;
    uint64_t n = ti->shape[0], rows = ti->shape[1];
    uint64_t si = ptojit_stride(args, 0, 1), so = ptojit_stride(args, 1, 1);
    uint32_t bits = (uint32_t)args->scalars[0];
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    for (uint64_t r = 0; r < rows; r++) {
        double sum = 0;
        for (uint64_t i = 0; i < n; i++) {
            sum += in[r * si + i];
            out[r * so + i] = (float)(sum * scale);
        }
    }
    return 0;
}
