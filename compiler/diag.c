/* diag.c - diagnostics: collected as values with locations, rendered in
 * the format of cc ("file:line:col: error: msg", the source line, a caret
 * under the culprit), deduplicated, and capped so that no input can make
 * the compiler print without end. */
#include "nnkc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ERRORS = 50 };

static bool same_diag(const Diag *d, DiagLevel level, bool has_range, Range r, const char *msg)
{
    return d->level == level && d->has_range == has_range &&
           (!has_range || (d->range.file == r.file && d->range.off == r.off && d->range.len == r.len)) &&
           strcmp(d->msg, msg) == 0;
}

static uint64_t diag_hash(DiagLevel level, bool has_range, Range r, const char *msg)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    uint64_t parts[4] = {(uint64_t)level << 1 | has_range, has_range ? (uint64_t)(uint32_t)r.file : 0,
                         has_range ? r.off : 0, has_range ? r.len : 0};
    for (int i = 0; i < 4; i++)
        h = (h ^ parts[i]) * 1099511628211u;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return h;
}

/* The slot of a diagnostic equal to this one, or the empty slot where it
 * goes: a set, since a scan of every diagnostic made a file of 100,000
 * warnings (one a line) quadratic, a 16 MiB one hours. */
static Diag **diag_slot(Compiler *c, DiagLevel level, bool has_range, Range r, const char *msg)
{
    if (2 * (c->diag_set_n + 1) > c->diag_set_cap) {
        int cap = c->diag_set_cap ? 2 * c->diag_set_cap : 64;
        Diag **set = arena_alloc(c->arena, sizeof *set * (size_t)cap);
        memset(set, 0, sizeof *set * (size_t)cap);
        for (int i = 0; i < c->diag_set_cap; i++) {
            Diag *d = c->diag_set[i];
            if (!d)
                continue;
            size_t j = diag_hash(d->level, d->has_range, d->range, d->msg) & (size_t)(cap - 1);
            while (set[j])
                j = (j + 1) & (size_t)(cap - 1);
            set[j] = d;
        }
        c->diag_set = set;
        c->diag_set_cap = cap;
    }
    /* An entry no longer in the list (taken back) matches nothing; the
     * new one takes the first such slot on its way. */
    Diag **stale = NULL;
    size_t j = diag_hash(level, has_range, r, msg) & (size_t)(c->diag_set_cap - 1);
    for (Diag *d; (d = c->diag_set[j]); j = (j + 1) & (size_t)(c->diag_set_cap - 1)) {
        bool live = d->index < c->diags.n && c->diags.items[d->index] == d;
        if (live && same_diag(d, level, has_range, r, msg))
            return &c->diag_set[j];
        if (!live && !stale)
            stale = &c->diag_set[j];
    }
    return stale ? stale : &c->diag_set[j];
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
    Diag **slot = NULL;
    if (level != DIAG_NOTE) {
        /* Instances of one generic kernel repeat the errors of its body. */
        slot = diag_slot(c, level, has_range, r, msg);
        if (*slot && (*slot)->index < c->diags.n && c->diags.items[(*slot)->index] == *slot) {
            c->suppress = 1;
            return;
        }
    }
    Diag *d = arena_alloc(c->arena, sizeof *d);
    d->level = level;
    d->has_range = has_range;
    d->range = r;
    d->msg = msg;
    d->index = c->diags.n;
    list_push(c->arena, &c->diags, d);
    if (slot) {
        c->diag_set_n += !*slot;
        *slot = d;
    }
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
        n->index = c->diags.n;
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

typedef struct CodeRange { uint32_t lo, hi; } CodeRange;

/* Characters that print as <U+XXXX>, as clang prints them: controls (a
 * terminal acts on them: ESC, CSI U+009B, CR), and the invisible ones that
 * change how the text around them reads, the bidirectional controls above
 * all ("Trojan Source": U+202E shows the rest of a line reversed), zero
 * width spaces and joiners, the tag characters. */
static const CodeRange escaped[] = {
    {0x00, 0x08},     {0x0a, 0x1f},     {0x7f, 0x9f},     {0xad, 0xad},     {0x061c, 0x061c},
    {0x180e, 0x180e}, {0x200b, 0x200f}, {0x2028, 0x202e}, {0x2060, 0x206f}, {0xfeff, 0xfeff},
    {0xfff9, 0xfffb}, {0xe0000, 0xe007f},
};
/* Characters that take two columns on a terminal (East Asian wide and
 * full width, emoji), and none (combining marks, variation selectors), so
 * that the caret lines up under them too (as wcwidth counts, roughly). */
static const CodeRange wide[] = {
    {0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff},
    {0xa000, 0xa4cf},   {0xac00, 0xd7a3},   {0xf900, 0xfaff}, {0xfe30, 0xfe4f}, {0xff00, 0xff60},
    {0xffe0, 0xffe6},   {0x1f300, 0x1f64f}, {0x1f900, 0x1f9ff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
};
static const CodeRange zero_width[] = {
    {0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd}, {0x1ab0, 0x1aff},
    {0x1dc0, 0x1dff}, {0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f},
};

static bool in_ranges(const CodeRange *t, size_t n, uint32_t cp)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= t[i].lo && cp <= t[i].hi)
            return true;
    return false;
}
#define IN(t, cp) in_ranges(t, sizeof t / sizeof t[0], cp)

