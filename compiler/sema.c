/* sema.c - semantic analysis: global names, generics, types, reducers and
 * the output rules of language.md §1-5 (the files and their imports are
 * load.c's).
 *
 * Checking a kernel instance builds its typed tree: a fresh expression DAG
 * in which names are resolved (a `let` is shared, a `func` is inlined, a
 * const is folded), every operand is converted to the type its operator
 * computes in, and every node knows whether it varies per element, per
 * reduced row, or not at all.  Constant subtrees fold as they are built,
 * with fold.c, so literals stay weakly typed until they meet a typed value.
 *
 * Errors are values (diag.c) and checking continues after them: an
 * erroneous subexpression gets type T_ERROR, which silences every error
 * that would only follow from it.
 */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

/* ---- scopes ------------------------------------------------------------ */

typedef enum { BIND_PARAM, BIND_LET, BIND_OUT, BIND_LPARAM, BIND_FPARAM } BindKind;

typedef struct Binding {
    const char *name;
    BindKind kind;
    Range decl;
    Expr *value;          /* typed value; NULL for an output not assigned yet */
    Range assigned;       /* outputs: where */
    int index;            /* outputs: position */
    Expr *param;          /* an inout parameter's output: its input, read until assigned */
    struct Binding *next;
    struct Binding *shadow; /* the binding of the same name this one hides */
} Binding;

/* The names in scope by name, so a lookup is one probe however many lets
 * come before it (a walk of the list was quadratic: 20,000 lets took 7 s).
 * Names are interned, so the pointer is the key; a slot keeps the newest
 * binding of its name, and cutting the scope back puts each binding's
 * shadow back (scope_restore).  Keys are never removed: a name out of
 * scope keeps its slot with no binding. */
typedef struct ScopeIndex {
    const char **keys;
    Binding **vals;
    int cap, n;
} ScopeIndex;

typedef struct Ctx {
    Compiler *c;
    Item *kernel;         /* NULL outside kernels (consts, defaults) */
    Instance *inst;
    const List *generics; /* Generic* in scope */
    const Type *gtypes;   /* their bound types */
    Binding *scope;       /* newest first */
    ScopeIndex *index;    /* scope's names; NULL until the first bind */
    int in_reducer;       /* inside a reducer's argument */
    bool in_combine;      /* inside reduce()'s lambda */
    int ninline;
    long *nodes;          /* typed nodes made from this root (a kernel instance, a const), shared by its copies */
    Item *inline_stack[NNKC_MAX_INLINE];
    Range inline_sites[NNKC_MAX_INLINE];
} Ctx;

static int index_probe(const ScopeIndex *ix, const char *name)
{
    uint64_t h = ((uint64_t)(uintptr_t)name >> 3) * 0x9e3779b97f4a7c15u;
    int i = (int)(h >> 40) & (ix->cap - 1);
    while (ix->keys[i] && ix->keys[i] != name)
        i = (i + 1) & (ix->cap - 1);
    return i;
}

static void index_grow(Ctx *x, ScopeIndex *ix)
{
    ScopeIndex old = *ix;
    ix->cap = old.cap ? 2 * old.cap : 16;
    ix->keys = arena_alloc(x->c->arena, (size_t)ix->cap * sizeof *ix->keys);
    ix->vals = arena_alloc(x->c->arena, (size_t)ix->cap * sizeof *ix->vals);
    for (int i = 0; i < old.cap; i++)
        if (old.keys[i]) {
            int j = index_probe(ix, old.keys[i]);
            ix->keys[j] = old.keys[i];
            ix->vals[j] = old.vals[i];
        }
}

/* The slot of name, made when missing. */
static Binding **index_slot(Ctx *x, const char *name)
{
    ScopeIndex *ix = x->index;
    if (!ix)
        ix = x->index = arena_alloc(x->c->arena, sizeof *ix);
    if (2 * (ix->n + 1) > ix->cap)
        index_grow(x, ix);
    int i = index_probe(ix, name);
    if (!ix->keys[i]) {
        ix->keys[i] = name;
        ix->n++;
    }
    return &ix->vals[i];
}

static Binding *bind(Ctx *x, const char *name, BindKind k, Range decl, Expr *value)
{
    Binding *b = arena_alloc(x->c->arena, sizeof *b);
    b->name = name;
    b->kind = k;
    b->decl = decl;
    b->value = value;
    b->next = x->scope;
    x->scope = b;
    Binding **slot = index_slot(x, name);
    b->shadow = *slot;
    *slot = b;
    return b;
}

static Binding *lookup(Ctx *x, const char *name)
{
    if (!x->index)
        return NULL;
    int i = index_probe(x->index, name);
    return x->index->keys[i] ? x->index->vals[i] : NULL;
}

/* Cuts the scope back to saved (reduce()'s lambda parameters). */
static void scope_restore(Ctx *x, Binding *saved)
{
    for (Binding *b = x->scope; b != saved; b = b->next)
        *index_slot(x, b->name) = b->shadow;
    x->scope = saved;
}

/* ---- typed nodes ----------------------------------------------------------- */

static Expr *mk(Ctx *x, ExprKind k, Type t, Range r)
{
    Expr *e = arena_alloc(x->c->arena, sizeof *e);
    if (x->nodes)
        ++*x->nodes;
    e->kind = (uint8_t)k;
    e->type = (uint8_t)t;
    e->optype = (uint8_t)t;
    e->range = r;
    e->nest = 1;
    return e;
}

static Expr *mk_error(Ctx *x, Range r)
{
    return mk(x, E_ERROR, T_ERROR, r);
}

static Expr *mk_const(Ctx *x, Value v, Range r)
{
    Expr *e = mk(x, E_CONST, v.type, r);
    e->value = v;
    return e;
}

static bool is_const(const Expr *e) { return e->kind == E_CONST; }
static bool is_err(const Expr *e) { return e->type == T_ERROR; }

static uint8_t vary_of(const Expr *a, const Expr *b, const Expr *c)
{
    uint8_t v = VARY_UNIFORM;
    if (a && a->vary > v) v = a->vary;
    if (b && b->vary > v) v = b->vary;
    if (c && c->vary > v) v = c->vary;
    return v;
}

/* The typed tree grows with let sharing and func inlining, so its nesting
 * is bounded again (the back ends recurse on it), counted as the source's:
 * a binary operator's left operand is no level (lower() walks a chain in a
 * loop), every other operand one. */
enum { MAX_TYPED_NEST = 2 * NNKC_MAX_NESTING };

static int nest_of(const Expr *e, const Expr *kid)
{
    return kid ? kid->nest + !(kid == e->a && e->kind == E_BINARY) : 0;
}

static Expr *finish(Ctx *x, Expr *e)
{
    int d = nest_of(e, e->a);
    if (nest_of(e, e->b) > d) d = nest_of(e, e->b);
    if (nest_of(e, e->c) > d) d = nest_of(e, e->c);
    for (int i = 0; i < e->args.n; i++)
        if (nest_of(e, e->args.items[i]) > d)
            d = nest_of(e, e->args.items[i]);
    if (d > MAX_TYPED_NEST) {
        diag_error(x->c, e->range, "expression too deep after expanding lets and functions (the limit is %d levels)",
                   MAX_TYPED_NEST);
        return mk_error(x, e->range);
    }
    e->nest = (uint16_t)(d > 1 ? d : 1);
    return e;
}

/* Converts e to `to`.  Constants fold, so a literal becomes a typed
 * constant; `implicit` conversions are the ones -Wconversion reports. */
static Expr *convert(Ctx *x, Expr *e, Type to, bool implicit)
{
    if (is_err(e) || e->type == to || to == T_ERROR)
        return e;
    if (implicit && x->c->opt.wconversion) {
        if (type_narrows((Type)e->type, to)) {
            diag_warning(x->c, e->range, "implicit conversion from '%s' to '%s' may change the value [-Wconversion]",
                         type_name((Type)e->type), type_name(to));
        } else if (is_const(e) && type_is_weak((Type)e->type) && to < T_NSCALAR) {
            Value v = value_cast(e->value, to);
            /* (an imaginary literal meeting a real type loses its imaginary part) */
            bool lost_im = e->type == T_WCOMPLEX && !type_is_complex(to) && e->value.im != 0;
            if ((value_as_double(v) != value_as_double(e->value) && !(e->value.v.f != e->value.v.f)) || lost_im) {
                Buf b = {0};
                value_format(e->value, &b, false);
                diag_warning(x->c, e->range, "literal %s does not fit '%s' exactly [-Wconversion]", b.data, type_name(to));
                buf_free(&b);
            }
        }
    }
    if (is_const(e))
        return mk_const(x, value_cast(e->value, to), e->range);
    Expr *r = mk(x, E_CAST, to, e->range);
    r->optype = e->type;
    r->op = implicit ? CAST_IMPLICIT : 0;
    r->a = e;
    r->vary = e->vary;
    return finish(x, r);
}

/* A conversion that names a type: f16(x), a typed let, a typed func
 * parameter or result, an output read back.  Its value is a value of that
 * type, so for f16/bf16 it is rounded even when the expression already has
 * the type (an f16 expression holds its f32 compute value until a value is
 * given the type: language.md §3); an E_CAST from the type to itself. */
static Expr *convert_named(Ctx *x, Expr *e, Type to, bool implicit)
{
    if ((to == T_F16 || to == T_BF16) && !is_err(e) && e->type == to) {
        if (is_const(e))
            return mk_const(x, value_round(e->value), e->range);
        Expr *r = mk(x, E_CAST, to, e->range);
        r->optype = to;
        r->a = e;
        r->vary = e->vary;
        return finish(x, r);
    }
    return convert(x, e, to, implicit);
}

/* The value an output holds once assigned (language.md §5: read back, it
 * is what was stored): rounded to its type, and through its storage dtype
 * when a call stores it as another one. */
static Expr *stored_value(Ctx *x, Expr *v, const InstParam *op)
{
    if (is_err(v) || op->type >= T_NSCALAR)
        return v;
    if (op->storage != op->type && op->storage < T_NSCALAR)
        return convert(x, convert_named(x, v, op->storage, false), op->type, false);
    return convert_named(x, v, op->type, false);
}

/* Operand promotion: never narrows, except that a literal adopts the type
 * it meets (for f16/bf16 in their f32 compute precision). */
static Expr *promote_to(Ctx *x, Expr *e, Type to)
{
    if (is_const(e) && type_is_weak((Type)e->type) && to < T_NSCALAR) {
        Value v = value_adopt(e->value, to);
        /* a literal that does not fit the integer type it meets wraps, as
         * C's would; say so (gcc's -Woverflow is on by default too) */
        if (e->type == T_WINT && type_is_int(to) && value_as_double(v) != value_as_double(e->value)) {
            Buf b = {0}, w = {0};
            value_format(e->value, &b, false);
            value_format(v, &w, false);
            diag_warning(x->c, e->range, "integer literal %s does not fit '%s'; it becomes %s", b.data, type_name(to),
                         w.data);
            buf_free(&b);
            buf_free(&w);
        }
        return mk_const(x, v, e->range);
    }
    Expr *r = convert(x, e, to, false);
    /* A weak value that is not a constant (where(c, 0.1, 0.2)) adopts the
     * type as its literals would: f16/bf16 in f32 precision, unrounded. */
    if (r != e && r->kind == E_CAST && type_is_weak((Type)e->type))
        r->op |= CAST_ADOPT;
    return r;
}

