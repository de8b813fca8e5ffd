/* host2.c - a third-party nnk extension, built out of tree as one shared
 * object against the installed headers:
 *
 *     cc -shared -fPIC -I$(pkg-config --variable=includedir nnk) host2.c -o libnnk_ext_host2.so
 *
 * "host2" pretends to be a device with its own memory: the runtime never
 * touches host2 memory directly (no NNK_EXT_HOST_MEMORY flag) and moves
 * data through copy().  Kernels run on the host by calling desc->run over
 * the whole plan, which is all the ABI needs (a real device would launch
 * its own code here).  Kernels from .nnk source are generated C, compiled
 * through the runtime's C JIT (host->compile_c).  See docs/extensions.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nnk/extension.h>

static const nnk_host_api *host;

/* Two devices, to show device ids. */
enum { NDEVICES = 2 };

static nnk_status init(const nnk_host_api *h, void **state)
{
    if (h->abi_version != NNK_EXTENSION_ABI_VERSION)
        return NNK_EABI;
    host = h;
    *state = NULL;
    return NNK_OK;
}

static void fini(void *state) {}

static nnk_status get_device_count(void *state, int32_t *count)
{
    *count = NDEVICES;
    return NNK_OK;
}

static nnk_status get_devices(void *state, nnk_device_info *out, int32_t cap)
{
    for (int32_t i = 0; i < cap; i++) {
        out[i].id = i;
        snprintf(out[i].name, sizeof out[i].name, "host2 simulated device %d", i);
        out[i].total_memory = 0; /* unknown */
        out[i].host_accessible = 0;
    }
    return NNK_OK;
}

static nnk_status device_synchronize(void *state, int32_t device)
{
    return NNK_OK; /* everything below is synchronous */
}

static nnk_status mem_alloc(void *state, int32_t device, size_t bytes, void **ptr)
{
    void *p = aligned_alloc(64, bytes);
    if (!p)
        return host->set_error(NNK_ENOMEM, "host2: out of memory (%zu bytes)", bytes);
    *ptr = p;
    return NNK_OK;
}

static void mem_free(void *state, int32_t device, void *ptr)
{
    free(ptr);
}

static nnk_status memset_zero(void *state, int32_t device, void *ptr, size_t bytes)
{
    memset(ptr, 0, bytes);
    return NNK_OK;
}

static nnk_status copy(void *state, int32_t device, nnk_copy_kind kind, void *dst, const void *src, size_t bytes)
{
    memmove(dst, src, bytes);
    return NNK_OK;
}

/* Generated C: the runtime's JIT builds it; the descriptor it returns
 * stays valid until nnk_shutdown(). */
static nnk_status kernel_compile(void *state, int32_t device, const nnk_kernel_source *src, nnk_ext_kernel *out)
{
    if (src->target != NNK_TARGET_C)
        return host->set_error(NNK_EUNSUPPORTED, "host2 compiles C only");
    out->handle = NULL;
    return host->compile_c(src->text, src->symbol, src->opt_level, &out->desc);
}

/* Linked code (nnkc -c objects, hand-written descriptors): run it as is. */
static nnk_status kernel_load(void *state, int32_t device, const nnk_kernel_desc *desc, nnk_ext_kernel *out)
{
    out->desc = desc;
    out->handle = NULL;
    return NNK_OK;
}

static void kernel_free(void *state, nnk_ext_kernel *k) {}

/* One call over every output position, on the calling thread. */
static nnk_status launch(void *state, int32_t device, const nnk_ext_kernel *k, const nnk_plan *plan)
{
    if (plan->nkept > 0)
        k->desc->run(plan, 0, plan->nkept);
    return NNK_OK;
}

static const nnk_extension_ops ops = {
    .abi_version = NNK_EXTENSION_ABI_VERSION,
    .size = sizeof(nnk_extension_ops),
    .name = "host2",
    .description = "sample extension: a simulated device that runs kernels on the host",
    .target = NNK_TARGET_C,
    .flags = 0,
    .init = init,
    .fini = fini,
    .context = NULL, /* the default: host2:float (host2:half), then cpu:float */
    .get_device_count = get_device_count,
    .get_devices = get_devices,
    .device_synchronize = device_synchronize,
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .memset_zero = memset_zero,
    .copy = copy,
    .kernel_compile = kernel_compile,
    .kernel_load = kernel_load,
    .kernel_free = kernel_free,
    .launch = launch,
};

const nnk_extension_ops *nnk_extension_entry(uint32_t host_abi)
{
    return host_abi == NNK_EXTENSION_ABI_VERSION ? &ops : NULL;
}