/* One character of text a user controls, as a diagnostic prints it. */
typedef struct Glyph {
    char text[12]; /* what is written: the character, <U+202E>, or <FF> for a byte that is not UTF-8 */
    int len;
    int cols;      /* the columns it takes; -1 for a tab (the caret line copies it) */
} Glyph;

/* Reads the character at s (n bytes left, n > 0); returns its bytes. */
static size_t glyph(const unsigned char *s, size_t n, Glyph *g)
{
    size_t k = utf8_len(s, n);
    if (k == 0) {
        g->len = snprintf(g->text, sizeof g->text, "<%02X>", s[0]);
        g->cols = g->len;
        return 1;
    }
    uint32_t cp = k == 1 ? s[0] : (uint32_t)(s[0] & (0x7f >> k));
    for (size_t i = 1; i < k; i++)
        cp = cp << 6 | (s[i] & 0x3f);
    if (cp == '\t') {
        g->text[0] = '\t', g->len = 1, g->cols = -1;
    } else if (IN(escaped, cp)) {
        g->len = snprintf(g->text, sizeof g->text, "<U+%04X>", (unsigned)cp);
        g->cols = g->len;
    } else {
        memcpy(g->text, s, k);
        g->len = (int)k;
        g->cols = IN(wide, cp) ? 2 : IN(zero_width, cp) ? 0 : 1;
    }
    return k;
}

enum { LINE_SHOWN = 4096 }; /* bytes of a source line or a message shown at most (clang's limit) */

/* Text a user controls in a message or a file name: the import path of a
 * string, a file's name; escaped as the source line is, and cut after
 * LINE_SHOWN bytes (a name of 1 MB was printed whole in each message). */
static void put_safe(Buf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), shown = 0;
    while (n > 0 && shown < LINE_SHOWN) {
        Glyph g;
        size_t k = glyph(p, n, &g);
        buf_put(out, g.text, (size_t)g.len);
        p += k, n -= k, shown += k;
    }
    if (n > 0)
        buf_puts(out, "...");
}

/* A glyph's columns in the caret line, as `fill` (a blank or a tilde; a
 * tab is copied under a tab), less the first `skip`. */
static void put_cols(Buf *out, const Glyph *g, char fill, int skip)
{
    if (g->cols < 0 && !skip)
        buf_put(out, fill == ' ' ? "\t" : "~", 1);
    for (int j = skip; j < g->cols; j++)
        buf_put(out, &fill, 1);
}

/* The source line, then the caret under `off`, both valid text that
 * nothing in the line can reorder or hide: every character as glyph()
 * prints it, and the caret line as wide as the glyphs before it. */
