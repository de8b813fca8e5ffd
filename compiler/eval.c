/* eval.c - an evaluator of an elementwise instance's IR, for the first
 * calls of a kernel whose C is still compiling (docs/runtime.md, "The
 * first call").
 *
 * Every node is computed by the constant folder (fold.c), which is the
 * generated code's semantics written once in C, compiled with the
 * generated code's -ffp-contract=off and computing f32 exp, log, sin, ...
 * with vmath.h, the functions the generated code calls.  Loads, stores and
 * casts follow emit.c's emit_load, emit_store and IR_CAST.  What the
 * folder does not compute (complex values, reductions, raw parameters,
 * idx and index(d), which read the loop's own state) is refused: such an
 * instance waits for its compile.  tests/runtime/eval-bits.sh checks the
 * bits against the compiled code over the conformance kernels.
 */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/include/nnk/abi.h" /* nnk_plan */

struct NnkcEval {
    IrNode *nodes; /* the needed nodes, renumbered in order */
    int nnodes;
    int nloads, nouts, nscalars;
    Type load_storage[NNKC_MAX_PARAMS], load_type[NNKC_MAX_PARAMS];
    Type scalar_type[NNKC_MAX_PARAMS];
    int out_node[NNKC_MAX_PARAMS];
    Type out_type[NNKC_MAX_PARAMS], out_storage[NNKC_MAX_PARAMS];
};

static bool real_type(Type t)
{
    return t < T_NSCALAR && !type_is_complex(t);
}

/* The operators the folder computes for operands of type t. */
static bool takes(const IrKernel *k, const IrNode *n)
{
    if (!real_type((Type)n->type))
        return false;
    int32_t ops[3] = {n->a, n->b, n->c};
    for (int i = 0; i < 3; i++)
        if (ops[i] >= 0 && !real_type((Type)k->nodes[ops[i]].type))
            return false;
    switch ((IrOp)n->op) {
    case IR_CONST: case IR_SCALAR: case IR_LOAD: case IR_SELECT:
        return true;
    case IR_UNARY: {
        Value r;
        return (n->sub == UN_NEG || n->sub == UN_NOT || n->sub == UN_BITNOT) &&
               fold_unary((Op)n->sub, (Type)n->type, value_int((Type)k->nodes[n->a].type, 1), &r);
    }
    case IR_BINARY: {
        /* (shifts read the count in its own type; the folder adopts it to the
         * value's: equal types only) */
        const Type a = (Type)k->nodes[n->a].type, b = (Type)k->nodes[n->b].type;
        Value r;
        return (n->sub != BIN_SHL && n->sub != BIN_SHR ? true : a == b) &&
               fold_binary((Op)n->sub, a, value_int(a, 1), value_int(b, 1), &r);
    }
    case IR_CAST:
        return n->sub < T_NSCALAR && !type_is_complex((Type)n->sub);
    case IR_CALL: {
        if (n->sub == B_WHERE)
            return true;
        if (n->sub == B_COMPLEX || n->sub == B_REAL || n->sub == B_IMAG || n->sub == B_CONJ)
            return false;
        /* what the folder computes for these operand types (a false would
         * leave a value unset) */
        Value args[3], r;
        int nargs = 0;
        for (int i = 0; i < 3 && ops[i] >= 0; i++)
            args[nargs++] = value_int((Type)k->nodes[ops[i]].type, 1);
        return fold_builtin((Builtin)n->sub, (Type)k->nodes[n->a].type, args, nargs, &r);
    }
    default:
        return false;
    }
}

