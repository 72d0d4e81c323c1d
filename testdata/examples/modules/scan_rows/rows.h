/* rows.h: the row prefix sum's provider entry points. A tensor is a float32
 * matrix of shape [n, rows] (axes innermost first): rows of n contiguous
 * elements, row r starting at element r * stride, where stride is the
 * tensor's outer stride (ptojit_stride: packed, n, unless the caller passed
 * one). Input and output may have different strides. */
#ifndef ROWS_H
#define ROWS_H

#include <stdio.h>

#include "ptojit_sim.h"

#define ROWS_IMPL_ID "example.scan_rows.row_prefix_sum.f32"

/* The elements a tensor of the call spans, or 0 when it does not fit its
 * bytes. */
static inline uint64_t rows_span(const ptojit_args *args, uint32_t i)
{
    const ptojit_tensor *t = &args->tensors[i];
    uint64_t n = t->shape[0], rows = t->shape[1];
    if (n == 0 || rows == 0) {
        return 0;
    }
    if (ptojit_stride(args, i, 0) != 1) {
        return 0;
    }
    uint64_t span = (rows - 1) * ptojit_stride(args, i, 1) + n;
    return span * sizeof(float) <= t->nbytes ? span : 0;
}

#endif /* ROWS_H */
