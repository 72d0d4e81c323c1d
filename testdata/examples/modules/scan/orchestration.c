/* orchestration.c: the inclusive prefix sum's orchestration and provider
 * entry points. Chip signature [IN, OUT]: tensors in and out of equal
 * length; kernel 0 does the work. */
#include "sequence.h"

SEQ_PROVIDER("example.scan.prefix_sum.f32", 0, 0)
