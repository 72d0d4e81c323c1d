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
 *
 * Versions: abi_version is the ABI's major version, 1. Minor versions only
 * add size-prefixed tails, so a binary built against an older minor version
 * keeps working, and one built against a newer minor version reads a tail
 * field only when the structure's struct_size covers it:
 *
 *   1.0  the prefixes below
 *   1.1  ptojit_args.struct_size and ptojit_args.strides: the strides of
 *        every tensor argument (PTOJIT_ARGS_SIZE_STRIDES)
 *   1.2  ptojit_op_query's tail: struct_size and the operation parameters
 *        validate and the scratch query see (PTOJIT_OP_QUERY_SIZE_PARAMS)
 *   1.3  the block-quantized element types PTOJIT_DTYPE_Q8X32 and
 *        PTOJIT_DTYPE_Q4X32 (no layout changes: a binary that names them
 *        needs a runtime of 1.3 or later, which its module's kernel_abi
 *        min says)
 *
 * A runtime module's manifest names the range of ABI versions its binaries
 * need (module_abi {min, max}); a runtime that does not provide them is
 * refused at install and at load.
 */
#ifndef PTOJIT_SIM_H
#define PTOJIT_SIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTOJIT_SIM_ABI_VERSION 1u
#define PTOJIT_SIM_ABI_MINOR 3u

/* Element types of a tensor. */
enum ptojit_dtype {
    PTOJIT_DTYPE_FLOAT32 = 1,
    PTOJIT_DTYPE_INT32 = 2,
    PTOJIT_DTYPE_FLOAT16 = 3,
    /* ABI 1.3: block-quantized types. A block holds PTOJIT_QUANT_BLOCK
     * elements: a little-endian float scale, then the elements' signed
     * integers q, element i being scale * q[i]. Q8X32: 32 int8 (36 bytes
     * a block). Q4X32: 32 int4 in two's complement, two to a byte, element
     * 2k in the low nibble of byte k (20 bytes a block). A tensor of one
     * counts blocks on its first axis (shape[0] blocks, stride one block)
     * and its outer strides are in blocks; nbytes covers whole blocks. */
    PTOJIT_DTYPE_Q8X32 = 10,
    PTOJIT_DTYPE_Q4X32 = 11,
};

#define PTOJIT_QUANT_BLOCK 32u
#define PTOJIT_Q8X32_BLOCK_BYTES 36u
#define PTOJIT_Q4X32_BLOCK_BYTES 20u

/* The value of element i (0..PTOJIT_QUANT_BLOCK) of a block of type dtype
 * (PTOJIT_DTYPE_Q8X32 or PTOJIT_DTYPE_Q4X32). */
static inline float ptojit_dequant(uint32_t dtype, const void *block, uint32_t i)
{
    const unsigned char *b = (const unsigned char *)block;
    float scale;
    int32_t q;
    __builtin_memcpy(&scale, b, sizeof scale);
    if (dtype == PTOJIT_DTYPE_Q8X32) {
        q = (int8_t)b[4 + i];
    } else {
        uint32_t nib = (b[4 + i / 2] >> ((i & 1) * 4)) & 0xfu;
        q = (int32_t)nib - ((nib & 0x8u) ? 16 : 0);
    }
    return scale * (float)q;
}

#define PTOJIT_MAX_DIMS 4

/* A tensor in the worker's shared-memory arena. Axes are listed innermost
 * first; the first axis is contiguous. Its strides (ABI 1.1) are in
 * ptojit_args.strides, not here, so that this layout stays the 1.0 one. */
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
    /* ABI 1.0 named this field reserved, always 0: bytes of this structure
     * its maker filled in, 0 meaning the 1.0 prefix (PTOJIT_ARGS_SIZE_PREFIX). */
    uint32_t struct_size;
    const uint64_t *scalars;          /* raw 64-bit scalar values */
    /* tail, ABI 1.1 (struct_size >= PTOJIT_ARGS_SIZE_STRIDES) */
    /* tensor_count rows of PTOJIT_MAX_DIMS strides in elements, row i for
     * tensors[i]: strides[i * PTOJIT_MAX_DIMS + d] is axis d's; 0 means
     * packed for that axis (the stride of the axis inside it times that
     * axis's extent), and entries >= ndim are 0. The first axis is always
     * contiguous (0 or 1). NULL: every tensor is packed. */
    const uint64_t *strides;
} ptojit_args;

