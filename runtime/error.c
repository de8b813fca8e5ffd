/* error.c - status codes, the thread-local error message, and the
 * allocation and string helpers that report NNK_ENOMEM through it. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_ERROR_MAX 4096

static _Thread_local char last_error[RT_ERROR_MAX];
static _Thread_local unsigned long error_serial; /* messages set on this thread */

const char *nnk_last_error(void)
{
    return last_error;
}

unsigned long rt_error_serial(void)
{
    return error_serial;
}

nnk_status rt_verror(nnk_status s, const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    error_serial++;
    return s;
}

nnk_status rt_error(nnk_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_verror(s, fmt, ap);
    va_end(ap);
    return s;
}

nnk_status rt_error_prefix(nnk_status s, const char *fmt, ...)
{
    char prefix[512], old[RT_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    snprintf(last_error, sizeof last_error, "%.500s: %.3500s", prefix, old);
    error_serial++;
    return s;
}

static const char *const status_names[NNK_STATUS_COUNT] = {
    "NNK_OK", "NNK_EINVAL", "NNK_ENOMEM", "NNK_ENOTFOUND", "NNK_ECOMPILE", "NNK_EDEVICE",
    "NNK_ESHAPE", "NNK_EDTYPE", "NNK_EUNSUPPORTED", "NNK_EIO", "NNK_EABI", "NNK_EINTERNAL", "NNK_ERANGE",
    "NNK_EOVERFLOW",
};

const char *nnk_status_name(nnk_status s)
{
    return (unsigned)s < NNK_STATUS_COUNT ? status_names[s] : "NNK_E?";
}

void *rt_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        rt_error(NNK_ENOMEM, "out of host memory (%zu bytes)", n);
    return p;
}

void *rt_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        rt_error(NNK_ENOMEM, "out of host memory (%zu x %zu bytes)", n, size);
    return p;
}

char *rt_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = rt_malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void rt_str_add(rt_str *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void rt_str_puts(rt_str *b, const char *s)
{
    rt_str_add(b, s, strlen(s));
}

void rt_str_printf(rt_str *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        rt_str_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rt_str_add(b, big, (size_t)n);
    free(big);
}

void rt_str_free(rt_str *b)
{
    free(b->s);
    *b = (rt_str){0};
}
