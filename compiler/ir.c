/* ir.c - analyses over the IR that the emitters share, and the
 * readable dump of --emit=ir.  Folding, CSE and dead-code removal happen
 * as lower.c builds the DAG; what is left is bookkeeping for emission. */
#include "nnkc.h"

#include <string.h>

void ir_count_uses(IrKernel *k)
{
    for (int i = 0; i < k->nnodes; i++)
        k->nodes[i].uses = 0;
    for (int i = 0; i < k->nnodes; i++) {
        const IrNode *n = &k->nodes[i];
        if (n->a >= 0) k->nodes[n->a].uses++;
        if (n->b >= 0) k->nodes[n->b].uses++;
        if (n->c >= 0) k->nodes[n->c].uses++;
    }
    for (int i = 0; i < k->nreds; i++) {
        const IrReducer *r = &k->reds[i];
        k->nodes[r->arg].uses++;
        if (r->ident >= 0) k->nodes[r->ident].uses++;
        if (r->combine >= 0) k->nodes[r->combine].uses++;
    }
    for (int i = 0; i < k->nouts; i++)
        k->nodes[k->outs[i].node].uses++;
}

void ir_mark(const IrKernel *k, const int32_t *roots, int nroots, int min_level, uint8_t *need)
{
    /* Operands precede users, so one backward sweep closes the set. */
    for (int i = 0; i < nroots; i++)
        if (roots[i] >= 0 && k->nodes[roots[i]].level >= min_level)
            need[roots[i]] = 1;
    for (int i = k->nnodes - 1; i >= 0; i--) {
        if (!need[i] || k->nodes[i].op == IR_RED)
            continue;
        const IrNode *n = &k->nodes[i];
        int32_t ops[3] = {n->a, n->b, n->c};
        for (int j = 0; j < 3; j++)
            if (ops[j] >= 0 && k->nodes[ops[j]].level >= min_level)
                need[ops[j]] = 1;
    }
}

static const char *const level_names[] = {"const", "uniform", "row", "elem", "lambda"};

static void dump_node(const IrKernel *k, int i, Buf *out)
{
    const IrNode *n = &k->nodes[i];
    buf_printf(out, "  %%%d = ", i);
    switch ((IrOp)n->op) {
    case IR_CONST: value_format(n->value, out, false); break;
    case IR_SCALAR: buf_printf(out, "scalar #%d", n->aux); break;
    case IR_LOAD: buf_printf(out, "load #%d", n->aux); break;
    case IR_IDX: buf_puts(out, "idx"); break;
    case IR_N: buf_puts(out, "n"); break;
    case IR_LPARAM:
        buf_printf(out, "lambda.%c", n->aux % 2 ? 'b' : 'a');
        if (n->aux >= 2) /* a tuple state's component */
            buf_printf(out, "%d", n->aux / 2);
        break;
    case IR_RAWIX:
        if (n->sub == RAW_FLAT)
            buf_printf(out, "raw#%d.flat(%%%d)", n->aux, n->a);
        else
            buf_printf(out, "raw#%d.dim%d(%%%d) of %lld", n->aux, n->sub, n->a, (long long)n->value.v.i);
        break;
    case IR_RAWLD: buf_printf(out, "raw#%d[%%%d]", n->aux, n->a); break;
    case IR_RAWSHAPE: buf_printf(out, "shape(raw#%d, %d)", n->aux, n->sub); break;
    case IR_DIMIDX: buf_printf(out, "index(%d)", n->sub); break;
    case IR_UNARY: buf_printf(out, "%s%%%d", op_info[n->sub].tok, n->a); break;
    case IR_BINARY: buf_printf(out, "%%%d %s %%%d", n->a, op_info[n->sub].tok, n->b); break;
    case IR_SELECT: buf_printf(out, "%%%d ? %%%d : %%%d", n->a, n->b, n->c); break;
    case IR_CAST:
        buf_printf(out, "%s%s(%%%d)", n->sub == n->type ? "round " : n->aux ? "adopt " : "", type_name((Type)n->type),
                   n->a);
        break;
    case IR_CALL:
        buf_printf(out, "%s(%%%d", builtin_info[n->sub].name, n->a);
        if (n->b >= 0) buf_printf(out, ", %%%d", n->b);
        if (n->c >= 0) buf_printf(out, ", %%%d", n->c);
        buf_puts(out, ")");
        break;
    case IR_RED: buf_printf(out, "reducer #%d", n->aux); break;
    }
    buf_printf(out, " : %s  [%s", type_name((Type)n->type), level_names[n->level]);
    if (n->phase)
        buf_printf(out, ", after phase %d", n->phase);
    buf_puts(out, "]\n");
}

void ir_dump(const IrKernel *k, Buf *out)
{
    const Instance *in = k->inst;
    buf_printf(out, "kernel %s (%s", in->name, in->reduction ? "reduction" : "elementwise");
    if (in->reduction)
        buf_printf(out, ", %d phase%s", k->nphases, k->nphases == 1 ? "" : "s");
    buf_puts(out, ")\n");
    int nt = 0, ns = 0;
    for (int i = 0; i < in->nparams; i++) {
        const InstParam *p = &in->params[i];
        if (p->tensor)
            buf_printf(out, "  load #%d = %s: %s[]", nt++, p->name, type_name(p->type));
        else
            buf_printf(out, "  scalar #%d = %s: %s", ns++, p->name, type_name(p->type));
        if (p->storage != p->type)
            buf_printf(out, " (stored as %s)", type_name(p->storage));
        buf_puts(out, "\n");
    }
    for (int i = 0; i < k->nnodes; i++)
        dump_node(k, i, out);
    for (int i = 0; i < k->nreds; i++) {
        const IrReducer *r = &k->reds[i];
        buf_printf(out, "  reducer #%d = %s(%%%d", i, reducer_info[r->kind].name, r->arg);
        if (r->ident >= 0)
            buf_printf(out, ", %%%d, |a, b| %%%d", r->ident, r->combine);
        buf_printf(out, ") : %s, accumulates %s", type_name(r->res_type), type_name(r->acc_type));
        if (r->width > 1)
            buf_printf(out, ", value %d of the tuple state #%d..#%d", i - r->head, r->head, r->head + r->width - 1);
        buf_puts(out, "\n");
    }
    for (int p = 1; p <= k->nphases; p++) {
        buf_printf(out, "  phase %d: one pass fusing", p);
        for (int i = 0; i < k->nreds; i++)
            if (k->reds[i].phase == p)
                buf_printf(out, " #%d", i);
        buf_puts(out, "\n");
    }
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *o = &k->outs[i];
        buf_printf(out, "  out %s%s = %%%d : %s", o->name, o->tensor ? "[]" : "", o->node, type_name(o->type));
        if (o->storage != o->type)
            buf_printf(out, " (stored as %s)", type_name(o->storage));
        buf_puts(out, in->reduction ? (o->tensor ? "  (epilogue, full shape)\n" : "  (reduced shape)\n") : "\n");
    }
}

bool ir_reads_plan(const IrKernel *k)
{
    for (int i = 0; k && i < k->nnodes; i++)
        if (k->nodes[i].op >= IR_RAWIX && k->nodes[i].op <= IR_DIMIDX)
            return true;
    return false;
}
