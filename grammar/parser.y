/* parser.y - the .nnk grammar (lemon).
 *
 * Actions only build nodes: one constructor call each (ast.c).  All checks
 * live in sema.  Syntax errors are recorded as diagnostics with the tokens
 * the parser could have accepted; `error` rules resume at the next ';' or
 * '}' so one file reports several errors.
 *
 * Semantic values are owned by the compiler's arena, so the %destructor of
 * every %type has nothing to free: popping a value during error recovery
 * just abandons it until the arena goes.  The destructors below say so in
 * code by marking the value as consumed, which keeps lemon from warning.
 */

%name NnkParse
%token_prefix NNK_TK_
%token_type {Token}
%extra_argument {ParseState *ps}
/* The stack holds every expression nested as deep as the language allows
 * (NNKC_MAX_NESTING, docs/language.md section 7): a level takes at most 9
 * entries (a tuple lambda's `| ( a ) , ( b ) |`; a `?:` else branch takes
 * `c ? x :`, 4, a call's argument `f ( args ,`, 4), and what is on the
 * stack below the expression (an item, a statement) takes fewer than 32.
 * So the parser never runs out before sema's limit does; past it (a chain
 * of `- - - ...` longer than the stack) it stops with the same error.
 * A static assertion by parse_file keeps the number honest.  (The stack
 * is some 170 KiB of the arena per file parsed.) */
%stack_size 2400
%start_symbol file

%include {
#include "nnkc.h"
#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct ParseState {
    Compiler *c;
    SourceFile *src;
    Lexer *lx;
    Token last;      /* the token being fed, for error locations */
    Token prev;      /* the token fed before it */
    bool stop;       /* stack overflow: stop feeding tokens */
    Range deep;      /* with the stack full: where the expression crosses the nesting limit */
    void *parser;    /* the lemon parser, for expected-token queries */
} ParseState;

static void syntax_error(ParseState *ps, int major, Token tok);

/* lemon defines these without prototypes. */
void *NnkParseAlloc(void *(*)(size_t));
void NnkParseFree(void *, void (*)(void *));
void NnkParse(void *, int, Token, ParseState *);
void NnkParseInit(void *);
void NnkParseFinalize(void *);
void NnkParseTrace(FILE *, char *);
int NnkParseFallback(int);
}

%syntax_error { syntax_error(ps, yymajor, yyminor); }
%stack_overflow {
    diag_error(ps->c, ps->deep.line ? ps->deep : ps->last.range, "expression nested too deeply (the limit is %d levels)",
               NNKC_MAX_NESTING);
    ps->stop = true;
}
%parse_failure { ps->stop = true; }

/* Every terminal, declared so the lexer can return any of them. */
%token ELEMENTWISE REDUCTION FUNC CONST LET IMPORT INSTANTIATE TRUE FALSE IDX N
       TYPENAME IDENT INT FLOAT STRING
       LPAREN RPAREN LBRACE RBRACE LBRACKET RBRACKET COMMA SEMI COLON ARROW.

%right PIPE_LAMBDA.
%right QUESTION COLON.
%left OROR.
%left ANDAND.
%left PIPE.
%left CARET.
%left AMP.
%left EQ NE.
%left LT LE GT GE.
%left SHL SHR.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right BANG TILDE.

