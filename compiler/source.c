/* source.c - source files and ranges. */
#include "nnkc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

SourceFile *source_add(Compiler *c, const char *path, const char *text, size_t len)
{
    SourceFile *f = arena_alloc(c->arena, sizeof *f);
    f->path = arena_strdup(c->arena, path);
    const char *slash = strrchr(path, '/');
    f->dir = slash ? arena_strndup(c->arena, path, (size_t)(slash - path) + 1) : "";
    char rpbuf[PATH_MAX]; /* not realpath's malloc: intern may bail out (nnkc_oom) */
    const char *rp = realpath(path, rpbuf);
    f->realpath = rp ? intern(c->strings, rp, strlen(rp)) : intern(c->strings, path, strlen(path));
    /* One extra NUL so the lexer can always read one byte past the end. */
    f->text = arena_alloc(c->arena, len + 1);
    memcpy(f->text, text, len);
    f->len = len;
    f->id = c->files.n;
    f->parent = -1;
    f->parent_off = 0;
    list_push(c->arena, &c->files, f);
    return f;
}

SourceFile *source_read(Compiler *c, const char *path)
{
    /* "-" is standard input, as cc's; its diagnostics say <stdin>, as gcc's */
    bool in = strcmp(path, "-") == 0;
    FILE *fp = in ? stdin : fopen(path, "rb");
    if (!fp)
        return NULL;
    Buf b = {0};
    char chunk[65536];
    size_t n;
    /* The main input may be a pipe (nnkc <(gen)), so it is not required
     * to be a regular file, but it is held to an import's limit: reading
     * /dev/zero must end in an error, not in all of the memory. */
    int err = 0;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
        if (b.len + n > NNKC_MAX_IMPORT) {
            err = EFBIG;
            break;
        }
        buf_put(&b, chunk, n);
    }
    if (!err && ferror(fp))
        err = errno ? errno : EIO;
    if (!in)
        fclose(fp);
    if (err) {
        buf_free(&b);
        errno = err;
        return NULL;
    }
    SourceFile *f = source_add(c, in ? "<stdin>" : path, b.data ? b.data : "", b.len);
    buf_free(&b);
    return f;
}

SourceFile *source_read_import(Compiler *c, const char *path, bool nofollow, const char **why)
{
    /* The buffer comes from the arena before anything is open, so that
     * running out of memory (nnkc_oom) leaks no descriptor; its size is a
     * first look, checked again on the open file below. */
    struct stat pre;
    size_t cap = stat(path, &pre) == 0 && S_ISREG(pre.st_mode) && pre.st_size >= 0 && pre.st_size <= NNKC_MAX_IMPORT
                     ? (size_t)pre.st_size + 1 : 1;
    char *text = arena_alloc(c->arena, cap);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    struct stat st;
    if (fd < 0) {
        *why = errno == ELOOP ? "a symbolic link" : strerror(errno);
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        *why = "not a regular file";
        return NULL;
    }
    if (st.st_size > NNKC_MAX_IMPORT) {
        close(fd);
        *why = "larger than 16 MiB";
        return NULL;
    }
    /* one byte more than the size says: a file that grows (or a /proc
     * file, whose size is 0) is refused, not read */
    size_t want = (size_t)st.st_size + 1, got = 0;
    if (want > cap) {
        close(fd);
        *why = "its size is not known (it changes as it is read)";
        return NULL;
    }
    while (got < want) {
        ssize_t r = read(fd, text + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != (size_t)st.st_size) {
        *why = got > (size_t)st.st_size ? "its size is not known (it changes as it is read)" : "a short read";
        return NULL;
    }
    return source_add(c, path, text, got);
}

SourceFile *source_get(Compiler *c, int id)
{
    nnkc_assert(id >= 0 && id < c->files.n);
    return c->files.items[id];
}

size_t source_bom(const SourceFile *f)
{
    return f->len >= 3 && memcmp(f->text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

size_t source_eol(const char *p, const char *lim)
{
    if (*p == '\n')
        return 1;
    if (*p == '\r')
        return p + 1 < lim && p[1] == '\n' ? 2 : 1;
    return 0;
}

size_t source_line(const SourceFile *f, size_t off, size_t *end)
{
    const char *t = f->text;
    size_t start = off < f->len ? off : f->len, e = start;
    while (start > 0 && t[start - 1] != '\n' && t[start - 1] != '\r')
        start--;
    while (e < f->len && t[e] != '\n' && t[e] != '\r')
        e++;
    if (start == 0 && off >= source_bom(f))
        start = source_bom(f); /* the byte order mark the lexer skipped: not shown, no column */
    *end = e;
    return start;
}

Range range_join(Range a, Range b)
{
    if (a.file != b.file || b.off + b.len < a.off)
        return a;
    a.len = b.off + b.len - a.off;
    return a;
}
