/* orchestration.c: out = f(in) for one float32 vector, by kernel 0.
 * Chip signature [IN, OUT]: tensors in and out of equal length. */
#include "ptojit_sim.h"

#define KERNEL_SEQUENCE 0

static const ptojit_config seq_config = {
    .abi_version = PTOJIT_SIM_ABI_VERSION,
    .block_dim = 1,
};

const ptojit_config *seq_orch_config(void)
{
    return &seq_config;
}

int32_t seq_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) {
        return 1;
    }
    if (args->tensor_count != 2 || args->scalar_count != 0) {
        return 2;
    }
    ptojit_kernel_fn k = ptojit_find_kernel(rt, KERNEL_SEQUENCE);
    if (k == 0) {
        return 3;
    }
    int32_t rc = k(args);
    return rc == 0 ? 0 : 100 + rc;
}
