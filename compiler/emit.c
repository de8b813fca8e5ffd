/* emit.c - what the C and CUDA emitters share: IR nodes as C-family
 * expressions.
 *
 * Both back ends compute with the same types (types.def) and call the same
 * helper names, nnk_<operation>_<type>, which each back end's prelude
 * defines (templates/c/prelude.tmpl, templates/cuda/prelude.tmpl), so an
 * expression prints the same way for both.  What differs is the loop
 * around it, which the caller describes with an Access: how to read an
 * operand, and the names of idx, n, reducer results and lambda parameters.
 */
#include "nnkc.h"

#include <math.h>
#include <string.h>

const char *type_suffix(Type t)
{
    return type_name(type_compute(t));
}

const char *ctype(Type t)
{
    return type_info[t].compute;
}

const char *stype(Type t)
{
    return type_info[t].storage;
}

/* A constant as a literal of its compute type. */
void emit_literal(Value v, Type t, Buf *out)
{
    Type ct = type_compute(t);
    v = value_adopt(v, t);
    if (type_is_float(ct)) {
        double f = v.v.f;
        if (f != f)
            buf_puts(out, ct == T_F64 ? "(double)NAN" : "NAN");
        else if (isinf(f))
            buf_puts(out, f > 0 ? (ct == T_F64 ? "(double)INFINITY" : "INFINITY")
                                : (ct == T_F64 ? "(-(double)INFINITY)" : "(-INFINITY)"));
        else {
            if (signbit(f))
                buf_puts(out, "(");
            Value d = {.type = T_F64};
            d.v.f = f;
            value_format(d, out, true);
            if (ct == T_F32)
                buf_puts(out, "f");
            if (signbit(f))
                buf_puts(out, ")");
        }
        return;
    }
    switch (ct) {
    case T_BOOL: buf_puts(out, v.v.i ? "1" : "0"); break;
    case T_I64:
        if (v.v.i == INT64_MIN)
            buf_puts(out, "INT64_MIN");
        else
            buf_printf(out, "INT64_C(%lld)", (long long)v.v.i);
        break;
    case T_U64: buf_printf(out, "UINT64_C(%llu)", (unsigned long long)v.v.u); break;
    case T_I32:
        if (v.v.i == INT32_MIN)
            buf_puts(out, "INT32_MIN");
        else
            buf_printf(out, "%lld", (long long)v.v.i);
        break;
    case T_U32: buf_printf(out, "%lluu", (unsigned long long)v.v.u); break;
    case T_I8: case T_I16: buf_printf(out, "(%s)%lld", ctype(ct), (long long)v.v.i); break;
    case T_U8: case T_U16: buf_printf(out, "(%s)%llu", ctype(ct), (unsigned long long)v.v.u); break;
    default: nnkc_assert(!"literal type");
    }
}

/* Converts a compute value of type `from` to the compute value of `to`
 * (the language's conversions; f16/bf16 targets round). */
void emit_convert(Type from, Type to, const char *v, Buf *out)
{
    Type cf = type_compute(from), ct = type_compute(to);
    if (from == to) {
        buf_puts(out, v);
    } else if (to == T_BOOL) {
        buf_printf(out, "(uint8_t)(%s != 0)", v);
    } else if (type_is_float(to)) {
        const char *rnd = to == T_F16 ? "nnk_rnd_f16" : to == T_BF16 ? "nnk_rnd_bf16" : NULL;
        bool need_round = rnd && !(from == T_F16 && to == T_F16);
        if (cf == ct)
            buf_printf(out, need_round ? "%s(%s)" : "%.0s%s", need_round ? rnd : "", v);
        else if (need_round)
            buf_printf(out, "%s((float)%s)", rnd, v);
        else
            buf_printf(out, "(%s)%s", ctype(ct), v);
    } else if (type_is_float(from)) {
        buf_printf(out, "nnk_to_%s(%s)", type_name(to), v);
    } else {
        buf_printf(out, "(%s)%s", ctype(to), v);
    }
}

/* Reads a storage value (expression `v` of C type stype(storage)) as the
 * compute value of `logical`. */
