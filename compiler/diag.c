/* diag.c - diagnostics: collected as values with locations, rendered in
 * the format of cc ("file:line:col: error: msg", the source line, a caret
 * under the culprit), deduplicated, and capped so that no input can make
 * the compiler print without end. */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_ERRORS = 50 };

static bool same_diag(const Diag *d, DiagLevel level, bool has_range, Range r, const char *msg)
{
    return d->level == level && d->has_range == has_range &&
           (!has_range || (d->range.file == r.file && d->range.off == r.off && d->range.len == r.len)) &&
           strcmp(d->msg, msg) == 0;
}

static void add(Compiler *c, DiagLevel level, bool has_range, Range r, const char *fmt, va_list ap)
{
    if (level == DIAG_ERROR || (level == DIAG_WARNING && c->opt.werror))
        c->error_events++; /* counted even when deduplicated or capped */
    if (level == DIAG_NOTE) {
        if (c->suppress)
            return;
    } else {
        c->suppress = 0;
        if (level == DIAG_WARNING && c->opt.no_warnings) {
            c->suppress = 1;
            return;
        }
        if (level == DIAG_WARNING && c->opt.werror)
            level = DIAG_ERROR;
        if (c->nerrors >= MAX_ERRORS) {
            c->suppress = 1;
            return;
        }
    }
    char *msg = arena_vprintf(c->arena, fmt, ap);
    if (level != DIAG_NOTE) {
        /* Instances of one generic kernel repeat the errors of its body. */
        for (int i = 0; i < c->diags.n; i++) {
            if (same_diag(c->diags.items[i], level, has_range, r, msg)) {
                c->suppress = 1;
                return;
            }
        }
    }
    Diag *d = arena_alloc(c->arena, sizeof *d);
    d->level = level;
    d->has_range = has_range;
    d->range = r;
    d->msg = msg;
    list_push(c->arena, &c->diags, d);
    if (level == DIAG_ERROR)
        c->nerrors++;
    else if (level == DIAG_WARNING)
        c->nwarnings++;
    if (level != DIAG_NOTE && c->context_msg) {
        Diag *n = arena_alloc(c->arena, sizeof *n);
        n->level = DIAG_NOTE;
        n->has_range = true;
        n->range = c->context_range;
        n->msg = (char *)c->context_msg;
        n->context = true;
        list_push(c->arena, &c->diags, n);
    }
}

#define DEFINE_DIAG(fn, level)                                   \
    void fn(Compiler *c, Range r, const char *fmt, ...)          \
    {                                                            \
        va_list ap;                                              \
        va_start(ap, fmt);                                       \
        add(c, level, true, r, fmt, ap);                         \
        va_end(ap);                                              \
    }
DEFINE_DIAG(diag_error, DIAG_ERROR)
DEFINE_DIAG(diag_warning, DIAG_WARNING)
DEFINE_DIAG(diag_note, DIAG_NOTE)

void diag_note_plain(Compiler *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(c, DIAG_NOTE, false, (Range){0}, fmt, ap);
    va_end(ap);
}

void diag_error_plain(Compiler *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(c, DIAG_ERROR, false, (Range){0}, fmt, ap);
    va_end(ap);
}

/* ---- rendering ---------------------------------------------------------- */

static const char *const level_name[] = {"error", "warning", "note"};
static const char *const level_color[] = {"\033[1;31m", "\033[1;35m", "\033[1;36m"};
#define BOLD "\033[1m"
#define GREEN "\033[1;32m"
#define RESET "\033[0m"

/* The length of the valid UTF-8 sequence at s (1 to 4 bytes, of n), or 0
 * for a byte that starts none (overlong forms and surrogates included). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    /* the allowed range of the second byte for each lead, then the count */
    static const struct { unsigned char lo, hi, lo2, hi2, len; } lead[] = {
        {0xc2, 0xdf, 0x80, 0xbf, 2}, {0xe0, 0xe0, 0xa0, 0xbf, 3}, {0xe1, 0xec, 0x80, 0xbf, 3},
        {0xed, 0xed, 0x80, 0x9f, 3}, {0xee, 0xef, 0x80, 0xbf, 3}, {0xf0, 0xf0, 0x90, 0xbf, 4},
        {0xf1, 0xf3, 0x80, 0xbf, 4}, {0xf4, 0xf4, 0x80, 0x8f, 4},
    };
    for (size_t k = 0; k < sizeof lead / sizeof lead[0]; k++) {
        if (s[0] < lead[k].lo || s[0] > lead[k].hi)
            continue;
        size_t len = lead[k].len;
        if (n < len || s[1] < lead[k].lo2 || s[1] > lead[k].hi2)
            return 0;
        for (size_t i = 2; i < len; i++)
            if ((s[i] & 0xc0) != 0x80)
                return 0;
        return len;
    }
    return 0;
}

