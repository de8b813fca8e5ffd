/* error.c - status codes, the thread-local error message, allocation
 * helpers, dtype names, and the global shutdown. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RT_ERROR_MAX 4096

static _Thread_local char last_error[RT_ERROR_MAX];
static _Thread_local unsigned long error_serial; /* messages set on this thread */

atomic_long rt_live_objects;

const char *nnk_last_error(void)
{
    return last_error;
}

unsigned long rt_error_serial(void)
{
    return error_serial;
}

nnk_status rt_verror(nnk_status s, const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    error_serial++;
    return s;
}

nnk_status rt_error(nnk_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_verror(s, fmt, ap);
    va_end(ap);
    return s;
}

nnk_status rt_error_prefix(nnk_status s, const char *fmt, ...)
{
    char prefix[512], old[RT_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    snprintf(last_error, sizeof last_error, "%.500s: %.3500s", prefix, old);
    error_serial++;
    return s;
}

static const char *const status_names[NNK_STATUS_COUNT] = {
    "NNK_OK", "NNK_EINVAL", "NNK_ENOMEM", "NNK_ENOTFOUND", "NNK_ECOMPILE", "NNK_EDEVICE",
    "NNK_ESHAPE", "NNK_EDTYPE", "NNK_EUNSUPPORTED", "NNK_EIO", "NNK_EABI", "NNK_EINTERNAL",
};

const char *nnk_status_name(nnk_status s)
{
    return (unsigned)s < NNK_STATUS_COUNT ? status_names[s] : "NNK_E?";
}

void *rt_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        rt_error(NNK_ENOMEM, "out of host memory (%zu bytes)", n);
    return p;
}

void *rt_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        rt_error(NNK_ENOMEM, "out of host memory (%zu x %zu bytes)", n, size);
    return p;
}

char *rt_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = rt_malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void rt_str_add(rt_str *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void rt_str_puts(rt_str *b, const char *s)
{
    rt_str_add(b, s, strlen(s));
}

void rt_str_printf(rt_str *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        rt_str_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rt_str_add(b, big, (size_t)n);
    free(big);
}

void rt_str_free(rt_str *b)
{
    free(b->s);
    *b = (rt_str){0};
}

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
    const char *name;
    size_t size;
} dtypes[NNK_DTYPE_COUNT] = {
#define TYPE(id, name, cls, bits, ...) [NNK_##id] = {name, bits / 8},
#include "types.def"
#undef TYPE
};

const char *nnk_dtype_name(nnk_dtype t)
{
    return (unsigned)t < NNK_DTYPE_COUNT ? dtypes[t].name : NULL;
}

size_t nnk_dtype_size(nnk_dtype t)
{
    return (unsigned)t < NNK_DTYPE_COUNT ? dtypes[t].size : 0;
}

nnk_status nnk_dtype_parse(const char *name, nnk_dtype *out)
{
    static const struct {
        const char *alias;
        nnk_dtype t;
    } aliases[] = {
        {"float16", NNK_F16}, {"half", NNK_F16}, {"bfloat16", NNK_BF16}, {"float32", NNK_F32},
        {"float", NNK_F32}, {"float64", NNK_F64}, {"double", NNK_F64}, {"int8", NNK_I8},
        {"int16", NNK_I16}, {"int32", NNK_I32}, {"int64", NNK_I64}, {"uint8", NNK_U8},
        {"uint16", NNK_U16}, {"uint32", NNK_U32}, {"uint64", NNK_U64},
    };
    if (!name || !out)
        return rt_error(NNK_EINVAL, "nnk_dtype_parse: NULL argument");
    for (int t = 0; t < NNK_DTYPE_COUNT; t++)
        if (strcasecmp(name, dtypes[t].name) == 0)
            return *out = (nnk_dtype)t, NNK_OK;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(name, aliases[i].alias) == 0)
            return *out = aliases[i].t, NNK_OK;
    return rt_error(NNK_EINVAL, "unknown dtype '%s' (expected bool, i8..i64, u8..u64, f16, bf16, f32, f64)", name);
}

/* ---- shutdown ---------------------------------------------------------- */

void nnk_shutdown(void)
{
    rt_pool_shutdown();
    rt_context_shutdown();
    rt_linked_shutdown();      /* kernels of nnk_launch_desc, before their extensions */
    rt_extensions_shutdown();  /* frees allocators, then fini + dlclose */
    rt_jit_shutdown();
}

/* One set of fork handlers so that the locks are taken in the order the
 * runtime nests them (a kernel of a linked descriptor is made under
 * linked.lock, which makes the default context, which imports the cpu
 * extension, whose init may compile): a fork waits for what holds them
 * and the child finds them free and the data consistent. */
static void fork_prepare(void)
{
    rt_linked_atfork(RT_FORK_PREPARE);
    rt_context_atfork(RT_FORK_PREPARE);
    rt_extensions_atfork(RT_FORK_PREPARE);
    rt_jit_atfork(RT_FORK_PREPARE);
}

static void fork_parent(void)
{
    rt_jit_atfork(RT_FORK_PARENT);
    rt_extensions_atfork(RT_FORK_PARENT);
    rt_context_atfork(RT_FORK_PARENT);
    rt_linked_atfork(RT_FORK_PARENT);
}

static void fork_child(void)
{
    rt_jit_atfork(RT_FORK_CHILD);
    rt_extensions_atfork(RT_FORK_CHILD);
    rt_context_atfork(RT_FORK_CHILD);
    rt_linked_atfork(RT_FORK_CHILD);
}

__attribute__((constructor)) static void rt_fork_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* At exit, tearing down under live objects would turn their later frees
 * (from other destructors) into use-after-free: then only the threads go. */
__attribute__((destructor)) static void rt_fini(void)
{
    if (atomic_load(&rt_live_objects) == 0)
        nnk_shutdown();
    else
        rt_pool_shutdown();
}
