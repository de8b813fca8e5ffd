/* context.c - contexts (NNabla's nnabla.Context): a backend priority list,
 * a device id and a type configuration; the default context. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pthread_mutex_t lock;
    bool set;
    nnk_context ctx;
} dflt = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void describe(nnk_context *c)
{
    size_t n = (size_t)snprintf(c->str, sizeof c->str, "backends=[");
    for (int32_t i = 0; i < c->nbackends && n < sizeof c->str; i++)
        n += (size_t)snprintf(c->str + n, sizeof c->str - n, "%s%s", i ? ", " : "", c->backend[i]);
    if (n < sizeof c->str)
        snprintf(c->str + n, sizeof c->str - n, "] device_id=%d type_config=%s", c->device_id,
                 nnk_context_type_config_name(c));
}

/* The default backend list of an extension without a context hook. */
static void default_backends(const char *name, nnk_context_spec *spec)
{
    spec->nbackends = 0;
    if (spec->type_config == NNK_F16)
        snprintf(spec->backends[spec->nbackends++], 32, "%s:half", name);
    snprintf(spec->backends[spec->nbackends++], 32, "%s:float", name);
    if (strcmp(name, "cpu") != 0)
        snprintf(spec->backends[spec->nbackends++], 32, "cpu:float");
}

nnk_status nnk_get_extension_context(const char *ext_name, const char *kw, nnk_context **out)
{
    if (!ext_name || !out)
        return rt_error(NNK_EINVAL, "nnk_get_extension_context: %s is NULL", !ext_name ? "ext_name" : "ctx");
    rt_ext *e;
    nnk_status s = rt_ext_import(ext_name, strlen(ext_name), &e);
    if (s)
        return s;
    char what[80];
    snprintf(what, sizeof what, "context of extension '%s'", ext_name);
    rt_kw k;
    if ((s = rt_kw_parse(kw, what, &k)))
        return s;

    nnk_context_spec spec = {.type_config = NNK_F32};
    nnk_kw_pair *rest = NULL;
    int64_t dev = 0;
    /* NNabla's context() asks nothing of the device: a device_id the
     * extension lacks, or an extension without devices (cuda without a
     * GPU), is the first use's NNK_EDEVICE or NNK_EINVAL
     * (rt_context_device), not the context's */
    if ((s = rt_kw_int(&k, "device_id", 0, INT32_MAX, &dev)))
        goto out;
    spec.device_id = (int32_t)dev;
    const char *tc = rt_kw_take(&k, "type_config");
    bool mixed = tc && strcmp(tc, "mixed_half") == 0;
    if (tc && (mixed || strcmp(tc, "half") == 0))
        spec.type_config = NNK_F16;
    else if (tc && strcmp(tc, "float") != 0) {
        s = rt_error(NNK_EINVAL, "%s: bad value '%s' for key 'type_config': expected float, half or mixed_half", what,
                     tc);
        goto out;
    }
    if (!(rest = rt_calloc((size_t)k.n + 1, sizeof *rest))) {
        s = NNK_ENOMEM;
        goto out;
    }
    for (int32_t i = 0; i < k.n; i++)
        if (!k.used[i])
            rest[spec.nkw++] = k.pairs[i];
    spec.kw = rest;
    nnk_status (*hook)(void *, nnk_context_spec *) = RT_HOOK(e, context);
    if (hook) {
        unsigned long serial = rt_error_serial();
        if ((s = hook(e->state, &spec))) {
            if (rt_error_serial() == serial)
                rt_error(s, "%s: the extension rejected the keywords", what);
            goto out;
        }
    } else if ((s = rt_kw_check_unused(&k, what))) {
        goto out;
    } else {
        default_backends(ext_name, &spec);
    }
    if (spec.nbackends < 1 || spec.nbackends > NNK_MAX_BACKENDS) {
        s = rt_error(NNK_EINTERNAL, "extension '%s' gave %d backends", ext_name, spec.nbackends);
        goto out;
    }
    /* mixed_half: NNabla's names of the half backends ("cuda:mixed_half",
     * "cuda:float", "cpu:float"); the extension saw half */
    for (int32_t i = 0; mixed && i < spec.nbackends; i++) {
        char *b = spec.backends[i], *colon = memchr(b, ':', 32);
        if (colon && strnlen(b, 32) < 32 && strcmp(colon + 1, "half") == 0 && (size_t)(colon - b) + sizeof ":mixed_half" <= 32)
            memcpy(colon, ":mixed_half", sizeof ":mixed_half");
    }

    nnk_context *c = rt_calloc(1, sizeof *c);
    if (!c) {
        s = NNK_ENOMEM;
        goto out;
    }
    c->device_id = spec.device_id;
    c->type_config = (nnk_dtype)spec.type_config;
    c->mixed_half = mixed && c->type_config == NNK_F16;
    for (int32_t i = 0; i < spec.nbackends; i++) {
        const char *b = spec.backends[i];
        const char *colon = memchr(b, ':', 32);
        size_t blen = strnlen(b, 32);
        if (!colon || blen == 32 ||
            (strcmp(colon + 1, "half") != 0 && strcmp(colon + 1, "float") != 0 && strcmp(colon + 1, "mixed_half") != 0)) {
            s = rt_error(NNK_EINVAL, "bad backend '%.31s' (expected EXTENSION:half, EXTENSION:float or EXTENSION:mixed_half)",
                         b);
            free(c);
            goto out;
        }
        if ((s = rt_ext_import(b, (size_t)(colon - b), &c->ext[i]))) {
            rt_error_prefix(s, "backend '%s' of extension '%s'", b, ext_name);
            free(c);
            goto out;
        }
        memcpy(c->backend[i], b, blen + 1);
    }
    c->nbackends = spec.nbackends;
    describe(c);
    rt_live_inc();
    *out = c;
out:
    free(rest);
    rt_kw_free(&k);
    return s;
}

