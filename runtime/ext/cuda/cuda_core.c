/* cuda_core.c - the CUDA device code of the cuda and cudnn extensions
 * (cuda_core.h).
 *
 * The driver (libcuda.so.1) is loaded at init with dlopen; without it, or
 * when cuInit fails (no GPU, or the toolkit's stub libcuda), the extension
 * still loads and reports 0 devices, and cu_status() says why.  NVRTC is
 * loaded at the first compile.  Every driver call on a device runs with
 * the device's primary context pushed (cu_enter/cu_leave), so the calling
 * thread's own current context is left as it was.  Work is queued on one
 * stream per device; copies to or from the host synchronise it.
 */
#include "config.h"

#include "cuda_core.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NNK_CUDA_HOME
#define NNK_CUDA_HOME ""
#endif

/* ---- small helpers ---------------------------------------------------------- */

#define fmt ext_fmt /* ext_common.h */
#define env(S, name) ext_env((S)->host, name)

/* The file a dlopen handle came from. */
static const char *loaded_path(void *h)
{
    struct link_map *lm = NULL;
    if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
        return lm->l_name;
    return "?";
}

const char *cu_error_text(cu_state *S, CUresult r, char *buf, size_t n)
{
    const char *name = NULL, *text = NULL;
    if (S->cu.cuGetErrorName && S->cu.cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    if (S->cu.cuGetErrorString && S->cu.cuGetErrorString(r, &text) != CUDA_SUCCESS)
        text = NULL;
    static const struct { int code; const char *name; } known[] = {
        {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"}, {3, "CUDA_ERROR_NOT_INITIALIZED"},
        {34, "CUDA_ERROR_STUB_LIBRARY"}, {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"}, {100, "CUDA_ERROR_NO_DEVICE"},
        {101, "CUDA_ERROR_INVALID_DEVICE"}, {999, "CUDA_ERROR_UNKNOWN"}};
    for (size_t i = 0; !name && i < sizeof known / sizeof *known; i++)
        if (known[i].code == r)
            name = known[i].name;
    if (name && text)
        fmt(buf, n, "%s: %s", name, text);
    else if (name)
        fmt(buf, n, "%s (%d)", name, r);
    else
        fmt(buf, n, "CUDA error %d", r);
    return buf;
}

nnk_status cu_fail(cu_state *S, nnk_status s, CUresult r, const char *what)
{
    char e[256];
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        s = NNK_ENOMEM;
    return S->host->set_error(s, "%s: %s: %s", S->ext, what, cu_error_text(S, r, e, sizeof e));
}

/* ---- init ------------------------------------------------------------------------- */

static void load_driver(cu_state *S)
{
    const char *path = env(S, "NNK_CUDA_DRIVER");
    const char *lib = path ? path : "libcuda.so.1";
    S->libcuda = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!S->libcuda) {
        const char *e = dlerror();
        fmt(S->status, sizeof S->status, "no NVIDIA driver: %s", e ? e : lib);
        return;
    }
#define NNK_X(name, sym, ret, args)                                                                         \
    if (!(*(void **)&S->cu.name = dlsym(S->libcuda, sym))) {                                                   \
        fmt(S->status, sizeof S->status, "the driver library %s lacks %s (a driver too old for CUDA 11?)",   \
            loaded_path(S->libcuda), sym);                                                                 \
        return;                                                                                            \
    }
    NNK_CU_FUNCTIONS(NNK_X)
#undef NNK_X
#define NNK_X(name, sym, ret, args) *(void **)&S->cuo.name = dlsym(S->libcuda, sym);
    NNK_CU_OPTIONAL(NNK_X)
#undef NNK_X
    CUresult r = S->cu.cuInit(0);
    if (r != CUDA_SUCCESS) {
        char e[256];
        cu_error_text(S, r, e, sizeof e);
        if (r == CUDA_ERROR_STUB_LIBRARY)
            fmt(S->status, sizeof S->status,
                "no NVIDIA driver: %s is the CUDA toolkit's stub library, not a driver (cuInit: %s)",
                loaded_path(S->libcuda), e);
        else if (r == CUDA_ERROR_NO_DEVICE)
            fmt(S->status, sizeof S->status, "no CUDA-capable GPU (cuInit: %s)", e);
        else
            fmt(S->status, sizeof S->status, "the NVIDIA driver %s failed to initialise (cuInit: %s)",
                loaded_path(S->libcuda), e);
        return;
    }
    S->cu.cuDriverGetVersion(&S->driver_version);
    int n = 0;
    if ((r = S->cu.cuDeviceGetCount(&n)) != CUDA_SUCCESS || n <= 0) {
        char e[256];
        fmt(S->status, sizeof S->status, "no CUDA-capable GPU (cuDeviceGetCount: %s)",
            r ? cu_error_text(S, r, e, sizeof e) : "0 devices");
        return;
    }
    cu_device *devs = calloc((size_t)n, sizeof *devs);
    if (!devs) {
        fmt(S->status, sizeof S->status, "out of memory");
        return;
    }
    size_t len = (size_t)snprintf(S->status, sizeof S->status, "%d device%s, driver %d.%d:", n, n == 1 ? "" : "s",
                                  S->driver_version / 1000, S->driver_version % 1000 / 10);
    for (int i = 0; i < n; i++) {
        cu_device *d = &devs[i];
        int major = 0, minor = 0;
        pthread_mutex_init(&d->lock, NULL);
        pthread_mutex_init(&d->stage_lock, NULL);
        if (S->cu.cuDeviceGet(&d->dev, i) || S->cu.cuDeviceGetName(d->name, (int)sizeof d->name, d->dev) ||
            S->cu.cuDeviceTotalMem(&d->total_memory, d->dev) ||
            S->cu.cuDeviceGetAttribute(&d->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev) ||
            S->cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev) ||
            S->cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev)) {
            fmt(S->status, sizeof S->status, "cannot query GPU %d", i);
            free(devs);
            return;
        }
        d->cc = 10 * major + minor;
        if (len < sizeof S->status)
            len += (size_t)snprintf(S->status + len, sizeof S->status - len, "%s %d: %s (sm_%d, %d SMs)", i ? ";" : "",
                                    i, d->name, d->cc, d->sms);
    }
    S->devs = devs;
    S->ndevices = n;
}

static unsigned env_uint(cu_state *S, const char *name)
{
    const char *v = env(S, name);
    return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

nnk_status cu_init(const nnk_host_api *host, const char *ext, cu_state **out)
{
    cu_state *S = calloc(1, sizeof *S);
    if (!S)
        return host->set_error(NNK_ENOMEM, "%s: out of memory", ext);
    S->host = host;
    S->ext = ext;
    pthread_mutex_init(&S->nvrtc_lock, NULL);
    pthread_mutex_init(&S->mod_lock, NULL);
    pthread_mutex_init(&S->gate_lock, NULL);
    pthread_cond_init(&S->gate_cv, NULL);
    S->block = env_uint(S, "NNK_CUDA_BLOCK");
    S->max_grid = env_uint(S, "NNK_CUDA_MAX_GRID");
    S->force = (int)env_uint(S, "NNK_CUDA_FORCE");
    S->parts = (int)env_uint(S, "NNK_CUDA_PARTS");
    /* Contraction of a * b + c into one FMA is an explicit opt-in: without
     * it the GPU rounds every operation as the C back end does
     * (-ffp-contract=off), bit for bit where the math is the same. */
    S->fmad = env_uint(S, "NNK_CUDA_FMAD") != 0;
    /* NNK_CUDA_PTX=1: JIT to PTX the driver compiles, never cubins (the
     * fallback for drivers that refuse NVRTC's cubins, on demand: tests) */
    S->force_ptx = env_uint(S, "NNK_CUDA_PTX") != 0;
    if ((S->block && (S->block % 32 || S->block > NNK_CUDA_BLOCK)) || S->force > 6 || S->parts > 65535) {
        free(S);
        return host->set_error(NNK_EINVAL,
                               "%s: NNK_CUDA_BLOCK must be a multiple of 32 up to %d, NNK_CUDA_FORCE 0..6, "
                               "NNK_CUDA_PARTS 0..65535",
                               ext, NNK_CUDA_BLOCK);
    }
    load_driver(S);
    *out = S;
    return NNK_OK;
}

static void unload_modules(cu_state *S, bool all);

/* Frees device d's staging (its context current); the caller holds
 * stage_lock. */
static void stage_free(cu_state *S, cu_device *d)
{
    if (d->stage)
        S->cuo.cuMemFreeHost(d->stage);
    d->stage = NULL;
    d->stage_failed = false;
}

void cu_fini(cu_state *S)
{
    if (!S)
        return;
    unload_modules(S, true);
    for (int i = 0; i < S->ndevices; i++) {
        cu_device *d = &S->devs[i];
        if (d->ctx) {
            if (S->cu.cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS) {
                if (d->stream)
                    S->cu.cuStreamSynchronize(d->stream);
                stage_free(S, d);
                if (d->stream)
                    S->cu.cuStreamDestroy(d->stream);
                CUcontext c;
                S->cu.cuCtxPopCurrent(&c);
            }
            S->cu.cuDevicePrimaryCtxRelease(d->dev);
        }
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->stage_lock);
    }
    free(S->devs);
    /* libcuda and libnvrtc stay loaded: unloading them is not safe in every
     * driver version, and the process keeps using the primary contexts. */
    pthread_mutex_destroy(&S->nvrtc_lock);
    pthread_mutex_destroy(&S->mod_lock);
    pthread_mutex_destroy(&S->gate_lock);
    pthread_cond_destroy(&S->gate_cv);
    free(S);
}

