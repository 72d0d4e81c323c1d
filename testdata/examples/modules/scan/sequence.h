/* sequence.h: helpers of the example sequence modules. Tensors are float32
 * vectors: element count = nbytes / 4. */
#ifndef SEQUENCE_H
#define SEQUENCE_H

#include "ptojit_sim.h"

static inline uint64_t seq_elems(const ptojit_tensor *t)
{
    return t->nbytes / sizeof(float);
}

/* Checks a kernel call with tensors (in: IN, out: OUT) of equal float32
 * length; returns 0 when they fit. */
static inline int32_t seq_check(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 2 || args->scalar_count != 0) {
        return 1;
    }
    if (seq_elems(&args->tensors[0]) != seq_elems(&args->tensors[1])) {
        return 2;
    }
    return 0;
}

#endif /* SEQUENCE_H */