static void put_line_and_caret(Buf *out, const SourceFile *f, Range r, bool color)
{
    if (r.off > f->len)
        return;
    const unsigned char *t = (const unsigned char *)f->text;
    size_t end, start = source_line(f, r.off, &end);
    /* A line longer than LINE_SHOWN bytes (a generated file's, a file of
     * one line) shows that much around the caret, "..." for the rest:
     * every error printed all of a 16 MiB line. */
    bool cut_start = false, cut_end = false;
    if (end - start > LINE_SHOWN) {
        size_t ws = r.off - start > LINE_SHOWN / 2 ? r.off - LINE_SHOWN / 2 : start;
        if (end - ws < LINE_SHOWN)
            ws = end - LINE_SHOWN;
        while (ws < r.off && (t[ws] & 0xc0) == 0x80)
            ws++; /* not inside a character */
        size_t we = ws + LINE_SHOWN;
        while (we > r.off && we < end && (t[we] & 0xc0) == 0x80)
            we--;
        cut_start = ws > start, cut_end = we < end;
        start = ws, end = we;
    }
    Glyph g;
    if (cut_start)
        buf_puts(out, "...");
    for (size_t i = start; i < end;) {
        i += glyph(t + i, end - i, &g);
        buf_put(out, g.text, (size_t)g.len);
    }
    if (cut_end)
        buf_puts(out, "...");
    buf_put(out, "\n", 1);
    if (cut_start)
        buf_puts(out, "   ");
    size_t i = start;
    while (i < r.off && i < end) {
        i += glyph(t + i, end - i, &g);
        put_cols(out, &g, ' ', 0);
    }
    if (color)
        buf_puts(out, GREEN);
    buf_put(out, "^", 1);
    size_t stop = r.off + r.len < end ? r.off + r.len : end;
    for (bool first = true; i < stop; first = false) {
        i += glyph(t + i, end - i, &g);
        put_cols(out, &g, '~', first);
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
 * numbers: at the first level two keys differ, both are in one file).
 * The key is as long as the chain (up to NNKC_MAX_IMPORT_DEPTH): one cut
 * short compared the levels of two chains out of step. */
typedef struct Group {
    int first, count;
    int depth; /* -1: no location (an unreadable file), first */
    uint64_t *key;
    int seq;
} Group;

static void group_key(Compiler *c, Group *g, int file, uint32_t off)
{
    int n = 1;
    for (const SourceFile *sf = source_get(c, file); sf->parent >= 0; sf = source_get(c, sf->parent))
        n++;
    g->depth = n;
    g->key = arena_alloc(c->arena, sizeof(uint64_t) * (size_t)n);
    for (int f = file, i = n - 1; i >= 0; i--) {
        g->key[i] = (uint64_t)(uint32_t)f << 32 | off;
        const SourceFile *sf = source_get(c, f);
        off = sf->parent_off;
        f = sf->parent;
    }
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

/* Before the first diagnostic of an imported file (and again whenever the
 * file changes), the imports that led to it, the main file's first, as
 * clang's "In file included from"; a chain deeper than CHAIN_SHOWN levels
 * shows its ends and the count of those between. */
enum { CHAIN_SHOWN = 8 };

static void put_import_chain(Compiler *c, Buf *out, int file)
{
    int n = 0;
    for (const SourceFile *sf = source_get(c, file); sf->parent >= 0; sf = source_get(c, sf->parent))
        n++;
    const SourceFile **chain = arena_alloc(c->arena, sizeof *chain * (size_t)(n ? n : 1));
    int i = n;
    for (const SourceFile *sf = source_get(c, file); sf->parent >= 0; sf = source_get(c, sf->parent))
        chain[--i] = sf; /* chain[0]: the file the main file imports */
    for (i = 0; i < n; i++) {
        if (n > CHAIN_SHOWN && i == CHAIN_SHOWN / 2) {
            buf_printf(out, "In file imported through %d more files:\n", n - CHAIN_SHOWN);
            i = n - CHAIN_SHOWN / 2 - 1;
            continue;
        }
        buf_puts(out, "In file imported from ");
        put_safe(out, source_get(c, chain[i]->parent)->path);
        buf_printf(out, ":%d:%d:\n", chain[i]->parent_line, chain[i]->parent_col);
    }
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
    int shown = -1; /* the file whose import chain was printed last */
    for (int g = 0; g < ng; g++) {
        const Diag *d = c->diags.items[groups[g].first];
        if (d->has_range && d->range.file != shown) {
            shown = d->range.file;
            put_import_chain(c, out, shown);
        }
        for (int pass = 0; pass < 2; pass++)
            for (int i = groups[g].first; i < groups[g].first + groups[g].count; i++)
                if (((const Diag *)c->diags.items[i])->context == (pass == 1))
                    render_one(c, out, c->diags.items[i], color);
    }
    if (c->nerrors >= MAX_ERRORS)
        buf_printf(out, "%snote:%s too many errors (%d); stopping\n", color ? level_color[DIAG_NOTE] : "",
                   color ? RESET : "", MAX_ERRORS);
}

static void render_one(Compiler *c, Buf *out, const Diag *d, bool color)
{
    {
        if (d->has_range) {
            const SourceFile *f = source_get(c, d->range.file);
            buf_puts(out, color ? BOLD : "");
            put_safe(out, f->path);
            buf_printf(out, ":%d:%d:%s ", d->range.line, d->range.col, color ? RESET : "");
        } else if (d->level != DIAG_NOTE) {
            buf_printf(out, "%snnkc:%s ", color ? BOLD : "", color ? RESET : "");
        }
        buf_printf(out, "%s%s:%s %s", color ? level_color[d->level] : "", level_name[d->level],
                   color ? RESET : "", color ? BOLD : "");
        put_safe(out, d->msg);
        buf_printf(out, "%s\n", color ? RESET : "");
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
