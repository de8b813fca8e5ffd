/* extension.c - the extension registry: NNabla's list_extensions and
 * import_extension, and the per-extension calls (devices, memory).
 *
 * An extension is loaded once per process and stays loaded until
 * nnk_shutdown().  Shared objects are named libnnk_ext_NAME.so (the `lib`
 * prefix and `.so` suffix make them ordinary libtool modules) and found
 * in the directories of NNK_EXTENSION_PATH, then in NNK_EXTENSION_DIR.
 */
#include "internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NNK_EXTENSION_DIR
#define NNK_EXTENSION_DIR "/usr/local/lib/nnk/extensions"
#endif

enum { MAX_EXTENSIONS = 64 };

static struct {
    pthread_mutex_t lock;
    rt_ext *loaded[MAX_EXTENSIONS];
    int nloaded;
    const nnk_extension_ops *registered[MAX_EXTENSIONS];
    int nregistered;
    char *names[4 * MAX_EXTENSIONS]; /* every name ever listed (kept until shutdown) */
    int nnames;
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

static nnk_status host_set_error(nnk_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_verror(s, fmt, ap);
    va_end(ap);
    return s;
}

static const char *host_getenv(const char *name)
{
    return getenv(name);
}

static nnk_status host_compile_c(const char *source, const char *symbol, int32_t opt_level,
                                 const nnk_kernel_desc **desc)
{
    return rt_jit_c(source, symbol, opt_level, desc, NULL);
}

/* The disk cache for extensions: a NULL argument is the caller's bug
 * (NNK_EINVAL), not an absent entry. */
static nnk_status host_cache_load(const char *key, const char *suffix, void **data, size_t *size)
{
    if (!key || !suffix || !data || !size)
        return rt_error(NNK_EINVAL, "cache_load: key, suffix, data or size is NULL");
    return rt_cache_load(key, suffix, data, size);
}

static nnk_status host_cache_store(const char *key, const char *suffix, const void *data, size_t size)
{
    if (!key || !suffix || (!data && size))
        return rt_error(NNK_EINVAL, "cache_store: key, suffix or data is NULL");
    return rt_cache_store(key, suffix, data ? data : "", size);
}

/* Scratch blocks of extensions: the allocator and the block, so that
 * block_free needs nothing else. */
typedef struct host_block {
    rt_allocator *a;
    rt_block *b;
} host_block;

static nnk_status host_block_alloc(const char *ext, int32_t device, size_t bytes, void **ptr, void **block)
{
    if (!ext || !ptr || !block)
        return rt_error(NNK_EINVAL, "block_alloc: ext, ptr or block is NULL");
    rt_ext *e;
    nnk_status s = rt_ext_import(ext, strlen(ext), &e);
    if (s)
        return s;
    if (device < 0 || device >= e->ndevices)
        return rt_error(NNK_EINVAL, "block_alloc: extension '%s' has no device %d", ext, device);
    host_block *h = rt_malloc(sizeof *h);
    if (!h)
        return NNK_ENOMEM;
    if (!(h->a = rt_ext_allocator(e, device))) {
        free(h);
        return NNK_ENOMEM;
    }
    if ((s = rt_alloc(h->a, bytes ? bytes : 1, &h->b))) {
        free(h);
        return s;
    }
    *ptr = h->b->ptr;
    *block = h;
    return NNK_OK;
}

static void host_block_free(void *block)
{
    host_block *h = block;
    if (h) {
        rt_dealloc(h->a, h->b);
        free(h);
    }
}

static void host_sha256_hex(const void *data, size_t size, char hex[65])
{
    uint8_t d[32];
    rt_sha256 h;
    rt_sha256_init(&h);
    rt_sha256_update(&h, data, size);
    rt_sha256_final(&h, d);
    rt_sha256_hex(d, hex);
}

const nnk_host_api rt_host_api = {
    .abi_version = NNK_EXTENSION_ABI_VERSION,
    .size = sizeof(nnk_host_api),
    .set_error = host_set_error,
    .run_host = rt_host_run,
    .compile_c = host_compile_c,
    .getenv = host_getenv,
    .block_alloc = host_block_alloc,
    .block_free = host_block_free,
    .cache_load = host_cache_load,
    .cache_store = host_cache_store,
    .sha256_hex = host_sha256_hex,
};

const char *nnk_extension_dir(void)
{
    return NNK_EXTENSION_DIR;
}

static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || n > 31)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* Calls fn(dir, arg) for each search directory in order; stops when it
 * returns true. */