void emit_load(Type storage, Type logical, const char *v, Buf *out)
{
    Buf tmp = {0};
    if (storage == T_F16)
        buf_printf(&tmp, "nnk_h2f(%s)", v);
    else if (storage == T_BF16)
        buf_printf(&tmp, "nnk_b2f(%s)", v);
    else if (storage == T_BOOL)
        buf_printf(&tmp, "(uint8_t)(%s != 0)", v);
    else
        buf_puts(&tmp, v);
    /* now a compute value of `storage`; a float already rounded when 16-bit */
    Type from = storage == T_F16 || storage == T_BF16 ? T_F32 : storage;
    if (logical == T_F16 || logical == T_BF16) {
        if (storage == logical)
            buf_puts(out, tmp.data);
        else
            emit_convert(from, logical, tmp.data, out);
    } else {
        emit_convert(from, logical, tmp.data, out);
    }
    buf_free(&tmp);
}

/* A compute value of `logical` as the storage value of `storage`. */
void emit_store(Type logical, Type storage, const char *v, Buf *out)
{
    if (storage == T_F16 || storage == T_BF16) {
        Buf tmp = {0};
        Type src = type_compute(logical);
        if (src != T_F32)
            emit_convert(logical, T_F32, v, &tmp);
        else
            buf_puts(&tmp, v);
        buf_printf(out, "%s(%s)", storage == T_F16 ? "nnk_f2h" : "nnk_f2b", tmp.data);
        buf_free(&tmp);
        return;
    }
    emit_convert(logical == T_F16 || logical == T_BF16 ? T_F32 : logical, storage, v, out);
}

/* ---- nodes -------------------------------------------------------------------- */

void emit_ref(const EmitAccess *ac, int id, Buf *out)
{
    const IrNode *n = &ac->k->nodes[id];
    if (n->op == IR_CONST)
        emit_literal(n->value, (Type)n->type, out);
    else
        buf_printf(out, "t%d", id);
}

static bool is_int_type(Type t) { return type_is_int(t); }

static void emit_binary(const EmitAccess *ac, const IrNode *n, Buf *out)
{
    Buf a = {0}, b = {0};
    emit_ref(ac, n->a, &a);
    emit_ref(ac, n->b, &b);
    Type ot = (Type)ac->k->nodes[n->a].type;
    Op op = (Op)n->sub;
    const char *sfx = type_suffix(ot);
    if (is_int_type(ot)) {
        switch (op) {
        case BIN_ADD: buf_printf(out, "nnk_add_%s(%s, %s)", sfx, a.data, b.data); goto done;
        case BIN_SUB: buf_printf(out, "nnk_sub_%s(%s, %s)", sfx, a.data, b.data); goto done;
        case BIN_MUL: buf_printf(out, "nnk_mul_%s(%s, %s)", sfx, a.data, b.data); goto done;
        case BIN_DIV: buf_printf(out, "nnk_div_%s(%s, %s)", sfx, a.data, b.data); goto done;
        case BIN_MOD: buf_printf(out, "nnk_mod_%s(%s, %s)", sfx, a.data, b.data); goto done;
        case BIN_SHL: buf_printf(out, "nnk_shl_%s(%s, %s)", sfx, a.data, b.data); goto done;
        case BIN_SHR: buf_printf(out, "nnk_shr_%s(%s, %s)", sfx, a.data, b.data); goto done;
        case BIN_BITAND: case BIN_BITOR: case BIN_BITXOR:
            buf_printf(out, "(%s)(%s %s %s)", ctype(ot), a.data, op_info[op].tok, b.data);
            goto done;
        default:
            break;
        }
    }
    if (ot == T_BOOL && (op == BIN_ADD || op == BIN_SUB || op == BIN_MUL || op == BIN_DIV)) {
        nnkc_assert(!"bool arithmetic reaches the emitter");
    }
    if (op == BIN_BITAND || op == BIN_BITOR || op == BIN_BITXOR)
        buf_printf(out, "(uint8_t)(%s %s %s)", a.data, op_info[op].tok, b.data);
    else if (op == BIN_LAND || op == BIN_LOR || (op >= BIN_EQ && op <= BIN_GE))
        buf_printf(out, "(uint8_t)(%s %s %s)", a.data, op_info[op].tok, b.data);
    else
        buf_printf(out, "%s %s %s", a.data, op_info[op].tok, b.data);
done:
    buf_free(&a);
    buf_free(&b);
}

