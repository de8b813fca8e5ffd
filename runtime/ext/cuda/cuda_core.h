/* cuda_core.h - what the cuda and cudnn extensions share: the driver and
 * NVRTC loaded with dlopen, devices with their primary contexts and
 * streams, memory, the NVRTC JIT with its caches, modules, and launches
 * through dispatch.c.  Each extension links its own copy (cuda_core.c is
 * compiled into both shared objects), so they share no state at run time
 * except the driver's primary contexts.  Internal: cu_ names stay inside
 * the shared object (only nnk_extension_entry is exported). */
#ifndef NNK_CUDA_CORE_H
#define NNK_CUDA_CORE_H

#include <pthread.h>
#include <stdbool.h>

#include "cuda_api.h"
#include "dispatch.h"
#include "nnk/extension.h"
#include "../ext_common.h"

typedef struct cu_fns {
#define NNK_X(name, sym, ret, args) ret(*name) args;
    NNK_CU_FUNCTIONS(NNK_X)
#undef NNK_X
} cu_fns;

typedef struct cu_optional_fns {
#define NNK_X(name, sym, ret, args) ret(*name) args;
    NNK_CU_OPTIONAL(NNK_X)
#undef NNK_X
} cu_optional_fns;

typedef struct nvrtc_fns {
#define NNK_X(name, sym, ret, args) ret(*name) args;
    NNK_NVRTC_FUNCTIONS(NNK_X)
#undef NNK_X
} nvrtc_fns;

typedef struct cu_device {
    CUdevice dev;
    char name[128];
    size_t total_memory;
    int sms, cc;                 /* streaming multiprocessors; compute capability 10*major+minor */
    pthread_mutex_t lock;
    CUcontext ctx;               /* the primary context, retained on first use */
    CUstream stream;             /* the extension's stream on this device (non-blocking) */
    bool pools;                  /* stream-ordered allocation (cuMemAllocAsync) for scratch */
    /* page-locked staging of host<->device copies (CU_STAGE_BYTES, two
     * halves), allocated at the first copy that takes it; stage_failed:
     * the driver would not pin it (copies are pageable until the memory
     * cache is cleared) */
    pthread_mutex_t stage_lock;
    void *stage;
    bool stage_failed;
} cu_device;
/* Copies of at least CU_STAGE_MIN bytes go through the staging, in chunks
 * of half of it. */
enum { CU_STAGE_BYTES = 8 << 20, CU_STAGE_MIN = 256 << 10 };

/* A loaded module: the kernels of one instance on one device. */
enum { CU_NSUFFIX = 11 };
typedef struct cu_module {
    struct cu_module *next;
    char key[65];                /* the compiled code's cache key, or "" for linked code */
    const void *image;           /* linked code: the descriptor's image */
    int32_t device;
    CUcontext ctx;
    CUmodule mod;
    long refs;
    char prefix[128];            /* kernel names are PREFIX__ew_c, ... */
    int reduction;
    int argmax;                  /* an argmax/argmin: an empty slice is an error */
    int raw;                     /* reads raw parameters or index(d) (NAME__cu_raw): nnk_cuda_rargs */
    nnk_cuda_sizes sizes;
    CUfunction fn[CU_NSUFFIX];
    size_t srow_shared;          /* NAME__rd_srow's dynamic shared memory at most (its attribute is raised
                                  * to the device's opt-in limit at load), 0: no rd_srow */
} cu_module;

/* What nnk_ext_kernel.handle points to. */
typedef struct cu_kernel {
    cu_module *m;
    int32_t reduce_op;           /* NNK_REDUCE_*: the cudnn extension may run it itself */
} cu_kernel;

typedef struct cu_state {
    const nnk_host_api *host;
    const char *ext;             /* "cuda" or "cudnn": the allocator scratch comes from */
    void *libcuda;
    cu_fns cu;
    cu_optional_fns cuo;
    int driver_version;
    int ndevices;
    cu_device *devs;
    char status[768];
    /* test and tuning knobs (NNK_CUDA_BLOCK, NNK_CUDA_MAX_GRID, NNK_CUDA_FORCE, NNK_CUDA_PARTS) */
    unsigned block, max_grid;
    int force, parts;
    bool fmad;                   /* NNK_CUDA_FMAD=1: NVRTC may contract a * b + c (--fmad=true) */
    bool force_ptx;              /* NNK_CUDA_PTX=1: PTX JIT by the driver, no cubins */
    bool ofast_max;              /* tests/cuda/nvrtc_check only: opt_level 0 is --Ofast-compile=max
                                  * (NVRTC 12.8+), which changes every later compile of the process */
    /* NVRTC, loaded at the first compile */
    pthread_mutex_t nvrtc_lock;
    bool nvrtc_tried;
    void *libnvrtc;
    nvrtc_fns nv;
    int nvrtc_major, nvrtc_minor;
    int archs[64], narchs;
    char nvrtc_error[1024];
    char include_dir[1024];      /* holds cuda_fp16.h, or "" for nnk's built-in fallback headers */
    /* NVRTC compiles with different options never run at once (cuda_core.c,
     * "the settings gate"): the options of those running (gate_set, gate_active
     * of them) and those a waiting compile has (gate_next, "" if none) */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_cv;
    int gate_active;
    unsigned long gate_waits;    /* compiles that waited for other options to end */
    char gate_set[1400], gate_next[1400];
    /* loaded modules (memory cache) */
    pthread_mutex_t mod_lock;
    cu_module *modules;
    unsigned long compiles, disk_hits, memory_hits;
    /* cubins the driver refused, loaded as PTX it compiled instead */
    unsigned long ptx_fallbacks;
    char fallback_why[256];
} cu_state;

