/* load.c - the files of a compilation: the root file (or the string the
 * runtime was given), parsed, and every file it imports, recursively.
 *
 * Imports are searched in the importing file's directory, then in the -I
 * directories; a file is loaded once (by its canonical path), a cycle is
 * an error that names the chain.  Source given as a string (the runtime's
 * modules) is confined: it imports only from the include_dirs its caller
 * named, never through an absolute path, '..' or a link out of them.
 */
#include "nnkc.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool file_exists(const char *path)
{
    return access(path, R_OK) == 0;
}

static void load_file(Compiler *c, SourceFile *src);

/* Whether the canonical path rp lies inside one of the include directories. */
static bool inside_include_dirs(Compiler *c, const char *rp)
{
    for (int i = 0; i < c->opt.include_dirs.n; i++) {
        char *root = realpath(c->opt.include_dirs.items[i], NULL);
        if (!root)
            continue;
        size_t n = strlen(root);
        bool in = strncmp(rp, root, n) == 0 && (rp[n] == '/' || (n == 1 && root[0] == '/'));
        free(root);
        if (in)
            return true;
    }
    return false;
}

static bool has_dotdot(const char *path)
{
    for (const char *p = path; (p = strstr(p, "..")); p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == 0 || p[2] == '/'))
            return true;
    return false;
}

static void load_import(Compiler *c, Item *imp)
{
    const SourceFile *from = imp->src;
    char *candidates[64];
    int ncand = 0;
    const char *path = imp->name;
    /* Source given as a string (the runtime's modules and jit functions)
     * imports only what lies inside the directories its caller named:
     * nothing absolute, no '..', no link out of them; the string itself
     * has no directory (not the working directory). */
    bool confined = c->opt.confined_imports;
    if (confined && (path[0] == '/' || has_dotdot(path))) {
        diag_error(c, imp->name_range, "cannot import '%s': source given as a string imports only from its include_dirs "
                   "(no absolute path, no '..')", path);
        return;
    }
    if (path[0] == '/') {
        candidates[ncand++] = arena_strdup(c->arena, path);
    } else {
        if (!confined || from != c->files.items[0])
            candidates[ncand++] = arena_printf(c->arena, "%s%s", from->dir, path);
        for (int i = 0; i < c->opt.include_dirs.n && ncand < 64; i++) {
            const char *d = c->opt.include_dirs.items[i];
            size_t n = strlen(d);
            candidates[ncand++] = arena_printf(c->arena, "%s%s%s", d, n && d[n - 1] == '/' ? "" : "/", path);
        }
    }
    const char *found = NULL;
    for (int i = 0; i < ncand && !found; i++)
        if (file_exists(candidates[i]))
            found = candidates[i];
    if (!found) {
        if (ncand == 0) {
            diag_error(c, imp->name_range, "cannot find imported file '%s': source given as a string imports only from "
                       "its include_dirs, and none are given", path);
            return;
        }
        diag_error(c, imp->name_range, "cannot find imported file '%s'", path);
        Buf b = {0};
        for (int i = 0; i < ncand; i++) {
            const char *slash = strrchr(candidates[i], '/');
            int dl = slash ? (int)(slash - candidates[i]) : 0;
            buf_printf(&b, "%s'%.*s'", i ? ", " : "", dl ? dl : 1, dl ? candidates[i] : ".");
        }
        diag_note_plain(c, "searched %s", b.data);
        buf_free(&b);
        return;
    }
    char rpbuf[PATH_MAX]; /* not realpath's malloc: intern may bail out (nnkc_oom) */
    const char *rp = realpath(found, rpbuf);
    bool rp_ok = rp != NULL;
    const char *key = intern(c->strings, rp ? rp : found, strlen(rp ? rp : found));
    for (int i = 0; i < c->import_stack.n; i++) {
        SourceFile *s = c->import_stack.items[i];
        if (s->realpath != key)
            continue;
        diag_error(c, imp->name_range, "importing '%s' here closes an import cycle", path);
        for (int j = i + 1; j < c->import_stack.n; j++) {
            SourceFile *sj = c->import_stack.items[j];
            Item *via = NULL;
            for (int k = 0; k < c->items.n && !via; k++) {
                Item *it = c->items.items[k];
                if (it->kind == I_IMPORT && it->src == c->import_stack.items[j - 1])
                    via = it;
            }
            if (via)
                diag_note(c, via->name_range, "'%s' imports '%s'", via->src->path, sj->path);
        }
        return;
    }
    for (int i = 0; i < c->files.n; i++)
        if (((SourceFile *)c->files.items[i])->realpath == key)
            return; /* already loaded: imports are idempotent */
    /* each level of imports is a few KiB of stack (load_file, the parser):
     * a chain of 2000 files crashed nnkc */
    if (c->import_stack.n >= NNKC_MAX_IMPORT_DEPTH) {
        diag_error(c, imp->name_range, "imports nested too deeply (the limit is %d files)", NNKC_MAX_IMPORT_DEPTH);
        return;
    }
    if (confined && (!rp_ok || !inside_include_dirs(c, key))) {
        diag_error(c, imp->name_range, "cannot import '%s': it leads out of the include_dirs", path);
        return;
    }
    const char *why = NULL;
    /* confined: the canonical path, checked above, and no link swapped in since */
    SourceFile *src = source_read_import(c, confined ? key : found, confined, &why);
    if (!src) {
        diag_error(c, imp->name_range, "cannot import '%s': %s", found, why);
        return;
    }
    src->parent = imp->name_range.file;
    src->parent_off = imp->name_range.off;
    src->parent_line = imp->name_range.line;
    src->parent_col = imp->name_range.col;
    list_push(c->arena, &c->imports, src);
    load_file(c, src);
}

static void load_file(Compiler *c, SourceFile *src)
{
    list_push(c->arena, &c->import_stack, src);
    int first = c->items.n;
    parse_file(c, src);
    int last = c->items.n;
    for (int i = first; i < last; i++) {
        Item *it = c->items.items[i];
        if (it->kind == I_IMPORT)
            load_import(c, it);
    }
    c->import_stack.n--;
}

bool load_sources(Compiler *c, const char *path, const char *text, size_t len)
{
    SourceFile *src;
    if (text) {
        src = source_add(c, path, text, len);
    } else {
        src = source_read(c, path);
        if (!src) {
            diag_error_plain(c, "cannot read '%s': %s", path,
                             errno == EFBIG ? "larger than 16 MiB" : strerror(errno));
            return false;
        }
    }
    load_file(c, src);
    return true;
}
