/* lexer.re - the .nnk lexer (re2c).
 *
 * The source buffer ends with a NUL sentinel; NUL bytes inside the file are
 * reported and skipped, so no class below may match \x00.  Block comments
 * and strings are scanned by hand: they can hold any byte and must stop at
 * the real end of the buffer.  Literals are converted here, so a literal
 * that is too large or has a suffix is reported at its own location.
 */
#include "nnkc.h"
#include "parser.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void lexer_init(Lexer *lx, Compiler *c, SourceFile *src)
{
    memset(lx, 0, sizeof *lx);
    lx->c = c;
    lx->src = src;
    lx->cur = src->text;
    lx->lim = src->text + src->len;
    lx->line_start = src->text;
    lx->line = 1;
    /* a UTF-8 byte order mark (editors on Windows write one) is skipped, as cc does */
    lx->cur += source_bom(src);
    lx->line_start = lx->cur;
}

static Range range_here(const Lexer *lx, const char *start, const char *end)
{
    Range r;
    r.file = lx->src->id;
    r.line = lx->line;
    r.col = (int32_t)(start - lx->line_start) + 1;
    r.off = (uint32_t)(start - lx->src->text);
    r.len = (uint32_t)(end - start);
    return r;
}

static void newline(Lexer *lx, const char *after)
{
    lx->line++;
    lx->line_start = after;
}

/* Bidirectional controls ("Trojan Source", CVE-2021-42574) in a comment
 * or a string: an embedding, override or isolate that is still open at
 * the end of the line, or of the comment or string, reorders the code after
 * it as an editor shows it, so the code reads other than it compiles.
 * Those are warned about, at the first one left open (gcc's
 * -Wbidi-chars=unpaired); closed pairs are harmless and pass.  s..e is one
 * line's part of the comment or string, on the current line. */
static void bidi_check(Lexer *lx, const char *s, const char *e, const char *what)
{
    enum { MAX_OPEN = 16 }; /* more left open on one line: reported at the first */
    const char *open[MAX_OPEN];
    bool isolate[MAX_OPEN];
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; p + 2 < (const unsigned char *)e && n < MAX_OPEN; p++) {
        if (p[0] != 0xe2 || (p[1] != 0x80 && p[1] != 0x81))
            continue;
        unsigned cp = 0x2000u | (unsigned)(p[1] & 0x3f) << 6 | (p[2] & 0x3fu);
        if ((cp >= 0x202a && cp <= 0x202e && cp != 0x202c) || (cp >= 0x2066 && cp <= 0x2068)) {
            open[n] = (const char *)p;
            isolate[n++] = cp >= 0x2066;
        } else if (cp == 0x202c && n > 0 && !isolate[n - 1]) {
            n--; /* PDF closes the innermost embedding or override */
        } else if (cp == 0x2069) {
            /* PDI closes the innermost isolate and what is open inside it */
            while (n > 0 && !isolate[n - 1])
                n--;
            if (n > 0)
                n--;
        }
    }
    if (n == 0)
        return;
    const unsigned char *b = (const unsigned char *)open[0];
    unsigned cp = 0x2000u | (unsigned)(b[1] & 0x3f) << 6 | (b[2] & 0x3fu);
    static const char *const names[] = {"LEFT-TO-RIGHT EMBEDDING", "RIGHT-TO-LEFT EMBEDDING", "", "LEFT-TO-RIGHT OVERRIDE",
                                        "RIGHT-TO-LEFT OVERRIDE"};
    static const char *const inames[] = {"LEFT-TO-RIGHT ISOLATE", "RIGHT-TO-LEFT ISOLATE", "FIRST STRONG ISOLATE"};
    diag_warning(lx->c, range_here(lx, (const char *)b, (const char *)b + 3),
                 "unterminated bidirectional control U+%04X (%s) in %s", cp,
                 cp >= 0x2066 ? inames[cp - 0x2066] : names[cp - 0x202a], what);
    diag_note_plain(lx->c, "it reorders the text after it as displayed, so the code reads other than it compiles; "
                           "close it on the same line (%s) or remove it",
                    cp >= 0x2066 ? "U+2069 POP DIRECTIONAL ISOLATE" : "U+202C POP DIRECTIONAL FORMATTING");
}

/* Skips a block comment whose opening starts at lx->tok.  Returns false when it
 * is unterminated (reported). */
