/* opencl_ext.c - the `opencl` extension (libnnk_ext_opencl.so): every
 * OpenCL device of every platform, through the ICD loader libOpenCL.so.1
 * loaded with dlopen (no link-time dependency).  docs/opencl.md describes
 * it; templates/opencl/plan.h (nnk_cl_plan) is the interface with the
 * generated OpenCL C, which embeds the same file.
 *
 * Without the loader, a platform or a device the extension loads and
 * reports 0 devices; status() says why.  Devices are numbered over the
 * platforms sorted by (name, vendor, version), in the order each platform
 * lists them, so the numbering does not depend on the order the loader
 * reads its vendor files in.
 *
 * Memory: OpenCL 1.2 buffers are handles, not addresses, while the runtime
 * computes with addresses (views are element offsets into a block).  Every
 * buffer therefore gets a range of "device addresses" of its own, tokens
 * the runtime never dereferences (no NNK_EXT_HOST_MEMORY): an address
 * inside the range of buffer B is (B, offset).  Ranges are 4 KiB aligned,
 * so an address's alignment is its offset's, and 4 KiB apart, so the end
 * of one never is the start of the next.
 *
 * Kernels: clBuildProgram of the generated OpenCL C, programs cached in
 * memory per (device, key) and their binaries on disk through the
 * runtime's cache (host->cache_load/cache_store: private directory,
 * verified entries, atomic writes), keyed by the SHA-256 of the source,
 * the platform, the device, its driver version and the build options.
 * Launches go through runtime/ext/cuda/dispatch.c, which picks the kernels
 * and the work split as for CUDA; kernel_names maps its kernel names to
 * the OpenCL ones (docs/opencl.md, "The kernel ABI"). */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_api.h"
#include "dispatch.h"
#include "nnk/abi.h"
#include "nnk/extension.h"
#include "../ext_common.h"
#include "opencl/plan.h"

#define EXT "opencl"
#define OCL_TOKEN_BASE ((uintptr_t)1 << 44) /* device addresses: [2^44, 2^47) */
#define OCL_TOKEN_END ((uintptr_t)1 << 47)
#define OCL_TOKEN_ALIGN ((uintptr_t)4096)
#define OCL_NSUFFIX 8
#define OCL_MAX_OPTIONS 512 /* NNK_OPENCL_OPTIONS */

/* dispatch.c's compact plan becomes nnk_cl_plan member by member */
_Static_assert(NNK_CL_MAX_DIMS == NNK_CUDA_MAX_DIMS && NNK_CL_MAX_TENSORS == NNK_CUDA_MAX_TENSORS &&
                   NNK_CL_MAX_SCALARS == NNK_CUDA_MAX_SCALARS,
               "the OpenCL and CUDA plans have the same limits");
/* the kernels' nnk_cl_range is nnk_range_error, read back as it is */
_Static_assert(sizeof(nnk_range_error) == 32 && NNK_CL_MAX_RAW == NNK_MAX_RAW && NNK_CL_MAX_ITER == NNK_MAX_DIMS,
               "the OpenCL raw views and range error match nnk/abi.h");

typedef struct cl_fns {
#define NNK_X(name, ret, args) ret(*name) args;
    NNK_CL_FUNCTIONS(NNK_X)
#undef NNK_X
} cl_fns;

typedef struct ocl_device {
    cl_platform_id platform;
    cl_device_id id;
    char name[128], vendor[128], driver[128], version[128];
    char platform_name[128], platform_vendor[128], platform_version[128];
    char *extensions;            /* the device's, space-separated, with NNK_OPENCL_HIDE_EXTENSIONS removed */
    cl_device_type type;
    cl_ulong global_mem, max_alloc;
    cl_bool unified;
    size_t max_wg;
    cl_uint units;
    bool correct_div;            /* -cl-fp32-correctly-rounded-divide-sqrt is available */
    bool own_cache;              /* the driver keeps a kernel cache of its own (PoCL) */
    int platform_index;
    /* set up at first use */
    pthread_mutex_t lock;
    bool ready;
    cl_context ctx;
    cl_command_queue queue;
    size_t used;                 /* bytes in buffers (the NNK_OPENCL_MEM_LIMIT check) */
} ocl_device;

/* A buffer and its range of device addresses. */
typedef struct ocl_block {
    uintptr_t base;
    size_t size;
    cl_mem mem;
    int32_t device;
} ocl_block;

/* A built program: the kernels of one instance on one device. */
typedef struct ocl_program {
    struct ocl_program *next;
    char key[65];
    int32_t device;
    cl_program prog;
    cl_kernel fn[OCL_NSUFFIX];
    cl_uint nargs[OCL_NSUFFIX];
    char prefix[128];
    int nops;                    /* operands the kernels take (the source's a0, a1, ...) */
    uint8_t esize[NNK_CL_MAX_TENSORS]; /* their element sizes: plan offsets are in elements */
    int reduction, argmax;
    int raw;                     /* reads raw parameters or index(d): rp_ and rng_ after the operands */
    nnk_cuda_sizes sizes;
    long refs;
    pthread_mutex_t lock;        /* clSetKernelArg + enqueue are not thread-safe on one cl_kernel */
} ocl_program;

typedef struct ocl_state {
    const nnk_host_api *host;
    void *lib;
    cl_fns cl;
    int ndevices;
    ocl_device *devs;
    char status[512];
    size_t mem_limit;            /* NNK_OPENCL_MEM_LIMIT: a smaller device, for tests */
    int force;                   /* NNK_OPENCL_FORCE: the reduction layout, as NNK_CUDA_FORCE */
    int binary_cache;            /* NNK_OPENCL_BINARY_CACHE: -1 auto (see binaries_cached), 0, 1 */
    pthread_rwlock_t mem_lock;
    ocl_block *blocks;           /* sorted by base */
    size_t nblocks, capblocks;
    pthread_mutex_t prog_lock;
    ocl_program *programs;
    unsigned long builds, disk_hits, memory_hits, rejected_binaries;
    unsigned long rect_copies;   /* strided copies done on the device */
} ocl_state;

/* dispatch.c's kernels (CUDA's names) and the OpenCL kernels that do
 * their work: NAME__ew_c takes 64-bit indices, so it is ew_c64 too. */
static const struct {
    const char *cuda, *cl;
} kernel_names[OCL_NSUFFIX] = {{"ew_c", "ew_c"},         {"ew_c64", "ew_c"},      {"ew_s", "ew_s"},
                               {"rd_block", "rd_group"}, {"rd_thread", "rd_item"}, {"rd_part", "rd_part"},
                               {"rd_fin", "rd_fin"},     {"rd_epi", "rd_epi"}};

/* ---- helpers ------------------------------------------------------------------ */

#define fmt ext_fmt /* ext_common.h */
#define env(S, name) ext_env((S)->host, name)

static const char *cl_error_name(cl_int r)
{
    static const struct { cl_int code; const char *name; } known[] = {
#define E(n, c) {c, #n},
        E(CL_DEVICE_NOT_FOUND, -1) E(CL_DEVICE_NOT_AVAILABLE, -2) E(CL_COMPILER_NOT_AVAILABLE, -3)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE, -4) E(CL_OUT_OF_RESOURCES, -5) E(CL_OUT_OF_HOST_MEMORY, -6)
        E(CL_BUILD_PROGRAM_FAILURE, -11) E(CL_INVALID_VALUE, -30) E(CL_INVALID_DEVICE, -33)
        E(CL_INVALID_CONTEXT, -34) E(CL_INVALID_COMMAND_QUEUE, -36) E(CL_INVALID_MEM_OBJECT, -38)
        E(CL_INVALID_BINARY, -42) E(CL_INVALID_BUILD_OPTIONS, -43) E(CL_INVALID_PROGRAM, -44)
        E(CL_INVALID_PROGRAM_EXECUTABLE, -45) E(CL_INVALID_KERNEL_NAME, -46) E(CL_INVALID_KERNEL, -48)
        E(CL_INVALID_ARG_INDEX, -49) E(CL_INVALID_ARG_VALUE, -50) E(CL_INVALID_ARG_SIZE, -51)
        E(CL_INVALID_KERNEL_ARGS, -52) E(CL_INVALID_WORK_DIMENSION, -53) E(CL_INVALID_WORK_GROUP_SIZE, -54)
        E(CL_INVALID_WORK_ITEM_SIZE, -55) E(CL_INVALID_GLOBAL_OFFSET, -56) E(CL_INVALID_BUFFER_SIZE, -61)
        E(CL_INVALID_GLOBAL_WORK_SIZE, -63) E(CL_PLATFORM_NOT_FOUND_KHR, -1001)
#undef E
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (known[i].code == r)
            return known[i].name;
    return "CL error";
}

static bool is_oom(cl_int r)
{
    return r == CL_MEM_OBJECT_ALLOCATION_FAILURE || r == CL_OUT_OF_RESOURCES || r == CL_OUT_OF_HOST_MEMORY ||
           r == CL_INVALID_BUFFER_SIZE;
}

static nnk_status cl_fail(ocl_state *S, nnk_status s, cl_int r, const char *what)
{
    if (is_oom(r))
        s = NNK_ENOMEM;
    return S->host->set_error(s, EXT ": %s: %s (%d)", what, cl_error_name(r), (int)r);
}

/* ---- init: platforms and devices -------------------------------------------------- */

static void info_str(ocl_state *S, cl_device_id d, cl_uint what, char *out, size_t n)
{
    out[0] = 0;
    if (S->cl.clGetDeviceInfo(d, what, n - 1, out, NULL) != CL_SUCCESS)
        out[0] = 0;
    out[n - 1] = 0;
}

