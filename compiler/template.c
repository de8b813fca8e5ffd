/* template.c - the template engine that fills templates/ (docs/templates.md).
 *
 * Syntax, a small subset of mustache:
 *   {{name}}             the value of name (looked up in the current item,
 *                        then in the enclosing ones)
 *   {{#name}}...{{/name}}  a section: repeated for each item of a list,
 *                        kept once if name is true, dropped if false/empty
 *   {{^name}}...{{/name}}  the inverse: kept only if name is false or empty
 *   {{>file}}            another template, rendered in the current scope
 *   {{! comment }}
 * A tag alone on its line (only blanks around it) takes the whole line
 * with it, so templates stay indented like the code they produce; a value
 * tag alone on its line indents every line of a multi-line value by the
 * blanks in front of it.  An unknown name or template is an internal
 * error: templates and emitters ship together.
 */
#include "nnkc.h"

#include <string.h>

typedef enum { TV_STR, TV_BOOL, TV_LIST } TValKind;

typedef struct TEntry {
    const char *key;
    TValKind kind;
    const char *str;
    bool flag;
    List items; /* TDict* */
} TEntry;

struct TDict {
    Arena *arena;
    List entries; /* TEntry* */
    const TDict *parent;
};

TDict *tdict_new(Arena *a)
{
    TDict *d = arena_alloc(a, sizeof *d);
    d->arena = a;
    return d;
}

static TEntry *entry(TDict *d, const char *key, TValKind kind)
{
    for (int i = 0; i < d->entries.n; i++) {
        TEntry *e = d->entries.items[i];
        if (strcmp(e->key, key) == 0) {
            e->kind = kind;
            return e;
        }
    }
    TEntry *e = arena_alloc(d->arena, sizeof *e);
    e->key = key;
    e->kind = kind;
    list_push(d->arena, &d->entries, e);
    return e;
}

void tset(TDict *d, const char *key, const char *value)
{
    entry(d, key, TV_STR)->str = arena_strdup(d->arena, value);
}

void tsetf(TDict *d, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    entry(d, key, TV_STR)->str = arena_vprintf(d->arena, fmt, ap);
    va_end(ap);
}

void tbool(TDict *d, const char *key, bool v)
{
    entry(d, key, TV_BOOL)->flag = v;
}

TDict *tpush(TDict *d, const char *key)
{
    TEntry *e = NULL;
    for (int i = 0; i < d->entries.n && !e; i++)
        if (strcmp(((TEntry *)d->entries.items[i])->key, key) == 0)
            e = d->entries.items[i];
    if (!e)
        e = entry(d, key, TV_LIST);
    nnkc_assert(e->kind == TV_LIST);
    TDict *child = tdict_new(d->arena);
    child->parent = d;
    list_push(d->arena, &e->items, child);
    return child;
}

void tlist(TDict *d, const char *key)
{
    TEntry *e = NULL;
    for (int i = 0; i < d->entries.n && !e; i++)
        if (strcmp(((TEntry *)d->entries.items[i])->key, key) == 0)
            e = d->entries.items[i];
    if (!e)
        entry(d, key, TV_LIST);
}

const char *tget(const TDict *d, const char *key)
{
    for (int i = 0; i < d->entries.n; i++) {
        const TEntry *e = d->entries.items[i];
        if (strcmp(e->key, key) == 0)
            return e->kind == TV_STR ? e->str : NULL;
    }
    return NULL;
}

static const TEntry *find(const TDict *d, const char *key, size_t n)
{
    for (; d; d = d->parent) {
        for (int i = 0; i < d->entries.n; i++) {
            const TEntry *e = d->entries.items[i];
            if (strlen(e->key) == n && memcmp(e->key, key, n) == 0)
                return e;
        }
    }
    return NULL;
}