%type expr {Expr *}
%destructor expr { (void)$$; (void)ps; }
%type args {List *}
%destructor args { (void)$$; (void)ps; }
%type arglist {List *}
%destructor arglist { (void)$$; (void)ps; }
%type lparams {List *}
%destructor lparams { (void)$$; (void)ps; }
%type type {TypeRef *}
%destructor type { (void)$$; (void)ps; }
%type rettype {TypeRef *}
%destructor rettype { (void)$$; (void)ps; }
%type typeann {TypeRef *}
%destructor typeann { (void)$$; (void)ps; }
%type typelist {List *}
%destructor typelist { (void)$$; (void)ps; }
%type generics {List *}
%destructor generics { (void)$$; (void)ps; }
%type genlist {List *}
%destructor genlist { (void)$$; (void)ps; }
%type generic {Generic *}
%destructor generic { (void)$$; (void)ps; }
%type params {List *}
%destructor params { (void)$$; (void)ps; }
%type paramlist {List *}
%destructor paramlist { (void)$$; (void)ps; }
%type param {Param *}
%destructor param { (void)$$; (void)ps; }
%type stmts {List *}
%destructor stmts { (void)$$; (void)ps; }
%type stmt {Stmt *}
%destructor stmt { (void)$$; (void)ps; }
%type insts {List *}
%destructor insts { (void)$$; (void)ps; }
%type inst {InstSpec *}
%destructor inst { (void)$$; (void)ps; }
%type item {Item *}
%destructor item { (void)$$; (void)ps; }
%type kw {Token}

file ::= items.
items ::= .
items ::= items item(I).                       { ast_add_item(ps->c, I); }
items ::= items error SEMI.
items ::= items error RBRACE.

/* ---- items -------------------------------------------------------------- */

item(A) ::= IMPORT(K) STRING(P) SEMI(E).       { A = ast_import(ps->c, K, P, E); }
item(A) ::= CONST(K) IDENT(N) typeann(T) ASSIGN expr(V) SEMI(E).
                                               { A = ast_const(ps->c, K, N, T, V, E); }
item(A) ::= FUNC(K) IDENT(N) generics(G) LPAREN params(P) RPAREN rettype(R) ASSIGN expr(B) SEMI(E).
                                               { A = ast_func(ps->c, K, N, G, P, R, B, E); }
item(A) ::= kw(K) IDENT(N) generics(G) LPAREN params(P) RPAREN ARROW LPAREN params(O) RPAREN
            LBRACE stmts(S) RBRACE(E).         { A = ast_kernel(ps->c, K, N, G, P, O, S, E); }
item(A) ::= kw(K) IDENT(N) generics(G) LPAREN params(P) RPAREN LBRACE stmts(S) RBRACE(E).
                                               { A = ast_kernel(ps->c, K, N, G, P, NULL, S, E); }
item(A) ::= INSTANTIATE(K) insts(L) SEMI(E).   { A = ast_instantiate(ps->c, K, L, E); }

kw(A) ::= ELEMENTWISE(T).                      { A = T; }
kw(A) ::= REDUCTION(T).                        { A = T; }

insts(A) ::= inst(I).                          { A = ast_list(ps->c, I); }
insts(A) ::= insts(L) COMMA inst(I).           { A = ast_append(ps->c, L, I); }
inst(A) ::= IDENT(N) LT typelist(L) GT(E).     { A = ast_inst(ps->c, N, L, E); }
inst(A) ::= IDENT(N).                          { A = ast_inst(ps->c, N, NULL, N); }

typelist(A) ::= type(T).                       { A = ast_list(ps->c, T); }
typelist(A) ::= typelist(L) COMMA type(T).     { A = ast_append(ps->c, L, T); }

/* ---- generics, parameters, types ----------------------------------------- */

generics(A) ::= .                              { A = ast_list(ps->c, NULL); }
generics(A) ::= LT genlist(L) GT.              { A = L; }
genlist(A) ::= generic(G).                     { A = ast_list(ps->c, G); }
genlist(A) ::= genlist(L) COMMA generic(G).    { A = ast_append(ps->c, L, G); }
generic(A) ::= IDENT(N).                       { A = ast_generic(ps->c, N, NULL); }
generic(A) ::= IDENT(N) COLON IDENT(C).        { A = ast_generic(ps->c, N, &C); }

params(A) ::= .                                { A = ast_list(ps->c, NULL); }
params(A) ::= paramlist(L).                    { A = L; }
paramlist(A) ::= param(P).                     { A = ast_list(ps->c, P); }
paramlist(A) ::= paramlist(L) COMMA param(P).  { A = ast_append(ps->c, L, P); }
param(A) ::= IDENT(N) typeann(T).              { A = ast_param(ps->c, N, T, NULL); }
param(A) ::= IDENT(N) typeann(T) ASSIGN expr(D).
                                               { A = ast_param(ps->c, N, T, D); }
