/* fakecuda.c - a libcuda.so.1 stand-in for tests without a GPU
 * (NNK_CUDA_DRIVER=.../libfakecuda.so): one device whose memory is the
 * host's, enough of the driver API for the cuda extension to enter a
 * context and copy (no modules, no launches).
 *
 * Asynchronous operations are queued per stream and carried out at
 * cuStreamSynchronize (or a synchronous copy), as a GPU would some time
 * later: code that reuses a host buffer before the copy that reads it has
 * completed, or reads one before the copy that writes it, gets other
 * bytes here too.  Page-locked memory (cuMemHostAlloc) is tracked, and
 * the counters say which copies had a pinned host side
 * (fakecuda_counters).  Environment: FAKECUDA_NO_PIN=1 makes
 * cuMemHostAlloc fail (CUDA_ERROR_OUT_OF_MEMORY); FAKECUDA_COPY_OOM=1
 * makes host<->device copies fail so; both read at cuInit. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The entry points are found by dlsym under the driver's names; no header
 * declares them. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { OK = 0, E_INVALID_VALUE = 1, E_OOM = 2, E_NOT_FOUND = 500, E_NOT_SUPPORTED = 801 };

/* What the tests read (fakecuda_counters). */
typedef struct fakecuda_counters_t {
    long pinned_live, pinned_allocs, pinned_frees;
    long async_pinned, async_pageable; /* HtoD/DtoH copies by their host side */
    long syncs;
    long bytes_to_device, bytes_to_host;
} fakecuda_counters_t;

typedef struct Op {
    int kind; /* 0 HtoD, 1 DtoH, 2 DtoD, 3 memset */
    void *dst;
    const void *src;
    size_t n;
    unsigned char v;
} Op;

typedef struct Stream {
    Op *ops;
    size_t n, cap;
} Stream;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fakecuda_counters_t counters;
static struct {
    void *p;
    size_t n;
} pinned[64];
static int no_pin, copy_oom;
static int ctx_token, ctx_depth;

void fakecuda_counters(fakecuda_counters_t *out)
{
    pthread_mutex_lock(&lock);
    *out = counters;
    pthread_mutex_unlock(&lock);
}

CUresult cuInit(unsigned flags)
{
    (void)flags;
    no_pin = getenv("FAKECUDA_NO_PIN") != NULL;
    copy_oom = getenv("FAKECUDA_COPY_OOM") != NULL;
    return OK;
}
CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return OK;
}
CUresult cuGetErrorName(CUresult e, const char **s)
{
    *s = e == E_OOM ? "CUDA_ERROR_OUT_OF_MEMORY" : e == E_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_ERROR";
    return OK;
}
CUresult cuGetErrorString(CUresult e, const char **s)
{
    *s = e == E_OOM ? "out of memory" : "error";
    return OK;
}
CUresult cuDeviceGetCount(int *n)
{
    *n = 1;
    return OK;
}
CUresult cuDeviceGet(int *d, int ordinal)
{
    *d = ordinal;
    return ordinal == 0 ? OK : E_INVALID_VALUE;
}
CUresult cuDeviceGetName(char *name, int len, int d)
{
    (void)d;
    strncpy(name, "fakecuda", (size_t)len);
    name[len - 1] = 0;
    return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int d)
{
    (void)d;
    *bytes = (size_t)1 << 30;
    return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d)
{
    (void)d;
    *v = attr == 16 ? 4 : attr == 75 ? 9 : 0; /* 4 SMs, sm_90, no memory pools */
    return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d)
{
    (void)d;
    *c = &ctx_token;
    return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d)
{
    (void)d;
    return OK;
}
CUresult cuCtxPushCurrent_v2(void *c)
{
    (void)c;
    ctx_depth++;
    return OK;
}
CUresult cuCtxPopCurrent_v2(void **c)
{
    if (c)
        *c = &ctx_token;
    ctx_depth--;
    return OK;
}
CUresult cuCtxGetCurrent(void **c)
{
    *c = ctx_depth > 0 ? &ctx_token : NULL;
    return OK;
}
CUresult cuCtxGetDevice(int *d)
{
    *d = 0;
    return OK;
}

static Stream default_stream;

static void run_ops(Stream *s)
{
    for (size_t i = 0; i < s->n; i++) {
        Op *o = &s->ops[i];
        if (o->kind == 3)
            memset(o->dst, o->v, o->n);
        else
            memmove(o->dst, o->src, o->n);
    }
    s->n = 0;
}