#define PTOJIT_ARGS_SIZE_PREFIX 32u
#define PTOJIT_ARGS_SIZE_STRIDES 40u

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

/* How an operation parameter's value travels as a 64-bit scalar (the
 * descriptor's parameter types). */
enum ptojit_param_type {
    PTOJIT_PARAM_F32 = 1,             /* the float bits in the low 32 bits */
    PTOJIT_PARAM_F64 = 2,             /* the double bits */
    PTOJIT_PARAM_I32 = 3,             /* two's complement in the low 32 bits */
    PTOJIT_PARAM_I64 = 4,
};

/* An operation parameter a caller passes: its name, the version of its
 * meaning the caller speaks, its type and its value. */
typedef struct ptojit_op_param {
    const char *name;                 /* as the descriptor's parameters name it */
    uint32_t version;                 /* must equal the descriptor's */
    uint32_t type;                    /* enum ptojit_param_type, must be the descriptor's */
    uint64_t value;                   /* encoded as type says */
} ptojit_op_param;

/* The query a provider negotiates on. Its tail (ABI 1.2) lists the
 * operation parameters of the query, in the descriptor's order, each with
 * the version and type the descriptor declares and the query's value: a
 * provider may refuse values it cannot take. A runtime of ABI 1.2 or later
 * always fills the tail in; a provider reads it only when its module's
 * kernel_abi min is 1.2 or later (so no older runtime loads it) or, with an
 * older min, never. The host service's resolve reads the prefix of a
 * caller's query only: a caller passes parameters in the request. */
typedef struct ptojit_op_query {
    uint32_t abi_version;             /* PTOJIT_OP_ABI_VERSION */
    uint32_t tensor_count;
    uint32_t input_count;             /* tensors[0..input_count) are inputs */
    uint32_t sync_mode;               /* enum ptojit_sync_mode */
    const ptojit_op_tensor *tensors;
    /* tail, ABI 1.2 (struct_size >= PTOJIT_OP_QUERY_SIZE_PARAMS) */
    uint32_t struct_size;             /* bytes of this structure the runtime filled in */
    uint32_t param_count;
    const struct ptojit_op_param *params;
} ptojit_op_query;

#define PTOJIT_OP_QUERY_SIZE_PREFIX 24u
#define PTOJIT_OP_QUERY_SIZE_PARAMS 40u

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
 * The service offers the operations of the modules the calling module
 * declares as dependencies, nothing else. resolve applies the rules the
 * daemon's resolution applies (version interval, backend, capabilities,
 * numerics, sync mode, arity, rank, dims, batch, dtype, layout, memory
 * space), negotiates the candidates that fit on the query's tensors
 * (validate and scratch query), checks their scratch against the budgets,
 * and takes the highest priority, then the smallest impl_id; exact_impl_id
 * takes that implementation or none. A request without the tail (struct_size
 * 48) requires no capabilities and allows no scratch. scratch reports what
 * the chosen implementation needs: the caller passes buffers of at least
 * that size as the last tensors of execute's args (device, then host), and
 * the provider never frees them. describe_contract (service struct_size >=
 * 64) borrows the resolved descriptor until release. execute checks that
 * args match the negotiated tensors (dtype, shape, strides, extent) and the
 * scratch, and runs the implementation's orchestration synchronously.
 * Operation parameters (request struct_size >= PTOJIT_OP_RESOLVE_SIZE_PARAMS)
 * are matched as the daemon matches them: every parameter the descriptor
 * declares passed, of exactly its version and type, and no other, else
 * the candidate is rejected (its reason starts "parameter:"). execute hands
 * the resolved parameters to the implementation as its args' scalars, in
 * the descriptor's order; the caller's args carry no scalars.
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
    /* tail (struct_size >= PTOJIT_OP_RESOLVE_SIZE_QUERY) */
    const char *exact_impl_id;        /* that implementation or none; NULL: any */
    const char *const *capabilities;  /* capability_count required capabilities */
    const char *const *numerics;      /* numerics_count required numerical guarantees */
    uint32_t capability_count;
    uint32_t numerics_count;
    int64_t host_budget;              /* bytes of host scratch allowed; -1: no bound */
    int64_t device_budget;            /* bytes of device scratch allowed; -1: no bound */
    /* tail (struct_size >= PTOJIT_OP_RESOLVE_SIZE_PARAMS) */
    const ptojit_op_param *params;    /* param_count operation parameters */
    uint32_t param_count;
    uint32_t reserved;
} ptojit_op_resolve_request;

