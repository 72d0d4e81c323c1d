/* orchestration.c: out = (a + b) * s.
 * Chip signature [IN, IN, OUT, SCALAR]: tensors a, b, out (float32 vectors of
 * equal length), scalars[0] = the float32 bits of s in its low 32 bits.
 * Calls kernel 0 (add) with (a, b, out), then kernel 1 (scale) with (out; s). */
#include "ptojit_sim.h"

#define KERNEL_ADD 0
#define KERNEL_SCALE 1

static const ptojit_config vadd_config = {
    .abi_version = PTOJIT_SIM_ABI_VERSION,
    .block_dim = 1,
};

const ptojit_config *vadd_orch_config(void)
{
    return &vadd_config;
}

int32_t vadd_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) {
        return 1;
    }
    if (args->tensor_count != 3 || args->scalar_count != 1) {
        return 2;
    }
    ptojit_kernel_fn add = ptojit_find_kernel(rt, KERNEL_ADD);
    ptojit_kernel_fn scale = ptojit_find_kernel(rt, KERNEL_SCALE);
    if (add == 0 || scale == 0) {
        return 3;
    }

    ptojit_args add_args = {
        .abi_version = PTOJIT_SIM_ABI_VERSION,
        .tensor_count = 3,
        .tensors = args->tensors,
        .scalar_count = 0,
        .scalars = 0,
    };
    int32_t rc = add(&add_args);
    if (rc != 0) {
        return 100 + rc;
    }

    ptojit_args scale_args = {
        .abi_version = PTOJIT_SIM_ABI_VERSION,
        .tensor_count = 1,
        .tensors = &args->tensors[2],
        .scalar_count = 1,
        .scalars = args->scalars,
    };
    rc = scale(&scale_args);
    if (rc != 0) {
        return 200 + rc;
    }
    return 0;
}
