/* ext_common.h - what every device extension of runtime/ext/ (cuda, cudnn,
 * opencl) needs the same way: bounded formatting, the environment through
 * the host, and the vtable's members that each of them names alike.
 * Internal (not installed): an extension outside the tree writes its own
 * table against nnk/extension.h (docs/extensions.md).
 *
 * The table: each extension defines static hooks with the conventional
 * names (init, fini, get_device_count, ...) and writes
 *
 *     static const nnk_extension_ops ops = {
 *         NNK_EXT_OPS_COMMON,
 *         .name = "opencl", .description = "...", .target = NNK_TARGET_OPENCL,
 *         .context = context, ...the hooks only it has...
 *     };
 *     NNK_EXT_ENTRY(ops)
 */
#ifndef NNK_EXT_COMMON_H
#define NNK_EXT_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "nnk/extension.h"

/* snprintf into buf[n] (truncating; always terminated when n > 0). */
static inline void ext_fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static inline void ext_fmt(char *buf, size_t n, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, n, f, ap);
    va_end(ap);
}

/* An environment variable through the host (which an application may
 * override), else the process's; an empty value counts as unset. */
static inline const char *ext_env(const nnk_host_api *host, const char *name)
{
    const char *v = host && host->getenv ? host->getenv(name) : getenv(name);
    return v && *v ? v : NULL;
}

/* The members every extension of the tree fills with hooks of these
 * names; the rest (name, description, target, flags, context,
 * kernel_load, launch_stream, copy_strided) each table writes itself. */
#define NNK_EXT_OPS_COMMON                                                                                 \
    .abi_version = NNK_EXTENSION_ABI_VERSION, .size = sizeof(nnk_extension_ops), .init = init, .fini = fini, \
    .get_device_count = get_device_count, .get_devices = get_devices, .device_synchronize = device_synchronize, \
    .clear_memory_cache = clear_memory_cache, .mem_alloc = mem_alloc, .mem_free = mem_free,                 \
    .memset_zero = memset_zero, .copy = copy, .kernel_compile = kernel_compile, .kernel_free = kernel_free,  \
    .launch = launch, .status = status, .get_device_props = get_device_props

/* The exported entry point: the table for a host of this ABI, else NULL. */
#define NNK_EXT_ENTRY(ops)                                                                                 \
    const nnk_extension_ops *nnk_extension_entry(uint32_t host_abi);                                      \
    const nnk_extension_ops *nnk_extension_entry(uint32_t host_abi)                                       \
    {                                                                                                      \
        return host_abi == NNK_EXTENSION_ABI_VERSION ? &(ops) : NULL;                                      \
    }

#endif /* NNK_EXT_COMMON_H */