#define PTOJIT_OP_RESOLVE_SIZE_PREFIX 48u
#define PTOJIT_OP_RESOLVE_SIZE_QUERY 96u
#define PTOJIT_OP_RESOLVE_SIZE_PARAMS 112u

/* What a handle resolved, borrowed from the service until release. */
typedef struct ptojit_op_description {
    uint32_t struct_size;             /* sizeof(ptojit_op_description) of the runtime */
    uint32_t tensor_count;
    const char *impl_id;
    const char *op_name;
    const char *op_version;
    const char *module;               /* package_id of the providing module */
    int64_t priority;
    uint32_t input_count;             /* tensors[0..input_count) are inputs */
    uint32_t reserved;
    uint64_t host_scratch;            /* bytes the caller passes as host scratch */
    uint64_t device_scratch;          /* bytes the caller passes as device scratch */
    const ptojit_op_tensor *tensors;  /* the negotiated tensors */
} ptojit_op_description;

typedef struct ptojit_op_service {
    uint32_t struct_size;             /* sizeof(ptojit_op_service) of the runtime */
    uint32_t version;                 /* PTOJIT_OP_SERVICE_VERSION */
    void *user;
    int32_t (*resolve)(void *user, const ptojit_op_resolve_request *req, uint64_t *handle);
    int32_t (*describe)(void *user, uint64_t handle, char *impl_id, uint32_t cap);
    int32_t (*scratch)(void *user, uint64_t handle, ptojit_op_scratch_request *out);
    int32_t (*execute)(void *user, uint64_t handle, const ptojit_args *args);
    int32_t (*release)(void *user, uint64_t handle);
    /* tail (struct_size >= PTOJIT_OP_SERVICE_SIZE_DESCRIBE) */
    int32_t (*describe_contract)(void *user, uint64_t handle, const ptojit_op_description **out);
} ptojit_op_service;

#define PTOJIT_OP_SERVICE_SIZE_PREFIX 56u
#define PTOJIT_OP_SERVICE_SIZE_DESCRIBE 64u

/* The stride in elements of axis d of args->tensors[i]: the one passed
 * (ABI 1.1), or the packed one when none (or 0) was passed, whatever
 * version of the ABI the caller speaks. */
static inline uint64_t ptojit_stride(const ptojit_args *args, uint32_t i, uint32_t d)
{
    const ptojit_tensor *t = &args->tensors[i];
    const uint64_t *row = 0;
    if (args->struct_size >= PTOJIT_ARGS_SIZE_STRIDES && args->strides != 0) {
        row = &args->strides[(uint64_t)i * PTOJIT_MAX_DIMS];
    }
    uint64_t s = 1;
    for (uint32_t k = 0; k <= d && k < PTOJIT_MAX_DIMS; k++) {
        if (k > 0) {
            s *= t->shape[k - 1];
        }
        if (row != 0 && row[k] != 0) {
            s = row[k];
        }
    }
    return s;
}

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