static char *info_alloc(ocl_state *S, cl_device_id d, cl_uint what)
{
    size_t n = 0;
    if (S->cl.clGetDeviceInfo(d, what, 0, NULL, &n) != CL_SUCCESS || n > ((size_t)1 << 20))
        n = 0;
    char *s = calloc(n + 1, 1);
    if (s && n && S->cl.clGetDeviceInfo(d, what, n, s, NULL) != CL_SUCCESS)
        s[0] = 0;
    return s;
}

static void platform_str(ocl_state *S, cl_platform_id p, cl_uint what, char *out, size_t n)
{
    out[0] = 0;
    if (S->cl.clGetPlatformInfo(p, what, n - 1, out, NULL) != CL_SUCCESS)
        out[0] = 0;
    out[n - 1] = 0;
}

typedef struct plat_sort {
    cl_platform_id id;
    char name[128], vendor[128], version[128];
} plat_sort;

static int plat_cmp(const void *a, const void *b)
{
    const plat_sort *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (!c)
        c = strcmp(x->vendor, y->vendor);
    return c ? c : strcmp(x->version, y->version);
}

/* Removes the words of NNK_OPENCL_HIDE_EXTENSIONS from a device's list
 * (to test what happens on a device without, e.g., cl_khr_fp64). */
static void hide_extensions(ocl_state *S, char *list)
{
    const char *hide = env(S, "NNK_OPENCL_HIDE_EXTENSIONS");
    if (!hide || !list)
        return;
    char word[128];
    for (const char *h = hide; *h;) {
        size_t n = strcspn(h, " ,");
        if (n && n < sizeof word) {
            memcpy(word, h, n);
            word[n] = 0;
            for (char *p = list; (p = strstr(p, word));) {
                bool start = p == list || p[-1] == ' ', end = p[n] == 0 || p[n] == ' ';
                if (start && end)
                    memset(p, ' ', n);
                p += n;
            }
        }
        h += n;
        h += strspn(h, " ,");
    }
}