static bool nvrtc_load_once(cu_state *S);

/* The line is written into a buffer of the calling thread (threads may
 * ask at once; the opencl extension does the same); it stays valid in
 * that thread until its next call. */
static _Thread_local char status_buf[2048];

const char *cu_status(cu_state *S)
{
    /* with GPUs, which NVRTC the JIT uses is worth saying before the first compile */
    if (S->ndevices > 0)
        (void)nvrtc_load_once(S);
    pthread_mutex_lock(&S->nvrtc_lock);
    size_t n = (size_t)snprintf(status_buf, sizeof status_buf, "%s", S->status);
    const int dmaj = S->driver_version / 1000, dmin = S->driver_version % 1000 / 10;
    if (S->nvrtc_tried && n < sizeof status_buf) {
        if (S->narchs > 0 && !S->nvrtc_error[0] && !S->driver_version)
            n += (size_t)snprintf(status_buf + n, sizeof status_buf - n, "; NVRTC %d.%d", S->nvrtc_major,
                                  S->nvrtc_minor);
        else if (S->narchs > 0 && !S->nvrtc_error[0])
            n += (size_t)snprintf(status_buf + n, sizeof status_buf - n, "; NVRTC %d.%d %s driver %d.%d: %s",
                                  S->nvrtc_major, S->nvrtc_minor, S->nvrtc_major > dmaj ? "newer than the" : "with the",
                                  dmaj, dmin,
                                  S->nvrtc_major > dmaj ? "cubins may not load (PTX JIT as fallback); install the "
                                                          "NVRTC of the driver's CUDA or set NNK_NVRTC"
                                                        : "cubins");
        else
            n += (size_t)snprintf(status_buf + n, sizeof status_buf - n, "; no NVRTC: %s", S->nvrtc_error);
    }
    if (S->force_ptx && n < sizeof status_buf)
        n += (size_t)snprintf(status_buf + n, sizeof status_buf - n,
                              "; PTX JIT by the driver for every kernel (NNK_CUDA_PTX=1)");
    if (S->ptx_fallbacks && n < sizeof status_buf)
        snprintf(status_buf + n, sizeof status_buf - n,
                 "; %lu module%s loaded as PTX compiled by the driver (it refused the cubin: %s)", S->ptx_fallbacks,
                 S->ptx_fallbacks == 1 ? "" : "s", S->fallback_why);
    pthread_mutex_unlock(&S->nvrtc_lock);
    return status_buf;
}

/* ---- devices -------------------------------------------------------------------- */

static nnk_status check_device(cu_state *S, int32_t d)
{
    if (d < 0 || d >= S->ndevices)
        return S->host->set_error(NNK_EINVAL, "%s: no device %d (%d devices)", S->ext, d, S->ndevices);
    return NNK_OK;
}

nnk_status cu_enter(cu_state *S, int32_t i)
{
    nnk_status s = check_device(S, i);
    if (s)
        return s;
    cu_device *d = &S->devs[i];
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!d->ctx) {
        CUcontext c = NULL;
        if ((r = S->cu.cuDevicePrimaryCtxRetain(&c, d->dev)) == CUDA_SUCCESS) {
            if ((r = S->cu.cuCtxPushCurrent(c)) == CUDA_SUCCESS) {
                /* non-blocking: the legacy default stream of other code in
                 * the process does not serialise with the extension's work */
                r = S->cu.cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
                /* scratch of split reductions in stream order when the
                 * device has memory pools; the default pool keeps what is
                 * freed (it is the cache) */
                int pools = 0;
                CUmemoryPool pool = NULL;
                if (r == CUDA_SUCCESS && S->cuo.cuMemAllocAsync && S->cuo.cuMemFreeAsync &&
                    S->cu.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d->dev) ==
                        CUDA_SUCCESS &&
                    pools) {
                    d->pools = true;
                    uint64_t keep = UINT64_MAX;
                    if (S->cuo.cuDeviceGetDefaultMemPool && S->cuo.cuMemPoolSetAttribute &&
                        S->cuo.cuDeviceGetDefaultMemPool(&pool, d->dev) == CUDA_SUCCESS)
                        S->cuo.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
                }
                CUcontext o;
                S->cu.cuCtxPopCurrent(&o);
            }
            if (r == CUDA_SUCCESS)
                d->ctx = c;
            else
                S->cu.cuDevicePrimaryCtxRelease(d->dev);
        }
    }
    pthread_mutex_unlock(&d->lock);
    if (r != CUDA_SUCCESS)
        return cu_fail(S, NNK_EDEVICE, r, "cannot set up the primary context of the GPU");
    if ((r = S->cu.cuCtxPushCurrent(d->ctx)) != CUDA_SUCCESS)
        return cu_fail(S, NNK_EDEVICE, r, "cuCtxPushCurrent");
    return NNK_OK;
}

void cu_leave(cu_state *S)
{
    CUcontext c;
    S->cu.cuCtxPopCurrent(&c);
}

nnk_status cu_get_device_count(cu_state *S, int32_t *count)
{
    *count = S->ndevices;
    return NNK_OK;
}

nnk_status cu_get_devices(cu_state *S, nnk_device_info *out, int32_t cap)
{
    for (int32_t i = 0; i < cap && i < S->ndevices; i++) {
        out[i].id = i;
        snprintf(out[i].name, sizeof out[i].name, "%s", S->devs[i].name);
        out[i].total_memory = S->devs[i].total_memory;
        out[i].host_accessible = 0;
    }
    return NNK_OK;
}

/* NVIDIA's devices; an integrated GPU (Jetson) works in host memory. */
nnk_status cu_get_device_props(cu_state *S, int32_t device, nnk_device_props *out)
{
    snprintf(out->vendor, sizeof out->vendor, "NVIDIA Corporation");
    snprintf(out->driver_version, sizeof out->driver_version, "CUDA %d.%d", S->driver_version / 1000,
             S->driver_version % 1000 / 10);
    int integrated = 0;
    out->unified_memory = device < S->ndevices && S->cu.cuDeviceGetAttribute(&integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED,
                                                                              S->devs[device].dev) == CUDA_SUCCESS
                              ? integrated != 0
                              : -1;
    return NNK_OK;
}

nnk_status cu_device_synchronize(cu_state *S, int32_t device)
{
    nnk_status s = cu_enter(S, device);
    if (s)
        return s;
    CUresult r = S->cu.cuCtxSynchronize();
    cu_leave(S);
    return r ? cu_fail(S, NNK_EDEVICE, r, "device_synchronize (an earlier kernel or copy failed)") : NNK_OK;
}

/* ---- memory ----------------------------------------------------------------------- */

nnk_status cu_mem_alloc(cu_state *S, int32_t device, size_t bytes, void **ptr)
{
    nnk_status s = cu_enter(S, device);
    if (s)
        return s;
    CUdeviceptr p = 0;
    CUresult r = S->cu.cuMemAlloc(&p, bytes);
    cu_leave(S);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return S->host->set_error(NNK_ENOMEM, "%s: out of GPU memory allocating %zu bytes on device %d", S->ext, bytes,
                                  device);
    if (r)
        return cu_fail(S, NNK_EDEVICE, r, "cuMemAlloc");
    *ptr = (void *)(uintptr_t)p;
    return NNK_OK;
}

void cu_mem_free(cu_state *S, int32_t device, void *ptr)
{
    if (cu_enter(S, device) == NNK_OK) {
        S->cu.cuMemFree((CUdeviceptr)(uintptr_t)ptr);
        cu_leave(S);
    }
}

nnk_status cu_memset_zero(cu_state *S, int32_t device, void *ptr, size_t bytes)
{
    nnk_status s = cu_enter(S, device);
    if (s)
        return s;
    CUresult r = S->cu.cuMemsetD8Async((CUdeviceptr)(uintptr_t)ptr, 0, bytes, S->devs[device].stream);
    cu_leave(S);
    return r ? cu_fail(S, NNK_EDEVICE, r, "cuMemsetD8Async") : NNK_OK;
}

/* A host<->device copy through device d's page-locked staging, in chunks
 * of half of it, double-buffered: the host copies one half while the
 * device copies the other (the stream is synchronised before a half is
 * used again).  Returns 1 when the staging took the copy (*r its result),
 * 0 when it is not there (too small a copy, a driver without
 * cuMemHostAlloc, pinning refused, or another thread's copy using it):
 * the caller copies pageable memory then. */