static bool each_dir(bool (*fn)(const char *dir, void *arg), void *arg)
{
    const char *path = getenv("NNK_EXTENSION_PATH");
    if (path) {
        char dir[4096];
        for (const char *p = path; *p;) {
            const char *colon = strchr(p, ':');
            size_t n = colon ? (size_t)(colon - p) : strlen(p);
            if (n && n < sizeof dir) {
                memcpy(dir, p, n);
                dir[n] = 0;
                if (fn(dir, arg))
                    return true;
            }
            p += n + (colon != NULL);
        }
    }
    return fn(NNK_EXTENSION_DIR, arg);
}

/* ---- listing ------------------------------------------------------------ */

/* With reg.lock held: the persistent copy of a name. */
static const char *keep_name(const char *s, size_t n)
{
    for (int i = 0; i < reg.nnames; i++)
        if (strlen(reg.names[i]) == n && memcmp(reg.names[i], s, n) == 0)
            return reg.names[i];
    if (reg.nnames == (int)(sizeof reg.names / sizeof reg.names[0]))
        return NULL;
    char *c = malloc(n + 1);
    if (!c)
        return NULL;
    memcpy(c, s, n);
    c[n] = 0;
    return reg.names[reg.nnames++] = c;
}

typedef struct listing {
    const char **names;
    int32_t cap, count;
} listing;

static void list_add(listing *l, const char *name, size_t n)
{
    const char *k = keep_name(name, n);
    if (!k || l->count == l->cap)
        return;
    for (int32_t i = 0; i < l->count; i++)
        if (l->names[i] == k)
            return;
    l->names[l->count++] = k;
}

static bool scan_dir(const char *dir, void *arg)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    /* readdir order is arbitrary: sort each directory's names for stable output. */
    char *found[256];
    int nfound = 0;
    while ((e = readdir(d)) && nfound < 256) {
        size_t n = strlen(e->d_name);
        if (n > 14 && strncmp(e->d_name, "libnnk_ext_", 11) == 0 && strcmp(e->d_name + n - 3, ".so") == 0 &&
            valid_name(e->d_name + 11, n - 14))
            found[nfound++] = strndup(e->d_name + 11, n - 14);
    }
    closedir(d);
    for (int i = 1; i < nfound; i++)
        for (int j = i; j > 0 && found[j] && found[j - 1] && strcmp(found[j - 1], found[j]) > 0; j--) {
            char *t = found[j];
            found[j] = found[j - 1];
            found[j - 1] = t;
        }
    for (int i = 0; i < nfound; i++) {
        if (found[i])
            list_add(arg, found[i], strlen(found[i]));
        free(found[i]);
    }
    return false;
}

nnk_status nnk_list_extensions(const char **names, int32_t cap, int32_t *count)
{
    if (!count || cap < 0 || (cap > 0 && !names))
        return rt_error(NNK_EINVAL, "nnk_list_extensions: count is NULL, or cap > 0 with names NULL");
    /* The listing is made whole, then cut to cap, so that *count is exact. */
    const char *all[4 * MAX_EXTENSIONS];
    listing l = {all, (int32_t)(sizeof all / sizeof all[0]), 0};
    pthread_mutex_lock(&reg.lock);
    list_add(&l, "cpu", 3);
    for (int i = 0; i < reg.nregistered; i++)
        list_add(&l, reg.registered[i]->name, strlen(reg.registered[i]->name));
    for (int i = 0; i < reg.nloaded; i++)
        list_add(&l, reg.loaded[i]->ops->name, strlen(reg.loaded[i]->ops->name));
    each_dir(scan_dir, &l);
    pthread_mutex_unlock(&reg.lock);
    for (int32_t i = 0; i < l.count && i < cap; i++)
        names[i] = all[i];
    *count = l.count;
    return NNK_OK;
}

/* ---- importing ------------------------------------------------------------ */

typedef struct finding {
    const char *file;    /* libnnk_ext_NAME.so */
    char path[4096];
    rt_str searched;
} finding;

