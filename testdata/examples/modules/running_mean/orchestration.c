/* orchestration.c: the running mean's orchestration and provider entry
 * points. Chip signature [IN, OUT]; kernel 0 does the work. */
#include "sequence.h"

SEQ_PROVIDER("example.running_mean.running_mean.f32", 0, 0)