static Expr *to_bool(Ctx *x, Expr *e)
{
    return convert(x, e, T_BOOL, false);
}

/* ---- type references and generics ------------------------------------------- */

/* A type written in source: a scalar type, or a type variable in scope. */
static Type resolve_type(Ctx *x, const TypeRef *t, bool report)
{
    if (!t->present)
        return T_NONE;
    if (t->scalar != T_NONE)
        return t->scalar;
    if (x->generics) {
        for (int i = 0; i < x->generics->n; i++) {
            const Generic *g = x->generics->items[i];
            if (g->name == t->name)
                return x->gtypes ? x->gtypes[i] : T_ERROR;
        }
    }
    if (report) {
        const char *cands[NNKC_MAX_GENERICS + T_NSCALAR];
        int n = 0;
        for (int i = 0; i < T_NSCALAR; i++)
            cands[n++] = type_info[i].name;
        for (int i = 0; x->generics && i < x->generics->n && n < (int)(sizeof cands / sizeof *cands); i++)
            cands[n++] = ((Generic *)x->generics->items[i])->name;
        const char *s = diag_suggest(t->name, cands, n);
        if (s)
            diag_error(x->c, t->range, "unknown type '%s'; did you mean '%s'?", t->name, s);
        else
            diag_error(x->c, t->range, "unknown type '%s'", t->name);
        if (!s && x->generics && x->generics->n == 0)
            diag_note_plain(x->c, "a type variable must be declared, as in 'elementwise k<T: float>(x: T[])'");
    }
    return T_ERROR;
}

static bool check_generics(Compiler *c, const List *gens)
{
    bool ok = true;
    if (gens->n > NNKC_MAX_GENERICS) {
        diag_error(c, ((Generic *)gens->items[NNKC_MAX_GENERICS])->range, "too many type variables (the limit is %d)",
                   NNKC_MAX_GENERICS);
        return false;
    }
    for (int i = 0; i < gens->n; i++) {
        Generic *g = gens->items[i];
        if (g->cls == CLASS_NONE) {
            static const char *const classes[] = {"float", "int", "uint", "complex", "num", "any"};
            const char *s = diag_suggest(g->cls_name, classes, 6);
            if (s)
                diag_error(c, g->cls_range, "unknown type class '%s'; did you mean '%s'?", g->cls_name, s);
            else
                diag_error(c, g->cls_range, "unknown type class '%s'", g->cls_name);
            diag_note(c, g->cls_range, "the classes are float, int, uint, complex, num and any");
            ok = false;
        }
        if (type_lookup(g->name, strlen(g->name)) != T_NONE) {
            diag_error(c, g->range, "type variable '%s' has the name of a type", g->name);
            ok = false;
        }
        for (int j = 0; j < i; j++) {
            Generic *h = gens->items[j];
            if (h->name == g->name) {
                diag_error(c, g->range, "type variable '%s' is declared twice", g->name);
                diag_note(c, h->range, "first declared here");
                ok = false;
            }
        }
    }
    return ok;
}

/* ---- expressions -------------------------------------------------------------- */

static Expr *check(Ctx *x, Expr *e);

static const char *describe(const Expr *e)
{
    return type_name((Type)e->type);
}

static Expr *check_unary(Ctx *x, Expr *e)
{
    Expr *a = check(x, e->a);
    if (is_err(a))
        return mk_error(x, e->range);
    Type t = (Type)a->type;
    switch ((Op)e->op) {
    case UN_NEG:
        if (t == T_BOOL) {
            diag_error(x->c, e->name_range, "unary '-' on a bool value; use '!' for logical negation");
            return mk_error(x, e->range);
        }
        break;
    case UN_NOT:
        a = to_bool(x, a);
        t = T_BOOL;
        break;
    case UN_BITNOT:
        if (!type_is_int(t) && t != T_WINT && t != T_BOOL) {
            diag_error(x->c, e->name_range, "operator '~' needs an integer operand, but it is %s", describe(a));
            return mk_error(x, e->range);
        }
        break;
    default:
        nnkc_assert(!"unary operator");
    }
    if (is_const(a)) {
        Value v;
        if (fold_unary((Op)e->op, t, a->value, &v))
            return mk_const(x, v, e->range);
    }
    Expr *r = mk(x, E_UNARY, e->op == UN_NOT ? T_BOOL : t, e->range);
    r->op = e->op;
    r->optype = t;
    r->a = a;
    r->vary = a->vary;
    return finish(x, r);
}

/* e's right operand checked, and e made of it and of `a`, its left one checked. */
static Expr *check_binary_with(Ctx *x, Expr *e, Expr *a)
{
    Expr *b = check(x, e->b);
    if (is_err(a) || is_err(b))
        return mk_error(x, e->range);
    Op op = (Op)e->op;
    OpKind kind = op_info[op].operands; /* ops.def */
    Type t, res;
    if (kind == OPK_LOGIC) {
        a = to_bool(x, a);
        b = to_bool(x, b);
        t = res = T_BOOL;
    } else {
        t = type_promote((Type)a->type, (Type)b->type);
        bool integral = type_is_int(t) || t == T_WINT || (kind == OPK_BITS && t == T_BOOL);
        if ((kind == OPK_INT || kind == OPK_BITS) && !integral) {
            diag_error(x->c, e->name_range, "operator '%s' needs integer operands, but %s %s", op_info[op].tok,
                       a->type == b->type ? "both are" : "they promote to", type_name(t));
            if (op == BIN_MOD && (type_is_float(t) || t == T_WFLOAT))
                diag_note_plain(x->c, "use fmod(a, b) for the remainder of floats");
            return mk_error(x, e->range);
        }
        if (kind == OPK_CMP && op != BIN_EQ && op != BIN_NE && type_is_complex(type_concrete(t))) {
            diag_error(x->c, e->name_range, "operator '%s' needs ordered operands, but %s %s", op_info[op].tok,
                       a->type == b->type ? "both are" : "they promote to", type_name(t));
            diag_note_plain(x->c, "complex numbers have no order; compare abs(z) or real(z)");
            return mk_error(x, e->range);
        }
        if (kind == OPK_ARITH && t == T_BOOL)
            t = T_I64; /* bool in arithmetic is 0/1 */
        a = promote_to(x, a, t);
        b = promote_to(x, b, t);
        res = kind == OPK_CMP ? T_BOOL : t;
    }
    if (is_const(a) && is_const(b)) {
        Value v;
        if (fold_binary(op, t, a->value, b->value, &v))
            return mk_const(x, v, e->range);
    }
    Expr *r = mk(x, E_BINARY, res, e->range);
    r->op = (uint16_t)op;
    r->optype = t;
    r->a = a;
    r->b = b;
    r->vary = vary_of(a, b, NULL);
    return finish(x, r);
}

/* A flat chain (a + b + ... + z: each operator the left operand of the
 * next) is as long as the source makes it, NNKC_MAX_DEPTH; its left spine
 * is walked in a loop, bottom up, and only the right operands recurse
 * (nested as written, at most NNKC_MAX_NESTING). */
static Expr *check_binary(Ctx *x, Expr *e)
{
    int n = 0;
    for (Expr *s = e; s->kind == E_BINARY && !expr_too_deep(s); s = s->a)
        n++;
    Expr **spine = arena_alloc(x->c->arena, sizeof *spine * (size_t)n);
    int i = 0;
    for (Expr *s = e; i < n; s = s->a)
        spine[i++] = s;
    Expr *a = check(x, spine[n - 1]->a);
    for (i = n - 1; i >= 0; i--)
        a = check_binary_with(x, spine[i], a);
    return a;
}

static Expr *select_node(Ctx *x, Range range, Expr *cond, Expr *a, Expr *b)
{
    if (is_err(cond) || is_err(a) || is_err(b))
        return mk_error(x, range);
    cond = to_bool(x, cond);
    Type t = type_promote((Type)a->type, (Type)b->type);
    a = promote_to(x, a, t);
    b = promote_to(x, b, t);
    if (is_const(cond)) {
        Expr *pick = value_truth(cond->value) ? a : b;
        return pick;
    }
    Expr *r = mk(x, E_COND, t, range);
    r->a = cond;
    r->b = a;
    r->c = b;
    r->vary = vary_of(cond, a, b);
    return finish(x, r);
}

static void arity_error(Ctx *x, Expr *e, const char *what, int lo, int hi)
{
    if (lo == hi)
        diag_error(x->c, e->range, "%s takes %d argument%s, but %d %s given", what, lo, lo == 1 ? "" : "s",
                   e->args.n, e->args.n == 1 ? "was" : "were");
    else
        diag_error(x->c, e->range, "%s takes %d to %d arguments, but %d %s given", what, lo, hi, e->args.n,
                   e->args.n == 1 ? "was" : "were");
}

/* A complex-valued built-in's result type (builtins.def's cx column), or
 * T_ERROR after the diagnostic. */
static Type complex_result(Ctx *x, Expr *e, const BuiltinInfo *info, Type t)
{
    switch (info->cx) {
    case CX_SAME: return t;
    case CX_PART: return type_part(t);
    case CX_PRED: return T_BOOL;
    default:
        diag_error(x->c, e->range, "'%s' is not defined for complex values, but its argument%s %s %s", info->name,
                   e->args.n == 1 ? "" : "s", e->args.n == 1 ? "is" : "promote to", type_name(t));
        if (info->rule == BR_NUM || info->rule == BR_ROUND)
            diag_note_plain(x->c, "complex numbers have no order; apply it to real(z) or abs(z)");
        return T_ERROR;
    }
}

/* check_builtin with a result type fixed by the caller (c64(re, im)), or
 * T_NONE for the built-in's own rule. */
static Expr *check_builtin_as(Ctx *x, Expr *e, Builtin bi, Type fixed);

static Expr *check_builtin(Ctx *x, Expr *e, Builtin bi)
{
    return check_builtin_as(x, e, bi, T_NONE);
}