static bool find_file(const char *dir, void *arg)
{
    finding *f = arg;
    rt_str_printf(&f->searched, "%s%s", f->searched.len ? ", " : "", dir);
    snprintf(f->path, sizeof f->path, "%s/%s", dir, f->file);
    return access(f->path, F_OK) == 0;
}

static nnk_status check_ops(const nnk_extension_ops *ops, const char *name, const char *where)
{
    if (!ops)
        return rt_error(NNK_EABI, "extension %s (%s) refused libnnk's extension ABI version %d", name, where,
                        NNK_EXTENSION_ABI_VERSION);
    if (ops->abi_version != NNK_EXTENSION_ABI_VERSION)
        return rt_error(NNK_EABI, "extension %s (%s) was built for extension ABI version %u; libnnk has version %d",
                        name, where, ops->abi_version, NNK_EXTENSION_ABI_VERSION);
    if (ops->size < offsetof(nnk_extension_ops, launch) + sizeof ops->launch)
        return rt_error(NNK_EABI, "extension %s (%s) has a truncated vtable (size %u)", name, where, ops->size);
    if (!ops->name || strcmp(ops->name, name) != 0)
        return rt_error(NNK_EABI, "extension %s (%s) calls itself '%s'", name, where, ops->name ? ops->name : "(null)");
    const char *missing = !ops->get_device_count ? "get_device_count" : !ops->get_devices ? "get_devices"
                        : !ops->device_synchronize ? "device_synchronize" : !ops->mem_alloc ? "mem_alloc"
                        : !ops->mem_free ? "mem_free" : !ops->memset_zero ? "memset_zero" : !ops->copy ? "copy"
                        : !ops->kernel_free ? "kernel_free" : !ops->launch ? "launch" : NULL;
    if (missing)
        return rt_error(NNK_EABI, "extension %s (%s) lacks the required hook %s", name, where, missing);
    return NNK_OK;
}

/* With reg.lock held. */
static nnk_status load(const char *name, rt_ext **out)
{
    for (int i = 0; i < reg.nloaded; i++)
        if (strcmp(reg.loaded[i]->ops->name, name) == 0)
            return *out = reg.loaded[i], NNK_OK;
    if (reg.nloaded == MAX_EXTENSIONS)
        return rt_error(NNK_EUNSUPPORTED, "too many extensions loaded (%d)", MAX_EXTENSIONS);

    const nnk_extension_ops *ops = NULL;
    void *dl = NULL;
    char *path = NULL;
    if (strcmp(name, "cpu") == 0)
        ops = &rt_cpu_ops;
    for (int i = 0; !ops && i < reg.nregistered; i++)
        if (strcmp(reg.registered[i]->name, name) == 0)
            ops = reg.registered[i];
    if (!ops) {
        char file[64];
        snprintf(file, sizeof file, "libnnk_ext_%s.so", name);
        finding f = {.file = file};
        bool found = each_dir(find_file, &f);
        if (!found) {
            nnk_status s = rt_error(NNK_ENOTFOUND,
                                    "extension '%s' not found: no %s in NNK_EXTENSION_PATH or the extension directory (searched: %s)",
                                    name, file, f.searched.s ? f.searched.s : "");
            rt_str_free(&f.searched);
            return s;
        }
        rt_str_free(&f.searched);
        dl = dlopen(f.path, RTLD_NOW | RTLD_LOCAL);
        if (!dl) {
            const char *e = dlerror();
            return rt_error(NNK_EIO, "cannot load extension '%s' from %s: %s", name, f.path, e ? e : "dlopen failed");
        }
        nnk_extension_entry_fn entry;
        *(void **)&entry = dlsym(dl, NNK_EXTENSION_ENTRY);
        if (!entry) {
            dlclose(dl);
            return rt_error(NNK_EABI, "%s is not an nnk extension: it has no symbol %s", f.path, NNK_EXTENSION_ENTRY);
        }
        ops = entry(NNK_EXTENSION_ABI_VERSION);
        path = rt_strdup(f.path);
        nnk_status s = path ? check_ops(ops, name, f.path) : NNK_ENOMEM;
        if (s) {
            free(path);
            dlclose(dl);
            return s;
        }
    } else {
        nnk_status s = check_ops(ops, name, "built in");
        if (s)
            return s;
    }

    rt_ext *e = rt_calloc(1, sizeof(nnk_extension));
    if (!e) {
        free(path);
        if (dl)
            dlclose(dl);
        return NNK_ENOMEM;
    }
    e->ops = ops;
    e->dl = dl;
    e->path = path;
    pthread_mutex_init(&e->lock, NULL);
    unsigned long serial = rt_error_serial();
    nnk_status s = ops->init ? ops->init(&rt_host_api, &e->state) : NNK_OK;
    if (s && rt_error_serial() == serial)
        rt_error(s, "the init hook failed");
    int32_t n = 0;
    if (!s) {
        serial = rt_error_serial();
        s = ops->get_device_count(e->state, &n);
        if (s && rt_error_serial() == serial)
            rt_error(s, "get_device_count failed");
        if (!s && n < 0)
            s = rt_error(NNK_EDEVICE, "get_device_count returned %d", n);
        if (s && ops->fini)
            ops->fini(e->state);
    }
    if (!s && n > 0 && !(e->alloc = rt_calloc((size_t)n, sizeof *e->alloc))) {
        if (ops->fini)
            ops->fini(e->state);
        s = NNK_ENOMEM;
    }
    if (s) {
        rt_error_prefix(s, "cannot initialise extension '%s'", name);
        pthread_mutex_destroy(&e->lock);
        free(e);
        free(path);
        if (dl)
            dlclose(dl);
        return s;
    }
    e->ndevices = n;
    reg.loaded[reg.nloaded++] = e;
    *out = e;
    return NNK_OK;
}

