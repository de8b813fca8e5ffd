/* verify.c - the invariants of an instance's IR, checked between lowering
 * and emission.
 *
 * The emitters index type tables by a node's type and print operands by
 * id; a value that kept a weak literal type, an operand that comes after
 * its user or an index past a table would make them read out of bounds.
 * Sema and lower.c are meant to make that impossible; this pass makes a
 * slip an internal error reported at the expression concerned (and a
 * non-zero exit), never a crash in an emitter or C that does not compile.
 */
#include "nnkc.h"

typedef struct Verify {
    Compiler *c;
    const IrKernel *k;
    bool ok;
} Verify;

static void fail(Verify *v, int node, const char *fmt, const char *a, const char *b)
{
    if (!v->ok)
        return; /* the first broken invariant is the one to report */
    v->ok = false;
    const Instance *in = v->k->inst;
    Range r = node >= 0 && v->k->ranges ? v->k->ranges[node] : in->kernel->name_range;
    char what[160];
    snprintf(what, sizeof what, fmt, a, b);
    if (node >= 0)
        diag_error(v->c, r, "internal compiler error in '%s': IR value %%%d %s; please report this", in->display,
                   node, what);
    else
        diag_error(v->c, r, "internal compiler error in '%s': %s; please report this", in->display, what);
}

static bool concrete(int t) { return t >= 0 && t < T_NSCALAR; }

static const char *tname(int t) { return t >= 0 && t <= T_NONE ? type_name((Type)t) : "an invalid type"; }

/* Operand `id` of node `i`: present when `need`, before i, not a reducer's
 * lambda parameter outside reduce()'s combine (checked by level). */
static const IrNode *operand(Verify *v, int i, int32_t id, bool need)
{
    if (id < 0) {
        if (need)
            fail(v, i, "lacks an operand", "", "");
        return NULL;
    }
    if (id >= i) {
        fail(v, i, "uses a value that comes after it", "", "");
        return NULL;
    }
    return &v->k->nodes[id];
}

static void same_type(Verify *v, int i, const IrNode *o, int t, const char *what)
{
    if (o && o->type != t)
        fail(v, i, what, tname(o->type), tname(t));
}

static void check_node(Verify *v, int i)
{
    const IrKernel *k = v->k;
    const IrNode *n = &k->nodes[i];
    if (n->op >= IR_NOPS) {
        fail(v, i, "has an unknown operation", "", "");
        return;
    }
    if (!concrete(n->type)) {
        fail(v, i, "has type '%s', not a scalar type", tname(n->type), "");
        return;
    }
    bool a = n->op == IR_UNARY || n->op == IR_BINARY || n->op == IR_SELECT || n->op == IR_CAST || n->op == IR_CALL ||
             n->op == IR_RAWIX || n->op == IR_RAWLD;
    const IrNode *x = operand(v, i, n->a, a);
    const IrNode *y = operand(v, i, n->b, n->op == IR_BINARY || n->op == IR_SELECT);
    const IrNode *z = operand(v, i, n->c, n->op == IR_SELECT);
    if (!v->ok)
        return;
    switch ((IrOp)n->op) {
    case IR_CONST:
        if (n->value.type != n->type)
            fail(v, i, "holds a constant of type '%s' in a node of type '%s'", tname(n->value.type), tname(n->type));
        break;
    case IR_LOAD:
        if (n->aux < 0 || n->aux >= k->nloads)
            fail(v, i, "loads a tensor that does not exist", "", "");
        break;
    case IR_SCALAR:
        if (n->aux < 0 || n->aux >= k->nscalars)
            fail(v, i, "reads a scalar parameter that does not exist", "", "");
        break;
    case IR_RED:
        if (n->aux < 0 || n->aux >= k->nreds)
            fail(v, i, "is the value of a reducer that does not exist", "", "");
        else if (k->reds[n->aux].res_type != n->type)
            fail(v, i, "has type '%s' but its reducer gives '%s'", tname(n->type), tname(k->reds[n->aux].res_type));
        break;
    case IR_UNARY:
        if (n->sub == UN_NOT)
            same_type(v, i, n, T_BOOL, "is a '!' of type '%s', not '%s'");
        else
            same_type(v, i, x, n->type, "has an operand of type '%s' in an operation of type '%s'");
        break;
    case IR_BINARY:
        if (n->sub >= OP_COUNT || op_info[n->sub].unary)
            fail(v, i, "has an unknown binary operator", "", "");
        else
            same_type(v, i, y, x->type, "has operands of types '%s' and '%s'");
        break;
    case IR_SELECT:
        same_type(v, i, x, T_BOOL, "chooses on a condition of type '%s', not '%s'");
        same_type(v, i, y, n->type, "chooses a value of type '%s' for a result of type '%s'");
        same_type(v, i, z, n->type, "chooses a value of type '%s' for a result of type '%s'");
        break;
    case IR_CAST:
        if (n->sub != x->type)
            fail(v, i, "converts from '%s' but its operand is '%s'", tname(n->sub), tname(x->type));
        break;
    case IR_CALL:
        if (n->sub >= B_COUNT)
            fail(v, i, "calls an unknown built-in", "", "");
        else if (n->sub == B_WHERE)
            same_type(v, i, z, y ? y->type : n->type, "chooses between values of types '%s' and '%s'");
        else if (y)
            same_type(v, i, y, x->type, "has arguments of types '%s' and '%s'");
        if (v->ok && y && z && n->sub != B_WHERE)
            same_type(v, i, z, x->type, "has arguments of types '%s' and '%s'");
        break;
    case IR_LPARAM:
        if (n->aux < 0 || n->aux >= 2 * NNKC_MAX_TUPLE)
            fail(v, i, "is a combine parameter that does not exist", "", "");
        break;
    case IR_IDX: case IR_N:
        break;
    case IR_RAWIX: case IR_RAWLD: case IR_RAWSHAPE:
        /* a raw slot of the kernel; indices, offsets and extents in i64;
         * a per-dimension index of at most the rank limit */
        if (n->aux < 0 || n->aux >= k->nraw)
            fail(v, i, "reads a raw parameter that does not exist", "", "");
        else if (n->op != IR_RAWLD)
            same_type(v, i, n, T_I64, "is an index or extent of type '%s', not '%s'");
        if (v->ok && n->op != IR_RAWSHAPE && n->op != IR_RAWLD)
            same_type(v, i, x, T_I64, "indexes with a value of type '%s', not '%s'");
        if (v->ok && n->op == IR_RAWLD) {
            same_type(v, i, x, T_I64, "reads at an offset of type '%s', not '%s'");
            if (v->ok && n->type != k->raw_type[n->aux])
                fail(v, i, "reads a raw parameter of type '%s' as '%s'", tname(k->raw_type[n->aux]), tname(n->type));
        }
        if (v->ok && ((n->op == IR_RAWIX && n->sub != RAW_FLAT &&
                       (n->sub >= NNKC_MAX_DIMS || n->value.v.i > NNKC_MAX_DIMS || n->sub >= n->value.v.i)) ||
                      (n->op == IR_RAWSHAPE && n->sub >= NNKC_MAX_DIMS)))
            fail(v, i, "has a dimension out of range", "", "");
        break;
    case IR_DIMIDX:
        if (n->sub >= NNKC_MAX_DIMS)
            fail(v, i, "has a dimension out of range", "", "");
        break;
    }
}