NnkcEval *nnkc_eval_new(const IrKernel *k)
{
    if (!k || k->inst->reduction || k->nreds || k->nraw || k->nouts > NNKC_MAX_PARAMS || k->nloads > NNKC_MAX_PARAMS ||
        k->nscalars > NNKC_MAX_PARAMS)
        return NULL;
    int32_t roots[NNKC_MAX_PARAMS];
    for (int o = 0; o < k->nouts; o++) {
        if (!k->outs[o].tensor || !real_type(k->outs[o].type) || !real_type(k->outs[o].storage))
            return NULL;
        roots[o] = k->outs[o].node;
    }
    uint8_t *need = calloc((size_t)k->nnodes + 1, 1);
    int32_t *map = malloc(((size_t)k->nnodes + 1) * sizeof *map);
    NnkcEval *ev = calloc(1, sizeof *ev);
    if (!need || !map || !ev)
        goto fail;
    ir_mark(k, roots, k->nouts, L_CONST, need);
    int count = 0;
    for (int i = 0; i < k->nnodes; i++) {
        if (!need[i])
            continue;
        if (!takes(k, &k->nodes[i]))
            goto fail;
        map[i] = count++;
    }
    if (!(ev->nodes = calloc((size_t)count + 1, sizeof *ev->nodes)))
        goto fail;
    for (int i = 0; i < k->nnodes; i++) {
        if (!need[i])
            continue;
        IrNode n = k->nodes[i];
        n.a = n.a >= 0 ? map[n.a] : -1;
        n.b = n.b >= 0 ? map[n.b] : -1;
        n.c = n.c >= 0 ? map[n.c] : -1;
        ev->nodes[ev->nnodes++] = n;
    }
    /* tensor parameters in order are the loads' operands (emit.c's IR_LOAD) */
    const Instance *in = k->inst;
    int t = 0, s = 0;
    for (int i = 0; i < in->nparams; i++) {
        const InstParam *p = &in->params[i];
        if (p->tensor) {
            if (t == NNKC_MAX_PARAMS || !real_type(p->type) || !real_type(p->storage))
                goto fail;
            ev->load_storage[t] = p->storage, ev->load_type[t] = p->type;
            t++;
        } else {
            if (s == NNKC_MAX_PARAMS || s == NNK_MAX_SCALARS || !real_type(p->type))
                goto fail;
            ev->scalar_type[s++] = p->type;
        }
    }
    if (t != k->nloads)
        goto fail;
    ev->nloads = t;
    ev->nscalars = s;
    ev->nouts = k->nouts;
    for (int o = 0; o < k->nouts; o++) {
        ev->out_node[o] = map[k->outs[o].node];
        ev->out_type[o] = k->outs[o].type;
        ev->out_storage[o] = k->outs[o].storage;
    }
    free(need);
    free(map);
    return ev;
fail:
    free(need);
    free(map);
    nnkc_eval_free(ev);
    return NULL;
}

void nnkc_eval_free(NnkcEval *ev)
{
    if (ev)
        free(ev->nodes);
    free(ev);
}

int nnkc_eval_cost(const NnkcEval *ev)
{
    return ev ? ev->nnodes + ev->nloads + ev->nouts : 0;
}

/* ---- values in memory (runtime/convert.c's load and store) ---------------------- */

static int type_size(Type t)
{
    return type_info[t].bits / 8;
}

/* The element at p of storage type t as its compute value (emit_load's
 * first half: f16/bf16 widened, bool normalised). */
static Value load_raw(const char *p, Type t)
{
    switch (t) {
    case T_BOOL: return value_int(T_BOOL, *(const uint8_t *)p != 0);
    case T_I8: return value_int(T_I8, *(const int8_t *)p);
    case T_I16: return value_int(T_I16, *(const int16_t *)p);
    case T_I32: return value_int(T_I32, *(const int32_t *)p);
    case T_I64: return value_int(T_I64, *(const int64_t *)p);
    case T_U8: return value_int(T_U8, *(const uint8_t *)p);
    case T_U16: return value_int(T_U16, *(const uint16_t *)p);
    case T_U32: return value_int(T_U32, *(const uint32_t *)p);
    case T_U64: { Value v = {.type = T_U64}; v.v.u = *(const uint64_t *)p; return v; }
    case T_F16: return value_float(T_F16, nnkc_f16_to_f32(*(const uint16_t *)p));
    case T_BF16: return value_float(T_BF16, nnkc_bf16_to_f32(*(const uint16_t *)p));
    case T_F32: return value_float(T_F32, *(const float *)p);
    default: return value_float(T_F64, *(const double *)p);
    }
}

/* v (of type t) into the element at p (emit_store's rounding: f16/bf16
 * once from the compute value, value_cast having brought f64 and integers
 * to the 16-bit grid through a double rounded to odd). */
static void store_raw(char *p, Type t, Value v)
{
    switch (t) {
    case T_BOOL: *(uint8_t *)p = v.v.i != 0; break;
    case T_I8: *(int8_t *)p = (int8_t)v.v.i; break;
    case T_I16: *(int16_t *)p = (int16_t)v.v.i; break;
    case T_I32: *(int32_t *)p = (int32_t)v.v.i; break;
    case T_I64: *(int64_t *)p = v.v.i; break;
    case T_U8: *(uint8_t *)p = (uint8_t)v.v.u; break;
    case T_U16: *(uint16_t *)p = (uint16_t)v.v.u; break;
    case T_U32: *(uint32_t *)p = (uint32_t)v.v.u; break;
    case T_U64: *(uint64_t *)p = v.v.u; break;
    case T_F16: *(uint16_t *)p = nnkc_f32_to_f16((float)v.v.f); break;
    case T_BF16: *(uint16_t *)p = nnkc_f32_to_bf16((float)v.v.f); break;
    case T_F32: *(float *)p = (float)v.v.f; break;
    default: *(double *)p = v.v.f; break;
    }
}