static bool has_extension(const ocl_device *d, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = d->extensions; p && (p = strstr(p, name)); p += n)
        if ((p == d->extensions || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
            return true;
    return false;
}

static void add_devices(ocl_state *S, const plat_sort *pl, int pindex, cl_device_id *ids, cl_uint n,
                        size_t *skipped)
{
    for (cl_uint i = 0; i < n; i++) {
        ocl_device *d = &S->devs[S->ndevices];
        memset(d, 0, sizeof *d);
        d->platform = pl->id;
        d->id = ids[i];
        d->platform_index = pindex;
        memcpy(d->platform_name, pl->name, sizeof d->platform_name);
        memcpy(d->platform_vendor, pl->vendor, sizeof d->platform_vendor);
        memcpy(d->platform_version, pl->version, sizeof d->platform_version);
        info_str(S, ids[i], CL_DEVICE_NAME, d->name, sizeof d->name);
        info_str(S, ids[i], CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
        info_str(S, ids[i], CL_DRIVER_VERSION, d->driver, sizeof d->driver);
        info_str(S, ids[i], CL_DEVICE_VERSION, d->version, sizeof d->version);
        cl_bool little = CL_FALSE, avail = CL_FALSE, compiler = CL_FALSE;
        cl_device_fp_config fp = 0;
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof d->unified, &d->unified, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->units, &d->units, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_ENDIAN_LITTLE, sizeof little, &little, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_AVAILABLE, sizeof avail, &avail, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, NULL);
        S->cl.clGetDeviceInfo(ids[i], CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
        d->correct_div = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
        d->own_cache = strstr(pl->name, "Portable Computing Language") || strstr(d->version, "PoCL");
        int major = 0, minor = 0;
        bool v12 = sscanf(d->version, "OpenCL %d.%d", &major, &minor) == 2 && (major > 1 || (major == 1 && minor >= 2));
        /* The generated code and the plan arguments assume a little-endian
         * device with a compiler and OpenCL 1.2 (clEnqueueFillBuffer). */
        if (!little || !avail || !compiler || !v12) {
            ++*skipped;
            continue;
        }
        d->extensions = info_alloc(S, ids[i], CL_DEVICE_EXTENSIONS);
        hide_extensions(S, d->extensions);
        pthread_mutex_init(&d->lock, NULL);
        S->ndevices++;
    }
}

static void load_opencl(ocl_state *S)
{
    const char *lib = env(S, "NNK_OPENCL_LIBRARY");
    lib = lib ? lib : "libOpenCL.so.1";
    S->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!S->lib) {
        const char *e = dlerror();
        fmt(S->status, sizeof S->status, "no OpenCL ICD loader: %s (install ocl-icd-libopencl1 and a driver, e.g. "
            "pocl-opencl-icd)", e ? e : lib);
        return;
    }
#define NNK_X(name, ret, args)                                                                      \
    if (!(*(void **)&S->cl.name = dlsym(S->lib, #name))) {                                            \
        fmt(S->status, sizeof S->status, "the OpenCL library %s lacks %s (not OpenCL 1.2)", lib, #name); \
        return;                                                                                     \
    }
    NNK_CL_FUNCTIONS(NNK_X)
#undef NNK_X
    cl_uint np = 0;
    cl_int r = S->cl.clGetPlatformIDs(0, NULL, &np);
    if (r == CL_PLATFORM_NOT_FOUND_KHR || (r == CL_SUCCESS && np == 0)) {
        fmt(S->status, sizeof S->status, "no OpenCL platform: the ICD loader found no driver (no vendor file in "
            "/etc/OpenCL/vendors or OCL_ICD_VENDORS; install pocl-opencl-icd or a vendor driver)");
        return;
    }
    if (r != CL_SUCCESS) {
        fmt(S->status, sizeof S->status, "clGetPlatformIDs failed: %s (%d)", cl_error_name(r), (int)r);
        return;
    }
    if (np > 64)
        np = 64;
    cl_platform_id ids[64];
    plat_sort pl[64];
    if ((r = S->cl.clGetPlatformIDs(np, ids, NULL)) != CL_SUCCESS) {
        fmt(S->status, sizeof S->status, "clGetPlatformIDs failed: %s (%d)", cl_error_name(r), (int)r);
        return;
    }
    for (cl_uint i = 0; i < np; i++) {
        pl[i].id = ids[i];
        platform_str(S, ids[i], CL_PLATFORM_NAME, pl[i].name, sizeof pl[i].name);
        platform_str(S, ids[i], CL_PLATFORM_VENDOR, pl[i].vendor, sizeof pl[i].vendor);
        platform_str(S, ids[i], CL_PLATFORM_VERSION, pl[i].version, sizeof pl[i].version);
    }
    qsort(pl, np, sizeof *pl, plat_cmp);
    cl_uint counts[64] = {0}, total = 0;
    for (cl_uint i = 0; i < np; i++) {
        if (S->cl.clGetDeviceIDs(pl[i].id, CL_DEVICE_TYPE_ALL, 0, NULL, &counts[i]) != CL_SUCCESS || counts[i] > 256)
            counts[i] = 0;
        total += counts[i];
    }
    if (total == 0) {
        fmt(S->status, sizeof S->status, "no OpenCL device: %u platform%s (%s%s) with no device", np,
            np == 1 ? "" : "s", pl[0].name, np > 1 ? ", ..." : "");
        return;
    }
    if (!(S->devs = calloc(total, sizeof *S->devs))) {
        fmt(S->status, sizeof S->status, "out of memory");
        return;
    }
    size_t skipped = 0;
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id dids[256];
        cl_uint n = 0;
        if (counts[i] && S->cl.clGetDeviceIDs(pl[i].id, CL_DEVICE_TYPE_ALL, counts[i], dids, &n) == CL_SUCCESS)
            add_devices(S, &pl[i], (int)i, dids, n < counts[i] ? n : counts[i], &skipped);
    }
    if (S->ndevices == 0)
        fmt(S->status, sizeof S->status, "no usable OpenCL device: %zu device%s without OpenCL 1.2, a compiler or "
            "little-endian memory", skipped, skipped == 1 ? "" : "s");
    else if (skipped)
        fmt(S->status, sizeof S->status, "(%zu device%s without OpenCL 1.2, a compiler or little-endian memory not "
            "listed)", skipped, skipped == 1 ? "" : "s");
}

static unsigned long env_ulong(ocl_state *S, const char *name)
{
    const char *v = env(S, name);
    return v ? strtoul(v, NULL, 10) : 0;
}

static nnk_status init(const nnk_host_api *host, void **state)
{
    ocl_state *S = calloc(1, sizeof *S);
    if (!S)
        return host->set_error(NNK_ENOMEM, EXT ": out of memory");
    S->host = host;
    S->mem_limit = (size_t)env_ulong(S, "NNK_OPENCL_MEM_LIMIT");
    S->force = (int)env_ulong(S, "NNK_OPENCL_FORCE");
    const char *opts = env(S, "NNK_OPENCL_OPTIONS"), *bc = env(S, "NNK_OPENCL_BINARY_CACHE");
    S->binary_cache = !bc ? -1 : strcmp(bc, "0") == 0 ? 0 : strcmp(bc, "1") == 0 ? 1 : -2;
    if (S->force > 3 || S->binary_cache == -2 || (opts && strlen(opts) >= OCL_MAX_OPTIONS)) {
        free(S);
        return host->set_error(NNK_EINVAL, EXT ": NNK_OPENCL_FORCE must be 0..3, NNK_OPENCL_BINARY_CACHE 0 or 1, "
                               "NNK_OPENCL_OPTIONS under %d characters", OCL_MAX_OPTIONS);
    }
    pthread_rwlock_init(&S->mem_lock, NULL);
    pthread_mutex_init(&S->prog_lock, NULL);
    load_opencl(S);
    *state = S;
    return NNK_OK;
}

static void free_program(ocl_state *S, ocl_program *p)
{
    for (int i = 0; i < OCL_NSUFFIX; i++)
        if (p->fn[i])
            S->cl.clReleaseKernel(p->fn[i]);
    if (p->prog)
        S->cl.clReleaseProgram(p->prog);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static void unload_programs(ocl_state *S, bool all)
{
    pthread_mutex_lock(&S->prog_lock);
    for (ocl_program **pp = &S->programs; *pp;) {
        ocl_program *p = *pp;
        if (p->refs > 0 && !all) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        free_program(S, p);
    }
    pthread_mutex_unlock(&S->prog_lock);
}

static void fini(void *state)
{
    ocl_state *S = state;
    if (!S)
        return;
    unload_programs(S, true);
    pthread_rwlock_wrlock(&S->mem_lock);
    for (size_t i = 0; i < S->nblocks; i++) /* the runtime freed its blocks; nothing should be left */
        S->cl.clReleaseMemObject(S->blocks[i].mem);
    free(S->blocks);
    pthread_rwlock_unlock(&S->mem_lock);
    for (int i = 0; i < S->ndevices; i++) {
        ocl_device *d = &S->devs[i];
        if (d->queue) {
            S->cl.clFinish(d->queue);
            S->cl.clReleaseCommandQueue(d->queue);
        }
        if (d->ctx)
            S->cl.clReleaseContext(d->ctx);
        free(d->extensions);
        pthread_mutex_destroy(&d->lock);
    }
    free(S->devs);
    /* libOpenCL stays loaded: ICDs (PoCL among them) keep threads and
     * atexit handlers that must not outlive their code. */
    pthread_rwlock_destroy(&S->mem_lock);
    pthread_mutex_destroy(&S->prog_lock);
    free(S);
}

static const char *type_name(cl_device_type t)
{
    return t & CL_DEVICE_TYPE_GPU ? "gpu" : t & CL_DEVICE_TYPE_CPU ? "cpu" : t & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
                                                                                                           : "other";
}

/* Whether programs of device d go to and come from nnk's disk cache.
 * Asking PoCL for a program's binary (CL_PROGRAM_BINARIES) makes it
 * compile every kernel of the program for an unspecified local size,
 * which no launch then uses (each launch compiles the kernel for its own
 * local size): twice the LLVM work of a first launch, six times for a
 * reduction's kernels.  PoCL keeps its own cache of both (POCL_CACHE_DIR),
 * so for it the default is off; NNK_OPENCL_BINARY_CACHE=1 or 0 decides
 * for every driver. */
static bool binaries_cached(const ocl_state *S, const ocl_device *d)
{
    return S->binary_cache >= 0 ? S->binary_cache == 1 : !d->own_cache;
}

/* The line is written into a buffer of the calling thread: threads may
 * ask at once (tests/opencl/tsan.sh); it stays valid in that thread until
 * its next call. */
static _Thread_local char status_buf[4096];

static const char *status(void *state)
{
    ocl_state *S = state;
    size_t n = 0, cap = sizeof status_buf;
    char *b = status_buf;
    if (S->ndevices == 0) {
        fmt(b, cap, "%s", S->status);
        return b;
    }
    n += (size_t)snprintf(b + n, cap - n, "%d device%s:", S->ndevices, S->ndevices == 1 ? "" : "s");
    for (int i = 0; i < S->ndevices && n < cap; i++) {
        const ocl_device *d = &S->devs[i];
        n += (size_t)snprintf(b + n, cap - n, "%s %d: %s [%s, %s, platform %s (%s), %s, driver %s, %llu MiB%s%s]",
                              i ? ";" : "", i, d->name, type_name(d->type), d->vendor, d->platform_name,
                              d->platform_version, d->version, d->driver,
                              (unsigned long long)(d->global_mem >> 20), d->unified ? ", host-unified memory" : "",
                              binaries_cached(S, d) ? "" : ", binaries not in nnk's disk cache");
    }
    pthread_mutex_lock(&S->prog_lock);
    if (n < cap)
        n += (size_t)snprintf(b + n, cap - n, "; programs: %lu built, %lu from the disk cache, %lu from memory",
                              S->builds, S->disk_hits, S->memory_hits);
    if (n < cap)
        n += (size_t)snprintf(b + n, cap - n, "; %lu strided copies on the device", S->rect_copies);
    if (S->rejected_binaries && n < cap)
        n += (size_t)snprintf(b + n, cap - n, ", %lu cached binar%s refused by the driver (rebuilt)",
                              S->rejected_binaries, S->rejected_binaries == 1 ? "y" : "ies");
    pthread_mutex_unlock(&S->prog_lock);
    if (S->status[0] && n < cap)
        snprintf(b + n, cap - n, " %s", S->status);
    return b;
}

/* ---- devices ---------------------------------------------------------------------- */

static nnk_status check_device(ocl_state *S, int32_t d)
{
    if (d < 0 || d >= S->ndevices)
        return S->host->set_error(NNK_EINVAL, EXT ": no device %d (%d devices)", d, S->ndevices);
    return NNK_OK;
}

/* The device's context and in-order queue, created at first use. */
static nnk_status device_ready(ocl_state *S, int32_t i)
{
    nnk_status s = check_device(S, i);
    if (s)
        return s;
    ocl_device *d = &S->devs[i];
    pthread_mutex_lock(&d->lock);
    cl_int r = CL_SUCCESS;
    const char *what = "clCreateContext";
    if (!d->ready) {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
        d->ctx = S->cl.clCreateContext(props, 1, &d->id, NULL, NULL, &r);
        if (r == CL_SUCCESS && d->ctx) {
            what = "clCreateCommandQueue";
            d->queue = S->cl.clCreateCommandQueue(d->ctx, d->id, 0, &r);
            if (r != CL_SUCCESS || !d->queue) {
                S->cl.clReleaseContext(d->ctx);
                d->ctx = NULL;
                d->queue = NULL;
            }
        }
        d->ready = r == CL_SUCCESS && d->queue;
        if (!d->ready && r == CL_SUCCESS)
            r = -1;
    }
    pthread_mutex_unlock(&d->lock);
    if (r != CL_SUCCESS) {
        char w[256];
        fmt(w, sizeof w, "setting up device %d (%s): %s", i, S->devs[i].name, what);
        return cl_fail(S, NNK_EDEVICE, r, w);
    }
    return NNK_OK;
}

static nnk_status get_device_count(void *state, int32_t *count)
{
    *count = ((ocl_state *)state)->ndevices;
    return NNK_OK;
}

static nnk_status get_devices(void *state, nnk_device_info *out, int32_t cap)
{
    ocl_state *S = state;
    for (int32_t i = 0; i < cap && i < S->ndevices; i++) {
        out[i].id = i;
        fmt(out[i].name, sizeof out[i].name, "%s", S->devs[i].name);
        out[i].total_memory = S->devs[i].global_mem;
        /* never: even with host-unified memory (PoCL) the addresses are
         * the extension's tokens, reached only through copy(); the status
         * line says whether the memory is unified */
        out[i].host_accessible = 0;
    }
    return NNK_OK;
}

/* CL_DEVICE_VENDOR, CL_DRIVER_VERSION, CL_DEVICE_HOST_UNIFIED_MEMORY
 * (deprecated in OpenCL 2.0 but answered by 1.2 and 3.0 drivers). */
static nnk_status get_device_props(void *state, int32_t device, nnk_device_props *out)
{
    ocl_state *S = state;
    nnk_status s = check_device(S, device);
    if (s)
        return s;
    const ocl_device *d = &S->devs[device];
    fmt(out->vendor, sizeof out->vendor, "%s", d->vendor);
    fmt(out->driver_version, sizeof out->driver_version, "%s", d->driver);
    out->unified_memory = d->unified == CL_TRUE;
    return NNK_OK;
}

static nnk_status device_synchronize(void *state, int32_t device)
{
    ocl_state *S = state;
    nnk_status s = device_ready(S, device);
    if (s)
        return s;
    cl_int r = S->cl.clFinish(S->devs[device].queue);
    return r ? cl_fail(S, NNK_EDEVICE, r, "clFinish (an earlier kernel or copy failed)") : NNK_OK;
}

/* NNabla's context(**kw): device_id counts the devices that platform= (an
 * index in the sorted platform list, or a part of the platform's name) and
 * device_type= (cpu, gpu, accelerator, all) select. */
static nnk_status context(void *state, nnk_context_spec *spec)
{
    ocl_state *S = state;
    const char *platform = NULL, *type = NULL;
    for (int32_t i = 0; i < spec->nkw; i++) {
        if (strcmp(spec->kw[i].key, "platform") == 0)
            platform = spec->kw[i].value;
        else if (strcmp(spec->kw[i].key, "device_type") == 0)
            type = spec->kw[i].value;
        else
            return S->host->set_error(NNK_EINVAL, "context of extension '" EXT "': unknown key '%s' (expected "
                                      "device_id, type_config, platform, device_type)", spec->kw[i].key);
    }
    cl_device_type want = CL_DEVICE_TYPE_ALL;
    if (type) {
        if (strcmp(type, "cpu") == 0)
            want = CL_DEVICE_TYPE_CPU;
        else if (strcmp(type, "gpu") == 0)
            want = CL_DEVICE_TYPE_GPU;
        else if (strcmp(type, "accelerator") == 0)
            want = CL_DEVICE_TYPE_ACCELERATOR;
        else if (strcmp(type, "all") != 0)
            return S->host->set_error(NNK_EINVAL, "context of extension '" EXT "': bad value '%s' for key "
                                      "'device_type': expected cpu, gpu, accelerator or all", type);
    }
    int pindex = -1;
    if (platform) {
        char *end;
        long v = strtol(platform, &end, 10);
        if (*platform && !*end)
            pindex = v < 0 || v > 64 ? 65 : (int)v;
    }
    int seen = 0, found = -1;
    for (int i = 0; i < S->ndevices && found < 0; i++) {
        const ocl_device *d = &S->devs[i];
        if (!(d->type & want))
            continue;
        if (platform && (pindex >= 0 ? d->platform_index != pindex : !strstr(d->platform_name, platform)))
            continue;
        if (seen++ == spec->device_id)
            found = i;
    }
    /* without any device (no ICD loader, no platform) the context is made
     * all the same, as NNabla's asks nothing of the device: its first use
     * is the runtime's "has no devices" (NNK_EDEVICE) */
    if (found < 0 && S->ndevices == 0)
        found = spec->device_id;
    if (found < 0)
        return S->host->set_error(NNK_EINVAL, "context of extension '" EXT "': no device %d with platform=%s "
                                  "device_type=%s (%d match%s of %d devices; see nnk_extension_status)",
                                  spec->device_id, platform ? platform : "any", type ? type : "all", seen,
                                  seen == 1 ? "es" : "", S->ndevices);
    spec->device_id = found;
    spec->nbackends = 0;
    if (spec->type_config == NNK_F16)
        fmt(spec->backends[spec->nbackends++], 32, EXT ":half");
    fmt(spec->backends[spec->nbackends++], 32, EXT ":float");
    fmt(spec->backends[spec->nbackends++], 32, "cpu:float");
    return NNK_OK;
}

/* ---- memory ----------------------------------------------------------------------- */

/* With mem_lock held: the block whose range holds address a. */
static ocl_block *find_block(ocl_state *S, uintptr_t a)
{
    size_t lo = 0, hi = S->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S->blocks[mid].base <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    ocl_block *b = &S->blocks[lo - 1];
    return a < b->base + b->size ? b : NULL;
}

/* (buffer, offset) of device address p for n bytes; false when p is not
 * the extension's (a host pointer, or another block's end). */
static bool resolve(ocl_state *S, const void *p, size_t n, cl_mem *mem, size_t *off, int32_t *device)
{
    uintptr_t a = (uintptr_t)p;
    pthread_rwlock_rdlock(&S->mem_lock);
    ocl_block *b = find_block(S, a);
    bool ok = b && n <= b->size - (a - b->base);
    if (ok) {
        *mem = b->mem;
        *off = a - b->base;
        if (device)
            *device = b->device;
    }
    pthread_rwlock_unlock(&S->mem_lock);
    return ok;
}

static nnk_status mem_alloc(void *state, int32_t device, size_t bytes, void **ptr)
{
    ocl_state *S = state;
    nnk_status s = device_ready(S, device);
    if (s)
        return s;
    ocl_device *d = &S->devs[device];
    const size_t limit = S->mem_limit ? S->mem_limit : (size_t)d->global_mem;
    pthread_mutex_lock(&d->lock);
    const size_t used = d->used; /* for the message: other threads change it */
    bool full = bytes > limit - (used < limit ? used : limit) || (d->max_alloc && bytes > d->max_alloc);
    if (!full)
        d->used += bytes;
    pthread_mutex_unlock(&d->lock);
    if (full)
        return S->host->set_error(NNK_ENOMEM, EXT ": out of device memory allocating %zu bytes on device %d (%s): "
                                  "%zu of %zu bytes in use, at most %llu in one buffer",
                                  bytes, device, d->name, used, limit, (unsigned long long)d->max_alloc);
    cl_int r = CL_SUCCESS;
    cl_mem m = S->cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &r);
    if (r != CL_SUCCESS || !m) {
        pthread_mutex_lock(&d->lock);
        d->used -= bytes;
        pthread_mutex_unlock(&d->lock);
        char w[128];
        fmt(w, sizeof w, "clCreateBuffer(%zu bytes) on device %d", bytes, device);
        return cl_fail(S, NNK_EDEVICE, r ? r : CL_OUT_OF_RESOURCES, w);
    }
    /* a range of addresses: the first gap that fits */
    const uintptr_t span = ((uintptr_t)bytes + OCL_TOKEN_ALIGN - 1) / OCL_TOKEN_ALIGN * OCL_TOKEN_ALIGN + OCL_TOKEN_ALIGN;
    pthread_rwlock_wrlock(&S->mem_lock);
    uintptr_t at = OCL_TOKEN_BASE;
    size_t pos = 0;
    for (; pos < S->nblocks && S->blocks[pos].base < at + span; pos++)
        at = S->blocks[pos].base + ((S->blocks[pos].size + OCL_TOKEN_ALIGN - 1) / OCL_TOKEN_ALIGN + 1) * OCL_TOKEN_ALIGN;
    bool ok = at + span <= OCL_TOKEN_END && span > bytes;
    if (ok && S->nblocks == S->capblocks) {
        size_t cap = S->capblocks ? S->capblocks * 2 : 64;
        ocl_block *nb = realloc(S->blocks, cap * sizeof *nb);
        if (nb) {
            S->blocks = nb;
            S->capblocks = cap;
        } else {
            ok = false;
        }
    }
    if (ok) {
        memmove(&S->blocks[pos + 1], &S->blocks[pos], (S->nblocks - pos) * sizeof *S->blocks);
        S->blocks[pos] = (ocl_block){at, bytes, m, device};
        S->nblocks++;
    }
    pthread_rwlock_unlock(&S->mem_lock);
    if (!ok) {
        S->cl.clReleaseMemObject(m);
        pthread_mutex_lock(&d->lock);
        d->used -= bytes;
        pthread_mutex_unlock(&d->lock);
        return S->host->set_error(NNK_ENOMEM, EXT ": out of memory (device address ranges) allocating %zu bytes",
                                  bytes);
    }
    *ptr = (void *)at;
    return NNK_OK;
}

static void mem_free(void *state, int32_t device, void *ptr)
{
    ocl_state *S = state;
    cl_mem m = NULL;
    size_t bytes = 0;
    pthread_rwlock_wrlock(&S->mem_lock);
    ocl_block *b = find_block(S, (uintptr_t)ptr);
    if (b && b->base == (uintptr_t)ptr) {
        m = b->mem;
        bytes = b->size;
        size_t pos = (size_t)(b - S->blocks);
        memmove(b, b + 1, (S->nblocks - pos - 1) * sizeof *b);
        S->nblocks--;
    }
    pthread_rwlock_unlock(&S->mem_lock);
    if (!m || check_device(S, device))
        return;
    /* released once the commands queued on it are done (OpenCL's rule) */
    S->cl.clReleaseMemObject(m);
    ocl_device *d = &S->devs[device];
    pthread_mutex_lock(&d->lock);
    d->used -= bytes;
    pthread_mutex_unlock(&d->lock);
}

static nnk_status not_ours(ocl_state *S, const void *p, size_t n, const char *what)
{
    return S->host->set_error(NNK_EINVAL, EXT ": %s: %p (%zu bytes) is not memory of the extension", what, p, n);
}

static nnk_status memset_zero(void *state, int32_t device, void *ptr, size_t bytes)
{
    ocl_state *S = state;
    nnk_status s = device_ready(S, device);
    if (s || bytes == 0)
        return s;
    cl_mem m;
    size_t off;
    if (!resolve(S, ptr, bytes, &m, &off, NULL))
        return not_ours(S, ptr, bytes, "memset_zero");
    const unsigned char zero = 0;
    cl_int r = S->cl.clEnqueueFillBuffer(S->devs[device].queue, m, &zero, 1, off, bytes, 0, NULL, NULL);
    return r ? cl_fail(S, NNK_EDEVICE, r, "clEnqueueFillBuffer") : NNK_OK;
}

static nnk_status copy(void *state, int32_t device, nnk_copy_kind kind, void *dst, const void *src, size_t bytes)
{
    ocl_state *S = state;
    nnk_status s = device_ready(S, device);
    if (s || bytes == 0)
        return s;
    cl_command_queue q = S->devs[device].queue;
    cl_mem dm = NULL, sm = NULL;
    size_t doff = 0, soff = 0;
    cl_int r;
    switch (kind) {
    case NNK_COPY_HOST_TO_DEVICE:
        if (!resolve(S, dst, bytes, &dm, &doff, NULL))
            return not_ours(S, dst, bytes, "copy to the device");
        /* blocking: the host buffer may be reused on return */
        r = S->cl.clEnqueueWriteBuffer(q, dm, CL_TRUE, doff, bytes, src, 0, NULL, NULL);
        return r ? cl_fail(S, NNK_EDEVICE, r, "clEnqueueWriteBuffer") : NNK_OK;
    case NNK_COPY_DEVICE_TO_HOST:
        if (!resolve(S, src, bytes, &sm, &soff, NULL))
            return not_ours(S, src, bytes, "copy from the device");
        r = S->cl.clEnqueueReadBuffer(q, sm, CL_TRUE, soff, bytes, dst, 0, NULL, NULL);
        return r ? cl_fail(S, NNK_EDEVICE, r, "clEnqueueReadBuffer (or an earlier kernel failed)") : NNK_OK;
    case NNK_COPY_DEVICE_TO_DEVICE:
        if (!resolve(S, dst, bytes, &dm, &doff, NULL) || !resolve(S, src, bytes, &sm, &soff, NULL))
            return not_ours(S, dm ? src : dst, bytes, "copy on the device");
        r = S->cl.clEnqueueCopyBuffer(q, sm, dm, soff, doff, bytes, 0, NULL, NULL);
        return r ? cl_fail(S, NNK_EDEVICE, r, "clEnqueueCopyBuffer") : NNK_OK;
    }
    return S->host->set_error(NNK_EINVAL, EXT ": bad copy kind %d", (int)kind);
}

/* A strided copy on the device as one clEnqueueCopyBufferRect: at most
 * three dimensions of extent > 1 with positive strides whose pitches nest
 * (rows of contiguous elements, or single elements, then rows, then
 * slices); anything else (broadcasts, reversed or interleaved axes, an
 * overlap) is NNK_EUNSUPPORTED, and the runtime stages it. */
static nnk_status copy_strided(void *state, int32_t device, int32_t ndim, const int64_t *shape, void *dst,
                               const int64_t *dst_strides, const void *src, const int64_t *src_strides,
                               size_t esize)
{
    ocl_state *S = state;
    nnk_status s = device_ready(S, device);
    if (s)
        return s;
    int dims[NNK_MAX_DIMS], nd = 0;
    for (int32_t d = ndim - 1; d >= 0; d--) { /* inner first */
        if (shape[d] == 0)
            return NNK_OK;
        if (shape[d] > 1)
            dims[nd++] = d;
    }
    size_t region[3] = {esize, 1, 1}, dp[3] = {esize, 0, 0}, sp[3] = {esize, 0, 0};
    int k = 0, axis = 0;
    if (nd > 0 && dst_strides[dims[0]] == 1 && src_strides[dims[0]] == 1) {
        region[0] = (size_t)shape[dims[0]] * esize;
        k = 1;
    }
    if (nd - k > 2)
        return NNK_EUNSUPPORTED;
    for (; k < nd; k++) {
        const int d = dims[k];
        if (dst_strides[d] <= 0 || src_strides[d] <= 0)
            return NNK_EUNSUPPORTED;
        axis++;
        region[axis] = (size_t)shape[d];
        dp[axis] = (size_t)dst_strides[d] * esize;
        sp[axis] = (size_t)src_strides[d] * esize;
        /* each pitch holds the whole of the level below it */
        size_t below_d = axis == 1 ? region[0] : dp[1] * region[1], below_s = axis == 1 ? region[0] : sp[1] * region[1];
        if (dp[axis] < below_d || sp[axis] < below_s || (axis == 2 && (dp[2] % dp[1] || sp[2] % sp[1])))
            return NNK_EUNSUPPORTED;
    }
    size_t dbytes = (region[2] - 1) * dp[2] + (region[1] - 1) * dp[1] + region[0];
    size_t sbytes = (region[2] - 1) * sp[2] + (region[1] - 1) * sp[1] + region[0];
    cl_mem dm, sm;
    size_t doff, soff;
    if (!resolve(S, dst, dbytes, &dm, &doff, NULL) || !resolve(S, src, sbytes, &sm, &soff, NULL))
        return NNK_EUNSUPPORTED;
    /* the offsets of element 0 as (x, y, z) origins: the rows of the pitch */
    size_t dor[3] = {doff, 0, 0}, sor[3] = {soff, 0, 0};
    if (axis >= 1)
        dor[0] = doff % dp[1], dor[1] = doff / dp[1], sor[0] = soff % sp[1], sor[1] = soff / sp[1];
    if (axis == 2)
        dor[2] = dor[1] / (dp[2] / dp[1]), dor[1] %= dp[2] / dp[1], sor[2] = sor[1] / (sp[2] / sp[1]),
        sor[1] %= sp[2] / sp[1];
    const size_t drp = axis >= 1 ? dp[1] : 0, dsp = axis == 2 ? dp[2] : 0;
    const size_t srp = axis >= 1 ? sp[1] : 0, ssp = axis == 2 ? sp[2] : 0;
    cl_int r = S->cl.clEnqueueCopyBufferRect(S->devs[device].queue, sm, dm, sor, dor, region, srp, ssp, drp, dsp, 0,
                                             NULL, NULL);
    if (r == CL_MEM_COPY_OVERLAP || r == -30 /* CL_INVALID_VALUE: a layout this driver refuses */)
        return NNK_EUNSUPPORTED;
    if (r != CL_SUCCESS)
        return cl_fail(S, NNK_EDEVICE, r, "clEnqueueCopyBufferRect");
    pthread_mutex_lock(&S->prog_lock);
    S->rect_copies++;
    pthread_mutex_unlock(&S->prog_lock);
    return NNK_OK;
}

static nnk_status clear_memory_cache(void *state)
{
    unload_programs(state, false);
    return NNK_OK;
}

/* ---- the JIT ---------------------------------------------------------------------- */

/* The instance's name, the prefix of its kernels: NAME of SYMBOL =
 * "NAME__desc" when the runtime gives one, else of the source's first
 * kernel "NAME__x" (libnnkc names no symbol for OpenCL C, which defines
 * no host descriptor). */
static void prefix_of(const char *symbol, const char *src, char *out, size_t n)
{
    static const char tag[] = "__kernel void ";
    const char *k = symbol ? NULL : strstr(src, tag);
    if (k) {
        k += sizeof tag - 1;
        size_t len = strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        const char *cut = NULL;
        for (const char *p = k; p + 1 < k + len; p++)
            if (p[0] == '_' && p[1] == '_')
                cut = p;
        fmt(out, n, "%.*s", (int)(cut ? cut - k : (ptrdiff_t)len), k);
        return;
    }
    fmt(out, n, "%s", symbol ? symbol : "kernel");
    size_t l = strlen(out);
    if (l > 6 && strcmp(out + l - 6, "__desc") == 0)
        out[l - 6] = 0;
}

/* The OpenCL extensions the source says it needs (a comment "nnk-requires:
 * cl_khr_fp64 (why)", docs/opencl.md) that the device lacks: the first
 * one in *missing.  (Its `#pragma OPENCL EXTENSION` lines are inside
 * #ifdef and say nothing.) */
static bool lacks_extension(const ocl_device *d, const char *src, char *missing, size_t n)
{
    static const char tag[] = "nnk-requires:";
    for (const char *p = src; (p = strstr(p, tag)); p += sizeof tag - 1) {
        const char *w = p + sizeof tag - 1;
        for (;;) {
            w += strspn(w, " \t,");
            size_t len = strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
            if (len == 0)
                break;
            char name[128];
            if (len < sizeof name) {
                memcpy(name, w, len);
                name[len] = 0;
                if (!has_extension(d, name)) {
                    fmt(missing, n, "%s", name);
                    return true;
                }
            }
            w += len;
        }
    }
    return false;
}

/* NNK_OPENCL_OPTIONS is read at each build, not once: a test may build
 * some programs with options of its own (tests/opencl/conformance.sh
 * builds most of the suite with -cl-opt-disable, docs/opencl.md); the
 * options are part of the program's key. */
static nnk_status build_options(ocl_state *S, const ocl_device *d, char *out, size_t n)
{
    const char *extra = env(S, "NNK_OPENCL_OPTIONS");
    if (extra && strlen(extra) >= OCL_MAX_OPTIONS)
        return S->host->set_error(NNK_EINVAL, EXT ": NNK_OPENCL_OPTIONS must be under %d characters",
                                  OCL_MAX_OPTIONS);
    /* OpenCL C 1.2; divisions and square roots rounded as IEEE 754 (as the
     * C back end) where the device can; never -cl-fast-relaxed-math or
     * -cl-mad-enable (the generated code also turns FP_CONTRACT off) */
    fmt(out, n, "-cl-std=CL1.2%s%s%s", d->correct_div ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
        extra ? " " : "", extra ? extra : "");
    return NNK_OK;
}

/* The key of a program: everything that determines its binary. */
static void program_key(ocl_state *S, const ocl_device *d, const char *src, const char *opts, char key[65])
{
    char head[1536];
    int hn = snprintf(head, sizeof head, "nnk-opencl 1\nplatform %s|%s|%s\ndevice %s|%s|%s\ndriver %s\noptions %s\n",
                      d->platform_name, d->platform_vendor, d->platform_version, d->name, d->vendor, d->version,
                      d->driver, opts);
    size_t sn = strlen(src), n = (size_t)(hn < 0 ? 0 : hn >= (int)sizeof head ? (int)sizeof head - 1 : hn);
    char *all = malloc(n + sn);
    if (!all) { /* hash the parts: still a key of everything, only not the same as a full one */
        char h1[65];
        S->host->sha256_hex(src, sn, h1);
        fmt(head + n, sizeof head - n, "%s", h1);
        S->host->sha256_hex(head, strlen(head), key);
        return;
    }
    memcpy(all, head, n);
    memcpy(all + n, src, sn);
    S->host->sha256_hex(all, n + sn, key);
    free(all);
}

/* The build log's lines that say "error", at most n bytes (the whole
 * log's start when none does). */
static void log_errors(const char *log, char *out, size_t n)
{
    size_t used = 0;
    out[0] = 0;
    for (const char *l = log; *l && used + 1 < n;) {
        size_t len = strcspn(l, "\n");
        if (memmem(l, len, "error", 5)) {
            int w = snprintf(out + used, n - used, "%s%.*s", used ? "; " : "", (int)len, l);
            used += w > 0 ? (size_t)w : 0;
        }
        l += len + (l[len] == '\n');
    }
    if (!out[0])
        fmt(out, n, "%.*s", (int)strcspn(log, "\n"), log);
}

static nnk_status build_failed(ocl_state *S, const ocl_device *d, cl_program prog, const char *prefix, cl_int r)
{
    size_t n = 0;
    char *log = NULL;
    if (S->cl.clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n > 0 &&
        n < ((size_t)1 << 24) && (log = calloc(n + 1, 1)) &&
        S->cl.clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
        log[0] = 0;
    char errs[1024];
    log_errors(log ? log : "", errs, sizeof errs);
    free(log);
    return S->host->set_error(NNK_ECOMPILE, EXT ": building the OpenCL C of '%s' for %s failed (%s): %s", prefix,
                              d->name, cl_error_name(r), errs[0] ? errs : "no build log");
}

/* Builds from source and stores the binary in the disk cache. */
static nnk_status build_source(ocl_state *S, int32_t dev, const char *src, const char *opts, const char *prefix,
                               const char *key, cl_program *out)
{
    ocl_device *d = &S->devs[dev];
    cl_int r = CL_SUCCESS;
    size_t len = strlen(src);
    cl_program p = S->cl.clCreateProgramWithSource(d->ctx, 1, &src, &len, &r);
    if (r != CL_SUCCESS || !p)
        return cl_fail(S, NNK_ECOMPILE, r, "clCreateProgramWithSource");
    if ((r = S->cl.clBuildProgram(p, 1, &d->id, opts, NULL, NULL)) != CL_SUCCESS) {
        nnk_status s = build_failed(S, d, p, prefix, r);
        S->cl.clReleaseProgram(p);
        return s;
    }
    pthread_mutex_lock(&S->prog_lock);
    S->builds++;
    pthread_mutex_unlock(&S->prog_lock);
    size_t bsize = 0;
    unsigned char *bin = NULL;
    if (binaries_cached(S, d) && S->host->size >= offsetof(nnk_host_api, cache_store) + sizeof S->host->cache_store &&
        S->cl.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, NULL) == CL_SUCCESS && bsize > 0 &&
        bsize < ((size_t)1 << 30) && (bin = malloc(bsize)) &&
        S->cl.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
        S->host->cache_store(key, ".clbin", bin, bsize); /* fails quietly */
    free(bin);
    *out = p;
    return NNK_OK;
}

/* A program from the disk cache; false when there is none or the driver
 * refuses it (then it is built again, and the entry rewritten). */
static bool build_cached(ocl_state *S, int32_t dev, const char *opts, const char *key, cl_program *out)
{
    if (!binaries_cached(S, &S->devs[dev]) ||
        S->host->size < offsetof(nnk_host_api, cache_load) + sizeof S->host->cache_load)
        return false;
    void *data = NULL;
    size_t size = 0;
    if (S->host->cache_load(key, ".clbin", &data, &size) != NNK_OK)
        return false;
    ocl_device *d = &S->devs[dev];
    cl_int r = CL_SUCCESS, bs = CL_SUCCESS;
    const unsigned char *bin = data;
    cl_program p = S->cl.clCreateProgramWithBinary(d->ctx, 1, &d->id, &size, &bin, &bs, &r);
    if (r == CL_SUCCESS && p && bs == CL_SUCCESS)
        r = S->cl.clBuildProgram(p, 1, &d->id, opts, NULL, NULL);
    free(data);
    if (r != CL_SUCCESS || bs != CL_SUCCESS || !p) {
        if (p)
            S->cl.clReleaseProgram(p);
        pthread_mutex_lock(&S->prog_lock);
        S->rejected_binaries++;
        pthread_mutex_unlock(&S->prog_lock);
        return false;
    }
    pthread_mutex_lock(&S->prog_lock);
    S->disk_hits++;
    pthread_mutex_unlock(&S->prog_lock);
    *out = p;
    return true;
}

/* The kernels of a built program, and its reduction sizes. */
static nnk_status load_kernels(ocl_state *S, ocl_program *m, int reduction)
{
    ocl_device *d = &S->devs[m->device];
    int found = 0;
    for (int i = 0; i < OCL_NSUFFIX; i++) {
        char name[200];
        fmt(name, sizeof name, "%s__%s", m->prefix, kernel_names[i].cl);
        cl_int r = CL_SUCCESS;
        m->fn[i] = S->cl.clCreateKernel(m->prog, name, &r);
        if (r != CL_SUCCESS)
            m->fn[i] = NULL;
        if (m->fn[i] &&
            S->cl.clGetKernelInfo(m->fn[i], CL_KERNEL_NUM_ARGS, sizeof m->nargs[i], &m->nargs[i], NULL) != CL_SUCCESS)
            m->nargs[i] = 0;
        found += m->fn[i] != NULL;
    }
    if (!found)
        return S->host->set_error(NNK_EINVAL, EXT ": the OpenCL C has no kernels named %s__*", m->prefix);
    m->reduction = reduction;
    if (!reduction)
        return NNK_OK;
    /* NAME__info writes the reduction layout (NAME__cu_sizes of CUDA) */
    char name[200];
    fmt(name, sizeof name, "%s__info", m->prefix);
    cl_int r = CL_SUCCESS;
    cl_kernel k = S->cl.clCreateKernel(m->prog, name, &r);
    if (r != CL_SUCCESS || !k)
        return cl_fail(S, NNK_EINVAL, r, "the OpenCL C of a reduction has no NAME__info kernel");
    int32_t buf[67] = {0};
    cl_mem out = S->cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, sizeof buf, NULL, &r);
    size_t one = 1;
    if (r == CL_SUCCESS)
        r = S->cl.clEnqueueFillBuffer(d->queue, out, &(const char){0}, 1, 0, sizeof buf, 0, NULL, NULL);
    if (r == CL_SUCCESS)
        r = S->cl.clSetKernelArg(k, 0, sizeof out, &out);
    if (r == CL_SUCCESS)
        r = S->cl.clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &one, &one, 0, NULL, NULL);
    if (r == CL_SUCCESS)
        r = S->cl.clEnqueueReadBuffer(d->queue, out, CL_TRUE, 0, sizeof buf, buf, 0, NULL, NULL);
    if (out)
        S->cl.clReleaseMemObject(out);
    S->cl.clReleaseKernel(k);
    if (r != CL_SUCCESS)
        return cl_fail(S, NNK_EDEVICE, r, "running NAME__info");
    if (buf[0] < 0 || buf[0] > 64 || buf[1] < 0)
        return S->host->set_error(NNK_EINVAL, EXT ": bad reduction sizes from %s (%d phases)", name, buf[0]);
    m->sizes.nphases = buf[0];
    m->sizes.finals_size = buf[1];
    for (int i = 0; i < buf[0]; i++) {
        if (buf[2 + i] < 0)
            return S->host->set_error(NNK_EINVAL, EXT ": bad reduction sizes from %s", name);
        m->sizes.state_size[i] = buf[2 + i];
    }
    m->argmax = buf[2 + buf[0]] & 1;
    return NNK_OK;
}

/* The element size of a storage type name of the generated OpenCL C. */
static int type_size(const char *t, size_t n)
{
    static const struct { const char *name; int size; } types[] = {
        {"uint8_t", 1}, {"int8_t", 1}, {"uchar", 1}, {"char", 1}, {"bool", 1},
        {"int16_t", 2}, {"uint16_t", 2}, {"short", 2}, {"ushort", 2}, {"nnk_f16", 2}, {"nnk_bf16", 2}, {"half", 2},
        {"int32_t", 4}, {"uint32_t", 4}, {"int", 4}, {"uint", 4}, {"float", 4},
        {"int64_t", 8}, {"uint64_t", 8}, {"long", 8}, {"ulong", 8}, {"double", 8},
        {"nnk_c64", 8}, {"nnk_c128", 16}, /* complex: numpy's pair, the real part first */
    };
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (strlen(types[i].name) == n && memcmp(types[i].name, t, n) == 0)
            return types[i].size;
    return 0;
}

/* The operands of the instance's kernels and their element sizes, from
 * the parameters of its first kernel: "__kernel void NAME__x(__constant
 * nnk_cl_plan *p, __global const float *a0, __global float *a1, ...)"
 * (every kernel of an instance takes the same list).  The plan's offsets
 * are in elements of these types. */
static nnk_status operand_sizes(ocl_state *S, const char *src, ocl_program *m)
{
    char head[160];
    fmt(head, sizeof head, "__kernel void %s__", m->prefix);
    const char *k = strstr(src, head);
    const char *open = k ? strchr(k, '(') : NULL;
    const char *close = open ? strchr(open, ')') : NULL;
    if (!close)
        return S->host->set_error(NNK_EINVAL, EXT ": the OpenCL C has no kernel %s__*", m->prefix);
    m->nops = 0;
    for (const char *p = open; p && p < close && (p = strstr(p, "__global")) && p < close; p += 8) {
        const char *t = p + 8;
        t += strspn(t, " \t");
        if (strncmp(t, "const ", 6) == 0)
            t += 6;
        size_t n = strcspn(t, " *");
        const char *name = t + n;
        name += strspn(name, " *");
        if (name[0] != 'a') /* scratch, finals */
            continue;
        int size = type_size(t, n);
        if (!size || m->nops == NNK_CL_MAX_TENSORS || atoi(name + 1) != m->nops)
            return S->host->set_error(NNK_EINVAL, EXT ": kernel %s: cannot read operand %d's type from '%.*s'",
                                      m->prefix, m->nops, (int)n, t);
        m->esize[m->nops++] = (uint8_t)size;
    }
    /* raw parameters and index(d): the views and the range error follow (opencl/plan.h) */
    const char *rp = strstr(open, "nnk_cl_rplan *rp_");
    m->raw = rp && rp < close;
    return NNK_OK;
}

/* With prog_lock held. */
static ocl_program *find_program(ocl_state *S, int32_t dev, const char *key)
{
    for (ocl_program *p = S->programs; p; p = p->next)
        if (p->device == dev && strcmp(p->key, key) == 0)
            return p;
    return NULL;
}

/* A kernel parameter or output of dtype f64 or c128 on a device without fp64. */
static bool needs_f64(const nnk_kernel_desc *iface)
{
    for (int32_t i = 0; iface && i < iface->nparams + iface->nouts; i++)
        if (iface->params[i].dtype == NNK_F64 || iface->params[i].dtype == NNK_C128)
            return true;
    return false;
}

static nnk_status kernel_compile(void *state, int32_t device, const nnk_kernel_source *src, nnk_ext_kernel *out)
{
    ocl_state *S = state;
    if (src->target != NNK_TARGET_OPENCL)
        return S->host->set_error(NNK_EUNSUPPORTED, EXT " compiles OpenCL C only");
    if (!src->interface)
        return S->host->set_error(NNK_EUNSUPPORTED, EXT ": source without an interface (nnk_kernel_from_source) is "
                                  "not supported: use a module");
    nnk_status s = device_ready(S, device);
    if (s)
        return s;
    ocl_device *d = &S->devs[device];
    char prefix[128], missing[128];
    prefix_of(src->symbol, src->text, prefix, sizeof prefix);
    bool lacks = lacks_extension(d, src->text, missing, sizeof missing);
    if (!lacks && needs_f64(src->interface) && !has_extension(d, "cl_khr_fp64")) {
        fmt(missing, sizeof missing, "cl_khr_fp64");
        lacks = true;
    }
    if (lacks)
        return S->host->set_error(NNK_EUNSUPPORTED, EXT ": kernel '%s' needs the OpenCL extension %s%s, which device "
                                  "%d (%s) does not have", prefix, missing,
                                  strcmp(missing, "cl_khr_fp64") == 0 ? " (f64)" : "", device, d->name);
    char opts[1024], key[65];
    if ((s = build_options(S, d, opts, sizeof opts)))
        return s;
    program_key(S, d, src->text, opts, key);
    pthread_mutex_lock(&S->prog_lock);
    ocl_program *m = find_program(S, device, key);
    if (m) {
        m->refs++;
        S->memory_hits++;
    }
    pthread_mutex_unlock(&S->prog_lock);
    if (!m) {
        cl_program prog = NULL;
        if (!build_cached(S, device, opts, key, &prog) &&
            (s = build_source(S, device, src->text, opts, prefix, key, &prog)))
            return s;
        if (!(m = calloc(1, sizeof *m))) {
            S->cl.clReleaseProgram(prog);
            return S->host->set_error(NNK_ENOMEM, EXT ": out of memory");
        }
        m->prog = prog;
        m->device = device;
        memcpy(m->key, key, sizeof key);
        fmt(m->prefix, sizeof m->prefix, "%s", prefix);
        pthread_mutex_init(&m->lock, NULL);
        m->refs = 1;
        if ((s = operand_sizes(S, src->text, m)) ||
            (s = load_kernels(S, m, src->interface->kind == NNK_KIND_REDUCTION))) {
            free_program(S, m);
            return s;
        }
        pthread_mutex_lock(&S->prog_lock);
        ocl_program *other = find_program(S, device, key);
        if (other) { /* another thread built it meanwhile */
            other->refs++;
            pthread_mutex_unlock(&S->prog_lock);
            free_program(S, m);
            m = other;
        } else {
            m->next = S->programs;
            S->programs = m;
            pthread_mutex_unlock(&S->prog_lock);
        }
    }
    out->desc = src->interface;
    out->handle = m;
    return NNK_OK;
}

static void kernel_free(void *state, nnk_ext_kernel *k)
{
    ocl_state *S = state;
    ocl_program *m = k ? k->handle : NULL;
    if (!m)
        return;
    pthread_mutex_lock(&S->prog_lock);
    m->refs--; /* the program stays cached until clear_memory_cache or fini */
    pthread_mutex_unlock(&S->prog_lock);
    k->handle = NULL;
}

/* ---- launches --------------------------------------------------------------------- */

typedef struct launch_ctx {
    ocl_state *S;
    ocl_program *m;
    int32_t device;
    const nnk_plan *plan;
    cl_mem rplan, range;                        /* raw parameters and index(d) (opencl/plan.h) */
    cl_mem bufs[NNK_CL_MAX_TENSORS];
    int64_t offs[NNK_CL_MAX_TENSORS];           /* in elements */
    cl_mem scratch[4];
    int nscratch;
    nnk_status status;
    char *err;
    size_t errlen;
} launch_ctx;

static int suffix_index(const char *name, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0 || strncmp(name + pl, "__", 2) != 0)
        return -1;
    for (int i = 0; i < OCL_NSUFFIX; i++)
        if (strcmp(name + pl + 2, kernel_names[i].cuda) == 0)
            return i;
    return -1;
}

static int lc_fail(launch_ctx *L, nnk_status s, cl_int r, const char *what, const char *name)
{
    fmt(L->err, L->errlen, EXT ": %s %s: %s (%d)", what, name, cl_error_name(r), (int)r);
    L->status = is_oom(r) ? NNK_ENOMEM : s;
    return -1;
}

/* dispatch.c's launch: the CUDA grid as an NDRange, the plan as a
 * __constant buffer, the operands as (buffer, offset). */
static int lc_launch(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, const nnk_cuda_args *a)
{
    launch_ctx *L = user;
    ocl_state *S = L->S;
    ocl_device *d = &S->devs[L->device];
    int i = suffix_index(name, L->m->prefix);
    cl_kernel k = i >= 0 ? L->m->fn[i] : NULL;
    if (!k) {
        fmt(L->err, L->errlen, EXT ": the OpenCL C has no kernel %s", name);
        L->status = NNK_EINVAL;
        return -1;
    }
    const int red = L->m->reduction;
    const cl_uint raw = L->m->raw ? 2 : 0;
    const cl_uint want = (cl_uint)(1 + a->p.nops + raw + (red ? 2 : 0));
    if (L->m->nargs[i] != want) {
        fmt(L->err, L->errlen, EXT ": kernel %s takes %u arguments; the ABI (opencl_abi.h) has %u for %d operands",
            name, L->m->nargs[i], want, a->p.nops);
        L->status = NNK_EINVAL;
        return -1;
    }
    nnk_cl_plan args;
    memset(&args, 0, sizeof args);
    args.ndim = a->p.ndim;
    args.nred = a->p.nred;
    args.nops = a->p.nops;
    args.flags = a->p.flags & NNK_CUDA_VEC ? NNK_CL_VEC : 0;
    args.phase = a->phase;
    args.nparts = a->nparts;
    args.abi = NNK_CL_ABI_VERSION;
    args.nkept = a->p.nkept;
    args.nreduced = a->p.nreduced;
    memcpy(args.shape, a->p.shape, sizeof args.shape);
    memcpy(args.strides, a->p.strides, sizeof args.strides);
    memcpy(args.offset, L->offs, sizeof args.offset);
    memcpy(args.scalars, a->p.scalars, sizeof args.scalars);
    cl_int r = CL_SUCCESS;
    /* copied at creation: the buffer lives until the kernel is done */
    cl_mem abuf = S->cl.clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof args, &args, &r);
    if (r != CL_SUCCESS || !abuf)
        return lc_fail(L, NNK_EDEVICE, r ? r : CL_OUT_OF_RESOURCES, "the plan buffer of", name);
    /* the work-group kernels (rd_group, rd_part) require NNK_CL_GROUP
     * items (reqd_work_group_size); the others take any local size */
    size_t wg = block, kwg = 0;
    const bool fixed = !strcmp(kernel_names[i].cl, "rd_group") || !strcmp(kernel_names[i].cl, "rd_part");
    if (!fixed &&
        S->cl.clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL) == CL_SUCCESS &&
        kwg > 0 && kwg < wg) {
        while (wg > kwg && wg > 1) /* a device that takes fewer: same grid, smaller groups */
            wg /= 2;
    }
    size_t global[2] = {(size_t)gx * wg, gy ? gy : 1}, local[2] = {wg, 1};
    pthread_mutex_lock(&L->m->lock);
    r = S->cl.clSetKernelArg(k, 0, sizeof abuf, &abuf);
    for (int t = 0; r == CL_SUCCESS && t < a->p.nops; t++)
        r = S->cl.clSetKernelArg(k, (cl_uint)(1 + t), sizeof(cl_mem), L->bufs[t] ? &L->bufs[t] : NULL);
    if (r == CL_SUCCESS && raw) {
        r = S->cl.clSetKernelArg(k, (cl_uint)(1 + a->p.nops), sizeof(cl_mem), &L->rplan);
        if (r == CL_SUCCESS)
            r = S->cl.clSetKernelArg(k, (cl_uint)(2 + a->p.nops), sizeof(cl_mem), L->range ? &L->range : NULL);
    }
    if (r == CL_SUCCESS && red) {
        cl_mem sc = a->scratch, fi = a->finals;
        r = S->cl.clSetKernelArg(k, (cl_uint)(1 + a->p.nops + raw), sizeof(cl_mem), sc ? (void *)&sc : NULL);
        if (r == CL_SUCCESS)
            r = S->cl.clSetKernelArg(k, (cl_uint)(2 + a->p.nops + raw), sizeof(cl_mem), fi ? (void *)&fi : NULL);
    }
    if (r == CL_SUCCESS)
        r = S->cl.clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    pthread_mutex_unlock(&L->m->lock);
    S->cl.clReleaseMemObject(abuf);
    return r == CL_SUCCESS ? 0 : lc_fail(L, NNK_EDEVICE, r, "launching", name);
}