static Expr *check_builtin_as(Ctx *x, Expr *e, Builtin bi, Type fixed)
{
    const BuiltinInfo *info = &builtin_info[bi];
    if (e->args.n < info->min_args || e->args.n > info->max_args) {
        char what[64];
        snprintf(what, sizeof what, "'%s'", info->name);
        arity_error(x, e, what, info->min_args, info->max_args);
        return mk_error(x, e->range);
    }
    Expr *args[3];
    bool err = false, all_const = true;
    for (int i = 0; i < e->args.n; i++) {
        args[i] = check(x, e->args.items[i]);
        err |= is_err(args[i]);
        all_const &= is_const(args[i]);
    }
    if (err)
        return mk_error(x, e->range);
    if (info->rule == BR_SELECT)
        return select_node(x, e->range, args[0], args[1], args[2]);
    Type t = (Type)args[0]->type;
    for (int i = 1; i < e->args.n; i++)
        t = type_promote(t, (Type)args[i]->type);
    Type res = t;
    if (info->rule == BR_COMPLEX) {
        /* complex(re, im): real parts of one type, c128 unless both fit f32 */
        if (type_is_complex(type_concrete(t))) {
            diag_error(x->c, e->range, "the parts of '%s' must be real, but they promote to %s",
                       fixed != T_NONE ? type_name(fixed) : info->name, type_name(t));
            return mk_error(x, e->range);
        }
        res = fixed != T_NONE ? fixed : type_is_float(t) && t != T_F64 ? T_C64 : T_C128;
        t = type_part(res);
    } else if (type_is_complex(type_concrete(t))) {
        /* (an imaginary literal's result stays weak: abs(3 + 4j) is a float literal) */
        res = complex_result(x, e, info, t);
        if (res == T_ERROR)
            return mk_error(x, e->range);
    } else if (bi == B_REAL || bi == B_CONJ || bi == B_IMAG) {
        /* of a real number: itself, and 0 of its type (numpy) */
        if (t == T_BOOL) {
            diag_error(x->c, e->range, "'%s' needs a number, but its argument is bool", info->name);
            return mk_error(x, e->range);
        }
        if (bi != B_IMAG)
            return args[0];
        Expr *zero = mk_const(x, value_int(T_WINT, 0), e->range);
        return convert(x, zero, t, false);
    }
    if (type_is_complex(type_concrete(t)) || info->rule == BR_COMPLEX) {
        /* no real rule below applies */
    } else switch (info->rule) {
    case BR_FLOAT:
        /* Integers compute in f64 as in numpy; literals stay literals. */
        if (t == T_WINT)
            t = res = T_WFLOAT;
        else if (!type_is_float(t) && t != T_WFLOAT)
            t = res = T_F64;
        break;
    case BR_NUM:
    case BR_ROUND:
        if (t == T_BOOL) {
            diag_error(x->c, e->range, "'%s' needs a number, but its argument is bool", info->name);
            return mk_error(x, e->range);
        }
        break;
    case BR_PRED:
        res = T_BOOL;
        break;
    default:
        break;
    }
    for (int i = 0; i < e->args.n; i++)
        args[i] = promote_to(x, args[i], t);
    if (all_const) {
        Value vals[3], v;
        for (int i = 0; i < e->args.n; i++)
            vals[i] = args[i]->value;
        if (fold_builtin(bi, t, vals, e->args.n, &v)) {
            if (res == T_BOOL)
                v = value_cast(v, T_BOOL);
            return mk_const(x, v, e->range);
        }
    }
    Expr *r = mk(x, E_BUILTIN, res, e->range);
    r->op = (uint16_t)bi;
    r->optype = t;
    for (int i = 0; i < e->args.n; i++)
        list_push(x->c->arena, &r->args, args[i]);
    r->vary = vary_of(args[0], e->args.n > 1 ? args[1] : NULL, e->args.n > 2 ? args[2] : NULL);
    return finish(x, r);
}

static bool elem_varying(const Expr *e)
{
    return e && e->vary == VARY_ELEM && e->kind != E_REDUCE;
}

/* The first element-varying leaf of e outside reducers, for error carets:
 * down the first child that varies by element (a loop: a chain is long),
 * to a parameter or idx, or to the node none of whose children varies. */
static const Expr *elem_leaf(const Expr *e)
{
    if (!elem_varying(e))
        return NULL;
    while (e->kind != E_PARAM && e->kind != E_IDX) {
        const Expr *next = elem_varying(e->a) ? e->a : elem_varying(e->b) ? e->b : elem_varying(e->c) ? e->c : NULL;
        for (int i = 0; !next && i < e->args.n; i++)
            if (elem_varying(e->args.items[i]))
                next = e->args.items[i];
        if (!next)
            break;
        e = next;
    }
    return e;
}

/* A reducer stands in a reduction kernel, outside a combine function, with
 * its number of arguments; reports why not. */
static bool reducer_allowed(Ctx *x, Expr *e, ReducerKind rk)
{
    const char *name = reducer_info[rk].name;
    if (!x->kernel) {
        diag_error(x->c, e->name_range, "reducer '%s' outside a kernel", name);
        return false;
    }
    if (x->kernel->kind == I_ELEMENTWISE) {
        diag_error(x->c, e->name_range, "reducer '%s' used in an elementwise kernel", name);
        if (rk == R_MAX || rk == R_MIN)
            diag_note_plain(x->c, "'%s' with one argument reduces; with two, %s(a, b) is elementwise", name, name);
        else
            diag_note(x->c, x->kernel->name_range, "declare '%s' as a 'reduction' kernel to reduce", x->kernel->name);
        return false;
    }
    if (x->in_combine) {
        diag_error(x->c, e->name_range, "reducer '%s' inside the combine function of reduce()", name);
        return false;
    }
    int want = rk == R_CUSTOM ? 3 : 1;
    if (e->args.n != want) {
        char what[64];
        snprintf(what, sizeof what, "reducer '%s'", name);
        arity_error(x, e, what, want, want);
        return false;
    }
    return true;
}

static bool is_tuple_reduce(const Expr *e)
{
    return e->kind == E_CALL && strcmp(e->name, "reduce") == 0 && e->args.n >= 1 &&
           ((Expr *)e->args.items[0])->kind == E_TUPLE;
}

static Expr *check_reducer(Ctx *x, Expr *e, ReducerKind rk)
{
    if (!reducer_allowed(x, e, rk))
        return mk_error(x, e->range);
    if (is_tuple_reduce(e)) {
        int k = ((Expr *)e->args.items[0])->args.n;
        diag_error(x->c, e->range, "reduce() with a tuple state gives %d values; bind them with 'let (a, b, ...) = reduce(...);'", k);
        return mk_error(x, e->range);
    }
    x->in_reducer++;
    Expr *arg = check(x, e->args.items[0]);
    x->in_reducer--;
    if (is_err(arg))
        return mk_error(x, e->range);
    Type at = type_concrete((Type)arg->type), res = at;
    Expr *ident = NULL, *combine = NULL;
    if (type_is_complex(at) && (reducer_info[rk].rule == RR_SAME || reducer_info[rk].rule == RR_INDEX)) {
        diag_error(x->c, e->name_range, "reducer '%s' needs ordered values, but its argument is %s", reducer_info[rk].name,
                   type_name(at));
        diag_note_plain(x->c, "complex numbers have no order; reduce abs(z) or real(z)");
        return mk_error(x, e->range);
    }
    switch (reducer_info[rk].rule) {
    case RR_ACC:
        res = type_is_float(at) || type_is_complex(at) ? at : type_accum(at);
        break;
    case RR_MEAN:
        /* integers and bools: each element converted to f64 and summed in
         * f64, as numpy's mean (an i64 sum of timestamps near 2^62 wraps) */
        res = type_is_float(at) || type_is_complex(at) ? at : T_F64;
        at = res;
        break;
    case RR_SAME:
        break;
    case RR_BOOL:
        arg = to_bool(x, arg);
        at = res = T_BOOL;
        break;
    case RR_INDEX:
        res = T_I64;
        break;
    case RR_CUSTOM: {
        ident = check(x, e->args.items[1]);
        Expr *lam = e->args.items[2];
        if (is_err(ident))
            return mk_error(x, e->range);
        if (ident->vary != VARY_UNIFORM) {
            const Expr *l = elem_leaf(ident);
            diag_error(x->c, l ? l->range : ident->range, "the identity of reduce() must not vary over the data");
            return mk_error(x, e->range);
        }
        if (lam->kind != E_LAMBDA || lam->args.n != 2 || lam->index) {
            diag_error(x->c, lam->range, "the third argument of reduce() must be a combine function '|a, b| ...'");
            return mk_error(x, e->range);
        }
        res = at = type_concrete(type_promote((Type)arg->type, (Type)ident->type));
        arg = promote_to(x, arg, at);
        ident = promote_to(x, ident, at);
        Binding *saved = x->scope;
        for (int i = 0; i < 2; i++) {
            Expr *p = lam->args.items[i];
            Expr *lp = mk(x, E_LPARAM, at, p->range);
            lp->index = i;
            bind(x, p->name, BIND_LPARAM, p->range, lp);
        }
        bool saved_combine = x->in_combine;
        x->in_combine = true;
        combine = check(x, lam->a);
        x->in_combine = saved_combine;
        scope_restore(x, saved);
        if (is_err(combine))
            return mk_error(x, e->range);
        if (combine->vary != VARY_UNIFORM) {
            const Expr *l = elem_leaf(combine);
            diag_error(x->c, l ? l->range : combine->range,
                       "the combine function of reduce() may use only its parameters, constants and scalar parameters");
            return mk_error(x, e->range);
        }
        combine = convert(x, combine, at, false);
        break;
    }
    }
    /* max and min of bools are any and all (numpy's np.max of a bool array
     * is np.any): true is the larger; an empty slice gives false / true */
    if (at == T_BOOL && (rk == R_MAX || rk == R_MIN))
        rk = rk == R_MAX ? R_ANY : R_ALL;
    if (at == T_BOOL && (rk == R_SUM || rk == R_PROD || rk == R_MEAN || rk == R_ARGMAX || rk == R_ARGMIN))
        arg = convert(x, arg, T_I64, false), at = (Type)arg->type;
    else
        arg = convert(x, arg, at, false);
    Expr *r = mk(x, E_REDUCE, res, e->range);
    r->op = (uint16_t)rk;
    r->optype = at;
    r->a = arg;
    r->b = ident;
    r->c = combine;
    r->vary = VARY_ROW;
    r->name_range = e->name_range;
    return finish(x, r);
}

/* let (a, b, ...) = reduce((e1, e2, ...), (i1, i2, ...), |(a1, a2, ...), (b1, b2, ...)| (c1, c2, ...)):
 * one reducer per state value, the combine of each reading every value of
 * both sides.  Each component is typed as a one-value reduce() of (ej, ij);
 * members[j] is component j's value.  Returns false after an error. */