static int staged_copy(cu_state *S, cu_device *d, bool to_device, void *dst, const void *src, size_t bytes,
                       CUresult *r)
{
    if (bytes < CU_STAGE_MIN || !S->cuo.cuMemHostAlloc || !S->cuo.cuMemFreeHost)
        return 0;
    if (pthread_mutex_trylock(&d->stage_lock) != 0)
        return 0;
    if (!d->stage && !d->stage_failed &&
        S->cuo.cuMemHostAlloc(&d->stage, CU_STAGE_BYTES, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
        d->stage = NULL;
        d->stage_failed = true;
    }
    if (!d->stage) {
        pthread_mutex_unlock(&d->stage_lock);
        return 0;
    }
    const size_t half = CU_STAGE_BYTES / 2, nchunks = (bytes + half - 1) / half;
    char *buf[2] = {d->stage, (char *)d->stage + half};
    CUstream st = d->stream;
    *r = CUDA_SUCCESS;
    if (to_device) {
        /* fill a half, wait for the copy from it two chunks ago, queue */
        for (size_t k = 0; k < nchunks && *r == CUDA_SUCCESS; k++) {
            size_t off = k * half, n = bytes - off < half ? bytes - off : half;
            memcpy(buf[k & 1], (const char *)src + off, n);
            if (k > 0)
                *r = S->cu.cuStreamSynchronize(st);
            if (*r == CUDA_SUCCESS)
                *r = S->cu.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst + off, buf[k & 1], n, st);
        }
    } else {
        /* queue chunk k, take chunk k - 1 out while the device copies it */
        *r = S->cu.cuMemcpyDtoHAsync(buf[0], (CUdeviceptr)(uintptr_t)src, bytes < half ? bytes : half, st);
        for (size_t k = 1; k <= nchunks && *r == CUDA_SUCCESS; k++) {
            *r = S->cu.cuStreamSynchronize(st);
            if (*r == CUDA_SUCCESS && k < nchunks) {
                size_t off = k * half, n = bytes - off < half ? bytes - off : half;
                *r = S->cu.cuMemcpyDtoHAsync(buf[k & 1], (CUdeviceptr)(uintptr_t)src + off, n, st);
            }
            if (*r == CUDA_SUCCESS) {
                size_t off = (k - 1) * half, n = bytes - off < half ? bytes - off : half;
                memcpy((char *)dst + off, buf[(k - 1) & 1], n);
            }
        }
    }
    /* nothing in flight reads or writes the staging when it is released */
    CUresult rs = S->cu.cuStreamSynchronize(st);
    if (*r == CUDA_SUCCESS)
        *r = rs;
    pthread_mutex_unlock(&d->stage_lock);
    return 1;
}

nnk_status cu_copy(cu_state *S, int32_t device, nnk_copy_kind kind, void *dst, const void *src, size_t bytes)
{
    nnk_status s = cu_enter(S, device);
    if (s)
        return s;
    CUstream st = S->devs[device].stream;
    CUresult r;
    const char *what;
    switch (kind) {
    case NNK_COPY_HOST_TO_DEVICE:
        what = "copy to the GPU";
        if (staged_copy(S, &S->devs[device], true, dst, src, bytes, &r))
            break;
        r = S->cu.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, bytes, st);
        /* the host buffer may be reused on return, pinned or not */
        if (r == CUDA_SUCCESS)
            r = S->cu.cuStreamSynchronize(st);
        break;
    case NNK_COPY_DEVICE_TO_HOST:
        what = "copy from the GPU";
        if (staged_copy(S, &S->devs[device], false, dst, src, bytes, &r))
            break;
        r = S->cu.cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, bytes, st);
        if (r == CUDA_SUCCESS)
            r = S->cu.cuStreamSynchronize(st);
        break;
    case NNK_COPY_DEVICE_TO_DEVICE:
        what = "copy on the GPU";
        r = S->cu.cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, st);
        break;
    default:
        cu_leave(S);
        return S->host->set_error(NNK_EINVAL, "%s: bad copy kind %d", S->ext, (int)kind);
    }
    cu_leave(S);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return S->host->set_error(NNK_ENOMEM, "%s: out of memory in a %s of %zu bytes", S->ext, what, bytes);
    return r ? cu_fail(S, NNK_EDEVICE, r, what) : NNK_OK;
}

/* Up to three levels of a strided copy, inner first: contiguous rows (or
 * single elements), rows at a pitch, up to NNK_CU_RECTS such planes; the
 * destination's levels must nest (no two elements on one byte) and every
 * stride be positive.  Broadcasts, reversed or transposed axes take the
 * runtime's staging (negative strides too: they would need the planes'
 * order reversed, which the runtime's staging already does right). */
enum { NNK_CU_RECTS = 64 };
int cu_rect_plan(int32_t ndim, const int64_t *shape, const int64_t *ds, const int64_t *ss, size_t esize, cu_rect *r)
{
    /* the dimensions of extent > 1, inner first, those that nest in both
     * layouts merged (a contiguous array is one row) */
    int64_t sh[NNK_MAX_DIMS], dst_[NNK_MAX_DIMS], sst[NNK_MAX_DIMS];
    int nd = 0;
    if (ndim < 0 || ndim > NNK_MAX_DIMS || esize == 0 || esize > 64)
        return -1;
    const int64_t lim = (int64_t)1 << 40; /* far beyond any device: no product below overflows */
    for (int32_t d = ndim - 1; d >= 0; d--) {
        if (shape[d] < 0 || shape[d] > lim)
            return -1;
        if (shape[d] == 0) {
            *r = (cu_rect){esize, 0, esize, esize, 0, 0, 0};
            return 0;
        }
        if (shape[d] == 1)
            continue;
        if (ds[d] <= 0 || ss[d] <= 0 || ds[d] > lim || ss[d] > lim)
            return -1;
        if (nd > 0 && ds[d] == dst_[nd - 1] * sh[nd - 1] && ss[d] == sst[nd - 1] * sh[nd - 1] &&
            sh[nd - 1] <= lim / shape[d]) {
            sh[nd - 1] *= shape[d];
            continue;
        }
        sh[nd] = shape[d], dst_[nd] = ds[d], sst[nd] = ss[d];
        nd++;
    }
    *r = (cu_rect){esize, 1, esize, esize, 1, 0, 0};
    int k = 0;
    if (nd > 0 && dst_[0] == 1 && sst[0] == 1) {
        r->width = (size_t)sh[0] * esize;
        k = 1;
    }
    if (nd - k > 2)
        return -1;
    for (int level = 0; k < nd; k++, level++) {
        const int64_t dp = dst_[k] * (int64_t)esize, sp = sst[k] * (int64_t)esize;
        if (level == 0) {
            if ((size_t)dp < r->width || (size_t)sp < r->width)
                return -1;
            r->height = (size_t)sh[k];
            r->dpitch = (size_t)dp;
            r->spitch = (size_t)sp;
        } else {
            /* a plane of the destination ends before the next begins */
            if (sh[k] > NNK_CU_RECTS || dp < (int64_t)(r->dpitch * (r->height - 1) + r->width))
                return -1;
            r->count = (size_t)sh[k];
            r->dstep = dp;
            r->sstep = sp;
        }
    }
    if (r->height == 1)
        r->dpitch = r->spitch = r->width; /* one row: the pitch is unused (and must be >= the width) */
    return 0;
}

nnk_status cu_copy_strided(cu_state *S, int32_t device, int32_t ndim, const int64_t *shape, void *dst,
                           const int64_t *dst_strides, const void *src, const int64_t *src_strides, size_t esize)
{
    cu_rect rc;
    if (!S->cuo.cuMemcpy2DAsync || cu_rect_plan(ndim, shape, dst_strides, src_strides, esize, &rc))
        return NNK_EUNSUPPORTED;
    if (rc.count == 0 || rc.height == 0)
        return NNK_OK;
    /* the two regions must not overlap (the copy's order is unspecified) */
    const uintptr_t d0 = (uintptr_t)dst, s0 = (uintptr_t)src;
    const uintptr_t d1 = d0 + (rc.count - 1) * (size_t)rc.dstep + (rc.height - 1) * rc.dpitch + rc.width;
    const uintptr_t s1 = s0 + (rc.count - 1) * (size_t)rc.sstep + (rc.height - 1) * rc.spitch + rc.width;
    if (d0 < s1 && s0 < d1)
        return NNK_EUNSUPPORTED;
    nnk_status s = cu_enter(S, device);
    if (s)
        return s;
    CUresult r = CUDA_SUCCESS;
    for (size_t c = 0; c < rc.count && r == CUDA_SUCCESS; c++) {
        CUDA_MEMCPY2D m;
        memset(&m, 0, sizeof m);
        m.srcMemoryType = m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        m.srcDevice = (CUdeviceptr)(s0 + c * (size_t)rc.sstep);
        m.dstDevice = (CUdeviceptr)(d0 + c * (size_t)rc.dstep);
        m.srcPitch = rc.spitch;
        m.dstPitch = rc.dpitch;
        m.WidthInBytes = rc.width;
        m.Height = rc.height;
        r = S->cuo.cuMemcpy2DAsync(&m, S->devs[device].stream);
    }
    cu_leave(S);
    /* a pitch or width this driver refuses (it has limits of its own): the
     * runtime stages, as for any layout not done here */
    if (r == CUDA_ERROR_INVALID_VALUE)
        return NNK_EUNSUPPORTED;
    return r ? cu_fail(S, NNK_EDEVICE, r, "cuMemcpy2DAsync") : NNK_OK;
}

/* ---- NVRTC ------------------------------------------------------------------------- */

/* Headers for generated code when the toolkit's cuda_fp16.h / cuda_bf16.h
 * are not found (a machine with the driver and a libnvrtc only): the few
 * conversions the CUDA prelude uses, in PTX. */
static const char shim_fp16[] =
    "#pragma once\n"
    "struct __half { unsigned short __x; };\n"
    "static __device__ __forceinline__ __half __ushort_as_half(unsigned short i) { __half h; h.__x = i; return h; }\n"
    "static __device__ __forceinline__ unsigned short __half_as_ushort(__half h) { return h.__x; }\n"
    "static __device__ __forceinline__ float __half2float(__half h)\n"
    "{ float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h.__x)); return f; }\n"
    "static __device__ __forceinline__ __half __float2half_rn(float f)\n"
    "{ __half h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h.__x) : \"f\"(f)); return h; }\n";