/* dispatch.c asks before it picks a kernel only some back ends have
 * (rd_warp, CUDA's warp per row): OpenCL C has only the kernels of
 * kernel_names. */
static int lc_has(void *user, const char *suffix)
{
    const launch_ctx *L = user;
    for (int i = 0; i < OCL_NSUFFIX; i++)
        if (strcmp(kernel_names[i].cuda, suffix) == 0)
            return L->m->fn[i] != NULL;
    return 0;
}

/* Scratch of a split reduction: buffers of their own, released when the
 * kernels queued on them are done (OpenCL keeps them until then). */
static void *lc_alloc(void *user, size_t bytes)
{
    launch_ctx *L = user;
    if (L->nscratch == (int)(sizeof L->scratch / sizeof *L->scratch)) {
        fmt(L->err, L->errlen, EXT ": too many scratch buffers");
        L->status = NNK_EINTERNAL;
        return NULL;
    }
    cl_int r = CL_SUCCESS;
    cl_mem m = L->S->cl.clCreateBuffer(L->S->devs[L->device].ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &r);
    if (r != CL_SUCCESS || !m) {
        fmt(L->err, L->errlen, EXT ": clCreateBuffer(%zu bytes) for a split reduction: %s", bytes, cl_error_name(r));
        L->status = NNK_ENOMEM;
        return NULL;
    }
    L->scratch[L->nscratch++] = m;
    return m;
}