CUresult cuCtxSynchronize(void)
{
    pthread_mutex_lock(&lock);
    run_ops(&default_stream);
    pthread_mutex_unlock(&lock);
    return OK;
}
CUresult cuStreamCreate(void **s, unsigned flags)
{
    (void)flags;
    *s = calloc(1, sizeof(Stream));
    return *s ? OK : E_OOM;
}
CUresult cuStreamDestroy_v2(void *s)
{
    Stream *st = s;
    if (st) {
        pthread_mutex_lock(&lock);
        run_ops(st);
        pthread_mutex_unlock(&lock);
        free(st->ops);
        free(st);
    }
    return OK;
}
CUresult cuStreamSynchronize(void *s)
{
    pthread_mutex_lock(&lock);
    run_ops(s ? (Stream *)s : &default_stream);
    counters.syncs++;
    pthread_mutex_unlock(&lock);
    return OK;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    void *m = malloc(bytes ? bytes : 1);
    *p = (CUdeviceptr)(uintptr_t)m;
    return m ? OK : E_OOM;
}
CUresult cuMemFree_v2(CUdeviceptr p)
{
    free((void *)(uintptr_t)p);
    return OK;
}

static int is_pinned(const void *p, size_t n)
{
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i].p && (const char *)p >= (const char *)pinned[i].p &&
            (const char *)p + n <= (const char *)pinned[i].p + pinned[i].n)
            return 1;
    return 0;
}

static CUresult queue(void *s, int kind, void *dst, const void *src, size_t n, unsigned char v)
{
    Stream *st = s ? (Stream *)s : &default_stream;
    pthread_mutex_lock(&lock);
    if (kind <= 1 && copy_oom) {
        pthread_mutex_unlock(&lock);
        return E_OOM;
    }
    if (st->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 16;
        Op *ops = realloc(st->ops, cap * sizeof *ops);
        if (!ops) {
            pthread_mutex_unlock(&lock);
            return E_OOM;
        }
        st->ops = ops;
        st->cap = cap;
    }
    st->ops[st->n++] = (Op){kind, dst, src, n, v};
    if (kind <= 1) {
        const void *host = kind == 0 ? src : dst;
        if (is_pinned(host, n))
            counters.async_pinned++;
        else
            counters.async_pageable++;
        if (kind == 0)
            counters.bytes_to_device += (long)n;
        else
            counters.bytes_to_host += (long)n;
    }
    pthread_mutex_unlock(&lock);
    return OK;
}

CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void *s)
{
    return queue(s, 3, (void *)(uintptr_t)p, NULL, n, v);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *src, size_t n, void *s)
{
    return queue(s, 0, (void *)(uintptr_t)d, src, n, 0);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s)
{
    return queue(s, 1, dst, (const void *)(uintptr_t)src, n, 0);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr src, size_t n, void *s)
{
    return queue(s, 2, (void *)(uintptr_t)d, (const void *)(uintptr_t)src, n, 0);
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    pthread_mutex_lock(&lock);
    run_ops(&default_stream);
    memcpy(dst, (const void *)(uintptr_t)src, n);
    pthread_mutex_unlock(&lock);
    return OK;
}

/* Page-locked host memory (the driver's optional entry points). */
CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned flags)
{
    (void)flags;
    pthread_mutex_lock(&lock);
    CUresult r = E_OOM;
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0] && !no_pin; i++)
        if (!pinned[i].p) {
            pinned[i].p = malloc(bytes ? bytes : 1);
            if (!pinned[i].p)
                break;
            pinned[i].n = bytes;
            *pp = pinned[i].p;
            counters.pinned_live++;
            counters.pinned_allocs++;
            r = OK;
            break;
        }
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuMemFreeHost(void *p)
{
    pthread_mutex_lock(&lock);
    CUresult r = E_INVALID_VALUE;
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i].p && pinned[i].p == p) {
            free(p);
            pinned[i].p = NULL;
            counters.pinned_live--;
            counters.pinned_frees++;
            r = OK;
            break;
        }
    pthread_mutex_unlock(&lock);
    return r;
}

/* No modules or launches on this device. */
CUresult cuModuleLoadData(void **m, const void *image)
{
    (void)m;
    (void)image;
    return E_NOT_SUPPORTED;
}
CUresult cuModuleUnload(void *m)
{
    (void)m;
    return OK;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name)
{
    (void)f;
    (void)m;
    (void)name;
    return E_NOT_FOUND;
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, void *m, const char *name)
{
    (void)p;
    (void)bytes;
    (void)m;
    (void)name;
    return E_NOT_FOUND;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *s, void **params, void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)s, (void)params,
        (void)extra;
    return E_NOT_SUPPORTED;
}