static const char shim_bf16[] =
    "#pragma once\n"
    "struct __nv_bfloat16 { unsigned short __x; };\n"
    "static __device__ __forceinline__ unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }\n"
    "static __device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(float f)\n"
    "{\n"
    "    __nv_bfloat16 r;\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "    asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(r.__x) : \"f\"(f));\n"
    "#else\n"
    "    unsigned x = __float_as_uint(f);\n"
    "    r.__x = (x & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((x >> 16) | 0x40u)\n"
    "                                             : (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);\n"
    "#endif\n"
    "    return r;\n"
    "}\n";

static bool has_headers(const char *dir)
{
    char p[1200];
    fmt(p, sizeof p, "%s/cuda_fp16.h", dir);
    if (access(p, R_OK) != 0)
        return false;
    fmt(p, sizeof p, "%s/cuda_bf16.h", dir);
    return access(p, R_OK) == 0;
}

/* libnvrtc needs libnvrtc-builtins of the same version, which it dlopens
 * by name: load the one next to it first (RTLD_GLOBAL), so that a
 * toolkit outside the loader's path works. */
static void preload_builtins(const char *nvrtc_path)
{
    char dir[1024];
    fmt(dir, sizeof dir, "%s", nvrtc_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = 0;
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    struct dirent *e;
    char best[512] = "";
    while ((e = readdir(dp))) {
        const char *n = e->d_name;
        if (strncmp(n, "libnvrtc-builtins.so.", 21) == 0 && strlen(n) < sizeof best && strcmp(n, best) > 0)
            fmt(best, sizeof best, "%s", n);
    }
    closedir(dp);
    if (*best) {
        char p[1600];
        fmt(p, sizeof p, "%s/%s", dir, best);
        dlopen(p, RTLD_NOW | RTLD_GLOBAL);
    }
}

static void *try_nvrtc(cu_state *S, const char *lib, size_t *len)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h && *len < sizeof S->nvrtc_error) {
        const char *e = dlerror();
        *len += (size_t)snprintf(S->nvrtc_error + *len, sizeof S->nvrtc_error - *len, "\n  %s", e ? e : lib);
    }
    return h;
}

static nnk_status load_nvrtc(cu_state *S)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
    const char *homes[] = {env(S, "NNK_CUDA_HOME"), NNK_CUDA_HOME, env(S, "CUDA_HOME"), env(S, "CUDA_PATH"),
                           "/usr/local/cuda"};
    size_t len = (size_t)snprintf(S->nvrtc_error, sizeof S->nvrtc_error, "NVRTC not found; tried:");
    const char *path = env(S, "NNK_NVRTC");
    if (path) {
        preload_builtins(path);
        S->libnvrtc = try_nvrtc(S, path, &len);
    }
    /* first the NVRTCs whose CUDA major version the driver has (its
     * cubins load: minor version compatibility), then any */
    static const int majors[] = {13, 12, 11, 0};
    const int driver_major = S->driver_version / 1000;
    for (int pass = 0; pass < 2 && !path && !S->libnvrtc; pass++) {
        for (size_t i = 0; !S->libnvrtc && i < sizeof homes / sizeof *homes; i++) {
            if (!homes[i] || !*homes[i])
                continue;
            for (size_t j = 0; !S->libnvrtc && j < sizeof names / sizeof *names; j++) {
                bool fits = !driver_major || (majors[j] && majors[j] <= driver_major);
                if (fits != (pass == 0))
                    continue;
                char p[1100];
                for (int lib64 = 1; lib64 >= 0 && !S->libnvrtc; lib64--) {
                    fmt(p, sizeof p, "%s/%s/%s", homes[i], lib64 ? "lib64" : "lib", names[j]);
                    if (access(p, R_OK) == 0) {
                        preload_builtins(p);
                        S->libnvrtc = try_nvrtc(S, p, &len);
                    }
                }
            }
        }
        for (size_t j = 0; !S->libnvrtc && j < sizeof names / sizeof *names; j++) {
            bool fits = !driver_major || (majors[j] && majors[j] <= driver_major);
            if (fits == (pass == 0) && (S->libnvrtc = try_nvrtc(S, names[j], &len)))
                preload_builtins(loaded_path(S->libnvrtc));
        }
    }
    if (!S->libnvrtc)
        return NNK_ECOMPILE;
#define NNK_X(name, sym, ret, args)                                                                         \
    if (!(*(void **)&S->nv.name = dlsym(S->libnvrtc, sym))) {                                                  \
        fmt(S->nvrtc_error, sizeof S->nvrtc_error, "%s lacks %s (NVRTC older than 11.2?)",                    \
            loaded_path(S->libnvrtc), sym);                                                                \
        return NNK_ECOMPILE;                                                                               \
    }
    NNK_NVRTC_FUNCTIONS(NNK_X)
#undef NNK_X
    S->nv.nvrtcVersion(&S->nvrtc_major, &S->nvrtc_minor);
    int n = 0;
    if (S->nv.nvrtcGetNumSupportedArchs(&n) || n <= 0 || n > 64) {
        fmt(S->nvrtc_error, sizeof S->nvrtc_error, "NVRTC %d.%d reports no GPU architectures", S->nvrtc_major,
            S->nvrtc_minor);
        return NNK_ECOMPILE;
    }
    S->nv.nvrtcGetSupportedArchs(S->archs);
    S->narchs = n;
    /* cuda_fp16.h: the toolkit's include directory, else the built-in shims */
    char dir[1100];
    fmt(dir, sizeof dir, "%s", loaded_path(S->libnvrtc));
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        size_t dl = strlen(dir);
        fmt(dir + dl, sizeof dir - dl, "/../include");
    }
    const char *cands[] = {env(S, "NNK_CUDA_HOME"), NNK_CUDA_HOME, env(S, "CUDA_HOME"), env(S, "CUDA_PATH"),
                           slash ? dir : NULL, "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof cands / sizeof *cands && !S->include_dir[0]; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        char inc[1100];
        fmt(inc, sizeof inc, "%s%s", cands[i], cands[i] == dir ? "" : "/include");
        if (has_headers(inc))
            fmt(S->include_dir, sizeof S->include_dir, "%s", inc);
    }
    S->nvrtc_error[0] = 0;
    return NNK_OK;
}

static bool nvrtc_load_once(cu_state *S)
{
    pthread_mutex_lock(&S->nvrtc_lock);
    if (!S->nvrtc_tried) {
        S->nvrtc_tried = true;
        if (load_nvrtc(S) != NNK_OK && !S->nvrtc_error[0])
            fmt(S->nvrtc_error, sizeof S->nvrtc_error, "NVRTC could not be loaded");
    }
    bool ok = S->narchs > 0 && !S->nvrtc_error[0];
    pthread_mutex_unlock(&S->nvrtc_lock);
    return ok;
}

nnk_status cu_nvrtc_ready(cu_state *S)
{
    bool ok = nvrtc_load_once(S);
    return ok ? NNK_OK
              : S->host->set_error(NNK_ECOMPILE, "%s: cannot compile CUDA: %s (set NNK_NVRTC to libnvrtc's path)",
                                   S->ext, S->nvrtc_error);
}

/* ---- modules ------------------------------------------------------------------------- */

static const char *const suffixes[CU_NSUFFIX] = {"ew_c",    "ew_c64",  "ew_s",   "rd_block", "rd_thread",
                                                 "rd_part", "rd_fin", "rd_epi", "rd_warp",  "rd_row",
                                                 "rd_srow"};

static nnk_status module_load_relaxed(cu_state *S, int32_t d, const void *image, const char *prefix, int reduction,
                                      bool ptx, cu_module *m, CUresult *load_error);

/* The dynamic shared memory NAME__rd_srow may take on device d: without
 * the opt-in, 48 KB less its static shared memory; with it (the driver's
 * cuFuncSetAttribute and the device's opt-in limit, 227 KB on sm_90), the
 * kernel's attribute is raised to that limit less the static part, once
 * at load.  0 without the kernel or the driver's functions. */
static void srow_limit(cu_state *S, int32_t d, cu_module *m)
{
    CUfunction f = m->fn[CU_NSUFFIX - 1];
    int stat = 0, optin = 0;
    m->srow_shared = 0;
    if (!f || !S->cuo.cuFuncGetAttribute ||
        S->cuo.cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) != CUDA_SUCCESS || stat < 0 ||
        stat >= 48 * 1024)
        return;
    m->srow_shared = (size_t)(48 * 1024 - stat);
    if (S->cuo.cuFuncSetAttribute &&
        S->cu.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN_, S->devs[d].dev) ==
            CUDA_SUCCESS &&
        optin > 48 * 1024 && optin - stat > (int)m->srow_shared &&
        S->cuo.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - stat) == CUDA_SUCCESS)
        m->srow_shared = (size_t)(optin - stat);
}

