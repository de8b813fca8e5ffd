/* jitfn.c - jiterator-style functions (PyTorch's
 * torch.cuda.jiterator._create_jit_fn over .nnk): one kernel in a string
 * as a callable.  As in the jiterator, keyword arguments given at creation
 * become the defaults of scalar parameters, a call may override them, and
 * compilation happens at the first call with each dtype signature (the
 * kernel's instance cache is keyed by the backend and the tuple of bound
 * type arguments and storage dtypes). */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct nnk_jit_fn {
    nnk_module *mod;
    nnk_kernel *k;
};

/* Python's text of a complex number: "2j", "1.5-2j", "(1+2j)" (each part
 * as strtod reads it: inf and nan too). */
static bool parse_complex(const char *text, double c[2])
{
    char buf[128];
    size_t n = strlen(text);
    if (n >= 2 && text[0] == '(' && text[n - 1] == ')') {
        if (n - 2 >= sizeof buf)
            return false;
        memcpy(buf, text + 1, n - 2);
        buf[n - 2] = 0;
        text = buf;
        n -= 2;
    }
    if (n < 2 || (text[n - 1] != 'j' && text[n - 1] != 'J'))
        return false;
    const char *last = text + n - 1;
    char *end;
    errno = 0;
    double a = strtod(text, &end);
    if (end == text || errno == ERANGE)
        return false;
    if (end == last) { /* "2j" */
        c[0] = 0, c[1] = a;
        return true;
    }
    if (*end != '+' && *end != '-')
        return false;
    const char *im = end;
    double b = strtod(im, &end);
    if (end == im || end != last || errno == ERANGE)
        return false;
    c[0] = a, c[1] = b;
    return true;
}

/* A default given as text: an integer when it reads as one (of the int64
 * or, above it, the uint64 range: an integer outside both is an error, not
 * a float that loses its low digits), a complex number in Python's form,
 * else a float. */
static nnk_status parse_value(const char *key, const char *text, rt_value *v)
{
    char *end;
    errno = 0;
    long long i = strtoll(text, &end, 0);
    if (!errno && !*end) {
        *v = (rt_value){RT_I64, {.i = i}};
        return NNK_OK;
    }
    if (errno == ERANGE && !*end && end != text) {
        /* strtoull negates a '-' number, also after the blanks strtoll
         * skipped (an escaped space in a kw value): only digits here */
        const char *t = text;
        while (isspace((unsigned char)*t))
            t++;
        t += *t == '+';
        errno = 0;
        bool digit = isdigit((unsigned char)*t);
        unsigned long long u = digit ? strtoull(t, &end, 0) : 0;
        if (digit && !errno && !*end) {
            *v = (rt_value){RT_U64, {.u = u}};
            return NNK_OK;
        }
        return rt_error(NNK_EOVERFLOW, "jit function options: the integer '%s' for '%s' is outside the int64 and uint64 ranges",
                        text, key);
    }
    if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
        *v = (rt_value){RT_I64, {.i = text[0] == 't'}};
        return NNK_OK;
    }
    double c[2];
    if (parse_complex(text, c)) {
        *v = (rt_value){RT_C128, {.c = {c[0], c[1]}}};
        return NNK_OK;
    }
    errno = 0;
    double f = strtod(text, &end);
    if (errno == ERANGE || *end || end == text)
        return rt_error(NNK_EINVAL, "jit function options: bad value '%s' for '%s': expected a number", text, key);
    *v = (rt_value){RT_F64, {.f = f}};
    return NNK_OK;
}

nnk_status nnk_create_jit_fn(const char *code, const char *options, nnk_jit_fn **out)
{
    if (!code || !out)
        return rt_error(NNK_EINVAL, "nnk_create_jit_fn: %s is NULL", !code ? "code" : "out");
    rt_kw kw;
    nnk_status s = rt_kw_parse(options, "jit function options", &kw);
    if (s)
        return s;
    /* The module's own options are passed on; the rest are defaults. */
    rt_str mopts = {0};
    static const char *const module_keys[] = {"opt_level", "include_dirs", "name"};
    for (size_t i = 0; i < sizeof module_keys / sizeof module_keys[0]; i++) {
        const char *v = rt_kw_take(&kw, module_keys[i]);
        if (v)
            rt_str_printf(&mopts, "%s=%s ", module_keys[i], v);
    }
    const char *kname = rt_kw_take(&kw, "kernel");
    nnk_jit_fn *fn = rt_calloc(1, sizeof *fn);
    if (!fn || mopts.oom) {
        s = NNK_ENOMEM;
        goto fail;
    }
    if ((s = nnk_module_compile(NULL, code, mopts.s, &fn->mod)))
        goto fail;
    if (kname) {
        if ((s = nnk_module_kernel(fn->mod, kname, &fn->k)))
            goto fail;
    } else if (nnk_module_kernel_count(fn->mod) != 1) {
        s = rt_error(NNK_EINVAL, "nnk_create_jit_fn: the code defines %d kernels; pick one with kernel=NAME",
                     nnk_module_kernel_count(fn->mod));
        goto fail;
    } else {
        fn->k = fn->mod->kernels[0];
    }
    nnk_kernel *k = fn->k;
    for (int32_t i = 0; i < kw.n; i++) {
        if (kw.used[i])
            continue;
        const char *key = kw.pairs[i].key;
        int32_t p = 0;
        while (p < k->nin && strcmp(k->params[p].name, key) != 0)
            p++;
        if (p == k->nin || k->params[p].tensor) {
            s = rt_error(NNK_EINVAL, "jit function options: '%s' is not %s of kernel '%s'", key,
                         p == k->nin ? "an option or a scalar parameter" : "a scalar parameter", k->name);
            goto fail;
        }
        if ((s = parse_value(key, kw.pairs[i].value, &k->defaults[p])))
            goto fail;
    }
    rt_kw_free(&kw);
    rt_str_free(&mopts);
    rt_live_inc();
    *out = fn;
    return NNK_OK;
fail:
    if (fn)
        nnk_module_free(fn->mod);
    free(fn);
    rt_kw_free(&kw);
    rt_str_free(&mopts);
    return s;
}

nnk_status nnk_jit_fn_call(nnk_jit_fn *fn, nnk_args *args)
{
    if (!fn)
        return rt_error(NNK_EINVAL, "nnk_jit_fn_call: fn is NULL");
    return nnk_launch(fn->k, args);
}

int32_t nnk_jit_fn_cache_size(const nnk_jit_fn *fn)
{
    if (!fn)
        return 0;
    pthread_mutex_lock(&fn->k->lock);
    int32_t n = fn->k->ninstances;
    pthread_mutex_unlock(&fn->k->lock);
    return n;
}

nnk_kernel *nnk_jit_fn_kernel(nnk_jit_fn *fn)
{
    return fn ? fn->k : NULL;
}

void nnk_jit_fn_free(nnk_jit_fn *fn)
{
    if (!fn)
        return;
    nnk_module_free(fn->mod);
    free(fn);
    rt_live_dec();
}
