/* nnk/extension.h - the extension ABI: what a device plugin implements.
 *
 * An extension is a shared object `libnnk_ext_NAME.so` that exports
 *
 *     const nnk_extension_ops *nnk_extension_entry(uint32_t host_abi);
 *
 * returning a vtable with static storage duration (or NULL to refuse a
 * host whose ABI it does not support).  The built-in `cpu` extension is an
 * instance of the same vtable, and an application can register a linked-in
 * one with nnk_register_extension().  docs/extensions.md is the guide.
 *
 * Versioning: `abi_version` is the NNK_EXTENSION_ABI_VERSION the extension
 * was built with and `size` its sizeof(nnk_extension_ops).  The runtime
 * refuses another major version, and treats every member beyond `size`
 * as absent (NULL), so later versions only append members.  Members
 * marked "optional" may be NULL.
 *
 * Threads: hooks may be called from several threads at once, except
 * init/fini.  Every hook returns an nnk_status; on failure it should call
 * host->set_error() with a message (otherwise a generic one is used).
 *
 * Memory: the runtime owns the caching allocator (size-class pools,
 * statistics, flush-and-retry on failure) and calls mem_alloc/mem_free
 * only for whole blocks, so an extension only maps device allocation.
 * Addresses are opaque to the runtime unless `flags` has
 * NNK_EXT_HOST_MEMORY.
 */
#ifndef NNK_EXTENSION_H
#define NNK_EXTENSION_H

#include <stddef.h>
#include <stdint.h>

#include "nnk/nnk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: the hooks take nnk_plan and nnk_kernel_desc of NNK_ABI_VERSION 2
 * (16-byte nnk_scalar moves every plan member after the scalars), which an
 * extension built against version 1's headers would misread */
#define NNK_EXTENSION_ABI_VERSION 2
#define NNK_EXTENSION_ENTRY "nnk_extension_entry"

/* Code targets: what kernel_compile accepts (libnnkc's NnkcTarget). */
enum { NNK_TARGET_C = 0, NNK_TARGET_CUDA = 1, NNK_TARGET_OPENCL = 2, NNK_TARGET_NONE = -1 };

/* Extension flags. */
enum {
    /* Device memory is ordinary host memory: the runtime reads and writes
     * it directly, and arrays on the host (wrapped, or of another
     * host-memory extension) can be used by this extension's kernels. */
    NNK_EXT_HOST_MEMORY = 1,
};

/* Copy directions. */
typedef enum nnk_copy_kind {
    NNK_COPY_HOST_TO_DEVICE = 0,
    NNK_COPY_DEVICE_TO_HOST = 1,
    NNK_COPY_DEVICE_TO_DEVICE = 2,  /* same device */
} nnk_copy_kind;