/* Loads an image into device d's primary context (pushed by the caller). */
static nnk_status module_load(cu_state *S, int32_t d, const void *image, const char *prefix, int reduction,
                              bool ptx, cu_module **out, CUresult *load_error)
{
    cu_module *m = calloc(1, sizeof *m);
    if (!m)
        return S->host->set_error(NNK_ENOMEM, "%s: out of memory", S->ext);
    /* A first NAME_cuda may come while the caller captures a stream: this
     * thread may then load the module and read NAME__cu_sizes (relaxed
     * capture mode), through the extension's own non-blocking stream,
     * which nobody captures, never the legacy stream. */
    int mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    bool relaxed = S->cuo.cuThreadExchangeStreamCaptureMode &&
                   S->cuo.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
    nnk_status st = module_load_relaxed(S, d, image, prefix, reduction, ptx, m, load_error);
    if (relaxed)
        S->cuo.cuThreadExchangeStreamCaptureMode(&mode);
    if (st)
        return st;
    *out = m;
    return NNK_OK;
}

static nnk_status module_load_relaxed(cu_state *S, int32_t d, const void *image, const char *prefix, int reduction,
                                      bool ptx, cu_module *m, CUresult *load_error)
{
    CUresult r = S->cu.cuModuleLoadData(&m->mod, image);
    if (load_error)
        *load_error = r;
    if (r != CUDA_SUCCESS) {
        free(m);
        char what[512];
        fmt(what, sizeof what, "loading the %s of %s on GPU %d (sm_%d)%s", ptx ? "PTX" : "CUDA code", prefix, d,
            S->devs[d].cc, ptx ? "; the driver may be older than NVRTC" : "");
        return cu_fail(S, NNK_EDEVICE, r, what);
    }
    m->device = d;
    m->ctx = S->devs[d].ctx;
    m->reduction = reduction;
    fmt(m->prefix, sizeof m->prefix, "%s", prefix);
    int found = 0;
    for (int i = 0; i < CU_NSUFFIX; i++) {
        char name[200];
        fmt(name, sizeof name, "%s__%s", prefix, suffixes[i]);
        if (S->cu.cuModuleGetFunction(&m->fn[i], m->mod, name) != CUDA_SUCCESS)
            m->fn[i] = NULL;
        found += m->fn[i] != NULL;
    }
    if (!found) {
        S->cu.cuModuleUnload(m->mod);
        free(m);
        return S->host->set_error(NNK_EINVAL, "%s: the CUDA code has no kernels named %s__*", S->ext, prefix);
    }
    srow_limit(S, d, m);
    {
        /* kernels that read raw parameters or index(d) say so by this symbol */
        char name[200];
        CUdeviceptr p = 0;
        size_t bytes = 0;
        fmt(name, sizeof name, "%s__cu_raw", prefix);
        m->raw = S->cu.cuModuleGetGlobal(&p, &bytes, m->mod, name) == CUDA_SUCCESS;
    }
    if (reduction) {
        char name[200];
        fmt(name, sizeof name, "%s__cu_sizes", prefix);
        CUdeviceptr p = 0;
        size_t bytes = 0;
        int32_t buf[66] = {0};
        r = S->cu.cuModuleGetGlobal(&p, &bytes, m->mod, name);
        if (r == CUDA_SUCCESS && bytes >= 8 && bytes <= sizeof buf &&
            (r = S->cu.cuMemcpyDtoHAsync(buf, p, bytes, S->devs[d].stream)) == CUDA_SUCCESS)
            r = S->cu.cuStreamSynchronize(S->devs[d].stream);
        if (r != CUDA_SUCCESS || bytes < 8 || bytes > sizeof buf || buf[0] < 0 || buf[0] > 64 ||
            (size_t)(2 + buf[0]) * 4 > bytes) {
            S->cu.cuModuleUnload(m->mod);
            free(m);
            if (r != CUDA_SUCCESS)
                return cu_fail(S, NNK_EDEVICE, r, "reading the reduction sizes (NAME__cu_sizes)");
            return S->host->set_error(NNK_EINVAL, "%s: bad %s in the CUDA code", S->ext, name);
        }
        m->sizes.nphases = buf[0];
        m->sizes.finals_size = buf[1];
        for (int i = 0; i < buf[0]; i++)
            m->sizes.state_size[i] = buf[2 + i];
        /* the flags after the states (code from older nnkc has none) */
        m->argmax = (size_t)(3 + buf[0]) * 4 <= bytes && (buf[2 + buf[0]] & 1);
        m->sizes.row_slots = (size_t)(3 + buf[0]) * 4 <= bytes ? (buf[2 + buf[0]] >> 8) & 0xff : 0;
        m->sizes.row_bytes = (size_t)(3 + buf[0]) * 4 <= bytes ? (buf[2 + buf[0]] >> 16) & 0xff : 0;
        m->sizes.row_inputs = (size_t)(3 + buf[0]) * 4 <= bytes ? (buf[2 + buf[0]] >> 24) & 0xf : 0;
    }
    m->refs = 1;
    return NNK_OK;
}

static void unload_modules(cu_state *S, bool all)
{
    pthread_mutex_lock(&S->mod_lock);
    for (cu_module **p = &S->modules; *p;) {
        cu_module *m = *p;
        if (m->refs > 0 && !all) {
            p = &m->next;
            continue;
        }
        *p = m->next;
        if (S->cu.cuCtxPushCurrent && S->cu.cuCtxPushCurrent(m->ctx) == CUDA_SUCCESS) {
            S->cu.cuModuleUnload(m->mod);
            cu_leave(S);
        }
        free(m);
    }
    pthread_mutex_unlock(&S->mod_lock);
}

nnk_status cu_clear_memory_cache(cu_state *S)
{
    unload_modules(S, false);
    /* the staging goes too (a copy using it finishes first: the lock), and
     * a device that would not pin it is asked again */
    for (int i = 0; i < S->ndevices; i++) {
        cu_device *d = &S->devs[i];
        pthread_mutex_lock(&d->stage_lock);
        if (d->stage && S->cu.cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS) {
            stage_free(S, d);
            cu_leave(S);
        }
        d->stage_failed = false;
        pthread_mutex_unlock(&d->stage_lock);
    }
    return NNK_OK;
}

/* With mod_lock held: a loaded module with this key or image. */
static cu_module *find_module(cu_state *S, int32_t d, const char *key, const void *image, CUcontext ctx)
{
    for (cu_module *m = S->modules; m; m = m->next)
        if (m->device == d && m->ctx == ctx && (key ? strcmp(m->key, key) == 0 : m->image == image))
            return m;
    return NULL;
}

static nnk_status make_kernel(cu_state *S, cu_module *m, int32_t reduce_op, nnk_ext_kernel *out)
{
    cu_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        pthread_mutex_lock(&S->mod_lock);
        m->refs--;
        pthread_mutex_unlock(&S->mod_lock);
        return S->host->set_error(NNK_ENOMEM, "%s: out of memory", S->ext);
    }
    k->m = m;
    k->reduce_op = reduce_op;
    out->handle = k;
    return NNK_OK;
}

void cu_kernel_free(cu_state *S, nnk_ext_kernel *k)
{
    cu_kernel *ck = k ? k->handle : NULL;
    if (!ck)
        return;
    pthread_mutex_lock(&S->mod_lock);
    ck->m->refs--; /* the module stays cached until clear_memory_cache or fini */
    pthread_mutex_unlock(&S->mod_lock);
    free(ck);
    k->handle = NULL;
}

/* ---- the JIT ------------------------------------------------------------------------------ */