bool ir_verify(Compiler *c, const IrKernel *k)
{
    Verify v = {.c = c, .k = k, .ok = true};
    for (int i = 0; i < k->nnodes && v.ok; i++)
        check_node(&v, i);
    for (int i = 0; i < k->nreds && v.ok; i++) {
        const IrReducer *r = &k->reds[i];
        if (!concrete(r->arg_type) || !concrete(r->acc_type) || !concrete(r->res_type))
            fail(&v, r->arg >= 0 && r->arg < k->nnodes ? r->arg : -1, "is reduced with type '%s'",
                 tname(!concrete(r->arg_type) ? r->arg_type : !concrete(r->acc_type) ? r->acc_type : r->res_type), "");
        int32_t ids[3] = {r->arg, r->ident, r->combine};
        for (int j = 0; j < 3 && v.ok; j++)
            if ((j == 0 || ids[j] >= 0) && (ids[j] < 0 || ids[j] >= k->nnodes))
                fail(&v, -1, "a reducer refers to a value that does not exist", "", "");
        /* a tuple state: consecutive reduce()s of one phase, whose combines
         * read only the components the tuple has */
        const IrReducer *h = r->head >= 0 && r->head < k->nreds ? &k->reds[r->head] : NULL;
        if (v.ok && (!h || r->width < 1 || r->width > NNKC_MAX_TUPLE || i >= r->head + r->width || h->width != r->width ||
                     h->phase != r->phase || (r->width > 1 && r->kind != R_CUSTOM)))
            fail(&v, r->arg, "is reduced in a tuple state that is not well formed", "", "");
        if (v.ok && r->combine >= 0 && r->combine < k->nnodes) {
            uint8_t *need = arena_alloc(c->arena, (size_t)k->nnodes + 1); /* zeroed */
            ir_mark(k, &r->combine, 1, L_LAMBDA, need);
            for (int j = 0; j < k->nnodes && v.ok; j++)
                if (need[j] && k->nodes[j].op == IR_LPARAM && k->nodes[j].aux >= 2 * r->width)
                    fail(&v, j, "reads a component the tuple state does not have", "", "");
        }
    }
    for (int i = 0; i < k->nouts && v.ok; i++) {
        const IrOutput *o = &k->outs[i];
        if (o->node < 0 || o->node >= k->nnodes)
            fail(&v, -1, "an output refers to a value that does not exist", "", "");
        else if (!concrete(o->type) || !concrete(o->storage))
            fail(&v, o->node, "is stored in an output of type '%s'", tname(concrete(o->type) ? o->storage : o->type), "");
        else if (k->nodes[o->node].type != o->type)
            fail(&v, o->node, "of type '%s' is stored in an output of type '%s'", tname(k->nodes[o->node].type),
                 tname(o->type));
    }
    return v.ok;
}
