/* lower.c - from the typed tree of an instance to its IR.
 *
 * The IR of an instance is an expression DAG in an array, operands before
 * users, built by hash-consing: a node equal to an existing one is that
 * node, which is common-subexpression elimination; nodes whose operands
 * are constants fold at construction (fold.c, the back ends' semantics);
 * only what the outputs reach is built, which is dead-code elimination.
 * Each node records its level (constant, uniform, per reduced row, per
 * element) and the highest reducer phase it depends on; the reducers are
 * numbered into phases: a reducer whose argument uses another reducer's
 * value runs in a later pass over the data (language.md §4).
 */
#include "nnkc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Slot {
    IrNode key;
    int32_t id;
} Slot;

typedef struct Cse {
    Slot *slots;
    int cap, n;
} Cse;

typedef struct Lower {
    Compiler *c;
    IrKernel *k;
    Cse cse;
    const Expr **memo_keys; /* typed node -> IR node, for shared lets */
    int32_t *memo_vals;
    int memo_cap, memo_n;
    int *scalar_index;      /* parameter -> scalar slot */
    int *tensor_index;      /* parameter -> operand */
    Range at;               /* the typed node being lowered, for ir_verify */
} Lower;

static uint64_t node_hash(const IrNode *n)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)n;
    /* Hash the fields that define the value; `uses` is bookkeeping. */
    for (size_t i = 0; i < offsetof(IrNode, uses); i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static bool node_eq(const IrNode *a, const IrNode *b)
{
    return memcmp(a, b, offsetof(IrNode, uses)) == 0;
}

static int32_t push_node(Lower *L, IrNode n)
{
    IrKernel *k = L->k;
    if (k->nnodes == k->cap) {
        int cap = k->cap ? k->cap * 2 : 64;
        IrNode *nodes = arena_alloc(L->c->arena, sizeof(IrNode) * (size_t)cap);
        if (k->nnodes)
            memcpy(nodes, k->nodes, sizeof(IrNode) * (size_t)k->nnodes);
        Range *ranges = arena_alloc(L->c->arena, sizeof(Range) * (size_t)cap);
        if (k->nnodes)
            memcpy(ranges, k->ranges, sizeof(Range) * (size_t)k->nnodes);
        k->nodes = nodes;
        k->ranges = ranges;
        k->cap = cap;
    }
    k->ranges[k->nnodes] = L->at;
    k->nodes[k->nnodes] = n;
    return k->nnodes++;
}

/* Interns a node: returns the existing equal node or appends it. */
static int32_t intern_node(Lower *L, IrNode n)
{
    Cse *t = &L->cse;
    if (2 * (t->n + 1) > t->cap) {
        int cap = t->cap ? t->cap * 2 : 256;
        Slot *slots = arena_alloc(L->c->arena, sizeof(Slot) * (size_t)cap);
        for (int i = 0; i < cap; i++)
            slots[i].id = -1;
        for (int i = 0; i < t->cap; i++) {
            if (t->slots[i].id < 0)
                continue;
            size_t j = node_hash(&t->slots[i].key) & (size_t)(cap - 1);
            while (slots[j].id >= 0)
                j = (j + 1) & (size_t)(cap - 1);
            slots[j] = t->slots[i];
        }
        t->slots = slots;
        t->cap = cap;
    }
    size_t j = node_hash(&n) & (size_t)(t->cap - 1);
    while (t->slots[j].id >= 0) {
        if (node_eq(&t->slots[j].key, &n))
            return t->slots[j].id;
        j = (j + 1) & (size_t)(t->cap - 1);
    }
    int32_t id = push_node(L, n);
    t->slots[j].key = n;
    t->slots[j].id = id;
    t->n++;
    return id;
}

static IrNode blank(IrOp op, Type t)
{
    IrNode n;
    memset(&n, 0, sizeof n); /* padding too: nodes are compared bytewise */
    n.op = (uint8_t)op;
    n.type = (uint8_t)t;
    n.a = n.b = n.c = -1;
    return n;
}

static const IrNode *N(Lower *L, int32_t id) { return &L->k->nodes[id]; }

/* Level and phase of a node from its operands. */
static void derive(Lower *L, IrNode *n)
{
    int32_t ops[3] = {n->a, n->b, n->c};
    for (int i = 0; i < 3; i++) {
        if (ops[i] < 0)
            continue;
        const IrNode *o = N(L, ops[i]);
        if (o->level > n->level)
            n->level = o->level;
        if (o->phase > n->phase)
            n->phase = o->phase;
    }
}

static int32_t ir_const(Lower *L, Value v)
{
    IrNode n = blank(IR_CONST, type_concrete(v.type));
    n.value = value_cast(v, (Type)n.type);
    n.value.type = (Type)n.type;
    n.level = L_CONST;
    return intern_node(L, n);
}

static bool is_const_node(Lower *L, int32_t id, Value *v)
{
    const IrNode *n = N(L, id);
    if (n->op != IR_CONST)
        return false;
    if (v)
        *v = n->value;
    return true;
}

static bool const_is(Lower *L, int32_t id, double x)
{
    Value v;
    /* (not for complex values: x * (1 + 0i) is not x bit for bit when a
     * part is infinite or -0, so no identity applies to them) */
    return is_const_node(L, id, &v) && !type_is_complex(v.type) && value_as_double(v) == x;
}

/* ---- constructors with folding and algebraic identities -------------------- */

static int32_t ir_select(Lower *L, Type t, int32_t c, int32_t a, int32_t b);

/* A conversion; `adopt` is a weak value meeting an f16/bf16 operand, which
 * takes the compute type's precision as a literal does (value_adopt), not
 * the rounding of a conversion (aux = 1 on the node). */
static int32_t ir_convert(Lower *L, int32_t a, Type to, bool adopt)
{
    const IrNode *o = N(L, a);
    adopt &= to == T_F16 || to == T_BF16;
    if (o->type == to)
        return a;
    Value v;
    if (is_const_node(L, a, &v))
        return ir_const(L, adopt ? value_adopt(v, to) : value_cast(v, to));
    /* Converting a choice of two constants is the choice of the converted
     * constants (where(c, 1.0, 0.0) assigned to an f32 output selects f32
     * literals): one node less, and the branches stay literals. */
    if (o->op == IR_SELECT && is_const_node(L, o->b, NULL) && is_const_node(L, o->c, NULL)) {
        int32_t c = o->a, x = o->b, y = o->c;
        return ir_select(L, to, c, ir_convert(L, x, to, adopt), ir_convert(L, y, to, adopt));
    }
    IrNode n = blank(IR_CAST, to);
    n.sub = o->type;
    n.a = a;
    n.aux = adopt;
    derive(L, &n);
    return intern_node(L, n);
}


/* Whether node `id` of type f16/bf16 holds a value of its type already
 * (rounding it changes nothing): a load or scalar (read from 16 bits), a
 * conversion or rounding to the type, a constant of the type's values,
 * max/min reducers, and exact operations on such values. */
static bool is_rounded(Lower *L, int32_t id, int depth)
{
    const IrNode *n = N(L, id);
    if (depth > 8)
        return false;
    switch ((IrOp)n->op) {
    case IR_LOAD: case IR_SCALAR:
        return true;
    case IR_CONST: {
        Value v = value_round(n->value);
        return v.v.f == n->value.v.f || v.v.f != v.v.f;
    }
    case IR_CAST:
        return n->aux == 0;
    case IR_RED: {
        ReducerKind k = L->k->reds[n->aux].kind;
        return k == R_MAX || k == R_MIN;
    }
    case IR_SELECT:
        return is_rounded(L, n->b, depth + 1) && is_rounded(L, n->c, depth + 1);
    case IR_UNARY:
        return n->sub == UN_NEG && is_rounded(L, n->a, depth + 1);
    case IR_CALL:
        switch ((Builtin)n->sub) {
        case B_ABS: case B_FLOOR: case B_CEIL: case B_ROUND: case B_TRUNC: case B_RELU: case B_SIGN:
            return is_rounded(L, n->a, depth + 1);
        case B_MIN: case B_MAX:
            return is_rounded(L, n->a, depth + 1) && is_rounded(L, n->b, depth + 1);
        default:
            return false;
        }
    default:
        return false;
    }
}

/* An f16/bf16 value given its type by name (sema's convert_named):
 * rounded to the type, an IR_CAST from the type to
 * itself, unless it holds such a value already. */
static int32_t ir_round(Lower *L, int32_t a)
{
    const IrNode *o = N(L, a);
    Type t = (Type)o->type;
    if ((t != T_F16 && t != T_BF16) || is_rounded(L, a, 0))
        return a;
    Value v;
    if (is_const_node(L, a, &v))
        return ir_const(L, value_round(v));
    IrNode n = blank(IR_CAST, t);
    n.sub = (uint16_t)t;
    n.a = a;
    derive(L, &n);
    return intern_node(L, n);
}

static int32_t ir_unary(Lower *L, Op op, Type t, int32_t a)
{
    Value v, r;
    if (is_const_node(L, a, &v) && fold_unary(op, (Type)N(L, a)->type, v, &r))
        return ir_const(L, value_cast(r, t));
    /* --x and !!b */
    const IrNode *o = N(L, a);
    if (o->op == IR_UNARY && o->sub == op && (op == UN_NEG || op == UN_BITNOT) && o->type == t)
        return o->a;
    IrNode n = blank(IR_UNARY, t);
    n.sub = (uint16_t)op;
    n.a = a;
    derive(L, &n);
    return intern_node(L, n);
}

/* Whether the integer constant v of type t is the type's greatest (high)
 * or least value. */
static bool at_bound(Value v, Type t, bool high)
{
    int bits = type_info[t].bits;
    if (type_is_signed(t)) {
        int64_t mx = bits == 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
        return high ? v.v.i == mx : v.v.i == -mx - 1;
    }
    uint64_t mx = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    return high ? v.v.u == mx : v.v.u == 0;
}

/* A comparison that one constant operand decides, whatever the other:
 * 1 true, 0 false, -1 not decided.  An integer value with a constant at
 * its type's bound: x > MAX, x < MIN false; x <= MAX, x >= MIN true (and
 * mirrored).  Folding it is exact, and it keeps the generated C free of
 * "comparison is always false" (-Wtype-limits). */
static int decided_compare(Lower *L, Op op, Type ot, int32_t a, int32_t b)
{
    Value v;
    /* A real comparison with a NaN constant: != is true, the others
     * false, whatever the other operand (IEEE 754).  Folded for the same
     * reason, and because clang 14 at -O0 stores the always-true
     * (uint8_t)(NAN != x) as 255 (its fast instruction selector
     * materialises the folded i1 as -1; tests/fuzz/regress/nan-compare.json). */
    if (type_is_float(ot) && op_info[op].operands == OPK_CMP &&
        ((is_const_node(L, a, &v) && isnan(value_as_double(v))) ||
         (is_const_node(L, b, &v) && isnan(value_as_double(v)))))
        return op == BIN_NE;
    if (!type_is_int(ot) && ot != T_BOOL)
        return -1;
    bool on_right = is_const_node(L, b, &v);
    if (!on_right && !is_const_node(L, a, &v))
        return -1;
    /* (bools too: b < false, a uint8_t in the C, drew the same warning) */
    bool at_max = ot == T_BOOL ? v.v.i != 0 : at_bound(v, ot, true);
    bool at_min = ot == T_BOOL ? v.v.i == 0 : at_bound(v, ot, false);
    if (!on_right) { /* c OP x as x OP' c */
        switch (op) {
        case BIN_LT: op = BIN_GT; break;
        case BIN_LE: op = BIN_GE; break;
        case BIN_GT: op = BIN_LT; break;
        case BIN_GE: op = BIN_LE; break;
        default: return -1;
        }
    }
    switch (op) {
    case BIN_GT: return at_max ? 0 : -1;
    case BIN_LE: return at_max ? 1 : -1;
    case BIN_LT: return at_min ? 0 : -1;
    case BIN_GE: return at_min ? 1 : -1;
    default: return -1;
    }
}

static int32_t ir_binary(Lower *L, Op op, Type t, int32_t a, int32_t b)
{
    Value va, vb, r;
    Type ot = (Type)N(L, a)->type;
    if (is_const_node(L, a, &va) && is_const_node(L, b, &vb) && fold_binary(op, ot, va, vb, &r))
        return ir_const(L, value_cast(r, t));
    int known = decided_compare(L, op, ot, a, b);
    if (known >= 0) {
        Value kv = {.type = T_BOOL, .v.i = known};
        return ir_const(L, value_cast(kv, t));
    }
    bool fl = type_is_float(ot);
    /* Identities that hold bit for bit, NaN and -0 included. */
    switch (op) {
    case BIN_MUL:
        if (const_is(L, b, 1)) return a;
        if (const_is(L, a, 1)) return b;
        break;
    case BIN_DIV:
        if (const_is(L, b, 1)) return a;
        break;
    case BIN_SUB:
        if (const_is(L, b, 0) && (!fl || !signbit(N(L, b)->value.v.f))) return a;
        break;
    case BIN_ADD:
        if (!fl && const_is(L, b, 0)) return a;
        if (!fl && const_is(L, a, 0)) return b;
        break;
    case BIN_LAND:
        if (const_is(L, a, 1)) return b;
        if (const_is(L, b, 1)) return a;
        break;
    case BIN_LOR:
        if (const_is(L, a, 0)) return b;
        if (const_is(L, b, 0)) return a;
        break;
    default:
        break;
    }
    /* Commutative operators (ops.def): a canonical operand order helps CSE. */
    if (op_info[op].commutes && a > b) {
        int32_t tmp = a;
        a = b;
        b = tmp;
    }
    IrNode n = blank(IR_BINARY, t);
    n.sub = (uint16_t)op;
    n.a = a;
    n.b = b;
    derive(L, &n);
    return intern_node(L, n);
}

static int32_t ir_select(Lower *L, Type t, int32_t c, int32_t a, int32_t b)
{
    Value v;
    if (is_const_node(L, c, &v))
        return value_truth(v) ? a : b;
    if (a == b)
        return a;
    IrNode n = blank(IR_SELECT, t);
    n.a = c;
    n.b = a;
    n.c = b;
    derive(L, &n);
    return intern_node(L, n);
}

static int32_t ir_call(Lower *L, Builtin bi, Type t, const int32_t *args, int nargs)
{
    Value vals[3];
    bool all = true;
    for (int i = 0; i < nargs; i++)
        all &= is_const_node(L, args[i], &vals[i]);
    Value r;
    if (all && fold_builtin(bi, (Type)N(L, args[0])->type, vals, nargs, &r))
        return ir_const(L, value_cast(r, t));
    /* Integers and bools are never NaN or infinite: a constant, and the
     * operand is not loaded at all. */
    Type at = (Type)N(L, args[0])->type;
    if ((bi == B_ISNAN || bi == B_ISINF || bi == B_ISFINITE) && !type_is_float(at) && !type_is_complex(at))
        return ir_const(L, value_int(T_BOOL, bi == B_ISFINITE));
    /* An integer's sign bit is x < 0 (numpy): no helper per integer type. */
    if (bi == B_SIGNBIT && !type_is_float(at))
        return type_is_signed(at) ? ir_binary(L, BIN_LT, T_BOOL, args[0], ir_const(L, value_int(at, 0)))
                                  : ir_const(L, value_int(T_BOOL, 0));
    IrNode n = blank(IR_CALL, t);
    n.sub = (uint16_t)bi;
    n.a = args[0];
    n.b = nargs > 1 ? args[1] : -1;
    n.c = nargs > 2 ? args[2] : -1;
    derive(L, &n);
    return intern_node(L, n);
}

/* ---- reducers ------------------------------------------------------------------ */

/* A new reducer (index k->nreds) of `phase`. */
static int new_reducer(Lower *L, ReducerKind kind, Type res, Type arg_type, int32_t arg, int32_t ident,
                       int32_t combine, int phase)
{
    IrKernel *k = L->k;
    IrReducer *reds = arena_alloc(L->c->arena, sizeof(IrReducer) * (size_t)(k->nreds + 1));
    if (k->nreds)
        memcpy(reds, k->reds, sizeof(IrReducer) * (size_t)k->nreds);
    k->reds = reds;
    IrReducer *r = &k->reds[k->nreds];
    r->kind = kind;
    r->arg_type = arg_type;
    r->res_type = res;
    switch (kind) {
    case R_SUM: case R_PROD: case R_MEAN:
        r->acc_type = type_accum(arg_type);
        break;
    case R_ARGMAX: case R_ARGMIN: case R_MAX: case R_MIN: case R_CUSTOM:
        r->acc_type = type_compute(arg_type);
        break;
    case R_ANY: case R_ALL:
        r->acc_type = T_BOOL;
        break;
    default:
        nnkc_assert(!"reducer kind");
    }
    r->phase = phase;
    r->arg = arg;
    r->ident = ident;
    r->combine = combine;
    r->head = k->nreds;
    r->width = 1;
    if (phase > k->nphases)
        k->nphases = phase;
    return k->nreds++;
}

static int32_t red_value(Lower *L, int ri)
{
    IrNode n = blank(IR_RED, L->k->reds[ri].res_type);
    n.aux = ri;
    n.level = L_ROW;
    n.phase = (uint8_t)L->k->reds[ri].phase;
    return intern_node(L, n);
}

static int32_t ir_reducer(Lower *L, ReducerKind kind, Type res, Type arg_type, int32_t arg, int32_t ident,
                          int32_t combine)
{
    IrKernel *k = L->k;
    for (int i = 0; i < k->nreds; i++) {
        IrReducer *r = &k->reds[i];
        if (r->kind == kind && r->arg == arg && r->ident == ident && r->combine == combine && r->res_type == res &&
            r->width == 1)
            return red_value(L, i);
    }
    int phase = N(L, arg)->phase + 1;
    if (ident >= 0 && N(L, ident)->phase + 1 > phase)
        phase = N(L, ident)->phase + 1;
    return red_value(L, new_reducer(L, kind, res, arg_type, arg, ident, combine, phase));
}

/* reduce() with a tuple state: `width` consecutive reducers in one phase
 * (the latest any component needs), found again whole when the same
 * state was lowered before (every name a tuple let binds lowers it). */
static int32_t ir_tuple_reducer(Lower *L, const int32_t *nodes, const Type *types, int width, int comp)
{
    IrKernel *k = L->k;
    int found = -1;
    for (int h = 0; h + width <= k->nreds && found < 0; h++) {
        bool same = k->reds[h].head == h && k->reds[h].width == width;
        for (int j = 0; j < width && same; j++) {
            const IrReducer *r = &k->reds[h + j];
            same = r->arg == nodes[3 * j] && r->ident == nodes[3 * j + 1] && r->combine == nodes[3 * j + 2] &&
                   r->res_type == types[j];
        }
        if (same)
            found = h;
    }
    if (found < 0) {
        int phase = 1;
        for (int j = 0; j < 2 * width; j++) {
            int32_t id = nodes[3 * (j / 2) + (j % 2)];
            if (N(L, id)->phase + 1 > phase)
                phase = N(L, id)->phase + 1;
        }
        found = k->nreds;
        for (int j = 0; j < width; j++) {
            int ri = new_reducer(L, R_CUSTOM, types[j], types[j], nodes[3 * j], nodes[3 * j + 1], nodes[3 * j + 2], phase);
            k->reds[ri].head = found;
            k->reds[ri].width = width;
        }
    }
    return red_value(L, found + comp);
}

/* ---- one pass instead of two: the online softmax sum ------------------------------
 * sum(exp(A - m)) with m = max(A) needs m before its pass; Milakov and
 * Gimelshein's online form carries (m, s) in one pass instead, the running
 * maximum rescaling the running sum when it grows.  The max reducer becomes
 * the first value of a tuple state (its combine is the max step itself,
 * NaN sticking) and the sum the second, so every value that read m still
 * reads it, in the same phase.  Where the two-pass form gives NaN (a
 * maximum of +inf or -inf with elements: inf - inf) the running sum would
 * not, so the result is that NaN (m - m) there itself.  Only when the max is the
 * reducer made last, so that the sum can take the next index (a tuple's
 * values are consecutive).  At -O3 only: the pass saved is a read of the
 * data, and a CPU's pass is bound by the exp rather than the memory (one
 * pass measured 0.8 to 1.3 times as fast as two: bench/perf/online.py),
 * where a GPU's is bound by the memory. */
static int32_t lparam(Lower *L, Type t, int aux)
{
    IrNode n = blank(IR_LPARAM, t);
    n.aux = aux;
    n.level = L_LAMBDA;
    return intern_node(L, n);
}

static int32_t online_softmax_sum(Lower *L, int32_t arg, Type res)
{
    IrKernel *k = L->k;
    const IrNode *e = N(L, arg);
    if (L->c->opt.opt_level < 3 || e->op != IR_CALL || e->sub != B_EXP || !type_is_float((Type)e->type))
        return -1;
    const IrNode *d = N(L, e->a);
    if (d->op != IR_BINARY || d->sub != BIN_SUB || N(L, d->b)->op != IR_RED)
        return -1;
    int r = N(L, d->b)->aux;
    IrReducer *mx = &k->reds[r];
    Type t = (Type)e->type;
    if (r != k->nreds - 1 || mx->kind != R_MAX || mx->width != 1 || mx->arg != d->a || mx->res_type != t || res != t)
        return -1;
    int32_t ma = lparam(L, t, 0), mb = lparam(L, t, 1), sa = lparam(L, t, 2), sb = lparam(L, t, 3);
    /* the max step: b wins when larger or NaN (a NaN taken stays) */
    int32_t bwins = ir_binary(L, BIN_LOR, T_BOOL, ir_binary(L, BIN_GT, T_BOOL, mb, ma), ir_binary(L, BIN_NE, T_BOOL, mb, mb));
    int32_t mcomb = ir_select(L, t, bwins, mb, ma);
    /* one exp: the smaller maximum's sum scales by exp(-|ma - mb|) */
    int32_t absd = ir_call(L, B_ABS, t, (int32_t[]){ir_binary(L, BIN_SUB, t, mb, ma)}, 1);
    int32_t sc = ir_call(L, B_EXP, t, (int32_t[]){ir_unary(L, UN_NEG, t, absd)}, 1);
    int32_t both = ir_binary(L, BIN_ADD, t, sa, sb);
    int32_t keep_a = ir_binary(L, BIN_ADD, t, sa, ir_binary(L, BIN_MUL, t, sb, sc));
    int32_t keep_b = ir_binary(L, BIN_ADD, t, ir_binary(L, BIN_MUL, t, sa, sc), sb);
    int32_t scomb = ir_select(L, t, ir_binary(L, BIN_EQ, T_BOOL, ma, mb), both,
                              ir_select(L, t, ir_binary(L, BIN_GT, T_BOOL, ma, mb), keep_a, keep_b));
    int32_t minf = ir_const(L, value_float(t, -INFINITY));
    mx = &k->reds[r];
    mx->kind = R_CUSTOM;
    mx->ident = minf;
    mx->combine = mcomb;
    mx->head = r;
    mx->width = 2;
    int si = new_reducer(L, R_CUSTOM, t, t, ir_const(L, value_float(t, 1)), ir_const(L, value_float(t, 0)), scomb,
                         mx->phase);
    k->reds[si].head = r;
    k->reds[si].width = 2;
    int32_t m = red_value(L, r), s = red_value(L, si);
    int32_t nan = ir_binary(L, BIN_LAND, T_BOOL, ir_call(L, B_ISINF, T_BOOL, &m, 1),
                            ir_binary(L, BIN_NE, T_BOOL, s, ir_const(L, value_float(t, 0))));
    /* the NaN of inf - inf, as the two passes compute it (its bits too) */
    return ir_select(L, t, nan, ir_binary(L, BIN_SUB, t, m, m), s);
}

/* ---- one pass instead of two: Welford's variance ------------------------------------
 * mean(D) or sum(D) with D = (A - m)^2 (written (A - m) * (A - m) or
 * pow(A - m, 2), either sign) and m = mean(A) needs m before its pass; a
 * tuple state (mu, q, c) of Welford's running mean, sum of squared
 * deviations and count, merged by Chan, Golub and LeVeque's formula
 * (mu = ma + (mb - ma) * cb/c, q = qa + qb + (mb - ma)^2 * ca * cb/c),
 * gives q = sum(D) in the pass that computes m.  The mean reducer stays as
 * it is, fused into that pass, so m and everything that reads it keep their
 * value and bits; only D's reducer is replaced.  The count is an f64, so that
 * it never stops growing (an f32 count sticks at 2^24), and so are the mean
 * and the squares, whatever the element type: a running mean in f32 is off
 * by the rounding of each update, which the squares carry times the
 * condition number |mean| / sd (1e-4 relative on rows of 1e4 + U(-1, 1),
 * where two f32 passes are exact to 1e-7).  Where m is not finite the two-pass form
 * computes x - m with it: NaN where an element is infinite or NaN (the state's
 * running mean is not finite then), +inf where only the sum overflowed; the
 * result is that value itself.  At -O3 only, as the online softmax (the pass
 * saved is a read of the data, the state costs a division per element:
 * bench/perf/online.py). */
static int32_t welford_var(Lower *L, int32_t arg, Type res, ReducerKind kind)
{
    IrKernel *k = L->k;
    const IrNode *e = N(L, arg);
    Type t = (Type)e->type;
    if (L->c->opt.opt_level < 3 || (kind != R_MEAN && kind != R_SUM) || !type_is_float(t) || res != t)
        return -1;
    int32_t s;
    if (e->op == IR_BINARY && e->sub == BIN_MUL && e->a == e->b)
        s = e->a;
    else if (e->op == IR_CALL && e->sub == B_POW && const_is(L, e->b, 2))
        s = e->a;
    else
        return -1;
    const IrNode *d = N(L, s);
    if (d->op != IR_BINARY || d->sub != BIN_SUB || d->type != t)
        return -1;
    int32_t mred = N(L, d->b)->op == IR_RED ? d->b : d->a, a = mred == d->b ? d->a : d->b;
    if (N(L, mred)->op != IR_RED)
        return -1;
    const IrReducer *mr = &k->reds[N(L, mred)->aux];
    if (mr->kind != R_MEAN || mr->width != 1 || mr->arg != a || mr->res_type != t)
        return -1;
    const Type acc = T_F64;
    /* the combine, side a then side b of each value: (mu, q, c) */
    int32_t ma = lparam(L, acc, 0), mb = lparam(L, acc, 1), qa = lparam(L, acc, 2), qb = lparam(L, acc, 3);
    int32_t ca = lparam(L, acc, 4), cb = lparam(L, acc, 5);
    int32_t zero = ir_const(L, value_float(acc, 0));
    int32_t c = ir_binary(L, BIN_ADD, acc, ca, cb);
    /* two empty partials (lanes past a short row's end) stay empty */
    int32_t w = ir_select(L, acc, ir_binary(L, BIN_GT, T_BOOL, c, zero), ir_binary(L, BIN_DIV, acc, cb, c), zero);
    int32_t dl = ir_binary(L, BIN_SUB, acc, mb, ma);
    int32_t mcomb = ir_binary(L, BIN_ADD, acc, ma, ir_binary(L, BIN_MUL, acc, dl, w));
    /* dl * (dl * (ca * w)), not dl^2 * (ca * w): with one side empty (the
     * first element into a lane's state, an empty lane merged) ca * w is 0,
     * and the square of a finite dl may overflow (|x| > 1.3e154 in f64):
     * inf * 0 made the variance NaN where two passes give inf (found by the
     * fuzzer) */
    int32_t qcomb = ir_binary(L, BIN_ADD, acc, ir_binary(L, BIN_ADD, acc, qa, qb),
                              ir_binary(L, BIN_MUL, acc, dl,
                                        ir_binary(L, BIN_MUL, acc, dl, ir_binary(L, BIN_MUL, acc, ca, w))));
    int32_t nodes[9] = {a, zero, mcomb, zero, zero, qcomb, ir_const(L, value_float(acc, 1)), zero, c};
    Type types[3] = {acc, acc, acc};
    int32_t mu = ir_tuple_reducer(L, nodes, types, 3, 0), q = ir_tuple_reducer(L, nodes, types, 3, 1);
    IrNode nn = blank(IR_N, T_I64);
    nn.level = L_UNIFORM;
    int32_t n = intern_node(L, nn);
    /* m finite: so is every element, and two passes give a number or +inf
     * (a square or the sum overflowed); the state's NaN is such an overflow
     * (x - mu of opposite signs past 9e307: an infinite mu, then inf - inf).
     * (Before the division: an empty slice's q is 0, its mean 0 / 0.) */
    q = ir_select(L, acc, ir_call(L, B_ISNAN, T_BOOL, &q, 1), ir_const(L, value_float(acc, INFINITY)), q);
    int32_t v = kind == R_MEAN ? ir_binary(L, BIN_DIV, acc, q, ir_convert(L, n, acc, false)) : q;
    /* (an f16/bf16 result is its f32 compute value, as the two-pass
     * reducer's f32 accumulator: not rounded to the type) */
    v = ir_convert(L, v, t, true);
    /* m not finite (and the slice not empty): what x - m gives two passes */
    int32_t ok = ir_binary(L, BIN_LOR, T_BOOL, ir_call(L, B_ISFINITE, T_BOOL, &mred, 1),
                           ir_binary(L, BIN_EQ, T_BOOL, n, ir_const(L, value_int(T_I64, 0))));
    int32_t special = ir_select(L, t, ir_call(L, B_ISFINITE, T_BOOL, &mu, 1), ir_const(L, value_float(t, INFINITY)),
                                ir_binary(L, BIN_SUB, t, mred, mred));
    return ir_select(L, t, ok, v, special);
}

/* ---- the typed tree ------------------------------------------------------------ */

static int32_t lower(Lower *L, const Expr *e);

static int32_t memo_get(Lower *L, const Expr *e)
{
    if (!L->memo_cap)
        return -1;
    size_t j = ((uintptr_t)e >> 4) & (size_t)(L->memo_cap - 1);
    while (L->memo_keys[j]) {
        if (L->memo_keys[j] == e)
            return L->memo_vals[j];
        j = (j + 1) & (size_t)(L->memo_cap - 1);
    }
    return -1;
}

static void memo_put(Lower *L, const Expr *e, int32_t id)
{
    if (2 * (L->memo_n + 1) > L->memo_cap) {
        int cap = L->memo_cap ? L->memo_cap * 2 : 256;
        const Expr **keys = arena_alloc(L->c->arena, sizeof(Expr *) * (size_t)cap);
        int32_t *vals = arena_alloc(L->c->arena, sizeof(int32_t) * (size_t)cap);
        for (int i = 0; i < L->memo_cap; i++) {
            if (!L->memo_keys[i])
                continue;
            size_t j = ((uintptr_t)L->memo_keys[i] >> 4) & (size_t)(cap - 1);
            while (keys[j])
                j = (j + 1) & (size_t)(cap - 1);
            keys[j] = L->memo_keys[i];
            vals[j] = L->memo_vals[i];
        }
        L->memo_keys = keys;
        L->memo_vals = vals;
        L->memo_cap = cap;
    }
    size_t j = ((uintptr_t)e >> 4) & (size_t)(L->memo_cap - 1);
    while (L->memo_keys[j])
        j = (j + 1) & (size_t)(L->memo_cap - 1);
    L->memo_keys[j] = e;
    L->memo_vals[j] = id;
    L->memo_n++;
}

static int32_t lower_uncached(Lower *L, const Expr *e)
{
    /* A weak type on a value that is not a constant (a choice between two
     * literals, arithmetic on one) computes as the constant folder
     * computes literals: weak integers in i64, weak floats in f64.  Sema
     * keeps the weak type so that the value still adopts the type of a
     * typed operand it meets (a conversion node here). */
    Type t = type_concrete((Type)e->type);
    switch ((ExprKind)e->kind) {
    case E_CONST:
        return ir_const(L, e->value);
    case E_PARAM: {
        const InstParam *p = &L->k->inst->params[e->index];
        IrNode n = blank(p->tensor ? IR_LOAD : IR_SCALAR, p->type);
        n.aux = p->tensor ? L->tensor_index[e->index] : L->scalar_index[e->index];
        n.level = p->tensor ? L_ELEM : L_UNIFORM;
        return intern_node(L, n);
    }
    case E_RAWLOAD: {
        /* the offset: one checked term per index (a flat index: one term) */
        const InstParam *p = &L->k->inst->params[e->index];
        int32_t off = -1;
        for (int i = 0; i < e->args.n; i++) {
            IrNode n = blank(IR_RAWIX, T_I64);
            n.a = lower(L, e->args.items[i]);
            n.aux = p->raw_slot;
            n.sub = e->args.n == 1 ? RAW_FLAT : (uint16_t)i;
            n.value = value_int(T_I64, e->args.n);
            derive(L, &n);
            if (n.level < L_UNIFORM)
                n.level = L_UNIFORM;
            int32_t term = intern_node(L, n);
            off = off < 0 ? term : ir_binary(L, BIN_ADD, T_I64, off, term);
        }
        IrNode n = blank(IR_RAWLD, p->type);
        n.a = off;
        n.aux = p->raw_slot;
        derive(L, &n);
        return intern_node(L, n);
    }
    case E_RAWSHAPE:
    case E_DIMIDX: {
        IrNode n = blank(e->kind == E_RAWSHAPE ? IR_RAWSHAPE : IR_DIMIDX, T_I64);
        n.aux = e->kind == E_RAWSHAPE ? L->k->inst->params[e->index].raw_slot : -1;
        n.sub = e->op;
        n.level = e->kind == E_RAWSHAPE ? L_UNIFORM : L_ELEM;
        return intern_node(L, n);
    }
    case E_IDX:
    case E_N: {
        IrNode n = blank(e->kind == E_IDX ? IR_IDX : IR_N, T_I64);
        n.level = e->kind == E_IDX ? L_ELEM : L_UNIFORM;
        return intern_node(L, n);
    }
    case E_LPARAM: {
        IrNode n = blank(IR_LPARAM, t);
        n.aux = e->index;
        n.level = L_LAMBDA;
        return intern_node(L, n);
    }
    case E_CAST:
        if (e->a->type == e->type)
            return ir_round(L, lower(L, e->a));
        return ir_convert(L, lower(L, e->a), t, (e->op & CAST_ADOPT) != 0);
    case E_UNARY:
        return ir_unary(L, (Op)e->op, t, lower(L, e->a));
    /* operands in order, left to right (the order of a call's arguments
     * is the C compiler's: the nodes and so the code nnkc generates
     * depended on the compiler that built it) */
    case E_BINARY: {
        int32_t a = lower(L, e->a);
        return ir_binary(L, (Op)e->op, t, a, lower(L, e->b));
    }
    case E_COND: {
        int32_t c = lower(L, e->a), a = lower(L, e->b);
        return ir_select(L, t, c, a, lower(L, e->c));
    }
    case E_BUILTIN: {
        int32_t args[3];
        for (int i = 0; i < e->args.n && i < 3; i++)
            args[i] = lower(L, e->args.items[i]);
        return ir_call(L, (Builtin)e->op, t, args, e->args.n);
    }
    case E_REDUCE: {
        if (e->args.n) {
            int32_t nodes[3 * NNKC_MAX_TUPLE];
            Type types[NNKC_MAX_TUPLE];
            int width = e->args.n / 3;
            nnkc_assert(width <= NNKC_MAX_TUPLE && e->index < width);
            for (int j = 0; j < 3 * width; j++)
                nodes[j] = lower(L, e->args.items[j]);
            for (int j = 0; j < width; j++)
                types[j] = type_concrete((Type)((Expr *)e->args.items[3 * j])->type);
            return ir_tuple_reducer(L, nodes, types, width, e->index);
        }
        int32_t arg = lower(L, e->a);
        int32_t fused = e->op == R_SUM ? online_softmax_sum(L, arg, t) : -1;
        if (fused < 0)
            fused = welford_var(L, arg, t, (ReducerKind)e->op);
        if (fused >= 0)
            return fused;
        int32_t ident = e->b ? lower(L, e->b) : -1;
        int32_t comb = e->c ? lower(L, e->c) : -1;
        /* max (min) of the constant that is its type's least (greatest)
         * value, the reducer's identity: that value, of an empty slice too
         * (the generated C's step 0 > acc ? 0 : acc of an unsigned type drew
         * -Wtype-limits warnings) */
        Value cv;
        Type at = type_concrete((Type)e->optype);
        if ((e->op == R_MAX || e->op == R_MIN) && type_is_int(at) && N(L, arg)->type == at &&
            is_const_node(L, arg, &cv) && at_bound(cv, at, e->op == R_MIN))
            return ir_convert(L, arg, t, false);
        return ir_reducer(L, (ReducerKind)e->op, t, at, arg, ident, comb);
    }
    default:
        nnkc_assert(!"node kind in a typed tree");
        return -1;
    }
}

static int32_t lower_one(Lower *L, const Expr *e)
{
    int32_t id = memo_get(L, e);
    if (id >= 0)
        return id;
    Range saved = L->at;
    L->at = e->range;
    id = lower_uncached(L, e);
    L->at = saved;
    memo_put(L, e, id);
    return id;
}

/* A flat chain (a + b + ... + z) is as long as the source makes it: its
 * left spine is lowered first, in a loop from the bottom up, so that each
 * operator finds its left operand done and the recursion (on the other
 * operands, nested at most MAX_TYPED_NEST) stays shallow.  The order of
 * the nodes is the recursion's. */
static int32_t lower(Lower *L, const Expr *e)
{
    if (e->kind == E_BINARY && e->a->kind == E_BINARY && memo_get(L, e) < 0) {
        int n = 0;
        for (const Expr *s = e->a; s->kind == E_BINARY && memo_get(L, s) < 0; s = s->a)
            n++;
        if (n > 1) {
            const Expr **spine = arena_alloc(L->c->arena, sizeof *spine * (size_t)n);
            int i = 0;
            for (const Expr *s = e->a; i < n; s = s->a)
                spine[i++] = s;
            while (i-- > 0)
                lower_one(L, spine[i]);
        }
    }
    return lower_one(L, e);
}

IrKernel *lower_instance(Compiler *c, Instance *in)
{
    IrKernel *k = arena_alloc(c->arena, sizeof *k);
    k->inst = in;
    Lower L = {.c = c, .k = k};
    L.scalar_index = arena_alloc(c->arena, sizeof(int) * (size_t)(in->nparams + 1));
    L.tensor_index = arena_alloc(c->arena, sizeof(int) * (size_t)(in->nparams + 1));
    int ns = 0, nt = 0;
    for (int i = 0; i < in->nparams; i++) {
        if (in->params[i].raw && k->nraw < NNKC_MAX_RAW) {
            k->raw_operand[k->nraw] = nt;
            k->raw_storage[k->nraw] = in->params[i].storage;
            k->raw_type[k->nraw++] = in->params[i].type;
        }
        if (in->params[i].tensor)
            L.tensor_index[i] = nt++;
        else
            L.scalar_index[i] = ns++;
    }
    k->nloads = nt;
    k->nscalars = ns;
    k->outs = arena_alloc(c->arena, sizeof(IrOutput) * (size_t)(in->nouts + 1));
    k->nouts = in->nouts;
    for (int i = 0; i < in->nouts; i++) {
        IrOutput *o = &k->outs[i];
        o->name = in->outs[i].name;
        o->tensor = in->outs[i].tensor;
        o->type = in->outs[i].type;
        o->storage = in->outs[i].storage;
        o->node = lower(&L, in->values[i]);
        /* storing rounds to f16/bf16 by itself: store what was rounded */
        const IrNode *v = &k->nodes[o->node];
        if (v->op == IR_CAST && v->sub == v->type && o->storage == o->type)
            o->node = v->a;
    }
    ir_count_uses(k);
    in->ir = k;
    ir_verify(c, k);
    return k;
}