/* The part of an NVRTC log that points into the source: "name(LINE): error". */
static void quote_line(const char *log, const char *src, char *out, size_t n)
{
    out[0] = 0;
    const char *p = strstr(log, "): error");
    if (!p)
        return;
    const char *q = p;
    while (q > log && q[-1] >= '0' && q[-1] <= '9')
        q--;
    if (q == p || q == log || q[-1] != '(')
        return;
    long line = strtol(q, NULL, 10);
    const char *l = src;
    for (long i = 1; i < line && l; i++) {
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    if (!l)
        return;
    const char *e = strchr(l, '\n');
    int len = e ? (int)(e - l) : (int)strlen(l);
    while (len > 0 && (*l == ' ' || *l == '\t'))
        l++, len--;
    fmt(out, n, "line %ld of the generated CUDA: %.*s", line, len > 300 ? 300 : len, l);
}

/* Keeps a source that failed to compile, for the line numbers of the log,
 * when NNK_CUDA_KEEP_SOURCE=1 asks (otherwise every failed compile would
 * leave a file behind): a new file with an unpredictable name (mkstemps:
 * O_CREAT|O_EXCL, mode 0600), so a link planted in a shared $TMPDIR cannot
 * redirect it. */
static void keep_source(cu_state *S, const char *key, const char *src, char *path, size_t n)
{
    const char *want = env(S, "NNK_CUDA_KEEP_SOURCE");
    if (!want || strcmp(want, "1") != 0) {
        fmt(path, n, "not kept; NNK_CUDA_KEEP_SOURCE=1 keeps it");
        return;
    }
    const char *tmp = env(S, "TMPDIR");
    fmt(path, n, "%s/nnk-cuda-%.16s-XXXXXX.cu", tmp && *tmp ? tmp : "/tmp", key);
    int fd = mkostemps(path, 3, O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f || fputs(src, f) < 0) {
        int e = errno;
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
        if (fd >= 0)
            unlink(path);
        fmt(path, n, "(not kept: %s)", strerror(e));
        return;
    }
    fclose(f);
}

/* How src is compiled for device d (NVRTC ready): a cubin for the
 * device's arch, or PTX of the newest arch NVRTC knows when the GPU is
 * newer still; and the cache key of the result. */
typedef struct jit_job {
    char arch[64], inc[1200];
    const char *opts[10];
    int nopts;
    char settings[1400];         /* the options, one string: the settings gate's key */
    bool ptx;
    bool syntax_only;            /* opt_level -1: the front end only (compile checks) */
    char key[65];
} jit_job;

static nnk_status jit_setup(cu_state *S, int cc, const char *src, const char *prefix, int32_t opt_level, bool want_ptx,
                            jit_job *j)
{
    int best = 0;
    bool direct = false;
    for (int i = 0; i < S->narchs; i++) {
        direct |= S->archs[i] == cc;
        if (S->archs[i] > best)
            best = S->archs[i];
    }
    if (!direct && cc < best)
        return S->host->set_error(NNK_EUNSUPPORTED, "%s: NVRTC %d.%d cannot compile for sm_%d: it supports sm_%d to sm_%d",
                                  S->ext, S->nvrtc_major, S->nvrtc_minor, cc, S->archs[0], best);
    j->ptx = !direct || want_ptx;
    fmt(j->arch, sizeof j->arch, "--gpu-architecture=%s_%d", j->ptx ? "compute" : "sm", direct ? cc : best);
    fmt(j->inc, sizeof j->inc, "-I%s", S->include_dir);
    j->nopts = 0;
    j->opts[j->nopts++] = j->arch;
    j->opts[j->nopts++] = "-std=c++17";
    j->opts[j->nopts++] = S->fmad ? "--fmad=true" : "--fmad=false";
    if (S->include_dir[0])
        j->opts[j->nopts++] = j->inc;
    /* opt_level 0: ptxas without optimisation.  Never --Ofast-compile=max
     * or =mid: with NVRTC 13.0 either leaves state in the process that
     * changes every later compile, in any thread and with any options
     * (after one =max compile, the full-optimisation PTX of rd_row kernels
     * holds local memory); -Xptxas=-O0, =min and the front end only leave
     * none (docs/cuda-backend.md, "JIT"; test_cuda test_jit_gate).
     * nvrtc_check sets ofast_max for its cubin round, after its lint. */
    if (opt_level == 0)
        j->opts[j->nopts++] = S->ofast_max && (S->nvrtc_major > 12 || (S->nvrtc_major == 12 && S->nvrtc_minor >= 8))
                                  ? "--Ofast-compile=max"
                                  : "-Xptxas=-O0";
    j->syntax_only = opt_level < 0;
    if (j->syntax_only)
        j->opts[j->nopts++] = "--fdevice-syntax-only";
    /* the gate's key: the options but the arch and the headers */
    size_t sl = 0;
    j->settings[0] = 0;
    for (int i = 0; i < j->nopts && sl < sizeof j->settings; i++)
        if (j->opts[i] != j->arch && j->opts[i] != j->inc)
            sl += (size_t)snprintf(j->settings + sl, sizeof j->settings - sl, "%s\n", j->opts[i]);
    /* the key: everything that decides the code */
    size_t slen = strlen(src);
    char *kbuf = malloc(slen + 2048);
    if (!kbuf)
        return S->host->set_error(NNK_ENOMEM, "%s: out of memory", S->ext);
    size_t kl = (size_t)snprintf(kbuf, 2048, "nnk-cuda-jit 1\nnvrtc %d.%d\nheaders %s\n", S->nvrtc_major,
                                 S->nvrtc_minor, S->include_dir[0] ? S->include_dir : "(built-in)");
    for (int i = 0; i < j->nopts && kl < 1900; i++)
        kl += (size_t)snprintf(kbuf + kl, 2048 - kl, "%s\n", j->opts[i]);
    kl += (size_t)snprintf(kbuf + kl, 2048 - kl, "%.200s\n", prefix);
    memcpy(kbuf + kl, src, slen);
    S->host->sha256_hex(kbuf, kl + slen, j->key);
    free(kbuf);
    return NNK_OK;
}

/* The settings gate.  NVRTC keeps state of a compile's options in the
 * process (13.0's --Ofast-compile=max changes every compile after it, so
 * jit_setup never passes it), and compiles with different optimisation
 * settings side by side are not known to be safe either.  Compiles with
 * the same options but the arch and the headers (jit_job's settings) run
 * together, as many as the threads that ask; a compile with other options
 * waits until those running end.  The first compile
 * to wait names the next group (gate_next); while one is named, a compile
 * with the running options waits too, so neither group starves. */
static void gate_enter(cu_state *S, const char *set)
{
    pthread_mutex_lock(&S->gate_lock);
    bool waited = false;
    for (;;) {
        if (S->gate_active == 0 && (!S->gate_next[0] || strcmp(S->gate_next, set) == 0)) {
            fmt(S->gate_set, sizeof S->gate_set, "%s", set);
            S->gate_next[0] = 0;
            break;
        }
        if (S->gate_active > 0 && !S->gate_next[0] && strcmp(S->gate_set, set) == 0)
            break;
        if (!S->gate_next[0] && strcmp(S->gate_set, set) != 0)
            fmt(S->gate_next, sizeof S->gate_next, "%s", set);
        waited = true;
        pthread_cond_wait(&S->gate_cv, &S->gate_lock);
    }
    S->gate_active++;
    S->gate_waits += waited;
    S->compiles++;
    pthread_mutex_unlock(&S->gate_lock);
}

static void gate_leave(cu_state *S)
{
    pthread_mutex_lock(&S->gate_lock);
    if (--S->gate_active == 0)
        pthread_cond_broadcast(&S->gate_cv);
    pthread_mutex_unlock(&S->gate_lock);
}

/* The code of a job: from the disk cache, else from NVRTC (then stored). */
static nnk_status nvrtc_compile(cu_state *S, const char *src, const char *prefix, const jit_job *j, char **image,
                                size_t *size)
{
    const char *suffix = j->ptx ? ".ptx" : ".cubin";
    void *data = NULL;
    size_t n = 0;
    if (!j->syntax_only && S->host->size >= offsetof(nnk_host_api, cache_load) + sizeof S->host->cache_load &&
        S->host->cache_load(j->key, suffix, &data, &n) == NNK_OK) {
        pthread_mutex_lock(&S->gate_lock);
        S->disk_hits++;
        pthread_mutex_unlock(&S->gate_lock);
        *image = data;
        *size = n;
        return NNK_OK;
    }
    const char *key = j->key;
    const char *const *opts = j->opts;
    int nopts = j->nopts;
    const char *arch = j->arch;
    bool ptx = j->ptx;
    char name[160];
    fmt(name, sizeof name, "%s.cu", prefix);
    nvrtcProgram prog = NULL;
    const char *hdrs[2] = {shim_fp16, shim_bf16}, *hnames[2] = {"cuda_fp16.h", "cuda_bf16.h"};
    nvrtcResult r = S->nv.nvrtcCreateProgram(&prog, src, name, S->include_dir[0] ? 0 : 2, hdrs, hnames);
    if (r)
        return S->host->set_error(NNK_ECOMPILE, "%s: nvrtcCreateProgram: %s", S->ext, S->nv.nvrtcGetErrorString(r));
    gate_enter(S, j->settings);
    r = S->nv.nvrtcCompileProgram(prog, nopts, (const char *const *)opts);
    gate_leave(S);
    if (r) {
        size_t ln = 0;
        char *log = NULL;
        if (S->nv.nvrtcGetProgramLogSize(prog, &ln) == 0 && (log = malloc(ln + 1)) &&
            S->nv.nvrtcGetProgramLog(prog, log) == 0)
            log[ln] = 0;
        char where[512], kept[1200];
        quote_line(log ? log : "", src, where, sizeof where);
        keep_source(S, key, src, kept, sizeof kept);
        nnk_status s = S->host->set_error(
            NNK_ECOMPILE, "%s: NVRTC %d.%d failed to compile the CUDA of %s for %s (%s)%s%s\n%s\n(the generated source is %s)",
            S->ext, S->nvrtc_major, S->nvrtc_minor, prefix, arch + 19, S->nv.nvrtcGetErrorString(r), *where ? "; " : "",
            where, log ? log : "(no log)", kept);
        free(log);
        S->nv.nvrtcDestroyProgram(&prog);
        return s;
    }
    if (j->syntax_only) {
        S->nv.nvrtcDestroyProgram(&prog);
        *image = NULL;
        *size = 0;
        return NNK_OK;
    }
    n = 0;
    r = ptx ? S->nv.nvrtcGetPTXSize(prog, &n) : S->nv.nvrtcGetCUBINSize(prog, &n);
    char *out = r || n == 0 ? NULL : malloc(n);
    if (out)
        r = ptx ? S->nv.nvrtcGetPTX(prog, out) : S->nv.nvrtcGetCUBIN(prog, out);
    S->nv.nvrtcDestroyProgram(&prog);
    if (!out || r) {
        free(out);
        return S->host->set_error(NNK_ECOMPILE, "%s: NVRTC produced no %s", S->ext, ptx ? "PTX" : "cubin");
    }
    if (S->host->size >= offsetof(nnk_host_api, cache_store) + sizeof S->host->cache_store)
        S->host->cache_store(key, suffix, out, n);
    *image = out;
    *size = n;
    return NNK_OK;
}

static nnk_status jit(cu_state *S, int cc, const char *src, const char *prefix, int32_t opt_level, bool want_ptx,
                      char **image, size_t *size, bool *ptx, char key[65])
{
    jit_job j;
    nnk_status s = cu_nvrtc_ready(S);
    if (s || (s = jit_setup(S, cc, src, prefix, opt_level, want_ptx, &j)))
        return s;
    *ptx = j.ptx;
    memcpy(key, j.key, 65);
    return nvrtc_compile(S, src, prefix, &j, image, size);
}

nnk_status cu_jit(cu_state *S, int cc, const char *src, const char *prefix, int32_t opt_level, char **image,
                  size_t *size, bool *ptx, char key[65])
{
    return jit(S, cc, src, prefix, opt_level, false, image, size, ptx, key);
}

nnk_status cu_jit_ptx(cu_state *S, int cc, const char *src, const char *prefix, int32_t opt_level, char **ptx,
                      size_t *size)
{
    bool is_ptx;
    char key[65];
    return jit(S, cc, src, prefix, opt_level, true, ptx, size, &is_ptx, key);
}

/* The instance name: the descriptor symbol without "__desc". */
static void prefix_of(const char *symbol, char *out, size_t n)
{
    fmt(out, n, "%s", symbol ? symbol : "kernel");
    size_t l = strlen(out);
    if (l > 6 && strcmp(out + l - 6, "__desc") == 0)
        out[l - 6] = 0;
}

nnk_status cu_kernel_compile(cu_state *S, int32_t device, const nnk_kernel_source *src, nnk_ext_kernel *out)
{
    if (src->target != NNK_TARGET_CUDA)
        return S->host->set_error(NNK_EUNSUPPORTED, "%s compiles CUDA only", S->ext);
    if (!src->interface)
        return S->host->set_error(NNK_EUNSUPPORTED,
                                  "%s: source without an interface (nnk_kernel_from_source) is not supported: "
                                  "use a module or a linked descriptor",
                                  S->ext);
    nnk_status s = check_device(S, device);
    if (s || (s = cu_nvrtc_ready(S)))
        return s;
    char prefix[128];
    prefix_of(src->symbol, prefix, sizeof prefix);
    jit_job j;
    if ((s = jit_setup(S, S->devs[device].cc, src->text, prefix, src->opt_level, S->force_ptx, &j)) ||
        (s = cu_enter(S, device)))
        return s;
    CUcontext ctx = S->devs[device].ctx;
    pthread_mutex_lock(&S->mod_lock);
    cu_module *m = find_module(S, device, j.key, NULL, ctx);
    if (m) {
        m->refs++;
        S->memory_hits++;
    }
    pthread_mutex_unlock(&S->mod_lock);
    char *image = NULL;
    size_t size = 0;
    CUresult lr = CUDA_SUCCESS;
    const int red = src->interface->kind == NNK_KIND_REDUCTION;
    char key0[65]; /* the module is cached under the cubin's key, whatever was loaded */
    memcpy(key0, j.key, 65);
    if (!m && !(s = nvrtc_compile(S, src->text, prefix, &j, &image, &size)))
        s = module_load(S, device, image, prefix, red, j.ptx, &m, &lr);
    if (s && !j.ptx &&
        (lr == CUDA_ERROR_INVALID_IMAGE || lr == CUDA_ERROR_NO_BINARY_FOR_GPU ||
         lr == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)) {
        /* the driver refused NVRTC's cubin (a driver older than NVRTC):
         * PTX for the device's arch, which the driver compiles itself */
        char e[256], why[256];
        fmt(why, sizeof why, "%s", cu_error_text(S, lr, e, sizeof e));
        free(image);
        image = NULL;
        if (!(s = jit_setup(S, S->devs[device].cc, src->text, prefix, src->opt_level, true, &j)) &&
            !(s = nvrtc_compile(S, src->text, prefix, &j, &image, &size)) &&
            !(s = module_load(S, device, image, prefix, red, true, &m, NULL))) {
            pthread_mutex_lock(&S->nvrtc_lock);
            if (!S->ptx_fallbacks++)
                fmt(S->fallback_why, sizeof S->fallback_why, "%s", why);
            pthread_mutex_unlock(&S->nvrtc_lock);
        }
    }
    if (!s && m && !m->key[0]) {
        memcpy(m->key, key0, 65);
        pthread_mutex_lock(&S->mod_lock);
        cu_module *other = find_module(S, device, key0, NULL, ctx);
        if (other) { /* another thread loaded it meanwhile */
            other->refs++;
            S->cu.cuModuleUnload(m->mod);
            free(m);
            m = other;
        } else {
            m->next = S->modules;
            S->modules = m;
        }
        pthread_mutex_unlock(&S->mod_lock);
    }
    cu_leave(S);
    free(image);
    if (s)
        return s;
    int32_t op = src->size >= offsetof(nnk_kernel_source, reduce_op) + sizeof src->reduce_op ? src->reduce_op
                                                                                              : NNK_REDUCE_NONE;
    out->desc = src->interface;
    return make_kernel(S, m, op, out);
}

/* A linked descriptor's image in context ctx of device d (pushed). */
static nnk_status linked_module(cu_state *S, int32_t d, CUcontext ctx, const nnk_kernel_desc *desc, cu_module **out)
{
    if (!desc->cuda_image || !desc->cuda_symbol)
        return S->host->set_error(NNK_EUNSUPPORTED,
                                  "%s: kernel '%s' has no CUDA code (its object was built with --no-cuda or without nvcc)",
                                  S->ext, desc->name ? desc->name : "?");
    pthread_mutex_lock(&S->mod_lock);
    cu_module *m = find_module(S, d, NULL, desc->cuda_image, ctx);
    if (m)
        m->refs++;
    pthread_mutex_unlock(&S->mod_lock);
    if (m)
        return *out = m, NNK_OK;
    nnk_status s = module_load(S, d, desc->cuda_image, desc->cuda_symbol, desc->kind == NNK_KIND_REDUCTION, false, &m,
                               NULL);
    if (s)
        return s;
    m->image = desc->cuda_image;
    m->ctx = ctx;
    pthread_mutex_lock(&S->mod_lock);
    m->next = S->modules;
    S->modules = m;
    pthread_mutex_unlock(&S->mod_lock);
    *out = m;
    return NNK_OK;
}

nnk_status cu_kernel_load(cu_state *S, int32_t device, const nnk_kernel_desc *desc, nnk_ext_kernel *out)
{
    nnk_status s = cu_enter(S, device);
    if (s)
        return s;
    cu_module *m = NULL;
    s = linked_module(S, device, S->devs[device].ctx, desc, &m);
    cu_leave(S);
    if (s)
        return s;
    out->desc = desc;
    return make_kernel(S, m, NNK_REDUCE_NONE, out);
}

/* ---- launches ------------------------------------------------------------------------------ */

/* Scratch of a split reduction is stream-ordered: with memory pools,
 * cuMemAllocAsync/cuMemFreeAsync on the launch's stream (the free is
 * queued behind the kernels that use it, and both are legal under stream
 * capture); without, blocks of the runtime's caching allocator, which go
 * back to the cache when the launches are queued on the extension's own
 * stream (every later user of the block queues behind them), and on a
 * caller's stream (NAME_cuda) cuMemAlloc'ed memory of its own, freed
 * after synchronising that stream, which cannot be done while the stream
 * is being captured. */
typedef struct launch_ctx {
    cu_state *S;
    cu_module *m;
    CUstream stream;
    bool defer;                  /* a foreign stream: free scratch after synchronising it */
    bool pools;                  /* stream-ordered scratch */
    bool capturing;              /* the stream is being captured */
    int32_t device;
    void *blocks[8], *ptrs[8];
    int nblocks;
    nnk_status status;
    char *err;
    size_t errlen;
} launch_ctx;

/* The index of kernel NAME__SUFFIX (or of SUFFIX alone) in suffixes[]. */
static int suffix_index(const char *name)
{
    for (int k = 0; k < CU_NSUFFIX; k++) {
        size_t sl = strlen(suffixes[k]), nl = strlen(name);
        if (strcmp(name, suffixes[k]) == 0 ||
            (nl > sl + 2 && strcmp(name + nl - sl, suffixes[k]) == 0 && name[nl - sl - 1] == '_' && name[nl - sl - 2] == '_'))
            return k;
    }
    return -1;
}

/* Code of an older nnkc has no rd_warp (nor rd_row): the dispatch then
 * takes rd_block. */
static int lc_has(void *user, const char *suffix)
{
    launch_ctx *L = user;
    int i = suffix_index(suffix);
    return i >= 0 && L->m->fn[i] != NULL;
}

static int lc_launch_shm(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, size_t shmem,
                         const nnk_cuda_args *a)
{
    launch_ctx *L = user;
    int i = suffix_index(name);
    if (i < 0 || !L->m->fn[i]) {
        fmt(L->err, L->errlen, "%s: the CUDA code has no kernel %s", L->S->ext, name);
        L->status = NNK_EINTERNAL;
        return -1;
    }
    void *params[1] = {(void *)a};
    CUresult r = L->S->cu.cuLaunchKernel(L->m->fn[i], gx, gy, 1, block, 1, 1, (unsigned)shmem, L->stream, params, NULL);
    if (r != CUDA_SUCCESS) {
        char e[256];
        fmt(L->err, L->errlen, "%s: cuLaunchKernel(%s, grid %ux%u, block %u, %zu bytes of shared memory): %s", L->S->ext,
            name, gx, gy, block, shmem, cu_error_text(L->S, r, e, sizeof e));
        L->status = r == CUDA_ERROR_OUT_OF_MEMORY ? NNK_ENOMEM : NNK_EDEVICE;
        return -1;
    }
    return 0;
}

static int lc_launch(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, const nnk_cuda_args *a)
{
    return lc_launch_shm(user, name, gx, gy, block, 0, a);
}

static void *lc_alloc(void *user, size_t bytes)
{
    launch_ctx *L = user;
    void *p = NULL, *b = NULL;
    if (L->nblocks == 8) {
        L->status = NNK_ENOMEM;
        return NULL;
    }
    if (L->pools) {
        CUdeviceptr d = 0;
        CUresult r = L->S->cuo.cuMemAllocAsync(&d, bytes ? bytes : 1, L->stream);
        if (r != CUDA_SUCCESS) {
            char e[256];
            fmt(L->err, L->errlen, "%s: cuMemAllocAsync(%zu bytes) for a split reduction: %s", L->S->ext, bytes,
                cu_error_text(L->S, r, e, sizeof e));
            L->status = r == CUDA_ERROR_OUT_OF_MEMORY ? NNK_ENOMEM : NNK_EDEVICE;
            return NULL;
        }
        L->blocks[L->nblocks] = NULL;
        L->ptrs[L->nblocks++] = (void *)(uintptr_t)d;
        return (void *)(uintptr_t)d;
    }
    if (L->capturing) {
        fmt(L->err, L->errlen,
            "%s: a split reduction on a stream under capture needs stream-ordered memory, which this device or "
            "driver lacks (memory pools, CUDA 11.2)",
            L->S->ext);
        L->status = NNK_EUNSUPPORTED;
        return NULL;
    }
    if (L->defer) {
        /* a caller's stream without pools: memory of its own (freed after
         * the stream is synchronised), never a cached block that work on
         * the extension's stream may still be using */
        CUdeviceptr d = 0;
        CUresult r = L->S->cu.cuMemAlloc(&d, bytes ? bytes : 1);
        if (r != CUDA_SUCCESS) {
            L->status = r == CUDA_ERROR_OUT_OF_MEMORY ? NNK_ENOMEM : NNK_EDEVICE;
            return NULL;
        }
        L->blocks[L->nblocks] = NULL;
        L->ptrs[L->nblocks++] = (void *)(uintptr_t)d;
        return (void *)(uintptr_t)d;
    }
    if (L->S->host->size < offsetof(nnk_host_api, block_free) + sizeof L->S->host->block_free ||
        L->S->host->block_alloc(L->S->ext, L->device, bytes, &p, &b) != NNK_OK) {
        L->status = NNK_ENOMEM;
        return NULL;
    }
    L->blocks[L->nblocks] = b;
    L->ptrs[L->nblocks++] = p;
    return p;
}

static void lc_release(void *user, void *ptr)
{
    launch_ctx *L = user;
    for (int i = 0; i < L->nblocks; i++) {
        if (L->ptrs[i] != ptr)
            continue;
        if (L->pools) {
            L->S->cuo.cuMemFreeAsync((CUdeviceptr)(uintptr_t)ptr, L->stream); /* behind the kernels */
        } else if (L->defer) {
            return; /* after the stream is synchronised */
        } else {
            L->S->host->block_free(L->blocks[i]);
            L->blocks[i] = NULL;
        }
        L->ptrs[i] = NULL;
    }
}

/* Runs module m's kernels over the plan on `stream` (the context pushed). */
static nnk_status run(cu_state *S, int32_t d, cu_module *m, const nnk_plan *plan, CUstream stream, bool defer)
{
    char err[1024] = "";
    launch_ctx lc = {.S = S, .m = m, .stream = stream, .defer = defer, .pools = S->devs[d].pools, .device = d,
                     .err = err, .errlen = sizeof err};
    int cap = CU_STREAM_CAPTURE_STATUS_NONE;
    if (defer && !lc.pools && S->cuo.cuStreamIsCapturing && S->cuo.cuStreamIsCapturing(stream, &cap) == CUDA_SUCCESS)
        lc.capturing = cap != CU_STREAM_CAPTURE_STATUS_NONE;
    nnk_cuda_launcher L;
    memset(&L, 0, sizeof L);
    L.user = &lc;
    L.launch = lc_launch;
    L.launch_shm = lc_launch_shm;
    L.max_shared = m->srow_shared;
    L.alloc = lc_alloc;
    L.release = lc_release;
    L.num_sms = S->devs[d].sms;
    L.block = S->block;
    L.max_grid = S->max_grid;
    L.force = S->force;
    L.parts = S->parts;
    L.has = lc_has;
    /* Raw parameters and index(d): the range error lives in device memory,
     * zeroed before the kernels and copied back after them into the
     * runtime's (which then reports NNK_ERANGE); the launch waits for its
     * kernels, as the C back end's does. */
    int rc = 0;
    L.raw = m->raw;
    if (m->raw && plan->range) {
        L.range = lc_alloc(&lc, sizeof *plan->range);
        CUresult r = L.range ? S->cu.cuMemsetD8Async((CUdeviceptr)(uintptr_t)L.range, 0, sizeof *plan->range, stream)
                             : CUDA_SUCCESS;
        if (!L.range)
            rc = -1;
        else if (r != CUDA_SUCCESS)
            rc = -1, lc.status = NNK_EDEVICE, fmt(err, sizeof err, "%s: cuMemsetD8Async of the range error", S->ext);
    }
    if (rc == 0)
        rc = nnk_cuda_dispatch(m->prefix, m->reduction, &m->sizes, plan, &L, err, sizeof err);
    if (L.range) {
        CUresult r = CUDA_SUCCESS;
        if (rc == 0 && (r = S->cu.cuMemcpyDtoHAsync(plan->range, (CUdeviceptr)(uintptr_t)L.range, sizeof *plan->range,
                                                    stream)) == CUDA_SUCCESS)
            r = S->cu.cuStreamSynchronize(stream);
        if (rc == 0 && r != CUDA_SUCCESS)
            rc = -1, lc.status = NNK_EDEVICE, fmt(err, sizeof err, "%s: reading the range error back", S->ext);
        lc_release(&lc, L.range);
    }
    for (int i = 0; lc.pools && i < lc.nblocks; i++)
        if (lc.ptrs[i]) /* not released (a failed dispatch) */
            S->cuo.cuMemFreeAsync((CUdeviceptr)(uintptr_t)lc.ptrs[i], stream);
    if (defer && !lc.pools && lc.nblocks) {
        CUresult r = S->cu.cuStreamSynchronize(stream);
        for (int i = 0; i < lc.nblocks; i++)
            if (lc.ptrs[i])
                S->cu.cuMemFree((CUdeviceptr)(uintptr_t)lc.ptrs[i]);
        if (r != CUDA_SUCCESS && rc == 0)
            return cu_fail(S, NNK_EDEVICE, r, "cuStreamSynchronize");
    }
    if (rc == 0)
        return NNK_OK;
    nnk_status s = lc.status ? lc.status : NNK_EUNSUPPORTED;
    return S->host->set_error(s, "%s%s%s", strncmp(err, S->ext, strlen(S->ext)) ? S->ext : "",
                              strncmp(err, S->ext, strlen(S->ext)) ? ": " : "", err);
}

nnk_status cu_launch(cu_state *S, int32_t device, const nnk_ext_kernel *k, const nnk_plan *plan)
{
    cu_kernel *ck = k->handle;
    /* linked descriptors say so themselves (the runtime checks them);
     * compiled code says it in NAME__cu_sizes */
    if (ck->m->argmax && plan->nreduced == 0 && plan->nkept > 0)
        return S->host->set_error(NNK_ESHAPE, "kernel '%s': argmax/argmin of an empty slice", ck->m->prefix);
    nnk_status s = cu_enter(S, device);
    if (s)
        return s;
    s = run(S, device, ck->m, plan, S->devs[device].stream, false);
    cu_leave(S);
    return s;
}

nnk_status cu_launch_stream(cu_state *S, const nnk_kernel_desc *desc, const nnk_plan *plan, void *stream)
{
    if (S->ndevices == 0)
        return S->host->set_error(NNK_EUNSUPPORTED, "%s has no devices: %s", S->ext, S->status);
    CUcontext cur = NULL;
    CUresult r = S->cu.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS)
        return cu_fail(S, NNK_EDEVICE, r, "cuCtxGetCurrent");
    int32_t d = 0;
    if (cur) {
        CUdevice dev;
        if ((r = S->cu.cuCtxGetDevice(&dev)) != CUDA_SUCCESS)
            return cu_fail(S, NNK_EDEVICE, r, "cuCtxGetDevice");
        for (d = 0; d < S->ndevices && S->devs[d].dev != dev; d++)
            ;
        if (d == S->ndevices)
            return S->host->set_error(NNK_EDEVICE, "%s: the current context's device is unknown", S->ext);
    }
    nnk_status s = cu_enter(S, d);
    if (s)
        return s;
    if (cur && cur != S->devs[d].ctx) {
        cu_leave(S);
        return S->host->set_error(NNK_EUNSUPPORTED,
                                  "%s: NAME_cuda runs in the primary context of the device (the CUDA runtime's); "
                                  "the calling thread has another context current",
                                  S->ext);
    }
    cu_module *m = NULL;
    if (!(s = linked_module(S, d, S->devs[d].ctx, desc, &m))) {
        s = run(S, d, m, plan, (CUstream)stream, true);
        pthread_mutex_lock(&S->mod_lock);
        m->refs--;
        pthread_mutex_unlock(&S->mod_lock);
    }
    cu_leave(S);
    return s;
}