static bool check_tuple_reduce(Ctx *x, Expr *e, int nnames, Range names_at, Expr **members)
{
    if (!reducer_allowed(x, e, R_CUSTOM))
        return false;
    Expr *st = e->args.items[0], *id = e->args.items[1], *lam = e->args.items[2];
    int k = st->args.n;
    if (k > NNKC_MAX_TUPLE) {
        diag_error(x->c, st->range, "the state of reduce() has %d values; the limit is %d", k, NNKC_MAX_TUPLE);
        return false;
    }
    if (nnames != k) {
        diag_error(x->c, names_at, "%d name%s bound to the %d values of reduce()'s state", nnames, nnames == 1 ? "" : "s", k);
        return false;
    }
    if (id->kind != E_TUPLE || id->args.n != k) {
        diag_error(x->c, id->range, "the identity of reduce() must be a tuple of %d values, one per state value", k);
        return false;
    }
    if (lam->kind != E_LAMBDA || lam->index != k || lam->op || lam->a->kind != E_TUPLE || lam->a->args.n != k) {
        diag_error(x->c, lam->range,
                   "the combine function of reduce() with %d state values takes two tuples of %d names and gives %d values, "
                   "as '|(a1, a2), (b1, b2)| (e1, e2)' does for two", k, k, k);
        return false;
    }
    Expr *arg[NNKC_MAX_TUPLE], *ident[NNKC_MAX_TUPLE], *comb[NNKC_MAX_TUPLE];
    Type at[NNKC_MAX_TUPLE];
    bool err = false;
    for (int j = 0; j < k; j++) {
        x->in_reducer++;
        arg[j] = check(x, st->args.items[j]);
        x->in_reducer--;
        ident[j] = check(x, id->args.items[j]);
        err |= is_err(arg[j]) || is_err(ident[j]);
        if (!is_err(ident[j]) && ident[j]->vary != VARY_UNIFORM) {
            const Expr *l = elem_leaf(ident[j]);
            diag_error(x->c, l ? l->range : ident[j]->range, "the identity of reduce() must not vary over the data");
            err = true;
        }
    }
    if (err)
        return false;
    for (int j = 0; j < k; j++) {
        at[j] = type_concrete(type_promote((Type)arg[j]->type, (Type)ident[j]->type));
        arg[j] = convert(x, promote_to(x, arg[j], at[j]), at[j], false);
        ident[j] = promote_to(x, ident[j], at[j]);
    }
    Binding *saved = x->scope;
    for (int j = 0; j < 2 * k; j++) {
        Expr *p = lam->args.items[j];
        int comp = j % k, side = j / k;
        Expr *lp = mk(x, E_LPARAM, at[comp], p->range);
        lp->index = 2 * comp + side;
        bind(x, p->name, BIND_LPARAM, p->range, lp);
    }
    bool saved_combine = x->in_combine;
    x->in_combine = true;
    for (int j = 0; j < k; j++) {
        comb[j] = check(x, lam->a->args.items[j]);
        if (is_err(comb[j])) {
            err = true;
        } else if (comb[j]->vary != VARY_UNIFORM) {
            const Expr *l = elem_leaf(comb[j]);
            diag_error(x->c, l ? l->range : comb[j]->range,
                       "the combine function of reduce() may use only its parameters, constants and scalar parameters");
            err = true;
        } else {
            comb[j] = convert(x, comb[j], at[j], false);
        }
    }
    x->in_combine = saved_combine;
    scope_restore(x, saved);
    if (err)
        return false;
    List triples = {0};
    for (int j = 0; j < k; j++) {
        list_push(x->c->arena, &triples, arg[j]);
        list_push(x->c->arena, &triples, ident[j]);
        list_push(x->c->arena, &triples, comb[j]);
    }
    for (int j = 0; j < k; j++) {
        Expr *r = mk(x, E_REDUCE, at[j], e->range);
        r->op = R_CUSTOM;
        r->optype = at[j];
        r->a = arg[j];
        r->b = ident[j];
        r->c = comb[j];
        r->index = j;
        r->args = triples;
        r->vary = VARY_ROW;
        r->name_range = e->name_range;
        members[j] = finish(x, r);
        if (is_err(members[j]))
            return false;
    }
    return true;
}

static const char *const generic_class_names[] = {"bool", "int", "uint", "float", "complex", "num", "any"};

static Expr *check_func_call(Ctx *x, Expr *e, Item *f)
{
    for (int i = 0; i < x->ninline; i++) {
        if (x->inline_stack[i] == f) {
            /* The enclosing calls each add "in the call of" as they unwind. */
            diag_error(x->c, e->name_range, "function '%s' calls itself; recursion is not allowed", f->name);
            return mk_error(x, e->range);
        }
    }
    if (x->ninline >= NNKC_MAX_INLINE) {
        diag_error(x->c, e->range, "functions nested too deeply (the limit is %d calls)", NNKC_MAX_INLINE);
        return mk_error(x, e->range);
    }
    /* Every call expands the body again: a function that calls the one
     * before it twice, 30 deep, is 2^30 copies (all of the memory) */
    if (x->nodes && *x->nodes > NNKC_MAX_TYPED_NODES) {
        diag_error(x->c, e->range, "expression too large after expanding functions (the limit is %d nodes)",
                   NNKC_MAX_TYPED_NODES);
        return mk_error(x, e->range);
    }
    if (e->args.n != f->params.n) {
        char what[80];
        snprintf(what, sizeof what, "function '%s'", f->name);
        arity_error(x, e, what, f->params.n, f->params.n);
        diag_note(x->c, f->name_range, "'%s' is declared here", f->name);
        return mk_error(x, e->range);
    }
    f->state = 2; /* used: its body is checked through this call */
    Expr *args[NNKC_MAX_PARAMS * 2];
    if (e->args.n > (int)(sizeof args / sizeof *args)) {
        diag_error(x->c, e->range, "too many arguments");
        return mk_error(x, e->range);
    }
    bool err = false;
    for (int i = 0; i < e->args.n; i++) {
        args[i] = check(x, e->args.items[i]);
        err |= is_err(args[i]);
    }
    /* Bind the function's type variables from the typed arguments. */
    Type gt[NNKC_MAX_GENERICS];
    int ng = f->generics.n < NNKC_MAX_GENERICS ? f->generics.n : NNKC_MAX_GENERICS;
    for (int g = 0; g < ng; g++) {
        const Generic *gen = f->generics.items[g];
        Type t = T_NONE;
        for (int i = 0; i < e->args.n; i++) {
            const Param *p = f->params.items[i];
            if (!p->ty.present || p->ty.scalar != T_NONE || p->ty.name != gen->name || is_err(args[i]))
                continue;
            t = t == T_NONE ? (Type)args[i]->type : type_promote(t, (Type)args[i]->type);
        }
        if (t == T_NONE) {
            if (!err)
                diag_error(x->c, gen->range, "cannot infer type variable '%s' of '%s' from the arguments", gen->name,
                           f->name);
            err = true;
            gt[g] = T_ERROR;
            continue;
        }
        t = type_concrete(t);
        if (!err && t != T_ERROR && gen->cls != CLASS_NONE && !type_in_class(t, gen->cls)) {
            diag_error(x->c, e->range, "'%s' requires %s to be %s, but the arguments give %s", f->name, gen->name,
                       generic_class_names[gen->cls], type_name(t));
            diag_note(x->c, gen->range, "'%s' is declared here", gen->name);
            err = true;
        }
        gt[g] = t;
    }
    if (err)
        return mk_error(x, e->range);
    Ctx inner = *x;
    inner.scope = NULL;
    inner.index = NULL;
    inner.generics = &f->generics;
    inner.gtypes = gt;
    inner.inline_stack[x->ninline] = f;
    inner.inline_sites[x->ninline] = e->name_range;
    inner.ninline = x->ninline + 1;
    for (int i = 0; i < e->args.n; i++) {
        const Param *p = f->params.items[i];
        Expr *v = args[i];
        if (p->ty.present) {
            if (p->ty.tensor) {
                diag_error(x->c, p->ty.range, "function parameters are element values; write '%s: %s'", p->name,
                           p->ty.name);
                return mk_error(x, e->range);
            }
            Type pt = resolve_type(&inner, &p->ty, true);
            if (pt == T_ERROR)
                return mk_error(x, e->range);
            v = convert_named(x, v, pt, true);
        }
        bind(&inner, p->name, BIND_FPARAM, p->range, v);
    }
    int errs = x->c->nerrors;
    Expr *body = check(&inner, f->value);
    if (!is_err(body) && f->ty.present) {
        Type rt = resolve_type(&inner, &f->ty, true);
        body = rt == T_ERROR ? mk_error(x, e->range) : convert_named(&inner, body, rt, true);
    }
    if (x->c->nerrors > errs)
        diag_note(x->c, e->name_range, "in the call of '%s' here", f->name);
    return body;
}

static Item *global(Ctx *x, const char *name)
{
    return map_get(&x->c->globals, name);
}

static Builtin builtin_lookup(const char *name)
{
    for (int i = 0; i < B_COUNT; i++)
        if (strcmp(builtin_info[i].name, name) == 0)
            return (Builtin)i;
    return B_COUNT;
}

static ReducerKind reducer_lookup(const char *name, int nargs)
{
    for (int i = 0; i < R_COUNT; i++) {
        if (strcmp(reducer_info[i].name, name) != 0)
            continue;
        if ((i == R_MAX || i == R_MIN) && nargs != 1)
            return R_COUNT; /* binary max/min are elementwise */
        return (ReducerKind)i;
    }
    return R_COUNT;
}

static Type generic_lookup(Ctx *x, const char *name)
{
    for (int i = 0; x->generics && i < x->generics->n; i++)
        if (((Generic *)x->generics->items[i])->name == name)
            return x->gtypes ? x->gtypes[i] : T_ERROR;
    return T_NONE;
}

static void unknown_function(Ctx *x, Expr *e)
{
    int cap = B_COUNT + R_COUNT + x->c->globals.n + 1;
    const char **cands = arena_alloc(x->c->arena, sizeof(char *) * (size_t)cap);
    int n = 0;
    for (int i = 0; i < B_COUNT; i++)
        cands[n++] = builtin_info[i].name;
    for (int i = 0; i < R_COUNT; i++)
        cands[n++] = reducer_info[i].name;
    for (int i = 0; i < x->c->globals.cap; i++) {
        Item *it = x->c->globals.vals[i];
        if (x->c->globals.keys[i] && it->kind == I_FUNC)
            cands[n++] = it->name;
    }
    const char *s = diag_suggest(e->name, cands, n);
    Binding *b = lookup(x, e->name);
    if (b || (global(x, e->name) && global(x, e->name)->kind != I_FUNC))
        diag_error(x->c, e->name_range, "'%s' is not a function", e->name);
    else if (s)
        diag_error(x->c, e->name_range, "unknown function '%s'; did you mean '%s'?", e->name, s);
    else
        diag_error(x->c, e->name_range, "unknown function '%s'", e->name);
}

static Expr *check_dim_call(Ctx *x, Expr *e);