/* What the runtime offers an extension (passed to init; valid until fini). */
typedef struct nnk_host_api {
    uint32_t abi_version;           /* NNK_EXTENSION_ABI_VERSION of libnnk */
    uint32_t size;                  /* sizeof(nnk_host_api) of libnnk */
    /* Sets the calling thread's error message; returns `status`. */
    nnk_status (*set_error)(nnk_status status, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* Runs a host kernel on libnnk's thread pool, splitting the plan as
     * the cpu extension does (for extensions whose memory is host memory
     * or that fall back to host code). */
    nnk_status (*run_host)(const nnk_kernel_desc *desc, const nnk_plan *plan);
    /* The C compiler JIT of the cpu extension: compiles C source that
     * defines `const nnk_kernel_desc SYMBOL` (with disk and memory caches)
     * and returns the loaded descriptor, valid until nnk_shutdown(). */
    nnk_status (*compile_c)(const char *source, const char *symbol, int32_t opt_level,
                            const nnk_kernel_desc **desc);
    /* The value of an environment variable (NULL when unset). */
    const char *(*getenv)(const char *name);

    /* ---- appended in ABI 1: present when `size` covers them ---- */

    /* A block of device memory from the runtime's caching allocator of
     * extension `ext` (the caller's name), device `device`: scratch memory
     * of launches.  *block is the handle block_free takes back (the block
     * returns to the cache; work queued on the device's stream that uses
     * it stays ordered before any later use). */
    nnk_status (*block_alloc)(const char *ext, int32_t device, size_t bytes, void **ptr, void **block);
    void (*block_free)(void *block);
    /* The runtime's disk cache (NNK_CACHE_DIR, ..., NNK_CACHE=0) for
     * compiled code that is not C: entry `key` (64 hex digits, e.g. from
     * sha256_hex over everything that determines the code) with a file
     * suffix such as ".cubin".  Entries are verified on read and written
     * atomically, like the C JIT's, and only in a directory and entries
     * of the effective user that nobody else can write (docs/runtime.md,
     * "The disk cache").  The suffix is '.' and 1 to 15 of [a-z0-9_-].
     * cache_load returns malloc'ed bytes (release with free()),
     * NNK_ENOTFOUND when absent, rejected (a corrupt entry is removed),
     * refused or when the cache is off; cache_store fails quietly
     * (NNK_EIO, no file left). */
    nnk_status (*cache_load)(const char *key, const char *suffix, void **data, size_t *size);
    nnk_status (*cache_store)(const char *key, const char *suffix, const void *data, size_t size);
    /* SHA-256 of size bytes as 64 lowercase hex digits and a NUL. */
    void (*sha256_hex)(const void *data, size_t size, char hex[65]);
} nnk_host_api;

/* A key=value pair of a context kw string the runtime did not consume. */
typedef struct nnk_kw_pair {
    const char *key;
    const char *value;
} nnk_kw_pair;

/* What context() fills: NNabla's backend list, best first, each
 * "EXTENSION:TYPE" with TYPE half or float (at most NNK_MAX_BACKENDS,
 * each under 32 characters). */
typedef struct nnk_context_spec {
    int32_t device_id;              /* validated by the runtime */
    int32_t type_config;            /* NNK_F32 or NNK_F16 */
    int32_t nkw;                    /* keys other than device_id, type_config */
    const nnk_kw_pair *kw;
    int32_t nbackends;              /* out */
    char backends[NNK_MAX_BACKENDS][32]; /* out */
} nnk_context_spec;

/* Plain reductions a library may run instead of generated code
 * (nnk_kernel_source.reduce_op): the kernel's only tensor parameter
 * reduced into its only output, both of one float dtype, e.g. `r = sum(x)`
 * (SUM), `r = max(abs(x))` (AMAX), `r = sqrt(sum(x * x))` (NORM2).  The
 * values follow cudnnReduceTensorOp_t's order plus one. */
enum {
    NNK_REDUCE_NONE = 0,
    NNK_REDUCE_SUM, NNK_REDUCE_PROD, NNK_REDUCE_MIN, NNK_REDUCE_MAX, NNK_REDUCE_AMAX,
    NNK_REDUCE_MEAN, NNK_REDUCE_NORM1, NNK_REDUCE_NORM2,
};

/* The source of one kernel for an extension's target. */
typedef struct nnk_kernel_source {
    uint32_t size;                  /* sizeof(nnk_kernel_source) */
    int32_t target;                 /* NNK_TARGET_* */
    const char *text;               /* NUL-terminated source */
    const char *symbol;             /* the nnk_kernel_desc it defines */
    int32_t opt_level;              /* 0..3 */
    /* The kernel's interface as the runtime knows it (params, kind,
     * phases); run/red_* are NULL.  An extension whose compiled code
     * carries no host-side descriptor may return this one. */
    const nnk_kernel_desc *interface;
    /* Appended in ABI 1 (read it only when `size` covers it): NNK_REDUCE_*
     * when the instance is a plain reduction (see above), else
     * NNK_REDUCE_NONE. */
    int32_t reduce_op;
} nnk_kernel_source;

/* A kernel an extension compiled or loaded. */
typedef struct nnk_ext_kernel {
    const nnk_kernel_desc *desc;    /* the descriptor launches pass (required) */
    void *handle;                   /* the extension's own object */
} nnk_ext_kernel;

typedef struct nnk_extension_ops {
    uint32_t abi_version;           /* NNK_EXTENSION_ABI_VERSION */
    uint32_t size;                  /* sizeof(nnk_extension_ops) */
    const char *name;               /* [a-z0-9_]+, unique */
    const char *description;
    int32_t target;                 /* NNK_TARGET_*: the code kernel_compile takes */
    uint32_t flags;                 /* NNK_EXT_* */

    /* Lifecycle.  init runs once, at import; fini at nnk_shutdown() after
     * every kernel and block of the extension has been released.  state
     * is passed to every other hook.  (optional) */
    nnk_status (*init)(const nnk_host_api *host, void **state);
    void (*fini)(void *state);

    /* NNabla's context(**kw): fills spec->backends.  (optional: the
     * default lists "NAME:half" (when type_config is half), "NAME:float",
     * then "cpu:float", and rejects any extra key) */
    nnk_status (*context)(void *state, nnk_context_spec *spec);

    /* Devices.  get_device_count: how many devices there are (0 is valid:
     * e.g. no GPU).  get_devices: describes up to cap of them. */
    nnk_status (*get_device_count)(void *state, int32_t *count);
    nnk_status (*get_devices)(void *state, nnk_device_info *out, int32_t cap);
    /* Waits for all work queued on the device. */
    nnk_status (*device_synchronize)(void *state, int32_t device);
    /* Drops caches the extension keeps itself (the runtime has already
     * flushed its allocator).  (optional) */
    nnk_status (*clear_memory_cache)(void *state);

    /* Whole-block device memory.  mem_alloc returns NNK_ENOMEM when the
     * device is full (the runtime then flushes its cache and retries
     * once).  Sizes are multiples of 256 bytes; the address must be
     * aligned to at least 64 bytes. */
    nnk_status (*mem_alloc)(void *state, int32_t device, size_t bytes, void **ptr);
    void (*mem_free)(void *state, int32_t device, void *ptr);
    nnk_status (*memset_zero)(void *state, int32_t device, void *ptr, size_t bytes);
    /* Copies bytes; for DEVICE_TO_DEVICE both are on `device`.  Ordered
     * with launches on the device's stream; returns when the host buffer
     * may be reused (a device-to-host copy is complete). */
    nnk_status (*copy)(void *state, int32_t device, nnk_copy_kind kind, void *dst, const void *src, size_t bytes);

    /* Kernels.  kernel_compile builds source for `target`; kernel_load
     * prepares a descriptor of linked code (e.g. loads desc->cuda_image;
     * optional: NULL means the extension runs only compiled source);
     * kernel_free releases either. */
    nnk_status (*kernel_compile)(void *state, int32_t device, const nnk_kernel_source *src, nnk_ext_kernel *out);
    nnk_status (*kernel_load)(void *state, int32_t device, const nnk_kernel_desc *desc, nnk_ext_kernel *out);
    void (*kernel_free)(void *state, nnk_ext_kernel *k);
    /* Runs a kernel over a plan whose data pointers are device addresses
     * of `device` (host addresses for NNK_EXT_HOST_MEMORY).  The plan is
     * the caller's and may be reused as soon as launch returns; work may
     * still be queued (device_synchronize waits for it).  Checks such as
     * argmax of an empty slice are done by the runtime before. */
    nnk_status (*launch)(void *state, int32_t device, const nnk_ext_kernel *k, const nnk_plan *plan);

    /* ---- appended in ABI 1: optional, absent when `size` does not cover them ---- */

    /* One line on the extension's devices, above all why there are none
     * ("no NVIDIA driver: ..."); nnk_extension_status() shows it and the
     * runtime appends it to "has no devices" errors.  The string stays
     * valid until fini. */
    const char *(*status)(void *state);
    /* Runs linked code on a stream of the caller (NAME_cuda of nnkc fat
     * objects): desc's device code (desc->cuda_image) over a plan whose
     * data pointers are device addresses, queued on `stream` (NULL: the
     * default stream) of the device whose context is current to the
     * calling thread (device 0 when none is).  May return before the work
     * is done. */
    nnk_status (*launch_stream)(void *state, const nnk_kernel_desc *desc, const nnk_plan *plan, void *stream);
    /* A strided copy between two regions on `device`, elements of
     * elem_size bytes, shapes equal, strides in elements (dst and src are
     * the addresses of element (0, ..., 0)), ordered like copy's
     * DEVICE_TO_DEVICE.  NNK_EUNSUPPORTED (without an error message) for
     * a layout it does not do: the runtime then stages through the host. */
    nnk_status (*copy_strided)(void *state, int32_t device, int32_t ndim, const int64_t *shape, void *dst,
                               const int64_t *dst_strides, const void *src, const int64_t *src_strides,
                               size_t elem_size);
    /* The rest of device `device`'s description: the runtime passes *out
     * zeroed but for size (the runtime's sizeof(nnk_device_props)), id,
     * name, total_memory and host_accessible (from get_devices) and
     * unified_memory (1 when host_accessible, else -1); the hook sets
     * vendor, driver_version, unified_memory and whatever else it knows,
     * and only members that out->size covers.  Without the hook the
     * prefilled values are the answer. */
    nnk_status (*get_device_props)(void *state, int32_t device, nnk_device_props *out);
} nnk_extension_ops;

/* The entry point a shared-object extension exports. */
typedef const nnk_extension_ops *(*nnk_extension_entry_fn)(uint32_t host_abi);

#ifdef __cplusplus
}
#endif

#endif /* NNK_EXTENSION_H */
