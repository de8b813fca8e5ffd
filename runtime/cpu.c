/* cpu.c - the built-in `cpu` extension: the host as a device.
 *
 * It is an ordinary instance of the extension vtable, so the registry,
 * contexts and launches treat it like any plugin.  Memory is host memory
 * (64-byte aligned for vector loads), kernels are generated C compiled by
 * the system C compiler (jit_cpu.c), and launches run on the thread pool
 * (exec.c).  Everything is synchronous.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static nnk_status cpu_count(void *state, int32_t *count)
{
    *count = 1;
    return NNK_OK;
}

static nnk_status cpu_devices(void *state, nnk_device_info *out, int32_t cap)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out[0].id = 0;
    snprintf(out[0].name, sizeof out[0].name, "cpu (%d threads)", rt_pool_threads());
    out[0].total_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    out[0].host_accessible = 1;
    return NNK_OK;
}

/* The processor's vendor from /proc/cpuinfo ("vendor_id" on x86,
 * "CPU implementer" elsewhere), the driver nnk itself, host memory. */
static nnk_status cpu_props(void *state, int32_t device, nnk_device_props *out)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && !out->vendor[0] && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon || (strncmp(line, "vendor_id", 9) != 0 && strncmp(line, "CPU implementer", 15) != 0))
            continue;
        colon += 1 + strspn(colon + 1, " \t");
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out->vendor, sizeof out->vendor, "%s", colon);
    }
    if (f)
        fclose(f);
    snprintf(out->driver_version, sizeof out->driver_version, "nnk %s", NNK_VERSION);
    out->unified_memory = 1;
    return NNK_OK;
}

static nnk_status cpu_sync(void *state, int32_t device)
{
    return NNK_OK; /* launches and copies complete before they return */
}

static nnk_status cpu_alloc(void *state, int32_t device, size_t bytes, void **ptr)
{
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p)
        return rt_error(NNK_ENOMEM, "out of host memory (%zu bytes)", bytes);
    *ptr = p;
    return NNK_OK;
}

static void cpu_free(void *state, int32_t device, void *ptr)
{
    free(ptr);
}

static nnk_status cpu_zero(void *state, int32_t device, void *ptr, size_t bytes)
{
    memset(ptr, 0, bytes);
    return NNK_OK;
}

static nnk_status cpu_copy(void *state, int32_t device, nnk_copy_kind kind, void *dst, const void *src, size_t bytes)
{
    memmove(dst, src, bytes);
    return NNK_OK;
}

static nnk_status cpu_compile(void *state, int32_t device, const nnk_kernel_source *src, nnk_ext_kernel *out)
{
    if (src->target != NNK_TARGET_C)
        return rt_error(NNK_EUNSUPPORTED, "the cpu extension compiles C, not target %d", src->target);
    /* an instance of a module (its interface given) is nnkc's C */
    return rt_jit_c(src->text, src->interface != NULL, src->symbol, src->opt_level, &out->desc, &out->handle);
}

static nnk_status cpu_load(void *state, int32_t device, const nnk_kernel_desc *desc, nnk_ext_kernel *out)
{
    if (!desc->run)
        return rt_error(NNK_EUNSUPPORTED, "kernel %s has no host code", desc->name ? desc->name : "?");
    out->desc = desc;
    out->handle = NULL;
    return NNK_OK;
}

static void cpu_kernel_free(void *state, nnk_ext_kernel *k)
{
    /* Compiled objects belong to the JIT cache (handle: the reference),
     * loaded descriptors to the caller (handle NULL). */
    if (rt_jit_is_job(k))
        rt_jit_job_free(k->handle);
    else if (k->handle)
        rt_jit_release(k->handle);
}

static nnk_status cpu_launch(void *state, int32_t device, const nnk_ext_kernel *k, const nnk_plan *plan)
{
    if (rt_jit_is_job(k)) /* compiling in the background (jit_cpu.c) */
        return rt_jit_job_launch(k->handle, plan);
    return rt_host_run(k->desc, plan);
}

const nnk_extension_ops rt_cpu_ops = {
    .abi_version = NNK_EXTENSION_ABI_VERSION,
    .size = sizeof(nnk_extension_ops),
    .name = "cpu",
    .description = "the host CPU: generated C compiled by the system C compiler, run on a thread pool",
    .target = NNK_TARGET_C,
    .flags = NNK_EXT_HOST_MEMORY,
    .get_device_count = cpu_count,
    .get_devices = cpu_devices,
    .device_synchronize = cpu_sync,
    .mem_alloc = cpu_alloc,
    .mem_free = cpu_free,
    .memset_zero = cpu_zero,
    .copy = cpu_copy,
    .kernel_compile = cpu_compile,
    .kernel_load = cpu_load,
    .kernel_free = cpu_kernel_free,
    .launch = cpu_launch,
    .get_device_props = cpu_props,
};