static bool block_comment(Lexer *lx)
{
    const char *p = lx->tok + 2;
    Range open = range_here(lx, lx->tok, lx->tok + 2);
    const char *seg = p; /* the start of the comment's part on this line */
    while (p < lx->lim) {
        if (p[0] == '*' && p + 1 < lx->lim && p[1] == '/') {
            bidi_check(lx, seg, p, "a comment");
            lx->cur = p + 2;
            return true;
        }
        size_t eol = source_eol(p, lx->lim);
        if (eol) {
            bidi_check(lx, seg, p, "a comment");
            p += eol;
            newline(lx, p);
            seg = p;
        } else {
            p++;
        }
    }
    bidi_check(lx, seg, lx->lim, "a comment");
    lx->cur = lx->lim;
    lx->unterminated = true;
    diag_error(lx->c, open, "unterminated comment");
    diag_note_plain(lx->c, "a /* comment must end with */ before the end of the file");
    return false;
}

/* Scans a string whose opening quote is at lx->tok; escapes \" and \\. */
static bool string_lit(Lexer *lx, Token *t)
{
    Buf b = {0};
    const char *p = lx->tok + 1;
    while (p < lx->lim && *p != '"' && !source_eol(p, lx->lim)) {
        if (*p == '\\' && p + 1 < lx->lim && (p[1] == '"' || p[1] == '\\'))
            p++;
        if (*p == 0) {
            Range r = range_here(lx, p, p + 1);
            diag_error(lx->c, r, "NUL byte in string");
            t->bad = true;
        }
        buf_put(&b, p, 1);
        p++;
    }
    bidi_check(lx, lx->tok + 1, p, "a string");
    bool ok = p < lx->lim && *p == '"';
    lx->cur = ok ? p + 1 : p;
    t->range = range_here(lx, lx->tok, lx->cur);
    if (!ok) {
        diag_error(lx->c, t->range, "unterminated string");
        t->bad = true;
    }
    t->text = intern(lx->c->strings, b.data ? b.data : "", b.len);
    buf_free(&b);
    return ok;
}

static bool is_ident_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* Checks digit separators: '_' only between two digits. */
static bool separators_ok(const char *s, const char *e, bool hex)
{
    for (const char *p = s; p < e; p++) {
        if (*p != '_')
            continue;
        bool before = p > s && (hex ? strchr("0123456789abcdefABCDEF", p[-1]) != NULL : (p[-1] >= '0' && p[-1] <= '9'));
        bool after = p + 1 < e && (hex ? strchr("0123456789abcdefABCDEF", p[1]) != NULL : (p[1] >= '0' && p[1] <= '9'));
        if (p[-1] == 'x' || p[-1] == 'X')
            before = false;
        if (!before || !after)
            return false;
    }
    return true;
}

/* A literal followed directly by letters: report the suffix, consume it. */
/* The letters after a number: `j` (or `J`) makes a decimal one imaginary,
 * as Python and numexpr write it (2.5j, 1j: a weak complex literal, c128
 * alone, c64 with f32); any other is an error. */
static bool literal_suffix(Lexer *lx, Token *t, bool is_float, bool hex)
{
    const char *p = lx->cur;
    if (p >= lx->lim || !is_ident_char(*p))
        return false;
    const char *s = p;
    while (p < lx->lim && is_ident_char(*p))
        p++;
    lx->cur = p;
    Range r = range_here(lx, s, p);
    char lit[64];
    int n = (int)(s - lx->tok) < 60 ? (int)(s - lx->tok) : 60;
    memcpy(lit, lx->tok, (size_t)n);
    lit[n] = 0;
    if (p - s == 1 && (*s == 'j' || *s == 'J') && !hex) {
        if (!t->bad) {
            double im = is_float ? t->value.v.f : (double)t->value.v.u;
            t->kind = NNK_TK_FLOAT;
            t->value = (Value){.type = T_WCOMPLEX};
            t->value.im = im;
        }
        return false;
    }
    if (p - s == 1 && (*s == 'i' || *s == 'I' || *s == 'j' || *s == 'J')) {
        if (hex)
            diag_error(lx->c, r, "a hexadecimal literal cannot be imaginary");
        else
            diag_error(lx->c, r, "invalid suffix '%c' on %s literal", *s, is_float ? "float" : "integer");
        diag_note_plain(lx->c, "an imaginary literal is a decimal number followed by 'j', as in Python: 2.5j, 1j");
    } else if (is_float && p - s == 1 && (*s == 'f' || *s == 'F')) {
        diag_error(lx->c, r, "float literals take no suffix");
        diag_note_plain(lx->c, "a literal takes the type of the other operand; write %s, or f32(%s) for an explicit f32", lit, lit);
    } else {
        diag_error(lx->c, r, "invalid suffix '%.*s' on %s literal", (int)(p - s), s, is_float ? "float" : "integer");
    }
    t->bad = true;
    return true;
}

