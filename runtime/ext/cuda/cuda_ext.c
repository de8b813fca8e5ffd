/* cuda_ext.c - the `cuda` extension (libnnk_ext_cuda.so): NVIDIA GPUs
 * through the driver API and NVRTC, both loaded with dlopen.  The work is
 * cuda_core.c's; this file is the vtable.  Contexts list "cuda:half"
 * (type_config=half), "cuda:float", then "cpu:float".
 * docs/cuda-backend.md describes the extension. */
#include "config.h"

#include "cuda_core.h"

static nnk_status init(const nnk_host_api *host, void **state)
{
    cu_state *S;
    nnk_status s = cu_init(host, "cuda", &S);
    if (!s)
        *state = S;
    return s;
}

static void fini(void *state) { cu_fini(state); }
static nnk_status get_device_count(void *st, int32_t *n) { return cu_get_device_count(st, n); }
static nnk_status get_devices(void *st, nnk_device_info *o, int32_t cap) { return cu_get_devices(st, o, cap); }
static nnk_status get_device_props(void *st, int32_t d, nnk_device_props *o) { return cu_get_device_props(st, d, o); }
static nnk_status device_synchronize(void *st, int32_t d) { return cu_device_synchronize(st, d); }
static nnk_status clear_memory_cache(void *st) { return cu_clear_memory_cache(st); }
static nnk_status mem_alloc(void *st, int32_t d, size_t n, void **p) { return cu_mem_alloc(st, d, n, p); }
static void mem_free(void *st, int32_t d, void *p) { cu_mem_free(st, d, p); }
static nnk_status memset_zero(void *st, int32_t d, void *p, size_t n) { return cu_memset_zero(st, d, p, n); }
static nnk_status copy(void *st, int32_t d, nnk_copy_kind k, void *dst, const void *src, size_t n)
{
    return cu_copy(st, d, k, dst, src, n);
}
static nnk_status kernel_compile(void *st, int32_t d, const nnk_kernel_source *src, nnk_ext_kernel *out)
{
    return cu_kernel_compile(st, d, src, out);
}
static nnk_status kernel_load(void *st, int32_t d, const nnk_kernel_desc *desc, nnk_ext_kernel *out)
{
    return cu_kernel_load(st, d, desc, out);
}
static void kernel_free(void *st, nnk_ext_kernel *k) { cu_kernel_free(st, k); }
static nnk_status launch(void *st, int32_t d, const nnk_ext_kernel *k, const nnk_plan *plan)
{
    return cu_launch(st, d, k, plan);
}
static const char *status(void *st) { return cu_status(st); }
static nnk_status launch_stream(void *st, const nnk_kernel_desc *desc, const nnk_plan *plan, void *stream)
{
    return cu_launch_stream(st, desc, plan, stream);
}

static nnk_status copy_strided(void *st, int32_t d, int32_t ndim, const int64_t *shape, void *dst, const int64_t *ds,
                               const void *src, const int64_t *ss, size_t esize)
{
    return cu_copy_strided(st, d, ndim, shape, dst, ds, src, ss, esize);
}

static const nnk_extension_ops ops = {
    NNK_EXT_OPS_COMMON,
    .name = "cuda",
    .description = "NVIDIA GPUs: generated CUDA compiled by NVRTC, driver API (both loaded at run time)",
    .target = NNK_TARGET_CUDA,
    .context = NULL, /* the default: cuda:half (half), cuda:float, cpu:float */
    .kernel_load = kernel_load,
    .launch_stream = launch_stream,
    .copy_strided = copy_strided,
};

NNK_EXT_ENTRY(ops)
