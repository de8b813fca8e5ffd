/* internal.h - what the files of libnnk share.  Not installed.
 *
 * Internal names start with rt_ so that only the public nnk_ symbols are
 * exported (libnnk is linked with -export-symbols-regex '^nnk_').
 */
#ifndef NNK_RUNTIME_INTERNAL_H
#define NNK_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nnk/extension.h"
#include "nnk/nnk.h"

/* ---- checked size arithmetic -------------------------------------------------
 * Every size, extent, stride or byte count that a caller can influence goes
 * through these: false on overflow, *r unspecified then. */
static inline bool rt_mul(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool rt_add(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool rt_mulz(size_t a, size_t b, size_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* ---- error.c ------------------------------------------------------------ */

nnk_status rt_error(nnk_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
nnk_status rt_verror(nnk_status s, const char *fmt, va_list ap);
/* Prefixes the current message: "what: <message>". */
nnk_status rt_error_prefix(nnk_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Counts the messages set on this thread: a caller of an extension hook
 * compares it before and after, and supplies a message only when a failing
 * hook set none (a message set in advance would outlive a success). */
unsigned long rt_error_serial(void);
#define rt_check_null(p, name) ((p) ? NNK_OK : rt_error(NNK_EINVAL, "%s: %s is NULL", __func__, name))

/* Allocation helpers that set NNK_ENOMEM messages. */
void *rt_malloc(size_t n);
void *rt_calloc(size_t n, size_t size);
char *rt_strdup(const char *s);

/* A growable string (messages, keys). */
typedef struct rt_str {
    char *s;
    size_t len, cap;
    bool oom;
} rt_str;
void rt_str_add(rt_str *b, const char *s, size_t n);
void rt_str_puts(rt_str *b, const char *s);
void rt_str_printf(rt_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_str_free(rt_str *b);

/* ---- lifecycle.c ---------------------------------------------------------- */

/* Live objects, so the exit-time destructor knows whether it may tear down. */
extern atomic_long rt_live_objects;
static inline void rt_live_inc(void) { atomic_fetch_add_explicit(&rt_live_objects, 1, memory_order_relaxed); }
static inline void rt_live_dec(void) { atomic_fetch_sub_explicit(&rt_live_objects, 1, memory_order_relaxed); }

/* fork(): lifecycle.c's handlers take the runtime's global locks in one order
 * (linked descriptors, default context, extension registry, JIT) and give
 * them back in the parent and the child (each file's rt_*_atfork). */
typedef enum { RT_FORK_PREPARE, RT_FORK_PARENT, RT_FORK_CHILD } rt_fork_phase;
void rt_linked_atfork(rt_fork_phase phase);
void rt_context_atfork(rt_fork_phase phase);
void rt_extensions_atfork(rt_fork_phase phase);
void rt_jit_atfork(rt_fork_phase phase);

/* ---- hash.c: SHA-256 ------------------------------------------------------ */

typedef struct rt_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t nbuf;
} rt_sha256;
void rt_sha256_init(rt_sha256 *s);
void rt_sha256_update(rt_sha256 *s, const void *data, size_t n);
void rt_sha256_final(rt_sha256 *s, uint8_t out[32]);
void rt_sha256_hex(const uint8_t digest[32], char hex[65]);
/* FNV-1a, for in-memory hash tables. */
uint64_t rt_hash64(const void *data, size_t n, uint64_t seed);

/* ---- kw.c: "key=value key=value" strings ---------------------------------- */

typedef struct rt_kw {
    int32_t n;
    nnk_kw_pair *pairs;
    char *storage;
    uint8_t *used;
    const char *what; /* rt_kw_parse's: every message about the string begins with it */
} rt_kw;
/* `what` names the string in messages ("context kw", "options"). */
nnk_status rt_kw_parse(const char *text, const char *what, rt_kw *kw);
void rt_kw_free(rt_kw *kw);
/* The value of key (marking it used), NULL when absent. */
const char *rt_kw_take(rt_kw *kw, const char *key);
nnk_status rt_kw_int(rt_kw *kw, const char *key, int64_t lo, int64_t hi, int64_t *val);
/* NNK_EINVAL naming the first key nobody took. */
nnk_status rt_kw_check_unused(const rt_kw *kw, const char *what);

/* ---- pool.c: the thread pool ------------------------------------------------ */

typedef void (*rt_task_fn)(void *arg, int64_t task);
/* Runs fn(arg, t) for t in [0, ntasks) on the pool (the caller works
 * too) and waits.  Runs inline when the pool is busy with another job or
 * has one thread. */
void rt_pool_run(int64_t ntasks, rt_task_fn fn, void *arg);
/* The same, for tasks of about task_work elements each: a job that long
 * wakes the workers before its first task (0: judged by the caller's
 * first tasks, as rt_pool_run). */
void rt_pool_run_work(int64_t ntasks, int64_t task_work, rt_task_fn fn, void *arg);
int rt_pool_threads(void);
void rt_pool_shutdown(void);
/* Tests only (tests/runtime/test_internal.c): called by a worker between
 * taking up a job and claiming its first task, where the scheduler may
 * deschedule it; NULL in the library. */
extern void (*rt_pool_test_stall)(void);
/* Tests only: called by a worker after it claimed a task, before it runs
 * it (a worker descheduled there makes the caller wait); NULL in the
 * library.  rt_pool_late_jobs: the jobs that waited late for one. */
extern void (*rt_pool_test_claimed)(void);
int64_t rt_pool_late_jobs(void);

/* ---- exec.c: running host kernels over a plan --------------------------- */

nnk_status rt_host_run(const nnk_kernel_desc *desc, const nnk_plan *plan);

/* ---- alloc.c: the caching allocator ---------------------------------------- */

typedef struct rt_ext rt_ext;
typedef struct rt_allocator rt_allocator;
typedef struct rt_block {
    void *ptr;
    size_t size;              /* the size class */
    struct rt_block *next;    /* free list */
} rt_block;
rt_allocator *rt_allocator_new(rt_ext *ext, int32_t device);
void rt_allocator_free(rt_allocator *a); /* releases cached blocks */
nnk_status rt_alloc(rt_allocator *a, size_t bytes, rt_block **out);
void rt_dealloc(rt_allocator *a, rt_block *b);
uint64_t rt_allocator_flush(rt_allocator *a);
void rt_allocator_stats(rt_allocator *a, nnk_memory_stats *out);
size_t rt_size_class(size_t bytes);

/* ---- extension.c: the registry ------------------------------------------- */

struct rt_ext {
    const nnk_extension_ops *ops;
    void *state;
    void *dl;                 /* dlopen handle, NULL when built in */
    char *path;
    int32_t ndevices;         /* from get_device_count at import */
    rt_allocator **alloc;     /* per device, created lazily */
    pthread_mutex_t lock;
};
struct nnk_extension { rt_ext ext; };
/* The extension of a backend "NAME:TYPE", importing it. */
nnk_status rt_ext_import(const char *name, size_t len, rt_ext **out);
static inline bool rt_ext_host_memory(const rt_ext *e) { return e->ops->flags & NNK_EXT_HOST_MEMORY; }
rt_allocator *rt_ext_allocator(rt_ext *e, int32_t device);
/* Optional members beyond the extension's struct size read as NULL. */
#define RT_HOOK(e, member) \
    ((e)->ops->size >= offsetof(nnk_extension_ops, member) + sizeof((e)->ops->member) ? (e)->ops->member : NULL)
extern const nnk_extension_ops rt_cpu_ops;
extern const nnk_host_api rt_host_api;
rt_ext *rt_cpu_ext(void);     /* always available (NULL only on ENOMEM) */
void rt_extensions_shutdown(void);

/* ---- context.c -------------------------------------------------------------- */

struct nnk_context {
    int32_t nbackends;
    rt_ext *ext[NNK_MAX_BACKENDS];
    char backend[NNK_MAX_BACKENDS][32];
    int32_t device_id;
    nnk_dtype type_config;
    bool mixed_half;          /* type_config=mixed_half: half's dtype under NNabla's name */
    char str[400];
};
/* The context's first backend and its device: NNK_EDEVICE when the
 * extension has no devices, NNK_EINVAL when device_id is past them (a
 * context is made without asking the device, as NNabla's; its first use
 * says so). */
nnk_status rt_context_device(const nnk_context *c, rt_ext **ext, int32_t *device);
/* ctx, or the default context when ctx is NULL (copied into *tmp). */
const nnk_context *rt_context_or_default(const nnk_context *ctx, nnk_context *tmp);
void rt_context_shutdown(void);

/* ---- array.c ------------------------------------------------------------------ */

typedef struct rt_storage {
    atomic_long refs;
    rt_ext *ext;              /* NULL: caller-owned host memory */
    int32_t device;
    rt_block *block;          /* from the allocator; NULL when wrapped */
    char *base;
} rt_storage;

struct nnk_array {
    atomic_long refs;
    rt_storage *st;
    nnk_dtype dtype;
    int32_t ndim;
    int64_t offset;           /* elements from st->base */
    int64_t shape[NNK_MAX_DIMS];
    int64_t strides[NNK_MAX_DIMS];
};
static inline char *rt_array_ptr(const nnk_array *a)
{
    return a->st->base + a->offset * (int64_t)nnk_dtype_size(a->dtype);
}
static inline bool rt_array_on_host(const nnk_array *a) { return !a->st->ext || rt_ext_host_memory(a->st->ext); }
nnk_status rt_array_alloc(rt_ext *ext, int32_t device, nnk_dtype dtype, int32_t ndim, const int64_t *shape,
                          nnk_array **out);
int64_t rt_shape_size(int32_t ndim, const int64_t *shape);
void rt_contiguous_strides(int32_t ndim, const int64_t *shape, int64_t *strides);
nnk_status rt_check_shape(int32_t ndim, const int64_t *shape);

/* ---- convert.c: strided copies with dtype conversion --------------------------- */

/* dst[i] = (dtype_d) src[i] over an ndim iteration space; strides in elements. */
void rt_copy_strided(int32_t ndim, const int64_t *shape, void *dst, nnk_dtype dt, const int64_t *dst_strides,
                     const void *src, nnk_dtype st, const int64_t *src_strides);
/* Converts a double or int64 value to a scalar of dtype t. */
nnk_scalar rt_scalar_from_f64(nnk_dtype t, double v);
nnk_scalar rt_scalar_from_i64(nnk_dtype t, int64_t v);
nnk_scalar rt_scalar_from_u64(nnk_dtype t, uint64_t v);
nnk_scalar rt_scalar_from_c128(nnk_dtype t, double re, double im); /* a real t takes the real part */

/* ---- jit_cpu.c, cache.c ------------------------------------------------------------ */

/* Compiles (or finds) C source defining `const nnk_kernel_desc SYMBOL`.
 * parts: the source is nnkc's generated C, which may compile as two
 * parts side by side (NNK_SPLIT); other sources compile whole.
 * *ref (when ref is not NULL) is a reference to give back with
 * rt_jit_release; without one the object stays loaded until shutdown. */
nnk_status rt_jit_c(const char *source, bool parts, const char *symbol, int32_t opt_level,
                    const nnk_kernel_desc **desc, void **ref);
void rt_jit_release(void *ref);
/* The same in two steps: with pending not NULL, a kernel in neither cache
 * is not compiled but left in *pending (the key's entry busy) for
 * rt_jit_c_finish, which another thread may run. */
typedef struct rt_jit_pending rt_jit_pending;
nnk_status rt_jit_c_begin(const char *source, bool parts, const char *symbol, int32_t opt_level,
                          const nnk_kernel_desc **desc, void **ref, rt_jit_pending **pending);
nnk_status rt_jit_c_finish(rt_jit_pending *p, const nnk_kernel_desc **desc, void **ref);
/* A module instance's C with its evaluator (libnnkc's NnkcEval, taken):
 * found in a cache, it is loaded; else it compiles in a background thread
 * while the first launches run on the evaluator (docs/runtime.md, "The
 * first call").  out->desc is then `iface` (no run function) and
 * out->handle the job, which rt_jit_job_launch runs and rt_jit_job_free
 * frees (waiting for its compile). */
struct NnkcEval;
nnk_status rt_jit_c_async(const char *source, const char *symbol, int32_t opt_level, struct NnkcEval *ev,
                          const nnk_kernel_desc *iface, nnk_ext_kernel *out);
bool rt_jit_eval_enabled(void); /* NNK_JIT_EVAL is not 0 */
static inline bool rt_jit_is_job(const nnk_ext_kernel *k) { return k->handle && !k->desc->run; }
nnk_status rt_jit_job_launch(void *job, const nnk_plan *plan);
void rt_jit_job_free(void *job);
void rt_jit_jobs_wait(void); /* nnk_shutdown: every background compile finished */
/* Tests (tests/runtime/eval_bits.c): every launch of a job on its
 * evaluator (as NNK_JIT_EVAL=always), and waiting for a job's compile. */
void rt_jit_eval_always(bool on);
void rt_jit_job_wait(void *job);
void rt_jit_shutdown(void);
/* The disk cache (cache.c explains its trust model).  rt_cache_open is
 * false when the cache is off or refused (the reason in nnk_cache_debug). */
typedef struct rt_cache {
    int fd;                   /* the directory, opened after the checks */
    char path[4096];
} rt_cache;
bool rt_cache_open(rt_cache *c);
void rt_cache_close(rt_cache *c);
/* The verified body of entry KEY SUFFIX (malloc'ed); NNK_ENOTFOUND when
 * absent, NNK_EIO when rejected (removed when corrupt). */
nnk_status rt_cache_get(rt_cache *c, const char *key, const char *suffix, uint8_t **data, size_t *size);
/* Writes the entry atomically; NNK_EIO (no file left) when it cannot. */
nnk_status rt_cache_put(rt_cache *c, const char *key, const char *suffix, const void *data, size_t size);
void rt_cache_atfork_child(void);
/* A new private directory (0700, unpredictable name) in $TMPDIR; files in
 * it are created O_EXCL|O_NOFOLLOW, mode 0600, and read back bounded. */
nnk_status rt_private_dir(char *out, size_t n);
nnk_status rt_private_write(const char *path, const void *data, size_t size);
nnk_status rt_private_read(const char *path, size_t cap, uint8_t **data, size_t *size);
/* Whole entries KEY SUFFIX of other extensions' code (nnk_host_api). */
nnk_status rt_cache_load(const char *key, const char *suffix, void **data, size_t *size);
nnk_status rt_cache_store(const char *key, const char *suffix, const void *data, size_t size);

/* ---- plan.c --------------------------------------------------------------------- */

nnk_status rt_plan_build(nnk_plan *p, int32_t nin, int32_t nout, const nnk_view *const *views, const uint8_t *reduced,
                         bool is_reduction, int32_t naxes, const int32_t *axes);
/* A bit per input (plan order) that shares memory with an output other
 * than element for element: such inputs are read from a copy. */
uint32_t rt_plan_overlapping_inputs(const nnk_plan *p, int32_t nin, const uint8_t *size, const uint8_t *reduced);
/* Raw parameters (plan.h): slot[k] is 1 + the raw slot of operand k, or 0;
 * rt_plan_build takes them as reduced[k] != 0 (no part in the iteration
 * space), then rt_plan_raw fills p->raw from their own views. */
nnk_status rt_plan_raw(nnk_plan *p, int32_t nops, const nnk_view *const *views, const int8_t *slot,
                       nnk_range_error *range);

/* ---- module.c, launch.c, jitfn.c ------------------------------------------------------ */

enum { RT_MAX_PARAMS = NNK_MAX_TENSORS + NNK_MAX_SCALARS, RT_MAX_GENERICS = 8 };

/* A parameter as launches see it. */
typedef struct rt_param {
    const char *name;
    bool tensor, output, reduced, has_default;
    int32_t typevar;          /* index of its type variable, or -1 */
    nnk_dtype type;           /* the declared type when typevar < 0 */
    bool inout;               /* an inout parameter, or the output after the declared ones standing for it */
    bool raw;                 /* a raw (indexed) tensor parameter: no broadcasting, nnk_plan.raw */
} rt_param;

/* A scalar value given by the caller or as a jit function's default. */
typedef struct rt_value {
    enum { RT_NONE, RT_F64, RT_I64, RT_U64, RT_C128 } kind;
    union {
        double f;
        int64_t i;
        uint64_t u; /* RT_U64: an integer above INT64_MAX keeps its value (a u64 mask, a seed) */
        double c[2]; /* real and imaginary parts */
    } v;
} rt_value;

/* One compiled or loaded instance of a kernel: per backend, device and
 * dtype signature. */
typedef struct rt_instance {
    struct rt_instance *next;
    rt_ext *ext;
    int32_t device;
    uint8_t targs[RT_MAX_GENERICS];
    uint8_t storage[NNK_MAX_TENSORS];
    nnk_ext_kernel k;
    nnk_kernel_desc iface;    /* what the runtime told the extension */
    nnk_param_desc iface_params[RT_MAX_PARAMS];
} rt_instance;

typedef enum { RT_KERNEL_MODULE, RT_KERNEL_DESC, RT_KERNEL_SOURCE } rt_kernel_kind;

struct nnk_kernel {
    rt_kernel_kind kind;
    struct nnk_module *mod;          /* RT_KERNEL_MODULE */
    const void *info;                /* its NnkcKernelInfo */
    const nnk_kernel_desc *desc;     /* RT_KERNEL_DESC, RT_KERNEL_SOURCE */
    nnk_context *ctx;                /* NULL: the default context at each launch */
    char *name;
    bool reduction;
    int32_t nin, nout, ngenerics;
    int32_t classes[RT_MAX_GENERICS];      /* TypeClass of each type variable */
    const char *generic_names[RT_MAX_GENERICS];
    rt_param params[RT_MAX_PARAMS];
    rt_value defaults[RT_MAX_PARAMS];      /* jit function overrides */
    int32_t opt_level;
    pthread_mutex_t lock;
    rt_instance *instances;
    int32_t ninstances;
};

struct nnk_module {
    void *nm;                        /* NnkcModule */
    pthread_mutex_t lock;            /* libnnkc is not thread-safe */
    nnk_context *ctx;
    int32_t opt_level;
    int32_t nkernels;
    nnk_kernel **kernels;
};

/* Creates the instance of k for (ext, device, targs, storage); with
 * k->lock held.  module.c for module kernels, launch.c for the others. */
nnk_status rt_module_instance(nnk_kernel *k, rt_instance *inst);
nnk_status rt_kernel_init(nnk_kernel *k, rt_kernel_kind kind, const nnk_context *ctx, const char *name);
/* The inout input that inout output parameter p stands for, or -1 (launch.c). */
int32_t rt_inout_input(const nnk_kernel *k, int32_t p);
void rt_kernel_fini(nnk_kernel *k);
/* Frees the kernels nnk_launch_desc keeps (nnk_shutdown, before the extensions go). */
void rt_linked_shutdown(void);
nnk_status rt_parse_module_options(rt_kw *kw, int32_t *opt_level, char ***include_dirs, const char **name);

#endif /* NNK_RUNTIME_INTERNAL_H */