static void int_literal(Lexer *lx, Token *t, bool hex)
{
    const char *s = lx->tok + (hex ? 2 : 0), *e = lx->cur;
    t->kind = NNK_TK_INT;
    t->value.type = T_WINT;
    if (!separators_ok(s, e, hex) || s == e) {
        diag_error(lx->c, range_here(lx, lx->tok, e), s == e ? "hexadecimal literal has no digits" : "misplaced '_' in literal: it may only separate digits");
        t->bad = true;
    }
    uint64_t v = 0;
    bool overflow = false;
    for (const char *p = s; p < e; p++) {
        if (*p == '_')
            continue;
        unsigned d = *p <= '9' ? (unsigned)(*p - '0') : (unsigned)((*p | 0x20) - 'a' + 10);
        unsigned base = hex ? 16 : 10;
        if (v > (UINT64_MAX - d) / base)
            overflow = true;
        v = v * base + d;
    }
    if (overflow && !t->bad) {
        diag_error(lx->c, range_here(lx, lx->tok, e), "integer literal is too large (the largest is 18446744073709551615)");
        t->bad = true;
    }
    t->value.v.u = overflow ? 0 : v;
    literal_suffix(lx, t, false, hex);
}

static void float_literal(Lexer *lx, Token *t)
{
    t->kind = NNK_TK_FLOAT;
    t->value.type = T_WFLOAT;
    char tmp[128];
    size_t n = 0;
    bool ok = separators_ok(lx->tok, lx->cur, false);
    for (const char *p = lx->tok; p < lx->cur && n < sizeof tmp - 1; p++)
        if (*p != '_')
            tmp[n++] = *p;
    tmp[n] = 0;
    if (!ok) {
        diag_error(lx->c, range_here(lx, lx->tok, lx->cur), "misplaced '_' in literal: it may only separate digits");
        t->bad = true;
    }
    if ((size_t)(lx->cur - lx->tok) >= sizeof tmp - 1) {
        /* Long mantissas are legal; strtod copes with any length. */
        char *big = arena_strndup(lx->c->arena, lx->tok, (size_t)(lx->cur - lx->tok));
        char *w = big;
        for (char *r = big; *r; r++)
            if (*r != '_')
                *w++ = *r;
        *w = 0;
        t->value.v.f = strtod(big, NULL);
    } else {
        t->value.v.f = strtod(tmp, NULL);
    }
    if (isinf(t->value.v.f) && !t->bad) {
        diag_error(lx->c, range_here(lx, lx->tok, lx->cur), "float literal is out of range of f64");
        t->bad = true;
    }
    literal_suffix(lx, t, true, false);
}

