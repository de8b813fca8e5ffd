/* compiler.c - the Compiler object: options, arena, the pipeline every
 * user runs (nnkc_compile), and the bail-out used for internal errors and
 * out of memory, so that a host program embedding libnnkc (the runtime's
 * JIT) gets an error status instead of an abort or a message on its
 * stderr. */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local Compiler *current;

Compiler *nnkc_new(void)
{
    Arena *a = arena_new();
    if (!a)
        return NULL;
    Compiler *outer = current;
    /* The compiler's own allocations bail out to here. */
    Compiler boot = {.arena = a};
    jmp_buf jb;
    Compiler *volatile c = NULL;
    if (setjmp(jb) == 0) {
        nnkc_enter(&boot, &jb);
        c = arena_alloc(a, sizeof *c);
        c->arena = a;
        c->strings = interner_new(a);
        c->opt.opt_level = 2;
    } else {
        c = NULL;
    }
    current = outer;
    if (!c)
        arena_free(a);
    return c;
}

void nnkc_free(Compiler *c)
{
    if (!c)
        return;
    if (current == c)
        current = c->outer;
    nnkc_release(c);
    arena_free(c->arena);
}

bool nnkc_compile(Compiler *c, const char *path, const char *text, size_t len, bool lower)
{
    if (!load_sources(c, path, text, len))
        return false;
    sema_check_items(c);
    sema_instantiate_all(c);
    if (lower && c->nerrors == 0)
        for (int i = 0; i < c->instances.n; i++)
            lower_instance(c, c->instances.items[i]);
    return c->nerrors == 0;
}

void nnkc_enter(Compiler *c, jmp_buf *jb)
{
    c->bail = jb;
    c->oom = false;
    c->internal_error = 0;
    if (current != c)
        c->outer = current;
    current = c;
}

void nnkc_leave(Compiler *c)
{
    c->bail = NULL;
    if (current == c)
        current = c->outer;
}

Compiler *nnkc_current(void)
{
    return current;
}

void *nnkc_scratch(size_t size)
{
    nnkc_assert(current);
    return arena_alloc(current->arena, size);
}

void nnkc_bug(const char *file, int line, const char *what)
{
    Compiler *c = current;
    if (c && c->bail) {
        snprintf(c->bug, sizeof c->bug, "%s:%d: %s", file, line, what);
        c->internal_error = 1;
        longjmp(*c->bail, 1);
    }
    /* Only nnkc itself runs without a bail-out (before it enters). */
    fprintf(stderr, "nnkc: internal error at %s:%d: %s\n", file, line, what);
    abort();
}

void nnkc_oom(void)
{
    Compiler *c = current;
    if (c && c->bail) {
        c->oom = true;
        longjmp(*c->bail, 1);
    }
    fputs("nnkc: out of memory\n", stderr);
    exit(EXIT_FAILURE);
}