static void lc_release(void *user, void *ptr)
{
    launch_ctx *L = user;
    for (int i = 0; i < L->nscratch; i++)
        if (L->scratch[i] == ptr) {
            L->S->cl.clReleaseMemObject(L->scratch[i]);
            L->scratch[i] = NULL;
        }
}

/* The raw views and iteration shape of a plan (opencl/plan.h); -1 when a
 * raw view has more dimensions than the kernels take. */
static int rplan_from(nnk_cl_rplan *rp, const nnk_plan *plan)
{
    memset(rp, 0, sizeof *rp);
    if (plan->nraw < 0 || plan->nraw > NNK_CL_MAX_RAW || plan->iter_ndim < 0 || plan->iter_ndim > NNK_CL_MAX_ITER)
        return -1;
    rp->iter_ndim = plan->iter_ndim;
    rp->nraw = plan->nraw;
    for (int d = 0; d < plan->iter_ndim; d++) {
        rp->iter_shape[d] = plan->iter_shape[d];
        rp->iter_inner[d] = plan->iter_inner[d];
    }
    for (int r = 0; r < plan->nraw; r++) {
        const nnk_raw_view *v = &plan->raw[r];
        if (v->ndim > NNK_CL_MAX_DIMS)
            return -1;
        rp->raw[r].ndim = v->ndim;
        rp->raw[r].operand = v->operand;
        rp->raw[r].size = v->size;
        for (int d = 0; d < v->ndim; d++) {
            rp->raw[r].shape[d] = v->shape[d];
            rp->raw[r].strides[d] = v->strides[d];
        }
    }
    return 0;
}

