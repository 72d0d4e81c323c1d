/*
 * ptojit_sim.h: the C ABI between a simulated chip callable and the worker
 * that executes it (platforms a2a3sim and a5sim).
 *
 * A ChipCallable's orchestration binary and each child CoreCallable binary are
 * ELF shared objects built for the host. The worker loads them, fills a
 * ptojit_runtime with one entry per child kernel (func_id -> function), and
 * calls the orchestration's entry symbol (the blob's func_name) with the
 * task's arguments. The config symbol (the blob's config_name) returns the
 * orchestration's static configuration and is resolved, never executed
 * beyond that call, during prewarm.
 *
 * Every structure starts with abi_version; a loader rejects a version it
 * does not know. All integers are little-endian host integers; pointers are
 * host pointers valid for the duration of the call.
 */
#ifndef PTOJIT_SIM_H
#define PTOJIT_SIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTOJIT_SIM_ABI_VERSION 1u

/* Element types of a tensor. */
enum ptojit_dtype {
    PTOJIT_DTYPE_FLOAT32 = 1,
    PTOJIT_DTYPE_INT32 = 2,
    PTOJIT_DTYPE_FLOAT16 = 3,
};

#define PTOJIT_MAX_DIMS 4

/* A tensor in the worker's shared-memory arena. */
typedef struct ptojit_tensor {
    void *data;                       /* first element */
    uint64_t nbytes;                  /* bytes addressable from data */
    uint32_t dtype;                   /* enum ptojit_dtype */
    uint32_t ndim;                    /* 0..PTOJIT_MAX_DIMS */
    uint64_t shape[PTOJIT_MAX_DIMS];  /* elements per dimension */
} ptojit_tensor;

/* The arguments of one call, in signature order split by kind: tensor
 * arguments (IN, OUT, INOUT) in tensors[], scalar arguments in scalars[]. */
typedef struct ptojit_args {
    uint32_t abi_version;
    uint32_t tensor_count;
    ptojit_tensor *tensors;
    uint32_t scalar_count;
    uint32_t reserved;
    const uint64_t *scalars;          /* raw 64-bit scalar values */
} ptojit_args;

/* A kernel (CoreCallable) entry point: returns 0 on success. Each kernel
 * shared object exports it under the name PTOJIT_KERNEL_SYMBOL. */
typedef int32_t (*ptojit_kernel_fn)(const ptojit_args *args);
#define PTOJIT_KERNEL_SYMBOL "ptojit_kernel"

typedef struct ptojit_kernel_entry {
    int32_t func_id;
    uint32_t reserved;
    ptojit_kernel_fn fn;
} ptojit_kernel_entry;

struct ptojit_op_service;

/* What the worker hands the orchestration. The first three fields are the
 * prefix every runtime fills in; the tail after them is optional and
 * size-prefixed: a binary reads a tail field only when struct_size covers
 * it, so binaries built against the prefix alone keep working. */
typedef struct ptojit_runtime {
    uint32_t abi_version;
    uint32_t kernel_count;
    const ptojit_kernel_entry *kernels;
    /* tail (PTOJIT_RUNTIME_SIZE_OPS bytes and more) */
    uint32_t struct_size;             /* bytes of this structure the runtime filled in */
    uint32_t reserved;
    const struct ptojit_op_service *operations; /* the host operation service, or NULL */
} ptojit_runtime;

#define PTOJIT_RUNTIME_SIZE_PREFIX 16u
#define PTOJIT_RUNTIME_SIZE_OPS 32u

/* Static configuration returned by the config symbol. */
typedef struct ptojit_config {
    uint32_t abi_version;
    uint32_t block_dim;               /* parallel blocks the orchestration uses */
} ptojit_config;

/* The orchestration's entry (named by the blob's func_name): returns 0 on
 * success, non-zero on failure. */
typedef int32_t (*ptojit_orchestration_fn)(const ptojit_runtime *rt, const ptojit_args *args);

/* The orchestration's config symbol (named by the blob's config_name). */
typedef const ptojit_config *(*ptojit_config_fn)(void);

/*
 * Operation providers (runtime modules). An implementation's orchestration
 * exports three more symbols:
 *
 *   const char *ptojit_op_impl_id(void);       its implementation id, which
 *                                              must equal the manifest's impl_id
 *   int32_t ptojit_op_validate(q, msg, cap);   0 when it takes the tensors of q;
 *                                              else a NUL-terminated reason in msg
 *   int32_t ptojit_op_scratch(q, out);         the scratch it needs for q, 0 on success
 *
 * They are pure negotiation: they read the descriptors, allocate nothing,
 * launch nothing, keep no pointer and call back into nothing (the runtime
 * may hold its registry lock). The worker resolves them when it loads the
 * callable and calls them only to negotiate, in a child process, after the
 * module was authenticated. Tensor descriptors list the inputs first.
 * Strides are in elements, the first axis is the innermost; 0 means packed.
 */
#define PTOJIT_OP_ABI_VERSION 1u

/* Element types beyond the executable ones, for negotiation. */
enum ptojit_op_dtype {
    PTOJIT_DTYPE_BFLOAT16 = 4,
    PTOJIT_DTYPE_INT16 = 5,
    PTOJIT_DTYPE_INT8 = 6,
    PTOJIT_DTYPE_UINT8 = 7,
    PTOJIT_DTYPE_FLOAT64 = 8,
    PTOJIT_DTYPE_INT64 = 9,
};

enum ptojit_sync_mode {
    PTOJIT_SYNC_BLOCKING = 1,
    PTOJIT_SYNC_ASYNC = 2,
};

typedef struct ptojit_op_tensor {
    uint32_t dtype;
    uint32_t ndim;
    uint64_t shape[PTOJIT_MAX_DIMS];
    uint64_t strides[PTOJIT_MAX_DIMS];
} ptojit_op_tensor;

