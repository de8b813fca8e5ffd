/* nnkc.h - the one internal header of libnnkc (libnnkc.h, which it
 * includes, is the part the runtime uses).
 *
 * Each section names the file that defines what it declares.  The compiler
 * is a pipeline, nnkc_compile (compiler.c) up to the IR: source -> lexer
 * (grammar/lexer.re) -> parser (grammar/parser.y) -> AST (ast.c), every
 * import loaded (load.c) -> sema (sema.c, types.c, fold.c, names.c) -> IR
 * (lower.c, verify.c, ir.c) -> emitters (one file per target: emit_c.c,
 * emit_cuda.c, emit_opencl.c, over the instance model of emit.c, which
 * also writes each instance's element function, the per-element code
 * every loop calls; fatobj.c puts the C and the CUDA into one object)
 * filling templates (template.c; templates/<target>/, a C reduction's
 * row order and column order each in its own template).
 * The lists are X-macro tables: types.def, ops.def, builtins.def,
 * names.def.  Everything the compiler allocates lives in one arena per
 * Compiler and is freed in one go by nnkc_free().
 */
#ifndef NNKC_H
#define NNKC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>

#define NNKC_VERSION "0.1.0"

#include "libnnkc.h" /* what the runtime uses: limits, Type, Value, modules, tools */

/* Internal bugs assert with file and line; user errors are diagnostics.
 * Both nnkc_bug and nnkc_oom (out of memory) return to the innermost
 * nnkc_enter's jmp_buf (compiler.c); libnnkc never prints or aborts. */
#define nnkc_assert(c) ((c) ? (void)0 : nnkc_bug(__FILE__, __LINE__, #c))
_Noreturn void nnkc_bug(const char *file, int line, const char *what);
_Noreturn void nnkc_oom(void);

/* ===================================================================== */
/* arena.c: arena allocation, string interning, growable arrays          */
/* ===================================================================== */

typedef struct Arena Arena;
Arena *arena_new(void);                        /* NULL when out of memory */
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size);      /* zeroed, 16-aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);

/* A list of pointers, grown in the arena (old storage is abandoned). */
typedef struct List {
    void **items;
    int n, cap;
} List;
void list_push(Arena *a, List *l, void *item);

/* Interned strings compare by pointer. */
typedef struct Interner Interner;
Interner *interner_new(Arena *a);
const char *intern(Interner *in, const char *s, size_t n);

/* A string -> pointer map keyed by interned strings. */
typedef struct Map {
    const char **keys;
    void **vals;
    int n, cap;
} Map;
void *map_get(const Map *m, const char *key);
void map_put(Arena *a, Map *m, const char *key, void *val);

/* A growable byte buffer on the heap (emitters, diagnostics rendering).
 * While a Compiler is entered (nnkc_enter), a buffer's storage is linked
 * into it, so that the bail-out of an error can free buffers it abandons
 * (nnkc_release); buf_detach's result is plain malloc'ed memory. */
typedef struct Buf {
    char *data;
    size_t len, cap;
} Buf;
void buf_put(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);
char *buf_detach(Buf *b); /* NUL-terminated, caller frees */

/* ===================================================================== */
/* source.c: source files and ranges                                     */
/* ===================================================================== */

/* Every token and AST node carries one.  Lines and columns are 1-based,
 * columns count bytes; len may run past the end of the line. */
typedef struct Range {
    int32_t file;
    int32_t line, col;
    uint32_t off, len;
} Range;

typedef struct SourceFile {
    const char *path;     /* as given or as resolved */
    const char *dir;      /* directory, for relative imports */
    const char *realpath; /* canonical identity, for cycles and dedup */
    char *text;           /* NUL-terminated copy; may contain NUL bytes */
    size_t len;
    int id;
    int parent;           /* the file whose import loaded this one (-1: none), */
    uint32_t parent_off;  /* and the import's offset there: diagnostics sort by it, */
    int32_t parent_line, parent_col; /* and its place, for "In file imported from" */
} SourceFile;

typedef struct Compiler Compiler;
SourceFile *source_add(Compiler *c, const char *path, const char *text, size_t len);
SourceFile *source_read(Compiler *c, const char *path); /* NULL, errno set (EFBIG past NNKC_MAX_IMPORT bytes) */
/* An imported file: a regular file of at most NNKC_MAX_IMPORT bytes, opened
 * without blocking (a FIFO) and not following a final link when nofollow;
 * its size must not change while read (a /proc file's is unknown).  NULL
 * with *why set (a phrase, never the file's content). */
enum { NNKC_MAX_IMPORT = 16 << 20 };
SourceFile *source_read_import(Compiler *c, const char *path, bool nofollow, const char **why);
SourceFile *source_get(Compiler *c, int id);
/* The bytes of the UTF-8 byte order mark that starts f (3), else 0: the
 * lexer skips them, diagnostics and generated comments leave them out. */
size_t source_bom(const SourceFile *f);
/* Lines end with LF, CR LF or a lone CR (old Mac OS), as in gcc; form feed
 * and vertical tab are blanks within a line.  source_eol: the bytes of the
 * line end at p (p < lim), 0 where none starts.  source_line: the start of
 * the line that holds byte off of f, *end the end of its text (before the
 * line end), the byte order mark left out: what a diagnostic or a comment
 * of generated code shows of it. */
size_t source_eol(const char *p, const char *lim);
size_t source_line(const SourceFile *f, size_t off, size_t *end);
Range range_join(Range a, Range b); /* from the start of a to the end of b */

/* ===================================================================== */
/* diag.c: diagnostics                                                   */
/* ===================================================================== */

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct Diag {
    DiagLevel level;
    bool has_range;
    bool context;      /* a note added for the context of every error */
    Range range;
    char *msg;
    int index;         /* its place in Compiler.diags (a trial that fails takes its own back) */
} Diag;