/* The expression of one node (not its declaration). */
void emit_expr(const EmitAccess *ac, int id, Buf *out)
{
    const IrNode *n = &ac->k->nodes[id];
    switch ((IrOp)n->op) {
    case IR_CONST:
        emit_literal(n->value, (Type)n->type, out);
        break;
    case IR_SCALAR:
        buf_printf(out, "s%d", n->aux);
        break;
    case IR_LOAD: {
        const InstParam *p = NULL;
        int t = 0;
        for (int i = 0; i < ac->k->inst->nparams; i++) {
            if (!ac->k->inst->params[i].tensor)
                continue;
            if (t++ == n->aux)
                p = &ac->k->inst->params[i];
        }
        nnkc_assert(p);
        Buf acc = {0};
        ac->operand(ac, n->aux, &acc);
        emit_load(p->storage, p->type, acc.data, out);
        buf_free(&acc);
        break;
    }
    case IR_IDX:
        buf_puts(out, ac->idx);
        break;
    case IR_N:
        buf_puts(out, ac->n);
        break;
    case IR_RED:
        buf_printf(out, ac->red_fmt, n->aux);
        break;
    case IR_LPARAM:
        buf_puts(out, n->aux ? "lb" : "la");
        break;
    case IR_UNARY: {
        Type t = (Type)n->type;
        Buf a = {0};
        emit_ref(ac, n->a, &a);
        if (n->sub == UN_NEG)
            buf_printf(out, is_int_type(t) ? "nnk_neg_%s(%s)" : "%.0s-%s", type_suffix(t), a.data);
        else if (n->sub == UN_NOT)
            buf_printf(out, "(uint8_t)!%s", a.data);
        else if (t == T_BOOL)
            buf_printf(out, "(uint8_t)!%s", a.data);
        else
            buf_printf(out, "(%s)~%s", ctype(t), a.data);
        buf_free(&a);
        break;
    }
    case IR_BINARY:
        emit_binary(ac, n, out);
        break;
    case IR_SELECT: {
        Buf c = {0}, a = {0}, b = {0};
        emit_ref(ac, n->a, &c);
        emit_ref(ac, n->b, &a);
        emit_ref(ac, n->c, &b);
        buf_printf(out, "%s ? %s : %s", c.data, a.data, b.data);
        buf_free(&c);
        buf_free(&a);
        buf_free(&b);
        break;
    }
    case IR_CAST: {
        Buf a = {0};
        emit_ref(ac, n->a, &a);
        emit_convert((Type)n->sub, (Type)n->type, a.data, out);
        buf_free(&a);
        break;
    }
    case IR_CALL: {
        Type ot = (Type)ac->k->nodes[n->a].type;
        Builtin bi = (Builtin)n->sub;
        if (bi == B_WHERE) {
            Buf c = {0}, a = {0}, b = {0};
            emit_ref(ac, n->a, &c);
            emit_ref(ac, n->b, &a);
            emit_ref(ac, n->c, &b);
            buf_printf(out, "%s ? %s : %s", c.data, a.data, b.data);
            buf_free(&c);
            buf_free(&a);
            buf_free(&b);
            break;
        }
        if ((bi == B_ISNAN || bi == B_ISINF || bi == B_ISFINITE) && !type_is_float(ot)) {
            buf_puts(out, bi == B_ISFINITE ? "(uint8_t)1" : "(uint8_t)0");
            break;
        }
        buf_printf(out, "nnk_%s_%s(", builtin_info[bi].name, type_suffix(ot));
        int32_t args[3] = {n->a, n->b, n->c};
        for (int i = 0; i < 3 && args[i] >= 0; i++) {
            if (i)
                buf_puts(out, ", ");
            emit_ref(ac, args[i], out);
        }
        buf_puts(out, ")");
        break;
    }
    }
}

/* Declares every node marked in `need` and not yet in `done`, in order, as
 * "const T tN = expr;" lines (constants are printed where used). */
void emit_nodes(const EmitAccess *ac, const uint8_t *need, uint8_t *done, const char *indent, Buf *out)
{
    for (int i = 0; i < ac->k->nnodes; i++) {
        if (!need[i] || (done && done[i]))
            continue;
        const IrNode *n = &ac->k->nodes[i];
        if (done)
            done[i] = 1;
        if (n->op == IR_CONST)
            continue;
        buf_printf(out, "%sconst %s t%d = ", indent, ctype((Type)n->type), i);
        emit_expr(ac, i, out);
        buf_puts(out, ";\n");
    }
}