/* Raw parameters and index(d): the views as a __constant buffer and the
 * range error as a zeroed __global one, which the kernels of the launch
 * share; read back into plan->range after them (a blocking read: the C
 * back end's launch returns when it is done too). */
static int raw_buffers(launch_ctx *L)
{
    ocl_state *S = L->S;
    ocl_device *d = &S->devs[L->device];
    nnk_cl_rplan rp;
    if (rplan_from(&rp, L->plan)) {
        fmt(L->err, L->errlen, EXT ": a raw parameter of '%s' has more dimensions than the OpenCL kernels take (%d)",
            L->m->prefix, NNK_CL_MAX_DIMS);
        L->status = NNK_EUNSUPPORTED;
        return -1;
    }
    cl_int r = CL_SUCCESS;
    L->rplan = S->cl.clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof rp, &rp, &r);
    if (r != CL_SUCCESS || !L->rplan)
        return lc_fail(L, NNK_EDEVICE, r ? r : CL_OUT_OF_RESOURCES, "the raw views of", L->m->prefix);
    if (!L->plan->range)
        return 0;
    nnk_range_error zero;
    memset(&zero, 0, sizeof zero);
    L->range = S->cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &r);
    if (r != CL_SUCCESS || !L->range)
        return lc_fail(L, NNK_EDEVICE, r ? r : CL_OUT_OF_RESOURCES, "the range error of", L->m->prefix);
    return 0;
}

