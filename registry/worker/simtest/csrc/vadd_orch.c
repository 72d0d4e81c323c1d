/* Orchestration of the vector add/scale example: out = (a + b) * s. */
#include "ptojit_sim.h"

static const ptojit_config config = {PTOJIT_SIM_ABI_VERSION, 1};

const ptojit_config *vadd_config(void) { return &config; }

int32_t vadd_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) {
        return -1;
    }
    if (args->tensor_count != 3 || args->scalar_count != 1) {
        return -2;
    }
    ptojit_kernel_fn add = ptojit_find_kernel(rt, 0);
    ptojit_kernel_fn scale = ptojit_find_kernel(rt, 1);
    if (!add || !scale) {
        return -3;
    }
    int32_t r = add(args);
    if (r != 0) {
        return r;
    }
    ptojit_tensor out = args->tensors[2];
    ptojit_args sargs = {PTOJIT_SIM_ABI_VERSION, 1, &out, 1, 0, args->scalars};
    return scale(&sargs);
}