static Expr *check_call(Ctx *x, Expr *e)
{
    Type ct = type_lookup(e->name, strlen(e->name));
    if (ct == T_NONE)
        ct = generic_lookup(x, e->name);
    if (ct != T_NONE) {
        if (type_is_complex(ct) && e->args.n == 2)
            return check_builtin_as(x, e, B_COMPLEX, ct);
        if (e->args.n != 1) {
            char what[64];
            snprintf(what, sizeof what, "conversion to '%s'", e->name);
            arity_error(x, e, what, 1, type_is_complex(ct) ? 2 : 1);
            return mk_error(x, e->range);
        }
        Expr *a = check(x, e->args.items[0]);
        if (is_err(a) || ct == T_ERROR)
            return mk_error(x, e->range);
        Expr *r = convert_named(x, a, ct, false);
        if (r->kind == E_CONST)
            r->range = e->range;
        return r;
    }
    ReducerKind rk = reducer_lookup(e->name, e->args.n);
    if (rk != R_COUNT)
        return check_reducer(x, e, rk);
    Builtin bi = builtin_lookup(e->name);
    if (bi != B_COUNT) {
        if ((bi == B_MAX || bi == B_MIN) && e->args.n != 2) {
            diag_error(x->c, e->range, "'%s' takes 1 argument (a reducer) or 2 (elementwise), but %d were given",
                       e->name, e->args.n);
            return mk_error(x, e->range);
        }
        return check_builtin(x, e, bi);
    }
    Item *f = global(x, e->name);
    if (f && f->kind == I_FUNC && !lookup(x, e->name))
        return check_func_call(x, e, f);
    /* shape(x, d) and index(d): after the funcs, so that a func of either
     * name (valid before they existed) keeps its meaning */
    if (strcmp(e->name, "shape") == 0 || strcmp(e->name, "index") == 0)
        return check_dim_call(x, e);
    unknown_function(x, e);
    for (int i = 0; i < e->args.n; i++)
        check(x, e->args.items[i]); /* errors inside the arguments too */
    return mk_error(x, e->range);
}

static Expr *check_const_item(Compiler *c, Item *it);

/* The raw parameter a name in x[...] or shape(x, d) names, or -1 after an error. */
static int raw_param(Ctx *x, const char *name, Range at, const char *use)
{
    Binding *b = lookup(x, name);
    if (b && b->kind == BIND_PARAM && x->inst && x->inst->params[b->value->index].raw)
        return b->value->index;
    if (b && b->kind == BIND_PARAM && x->inst && x->inst->params[b->value->index].tensor) {
        diag_error(x->c, at, "%s needs a raw parameter, but '%s' is a tensor that broadcasts", use, name);
        diag_note(x->c, b->decl, "declare it 'raw %s: ...' to read it by index", name);
    } else if (b) {
        diag_error(x->c, at, "%s needs a raw parameter, but '%s' is %s", use, name,
                   b->kind == BIND_LET ? "a let binding" : b->kind == BIND_OUT ? "an output" : "a scalar");
    } else if (!x->kernel) {
        diag_error(x->c, at, "%s is only defined inside a kernel (of its raw parameters)", use);
    } else {
        diag_error(x->c, at, "unknown name '%s'; %s needs a raw parameter of '%s'", name, use, x->kernel->name);
    }
    return -1;
}

/* A dimension d of shape(x, d) or index(d): an integer constant in [0, NNKC_MAX_DIMS). */
static bool dim_arg(Ctx *x, Expr *a, int *d)
{
    Expr *v = check(x, a);
    if (is_err(v))
        return false;
    if (!is_const(v) || !(type_is_int((Type)v->type) || v->type == T_WINT)) {
        diag_error(x->c, a->range, "a dimension is an integer constant (0 for the first)");
        return false;
    }
    int64_t n = v->value.v.i;
    if (type_info[v->type < T_NSCALAR ? v->type : T_I64].cls == CLASS_UINT)
        n = v->value.v.u > (uint64_t)INT64_MAX ? -1 : (int64_t)v->value.v.u;
    if (n < 0 || n >= NNKC_MAX_DIMS) {
        diag_error(x->c, a->range, "dimension %lld is out of range (arrays have at most %d dimensions)", (long long)n,
                   NNKC_MAX_DIMS);
        return false;
    }
    *d = (int)n;
    return true;
}

/* shape(x, d): the extent of raw parameter x along d; index(d): the
 * element's index along dimension d of the iteration space. */
static Expr *check_dim_call(Ctx *x, Expr *e)
{
    bool shape = e->name[0] == 's';
    int want = shape ? 2 : 1;
    if (e->args.n != want) {
        arity_error(x, e, shape ? "'shape'" : "'index'", want, want);
        return mk_error(x, e->range);
    }
    if (x->in_combine) {
        diag_error(x->c, e->range, "'%s' inside the combine function of reduce()", e->name);
        return mk_error(x, e->range);
    }
    int p = -1, d = 0;
    if (shape) {
        Expr *xa = e->args.items[0];
        if (xa->kind != E_NAME) {
            diag_error(x->c, xa->range, "shape(x, d) takes the name of a raw parameter first");
            return mk_error(x, e->range);
        }
        p = raw_param(x, xa->name, xa->range, "shape(x, d)");
    } else if (!x->kernel) {
        diag_error(x->c, e->range, "'index' is only defined inside a kernel");
        return mk_error(x, e->range);
    }
    if (!dim_arg(x, e->args.items[shape], &d) || (shape && p < 0))
        return mk_error(x, e->range);
    Expr *r = mk(x, shape ? E_RAWSHAPE : E_DIMIDX, T_I64, e->range);
    r->index = p;
    r->op = (uint16_t)d;
    r->vary = shape ? VARY_UNIFORM : VARY_ELEM;
    return r;
}

/* x[i] (flat, row-major over x's shape) or x[i, j, ...] (one index per
 * dimension of x): integer indices as i64; the element's type is x's. */
static Expr *check_index(Ctx *x, Expr *e)
{
    int p = raw_param(x, e->name, e->name_range, "indexing");
    List idx = {0};
    bool ok = p >= 0;
    if (x->in_combine) {
        diag_error(x->c, e->range, "a raw parameter inside the combine function of reduce()");
        ok = false;
    }
    if (e->args.n > NNKC_MAX_DIMS) {
        diag_error(x->c, e->range, "%d indices; arrays have at most %d dimensions", e->args.n, NNKC_MAX_DIMS);
        ok = false;
    }
    uint8_t vary = VARY_UNIFORM;
    for (int i = 0; i < e->args.n; i++) {
        Expr *a = check(x, e->args.items[i]);
        if (is_err(a)) {
            ok = false;
            continue;
        }
        if (!type_is_int((Type)a->type) && a->type != T_WINT) {
            diag_error(x->c, a->range, "an index is an integer, but this is %s; convert it, as i64(...)", describe(a));
            ok = false;
            continue;
        }
        a = convert(x, a, T_I64, false);
        if (a->vary > vary)
            vary = a->vary;
        list_push(x->c->arena, &idx, a);
    }
    if (!ok)
        return mk_error(x, e->range);
    const InstParam *ip = &x->inst->params[p];
    Expr *r = mk(x, E_RAWLOAD, ip->type, e->range);
    r->index = p;
    r->args = idx;
    r->vary = vary;
    return finish(x, r);
}

static void unknown_name(Ctx *x, Expr *e)
{
    const char *cands[256];
    int n = 0;
    for (Binding *b = x->scope; b && n < 200; b = b->next)
        cands[n++] = b->name;
    for (int i = 0; i < x->c->globals.cap && n < 255; i++) {
        Item *it = x->c->globals.vals[i];
        if (x->c->globals.keys[i] && it->kind == I_CONST)
            cands[n++] = it->name;
    }
    const char *s = diag_suggest(e->name, cands, n);
    if (s)
        diag_error(x->c, e->range, "unknown name '%s'; did you mean '%s'?", e->name, s);
    else
        diag_error(x->c, e->range, "unknown name '%s'", e->name);
}

static Expr *check_name(Ctx *x, Expr *e)
{
    Binding *b = lookup(x, e->name);
    if (b) {
        switch (b->kind) {
        case BIND_OUT:
            if (!b->value && b->param) { /* inout: the value it came in with */
                Expr *p = mk(x, E_PARAM, (Type)b->param->type, e->range);
                p->index = b->param->index;
                p->vary = b->param->vary;
                return p;
            }
            if (!b->value) {
                diag_error(x->c, e->range, "output '%s' is used before it is assigned", e->name);
                return mk_error(x, e->range);
            }
            return b->value;
        case BIND_PARAM: {
            if (x->inst && x->inst->params[b->value->index].raw) {
                diag_error(x->c, e->range, "'%s' is a raw parameter: read it by index, as %s[i] or %s[i, j]", e->name,
                           e->name, e->name);
                diag_note(x->c, b->decl, "'%s' is declared 'raw' here", e->name);
                return mk_error(x, e->range);
            }
            /* A fresh node per use, so carets point at each use. */
            Expr *p = mk(x, E_PARAM, (Type)b->value->type, e->range);
            p->index = b->value->index;
            p->vary = b->value->vary;
            return p;
        }
        default:
            return b->value;
        }
    }
    Item *it = global(x, e->name);
    if (it && it->kind == I_CONST) {
        Expr *v = check_const_item(x->c, it);
        if (is_err(v))
            return v;
        return mk_const(x, v->value, e->range);
    }
    if (it) {
        diag_error(x->c, e->range, "'%s' is a %s, not a value", e->name, it->kind == I_FUNC ? "function" : "kernel");
        return mk_error(x, e->range);
    }
    if (generic_lookup(x, e->name) != T_NONE || type_lookup(e->name, strlen(e->name)) != T_NONE) {
        diag_error(x->c, e->range, "'%s' is a type, not a value; convert with %s(value)", e->name, e->name);
        return mk_error(x, e->range);
    }
    if (builtin_lookup(e->name) != B_COUNT || reducer_lookup(e->name, 1) != R_COUNT) {
        diag_error(x->c, e->range, "'%s' is a function; call it as %s(...)", e->name, e->name);
        return mk_error(x, e->range);
    }
    unknown_name(x, e);
    return mk_error(x, e->range);
}

static Expr *check(Ctx *x, Expr *e)
{
    if (expr_too_deep(e))
        return mk_error(x, e->range); /* reported by the parser */
    switch ((ExprKind)e->kind) {
    case E_ERROR:
        return mk_error(x, e->range);
    case E_INT:
    case E_FLOAT:
    case E_BOOL: {
        Value v = e->value;
        if (v.type == T_WINT && v.v.u > (uint64_t)INT64_MAX)
            v.type = T_U64; /* only u64 holds it */
        return mk_const(x, v, e->range);
    }
    case E_NAME:
        return check_name(x, e);
    case E_IDX:
    case E_N: {
        const char *kw = e->kind == E_IDX ? "idx" : "n";
        if (!x->kernel) {
            diag_error(x->c, e->range, "'%s' is only defined inside a kernel", kw);
            return mk_error(x, e->range);
        }
        if (e->kind == E_N && x->kernel->kind != I_REDUCTION) {
            diag_error(x->c, e->range, "'n' is only defined in reduction kernels (the size of the reduced slice)");
            diag_note_plain(x->c, "'idx' is the element's flat index in any kernel");
            return mk_error(x, e->range);
        }
        if (x->in_combine) {
            diag_error(x->c, e->range, "'%s' inside the combine function of reduce()", kw);
            return mk_error(x, e->range);
        }
        Expr *r = mk(x, (ExprKind)e->kind, T_I64, e->range);
        r->vary = e->kind == E_IDX ? VARY_ELEM : VARY_UNIFORM;
        return r;
    }
    case E_UNARY:
        return check_unary(x, e);
    case E_BINARY:
        return check_binary(x, e);
    case E_COND: {
        Expr *c = check(x, e->a), *a = check(x, e->b), *b = check(x, e->c);
        return select_node(x, e->range, c, a, b);
    }
    case E_CALL:
        return check_call(x, e);
    case E_INDEX:
        return check_index(x, e);
    case E_LAMBDA:
        diag_error(x->c, e->range, "a combine function '|a, b| ...' may only be the third argument of reduce()");
        return mk_error(x, e->range);
    case E_TUPLE:
        diag_error(x->c, e->range, "a tuple may only be the state, the identity or the combine result of reduce()");
        return mk_error(x, e->range);
    default:
        nnkc_assert(!"unexpected node in source tree");
        return mk_error(x, e->range);
    }
}