static nnk_status launch(void *state, int32_t device, const nnk_ext_kernel *k, const nnk_plan *plan)
{
    ocl_state *S = state;
    ocl_program *m = k->handle;
    if (m->argmax && plan->nreduced == 0 && plan->nkept > 0)
        return S->host->set_error(NNK_ESHAPE, "kernel '%s': argmax/argmin of an empty slice", m->prefix);
    nnk_status s = device_ready(S, device);
    if (s)
        return s;
    if (plan->nops > NNK_CL_MAX_TENSORS || plan->nops > m->nops)
        return S->host->set_error(NNK_EUNSUPPORTED, EXT ": the call has %d operands; the OpenCL kernels of '%s' "
                                  "take %d (at most %d)", plan->nops, m->prefix, m->nops, NNK_CL_MAX_TENSORS);
    char err[1024] = "";
    launch_ctx L = {.S = S, .m = m, .device = device, .plan = plan, .err = err, .errlen = sizeof err};
    for (int t = 0; t < plan->nops && plan->nkept > 0; t++) {
        cl_mem mem = NULL;
        size_t off = 0;
        int32_t owner = -1;
        if (!plan->data[t])
            continue; /* an empty operand */
        if (!resolve(S, plan->data[t], 1, &mem, &off, &owner) || owner != device)
            return S->host->set_error(NNK_EINVAL, EXT ": operand %d of kernel '%s' is not memory of device %d", t,
                                      m->prefix, device);
        L.bufs[t] = mem;
        if (off % m->esize[t])
            return S->host->set_error(NNK_EINVAL, EXT ": operand %d of kernel '%s' is not aligned to its element "
                                      "(%u bytes)", t, m->prefix, m->esize[t]);
        L.offs[t] = (int64_t)(off / m->esize[t]);
    }
    nnk_cuda_launcher cl;
    memset(&cl, 0, sizeof cl);
    cl.user = &L;
    cl.launch = lc_launch;
    cl.has = lc_has;
    cl.alloc = lc_alloc;
    cl.release = lc_release;
    cl.num_sms = S->devs[device].units > 0 ? (int)S->devs[device].units : 16;
    /* A grid of a few groups per compute unit suits a GPU, whose items of
     * a grid-stride loop touch neighbouring addresses at each step.  A CPU
     * device (PoCL) runs a group's items one after the other, each through
     * its whole loop: strides of the grid's size make every step a cache
     * miss.  There a work-item per element (no cap) keeps each group on a
     * contiguous range. */
    if (S->devs[device].type & CL_DEVICE_TYPE_CPU)
        cl.max_grid = (unsigned)1 << 30;
    cl.block = NNK_CL_GROUP; /* dispatch.c's block: the work-group kernels' local size */
    cl.force = S->force;
    int rc = m->raw && plan->nkept > 0 ? raw_buffers(&L) : 0;
    if (rc == 0)
        rc = nnk_cuda_dispatch(m->prefix, m->reduction, &m->sizes, plan, &cl, err, sizeof err);
    if (rc == 0 && L.range) {
        cl_int r = S->cl.clEnqueueReadBuffer(S->devs[device].queue, L.range, CL_TRUE, 0, sizeof *plan->range,
                                             plan->range, 0, NULL, NULL);
        if (r != CL_SUCCESS)
            rc = lc_fail(&L, NNK_EDEVICE, r, "reading the range error of", m->prefix);
    }
    if (L.rplan)
        S->cl.clReleaseMemObject(L.rplan);
    if (L.range)
        S->cl.clReleaseMemObject(L.range);
    for (int i = 0; i < L.nscratch; i++)
        if (L.scratch[i])
            S->cl.clReleaseMemObject(L.scratch[i]);
    if (rc == 0)
        return NNK_OK;
    return S->host->set_error(L.status ? L.status : NNK_EUNSUPPORTED, "%s%s", strncmp(err, EXT, 6) ? EXT ": " : "",
                              err);
}

static const nnk_extension_ops ops = {
    NNK_EXT_OPS_COMMON,
    .name = EXT,
    .description = "OpenCL devices of every platform: generated OpenCL C built by the driver (libOpenCL.so.1 "
                   "loaded at run time)",
    .target = NNK_TARGET_OPENCL,
    .context = context,
    .kernel_load = NULL, /* no linked OpenCL code: modules only */
    .launch_stream = NULL,
    .copy_strided = copy_strided,
};

NNK_EXT_ENTRY(ops)
