/* vadd_pto.h: what the vadd_pto example's kernels share: the sim ABI and
 * PTO-ISA, and the float32 view of a ptojit tensor. */
#ifndef VADD_PTO_H
#define VADD_PTO_H

#include <cstdint>
#include <cstring>

#include "ptojit_sim.h"
#include <pto/pto-inst.hpp>

/* Elements per tile: one row of 256 float32 (1 KiB). */
constexpr int kTileCols = 256;

/* Number of float32 elements of a tensor. */
static inline uint64_t vadd_elems(const ptojit_tensor *t)
{
    return t->nbytes / sizeof(float);
}

/* The float32 whose bits are the low 32 bits of a raw scalar. */
static inline float vadd_scalar_f32(uint64_t raw)
{
    uint32_t bits = static_cast<uint32_t>(raw);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

#endif /* VADD_PTO_H */
