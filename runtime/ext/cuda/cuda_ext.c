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

static const nnk_extension_ops ops = {
    .abi_version = NNK_EXTENSION_ABI_VERSION,
    .size = sizeof(nnk_extension_ops),
    .name = "cuda",
    .description = "NVIDIA GPUs: generated CUDA compiled by NVRTC, driver API (both loaded at run time)",
    .target = NNK_TARGET_CUDA,
    .flags = 0,
    .init = init,
    .fini = fini,
    .context = NULL, /* the default: cuda:half (half), cuda:float, cpu:float */
    .get_device_count = get_device_count,
    .get_devices = get_devices,
    .device_synchronize = device_synchronize,
    .clear_memory_cache = clear_memory_cache,
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .memset_zero = memset_zero,
    .copy = copy,
    .kernel_compile = kernel_compile,
    .kernel_load = kernel_load,
    .kernel_free = kernel_free,
    .launch = launch,
    .status = status,
    .launch_stream = launch_stream,
};

const nnk_extension_ops *nnk_extension_entry(uint32_t host_abi);
const nnk_extension_ops *nnk_extension_entry(uint32_t host_abi)
{
    return host_abi == NNK_EXTENSION_ABI_VERSION ? &ops : NULL;
}
