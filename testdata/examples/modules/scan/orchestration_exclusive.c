/* orchestration_exclusive.c: the exclusive prefix sum's orchestration and
 * provider entry points. Chip signature [IN, OUT]. */
#include "sequence.h"

SEQ_PROVIDER("example.scan.exclusive_prefix_sum.f32", 0, 0)