/* The source line, then the caret under `off`.  A valid UTF-8 sequence
 * takes one column; a byte that is not UTF-8 prints as <XX> (as clang
 * does), four columns, so the terminal gets valid text and the caret
 * lines up. */
static void put_line_and_caret(Buf *out, const SourceFile *f, Range r, bool color)
{
    if (r.off > f->len)
        return;
    const unsigned char *t = (const unsigned char *)f->text;
    size_t start = r.off;
    while (start > 0 && t[start - 1] != '\n')
        start--;
    size_t end = r.off;
    while (end < f->len && t[end] != '\n')
        end++;
    if (end > start && t[end - 1] == '\r')
        end--;
    if (start == 0 && r.off >= source_bom(f))
        start = source_bom(f); /* the byte order mark the lexer skipped: not printed, no column */
    /* Control characters (NUL included, and C1's in UTF-8) print as spaces
     * so the terminal and the caret stay aligned. */
    for (size_t i = start, k; i < end; i += k) {
        k = utf8_len(t + i, end - i);
        if (k == 0) {
            buf_printf(out, "<%02X>", t[i]);
            k = 1;
        } else if (k == 1) {
            char o = (t[i] < 0x20 && t[i] != '\t') || t[i] == 0x7f ? ' ' : (char)t[i];
            buf_put(out, &o, 1);
        } else if (k == 2 && t[i] == 0xc2 && t[i + 1] < 0xa0) {
            buf_put(out, " ", 1); /* a C1 control (U+0080-U+009F; U+009B is CSI): a space too */
        } else {
            buf_put(out, (const char *)t + i, k);
        }
    }
    buf_put(out, "\n", 1);
    size_t i = start, k;
    for (; i < r.off && i < end; i += k) {
        k = utf8_len(t + i, end - i);
        if (k == 0)
            buf_put(out, "    ", 4), k = 1;
        else
            buf_put(out, t[i] == '\t' ? "\t" : " ", 1);
    }
    if (color)
        buf_puts(out, GREEN);
    buf_put(out, "^", 1);
    size_t stop = r.off + r.len < end ? r.off + r.len : end;
    for (bool first = true; i < stop; i += k, first = false) {
        k = utf8_len(t + i, end - i);
        size_t w = k == 0 ? 4 : 1;
        k = k ? k : 1;
        for (size_t j = first; j < w; j++)
            buf_put(out, "~", 1);
    }
    if (color)
        buf_puts(out, RESET);
    buf_put(out, "\n", 1);
}

/* Diagnostics print in source order, each error or warning with its notes;
 * the front end finds them in phase order (lexer, parser, sema).  An
 * imported file's come where it is imported, as an #include's do in cc:
 * a diagnostic's key is the offsets of the imports that led to its file,
 * from the main file down, then its own (file << 32 | offset, compared as
 * numbers: at the first level two keys differ, both are in one file). */
#define KEY_DEPTH 64
typedef struct Group {
    int first, count;
    int depth; /* -1: no location (an unreadable file), first */
    uint64_t key[KEY_DEPTH];
    int seq;
} Group;

static void group_key(Compiler *c, Group *g, int file, uint32_t off)
{
    uint64_t rev[KEY_DEPTH];
    int n = 0;
    for (int f = file; n < KEY_DEPTH;) {
        rev[n++] = (uint64_t)(uint32_t)f << 32 | off;
        const SourceFile *sf = source_get(c, f);
        if (sf->parent < 0)
            break;
        off = sf->parent_off;
        f = sf->parent;
    }
    g->depth = n;
    for (int i = 0; i < n; i++)
        g->key[i] = rev[n - 1 - i];
}