nnk_status rt_ext_import(const char *name, size_t len, rt_ext **out)
{
    if (!valid_name(name, len))
        return rt_error(NNK_EINVAL, "bad extension name '%.*s' (expected [a-z0-9_]+, at most 31 characters)",
                        (int)(len > 64 ? 64 : len), name);
    char buf[32];
    memcpy(buf, name, len);
    buf[len] = 0;
    pthread_mutex_lock(&reg.lock);
    nnk_status s = load(buf, out);
    pthread_mutex_unlock(&reg.lock);
    return s;
}

rt_ext *rt_cpu_ext(void)
{
    rt_ext *e = NULL;
    return rt_ext_import("cpu", 3, &e) ? NULL : e;
}

nnk_status nnk_import_extension(const char *name, nnk_extension **ext)
{
    if (!name || !ext)
        return rt_error(NNK_EINVAL, "nnk_import_extension: %s is NULL", !name ? "name" : "ext");
    rt_ext *e;
    nnk_status s = rt_ext_import(name, strlen(name), &e);
    if (!s)
        *ext = (nnk_extension *)e;
    return s;
}

nnk_status nnk_register_extension(const nnk_extension_ops *ops)
{
    if (!ops || !ops->name)
        return rt_error(NNK_EINVAL, "nnk_register_extension: ops or ops->name is NULL");
    if (!valid_name(ops->name, strlen(ops->name)))
        return rt_error(NNK_EINVAL, "bad extension name '%s' (expected [a-z0-9_]+)", ops->name);
    nnk_status s = check_ops(ops, ops->name, "registered");
    if (s)
        return s;
    pthread_mutex_lock(&reg.lock);
    bool taken = strcmp(ops->name, "cpu") == 0;
    for (int i = 0; i < reg.nregistered; i++)
        taken |= strcmp(reg.registered[i]->name, ops->name) == 0;
    if (taken)
        s = rt_error(NNK_EINVAL, "an extension named '%s' is already registered", ops->name);
    else if (reg.nregistered == MAX_EXTENSIONS)
        s = rt_error(NNK_EUNSUPPORTED, "too many registered extensions");
    else
        reg.registered[reg.nregistered++] = ops;
    pthread_mutex_unlock(&reg.lock);
    return s;
}

/* ---- per-extension calls ------------------------------------------------------ */

const char *nnk_extension_name(const nnk_extension *ext)
{
    return ext ? ext->ext.ops->name : NULL;
}

static nnk_status check_device(const rt_ext *e, int32_t device, const char *fn)
{
    if (device < 0 || device >= e->ndevices)
        return rt_error(NNK_EINVAL, "%s: device %d out of range: extension '%s' has %d device%s", fn, device,
                        e->ops->name, e->ndevices, e->ndevices == 1 ? "" : "s");
    return NNK_OK;
}