typedef struct ptojit_op_query {
    uint32_t abi_version;             /* PTOJIT_OP_ABI_VERSION */
    uint32_t tensor_count;
    uint32_t input_count;             /* tensors[0..input_count) are inputs */
    uint32_t sync_mode;               /* enum ptojit_sync_mode */
    const ptojit_op_tensor *tensors;
} ptojit_op_query;

typedef struct ptojit_op_scratch_request {
    uint32_t abi_version;
    uint32_t reserved;
    uint64_t host_bytes;              /* caller-allocated, never freed by the provider */
    uint64_t device_bytes;            /* passed as the last tensor argument when non-zero */
} ptojit_op_scratch_request;

typedef const char *(*ptojit_op_impl_id_fn)(void);
typedef int32_t (*ptojit_op_validate_fn)(const ptojit_op_query *q, char *msg, uint32_t cap);
typedef int32_t (*ptojit_op_scratch_fn)(const ptojit_op_query *q, ptojit_op_scratch_request *out);
#define PTOJIT_OP_IMPL_ID_SYMBOL "ptojit_op_impl_id"
#define PTOJIT_OP_VALIDATE_SYMBOL "ptojit_op_validate"
#define PTOJIT_OP_SCRATCH_SYMBOL "ptojit_op_scratch"

/*
 * Module hooks (optional). An implementation's orchestration may also export
 *
 *   int32_t ptojit_module_init(char *msg, uint32_t cap);
 *                                   0 when the implementation is ready; else a
 *                                   NUL-terminated reason in msg (cap bytes)
 *   void ptojit_module_shutdown(void);
 *                                   releases what init allocated
 *
 * Activating a module in a child worker (at install, and whenever the
 * operation runtime loads the module's callables) collects the
 * ptojit_op_impl_id of each of its callables for the platform and runs init
 * once per loaded callable. The reported ids must equal the manifest's
 * provided_ops (of the operations with a callable for the platform): no id
 * missing, none reported twice, none provided by another enabled module.
 * Shutdown runs once for every init that ran: after a failed init (before
 * the activation fails, so init must make partial cleanup safe), when the
 * activation fails for another reason, when the module is deactivated (its
 * last operation handle is released, the operation service closes) and when
 * the child ends. Init and shutdown run on the child's mailbox thread,
 * synchronously; they may allocate and free the implementation's own state,
 * must quiesce their own background work before returning, and may not call
 * the host operation service (PTOJIT_OP_E_REENTRY). Modules without them
 * keep working unchanged.
 */
typedef int32_t (*ptojit_module_init_fn)(char *msg, uint32_t cap);
typedef void (*ptojit_module_shutdown_fn)(void);
#define PTOJIT_MODULE_INIT_SYMBOL "ptojit_module_init"
#define PTOJIT_MODULE_SHUTDOWN_SYMBOL "ptojit_module_shutdown"

/*
 * The host operation service (ptojit_runtime.operations): an orchestration
 * resolves and executes an operation of the modules its module depends on,
 * from inside its own execution. Before use, check rt->struct_size >=
 * PTOJIT_RUNTIME_SIZE_OPS, operations != NULL, operations->struct_size >=
 * sizeof(ptojit_op_service) and operations->version ==
 * PTOJIT_OP_SERVICE_VERSION. Every function takes user as its first
 * argument and returns 0 on success. Calls from inside ptojit_op_validate
 * or ptojit_op_scratch are refused (PTOJIT_OP_E_REENTRY): negotiation is pure.
 * resolve negotiates the candidates on the query's tensors (validate and
 * scratch query) and takes the highest priority, then the smallest
 * impl_id; candidates that need scratch are refused (nothing is allocated
 * during an execution). execute checks that args match the negotiated
 * tensors and runs the implementation's orchestration synchronously.
 */
#define PTOJIT_OP_SERVICE_VERSION 1u
#define PTOJIT_OP_E_REENTRY (-2)
#define PTOJIT_OP_E_NOT_FOUND (-3)
#define PTOJIT_OP_E_INVALID (-4)

typedef struct ptojit_op_resolve_request {
    uint32_t struct_size;             /* sizeof(ptojit_op_resolve_request) */
    uint32_t msg_capacity;            /* bytes of msg */
    const char *op_name;
    const char *min_version;          /* inclusive; NULL: the newest major version */
    const char *max_version;          /* inclusive, same major; NULL: the rest of the major */
    const ptojit_op_query *query;
    char *msg;                        /* why nothing fits (NUL-terminated); may be NULL */
} ptojit_op_resolve_request;

typedef struct ptojit_op_service {
    uint32_t struct_size;             /* sizeof(ptojit_op_service) of the runtime */
    uint32_t version;                 /* PTOJIT_OP_SERVICE_VERSION */
    void *user;
    int32_t (*resolve)(void *user, const ptojit_op_resolve_request *req, uint64_t *handle);
    int32_t (*describe)(void *user, uint64_t handle, char *impl_id, uint32_t cap);
    int32_t (*scratch)(void *user, uint64_t handle, ptojit_op_scratch_request *out);
    int32_t (*execute)(void *user, uint64_t handle, const ptojit_args *args);
    int32_t (*release)(void *user, uint64_t handle);
} ptojit_op_service;

/* Finds the kernel registered for func_id, or NULL. */
static inline ptojit_kernel_fn ptojit_find_kernel(const ptojit_runtime *rt, int32_t func_id)
{
    for (uint32_t i = 0; i < rt->kernel_count; i++) {
        if (rt->kernels[i].func_id == func_id) {
            return rt->kernels[i].fn;
        }
    }
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* PTOJIT_SIM_H */