/* A compute value as type `to` (emit_convert: to f16/bf16 from another
 * type rounds once to their grid; between a type and itself nothing). */
static Value convert(Value v, Type to)
{
    if (v.type == to)
        return v;
    return value_cast(v, to);
}

/* ---- one element ------------------------------------------------------------ */

static Value eval_node(const NnkcEval *ev, const IrNode *n, const Value *val, const Value *loads,
                       const Value *scalars)
{
    Value r = {.type = (Type)n->type};
    const Type t = (Type)n->type;
    switch ((IrOp)n->op) {
    case IR_CONST:
        return n->value;
    case IR_SCALAR:
        return scalars[n->aux];
    case IR_LOAD:
        return loads[n->aux];
    case IR_UNARY:
        fold_unary((Op)n->sub, t, val[n->a], &r);
        return r;
    case IR_BINARY:
        fold_binary((Op)n->sub, (Type)ev->nodes[n->a].type, val[n->a], val[n->b], &r);
        return r;
    case IR_SELECT:
        return value_truth(val[n->a]) ? val[n->b] : val[n->c];
    case IR_CAST:
        /* from f16 to f16 (bf16 too): rounded; aux: a weak value adopting
         * f16/bf16 at f32 precision (emit.c) */
        if (n->sub == n->type)
            return value_round(val[n->a]);
        if (n->aux)
            return value_adopt(val[n->a], t);
        return convert(val[n->a], t);
    case IR_CALL: {
        const Builtin bi = (Builtin)n->sub;
        if (bi == B_WHERE)
            return value_truth(val[n->a]) ? val[n->b] : val[n->c];
        const Type ot = (Type)ev->nodes[n->a].type;
        Value args[3];
        int nargs = 0;
        const int32_t ids[3] = {n->a, n->b, n->c};
        for (int i = 0; i < 3 && ids[i] >= 0; i++)
            args[nargs++] = val[ids[i]];
        fold_builtin(bi, ot, args, nargs, &r);
        return convert(r, t);
    }
    default:
        return r; /* refused by nnkc_eval_new */
    }
}

/* Elements [begin, end) of the plan, in flat (row-major) order. */
void nnkc_eval_run(const NnkcEval *ev, const nnk_plan *p, int64_t begin, int64_t end)
{
    enum { STACK = 64 };
    Value stack[STACK];
    Value *val = ev->nnodes <= STACK ? stack : malloc((size_t)ev->nnodes * sizeof *val);
    if (!val)
        return;
    Value scalars[NNKC_MAX_PARAMS], loads[NNKC_MAX_PARAMS], outs[NNKC_MAX_PARAMS];
    for (int s = 0; s < ev->nscalars; s++)
        scalars[s] = load_raw((const char *)&p->scalars[s], ev->scalar_type[s]);
    const int nd = p->ndim;
    int64_t ix[NNK_MAX_DIMS];
    for (int64_t e = begin; e < end; e++) {
        /* the element's index along each dimension, the last fastest */
        int64_t rest = e;
        for (int d = nd - 1; d >= 0; d--) {
            ix[d] = p->shape[d] ? rest % p->shape[d] : 0;
            rest = p->shape[d] ? rest / p->shape[d] : 0;
        }
        for (int t = 0; t < ev->nloads; t++) {
            int64_t off = 0;
            for (int d = 0; d < nd; d++)
                off += ix[d] * p->strides[t][d];
            const Type st = ev->load_storage[t];
            loads[t] = convert(load_raw(p->data[t] + off * type_size(st), st), ev->load_type[t]);
        }
        for (int i = 0; i < ev->nnodes; i++)
            val[i] = eval_node(ev, &ev->nodes[i], val, loads, scalars);
        for (int o = 0; o < ev->nouts; o++)
            outs[o] = convert(val[ev->out_node[o]], ev->out_type[o]);
        /* every output after every load: an output that is an input (in
         * place, inout) is read before it is written */
        for (int o = 0; o < ev->nouts; o++) {
            const int t = ev->nloads + o;
            int64_t off = 0;
            for (int d = 0; d < nd; d++)
                off += ix[d] * p->strides[t][d];
            const Type st = ev->out_storage[o];
            Value v = outs[o];
            if (st == T_F16 || st == T_BF16) {
                /* f32 compute values round once; f64 and integers through value_cast's one rounding */
                if (type_compute(v.type) != T_F32)
                    v = value_cast(v, st);
            } else {
                v = convert(v.type == T_F16 || v.type == T_BF16 ? (Value){.type = T_F32, .v.f = v.v.f} : v, st);
            }
            store_raw(p->data[t] + off * type_size(st), st, v);
        }
    }
    if (val != stack)
        free(val);
}