/* a parameter kind ("inout", "raw") is a word, not a keyword: sema checks it */
param(A) ::= IDENT(M) IDENT(N) typeann(T).     { A = ast_param_mod(ps->c, M, N, T); }

typeann(A) ::= .                               { A = ast_no_type(ps->c); }
typeann(A) ::= COLON type(T).                  { A = T; }
rettype(A) ::= .                               { A = ast_no_type(ps->c); }
rettype(A) ::= ARROW type(T).                  { A = T; }

type(A) ::= TYPENAME(N).                       { A = ast_type(ps->c, N, false, N); }
type(A) ::= IDENT(N).                          { A = ast_type(ps->c, N, false, N); }
type(A) ::= TYPENAME(N) LBRACKET RBRACKET(E).  { A = ast_type(ps->c, N, true, E); }
type(A) ::= IDENT(N) LBRACKET RBRACKET(E).     { A = ast_type(ps->c, N, true, E); }

/* ---- statements ----------------------------------------------------------- */

stmts(A) ::= .                                 { A = ast_list(ps->c, NULL); }
stmts(A) ::= stmts(L) stmt(S).                 { A = ast_append(ps->c, L, S); }
stmts(A) ::= stmts(L) error SEMI(E).           { A = ast_append(ps->c, L, ast_lost_stmt(ps->c, E)); }

stmt(A) ::= LET(K) IDENT(N) typeann(T) ASSIGN expr(V) SEMI(E).
                                               { A = ast_let(ps->c, K, N, T, V, E); }
stmt(A) ::= LET(K) LPAREN lparams(N) RPAREN ASSIGN expr(V) SEMI(E).
                                               { A = ast_let_tuple(ps->c, K, N, V, E); }
stmt(A) ::= IDENT(N) ASSIGN expr(V) SEMI(E).   { A = ast_assign(ps->c, N, V, E); }

/* ---- expressions ---------------------------------------------------------- */

expr(A) ::= INT(T).                            { A = ast_int(ps->c, T); }
expr(A) ::= FLOAT(T).                          { A = ast_float(ps->c, T); }
expr(A) ::= TRUE(T).                           { A = ast_bool(ps->c, T, true); }
expr(A) ::= FALSE(T).                          { A = ast_bool(ps->c, T, false); }
expr(A) ::= IDENT(T).                          { A = ast_name(ps->c, T); }
expr(A) ::= IDX(T).                            { A = ast_keyword(ps->c, T, E_IDX); }
expr(A) ::= N(T).                              { A = ast_keyword(ps->c, T, E_N); }
expr(A) ::= LPAREN(L) expr(E) RPAREN(R).       { A = ast_paren(ps->c, L, E, R); }
expr(A) ::= LPAREN(L) arglist(F) COMMA expr(E) RPAREN(R).
                                               { A = ast_tuple(ps->c, L, F, E, R); }
expr(A) ::= IDENT(F) LPAREN args(L) RPAREN(R). { A = ast_call(ps->c, F, L, R); }
expr(A) ::= IDENT(X) LBRACKET arglist(L) RBRACKET(R).
                                               { A = ast_index(ps->c, X, L, R); }
expr(A) ::= TYPENAME(F) LPAREN args(L) RPAREN(R).
                                               { A = ast_call(ps->c, F, L, R); }
expr(A) ::= PIPE(O) lparams(P) PIPE expr(B). [PIPE_LAMBDA]
                                               { A = ast_lambda(ps->c, O, P, B); }
expr(A) ::= PIPE(O) LPAREN lparams(P) RPAREN COMMA LPAREN lparams(Q) RPAREN PIPE expr(B). [PIPE_LAMBDA]
                                               { A = ast_tuple_lambda(ps->c, O, P, Q, B); }
expr(A) ::= MINUS|PLUS(O) expr(B). [BANG]      { A = ast_unary(ps->c, O, B); }
expr(A) ::= BANG|TILDE(O) expr(B).             { A = ast_unary(ps->c, O, B); }
expr(A) ::= expr(C) QUESTION expr(X) COLON expr(Y).
                                               { A = ast_cond(ps->c, C, X, Y); }
