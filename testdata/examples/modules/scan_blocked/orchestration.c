/* orchestration.c: the blockwise prefix sum's orchestration and provider
 * entry points. Chip signature [IN, OUT, OUT]: the input, the output and the
 * device scratch the scratch query asks for (one double per block). It
 * refuses vectors longer than 2^24 elements (validate's own reason). */
#include "sequence.h"

static int32_t blocked_extra(const ptojit_op_query *q, char *msg, uint32_t cap)
{
    if (q->tensors[0].shape[0] > (1u << 24)) {
        snprintf(msg, cap, "blockwise scan takes at most 16777216 elements, got %llu",
                 (unsigned long long)q->tensors[0].shape[0]);
        return 10;
    }
    return 0;
}

SEQ_PROVIDER("example.scan_blocked.prefix_sum.f32", blocked_extra(q, msg, cap), sizeof(double))
