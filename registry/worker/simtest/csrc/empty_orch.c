/* An orchestration that does nothing: the dispatch benchmark's callable. */
#include "ptojit_sim.h"

static const ptojit_config config = {PTOJIT_SIM_ABI_VERSION, 1};

const ptojit_config *empty_config(void) { return &config; }

int32_t empty_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    (void)rt;
    (void)args;
    return 0;
}