static int group_cmp(const void *pa, const void *pb)
{
    const Group *a = pa, *b = pb;
    if (a->depth < 0 || b->depth < 0) {
        if (a->depth != b->depth)
            return a->depth < b->depth ? -1 : 1;
        return a->seq - b->seq;
    }
    for (int i = 0; i < a->depth && i < b->depth; i++)
        if (a->key[i] != b->key[i])
            return a->key[i] < b->key[i] ? -1 : 1;
    if (a->depth != b->depth) /* an import's own diagnostic before its file's */
        return a->depth < b->depth ? -1 : 1;
    return a->seq - b->seq;
}

static void render_one(Compiler *c, Buf *out, const Diag *d, bool color);

void diag_render(Compiler *c, Buf *out, bool color)
{
    Group *groups = arena_alloc(c->arena, sizeof(Group) * (size_t)(c->diags.n + 1));
    int ng = 0;
    for (int i = 0; i < c->diags.n; i++) {
        const Diag *d = c->diags.items[i];
        if (d->level == DIAG_NOTE && ng > 0) {
            /* a note belongs to the diagnostic before it */
            groups[ng - 1].count++;
            continue;
        }
        groups[ng].first = i;
        groups[ng].count = 1;
        /* Locationless diagnostics (unreadable files) go first. */
        groups[ng].depth = -1;
        if (d->has_range)
            group_key(c, &groups[ng], d->range.file, d->range.off);
        groups[ng].seq = ng;
        ng++;
    }
    qsort(groups, (size_t)ng, sizeof *groups, group_cmp);
    /* Within a group the context note ("in instance ...") comes last. */
    for (int g = 0; g < ng; g++)
        for (int pass = 0; pass < 2; pass++)
            for (int i = groups[g].first; i < groups[g].first + groups[g].count; i++)
                if (((const Diag *)c->diags.items[i])->context == (pass == 1))
                    render_one(c, out, c->diags.items[i], color);
    if (c->nerrors >= MAX_ERRORS)
        buf_printf(out, "%snote:%s too many errors (%d); stopping\n", color ? level_color[DIAG_NOTE] : "",
                   color ? RESET : "", MAX_ERRORS);
}

static void render_one(Compiler *c, Buf *out, const Diag *d, bool color)
{
    {
        if (d->has_range) {
            const SourceFile *f = source_get(c, d->range.file);
            buf_printf(out, "%s%s:%d:%d:%s ", color ? BOLD : "", f->path, d->range.line, d->range.col,
                       color ? RESET : "");
        } else if (d->level != DIAG_NOTE) {
            buf_printf(out, "%snnkc:%s ", color ? BOLD : "", color ? RESET : "");
        }
        buf_printf(out, "%s%s:%s %s%s%s\n", color ? level_color[d->level] : "", level_name[d->level],
                   color ? RESET : "", color ? BOLD : "", d->msg, color ? RESET : "");
        if (d->has_range)
            put_line_and_caret(out, source_get(c, d->range.file), d->range, color);
    }
}

/* ---- suggestions -------------------------------------------------------- */

static int edit_distance(const char *a, const char *b, int limit)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 64 || lb > 64 || abs(la - lb) > limit)
        return limit + 1;
    int prev2[65] = {0}, prev[65], cur[65];
    for (int j = 0; j <= lb; j++)
        prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        int best = cur[0];
        for (int j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            /* A swap of two neighbours counts as one edit (tahn -> tanh). */
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
            if (cur[j] < best)
                best = cur[j];
        }
        if (best > limit)
            return limit + 1;
        memcpy(prev2, prev, sizeof(int) * (size_t)(lb + 1));
        memcpy(prev, cur, sizeof(int) * (size_t)(lb + 1));
    }
    return prev[lb];
}

const char *diag_suggest(const char *name, const char *const *cands, int n)
{
    int len = (int)strlen(name);
    int limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
    const char *best = NULL;
    int best_d = limit + 1;
    for (int i = 0; i < n; i++) {
        if (!cands[i] || strcmp(cands[i], name) == 0)
            continue;
        int d = edit_distance(name, cands[i], limit);
        /* On a tie prefer the candidate of the same length (tahn: tanh, not tan). */
        if (d == best_d && best && strlen(cands[i]) == (size_t)len && strlen(best) != (size_t)len) {
            best = cands[i];
            continue;
        }
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    return best;
}