/* ---- consts and defaults ------------------------------------------------------ */

static Expr *check_const_item(Compiler *c, Item *it)
{
    if (it->state == 2)
        return it->checked;
    if (it->state == 1) {
        diag_error(c, it->name_range, "const '%s' depends on itself", it->name);
        it->checked = arena_alloc(c->arena, sizeof(Expr));
        it->checked->kind = E_ERROR;
        it->checked->type = T_ERROR;
        it->checked->range = it->name_range;
        return it->checked;
    }
    /* a const naming one defined after it is checked inside it: a chain
     * of those written backwards recursed once for each (20,000 overflowed
     * the stack), now bounded as expressions nest */
    if (c->const_depth >= NNKC_MAX_NESTING) {
        diag_error(c, it->name_range, "consts defined in terms of later consts nested too deeply (the limit is %d levels)",
                   NNKC_MAX_NESTING);
        return mk_error(&(Ctx){.c = c}, it->name_range);
    }
    it->state = 1;
    long nodes = 0;
    Ctx x = {.c = c, .nodes = &nodes};
    c->const_depth++;
    Expr *v = check(&x, it->value);
    c->const_depth--;
    if (!is_err(v) && it->ty.present) {
        if (it->ty.tensor) {
            diag_error(c, it->ty.range, "a const is a scalar; write '%s: %s'", it->name, it->ty.name);
            v = mk_error(&x, it->value->range);
        } else {
            Type t = resolve_type(&x, &it->ty, true);
            v = t == T_ERROR ? mk_error(&x, it->value->range) : convert_named(&x, v, t, true);
        }
    }
    if (!is_err(v) && !is_const(v)) {
        diag_error(c, it->value->range, "the value of const '%s' is not a compile-time constant", it->name);
        v = mk_error(&x, it->value->range);
    }
    if (it->state == 1) { /* not replaced by a cycle error above */
        it->checked = v;
        it->state = 2;
    }
    return it->checked;
}

/* ---- kernels -------------------------------------------------------------------- */

static bool param_is_tensor(const Param *p) { return p->ty.present && p->ty.tensor; }

/* The word before a parameter's name: 'inout' on a tensor parameter of an
 * elementwise kernel, 'raw' on a tensor parameter of any kernel. */
static bool check_param_kind(Compiler *c, Item *k, Param *p, bool output)
{
    static const char *const kinds[] = {"inout", "raw"};
    if (strcmp(p->mod, "raw") == 0) {
        if (output) {
            diag_error(c, p->mod_range, "'raw' belongs to a parameter, not an output (outputs are written at their position)");
            return false;
        }
        p->raw = true;
        if (p->ty.present && !p->ty.tensor) {
            diag_error(c, p->ty.range, "a raw parameter is a tensor; write 'raw %s: %s[]'", p->name, p->ty.name);
            return false;
        }
        return true;
    }
    if (strcmp(p->mod, "inout") != 0) {
        const char *sug = diag_suggest(p->mod, kinds, 2);
        if (sug)
            diag_error(c, p->mod_range, "unknown parameter kind '%s'; did you mean '%s'?", p->mod, sug);
        else
            diag_error(c, p->mod_range, "unknown parameter kind '%s'", p->mod);
        diag_note_plain(c, "a parameter is 'NAME: TYPE', 'inout NAME: T[]' to update a tensor in place, or 'raw NAME: T[]' to read one by index");
        return false;
    }
    if (output) {
        diag_error(c, p->mod_range, "'inout' belongs to a parameter, not an output; write 'inout %s' among the parameters", p->name);
        return false;
    }
    /* (an inout parameter even when misused: no follow-on errors about
     * assigning a parameter or a kernel without outputs) */
    p->inout = true;
    if (p->ty.present && !p->ty.tensor) {
        diag_error(c, p->ty.range, "an inout parameter is a tensor; write 'inout %s: %s[]'", p->name, p->ty.name);
        if (k->kind != I_ELEMENTWISE)
            diag_note_plain(c, "in a reduction it has the full shape, read by the reducers and written by the epilogue; "
                               "a reduced-shape statistic is an output, updated in place by an elementwise kernel");
        return false;
    }
    return true;
}

/* Checks the parts of a kernel that do not depend on type arguments. */
static bool check_kernel_header(Compiler *c, Item *k)
{
    bool ok = check_generics(c, &k->generics);
    int ntensor = 0, nscalar = 0;
    for (int pass = 0; pass < 2; pass++) {
        const List *l = pass ? &k->outputs : &k->params;
        for (int i = 0; i < l->n; i++) {
            Param *p = l->items[i];
            if (!p->ty.present) {
                diag_error(c, p->range, "%s '%s' needs a type, as in '%s: f32%s'", pass ? "output" : "parameter", p->name,
                           p->name, pass ? "[]" : "[]");
                ok = false;
            }
            if (p->mod && !check_param_kind(c, k, p, pass))
                ok = false;
            if (p->dflt && (pass || param_is_tensor(p))) {
                diag_error(c, p->dflt->range, "only scalar parameters can have a default value");
                ok = false;
            }
            if (pass && p->ty.present && !p->ty.tensor && k->kind == I_ELEMENTWISE) {
                diag_error(c, p->ty.range, "outputs of an elementwise kernel are tensors; write '%s: %s[]'", p->name,
                           p->ty.name);
                ok = false;
            }
            /* The runtime's plan has room for this many of each; the
             * first one past the limit is the one to point at. */
            bool tensor = pass || param_is_tensor(p);
            if (tensor && ++ntensor == NNKC_MAX_PARAMS + 1) {
                diag_error(c, p->range, "kernel '%s' has more than %d tensor parameters and outputs", k->name,
                           NNKC_MAX_PARAMS);
                ok = false;
            }
            if (!tensor && ++nscalar == NNKC_MAX_SCALARS + 1) {
                diag_error(c, p->range, "kernel '%s' has more than %d scalar parameters", k->name, NNKC_MAX_SCALARS);
                ok = false;
            }
            for (int pass2 = 0; pass2 <= pass; pass2++) {
                const List *l2 = pass2 ? &k->outputs : &k->params;
                int lim = pass2 == pass ? i : l2->n;
                for (int j = 0; j < lim; j++) {
                    const Param *q = l2->items[j];
                    if (q->name == p->name) {
                        diag_error(c, p->range, "'%s' is declared twice in the signature of '%s'", p->name, k->name);
                        diag_note(c, q->range, "first declared here");
                        ok = false;
                    }
                }
            }
        }
    }
    int nraw = 0;
    for (int i = 0; i < k->params.n; i++) {
        Param *p = k->params.items[i];
        if (p->raw && ++nraw == NNKC_MAX_RAW + 1) {
            diag_error(c, p->range, "kernel '%s' has more than %d raw parameters", k->name, NNKC_MAX_RAW);
            ok = false;
        }
    }
    /* An inout parameter is an input and, after the declared outputs, an
     * output of the same name bound to the same array (the runtime passes
     * it twice; the exact alias is element for element). */
    int ninout = 0;
    for (int i = 0, n = k->params.n; i < n; i++) {
        Param *p = k->params.items[i];
        if (!p->inout)
            continue;
        Param *o = arena_alloc(c->arena, sizeof *o);
        *o = *p;
        o->inout = false;
        o->inout_of = p;
        o->mod = NULL;
        list_push(c->arena, &k->outputs, o);
        /* it is a second tensor operand: within the plan's limit too */
        if (++ntensor == NNKC_MAX_PARAMS + 1) {
            diag_error(c, p->range, "kernel '%s' has more than %d tensor parameters and outputs (an inout parameter counts twice)",
                       k->name, NNKC_MAX_PARAMS);
            ok = false;
        }
        ninout++;
    }
    if (k->outputs.n == 0) {
        diag_error(c, k->name_range, "kernel '%s' has no outputs", k->name);
        diag_note_plain(c, "outputs are declared after the parameters, as in '-> (y: f32[])', or a parameter is 'inout'");
        ok = false;
    }
    (void)ninout;
    return ok;
}

static const char *instance_name(Compiler *c, Item *k, const Type *targs, bool display)
{
    if (k->generics.n == 0)
        return k->name;
    Buf b = {0};
    buf_puts(&b, k->name);
    for (int i = 0; i < k->generics.n; i++)
        buf_printf(&b, "%s%s", display ? (i ? ", " : "<") : "_", type_name(targs[i]));
    if (display)
        buf_puts(&b, ">");
    const char *s = arena_strdup(c->arena, b.data);
    buf_free(&b);
    return s;
}

/* let (a, b, ...) = reduce(...): each name takes one value of the state. */
static void check_let_tuple(Ctx *x, Stmt *s)
{
    Compiler *c = x->c;
    for (int i = 0; i < s->names.n; i++) {
        const Expr *nm = s->names.items[i];
        Binding *b = lookup(x, nm->name);
        for (int j = 0; j < i && !b; j++)
            if (((Expr *)s->names.items[j])->name == nm->name) {
                diag_error(c, nm->range, "'%s' is bound twice in this let", nm->name);
                break;
            }
        if (b) {
            const char *what = b->kind == BIND_LET ? "a let binding" : b->kind == BIND_OUT ? "an output" : "a parameter";
            diag_error(c, nm->range, "'%s' is already %s", nm->name, what);
            diag_note(c, b->decl, "declared here");
        }
    }
    Expr *members[NNKC_MAX_TUPLE];
    bool ok = false;
    if (is_tuple_reduce(s->value)) {
        ok = check_tuple_reduce(x, s->value, s->names.n, s->name_range, members);
    } else if (!is_err(check(x, s->value))) {
        diag_error(c, s->value->range, "only a reduce() with a tuple state gives several values to bind");
        diag_note_plain(c, "write 'let (a, b) = reduce((x, y), (0, 0), |(a1, a2), (b1, b2)| (a1 + b1, a2 + b2));'");
    }
    for (int i = 0; i < s->names.n; i++) {
        const Expr *nm = s->names.items[i];
        bind(x, nm->name, BIND_LET, nm->range, ok ? members[i] : mk_error(x, nm->range));
    }
}

