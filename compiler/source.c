/* source.c - source files and ranges. */
#include "nnkc.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

SourceFile *source_add(Compiler *c, const char *path, const char *text, size_t len)
{
    SourceFile *f = arena_alloc(c->arena, sizeof *f);
    f->path = arena_strdup(c->arena, path);
    const char *slash = strrchr(path, '/');
    f->dir = slash ? arena_strndup(c->arena, path, (size_t)(slash - path) + 1) : "";
    char *rp = realpath(path, NULL);
    f->realpath = rp ? intern(c->strings, rp, strlen(rp)) : intern(c->strings, path, strlen(path));
    free(rp);
    /* One extra NUL so the lexer can always read one byte past the end. */
    f->text = arena_alloc(c->arena, len + 1);
    memcpy(f->text, text, len);
    f->len = len;
    f->id = c->files.n;
    list_push(c->arena, &c->files, f);
    return f;
}

SourceFile *source_read(Compiler *c, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    Buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
        buf_put(&b, chunk, n);
    int err = ferror(fp) ? (errno ? errno : EIO) : 0;
    fclose(fp);
    if (err) {
        buf_free(&b);
        errno = err;
        return NULL;
    }
    SourceFile *f = source_add(c, path, b.data ? b.data : "", b.len);
    buf_free(&b);
    return f;
}

SourceFile *source_get(Compiler *c, int id)
{
    nnkc_assert(id >= 0 && id < c->files.n);
    return c->files.items[id];
}

Range range_join(Range a, Range b)
{
    if (a.file != b.file || b.off + b.len < a.off)
        return a;
    a.len = b.off + b.len - a.off;
    return a;
}
