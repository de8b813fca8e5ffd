/* Unit tests of the front end: lexer, parser, types and promotion,
 * constant folding, sema, IR, and the library API (CUnit). */
#include "nnkc.h"
#include "parser.h"

#include "../cunit-main.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------- */

static Compiler *load(const char *src)
{
    Compiler *c = nnkc_new();
    nnkc_compile(c, "t.nnk", src, strlen(src), false);
    return c;
}

static char *diags(Compiler *c)
{
    Buf b = {0};
    diag_render(c, &b, false);
    return buf_detach(&b);
}

static bool has_diag(Compiler *c, const char *needle)
{
    char *d = diags(c);
    bool ok = strstr(d, needle) != NULL;
    if (!ok)
        fprintf(stderr, "\nexpected '%s' in:\n%s\n", needle, d);
    free(d);
    return ok;
}

static Instance *instance(Compiler *c, const char *name)
{
    for (int i = 0; i < c->instances.n; i++) {
        Instance *in = c->instances.items[i];
        if (strcmp(in->name, name) == 0)
            return in;
    }
    return NULL;
}

/* ---- lexer ------------------------------------------------------------------ */

typedef struct { const char *src; int kinds[8]; } LexCase;

static void test_lexer_tokens(void)
{
    static const LexCase cases[] = {
        {"elementwise k(x: f32[])", {NNK_TK_ELEMENTWISE, NNK_TK_IDENT, NNK_TK_LPAREN, NNK_TK_IDENT, NNK_TK_COLON,
                                     NNK_TK_TYPENAME, NNK_TK_LBRACKET, NNK_TK_RBRACKET}},
        {"a->b>=c<<d", {NNK_TK_IDENT, NNK_TK_ARROW, NNK_TK_IDENT, NNK_TK_GE, NNK_TK_IDENT, NNK_TK_SHL, NNK_TK_IDENT, 0}},
        {"|a, b| a||b&&!c", {NNK_TK_PIPE, NNK_TK_IDENT, NNK_TK_COMMA, NNK_TK_IDENT, NNK_TK_PIPE, NNK_TK_IDENT,
                             NNK_TK_OROR, NNK_TK_IDENT}},
        {"n idx nx // comment\n /* block\n */ true", {NNK_TK_N, NNK_TK_IDX, NNK_TK_IDENT, NNK_TK_TRUE, 0}},
        {"1 1. .5 1e3 0x1F 1_000", {NNK_TK_INT, NNK_TK_FLOAT, NNK_TK_FLOAT, NNK_TK_FLOAT, NNK_TK_INT, NNK_TK_INT, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Compiler *c = nnkc_new();
        SourceFile *f = source_add(c, "t.nnk", cases[i].src, strlen(cases[i].src));
        Lexer lx;
        lexer_init(&lx, c, f);
        Token t;
        for (int j = 0; j < 8; j++) {
            int k = lexer_next(&lx, &t);
            CU_ASSERT_EQUAL(k, cases[i].kinds[j]);
            if (!cases[i].kinds[j])
                break;
        }
        CU_ASSERT_EQUAL(c->nerrors, 0);
        nnkc_free(c);
    }
}

static void test_lexer_values_and_ranges(void)
{
    const char *src = "x\n  0xFF_FF 2.5e-1\n18446744073709551615";
    Compiler *c = nnkc_new();
    SourceFile *f = source_add(c, "t.nnk", src, strlen(src));
    Lexer lx;
    lexer_init(&lx, c, f);
    Token t;
    lexer_next(&lx, &t);
    CU_ASSERT_EQUAL(t.range.line, 1);
    lexer_next(&lx, &t);
    CU_ASSERT_EQUAL(t.value.v.u, 0xFFFF);
    CU_ASSERT_EQUAL(t.range.line, 2);
    CU_ASSERT_EQUAL(t.range.col, 3);
    CU_ASSERT_EQUAL(t.range.len, 7);
    lexer_next(&lx, &t);
    CU_ASSERT_DOUBLE_EQUAL(t.value.v.f, 0.25, 0);
    lexer_next(&lx, &t);
    CU_ASSERT_EQUAL(t.value.v.u, UINT64_MAX);
    CU_ASSERT_EQUAL(c->nerrors, 0);
    nnkc_free(c);
}

static void test_lexer_errors(void)
{
    const char *bad[] = {"1.5f", "0x", "1__0", "99999999999999999999999", "@", "\"open", "/* open", "a\x01"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Compiler *c = nnkc_new();
        SourceFile *f = source_add(c, "t.nnk", bad[i], strlen(bad[i]));
        Lexer lx;
        lexer_init(&lx, c, f);
        Token t;
        for (int n = 0; n < 100 && lexer_next(&lx, &t); n++)
            ;
        CU_ASSERT(c->nerrors >= 1);
        nnkc_free(c);
    }
}

/* NUL bytes inside the text are errors; the final NUL is the end. */
static void test_lexer_nul(void)
{
    const char src[] = {'a', 0, 'b', 0};
    Compiler *c = nnkc_new();
    SourceFile *f = source_add(c, "t.nnk", src, 3);
    Lexer lx;
    lexer_init(&lx, c, f);
    Token t;
    CU_ASSERT_EQUAL(lexer_next(&lx, &t), NNK_TK_IDENT);
    CU_ASSERT_EQUAL(lexer_next(&lx, &t), NNK_TK_IDENT);
    CU_ASSERT_EQUAL(lexer_next(&lx, &t), 0);
    CU_ASSERT_EQUAL(c->nerrors, 1);
    nnkc_free(c);
}

/* ---- parser --------------------------------------------------------------------- */

static void test_parser_precedence(void)
{
    Compiler *c = load("elementwise k(a: i32[], b: i32[], c: i32[]) -> (y: i32[]) { y = a + b * c << 1 | a & b; }");
    CU_ASSERT_EQUAL(c->nerrors, 0);
    Item *k = c->kernels.items[0];
    Stmt *s = k->body.items[0];
    Buf b = {0};
    ast_dump_expr(s->value, &b);
    CU_ASSERT_STRING_EQUAL(b.data, "(((a + (b * c)) << 1) | (a & b))");
    buf_free(&b);
    nnkc_free(c);
}

static void test_parser_ternary_and_unary(void)
{
    Compiler *c = load("elementwise k(a: f32[]) -> (y: f32[]) { y = a > 0 ? -a : a < -1 ? !a : ~1; }");
    Stmt *s = ((Item *)c->kernels.items[0])->body.items[0];
    Buf b = {0};
    ast_dump_expr(s->value, &b);
    CU_ASSERT_STRING_EQUAL(b.data, "((a > 0) ? (-a) : ((a < (-1)) ? (!a) : (~1)))");
    buf_free(&b);
    nnkc_free(c);
}

static void test_parser_recovers(void)
{
    Compiler *c = load("elementwise a(x: f32[]) -> (y: f32[]) { y = x +; }\n"
                       "elementwise b(x: f32[]) -> (y: f32[]) { let = 1; y = x; }\n"
                       "elementwise c(x: f32[]) -> (y: f32[]) { y = qq(x); }\n");
    CU_ASSERT_EQUAL(c->nerrors, 3);
    CU_ASSERT_EQUAL(c->kernels.n, 3);
    nnkc_free(c);
}

static void test_parser_ranges(void)
{
    Compiler *c = load("elementwise k(x: f32[]) -> (y: f32[]) {\n    y = sin(x) + 1;\n}\n");
    Stmt *s = ((Item *)c->kernels.items[0])->body.items[0];
    CU_ASSERT_EQUAL(s->value->range.line, 2);
    CU_ASSERT_EQUAL(s->value->range.col, 9);
    CU_ASSERT_EQUAL(s->value->range.len, strlen("sin(x) + 1"));
    nnkc_free(c);
}

/* ---- types and promotion: data-driven, language.md §2 ------------------------------ */

static void test_promotion_table(void)
{
    static const struct { Type a, b, want; } cases[] = {
        {T_WINT, T_F16, T_F16},   {T_WFLOAT, T_I32, T_F64}, {T_WFLOAT, T_BOOL, T_F64}, {T_WINT, T_BOOL, T_I64},
        {T_WINT, T_WFLOAT, T_WFLOAT}, {T_WINT, T_U8, T_U8},  {T_BOOL, T_I8, T_I8},     {T_I32, T_F16, T_F16},
        {T_F16, T_BF16, T_F32},   {T_F32, T_F64, T_F64},    {T_I8, T_I64, T_I64},      {T_U32, T_I32, T_I64},
        {T_U8, T_I8, T_I16},      {T_U16, T_I32, T_I32},    {T_U64, T_I64, T_F64},     {T_U32, T_I8, T_I64},
        {T_U8, T_U32, T_U32},     {T_BOOL, T_BOOL, T_BOOL}, {T_F16, T_I64, T_F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CU_ASSERT_EQUAL(type_promote(cases[i].a, cases[i].b), cases[i].want);
        CU_ASSERT_EQUAL(type_promote(cases[i].b, cases[i].a), cases[i].want);
    }
    CU_ASSERT_EQUAL(type_accum(T_F16), T_F32);
    CU_ASSERT_EQUAL(type_accum(T_I8), T_I64);
    CU_ASSERT_EQUAL(type_accum(T_U16), T_U64);
    CU_ASSERT_EQUAL(type_accum(T_BOOL), T_I64);
    CU_ASSERT(type_narrows(T_F32, T_I32));
    CU_ASSERT(type_narrows(T_F64, T_F32));
    CU_ASSERT(!type_narrows(T_F32, T_F64));
    CU_ASSERT(!type_narrows(T_I16, T_F32));
    CU_ASSERT(type_narrows(T_I32, T_F32));
}

/* ---- folding: the generated code's semantics ------------------------------------------ */

static void test_fold_integers(void)
{
    Value r;
    fold_binary(BIN_DIV, T_I32, value_int(T_I32, 7), value_int(T_I32, 0), &r);
    CU_ASSERT_EQUAL(r.v.i, 0);
    fold_binary(BIN_MOD, T_I32, value_int(T_I32, 7), value_int(T_I32, 0), &r);
    CU_ASSERT_EQUAL(r.v.i, 0);
    fold_binary(BIN_DIV, T_I32, value_int(T_I32, INT32_MIN), value_int(T_I32, -1), &r);
    CU_ASSERT_EQUAL(r.v.i, INT32_MIN);
    fold_binary(BIN_DIV, T_I32, value_int(T_I32, -7), value_int(T_I32, 2), &r);
    CU_ASSERT_EQUAL(r.v.i, -3);
    fold_binary(BIN_MOD, T_I32, value_int(T_I32, -7), value_int(T_I32, 2), &r);
    CU_ASSERT_EQUAL(r.v.i, -1);
    fold_binary(BIN_ADD, T_I8, value_int(T_I8, 127), value_int(T_I8, 1), &r);
    CU_ASSERT_EQUAL(r.v.i, -128);
    fold_binary(BIN_SHL, T_I32, value_int(T_I32, 1), value_int(T_I32, 40), &r);
    CU_ASSERT_EQUAL(r.v.i, 0);
    fold_binary(BIN_SHR, T_I32, value_int(T_I32, -8), value_int(T_I32, 40), &r);
    CU_ASSERT_EQUAL(r.v.i, -1);
    fold_binary(BIN_SHR, T_I32, value_int(T_I32, -8), value_int(T_I32, 1), &r);
    CU_ASSERT_EQUAL(r.v.i, -4);
    fold_binary(BIN_SUB, T_U8, value_int(T_U8, 0), value_int(T_U8, 1), &r);
    CU_ASSERT_EQUAL(r.v.u, 255);
}

static void test_fold_conversions(void)
{
    CU_ASSERT_EQUAL(value_cast(value_float(T_F64, NAN), T_I32).v.i, 0);
    CU_ASSERT_EQUAL(value_cast(value_float(T_F64, 1e20), T_I32).v.i, INT32_MAX);
    CU_ASSERT_EQUAL(value_cast(value_float(T_F64, -1e20), T_I64).v.i, INT64_MIN);
    CU_ASSERT_EQUAL(value_cast(value_float(T_F64, -3.9), T_I8).v.i, -3);
    CU_ASSERT_EQUAL(value_cast(value_float(T_F64, -1), T_U8).v.u, 0);
    CU_ASSERT_EQUAL(value_cast(value_float(T_F64, 300), T_U8).v.u, 255);
    CU_ASSERT_EQUAL(value_cast(value_float(T_F64, NAN), T_BOOL).v.i, 1);
    CU_ASSERT_EQUAL(value_cast(value_int(T_I32, -1), T_U16).v.u, 65535);
    /* f16 rounding: 1 + 2^-11 is a tie, rounds to even (1.0) */
    CU_ASSERT_DOUBLE_EQUAL(value_cast(value_float(T_F32, 1.0 + 0x1p-11), T_F16).v.f, 1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(value_cast(value_float(T_F32, 1.0 + 3 * 0x1p-11), T_F16).v.f, 1.0 + 0x1p-9, 0);
    /* a literal adopting f16 keeps f32 precision; a conversion rounds */
    CU_ASSERT_DOUBLE_EQUAL(value_adopt(value_float(T_WFLOAT, 0.1), T_F16).v.f, (double)0.1f, 0);
    CU_ASSERT(value_cast(value_float(T_WFLOAT, 0.1), T_F16).v.f != (double)0.1f);
}

static void test_fold_builtins(void)
{
    Value a[3] = {value_float(T_F64, 2.5)}, r;
    fold_builtin(B_ROUND, T_F64, a, 1, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.v.f, 2.0, 0);
    a[0] = value_float(T_F64, 3.5);
    fold_builtin(B_ROUND, T_F64, a, 1, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.v.f, 4.0, 0);
    a[0] = value_float(T_F64, NAN);
    a[1] = value_float(T_F64, 1);
    fold_builtin(B_MAX, T_F64, a, 2, &r);
    CU_ASSERT(isnan(r.v.f));
    fold_builtin(B_MIN, T_F64, a, 2, &r);
    CU_ASSERT(isnan(r.v.f));
    a[0] = value_int(T_I32, -5);
    fold_builtin(B_ABS, T_I32, a, 1, &r);
    CU_ASSERT_EQUAL(r.v.i, 5);
    fold_builtin(B_SIGN, T_I32, a, 1, &r);
    CU_ASSERT_EQUAL(r.v.i, -1);
}

/* Every f16 bit pattern converts to f32 and back unchanged (NaN payloads
 * keep their quiet bit set). */
static void test_f16_roundtrip(void)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = nnkc_f16_to_f32((uint16_t)h);
        uint16_t back = nnkc_f32_to_f16(f);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            CU_ASSERT((back & 0x7e00) == 0x7e00);
        } else if (back != h) {
            CU_FAIL("f16 round trip");
        }
    }
    CU_ASSERT_EQUAL(nnkc_f32_to_f16(65520.0f), 0x7c00);
    CU_ASSERT_EQUAL(nnkc_f32_to_f16(65519.0f), 0x7bff);
    CU_ASSERT_EQUAL(nnkc_f32_to_f16(0x1p-25f), 0x0000);      /* tie to even: 0 */
    CU_ASSERT_EQUAL(nnkc_f32_to_f16(0x1.8p-25f), 0x0001);
    CU_ASSERT_EQUAL(nnkc_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie to even */
    CU_ASSERT_EQUAL(nnkc_f32_to_bf16(1.0f + 0x1.8p-8f), 0x3f81);
}

/* ---- sema ------------------------------------------------------------------------------ */

static void test_sema_types(void)
{
    Compiler *c = load("elementwise k(a: i32[], h: f16[]) -> (x: f64[], y: f16[]) {\n"
                       "    x = 0.25 * (a < 5);\n"
                       "    y = 0.5 * h;\n"
                       "}\n");
    CU_ASSERT_EQUAL(c->nerrors, 0);
    Instance *in = instance(c, "k");
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    CU_ASSERT_EQUAL(in->values[0]->type, T_F64);
    CU_ASSERT_EQUAL(in->values[0]->kind, E_BINARY);
    CU_ASSERT_EQUAL(in->values[0]->optype, T_F64);
    CU_ASSERT_EQUAL(in->values[1]->type, T_F16);
    nnkc_free(c);
}

static void test_sema_generics(void)
{
    Compiler *c = load("elementwise g<T: float, I: int>(x: T[], i: I[]) -> (y: T[]) { y = x + T(i); }\n"
                       "instantiate g<f32, i64>;\n");
    CU_ASSERT_EQUAL(c->nerrors, 0);
    CU_ASSERT_PTR_NOT_NULL(instance(c, "g_f32_i64"));
    CU_ASSERT_PTR_NULL(instance(c, "g_f32_i32")); /* instantiate lines replace the default */
    nnkc_free(c);

    c = nnkc_new();
    c->opt.types[0] = T_F32;
    c->opt.types[1] = T_F16;
    c->opt.types[2] = T_I32;
    c->opt.ntypes = 3;
    const char *src = "elementwise g<T: float>(x: T[]) -> (y: T[]) { y = x; }\n"
                      "elementwise h<T: int>(x: T[]) -> (y: T[]) { y = x; }\n";
    nnkc_compile(c, "t.nnk", src, strlen(src), false);
    CU_ASSERT_PTR_NOT_NULL(instance(c, "g_f32"));
    CU_ASSERT_PTR_NOT_NULL(instance(c, "g_f16"));
    CU_ASSERT_PTR_NULL(instance(c, "g_i32"));
    CU_ASSERT_PTR_NOT_NULL(instance(c, "h_i32"));
    nnkc_free(c);

    /* default instances are emitted only when they type-check */
    c = load("elementwise gband<T>(x: T[], y: T[]) -> (z: T[]) { z = x & y; }\n"
             "elementwise gadd<T>(x: T[], y: T[]) -> (z: T[]) { z = x + y; }\n"
             "elementwise gi<T: int>(x: T[]) -> (z: T[]) { z = x & 3; }\n");
    CU_ASSERT_EQUAL(c->nerrors, 0);
    CU_ASSERT_EQUAL(c->nwarnings, 1);
    CU_ASSERT_EQUAL(c->instances.n, 2);
    CU_ASSERT_PTR_NULL(instance(c, "gband_f32"));
    CU_ASSERT_PTR_NOT_NULL(instance(c, "gadd_f32"));
    CU_ASSERT_PTR_NOT_NULL(instance(c, "gi_i32"));
    CU_ASSERT_PTR_EQUAL(c->skipped_default, sema_find_kernel(c, "gband"));
    CU_ASSERT(has_diag(c, "'gband<f32>', the default instance of generic kernel 'gband', does not type-check"));
    nnkc_free(c);
    /* an instance asked for is an error as before */
    c = load("elementwise gband<T>(x: T[], y: T[]) -> (z: T[]) { z = x & y; }\ninstantiate gband<f64>;\n");
    CU_ASSERT_EQUAL(c->nerrors, 1);
    CU_ASSERT(has_diag(c, "in instance 'gband<f64>'"));
    nnkc_free(c);
}

static void test_sema_errors(void)
{
    static const struct { const char *src, *msg; } cases[] = {
        {"elementwise k(x: f32[]) -> (y: f32[]) { y = tahn(x); }", "did you mean 'tanh'?"},
        {"elementwise k(x: f32[]) -> (y: f32[]) { y = x % 2; }", "needs integer operands"},
        {"elementwise k(x: f32[]) -> (y: f32[]) { y = sum(x); }", "used in an elementwise kernel"},
        {"reduction k(x: f32[]) -> (r: f32) { r = x; }", "only inside a reducer"},
        {"elementwise k(x: f32[]) -> (y: f32[], z: f32[]) { y = x; }", "'z' of 'k' is never assigned"},
        {"elementwise k(x: f32[]) -> (y: f32[]) { y = x; y = x; }", "assigned twice"},
        {"elementwise k<T: float>(x: T[]) -> (y: T[]) { y = x; }\ninstantiate k<u8>;", "does not satisfy class 'float'"},
        {"func f(x) = f(x);\nelementwise k(x: f32[]) -> (y: f32[]) { y = f(x); }", "recursion is not allowed"},
        {"const A = B;\nconst B = A;", "depends on itself"},
        {"import \"nope.nnk\";", "cannot find imported file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Compiler *c = load(cases[i].src);
        CU_ASSERT(c->nerrors >= 1);
        CU_ASSERT(has_diag(c, cases[i].msg));
        nnkc_free(c);
    }
}

static void test_sema_fold_consts(void)
{
    Compiler *c = load("const A = 2 * 3 + 1;\nconst B: f32 = A / 2;\n"
                       "elementwise k(x: f32[]) -> (y: f32[]) { y = x * B + sqrt(4.0); }");
    CU_ASSERT_EQUAL(c->nerrors, 0);
    Item *b = map_get(&c->globals, intern(c->strings, "B", 1));
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(b->checked->kind, E_CONST);
    CU_ASSERT_EQUAL(b->checked->type, T_F32);
    CU_ASSERT_DOUBLE_EQUAL(b->checked->value.v.f, 3.0, 0); /* 7 / 2 in integers, then f32 */
    nnkc_free(c);
}

/* ---- IR ------------------------------------------------------------------------------------ */

static void test_ir_cse_and_phases(void)
{
    Compiler *c = load("reduction softmax(x: f32[]) -> (y: f32[]) {\n"
                       "    let m = max(x);\n"
                       "    y = exp(x - m) / sum(exp(x - m));\n"
                       "}\n");
    CU_ASSERT_EQUAL(c->nerrors, 0);
    Instance *in = instance(c, "softmax");
    /* two passes up to -O2; at -O3 one, the max and the sum a tuple state */
    for (int o = 0; o <= 1; o++) {
        c->opt.opt_level = o ? 3 : 2;
        int opt = o;
        IrKernel *k = lower_instance(c, in);
        CU_ASSERT_EQUAL(k->nreds, 2);
        CU_ASSERT_EQUAL(k->nphases, opt ? 1 : 2);
        CU_ASSERT_EQUAL(k->reds[0].width, opt ? 2 : 1);
        int exps = 0;
        for (int i = 0; i < k->nnodes; i++)
            exps += k->nodes[i].op == IR_CALL && k->nodes[i].sub == B_EXP && k->nodes[i].level == L_ELEM;
        CU_ASSERT_EQUAL(exps, 1); /* exp(x - m) built once */
    }
    nnkc_free(c);
}

static void test_ir_folding(void)
{
    Compiler *c = load("elementwise k(x: f32[]) -> (y: f32[]) { y = x * (2 - 1) + (3 > 2 ? 0.5 : 1) * 4; }");
    Instance *in = instance(c, "k");
    IrKernel *k = lower_instance(c, in);
    /* x * 1 disappears; the constant folds to 2 */
    int muls = 0;
    for (int i = 0; i < k->nnodes; i++)
        muls += k->nodes[i].op == IR_BINARY && k->nodes[i].sub == BIN_MUL;
    CU_ASSERT_EQUAL(muls, 0);
    nnkc_free(c);
}

/* Every IR value has a concrete type: a choice of two weak literals with a
 * varying condition computes in f64 (it kept "float literal" once, and the
 * emitters indexed type_info past its end); ir_verify reports a broken
 * invariant as a located internal error instead of a crash. */
static void test_ir_verify(void)
{
    const char *src = "elementwise k(a: f64[], b: f64[]) -> (z: f64[]) {\n"
                      "    z = where(a / 2 + 5 < b, 1.0, 0.0) + (b > 1 ? 2 : 3);\n"
                      "}\n";
    Compiler *c = load(src);
    CU_ASSERT_EQUAL(c->nerrors, 0);
    IrKernel *k = lower_instance(c, instance(c, "k"));
    CU_ASSERT_EQUAL(c->nerrors, 0);
    int sel = -1;
    for (int i = 0; i < k->nnodes; i++) {
        CU_ASSERT(k->nodes[i].type < T_NSCALAR);
        if (k->nodes[i].op == IR_SELECT && sel < 0)
            sel = i;
    }
    CU_ASSERT_FATAL(sel >= 0);
    CU_ASSERT(ir_verify(c, k));
    /* each broken invariant, one at a time: a weak type, an operand after
     * its user, a cast whose source type is not its operand's */
    uint8_t t = k->nodes[sel].type;
    k->nodes[sel].type = T_WFLOAT;
    CU_ASSERT(!ir_verify(c, k));
    CU_ASSERT(has_diag(c, "t.nnk:2:9: error: internal compiler error in 'k': IR value %"));
    CU_ASSERT(has_diag(c, "has type 'float literal', not a scalar type"));
    k->nodes[sel].type = t;
    int32_t a = k->nodes[sel].a;
    k->nodes[sel].a = sel;
    CU_ASSERT(!ir_verify(c, k));
    CU_ASSERT(has_diag(c, "uses a value that comes after it"));
    k->nodes[sel].a = a;
    CU_ASSERT(ir_verify(c, k));
    nnkc_free(c);
}

/* ---- library API -------------------------------------------------------------------------- */

static void test_api_module(void)
{
    const char *src = "elementwise axpy<T: float>(a: T = 2, x: T[], y: T[]) -> (z: T[]) { z = a * x + y; }";
    NnkcModule *m = nnkc_module_new("axpy.nnk", src, strlen(src), NULL);
    CU_ASSERT(nnkc_module_ok(m));
    CU_ASSERT_EQUAL(nnkc_module_kernel_count(m), 1);
    const NnkcKernelInfo *k = nnkc_module_find(m, "axpy");
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_EQUAL(k->ngenerics, 1);
    CU_ASSERT_EQUAL(k->params[0].typevar, 0);
    CU_ASSERT(k->params[0].has_default);
    CU_ASSERT(k->params[3].output);
    Type targs[1] = {T_F16};
    char *sym = NULL, *err = NULL;
    char *code = nnkc_module_emit(m, "axpy", targs, NULL, NNKC_TARGET_C, &sym, &err);
    CU_ASSERT_PTR_NOT_NULL(code);
    CU_ASSERT_STRING_EQUAL(sym, "axpy_f16__desc");
    CU_ASSERT_PTR_NOT_NULL(strstr(code, "void axpy_f16(int64_t n"));
    free(code);
    free(sym);
    targs[0] = T_I32;
    code = nnkc_module_emit(m, "axpy", targs, NULL, NNKC_TARGET_C, &sym, &err);
    CU_ASSERT_PTR_NULL(code);
    CU_ASSERT_PTR_NOT_NULL(err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "must be float"));
    free(err);
    nnkc_module_free(m);

    m = nnkc_module_new("bad.nnk", "elementwise k(", 14, NULL);
    CU_ASSERT(!nnkc_module_ok(m));
    CU_ASSERT_PTR_NOT_NULL(strstr(nnkc_module_diagnostics(m), "bad.nnk:1:"));
    nnkc_module_free(m);
}

/* Float literals in generated code: the shortest decimal that reads back
 * as the same value, as a float for f32 (0.044715f, not the 17 digits of
 * the double 0.044714998453855515 it equals), for every bit pattern kind:
 * fixed cases, then random finite floats and doubles read back with
 * strtof/strtod. */
static const char *literal_of(double f, Type t, Buf *b)
{
    b->len = 0;
    Value v = {.type = t};
    v.v.f = f;
    emit_literal(v, t, b);
    return b->data;
}

static void test_emit_float_literals(void)
{
    Buf b = {0};
    CU_ASSERT_STRING_EQUAL(literal_of((float)0.044715, T_F32, &b), "0.044715f");
    CU_ASSERT_STRING_EQUAL(literal_of((float)0.1, T_F32, &b), "0.1f");
    CU_ASSERT_STRING_EQUAL(literal_of(1.0, T_F32, &b), "1.0f");
    CU_ASSERT_STRING_EQUAL(literal_of((float)3.14159265358979, T_F32, &b), "3.1415927f");
    CU_ASSERT_STRING_EQUAL(literal_of(-2.5, T_F32, &b), "(-2.5f)");
    CU_ASSERT_STRING_EQUAL(literal_of(-0.0, T_F32, &b), "(-0.0f)");
    CU_ASSERT_STRING_EQUAL(literal_of(1e10, T_F32, &b), "1e+10f");
    CU_ASSERT_STRING_EQUAL(literal_of(0.1, T_F64, &b), "0.1");
    CU_ASSERT_STRING_EQUAL(literal_of(1.0 / 3.0, T_F64, &b), "0.3333333333333333");
    CU_ASSERT_STRING_EQUAL(literal_of(100.0, T_F64, &b), "100.0");
    CU_ASSERT_STRING_EQUAL(literal_of(1234500.0, T_F32, &b), "1234500.0f");
    CU_ASSERT_STRING_EQUAL(literal_of(1.5e-7, T_F64, &b), "1.5e-07");
    uint64_t x = 0x9e3779b97f4a7c15u;
    int bad = 0;
    for (int i = 0; i < 200000 && bad < 5; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bool f32 = i & 1;
        double f;
        if (f32) {
            uint32_t u = (uint32_t)(x >> 32);
            float g;
            memcpy(&g, &u, sizeof g);
            f = g;
        } else {
            memcpy(&f, &x, sizeof f);
        }
        if (!isfinite(f))
            continue;
        const char *s = literal_of(f, f32 ? T_F32 : T_F64, &b);
        const char *p = s[0] == '(' ? s + 1 : s;
        char *end;
        bool ok;
        if (f32) {
            float r = strtof(p, &end);
            ok = memcmp(&r, &(float){(float)f}, sizeof r) == 0 && strcmp(end, s[0] == '(' ? "f)" : "f") == 0;
        } else {
            double r = strtod(p, &end);
            ok = memcmp(&r, &f, sizeof r) == 0 && strcmp(end, s[0] == '(' ? ")" : "") == 0;
        }
        /* shortest: with a significant digit less it does not read back */
        char digits[40];
        int n = 0;
        for (const char *q = p; *q && *q != 'e' && *q != 'f' && *q != ')'; q++)
            if (*q >= '0' && *q <= '9' && (n || *q != '0'))
                digits[n++] = *q;
        while (n > 1 && digits[n - 1] == '0')
            n--;
        if (ok && n > 1) {
            char shorter[320];
            snprintf(shorter, sizeof shorter, "%.*g", n - 1, f);
            ok = f32 ? strtof(shorter, NULL) != (float)f : strtod(shorter, NULL) != f;
        }
        if (!ok) {
            fprintf(stderr, "literal %s of %.17g: not the shortest that reads back\n", s, f);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    buf_free(&b);
}

/* Text from users in comments of generated code (emit_comment_text, the
 * source lines of the per-statement comments among them): no sequence
 * that ends or nests a C comment, nothing but printable ASCII. */
static void test_emit_comment_text(void)
{
    Compiler *c = nnkc_new();
    static const char *const bad[] = {"a*/b", "a/*b", "*?" "?/ int x; /*", "?" "?" "?" "?" "?" "?/", "x\n*/", "\\", "?""?="};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *t = emit_comment_text(c, bad[i]);
        CU_ASSERT_PTR_NULL(strstr(t, "*/"));
        CU_ASSERT_PTR_NULL(strstr(t, "/*"));
        for (const char *p = t; *p; p++)
            CU_ASSERT(*p >= 0x20 && *p <= 0x7e);
    }
    CU_ASSERT_STRING_EQUAL(emit_comment_text(c, "let u = x? y : z;"), "let u = x? y : z;");
    nnkc_free(c);
}

static const CunitTest tests_lexer[] = {
    {"tokens", test_lexer_tokens},
    {"values and ranges", test_lexer_values_and_ranges},
    {"errors", test_lexer_errors},
    {"NUL bytes", test_lexer_nul},
    {NULL},
};

static const CunitTest tests_parser[] = {
    {"precedence", test_parser_precedence},
    {"ternary and unary", test_parser_ternary_and_unary},
    {"error recovery", test_parser_recovers},
    {"ranges", test_parser_ranges},
    {NULL},
};

static const CunitTest tests_types[] = {
    {"promotion table", test_promotion_table},
    {"integer folding", test_fold_integers},
    {"conversions", test_fold_conversions},
    {"builtins", test_fold_builtins},
    {"f16 round trip", test_f16_roundtrip},
    {"float literals", test_emit_float_literals},
    {"comment text", test_emit_comment_text},
    {NULL},
};

static const CunitTest tests_sema[] = {
    {"types", test_sema_types},
    {"generics", test_sema_generics},
    {"errors", test_sema_errors},
    {"consts", test_sema_fold_consts},
    {NULL},
};

static const CunitTest tests_ir[] = {
    {"cse and phases", test_ir_cse_and_phases},
    {"folding", test_ir_folding},
    {"verifier", test_ir_verify},
    {NULL},
};

static const CunitTest tests_api[] = {
    {"module", test_api_module},
    {NULL},
};

static const CunitSuite suites[] = {
    {"lexer", tests_lexer},
    {"parser", tests_parser},
    {"types and folding", tests_types},
    {"sema", tests_sema},
    {"ir", tests_ir},
    {"api", tests_api},
    {NULL},
};

const CunitProgram cunit_program = {suites, NULL, NULL};