Instance *sema_instance(Compiler *c, Item *k, const Type *targs, const Type *storage)
{
    Instance *in = arena_alloc(c->arena, sizeof *in);
    in->kernel = k;
    in->reduction = k->kind == I_REDUCTION;
    in->ntargs = k->generics.n;
    for (int i = 0; i < k->generics.n && i < NNKC_MAX_GENERICS; i++)
        in->targs[i] = targs[i];
    in->name = instance_name(c, k, targs, false);
    in->display = instance_name(c, k, targs, true);
    in->nparams = k->params.n;
    in->nouts = k->outputs.n;
    in->params = arena_alloc(c->arena, sizeof(InstParam) * (size_t)(k->params.n + 1));
    in->outs = arena_alloc(c->arena, sizeof(InstParam) * (size_t)(k->outputs.n + 1));
    in->values = arena_alloc(c->arena, sizeof(Expr *) * (size_t)(k->outputs.n + 1));

    int errs = c->error_events;
    if (k->generics.n) {
        c->context_msg = arena_printf(c->arena, "in instance '%s'", in->display);
        c->context_range = k->name_range;
    }
    long nodes = 0;
    Ctx x = {.c = c, .kernel = k, .inst = in, .generics = &k->generics, .gtypes = in->targs, .nodes = &nodes};
    int si = 0, nraw_seen = 0;
    for (int i = 0; i < k->params.n; i++) {
        Param *p = k->params.items[i];
        InstParam *ip = &in->params[i];
        ip->name = p->name;
        ip->tensor = param_is_tensor(p);
        ip->inout = p->inout;
        ip->raw = p->raw;
        ip->raw_slot = p->raw ? nraw_seen++ : -1;
        ip->type = p->ty.present ? resolve_type(&x, &p->ty, true) : T_ERROR;
        ip->storage = ip->type;
        if (ip->tensor && storage && storage[si] != T_NONE)
            ip->storage = storage[si];
        si += ip->tensor;
        Expr *pv = mk(&x, E_PARAM, ip->type, p->range);
        pv->index = i;
        pv->vary = ip->tensor && !ip->raw ? VARY_ELEM : VARY_UNIFORM;
        bind(&x, p->name, BIND_PARAM, p->range, pv);
        if (p->dflt && !ip->tensor && ip->type != T_ERROR) {
            Ctx dx = {.c = c, .generics = &k->generics, .gtypes = in->targs};
            Expr *d = check(&dx, p->dflt);
            if (!is_err(d)) {
                d = convert(&dx, d, ip->type, true);
                if (!is_const(d)) {
                    diag_error(c, p->dflt->range, "the default of '%s' is not a compile-time constant", p->name);
                } else {
                    ip->has_default = true;
                    ip->dflt = d->value;
                }
            }
        }
    }
    Binding *outs[NNKC_MAX_PARAMS * 2 + 1];
    int nouts_bound = 0;
    for (int i = 0; i < k->outputs.n; i++) {
        Param *p = k->outputs.items[i];
        InstParam *op = &in->outs[i];
        op->name = p->name;
        /* elementwise outputs are tensors (a missing [] is reported once) */
        op->tensor = param_is_tensor(p) || k->kind == I_ELEMENTWISE;
        op->type = p->ty.present ? resolve_type(&x, &p->ty, true) : T_ERROR;
        op->storage = op->type;
        if (storage && storage[si] != T_NONE)
            op->storage = storage[si];
        si++;
        Expr *inval = NULL;
        if (p->inout_of) {
            Binding *pb = lookup(&x, p->name);
            nnkc_assert(pb && pb->kind == BIND_PARAM);
            inval = pb->value;
            op->inout = true;
        }
        Binding *b = bind(&x, p->name, BIND_OUT, p->range, NULL);
        b->index = i;
        b->param = inval;
        if (nouts_bound < (int)(sizeof outs / sizeof *outs))
            outs[nouts_bound++] = b;
    }
    for (int i = 0; i < k->body.n; i++) {
        Stmt *s = k->body.items[i];
        if (s->kind == S_ERROR)
            continue;
        if (s->kind == S_LET && s->names.n) {
            check_let_tuple(&x, s);
            continue;
        }
        Binding *b = lookup(&x, s->name);
        if (s->kind == S_LET) {
            if (b) {
                const char *what = b->kind == BIND_LET ? "a let binding" : b->kind == BIND_OUT ? "an output" : "a parameter";
                diag_error(c, s->name_range, "'%s' is already %s", s->name, what);
                diag_note(c, b->decl, "declared here");
            }
            Expr *v = check(&x, s->value);
            if (!is_err(v) && s->ty.present) {
                if (s->ty.tensor) {
                    diag_error(c, s->ty.range, "let bindings are element values; write '%s: %s'", s->name, s->ty.name);
                    v = mk_error(&x, s->value->range);
                } else {
                    Type t = resolve_type(&x, &s->ty, true);
                    v = t == T_ERROR ? mk_error(&x, s->value->range) : convert_named(&x, v, t, true);
                }
            }
            bind(&x, s->name, BIND_LET, s->name_range, v);
            continue;
        }
        /* An output assignment. */
        Expr *v = check(&x, s->value);
        if (!b || b->kind != BIND_OUT) {
            if (b && b->kind == BIND_PARAM) {
                diag_error(c, s->name_range, "cannot assign to parameter '%s'; parameters are read-only", s->name);
            } else if (b && b->kind == BIND_LET) {
                diag_error(c, s->name_range, "cannot assign to '%s': let bindings are immutable", s->name);
                diag_note(c, b->decl, "'%s' is bound here", s->name);
            } else {
                const char *cands[NNKC_MAX_PARAMS * 2 + 1];
                for (int j = 0; j < nouts_bound; j++)
                    cands[j] = outs[j]->name;
                const char *sug = diag_suggest(s->name, cands, nouts_bound);
                if (sug)
                    diag_error(c, s->name_range, "'%s' is not an output of '%s'; did you mean '%s'?", s->name, k->name, sug);
                else
                    diag_error(c, s->name_range, "'%s' is not an output of '%s'", s->name, k->name);
                diag_note_plain(c, "new names are introduced with 'let %s = ...;'", s->name);
            }
            continue;
        }
        if (b->value) {
            diag_error(c, s->name_range, "output '%s' is assigned twice", s->name);
            diag_note(c, b->assigned, "first assigned here");
            continue;
        }
        InstParam *op = &in->outs[b->index];
        if (!is_err(v) && !op->tensor && v->vary == VARY_ELEM) {
            const Expr *l = elem_leaf(v);
            const char *what = l && l->kind == E_PARAM ? in->params[l->index].name : "idx";
            diag_error(c, l ? l->range : v->range,
                       "output '%s' has the reduced shape, so it can use '%s' only inside a reducer", s->name, what);
            diag_note(c, b->decl, "'%s' is declared here without '[]'", s->name);
            v = mk_error(&x, v->range);
        }
        if (!is_err(v) && op->type != T_ERROR)
            v = convert(&x, v, op->type, true);
        b->value = stored_value(&x, v, op);
        b->assigned = s->name_range;
        in->values[b->index] = v;
    }
    bool lost_stmt = false;
    for (int i = 0; i < k->body.n; i++)
        lost_stmt |= ((Stmt *)k->body.items[i])->kind == S_ERROR;
    for (int i = 0; i < nouts_bound && !lost_stmt; i++) {
        if (!outs[i]->value && outs[i]->param) {
            diag_error(c, k->name_range, "inout parameter '%s' of '%s' is never assigned", outs[i]->name, k->name);
            diag_note(c, outs[i]->decl, "'%s' is declared here; without 'inout' it is only read", outs[i]->name);
            in->values[outs[i]->index] = mk_error(&x, outs[i]->decl);
        } else if (!outs[i]->value) {
            diag_error(c, k->name_range, "output '%s' of '%s' is never assigned", outs[i]->name, k->name);
            diag_note(c, outs[i]->decl, "'%s' is declared here", outs[i]->name);
            in->values[outs[i]->index] = mk_error(&x, outs[i]->decl);
        }
    }
    c->context_msg = NULL;
    return c->error_events > errs ? NULL : in;
}

Item *sema_find_kernel(Compiler *c, const char *name)
{
    Item *it = map_get(&c->globals, intern(c->strings, name, strlen(name)));
    return it && (it->kind == I_ELEMENTWISE || it->kind == I_REDUCTION) ? it : NULL;
}

/* ---- global names, kernel headers, instantiate lines ----------------------------- */

static void declare_globals(Compiler *c)
{
    for (int i = 0; i < c->items.n; i++) {
        Item *it = c->items.items[i];
        if (it->kind == I_IMPORT || it->kind == I_INSTANTIATE)
            continue;
        Item *prev = map_get(&c->globals, it->name);
        if (prev) {
            diag_error(c, it->name_range, "redefinition of '%s'", it->name);
            diag_note(c, prev->name_range, "previous definition is here");
            continue;
        }
        bool is_kernel = it->kind == I_ELEMENTWISE || it->kind == I_REDUCTION;
        if (it->kind == I_FUNC && (builtin_lookup(it->name) != B_COUNT || reducer_lookup(it->name, 1) != R_COUNT)) {
            diag_error(c, it->name_range, "'%s' is a built-in function and cannot be redefined", it->name);
            continue;
        }
        NameKind nk = is_kernel ? name_reserved(it->name) : NK_NONE;
        if (nk != NK_NONE) {
            /* A kernel's name is a symbol of the generated C and its
             * header: it cannot be renamed, so it must not clash. */
            diag_error(c, it->name_range, "'%s' cannot name a kernel: it is %s", it->name, name_kind_text(nk));
            continue;
        }
        map_put(c->arena, &c->globals, it->name, it);
        if (is_kernel)
            list_push(c->arena, &c->kernels, it);
    }
}

/* Whether a kernel named `j` would define a C symbol of kernel `k`:
 * j is k followed by "_" and type names (an instance name of k when it has
 * that many type variables, counting j's own), or by an instance name and
 * one of the entry points' suffixes (_strided, _cuda, _run). */
static bool kernel_symbols_clash(const Item *k, const Item *j, const char **what)
{
    size_t n = strlen(k->name);
    if (strncmp(j->name, k->name, n) != 0 || j->name[n] != '_')
        return false;
    int ntypes = 0;
    const char *suffix = NULL;
    for (const char *p = j->name + n + 1; *p;) {
        const char *e = strchr(p, '_');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (type_lookup(p, len) != T_NONE && !suffix)
            ntypes++;
        else if (!e && (strncmp(p, "strided", len) == 0 || strncmp(p, "cuda", len) == 0 ||
                        strncmp(p, "run", len) == 0) && len > 2)
            suffix = p;
        else
            return false;
        p = e ? e + 1 : p + len;
    }
    if (suffix) {
        *what = suffix;
        return ntypes == k->generics.n && j->generics.n == 0;
    }
    *what = NULL;
    return ntypes > 0 && ntypes + j->generics.n == k->generics.n;
}

/* Kernel names are C symbols, with their instances' and entry points'
 * names derived from them: two kernels must not derive the same one. */