nnk_status cu_init(const nnk_host_api *host, const char *ext, cu_state **out);
void cu_fini(cu_state *S);
/* The devices (or why none), the NVRTC in use against the driver, and
 * the modules the driver compiled from PTX because it refused a cubin; in
 * a buffer of the calling thread, valid until its next call. */
const char *cu_status(cu_state *S);
/* The CUDA error's name and text, "CUDA_ERROR_X: text". */
const char *cu_error_text(cu_state *S, CUresult r, char *buf, size_t n);
nnk_status cu_fail(cu_state *S, nnk_status s, CUresult r, const char *what);

/* Makes device d's primary context current (retaining it and creating the
 * stream on first use); cu_leave restores the previous one. */
nnk_status cu_enter(cu_state *S, int32_t d);
void cu_leave(cu_state *S);

nnk_status cu_get_device_count(cu_state *S, int32_t *count);
nnk_status cu_get_devices(cu_state *S, nnk_device_info *out, int32_t cap);
nnk_status cu_get_device_props(cu_state *S, int32_t device, nnk_device_props *out);
nnk_status cu_device_synchronize(cu_state *S, int32_t device);
nnk_status cu_clear_memory_cache(cu_state *S);
nnk_status cu_mem_alloc(cu_state *S, int32_t device, size_t bytes, void **ptr);
void cu_mem_free(cu_state *S, int32_t device, void *ptr);
nnk_status cu_memset_zero(cu_state *S, int32_t device, void *ptr, size_t bytes);
nnk_status cu_copy(cu_state *S, int32_t device, nnk_copy_kind kind, void *dst, const void *src, size_t bytes);
/* A strided device-to-device copy as count 2-D copies (cuMemcpy2DAsync):
 * rows of width bytes, height rows at pitches dpitch/spitch, the copies
 * dstep/sstep bytes apart.  cu_rect_plan: 0 when the layout is one of
 * those (tests check it against a copy element by element), -1 if not. */
typedef struct cu_rect {
    size_t width, height, dpitch, spitch, count;
    int64_t dstep, sstep;
} cu_rect;
int cu_rect_plan(int32_t ndim, const int64_t *shape, const int64_t *dst_strides, const int64_t *src_strides,
                 size_t esize, cu_rect *r);
nnk_status cu_copy_strided(cu_state *S, int32_t device, int32_t ndim, const int64_t *shape, void *dst,
                           const int64_t *dst_strides, const void *src, const int64_t *src_strides, size_t esize);
nnk_status cu_kernel_compile(cu_state *S, int32_t device, const nnk_kernel_source *src, nnk_ext_kernel *out);
nnk_status cu_kernel_load(cu_state *S, int32_t device, const nnk_kernel_desc *desc, nnk_ext_kernel *out);
void cu_kernel_free(cu_state *S, nnk_ext_kernel *k);
/* Runs a kernel's generated CUDA on the device's stream. */
nnk_status cu_launch(cu_state *S, int32_t device, const nnk_ext_kernel *k, const nnk_plan *plan);
nnk_status cu_launch_stream(cu_state *S, const nnk_kernel_desc *desc, const nnk_plan *plan, void *stream);

/* NVRTC: loads it (once); NNK_ECOMPILE with the reason when absent. */
nnk_status cu_nvrtc_ready(cu_state *S);
/* The JIT without a device (also for tests): the code of src for compute
 * capability cc (75 = sm_75), from the disk cache or NVRTC; *image is
 * malloc'ed; *ptx tells PTX (a GPU newer than NVRTC) from a cubin.
 * opt_level 0 compiles fast (--Ofast-compile=max where NVRTC has it);
 * -1 runs the front end only (--fdevice-syntax-only; no image). */
nnk_status cu_jit(cu_state *S, int cc, const char *src, const char *prefix, int32_t opt_level, char **image,
                  size_t *size, bool *ptx, char key[65]);
/* The PTX NVRTC makes of src for compute_CC with the options of cu_jit
 * (the PTX lint of tests/cuda); *ptx is malloc'ed, NUL-terminated. */
nnk_status cu_jit_ptx(cu_state *S, int cc, const char *src, const char *prefix, int32_t opt_level, char **ptx,
                      size_t *size);

#endif