const char *template_get(const char *name)
{
    for (const NnkcTemplate *t = nnkc_templates; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t->text;
    return NULL;
}

/* ---- rendering -------------------------------------------------------------- */

typedef struct Tag {
    char sigil;            /* 0 for a value, or # ^ / > ! */
    const char *name;
    size_t len;
    const char *start;     /* the tag itself: start .. end */
    const char *end;
    const char *line_start, *line_end; /* the whole line, when standalone */
    bool standalone;
    const char *indent;    /* blanks before a standalone tag */
    size_t indent_len;
} Tag;

static bool next_tag(const char *p, const char *lim, const char *text, Tag *t)
{
    const char *s = strstr(p, "{{");
    while (s && s[2] == '{')
        s++; /* "{{{x}}}": a literal brace, then the tag */
    if (!s || s >= lim)
        return false;
    const char *e = strstr(s + 2, "}}");
    nnkc_assert(e && e < lim);
    t->start = s;
    t->end = e + 2;
    const char *q = s + 2;
    t->sigil = strchr("#^/>!", *q) ? *q++ : 0;
    while (*q == ' ')
        q++;
    const char *qe = e;
    while (qe > q && qe[-1] == ' ')
        qe--;
    t->name = q;
    t->len = (size_t)(qe - q);
    /* standalone: only blanks between the line's start and end */
    const char *ls = s;
    while (ls > text && ls[-1] != '\n')
        ls--;
    const char *le = t->end;
    while (*le == ' ' || *le == '\t')
        le++;
    bool blanks_before = true;
    for (const char *b = ls; b < s; b++)
        blanks_before &= *b == ' ' || *b == '\t';
    t->standalone = blanks_before && (*le == '\n' || *le == 0);
    t->line_start = ls;
    t->line_end = *le == '\n' ? le + 1 : le;
    t->indent = ls;
    t->indent_len = (size_t)(s - ls);
    return true;
}

/* Finds the {{/name}} closing the section opened by `open`. */
static Tag find_close(const char *p, const char *lim, const char *text, const Tag *open)
{
    int depth = 1;
    Tag t;
    while (next_tag(p, lim, text, &t)) {
        bool same = t.len == open->len && memcmp(t.name, open->name, t.len) == 0;
        if ((t.sigil == '#' || t.sigil == '^') && same)
            depth++;
        else if (t.sigil == '/' && same && --depth == 0)
            return t;
        p = t.end;
    }
    nnkc_assert(!"unclosed template section");
    return t;
}

static void put_indented(Buf *out, const char *v, const char *indent, size_t ilen)
{
    /* every line of the value at the tag's indentation */
    bool at_line_start = true;
    for (const char *p = v; *p; p++) {
        if (at_line_start && *p != '\n')
            buf_put(out, indent, ilen);
        buf_put(out, p, 1);
        at_line_start = *p == '\n';
    }
    if (!at_line_start)
        buf_put(out, "\n", 1);
}

static void render(const char *text, const char *p, const char *lim, const TDict *scope, Buf *out, int depth)
{
    nnkc_assert(depth < 32);
    Tag t;
    while (next_tag(p, lim, text, &t)) {
        const char *copy_end = t.standalone && t.sigil != 0 ? t.line_start : t.start;
        bool value_line = t.standalone && t.sigil == 0;
        if (value_line)
            copy_end = t.line_start;
        buf_put(out, p, (size_t)(copy_end - p));
        const char *after = t.standalone ? t.line_end : t.end;
        switch (t.sigil) {
        case '!':
            p = after;
            break;
        case 0: {
            const TEntry *e = find(scope, t.name, t.len);
            if (!e || e->kind != TV_STR) {
                fprintf(stderr, "template: no value for '%.*s'\n", (int)t.len, t.name);
                nnkc_assert(!"template value missing");
            }
            if (value_line)
                put_indented(out, e->str, t.indent, t.indent_len);
            else
                buf_puts(out, e->str);
            p = after;
            break;
        }
        case '>': {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)t.len, t.name);
            const char *sub = template_get(name);
            if (!sub) {
                fprintf(stderr, "template: no template '%s'\n", name);
                nnkc_assert(!"template missing");
            }
            render(sub, sub, sub + strlen(sub), scope, out, depth + 1);
            p = after;
            break;
        }
        case '#':
        case '^': {
            Tag close = find_close(after, lim, text, &t);
            const char *body = after, *body_end = close.standalone ? close.line_start : close.start;
            const TEntry *e = find(scope, t.name, t.len);
            if (!e) {
                fprintf(stderr, "template: no section '%.*s'\n", (int)t.len, t.name);
                nnkc_assert(!"template section missing");
            }
            bool truthy = e->kind == TV_BOOL ? e->flag : e->kind == TV_LIST ? e->items.n > 0 : e->str[0] != 0;
            if (t.sigil == '^') {
                if (!truthy)
                    render(text, body, body_end, scope, out, depth + 1);
            } else if (e->kind == TV_LIST) {
                for (int i = 0; i < e->items.n; i++) {
                    TDict *item = e->items.items[i];
                    const TDict *saved = item->parent;
                    TDict scoped = *item;
                    scoped.parent = scope; /* lexical: the enclosing scope at render time */
                    (void)saved;
                    render(text, body, body_end, &scoped, out, depth + 1);
                }
            } else if (truthy) {
                render(text, body, body_end, scope, out, depth + 1);
            }
            p = close.standalone ? close.line_end : close.end;
            break;
        }
        default:
            nnkc_assert(!"stray closing tag in template");
        }
    }
    buf_put(out, p, (size_t)(lim - p));
}

void template_render(const char *name, const TDict *data, Buf *out)
{
    const char *text = template_get(name);
    if (!text) {
        fprintf(stderr, "template: no template '%s'\n", name);
        nnkc_assert(!"template missing");
    }
    render(text, text, text + strlen(text), data, out, 0);
}
