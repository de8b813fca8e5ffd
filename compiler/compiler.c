/* compiler.c - the Compiler object: options, arena, and the bail-out used
 * for internal errors so that a host program embedding libnnkc (the
 * runtime's JIT) gets an error status instead of an abort. */
#include "nnkc.h"

#include <stdlib.h>

static _Thread_local Compiler *current;

Compiler *nnkc_new(void)
{
    Arena *a = arena_new();
    Compiler *c = arena_alloc(a, sizeof *c);
    c->arena = a;
    c->strings = interner_new(a);
    c->opt.opt_level = 2;
    return c;
}

void nnkc_free(Compiler *c)
{
    if (!c)
        return;
    if (current == c)
        current = NULL;
    arena_free(c->arena);
}

void nnkc_enter(Compiler *c, jmp_buf *jb)
{
    c->bail = jb;
    current = c;
}

void nnkc_leave(Compiler *c)
{
    c->bail = NULL;
    if (current == c)
        current = NULL;
}

void nnkc_bug(const char *file, int line, const char *what)
{
    Compiler *c = current;
    fprintf(stderr, "nnkc: internal error at %s:%d: %s\n", file, line, what);
    if (c && c->bail) {
        c->internal_error = 1;
        longjmp(*c->bail, 1);
    }
    abort();
}
