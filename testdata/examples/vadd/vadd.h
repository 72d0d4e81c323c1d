/* vadd.h: helpers shared by the vadd example's kernels. */
#ifndef VADD_H
#define VADD_H

#include <string.h>

#include "ptojit_sim.h"

/* Number of float32 elements of a tensor. */
static inline uint64_t vadd_elems(const ptojit_tensor *t)
{
    return t->nbytes / sizeof(float);
}

/* The float32 whose bits are the low 32 bits of a raw scalar. */
static inline float vadd_scalar_f32(uint64_t raw)
{
    uint32_t bits = (uint32_t)raw;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif /* VADD_H */