int lexer_next(Lexer *lx, Token *t)
{
    memset(t, 0, sizeof *t);
    for (;;) {
        lx->tok = lx->cur;
        const char *YYMARKER = NULL;
        (void)YYMARKER;
#define TOK(k) do { t->kind = NNK_TK_##k; goto done; } while (0)
        /*!re2c
            re2c:define:YYCTYPE = "unsigned char";
            re2c:define:YYCURSOR = "lx->cur";
            re2c:define:YYMARKER = "YYMARKER";
            re2c:yyfill:enable = 0;
            re2c:flags:input = default;
            re2c:api:style = free-form;
            re2c:define:YYPEEK = "(unsigned char)*lx->cur";
            re2c:define:YYSKIP = "++lx->cur;";
            re2c:define:YYBACKUP = "YYMARKER = lx->cur;";
            re2c:define:YYRESTORE = "lx->cur = YYMARKER;";

            dec    = [0-9] [0-9_]*;
            hexd   = [0-9a-fA-F_];
            exp    = [eE] [+-]? [0-9] [0-9_]*;
            ident  = [A-Za-z_] [A-Za-z0-9_]*;
            eol    = "\r\n" | "\r" | "\n";

            "\x00" {
                if (lx->tok >= lx->lim) {
                    lx->cur = lx->lim;
                    t->kind = 0;
                    t->range = range_here(lx, lx->lim, lx->lim);
                    return 0;
                }
                diag_error(lx->c, range_here(lx, lx->tok, lx->cur), "NUL byte in source");
                lx->error_line = lx->line;
                continue;
            }
            [ \t\v\f]+  { continue; }
            eol          { newline(lx, lx->cur); continue; }
            "//" [^\n\r\x00]* { bidi_check(lx, lx->tok, lx->cur, "a comment"); continue; }
            "/*"         { if (!block_comment(lx)) { t->kind = 0; t->range = range_here(lx, lx->lim, lx->lim); return 0; } continue; }
            "\""         { t->kind = NNK_TK_STRING; string_lit(lx, t); return t->kind; }

            "0" [xX] hexd*            { int_literal(lx, t, true); goto done; }
            dec                       { int_literal(lx, t, false); goto done; }
            dec "." [0-9_]* exp?      { float_literal(lx, t); goto done; }
            "." [0-9] [0-9_]* exp?    { float_literal(lx, t); goto done; }
            dec exp                   { float_literal(lx, t); goto done; }

            "elementwise" { TOK(ELEMENTWISE); }
            "reduction"   { TOK(REDUCTION); }
            "func"        { TOK(FUNC); }
            "const"       { TOK(CONST); }
            "let"         { TOK(LET); }
            "import"      { TOK(IMPORT); }
            "instantiate" { TOK(INSTANTIATE); }
            "true"        { TOK(TRUE); }
            "false"       { TOK(FALSE); }
            "idx"         { TOK(IDX); }
            "n"           { TOK(N); }
            ident {
                /* the type names are types.def's, not a second list here */
                if (type_lookup((const char *)lx->tok, (size_t)(lx->cur - lx->tok)) != T_NONE)
                    TOK(TYPENAME);
                TOK(IDENT);
            }

            "("  { TOK(LPAREN); }
            ")"  { TOK(RPAREN); }
            "{"  { TOK(LBRACE); }
            "}"  { TOK(RBRACE); }
            "["  { TOK(LBRACKET); }
            "]"  { TOK(RBRACKET); }
            ","  { TOK(COMMA); }
            ";"  { TOK(SEMI); }
            ":"  { TOK(COLON); }
            "->" { TOK(ARROW); }
            "?"  { TOK(QUESTION); }
            "="  { TOK(ASSIGN); }
            "||" { TOK(OROR); }
            "&&" { TOK(ANDAND); }
            "|"  { TOK(PIPE); }
            "^"  { TOK(CARET); }
            "&"  { TOK(AMP); }
            "==" { TOK(EQ); }
            "!=" { TOK(NE); }
            "<"  { TOK(LT); }
            "<=" { TOK(LE); }
            ">"  { TOK(GT); }
            ">=" { TOK(GE); }
            "<<" { TOK(SHL); }
            ">>" { TOK(SHR); }
            "+"  { TOK(PLUS); }
            "-"  { TOK(MINUS); }
            "*"  { TOK(STAR); }
            "/"  { TOK(SLASH); }
            "%"  { TOK(PERCENT); }
            "!"  { TOK(BANG); }
            "~"  { TOK(TILDE); }

            [\x80-\xff]+ {
                diag_error(lx->c, range_here(lx, lx->tok, lx->cur), "unexpected non-ASCII bytes in source");
                lx->error_line = lx->line;
                continue;
            }
            * {
                unsigned char ch = (unsigned char)*lx->tok;
                if (ch >= 0x20 && ch < 0x7f)
                    diag_error(lx->c, range_here(lx, lx->tok, lx->cur), "unexpected character '%c'", ch);
                else
                    diag_error(lx->c, range_here(lx, lx->tok, lx->cur), "unexpected byte 0x%02x in source", ch);
                lx->error_line = lx->line;
                continue;
            }
        */
    }
done:
#undef TOK
    t->range = range_here(lx, lx->tok, lx->cur);
    if (t->kind == NNK_TK_IDENT || t->kind == NNK_TK_TYPENAME)
        t->text = intern(lx->c->strings, lx->tok, (size_t)(lx->cur - lx->tok));
    return t->kind;
}
