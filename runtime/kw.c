/* kw.c - "key=value" strings: context keywords (NNabla's **kw) and
 * compile options.  Pairs are separated by spaces, tabs or commas; keys
 * are [A-Za-z_][A-Za-z0-9_]*; values run to the next separator, and a
 * backslash in a value takes the next character as it is (`\ `, `\,`, `\\`:
 * a path with a space, such as a file's directory, is a value too).  A key
 * given twice is an error, as a repeated Python keyword argument is. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool is_sep(char c) { return c == ' ' || c == '\t' || c == ',' || c == '\n'; }

nnk_status rt_kw_parse(const char *text, const char *what, rt_kw *kw)
{
    *kw = (rt_kw){.what = what};
    if (!text)
        return NNK_OK;
    size_t len = strlen(text);
    int32_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == '=';
    kw->storage = rt_malloc(len + 1);
    kw->pairs = rt_calloc((size_t)cap, sizeof *kw->pairs);
    kw->used = rt_calloc((size_t)cap, 1);
    if (!kw->storage || !kw->pairs || !kw->used) {
        rt_kw_free(kw);
        return NNK_ENOMEM;
    }
    memcpy(kw->storage, text, len + 1);
    char *p = kw->storage;
    for (;;) {
        while (is_sep(*p))
            p++;
        if (!*p)
            return NNK_OK;
        char *key = p;
        size_t off = (size_t)(p - kw->storage);
        if (!(isalpha((unsigned char)*p) || *p == '_'))
            goto bad;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if (*p != '=')
            goto bad;
        *p++ = 0;
        char *value = p, *w = p; /* w: where the unescaped value is written */
        while (*p && !is_sep(*p)) {
            if (*p == '\\' && p[1])
                p++;
            *w++ = *p++;
        }
        if (p == value) {
            nnk_status s = rt_error(NNK_EINVAL, "%s: key '%s' has no value (expected %s=VALUE)", what, key, key);
            rt_kw_free(kw);
            return s;
        }
        bool end = !*p;
        *p = 0;
        *w = 0;
        for (int32_t i = 0; i < kw->n; i++) {
            if (strcmp(kw->pairs[i].key, key) == 0) {
                nnk_status s = rt_error(NNK_EINVAL, "%s: key '%s' given twice", what, key);
                rt_kw_free(kw);
                return s;
            }
        }
        kw->pairs[kw->n++] = (nnk_kw_pair){key, value};
        if (end)
            return NNK_OK;
        p++;
        continue;
    bad:;
        nnk_status s = rt_error(NNK_EINVAL, "%s: bad string '%s' at offset %zu: expected key=value pairs separated by spaces or commas",
                                what, text, off);
        rt_kw_free(kw);
        return s;
    }
}

void rt_kw_free(rt_kw *kw)
{
    free(kw->storage);
    free(kw->pairs);
    free(kw->used);
    *kw = (rt_kw){0};
}

const char *rt_kw_take(rt_kw *kw, const char *key)
{
    for (int32_t i = 0; i < kw->n; i++) {
        if (strcmp(kw->pairs[i].key, key) == 0) {
            kw->used[i] = 1;
            return kw->pairs[i].value;
        }
    }
    return NULL;
}

nnk_status rt_kw_int(rt_kw *kw, const char *key, int64_t lo, int64_t hi, int64_t *val)
{
    const char *v = rt_kw_take(kw, key);
    if (!v)
        return NNK_OK;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi)
        return rt_error(NNK_EINVAL, "%s: bad value '%s' for key '%s': expected an integer in [%lld, %lld]",
                        kw->what ? kw->what : "options", v, key, (long long)lo, (long long)hi);
    *val = x;
    return NNK_OK;
}

nnk_status rt_kw_check_unused(const rt_kw *kw, const char *what)
{
    for (int32_t i = 0; i < kw->n; i++)
        if (!kw->used[i])
            return rt_error(NNK_EINVAL, "%s: unknown key '%s'", what, kw->pairs[i].key);
    return NNK_OK;
}
