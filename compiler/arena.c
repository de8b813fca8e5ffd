/* arena.c - arena allocation, interned strings, maps and byte buffers.
 *
 * The compiler never frees individual objects: every AST node, type and
 * IR node of a compilation lives in the Compiler's arena and goes away
 * with it.  Out of memory is not a diagnostic: nnkc_oom returns to the
 * caller's bail-out (compiler.c), which frees the arena and any Buf
 * storage the jump abandoned, and reports NNK_ENOMEM.
 */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

typedef struct Chunk {
    struct Chunk *next;
    size_t size, used;
    max_align_t data[];
} Chunk;

struct Arena {
    Chunk *head;
    size_t total;
};

enum { CHUNK_MIN = 64 * 1024 };

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        nnkc_oom();
    return p;
}

Arena *arena_new(void)
{
    Arena *a = malloc(sizeof *a);
    if (!a)
        return NULL;
    a->head = NULL;
    a->total = 0;
    return a;
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    for (Chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

void *arena_alloc(Arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    Chunk *c = a->head;
    if (!c || c->size - c->used < size) {
        /* Grow geometrically so huge inputs need few chunks. */
        size_t want = a->total / 2 > CHUNK_MIN ? a->total / 2 : CHUNK_MIN;
        if (want < size)
            want = size;
        c = xmalloc(sizeof *c + want);
        c->size = want;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        a->total += want;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(Arena *a, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *p = arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

void list_push(Arena *a, List *l, void *item)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        void **items = arena_alloc(a, sizeof(void *) * (size_t)cap);
        if (l->n)
            memcpy(items, l->items, sizeof(void *) * (size_t)l->n);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = item;
}

/* ---- interning: open addressing on FNV-1a ---------------------------- */

struct Interner {
    Arena *arena;
    const char **slots;
    uint32_t *lens;
    size_t n, cap;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

Interner *interner_new(Arena *a)
{
    Interner *in = arena_alloc(a, sizeof *in);
    in->arena = a;
    in->cap = 1024;
    in->slots = arena_alloc(a, sizeof(char *) * in->cap);
    in->lens = arena_alloc(a, sizeof(uint32_t) * in->cap);
    return in;
}

static void intern_grow(Interner *in)
{
    size_t cap = in->cap * 2;
    const char **slots = arena_alloc(in->arena, sizeof(char *) * cap);
    uint32_t *lens = arena_alloc(in->arena, sizeof(uint32_t) * cap);
    for (size_t i = 0; i < in->cap; i++) {
        if (!in->slots[i])
            continue;
        size_t j = hash_bytes(in->slots[i], in->lens[i]) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = in->slots[i];
        lens[j] = in->lens[i];
    }
    in->slots = slots;
    in->lens = lens;
    in->cap = cap;
}

const char *intern(Interner *in, const char *s, size_t n)
{
    if (2 * (in->n + 1) > in->cap)
        intern_grow(in);
    size_t j = hash_bytes(s, n) & (in->cap - 1);
    while (in->slots[j]) {
        if (in->lens[j] == n && memcmp(in->slots[j], s, n) == 0)
            return in->slots[j];
        j = (j + 1) & (in->cap - 1);
    }
    in->slots[j] = arena_strndup(in->arena, s, n);
    in->lens[j] = (uint32_t)n;
    in->n++;
    return in->slots[j];
}

/* ---- maps keyed by interned pointers ---------------------------------- */

static size_t ptr_hash(const char *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= 0xed5ad4bbu;
    x ^= x >> 11;
    return (size_t)x;
}

void *map_get(const Map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    for (size_t j = ptr_hash(key) & (size_t)(m->cap - 1);; j = (j + 1) & (size_t)(m->cap - 1)) {
        if (!m->keys[j])
            return NULL;
        if (m->keys[j] == key)
            return m->vals[j];
    }
}

void map_put(Arena *a, Map *m, const char *key, void *val)
{
    if (2 * (m->n + 1) > m->cap) {
        Map g = {0};
        g.cap = m->cap ? m->cap * 2 : 64;
        g.keys = arena_alloc(a, sizeof(char *) * (size_t)g.cap);
        g.vals = arena_alloc(a, sizeof(void *) * (size_t)g.cap);
        for (int i = 0; i < m->cap; i++)
            if (m->keys[i])
                map_put(a, &g, m->keys[i], m->vals[i]);
        *m = g;
    }
    size_t j = ptr_hash(key) & (size_t)(m->cap - 1);
    while (m->keys[j] && m->keys[j] != key)
        j = (j + 1) & (size_t)(m->cap - 1);
    if (!m->keys[j])
        m->n++;
    m->keys[j] = key;
    m->vals[j] = val;
}

/* ---- byte buffers ------------------------------------------------------ */

/* The header in front of a Buf's storage: the list of the compiler that
 * was entered when the buffer first grew (none outside nnkc_enter). */
typedef struct BufHead {
    struct BufHead *prev, *next;
    Compiler *owner;
} BufHead;

static BufHead *head_of(const Buf *b) { return (BufHead *)(void *)b->data - 1; }

static void unlink_head(BufHead *h)
{
    if (!h->owner)
        return;
    if (h->prev)
        h->prev->next = h->next;
    else
        h->owner->bufs = h->next;
    if (h->next)
        h->next->prev = h->prev;
}

static void link_head(BufHead *h, Compiler *owner)
{
    h->owner = owner;
    h->prev = NULL;
    h->next = owner ? owner->bufs : NULL;
    if (h->next)
        h->next->prev = h;
    if (owner)
        owner->bufs = h;
}

/* Room for `need` more bytes and the NUL. */
static void buf_reserve(Buf *b, size_t need)
{
    if (b->len + need + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + need + 1)
        cap *= 2;
    BufHead *old = b->data ? head_of(b) : NULL;
    Compiler *owner = old ? old->owner : nnkc_current();
    if (old)
        unlink_head(old);
    BufHead *h = realloc(old, sizeof *h + cap);
    if (!h) {
        if (old)
            link_head(old, owner);
        nnkc_oom();
    }
    link_head(h, owner);
    b->data = (char *)(h + 1);
    b->cap = cap;
    b->data[b->len] = 0;
}

void buf_put(Buf *b, const char *s, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void buf_puts(Buf *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < (int)sizeof small) {
        buf_put(b, small, (size_t)n);
        return;
    }
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_free(Buf *b)
{
    if (b->data) {
        BufHead *h = head_of(b);
        unlink_head(h);
        free(h);
    }
    b->data = NULL;
    b->len = b->cap = 0;
}

char *buf_detach(Buf *b)
{
    buf_reserve(b, 0);
    BufHead *h = head_of(b);
    unlink_head(h);
    memmove(h, b->data, b->len + 1);
    b->data = NULL;
    b->len = b->cap = 0;
    return (char *)h;
}

void nnkc_release(Compiler *c)
{
    while (c->bufs) {
        BufHead *h = c->bufs;
        unlink_head(h);
        free(h);
    }
}