nnk_status nnk_extension_context(nnk_extension *ext, const char *kw, nnk_context **ctx)
{
    if (!ext)
        return rt_error(NNK_EINVAL, "nnk_extension_context: ext is NULL");
    return nnk_get_extension_context(ext->ext.ops->name, kw, ctx);
}

nnk_status nnk_context_clone(const nnk_context *ctx, nnk_context **out)
{
    if (!ctx || !out)
        return rt_error(NNK_EINVAL, "nnk_context_clone: %s is NULL", !ctx ? "ctx" : "out");
    nnk_context *c = rt_malloc(sizeof *c);
    if (!c)
        return NNK_ENOMEM;
    *c = *ctx;
    rt_live_inc();
    *out = c;
    return NNK_OK;
}

void nnk_context_free(nnk_context *ctx)
{
    if (ctx) {
        free(ctx);
        rt_live_dec();
    }
}

int32_t nnk_context_backend_count(const nnk_context *ctx) { return ctx ? ctx->nbackends : 0; }
const char *nnk_context_backend(const nnk_context *ctx, int32_t i)
{
    return ctx && i >= 0 && i < ctx->nbackends ? ctx->backend[i] : NULL;
}
int32_t nnk_context_device_id(const nnk_context *ctx) { return ctx ? ctx->device_id : -1; }
nnk_dtype nnk_context_type_config(const nnk_context *ctx) { return ctx ? ctx->type_config : NNK_F32; }
const char *nnk_context_type_config_name(const nnk_context *ctx)
{
    return !ctx || ctx->type_config != NNK_F16 ? "float" : ctx->mixed_half ? "mixed_half" : "half";
}
const char *nnk_context_str(const nnk_context *ctx) { return ctx ? ctx->str : "(null)"; }

nnk_status rt_context_device(const nnk_context *c, rt_ext **ext, int32_t *device)
{
    rt_ext *e = c->ext[0];
    if (e->ndevices == 0) {
        const char *why = nnk_extension_status((nnk_extension *)e);
        return rt_error(NNK_EDEVICE, "extension '%s' has no devices%s%s", e->ops->name, why && *why ? ": " : "",
                        why ? why : "");
    }
    if (c->device_id >= e->ndevices)
        return rt_error(NNK_EINVAL, "device_id %d out of range: extension '%s' has %d device%s", c->device_id,
                        e->ops->name, e->ndevices, e->ndevices == 1 ? "" : "s");
    *ext = e;
    *device = c->device_id;
    return NNK_OK;
}

/* With dflt.lock held. */
static nnk_status ensure_default(void)
{
    if (dflt.set)
        return NNK_OK;
    rt_ext *cpu = rt_cpu_ext();
    if (!cpu)
        return NNK_ENOMEM;
    nnk_context *c = &dflt.ctx;
    *c = (nnk_context){.nbackends = 1, .ext = {cpu}, .device_id = 0, .type_config = NNK_F32};
    memcpy(c->backend[0], "cpu:float", 10);
    describe(c);
    dflt.set = true;
    return NNK_OK;
}

nnk_status nnk_set_default_context(const nnk_context *ctx)
{
    if (!ctx)
        return rt_error(NNK_EINVAL, "nnk_set_default_context: ctx is NULL");
    pthread_mutex_lock(&dflt.lock);
    dflt.ctx = *ctx;
    dflt.set = true;
    pthread_mutex_unlock(&dflt.lock);
    return NNK_OK;
}

nnk_status nnk_get_default_context(nnk_context **out)
{
    if (!out)
        return rt_error(NNK_EINVAL, "nnk_get_default_context: ctx is NULL");
    nnk_context tmp;
    const nnk_context *c = rt_context_or_default(NULL, &tmp);
    return c ? nnk_context_clone(c, out) : NNK_ENOMEM;
}

const nnk_context *rt_context_or_default(const nnk_context *ctx, nnk_context *tmp)
{
    if (ctx)
        return ctx;
    pthread_mutex_lock(&dflt.lock);
    nnk_status s = ensure_default();
    if (!s)
        *tmp = dflt.ctx;
    pthread_mutex_unlock(&dflt.lock);
    return s ? NULL : tmp;
}

void rt_context_atfork(rt_fork_phase phase)
{
    if (phase == RT_FORK_PREPARE)
        pthread_mutex_lock(&dflt.lock);
    else
        pthread_mutex_unlock(&dflt.lock);
}

void rt_context_shutdown(void)
{
    pthread_mutex_lock(&dflt.lock);
    dflt.set = false;
    pthread_mutex_unlock(&dflt.lock);
}
