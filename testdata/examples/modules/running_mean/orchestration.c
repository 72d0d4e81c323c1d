/* orchestration.c: the running mean, built on example.scan's prefix sum.
 * Chip signature [IN, OUT]. The orchestration resolves
 * example.sequence.prefix_sum [1.0.0, 1.9.99] through the host operation
 * service (the tail of ptojit_runtime), executes it from in into out, and
 * kernel 0 then divides out[i] by i + 1 in place. */
#include "sequence.h"

SEQ_CONFIG
SEQ_ENTRY_POINTS("example.running_mean.running_mean.f32", 0, 0)

int32_t seq_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) {
        return 1;
    }
    if (args->tensor_count != 2 || args->scalar_count != 0) {
        return 2;
    }
    ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);
    if (k == 0) {
        return 3;
    }
    /* The optional tail: check its size, then the service's size and version. */
    if (rt->struct_size < PTOJIT_RUNTIME_SIZE_OPS || rt->operations == 0) {
        return 4;
    }
    const ptojit_op_service *ops = rt->operations;
    if (ops->struct_size < sizeof(ptojit_op_service) || ops->version != PTOJIT_OP_SERVICE_VERSION) {
        return 5;
    }
    uint64_t n = seq_elems(&args->tensors[0]);
    ptojit_op_tensor t[2] = {
        {.dtype = PTOJIT_DTYPE_FLOAT32, .ndim = 1, .shape = {n}},
        {.dtype = PTOJIT_DTYPE_FLOAT32, .ndim = 1, .shape = {n}},
    };
    ptojit_op_query q = {PTOJIT_OP_ABI_VERSION, 2, 1, PTOJIT_SYNC_BLOCKING, t};
    ptojit_op_resolve_request req = {
        .struct_size = sizeof req,
        .op_name = "example.sequence.prefix_sum",
        .min_version = "1.0.0",
        .max_version = "1.9.99",
        .query = &q,
    };
    uint64_t h;
    if (ops->resolve(ops->user, &req, &h) != 0) {
        return 6;
    }
    int32_t rc = ops->execute(ops->user, h, args);
    ops->release(ops->user, h);
    if (rc != 0) {
        return 7;
    }
    rc = k(args);
    return rc == 0 ? 0 : 100 + rc;
}