void diag_error(Compiler *c, Range r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(Compiler *c, Range r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Compiler *c, Range r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note_plain(Compiler *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_error_plain(Compiler *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes every diagnostic: "file:line:col: error: msg", the line, a caret. */
void diag_render(Compiler *c, Buf *out, bool color);
/* The closest of `n` candidates to `name` by edit distance, or NULL. */
const char *diag_suggest(const char *name, const char *const *cands, int n);

/* ===================================================================== */
/* types.c: scalar types, classes and promotion (types.def)              */
/* ===================================================================== */

/* Type and TypeClass: libnnkc.h */

typedef struct TypeInfo {
    const char *name;
    TypeClass cls;
    int bits;
    const char *storage, *compute; /* C types in generated code */
    const char *api;               /* C type in public signatures */
    const char *member;            /* nnk_scalar's member */
    const char *lowest, *highest;  /* C expressions of the compute type */
    const char *shuffle;           /* CUDA warp shuffle carrier */
    const char *abi;               /* "NNK_<ID>", nnk_dtype's name */
} TypeInfo;

extern const TypeInfo type_info[T_NSCALAR];
Type type_lookup(const char *name, size_t n); /* T_NONE when unknown */
TypeClass class_lookup(const char *name);     /* CLASS_NONE when unknown */
static inline bool type_is_float(Type t) { return t < T_NSCALAR && type_info[t].cls == CLASS_FLOAT; }
static inline bool type_is_int(Type t) { return t < T_NSCALAR && (type_info[t].cls == CLASS_INT || type_info[t].cls == CLASS_UINT); }
static inline bool type_is_signed(Type t) { return t < T_NSCALAR && type_info[t].cls == CLASS_INT; }
static inline bool type_is_weak(Type t) { return t == T_WINT || t == T_WFLOAT || t == T_WCOMPLEX; }
static inline bool type_is_complex(Type t) { return t < T_NSCALAR && type_info[t].cls == CLASS_COMPLEX; }
/* The type of a complex type's parts (c64: f32, c128: f64), others unchanged. */
static inline Type type_part(Type t) { return t == T_C64 ? T_F32 : t == T_C128 ? T_F64 : t == T_WCOMPLEX ? T_WFLOAT : t; }
Type type_concrete(Type t);         /* weak int -> i64, weak float -> f64 */
Type type_compute(Type t);          /* f16, bf16 -> f32 */
Type type_accum(Type t);            /* sum/prod accumulator type */
/* Implicit conversion that -Wconversion reports: float->int, narrowing. */
bool type_narrows(Type from, Type to);

/* ===================================================================== */
/* names.c: identifiers generated code cannot carry (names.def)          */
/* ===================================================================== */

typedef enum {
    NK_NONE, NK_C, NK_CXX, NK_CUDA, NK_OPENCL, NK_GENERATED, NK_HEADER,
    NK_PATTERN, /* '__' anywhere, _[A-Z]..., nnk_..., NNK_... */
} NameKind;
NameKind name_reserved(const char *name);
const char *name_kind_text(NameKind k); /* "a C keyword", ... for messages */
/* A source parameter name as a C parameter name (renamed when reserved). */
const char *name_c_param(Arena *a, const char *name);

/* ===================================================================== */
/* fold.c: compile-time evaluation with the generated code's semantics   */
/* ===================================================================== */

/* Value, value_int, value_float, value_cast, the f16/bf16 conversions: libnnkc.h */

typedef enum {
#define UNOP(id, ...) UN_##id,
#define BINOP(id, ...) BIN_##id,
#include "ops.def"
#undef UNOP
#undef BINOP
    OP_COUNT
} Op;

typedef enum {
#define BUILTIN(id, ...) B_##id,
#include "builtins.def"
#undef BUILTIN
    B_COUNT
} Builtin;

typedef enum {
#define REDUCER(id, name, rule) R_##id,
#include "builtins.def"
#undef REDUCER
    R_COUNT
} ReducerKind;

typedef enum { BR_FLOAT, BR_NUM, BR_ROUND, BR_PRED, BR_SELECT, BR_COMPLEX } BuiltinRule;
typedef enum { CX_NO, CX_SAME, CX_PART, CX_PRED } BuiltinComplex;
typedef enum { RR_SAME, RR_ACC, RR_MEAN, RR_BOOL, RR_INDEX, RR_CUSTOM } ReducerRule;

typedef struct BuiltinInfo { const char *name; int min_args, max_args; BuiltinRule rule; BuiltinComplex cx; } BuiltinInfo;
typedef struct ReducerInfo { const char *name; ReducerRule rule; } ReducerInfo;
typedef enum { OPF_VALUE, OPF_CAST, OPF_BOOL } OpForm; /* ops.def's form column */
typedef enum { OPK_NONE, OPK_LOGIC, OPK_CMP, OPK_BITS, OPK_INT, OPK_ARITH } OpKind; /* its operands column */
typedef struct OpInfo {
    const char *tok;    /* spelling */
    const char *quoted; /* "'+'", for messages */
    int token;          /* NNK_TK_... */
    int prec;           /* binary: C's precedence; unary: 0 */
    bool unary;
    const char *helper; /* nnk_<helper>_<type> for integer operands, or NULL */
    OpForm form;
    OpKind operands;    /* binary: how sema types them */
    bool commutes;      /* binary: lower.c may swap the operands */
} OpInfo;
extern const BuiltinInfo builtin_info[B_COUNT];
extern const ReducerInfo reducer_info[R_COUNT];
extern const OpInfo op_info[OP_COUNT];
/* The operator of a lemon token (NNK_TK_...), OP_COUNT when none. */
Op op_of_token(int token, bool unary);

Value value_adopt(Value v, Type to);   /* a literal taking an operand's type */
Value value_round(Value v);            /* f16/bf16: rounded to the type; others as they are */
bool value_truth(Value v);
double value_as_double(Value v);
/* Each returns false when the result is not a compile-time constant. */
bool fold_unary(Op op, Type t, Value a, Value *out);
bool fold_binary(Op op, Type t, Value a, Value b, Value *out); /* t: operand type */
bool fold_builtin(Builtin b, Type t, const Value *args, int n, Value *out);
void value_format(Value v, Buf *out, bool c_syntax);
/* f64 -> f16 / bf16 with one rounding (no detour through a rounded f32). */
uint16_t nnkc_f64_to_f16(double d);
uint16_t nnkc_f64_to_bf16(double d);

/* ===================================================================== */
/* grammar/lexer.re: tokens                                              */
/* ===================================================================== */

typedef struct Token {
    int kind;           /* NNK_TK_* from parser.h */
    Range range;
    const char *text;   /* interned identifier or string contents */
    Value value;        /* numeric literals */
    bool bad;           /* a malformed literal, already reported */
} Token;

typedef struct Lexer {
    Compiler *c;
    SourceFile *src;
    const char *cur, *lim, *tok, *line_start;
    int line;
    int error_line;     /* line of the last skipped bad character */
    bool unterminated;  /* the file ended inside a comment */
} Lexer;

void lexer_init(Lexer *lx, Compiler *c, SourceFile *src);
int lexer_next(Lexer *lx, Token *t); /* returns t->kind; 0 at end of input */
const char *token_name(int kind);    /* for "expected ..." messages */

/* ===================================================================== */
/* ast.c: the syntax tree (constructors are the parser's actions)        */
/* ===================================================================== */

typedef enum {
    /* made by the parser */
    E_ERROR, E_INT, E_FLOAT, E_BOOL, E_NAME, E_IDX, E_N,
    E_UNARY, E_BINARY, E_COND, E_CALL, E_LAMBDA,
    E_TUPLE,   /* (a, b, ...): only reduce()'s state, identity and combine */
    E_INDEX,   /* x[i] or x[i, j, ...]: `name`, the indices in `args` */
    /* made by sema in the typed tree of an instance */
    E_PARAM,   /* kernel parameter `index` (tensor element or scalar) */
    E_LPARAM,  /* reduce() lambda parameter `index`: 2 * component + (0 for a, 1 for b) */
    E_CAST,    /* conversion of a to `type` (a's type too: f16/bf16 rounding); `op`: CAST_* */
    E_BUILTIN, /* builtin `op` applied to args */
    E_REDUCE,  /* reducer `op`: a = argument, b = identity, c = combine; a tuple
                  state's component `index`, with args = arg, identity, combine of
                  every component in turn */
    E_CONST,   /* a folded constant in `value` */
    E_RAWLOAD, /* raw parameter `index` read at args (i64; one: flat, else per dimension) */
    E_RAWSHAPE,/* shape(x, d): raw parameter `index`, d in `op` */
    E_DIMIDX,  /* index(d): the iteration index along dimension `op` */
} ExprKind;

/* E_CAST flags: reported by -Wconversion; a weak value taking the type
 * of an operand (f16/bf16: their compute precision, as a literal does). */
enum { CAST_IMPLICIT = 1, CAST_ADOPT = 2 };

/* How a typed value varies over a kernel's iteration space. */
enum { VARY_UNIFORM, VARY_ROW, VARY_ELEM };

typedef struct Expr Expr;
struct Expr {
    uint8_t kind;
    uint8_t type;      /* Type; in the typed tree */
    uint8_t optype;    /* typed tree: the type operands were converted to */
    uint8_t vary;      /* typed tree: VARY_* */
    uint16_t op;       /* Op, Builtin, ReducerKind, or cast flags */
    int32_t index;
    uint16_t nest;     /* nesting: what the walks of the tree recurse on (a binary operator's left
                          operand, a flat chain, is walked in a loop: not counted); the syntax
                          tree's parentheses count, as a reader sees them; bounded by
                          NNKC_MAX_NESTING in the syntax tree, 2 * that in the typed one */
    bool paren;        /* syntax tree: written in parentheses */
    Range range;
    const char *name;  /* E_NAME, E_CALL callee */
    Range name_range;
    Expr *a, *b, *c;   /* operands */
    List args;         /* E_CALL, E_BUILTIN arguments; E_LAMBDA parameter names (a tuple
                          lambda: `index` names of a, then of b); E_TUPLE values */
    Value value;       /* E_INT, E_FLOAT, E_BOOL, E_CONST */
};

/* A syntax tree nested past the limit: reported by the parser, refused by
 * every later phase without a walk. */
static inline bool expr_too_deep(const Expr *e)
{
    return e->nest > NNKC_MAX_NESTING;
}

typedef struct TypeRef {
    bool present;
    bool tensor;       /* T[] */
    Type scalar;       /* a scalar type, or T_NONE for a type variable */
    const char *name;  /* as written */
    Range range;
} TypeRef;

typedef struct Generic {
    const char *name;
    Range range;
    TypeClass cls;
    const char *cls_name; /* as written, NULL when omitted (any) */
    Range cls_range;
} Generic;

typedef struct Param {
    const char *name;
    Range range;
    TypeRef ty;
    Expr *dflt;
    const char *mod;        /* the word before the name ("inout"), checked by sema; or NULL */
    Range mod_range;
    bool inout;             /* sema: a parameter read and written at the same position */
    bool raw;               /* sema: a raw (indexed) tensor parameter */
    struct Param *inout_of; /* sema: on the output it adds, the inout parameter */
} Param;

typedef enum { S_LET, S_ASSIGN, S_ERROR } StmtKind; /* S_ERROR: lost to a syntax error */
typedef struct Stmt {
    StmtKind kind;
    const char *name;  /* a tuple let: the first name */
    List names;        /* a tuple let `let (a, b) = ...`: E_NAME nodes; empty otherwise */
    Range name_range, range;
    TypeRef ty;   /* let with an annotation */
    Expr *value;
} Stmt;

typedef struct InstSpec {
    const char *name;
    Range range, name_range;
    List types;   /* TypeRef* */
} InstSpec;

typedef enum { I_IMPORT, I_CONST, I_FUNC, I_ELEMENTWISE, I_REDUCTION, I_INSTANTIATE } ItemKind;
typedef struct Item {
    ItemKind kind;
    Range range;
    const char *name;      /* const/func/kernel name; import path */
    Range name_range;
    List generics;         /* Generic* */
    List params;           /* Param* */
    List outputs;          /* Param* (kernels) */
    List body;             /* Stmt* (kernels) */
    List insts;            /* InstSpec* (instantiate) */
    TypeRef ty;            /* const type, func result type */
    Expr *value;           /* const value, func body */
    SourceFile *src;
    /* sema state */
    int state;             /* 0 unseen, 1 in progress, 2 done (consts, funcs) */
    Expr *checked;         /* consts: the folded constant */
    List requests;         /* kernels: Type[] arrays requested by instantiate/-T */
    List made;             /* kernels: their Instance*, to skip duplicates */
} Item;

/* Parser actions: one constructor call each. */
typedef struct Ast Ast;
Expr *ast_int(Compiler *c, Token t);
Expr *ast_float(Compiler *c, Token t);
Expr *ast_bool(Compiler *c, Token t, bool v);
Expr *ast_name(Compiler *c, Token t);
Expr *ast_keyword(Compiler *c, Token t, ExprKind k); /* idx, n */
Expr *ast_unary(Compiler *c, Token op, Expr *a);
Expr *ast_binary(Compiler *c, Expr *a, Token op, Expr *b);
Expr *ast_cond(Compiler *c, Expr *cond, Expr *a, Expr *b);
Expr *ast_call(Compiler *c, Token callee, List *args, Token rparen);
Expr *ast_index(Compiler *c, Token name, List *indices, Token rbracket); /* x[i, j] */
Expr *ast_paren(Compiler *c, Token lp, Expr *e, Token rp);
Expr *ast_lambda(Compiler *c, Token open, List *names, Expr *body);
Expr *ast_tuple_lambda(Compiler *c, Token open, List *a, List *b, Expr *body); /* |(a1, a2), (b1, b2)| e */
Expr *ast_tuple(Compiler *c, Token lp, List *first, Expr *last, Token rp);    /* (first..., last) */
Expr *ast_error(Compiler *c, Token at);
List *ast_list(Compiler *c, void *first);      /* NULL first: empty list */
List *ast_append(Compiler *c, List *l, void *item);
List *ast_name_list(Compiler *c, List *l, Token name); /* lambda parameters */
TypeRef *ast_type(Compiler *c, Token name, bool tensor, Token end);
TypeRef *ast_no_type(Compiler *c);
Generic *ast_generic(Compiler *c, Token name, Token *cls);
Param *ast_param(Compiler *c, Token name, TypeRef *ty, Expr *dflt);
Param *ast_param_mod(Compiler *c, Token mod, Token name, TypeRef *ty); /* inout y: T[] */
Stmt *ast_let(Compiler *c, Token let, Token name, TypeRef *ty, Expr *value, Token semi);
Stmt *ast_let_tuple(Compiler *c, Token let, List *names, Expr *value, Token semi);
Stmt *ast_assign(Compiler *c, Token name, Expr *value, Token semi);
Stmt *ast_lost_stmt(Compiler *c, Token semi);
InstSpec *ast_inst(Compiler *c, Token name, List *types, Token end);
Item *ast_import(Compiler *c, Token kw, Token path, Token semi);
Item *ast_const(Compiler *c, Token kw, Token name, TypeRef *ty, Expr *value, Token semi);
Item *ast_func(Compiler *c, Token kw, Token name, List *generics, List *params, TypeRef *ret, Expr *body, Token semi);
/* outs NULL: no '-> (...)' (a kernel whose outputs are its inout parameters) */
Item *ast_kernel(Compiler *c, Token kw, Token name, List *generics, List *params, List *outs, List *body, Token rbrace);
Item *ast_instantiate(Compiler *c, Token kw, List *insts, Token semi);
void ast_add_item(Compiler *c, Item *it);
void ast_dump(Compiler *c, Buf *out); /* --emit=ast */
void ast_dump_expr(const Expr *e, Buf *out);

/* ===================================================================== */
/* grammar/parser.y: parsing one file                                    */
/* ===================================================================== */

/* Parses src and appends its items to c->items; diagnostics on errors. */
void parse_file(Compiler *c, SourceFile *src);

/* ===================================================================== */
/* load.c: the root file and its imports, parsed                         */
/* ===================================================================== */

/* Parses `path` (or `text` when not NULL, named `path`) and every file it
 * imports into c->items; false when the root file cannot be read. */
bool load_sources(Compiler *c, const char *path, const char *text, size_t len);

/* ===================================================================== */
/* sema.c: names, generics, types, kernel rules                          */
/* ===================================================================== */

typedef struct InstParam {
    const char *name;
    bool tensor;
    Type type;     /* logical type, after generic binding */
    Type storage;  /* dtype in memory (a JIT call may pass another dtype) */
    bool has_default;
    Value dflt;
    bool inout;    /* an inout parameter, or the output it adds (same name, same array) */
    bool raw;      /* a raw (indexed) tensor parameter: not broadcast, read by index */
    int raw_slot;  /* its place among the raw parameters (nnk_plan.raw) */
} InstParam;

/* A checked kernel instance: the typed tree of every output. */
typedef struct Instance {
    Item *kernel;
    const char *name;       /* C symbol: NAME or NAME_f32_i32 */
    const char *display;    /* NAME<f32, i32> */
    Type targs[NNKC_MAX_GENERICS];
    int ntargs;
    bool reduction;
    int nparams, nouts;
    InstParam *params;
    InstParam *outs;
    Expr **values;          /* per output, converted to the output type */
    struct IrKernel *ir;    /* lower.c */
} Instance;

/* Declares the loaded files' global names and checks consts, func generics,
 * kernel headers, kernel symbol clashes and instantiate lines. */
void sema_check_items(Compiler *c);
/* Checks every kernel instance the file asks for (instantiate, -T, defaults).
 * A generic kernel's default instance that does not type-check is skipped
 * with a warning (c->skipped_default names the first such kernel). */
void sema_instantiate_all(Compiler *c);
/* One instance with explicit type arguments and optional storage dtypes
 * (one per tensor parameter then per output; T_NONE = the logical type). */
Instance *sema_instance(Compiler *c, Item *kernel, const Type *targs, const Type *storage);
Item *sema_find_kernel(Compiler *c, const char *name);

/* ===================================================================== */
/* lower.c, ir.c: the typed IR of an instance                            */
/* ===================================================================== */

typedef enum {
    IR_CONST, IR_SCALAR, IR_LOAD, IR_IDX, IR_N, IR_UNARY, IR_BINARY,
    IR_SELECT, IR_CAST, IR_CALL, IR_RED, IR_LPARAM,
    /* raw parameters (aux: the raw slot, nnk_plan.raw): */
    IR_RAWIX,    /* a checked index a times the stride of dimension `sub` (RAW_FLAT: a flat
                    index's offset); value.v.i: the number of indices (the rank it needs) */
    IR_RAWLD,    /* the element at offset a (i64, from IR_RAWIX sums) */
    IR_RAWSHAPE, /* shape(x, sub) */
    IR_DIMIDX,   /* index(sub): the iteration index along dimension sub */
} IrOp;
#define IR_NOPS (IR_DIMIDX + 1)
enum { RAW_FLAT = 0xFFFF };

/* Where a value varies, innermost last: emitters hoist by level. */
typedef enum { L_CONST, L_UNIFORM, L_ROW, L_ELEM, L_LAMBDA } IrLevel;

typedef struct IrNode {
    uint8_t op;      /* IrOp */
    uint8_t type;    /* logical Type */
    uint8_t level;   /* IrLevel */
    uint8_t phase;   /* highest reducer phase this value depends on */
    uint16_t sub;    /* Op / Builtin / cast source type */
    int32_t a, b, c; /* operand node ids, -1 when absent */
    int32_t aux;     /* param / operand / reducer / lambda index; IR_CAST: 1
                        for a weak value adopting f16/bf16 (no rounding);
                        an IR_CAST from f16 to f16 (bf16 too) rounds */
    Value value;     /* IR_CONST */
    int32_t uses;    /* ir.c */
} IrNode;

typedef struct IrReducer {
    ReducerKind kind;
    Type arg_type;   /* type of the reduced expression */
    Type acc_type;   /* accumulator (compute) type */
    Type res_type;   /* result type */
    int phase;       /* 1-based */
    int arg, ident, combine; /* node ids; ident/combine for reduce() */
    /* reduce() with a tuple state: its components are the reducers
     * head..head+width-1 (one phase), whose combines read every component
     * of both sides (IR_LPARAM aux = 2 * component + side), so they update
     * together; alone, head is the reducer itself and width 1. */
    int head, width;
} IrReducer;

typedef struct IrOutput {
    const char *name;
    bool tensor;     /* false: reduced shape (reductions) */
    Type type, storage;
    int node;
} IrOutput;

typedef struct IrKernel {
    Instance *inst;
    IrNode *nodes;
    Range *ranges;   /* per node: the expression that made it (diagnostics) */
    int nnodes, cap;
    IrReducer *reds;
    int nreds;
    int nphases;
    IrOutput *outs;
    int nouts;
    int nloads;      /* tensor parameters (operands 0..nloads-1; outputs follow) */
    int nscalars;    /* scalar parameters (nnk_plan.scalars order) */
    int nraw;        /* raw parameters (nnk_plan.raw order) */
    int32_t raw_operand[NNKC_MAX_RAW]; /* the operand of each (its data pointer) */
    Type raw_storage[NNKC_MAX_RAW], raw_type[NNKC_MAX_RAW];
    void *cse;       /* hash table, lower.c */
} IrKernel;

/* Lowers and verifies (ir_verify): check c's errors before emitting. */
IrKernel *lower_instance(Compiler *c, Instance *in);
void ir_count_uses(IrKernel *k);
/* Whether k reads raw parameters or index(d): its code reads the plan's
 * raw views, iteration shape and range error (ir.c). */
bool ir_reads_plan(const IrKernel *k);
/* verify.c: the invariants the emitters rely on (every value of a concrete
 * scalar type, operands before users and of the types their operator
 * takes, indices in range).  A broken one is an internal error reported
 * as a diagnostic at the expression concerned; returns false then. */
bool ir_verify(Compiler *c, const IrKernel *k);
/* Marks in `need` (nnodes bytes) every node the roots reach, not crossing
 * reducer nodes (their values come from the reducer's own pass) and not
 * reaching below `min_level` (those are computed in an outer loop). */
void ir_mark(const IrKernel *k, const int32_t *roots, int nroots, int min_level, uint8_t *need);
void ir_dump(const IrKernel *k, Buf *out); /* --emit=ir */
/* eval.c: the evaluator of an instance (libnnkc.h's nnkc_module_eval) */
NnkcEval *nnkc_eval_new(const IrKernel *k);

/* ===================================================================== */
/* emit.c: the instance model and IR nodes as C-family expressions       */
/* ===================================================================== */

/* How the loop around an expression names things. */
typedef struct EmitAccess {
    const IrKernel *k;
    /* Writes the storage element of tensor operand `op` (a C lvalue). */
    void (*operand)(const struct EmitAccess *ac, int op, Buf *out);
    const char *idx;      /* the flat index, an int64_t expression */
    const char *n;        /* the reduced element count */
    const char *red_fmt;  /* printf format of reducer #%d's value */
    const char *plan;     /* the nnk_plan pointer (raw parameters, index(d)); NULL: "p" */
    const char *raw_args; /* what the raw helpers take first; NULL: plan (OpenCL: the views and the error) */
    const char *raw_data; /* printf format of raw operand %d's typed pointer; NULL: plan->raw[r].data cast */
    const uint8_t *cached; /* per operand, or NULL: `operand` writes the f16/bf16 element as a float (a row kept on chip) */
    const void *user;
} EmitAccess;

const char *type_suffix(Type t); /* helper suffix: the compute type's name */
const char *ctype(Type t);       /* compute C type */
const char *stype(Type t);       /* storage C type */
void emit_literal(Value v, Type t, Buf *out);
void emit_float_digits(double f, bool f32, Buf *out); /* shortest round-trip, finite f */
void emit_convert(Type from, Type to, const char *v, Buf *out);
void emit_load(Type storage, Type logical, const char *v, Buf *out);
void emit_store(Type logical, Type storage, const char *v, Buf *out);
void emit_ref(const EmitAccess *ac, int id, Buf *out);
void emit_expr(const EmitAccess *ac, int id, Buf *out);
void emit_nodes(const EmitAccess *ac, const uint8_t *need, uint8_t *done, const char *indent, Buf *out);
void emit_levels(const EmitAccess *ac, const uint8_t *need, int lo, int hi, Buf *out);
bool emit_loads(const IrKernel *k, const uint8_t *need, int op);

/* ---- The instance model: one interface for every target ----------------
 *
 * A target is one file, emit_<target>.c (emit_c.c, emit_cuda.c,
 * emit_opencl.c), that
 * fills its templates (templates/<target>/) for every instance.  All it
 * says itself is how its loops address operands and where the loops go;
 * everything else is here and shared:
 *
 *   EmitOperands      the instance: operands (tensor parameters, then
 *                     outputs) and scalars by index, with their types;
 *                     emit_operands_init fills it.
 *   EmitAccess        the target's naming of operands, idx, n, reducer
 *                     results inside one loop (a callback and strings);
 *                     with it emit_expr/emit_nodes/emit_levels print nodes.
 *   emit_instance_keys  the template keys every target's instance
 *                     templates share (name, signature, desc_symbol,
 *                     api_params, views, ...; list below).
 *   emit_read_scalars, emit_red_*, emit_combine_keys  scalar reads, the
 *                     reducers' identity/step/combine/final statements and
 *                     reduce()'s combine functions (their bodies; the
 *                     function around them is the target's template).
 *   emit_elem_fn, emit_elem_call  an instance's element function (the
 *                     per-element nodes once, always inlined) and its call
 *                     from a loop of the target's addressing (EmitAccess).
 *
 * So a new target needs: an access callback per loop shape, its
 * templates, and an emit_<target>_file calling emit_file_keys,
 * emit_operands_init and emit_instance_keys per instance. */
typedef struct EmitOperands {
    Compiler *c;
    const Instance *in;
    const IrKernel *k;
    int nops, nscalars;
    int nin; /* tensor parameters: operands 0..nin-1; outputs follow */
    Type storage[NNKC_MAX_PARAMS * 2 + 2], type[NNKC_MAX_PARAMS * 2 + 2];
    bool reduced[NNKC_MAX_PARAMS * 2 + 2], output[NNKC_MAX_PARAMS * 2 + 2];
    const char *name[NNKC_MAX_PARAMS * 2 + 2];
    Type scalar_type[NNKC_MAX_PARAMS * 2 + 2];
    const char *scalar_name[NNKC_MAX_PARAMS * 2 + 2];
} EmitOperands;
void emit_operands_init(EmitOperands *o, Compiler *c, const Instance *in);

const char *emit_str(Compiler *c, Buf *b); /* b's text, in the arena; frees b */
void emit_indent(Buf *out, const char *s, int n); /* s, every line indented by n */
const char *emit_scalar_member(Type t); /* the nnk_scalar member of a type */
const char *emit_api_type(Type t);      /* a type in public signatures (nnk_f16, ...) */
/* "const float s0 = <plan>scalars[0].f32;" for the scalars in used
 * (o->nscalars flags), or all of them (used NULL, each then "(void)s0;"). */
void emit_read_scalars(const EmitOperands *o, const char *plan, const uint8_t *used, Buf *out);
const char *emit_signature(const EmitOperands *o); /* "(a: f32, x: f32[]) -> (z: f32[])" */
/* List `combines` (ri, A, body): NAME__combK(p, la, lb) of each reduce(). */
typedef struct TDict TDict;
void emit_combine_keys(const EmitOperands *o, const char *plan, const EmitAccess *ac, TDict *d);
typedef struct EmitOptions EmitOptions;
typedef struct TDict TDict;
/* The per-instance keys: elementwise, reduction, kind, kind_word, name,
 * display, signature, desc_symbol, nops, nops_alloc, nviews, nin, nout;
 * api_params (", const float *x, float *y" after the sizes),
 * strided_api_params(_tail), run_params, run_args, fill_scalars;
 * view_list, reduced_list, view_refs and the list views (k, arg, rank,
 * shape, strides); cuda_symbol, cuda_image, cuda_image_size. */
void emit_instance_keys(const EmitOperands *o, const EmitOptions *opt, TDict *e);

bool red_is_arg(const IrReducer *r);
void emit_red_identity(const IrReducer *r, Buf *out);
void emit_red_step(const IrReducer *r, const char *comb, const char *acc, const char *v, const char *idxv,
                   const char *idx, Buf *out);
void emit_red_combine(const IrReducer *r, const char *comb, const char *dst, const char *a, const char *b,
                      const char *dx, const char *ax, const char *bx, Buf *out);
void emit_red_merge(const IrReducer *r, const char *comb, const char *a, const char *b, const char *ax,
                    const char *bx, Buf *out);
void emit_red_final(const IrReducer *r, const char *acc, const char *idxv, const char *n, Buf *out);
/* The keys of reduction phase `ph` (1-based) for targets whose state is a
 * struct per phase and whose loops are in the template: state_fields,
 * ident_code, init_code, merge_code, final_code, step_code, prologue_code,
 * elem_body; the nodes the elements need (emit_opencl.c). */
uint8_t *emit_red_phase(const EmitOperands *o, const EmitAccess *ac, const char *plan, int ph, TDict *P);
/* An instance's element function (emit.c): the per-element nodes once,
 * called from every loop.  EmitElemTarget: the target's qualifier of an
 * always-inlined function (NNK_INLINE, NNK_DEVICE) and its plan parameter
 * (NULL: values that read the plan stay in the loops). */
typedef struct EmitElemTarget {
    const char *qual, *plan_param;
} EmitElemTarget;
typedef struct EmitElem {
    const char *name;
    const EmitElemTarget *t;
    int nres;       /* values it gives (0: no function) */
    bool direct;    /* only loads: no function, the calls read them */
    int32_t *res;
    bool idx, plan; /* takes idx, the plan */
    uint8_t *in;    /* per node: computed in it */
    uint8_t *arg;   /* per node: taken as an argument tN (1), or only the caller's (2) */
    uint8_t *loads; /* per operand: takes its element eK */
} EmitElem;
void emit_elem_fn(const EmitOperands *o, const EmitElemTarget *t, const char *name, const char *lead,
                  const int32_t *roots, int nroots, const uint8_t *given, EmitElem *e, Buf *out);
void emit_elem_call(const EmitOperands *o, const EmitElem *e, const EmitAccess *ac, const char *lead, Buf *out);
/* What the GPU-like targets (emit_cuda.c, emit_opencl.c) share: their
 * kernels' operand addressing (gK through a vector element, at i, at the
 * plan's offsets, in a slice), an elementwise instance's loop bodies, a
 * reduction's finals and epilogue. */
typedef enum { DEV_VEC, DEV_FLAT, DEV_OFF, DEV_SLICE, DEV_ROW, DEV_SROW } EmitDevMode;
typedef struct EmitDevTarget {
    const char *vec;                        /* printf format of operand %d's vector element: "l%d.e[j]" */
    const char *plan, *raw_args, *raw_data; /* EmitAccess's (raw views, index(d)) */
    EmitElemTarget elem;                    /* its element functions */
} EmitDevTarget;
typedef struct EmitDevAccess {
    EmitDevMode mode;
    const EmitDevTarget *t;
} EmitDevAccess;
/* DEV_ROW's access (m.mode DEV_ROW): the operands `row` marks are read
 * from the row kept on chip, rc.cK[j] (DEV_SROW: from the row in shared
 * memory, shK[r]); the others as DEV_SLICE. */
typedef struct EmitDevRow {
    EmitDevAccess m;
    const uint8_t *row;
} EmitDevRow;
EmitAccess emit_dev_access(const EmitOperands *o, const EmitDevAccess *m);
uint8_t *emit_mark(const IrKernel *k, const int32_t *roots, int n);
int emit_vec_elems(const EmitOperands *o);
uint8_t *emit_dev_elementwise(const EmitOperands *o, const EmitDevTarget *t, TDict *d);
void emit_fin_fields(const EmitOperands *o, TDict *d);
bool emit_has_arg(const IrKernel *k);
uint8_t *emit_dev_epilogue(const EmitOperands *o, const EmitAccess *ac, TDict *d);
/* A file's data: per instance emit_instance_keys, then the target's fill. */
typedef void (*EmitFill)(const EmitOperands *o, TDict *e, void *user);
TDict *emit_instances(Compiler *c, const List *instances, const EmitOptions *opt, EmitFill fill, void *user);
/* reduce() with a tuple state (reducers head..head+width-1): every value
 * combined at once, dst_j = COMBj(p, a..., b...) with all of a and b read
 * first (dst may be a).  `dst`, `a`, `b` are printf formats of a value's
 * lvalue taking its reducer index; `bvals`, when not NULL, gives b as one
 * expression per value instead (a step's element values).  `comb` is the
 * combine functions' name before the reducer index. */
void emit_red_tuple(const IrKernel *k, int head, const char *comb, const char *dst, const char *a, const char *b,
                    const char *const *bvals, Buf *out);
/* Their parameter list: "float la, int64_t la1, float lb, int64_t lb1". */
void emit_red_tuple_params(const IrKernel *k, int head, Buf *out);
/* A tuple state's step (with the elements, into s->aK) and merge (a->aK
 * with b->aK) for targets whose state is a struct per phase. */
void emit_red_tuple_state(const IrKernel *k, const EmitAccess *ac, int head, const char *name, Buf *step, Buf *merge);

/* ===================================================================== */
/* emit_c.c, emit_cuda.c, emit_opencl.c, emit_header.c: whole files                      */
/* ===================================================================== */

struct EmitOptions {
    const char *source_name;  /* for the header comment */
    const char *symbol_suffix;/* appended to descriptor names (JIT), or "" */
    bool with_cuda;           /* fat object: descriptors name CUDA kernels */
};

/* The one door for user text into generated code (emit.c): a file name
 * made safe inside a C comment, and the keys every file template shares
 * (version, source). */
const char *emit_comment_text(Compiler *c, const char *s);
void emit_file_keys(Compiler *c, TDict *d, const EmitOptions *opt);

/* The C translation unit for `instances` (Instance* with ir lowered). */
void emit_c_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out);
void emit_cuda_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out);
void emit_opencl_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out);
void emit_header(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out);

/* ===================================================================== */
/* template.c: the template engine; templates.c (generated) holds them    */
/* ===================================================================== */

typedef struct NnkcTemplate {
    const char *name; /* path under templates/, e.g. "c/elementwise.tmpl" */
    const char *text;
} NnkcTemplate;
extern const NnkcTemplate nnkc_templates[];
const char *template_get(const char *name);

/* Template data: a dictionary of strings, booleans and lists of dictionaries. */
typedef struct TDict TDict;
TDict *tdict_new(Arena *a);
void tset(TDict *d, const char *key, const char *value);
void tsetf(TDict *d, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tbool(TDict *d, const char *key, bool v);
TDict *tpush(TDict *d, const char *key); /* appends an item to list `key` */
void tlist(TDict *d, const char *key);   /* makes `key` an (empty) list */
const char *tget(const TDict *d, const char *key); /* the text of `key` (set by tset), or NULL */
void template_render(const char *name, const TDict *data, Buf *out);

/* ===================================================================== */
/* fatobj.c: fat objects (nnkc -c): fatbin, NAME_cuda, NAME_run           */
/* ===================================================================== */

/* A --cuda-arch list ("sm_75,sm_80,sm_90"): valid, or a message. */
bool fatobj_check_archs(const char *list, char *err, size_t errlen);
/* nvcc: $NNK_NVCC, else configure's; NULL when there is none ("no"). */
const char *fatobj_nvcc(void);
/* How nnkc -c makes an object: the C compiler as words (NNK_CC's, then
 * nnkc_c_flags'), nvcc (NULL: CPU code only), the archs, the job count. */
typedef struct FatobjConfig {
    char *const *cc;
    int ncc;      /* all the words */
    int ncc_tool; /* NNK_CC's alone (the assembler step takes no C flags) */
    bool cc_chosen;   /* NNK_CC named the C compiler (not the configured one) */
    const char *nvcc;
    bool nvcc_chosen; /* NNK_NVCC named nvcc */
    const char *archs;
    bool fmad;    /* --cuda-fmad: nvcc may contract a * b + c; else -fmad=false */
    int jobs;     /* tools at once (-j, NNKC_JOBS) */
    int opt;      /* -O level (the baseline loops take -O1 from 2 up: fatobj.c) */
    const char *output;
} FatobjConfig;
/* Writes cfg->output: the C of the instances compiled, with (cfg->nvcc)
 * their CUDA as a fatbin (SASS per arch family, PTX of the newest), the
 * C compile and the CUDA steps side by side; sets eo->with_cuda.  false
 * with a malloc'ed message in *err. */
bool fatobj_object(Compiler *c, const List *instances, EmitOptions *eo, const FatobjConfig *cfg, char **err);
/* The object's C: the fatbin's declarations when opt->with_cuda, the
 * generated C, the entry points. */
void fatobj_c_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out);

/* ===================================================================== */
/* spawn.c: running a tool (C compiler, nvcc) whatever the host's SIGCHLD */
/* ===================================================================== */

/* NnkcTool, nnkc_tool_run, nnkc_tool_timeout_ms, nnkc_find_program, NnkcRuns: libnnkc.h */


/* ===================================================================== */
/* api.c: libnnkc as a library, for the runtime's JIT and for tools        */
/* ===================================================================== */

/* NnkcModule and the nnkc_module_* functions: libnnkc.h */
/* The same for a lowered instance (fat objects, tests). */
NnkcReduceOp nnkc_instance_reduce_op(const Instance *in);

/* ===================================================================== */
/* compiler.c: the Compiler object, its options, the pipeline           */
/* ===================================================================== */

typedef struct Options {
    List include_dirs;        /* const char* */
    bool confined_imports;    /* source given as a string: imports only inside include_dirs */
    bool werror, no_warnings, wconversion;
    int opt_level;            /* 0..3 */
    Type types[16];           /* -T list */
    int ntypes;
    bool color;
} Options;

struct Compiler {
    Arena *arena;
    Interner *strings;
    Options opt;
    List files;               /* SourceFile* */
    List diags;               /* Diag* */
    int nerrors, nwarnings;
    int error_events;         /* every error reported, shown or not */
    int suppress;             /* >0 while errors are being deduplicated */
    int const_depth;          /* consts being checked, each inside the one that names it */
    Diag **diag_set;          /* diag.c: the errors and warnings so far, hashed (deduplication) */
    int diag_set_cap, diag_set_n;
    const char *context_msg;  /* a note added after each error (instances) */
    Range context_range;
    List items;               /* Item*, every file, in load order */
    Map globals;              /* name -> Item* (const, func, kernel) */
    List kernels;             /* Item* */
    List instances;           /* Instance* */
    List imports;             /* SourceFile* of imported files, for depfiles */
    List import_stack;        /* SourceFile* being loaded, for cycles */
    void *sema;               /* sema.c private state */
    Item *skipped_default;    /* sema.c: the first kernel whose default instance did not type-check, or that -T
                                 gave no instance */
    jmp_buf *bail;            /* where nnkc_bug / nnkc_oom return to, when set */
    int internal_error;
    bool oom;                 /* the bail-out was out of memory */
    char bug[256];            /* the internal error's "file:line: what" */
    struct BufHead *bufs;     /* live Buf storage (arena.c) */
    Compiler *outer;          /* the compiler current before nnkc_enter */
};

Compiler *nnkc_new(void);     /* NULL when out of memory */
void nnkc_free(Compiler *c);
/* Brackets an API call: an internal error or out of memory longjmps to jb
 * (with internal_error or oom set) instead of aborting. */
void nnkc_enter(Compiler *c, jmp_buf *jb);
void nnkc_leave(Compiler *c);
/* After a bail-out: frees the Buf storage the jump abandoned. */
void nnkc_release(Compiler *c);
/* The entered compiler of this thread, or NULL. */
Compiler *nnkc_current(void);
/* Zeroed scratch memory in the current compilation's arena (emitters). */
void *nnkc_scratch(size_t size);
/* The pipeline up to the emitters, for nnkc, the runtime's modules and the
 * tools: load_sources, sema_check_items, sema_instantiate_all, and with
 * `lower` (when there are no errors) lower_instance for every instance.
 * Goes on after errors, so one run reports them all; true when none. */
bool nnkc_compile(Compiler *c, const char *path, const char *text, size_t len, bool lower);

#endif /* NNKC_H */