expr(A) ::= expr(X) OROR(O) expr(Y).           { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) ANDAND(O) expr(Y).         { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) PIPE(O) expr(Y).           { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) CARET(O) expr(Y).          { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) AMP(O) expr(Y).            { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) EQ|NE(O) expr(Y).          { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) LT|LE|GT|GE(O) expr(Y).    { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) SHL|SHR(O) expr(Y).        { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) PLUS|MINUS(O) expr(Y).     { A = ast_binary(ps->c, X, O, Y); }
expr(A) ::= expr(X) STAR|SLASH|PERCENT(O) expr(Y).
                                               { A = ast_binary(ps->c, X, O, Y); }

args(A) ::= .                                  { A = ast_list(ps->c, NULL); }
args(A) ::= arglist(L).                        { A = L; }
arglist(A) ::= expr(E).                        { A = ast_list(ps->c, E); }
arglist(A) ::= arglist(L) COMMA expr(E).       { A = ast_append(ps->c, L, E); }

lparams(A) ::= IDENT(N).                       { A = ast_name_list(ps->c, NULL, N); }
lparams(A) ::= lparams(L) COMMA IDENT(N).      { A = ast_name_list(ps->c, L, N); }

%code {

/* ---- token names for messages --------------------------------------------- */

/* The operators' names come from ops.def (op_info), the rest from here. */
const char *token_name(int kind)
{
    static const char *const names[YYNTOKEN] = {
        [0] = "end of file",
        [NNK_TK_ELEMENTWISE]  = "'elementwise'",
        [NNK_TK_REDUCTION]    = "'reduction'",
        [NNK_TK_FUNC]         = "'func'",
        [NNK_TK_CONST]        = "'const'",
        [NNK_TK_LET]          = "'let'",
        [NNK_TK_IMPORT]       = "'import'",
        [NNK_TK_INSTANTIATE]  = "'instantiate'",
        [NNK_TK_TRUE]         = "'true'",
        [NNK_TK_FALSE]        = "'false'",
        [NNK_TK_IDX]          = "'idx'",
        [NNK_TK_N]            = "'n'",
        [NNK_TK_TYPENAME]     = "a type name",
        [NNK_TK_IDENT]        = "an identifier",
        [NNK_TK_INT]          = "an integer literal",
        [NNK_TK_FLOAT]        = "a float literal",
        [NNK_TK_STRING]       = "a string",
        [NNK_TK_LPAREN]       = "'('",
        [NNK_TK_RPAREN]       = "')'",
        [NNK_TK_LBRACE]       = "'{'",
        [NNK_TK_RBRACE]       = "'}'",
        [NNK_TK_LBRACKET]     = "'['",
        [NNK_TK_RBRACKET]     = "']'",
        [NNK_TK_COMMA]        = "','",
        [NNK_TK_SEMI]         = "';'",
        [NNK_TK_COLON]        = "':'",
        [NNK_TK_ARROW]        = "'->'",
        [NNK_TK_QUESTION]     = "'?'",
        [NNK_TK_ASSIGN]       = "'='",
    };
    if (kind >= 0 && kind < YYNTOKEN && names[kind])
        return names[kind];
    for (int op = 0; op < OP_COUNT; op++)
        if (op_info[op].token == kind)
            return op_info[op].quoted;
    return "a token";
}

/* ---- expected tokens ---------------------------------------------------------
 * Lemon's tables use default reductions, so "the state has an action for
 * the token" over-approximates.  We run the LR automaton on a copy of the
 * state stack for each candidate token until it shifts (acceptable) or hits
 * an error (not acceptable), exactly as Parse() would. */
static bool token_acceptable(yyParser *p, int tok)
{
    YYACTIONTYPE st[YYSTACKDEPTH + 2];
    int top = (int)(p->yytos - p->yystack);
    for (int i = 0; i <= top; i++)
        st[i] = p->yystack[i].stateno;
    YYACTIONTYPE act = st[top];
    for (int guard = 0; guard < 4 * YYSTACKDEPTH; guard++) {
        act = yy_find_shift_action((YYCODETYPE)tok, act);
        if (act >= YY_MIN_REDUCE) {
            unsigned rule = act - YY_MIN_REDUCE;
            int base = top + yyRuleInfoNRhs[rule];
            if (base < 0 || base + 1 > YYSTACKDEPTH)
                return false;
            act = yy_find_reduce_action(st[base], (YYCODETYPE)yyRuleInfoLhs[rule]);
            top = base + 1;
            st[top] = act;
        } else {
            return act <= YY_MAX_SHIFTREDUCE || act == YY_ACCEPT_ACTION;
        }
    }
    return false;
}

static bool starts_expr(int t)
{
    return t == NNK_TK_INT || t == NNK_TK_FLOAT || t == NNK_TK_IDENT || t == NNK_TK_TRUE ||
           t == NNK_TK_FALSE || t == NNK_TK_IDX || t == NNK_TK_N || t == NNK_TK_LPAREN ||
           t == NNK_TK_TYPENAME || t == NNK_TK_MINUS || t == NNK_TK_PLUS || t == NNK_TK_BANG ||
           t == NNK_TK_TILDE || t == NNK_TK_PIPE;
}

static bool is_binop(int t)
{
    return t == NNK_TK_QUESTION || op_of_token(t, false) < OP_COUNT;
}

static void syntax_error(ParseState *ps, int major, Token tok)
{
    yyParser *p = ps->parser;
    /* After a bad character the line's syntax errors are its echo. */
    if (ps->lx->error_line && tok.range.line == ps->lx->error_line)
        return;
    /* A missing ';' at the end of a line: say so there, not at the next line. */
    if (ps->prev.kind && tok.range.line > ps->prev.range.line && token_acceptable(p, NNK_TK_SEMI) &&
        ps->prev.kind != NNK_TK_SEMI && ps->prev.kind != NNK_TK_LBRACE && ps->prev.kind != NNK_TK_RBRACE) {
        Range at = ps->prev.range;
        at.col += (int32_t)at.len;
        at.off += at.len;
        at.len = 1;
        diag_error(ps->c, at, "expected ';' at the end of the line");
        return;
    }
    int ok[YYNTOKEN];
    int n = 0;
    bool expr = token_acceptable(p, NNK_TK_INT) && token_acceptable(p, NNK_TK_LPAREN);
    bool binop = token_acceptable(p, NNK_TK_STAR);
    for (int t = 1; t < YYNTOKEN; t++) {
        if (t == NNK_TK_PIPE_LAMBDA || (expr && starts_expr(t)) || (binop && is_binop(t)))
            continue;
        if (token_acceptable(p, t))
            ok[n++] = t;
    }
    Buf b = {0};
    if (expr)
        buf_puts(&b, "an expression");
    for (int i = 0; i < n; i++) {
        if (b.len)
            buf_puts(&b, i + 1 == n && !binop ? " or " : ", ");
        buf_puts(&b, token_name(ok[i]));
    }
    if (binop)
        buf_puts(&b, b.len ? " or an operator" : "an operator");
    const char *what = major == 0 ? "end of file" : token_name(major);
    char lexeme[48];
    if (major == NNK_TK_IDENT || major == NNK_TK_TYPENAME || major == NNK_TK_INT || major == NNK_TK_FLOAT) {
        /* Only the token's own bytes. */
        int len = tok.range.len < 40 ? (int)tok.range.len : 40;
        snprintf(lexeme, sizeof lexeme, "'%.*s'", len, ps->src->text + tok.range.off);
        what = lexeme;
    } else if (strncmp(what, "a ", 2) == 0 || strncmp(what, "an ", 3) == 0) {
        what = strchr(what, ' ') + 1; /* "unexpected string", not "unexpected a string" */
    }
    if (b.len)
        diag_error(ps->c, tok.range, "unexpected %s; expected %s", what, b.data);
    else
        diag_error(ps->c, tok.range, "unexpected %s", what);
    buf_free(&b);
    /* A keyword or a type name where a name goes (a parameter called n, as
     * in CuPy's kernels): say why it is no name. */
    const char *w = ps->src->text + tok.range.off;
    bool word = major != NNK_TK_IDENT && tok.range.len > 0 && tok.range.len < 40 &&
                ((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z'));
    for (uint32_t i = 1; word && i < tok.range.len; i++)
        word = (w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z') || (w[i] >= '0' && w[i] <= '9') ||
               w[i] == '_';
    if (word && token_acceptable(p, NNK_TK_IDENT))
        diag_note_plain(ps->c, "'%.*s' is a %s of the language, which cannot be a name", (int)tok.range.len, w,
                        major == NNK_TK_TYPENAME ? "type name" : "keyword");
}

/* Parser stack entries (%stack_size, above) per level of nesting, and below
 * the expression. */
enum { STACK_PER_LEVEL = 9, STACK_BELOW_EXPR = 32 };
_Static_assert(YYSTACKDEPTH >= STACK_BELOW_EXPR + STACK_PER_LEVEL * (NNKC_MAX_NESTING + 1),
               "the parser's stack must hold every expression the nesting limit allows");

/* The stack is (nearly) full, so the expression being read is nested deeper than
 * the limit: where it crosses it, counted from the outside (as a
 * bracket depth is), is the token that opens level NNKC_MAX_NESTING + 1.
 * The expression starts after the topmost '=' on the stack; above it each
 * operator (unary, or binary before its right operand), '?', '(' and '['
 * opens a level.  A lambda's closing '|' and a tuple lambda's parentheses
 * count too, so with lambdas the spot is a few tokens early. */
static Range deep_spot(const ParseState *ps)
{
    const yyParser *p = ps->parser;
    int top = (int)(p->yytos - p->yystack), from = top;
    while (from > 0 && p->yystack[from].major != NNK_TK_ASSIGN)
        from--;
    int level = 0;
    for (int i = from + 1; i <= top; i++) {
        int k = p->yystack[i].major;
        bool opens = k == NNK_TK_QUESTION || k == NNK_TK_LPAREN || k == NNK_TK_LBRACKET || k == NNK_TK_PLUS ||
                     k == NNK_TK_BANG || k == NNK_TK_TILDE || (k < YYNTOKEN && op_of_token(k, false) < OP_COUNT);
        if (opens && ++level == NNKC_MAX_NESTING)
            return p->yystack[i].minor.yy0.range;
    }
    return ps->last.range;
}

/* The parser lives in the compiler's arena (its stack is fixed,
 * %stack_size): nothing to free when an action bails out (nnkc_oom).
 * lemon's allocator takes no context, hence the thread-local. */
static _Thread_local Arena *parser_arena;
static void *parser_alloc(size_t n) { return arena_alloc(parser_arena, n); }

void parse_file(Compiler *c, SourceFile *src)
{
    ParseState ps = {.c = c, .src = src};
    parser_arena = c->arena;
    void *parser = NnkParseAlloc(parser_alloc);
    ps.parser = parser;
    Lexer lx;
    lexer_init(&lx, c, src);
    ps.lx = &lx;
    Token t;
    int errors_before = c->nerrors;
    for (;;) {
        int kind = lexer_next(&lx, &t);
        ps.prev = ps.last;
        ps.last = t;
        /* An unterminated comment swallowed the rest: nothing more to say. */
        if (ps.stop || c->nerrors - errors_before > 40 || (kind == 0 && lx.unterminated))
            break;
        /* A token pushes at most two entries (an empty rule's, then its
         * own): this one may overflow the stack. */
        if (((yyParser *)parser)->yytos - ((yyParser *)parser)->yystack >= YYSTACKDEPTH - 3)
            ps.deep = deep_spot(&ps);
        NnkParse(parser, kind, t, &ps);
        if (kind == 0 || ps.stop)
            break;
    }
    NnkParseFinalize(parser);
}

}
