/* orchestration.c: the running mean, built on example.scan's prefix sum.
 * Chip signature [IN, OUT]. The orchestration resolves
 * example.sequence.prefix_sum [1.0.0, 1.9.99] through the host operation
 * service (the tail of ptojit_runtime), executes it from in into out, and
 * kernel 0 then divides out[i] by i + 1 in place. */
#include <stdlib.h>

#include "sequence.h"

#define MEAN_IMPL_ID "example.running_mean.running_mean.f32"

SEQ_CONFIG
SEQ_ENTRY_POINTS(MEAN_IMPL_ID, 0, 0)

/* The module hooks of ptojit_sim.h: init allocates the module's state,
 * shutdown frees it; an execution without init (a callable run outside
 * an activation) fails with 8. When PTOJIT_EXAMPLE_MODULE_LOG names a file,
 * init and shutdown each append one line to it ("init IMPL_ID",
 * "shutdown IMPL_ID"), so that a test sees that each ran, and how often. */
typedef struct mean_state {
    uint64_t executions;
    char resolve_msg[256]; /* why the last resolution of the prefix sum failed */
} mean_state;

static mean_state *state;

static void hook_log(const char *what)
{
    const char *path = getenv("PTOJIT_EXAMPLE_MODULE_LOG");
    if (path == 0 || *path == 0) {
        return;
    }
    FILE *f = fopen(path, "a");
    if (f != 0) {
        fprintf(f, "%s %s\n", what, MEAN_IMPL_ID);
        fclose(f);
    }
}

int32_t ptojit_module_init(char *msg, uint32_t cap)
{
    hook_log("init");
    state = calloc(1, sizeof *state);
    if (state == 0) {
        snprintf(msg, cap, "no memory for the module state");
        return 1;
    }
    return 0;
}

/* Safe after a failed init too: free(NULL) does nothing. */
void ptojit_module_shutdown(void)
{
    hook_log("shutdown");
    free(state);
    state = 0;
}

int32_t seq_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    if (rt->abi_version != PTOJIT_SIM_ABI_VERSION || args->abi_version != PTOJIT_SIM_ABI_VERSION) {
        return 1;
    }
    if (args->tensor_count != 2 || args->scalar_count != 0) {
        return 2;
    }
    if (state == 0) {
        return 8;
    }
    state->executions++;
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
        .msg = state->resolve_msg,
        .msg_capacity = sizeof state->resolve_msg,
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