static void check_kernel_symbols(Compiler *c)
{
    /* k is a prefix of j ending before a '_': look the prefixes up */
    for (int b = 0; b < c->kernels.n; b++) {
        Item *j = c->kernels.items[b];
        for (const char *u = strchr(j->name, '_'); u; u = strchr(u + 1, '_')) {
            Item *k = u > j->name ? map_get(&c->globals, intern(c->strings, j->name, (size_t)(u - j->name))) : NULL;
            const char *what;
            if (!k || (k->kind != I_ELEMENTWISE && k->kind != I_REDUCTION) || !kernel_symbols_clash(k, j, &what))
                continue;
            diag_error(c, j->name_range, "kernel name '%s' is also the C name of %s of kernel '%s'", j->name,
                       what ? "an entry point" : "an instance", k->name);
            diag_note(c, k->name_range, "'%s' is defined here", k->name);
        }
    }
}

/* instantiate lines: resolve each request against its kernel. */
static void collect_requests(Compiler *c)
{
    for (int i = 0; i < c->items.n; i++) {
        Item *it = c->items.items[i];
        if (it->kind != I_INSTANTIATE)
            continue;
        for (int j = 0; j < it->insts.n; j++) {
            InstSpec *s = it->insts.items[j];
            Item *k = map_get(&c->globals, s->name);
            if (!k || (k->kind != I_ELEMENTWISE && k->kind != I_REDUCTION)) {
                const char **cands = arena_alloc(c->arena, sizeof(char *) * (size_t)(c->kernels.n + 1));
                for (int m = 0; m < c->kernels.n; m++)
                    cands[m] = ((Item *)c->kernels.items[m])->name;
                const char *sug = diag_suggest(s->name, cands, c->kernels.n);
                if (k)
                    diag_error(c, s->name_range, "'%s' is not a kernel", s->name);
                else if (sug)
                    diag_error(c, s->name_range, "unknown kernel '%s'; did you mean '%s'?", s->name, sug);
                else
                    diag_error(c, s->name_range, "unknown kernel '%s'", s->name);
                continue;
            }
            if (k->generics.n == 0 && s->types.n == 0)
                continue;
            if (s->types.n != k->generics.n) {
                if (k->generics.n == 0)
                    diag_error(c, s->range, "'%s' is not generic; it takes no type arguments", k->name);
                else
                    diag_error(c, s->range, "'%s' takes %d type argument%s, but %d %s given", k->name, k->generics.n,
                               k->generics.n == 1 ? "" : "s", s->types.n, s->types.n == 1 ? "was" : "were");
                diag_note(c, k->name_range, "'%s' is declared here", k->name);
                continue;
            }
            Type *req = arena_alloc(c->arena, sizeof(Type) * NNKC_MAX_GENERICS);
            bool ok = true;
            for (int m = 0; m < s->types.n; m++) {
                TypeRef *tr = s->types.items[m];
                Generic *g = k->generics.items[m];
                if (tr->scalar == T_NONE || tr->tensor) {
                    diag_error(c, tr->range, "'%s%s' is not a scalar type", tr->name, tr->tensor ? "[]" : "");
                    ok = false;
                    continue;
                }
                if (g->cls != CLASS_NONE && !type_in_class(tr->scalar, g->cls)) {
                    diag_error(c, tr->range, "type '%s' does not satisfy class '%s' of type variable '%s' of '%s'",
                               tr->name, class_name(g->cls), g->name, k->name);
                    diag_note(c, g->cls_name ? g->cls_range : g->range, "'%s' is declared here", g->name);
                    ok = false;
                }
                req[m] = tr->scalar;
            }
            if (ok)
                list_push(c->arena, &k->requests, req);
        }
    }
}

void sema_check_items(Compiler *c)
{
    declare_globals(c);
    for (int i = 0; i < c->items.n; i++) {
        Item *it = c->items.items[i];
        if (it->kind == I_CONST)
            check_const_item(c, it);
        else if (it->kind == I_FUNC)
            check_generics(c, &it->generics);
    }
    for (int i = 0; i < c->kernels.n; i++) {
        Item *k = c->kernels.items[i];
        k->state = check_kernel_header(c, k) ? 2 : -1;
    }
    check_kernel_symbols(c);
    collect_requests(c);
}

/* ---- instantiation ----------------------------------------------------------------- */

static bool same_types(const Type *a, const Type *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

static void add_instance(Compiler *c, Item *k, const Type *targs)
{
    for (int i = 0; i < k->made.n; i++) {
        Instance *in = k->made.items[i];
        if (same_types(in->targs, targs, k->generics.n))
            return;
    }
    Instance *in = sema_instance(c, k, targs, NULL);
    if (in) {
        list_push(c->arena, &c->instances, in);
        list_push(c->arena, &k->made, in);
    }
}

/* -T: every assignment of the listed types to the type variables that
 * satisfies their classes, in the order of the list. */
static void instantiate_from_list(Compiler *c, Item *k, Type *cur, int depth, int *made)
{
    if (depth == k->generics.n) {
        add_instance(c, k, cur);
        (*made)++;
        return;
    }
    Generic *g = k->generics.items[depth];
    for (int i = 0; i < c->opt.ntypes; i++) {
        if (!type_in_class(c->opt.types[i], g->cls))
            continue;
        cur[depth] = c->opt.types[i];
        instantiate_from_list(c, k, cur, depth + 1, made);
    }
}

/* A function no instance called is still checked for its names: its
 * parameters get the error type, which silences every type error. */
static void check_unused_func(Compiler *c, Item *f)
{
    long nodes = 0;
    Ctx x = {.c = c, .generics = &f->generics, .nodes = &nodes};
    Type gt[NNKC_MAX_GENERICS];
    for (int i = 0; i < NNKC_MAX_GENERICS; i++)
        gt[i] = T_ERROR;
    x.gtypes = gt;
    for (int i = 0; i < f->params.n; i++) {
        Param *p = f->params.items[i];
        if (p->ty.present)
            resolve_type(&x, &p->ty, true);
        bind(&x, p->name, BIND_FPARAM, p->range, mk_error(&x, p->range));
    }
    x.inline_stack[0] = f;
    x.inline_sites[0] = f->name_range;
    x.ninline = 1;
    /* Reducers are legal in functions called from reduction kernels. */
    Item fake = {.kind = I_REDUCTION, .name = f->name, .name_range = f->name_range};
    x.kernel = &fake;
    check(&x, f->value);
}

/* Checks the instance k<targs> as a trial: when it does not type-check,
 * everything it reported is taken back and *first is its first error
 * (NULL when it was a duplicate); returns the instance or NULL. */
static Instance *trial_instance(Compiler *c, Item *k, const Type *targs, const Diag **first)
{
    int from = c->diags.n, errs = c->nerrors, warns = c->nwarnings, events = c->error_events;
    int suppress = c->suppress;
    Instance *in = sema_instance(c, k, targs, NULL);
    if (first)
        *first = NULL;
    if (in)
        return in;
    for (int i = from; first && !*first && i < c->diags.n; i++)
        if (((Diag *)c->diags.items[i])->level == DIAG_ERROR)
            *first = c->diags.items[i];
    c->diags.n = from;
    c->nerrors = errs;
    c->nwarnings = warns;
    c->error_events = events;
    c->suppress = suppress;
    return NULL;
}

/* A generic kernel no instantiate line or -T asks for (docs/language.md,
 * Generics): its default instance is checked, and emitted when it
 * type-checks.  When it does not, the kernel is still valid (a JIT call
 * may bind other types): errors that hold for every type (unknown names,
 * a body checked with every type variable an error type) are reported,
 * the type errors of the default become a warning saying it was skipped.
 * Returns whether it was skipped. */
static bool default_instance(Compiler *c, Item *k, bool emit)
{
    Type cur[NNKC_MAX_GENERICS];
    for (int g = 0; g < k->generics.n; g++)
        cur[g] = class_default(((Generic *)k->generics.items[g])->cls);
    const Diag *why = NULL;
    Instance *in = trial_instance(c, k, cur, &why);
    if (in) {
        if (emit) {
            list_push(c->arena, &c->instances, in);
            list_push(c->arena, &k->made, in);
        }
        return false;
    }
    Type any[NNKC_MAX_GENERICS];
    for (int g = 0; g < NNKC_MAX_GENERICS; g++)
        any[g] = T_ERROR;
    if (!trial_instance(c, k, any, NULL)) {
        sema_instance(c, k, cur, NULL); /* report them, with the instance's note */
        return false;
    }
    const char *display = instance_name(c, k, cur, true);
    /* the types of the class of a single type variable that would do */
    Buf ok = {0};
    const char *some = NULL;
    int nok = 0;
    if (k->generics.n == 1) {
        for (Type t = 0; t < T_NSCALAR; t++) {
            if (t == cur[0] || !type_in_class(t, ((Generic *)k->generics.items[0])->cls))
                continue;
            if (trial_instance(c, k, &t, NULL)) {
                buf_printf(&ok, "%s%s", nok++ ? ", " : "", type_name(t));
                some = !some || t == T_I32 ? type_name(t) : some;
            }
        }
        if (nok == 0) {
            /* no call can ever bind it: the program is wrong */
            sema_instance(c, k, cur, NULL);
            diag_note_plain(c, "no type of class '%s' type-checks", class_name(((Generic *)k->generics.items[0])->cls));
            return false;
        }
    }
    if (emit)
        diag_warning(c, k->name_range, "'%s', the default instance of generic kernel '%s', does not type-check; it is "
                     "not emitted", display, k->name);
    else
        diag_warning(c, k->name_range, "'%s', the default instance of generic kernel '%s', does not type-check",
                     display, k->name);
    if (why && why->has_range)
        diag_note(c, why->range, "%s", why->msg);
    else if (why)
        diag_note_plain(c, "%s", why->msg);
    if (nok)
        diag_note_plain(c, "it type-checks for %s: name the types with 'instantiate %s<%s>;' or -T", ok.data, k->name,
                        some);
    else
        diag_note_plain(c, "name the types with 'instantiate %s<...>;' or -T", k->name);
    buf_free(&ok);
    return true;
}

void sema_instantiate_all(Compiler *c)
{
    Item *first_skipped = NULL;
    for (int i = 0; i < c->kernels.n; i++) {
        Item *k = c->kernels.items[i];
        Type cur[NNKC_MAX_GENERICS];
        if (k->generics.n == 0) {
            add_instance(c, k, cur);
            continue;
        }
        int made = 0;
        for (int r = 0; r < k->requests.n; r++) {
            add_instance(c, k, k->requests.items[r]);
            made++;
        }
        if (c->opt.ntypes)
            instantiate_from_list(c, k, cur, 0, &made);
        if (made == 0) {
            if (c->opt.ntypes) {
                /* -T named no type this kernel accepts: check, emit nothing. */
                diag_warning(c, k->name_range, "no type in -T fits the type variables of '%s'; it is not instantiated",
                             k->name);
                default_instance(c, k, false);
                if (!first_skipped) /* nothing emitted for it, as a skipped default */
                    first_skipped = k;
            } else if (default_instance(c, k, true) && !first_skipped) {
                first_skipped = k;
            }
        }
    }
    c->skipped_default = first_skipped;
    for (int i = 0; i < c->items.n; i++) {
        Item *it = c->items.items[i];
        if (it->kind == I_FUNC && it->state != 2)
            check_unused_func(c, it);
    }
}