rt_allocator *rt_ext_allocator(rt_ext *e, int32_t device)
{
    pthread_mutex_lock(&e->lock);
    if (!e->alloc[device])
        e->alloc[device] = rt_allocator_new(e, device);
    rt_allocator *a = e->alloc[device];
    pthread_mutex_unlock(&e->lock);
    return a;
}

nnk_status nnk_extension_device_synchronize(nnk_extension *ext, int32_t device)
{
    if (!ext)
        return rt_error(NNK_EINVAL, "nnk_extension_device_synchronize: ext is NULL");
    rt_ext *e = &ext->ext;
    nnk_status s = check_device(e, device, "nnk_extension_device_synchronize");
    return s ? s : e->ops->device_synchronize(e->state, device);
}

nnk_status nnk_extension_get_device_count(nnk_extension *ext, int32_t *count)
{
    if (!ext || !count)
        return rt_error(NNK_EINVAL, "nnk_extension_get_device_count: %s is NULL", !ext ? "ext" : "count");
    *count = ext->ext.ndevices;
    return NNK_OK;
}

nnk_status nnk_extension_get_devices(nnk_extension *ext, nnk_device_info *out, int32_t cap, int32_t *count)
{
    if (!ext || !count || cap < 0 || (cap > 0 && !out))
        return rt_error(NNK_EINVAL, "nnk_extension_get_devices: ext or count is NULL, or cap > 0 with out NULL");
    rt_ext *e = &ext->ext;
    int32_t n = cap < e->ndevices ? cap : e->ndevices;
    if (n > 0) {
        memset(out, 0, (size_t)n * sizeof *out);
        nnk_status s = e->ops->get_devices(e->state, out, n);
        if (s)
            return s;
    }
    *count = e->ndevices;
    return NNK_OK;
}

nnk_status nnk_extension_clear_memory_cache(nnk_extension *ext, uint64_t *released)
{
    if (!ext)
        return rt_error(NNK_EINVAL, "nnk_extension_clear_memory_cache: ext is NULL");
    rt_ext *e = &ext->ext;
    uint64_t total = 0;
    pthread_mutex_lock(&e->lock);
    for (int32_t d = 0; d < e->ndevices; d++)
        if (e->alloc[d])
            total += rt_allocator_flush(e->alloc[d]);
    pthread_mutex_unlock(&e->lock);
    nnk_status (*hook)(void *) = RT_HOOK(e, clear_memory_cache);
    nnk_status s = hook ? hook(e->state) : NNK_OK;
    if (!s && released)
        *released = total;
    return s;
}

nnk_status nnk_extension_memory_stats(nnk_extension *ext, int32_t device, nnk_memory_stats *stats)
{
    if (!ext || !stats)
        return rt_error(NNK_EINVAL, "nnk_extension_memory_stats: %s is NULL", !ext ? "ext" : "stats");
    nnk_status s = check_device(&ext->ext, device, "nnk_extension_memory_stats");
    if (s)
        return s;
    rt_allocator *a = rt_ext_allocator(&ext->ext, device);
    if (!a)
        return NNK_ENOMEM;
    rt_allocator_stats(a, stats);
    return NNK_OK;
}

const char *nnk_extension_status(nnk_extension *ext)
{
    if (!ext)
        return NULL;
    const char *(*hook)(void *) = RT_HOOK(&ext->ext, status);
    const char *m = hook ? hook(ext->ext.state) : NULL;
    return m ? m : "";
}

void rt_extensions_shutdown(void)
{
    pthread_mutex_lock(&reg.lock);
    for (int i = reg.nloaded - 1; i >= 0; i--) {
        rt_ext *e = reg.loaded[i];
        for (int32_t d = 0; d < e->ndevices; d++)
            rt_allocator_free(e->alloc[d]);
        free(e->alloc);
        if (e->ops->fini)
            e->ops->fini(e->state);
        if (e->dl)
            dlclose(e->dl);
        free(e->path);
        pthread_mutex_destroy(&e->lock);
        free(e);
    }
    reg.nloaded = 0;
    reg.nregistered = 0;
    for (int i = 0; i < reg.nnames; i++)
        free(reg.names[i]);
    reg.nnames = 0;
    pthread_mutex_unlock(&reg.lock);
}
