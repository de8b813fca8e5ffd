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
#include <stdlib.h>
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

/* The shortest decimal that reads back as f (as a float when f32: the
 * f32 value 0.044715 is "0.044715f", not the 17 digits of the double it
 * equals), with ".0" when it would read as an integer, and the f suffix.
 * Both C compilers and nvcc round a decimal literal to the nearest float
 * directly, as strtof does. */
void emit_float_digits(double f, bool f32, Buf *out)
{
    char s[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, f);
        if (f32 ? strtof(s, NULL) == (float)f : strtod(s, NULL) == f)
            break;
    }
    /* the same digits without an exponent up to millions (100.0, not 1e+02) */
    int exp10 = f != 0 ? (int)floor(log10(fabs(f))) : 0;
    if (strchr(s, 'e') && exp10 >= 0 && exp10 <= 6)
        snprintf(s, sizeof s, "%.*f", prec - 1 - exp10 > 0 ? prec - 1 - exp10 : 0, f);
    buf_puts(out, s);
    if (!strpbrk(s, ".e"))
        buf_puts(out, ".0");
    if (f32)
        buf_puts(out, "f");
}

/* A constant as a literal of its compute type. */
void emit_literal(Value v, Type t, Buf *out)
{
    Type ct = type_compute(t);
    v = value_adopt(v, t);
    if (type_is_complex(ct)) {
        Type p = type_part(ct);
        buf_printf(out, "nnk_mk_%s(", type_name(ct));
        emit_literal(value_float(p, v.v.f), p, out);
        buf_puts(out, ", ");
        emit_literal(value_float(p, v.im), p, out);
        buf_puts(out, ")");
        return;
    }
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
            emit_float_digits(f, ct == T_F32, out);
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
    } else if (type_is_complex(from) || type_is_complex(to)) {
        /* part by part; a real value is the real part, and to a real type
         * goes the real part (numpy's astype); to bool: either part */
        if (type_is_complex(from) && type_is_complex(to)) {
            buf_printf(out, "nnk_%s_to_%s(%s)", type_name(from), type_name(to), v);
        } else if (type_is_complex(to)) {
            buf_printf(out, "nnk_mk_%s(", type_name(to));
            emit_convert(from, type_part(to), v, out);
            buf_printf(out, ", %s)", to == T_C64 ? "0.0f" : "0.0");
        } else if (to == T_BOOL) {
            buf_printf(out, "nnk_truth_%s(%s)", type_name(from), v);
        } else {
            Buf re = {0};
            buf_printf(&re, "(%s).re", v);
            emit_convert(type_part(from), to, re.data, out);
            buf_free(&re);
        }
    } else if (to == T_BOOL) {
        buf_printf(out, "(uint8_t)(%s != 0)", v);
    } else if (to == T_F16 || to == T_BF16) {
        /* One rounding from the exact value: f32 values round directly; f64
         * and wide integers go through a double rounded to odd (prelude:
         * nnk_rnd_f16_d), because a detour through (float) rounds twice. */
        const char *h = to == T_F16 ? "f16" : "bf16";
        if (cf == T_F32)
            buf_printf(out, "nnk_rnd_%s(%s)", h, v);
        else if (from == T_F64)
            buf_printf(out, "nnk_rnd_%s_d(%s)", h, v);
        else if (type_info[from].bits <= 16)
            buf_printf(out, "nnk_rnd_%s((float)%s)", h, v);   /* exact in f32 */
        else if (type_info[from].bits == 32)
            buf_printf(out, "nnk_rnd_%s_d((double)%s)", h, v); /* exact in f64 */
        else
            buf_printf(out, "nnk_rnd_%s_d(nnk_%s_odd(%s))", h, type_is_signed(from) ? "i64" : "u64", v);
    } else if (type_is_float(to)) {
        if (cf == ct)
            buf_puts(out, v);
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
/* emit_load's value of a 16-bit float element v already widened to float
 * (nnk_h2f / nnk_b2f of it: a row kept on chip holds them so). */
static void emit_load_float(Type storage, Type logical, const char *v, Buf *out)
{
    if (logical == storage)
        buf_puts(out, v);
    else
        emit_convert(T_F32, logical, v, out);
}

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
        /* f32 compute values round once here; f64 ones directly (nnk_d2h),
         * not through a rounded f32; integers convert to the (exact) rounded
         * float first. */
        const char *h = storage == T_F16 ? "h" : "b";
        Type src = type_compute(logical);
        if (src == T_F32) {
            buf_printf(out, "nnk_f2%s(%s)", h, v);
        } else if (src == T_F64) {
            buf_printf(out, "nnk_d2%s(%s)", h, v);
        } else {
            Buf tmp = {0};
            emit_convert(logical, storage, v, &tmp);
            buf_printf(out, "nnk_f2%s(%s)", h, tmp.data);
            buf_free(&tmp);
        }
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

/* n->a ? n->b : n->c (select, where) */
static void emit_choice(const EmitAccess *ac, const IrNode *n, Buf *out)
{
    Buf c = {0}, a = {0}, b = {0};
    emit_ref(ac, n->a, &c);
    emit_ref(ac, n->b, &a);
    emit_ref(ac, n->c, &b);
    buf_printf(out, "%s ? %s : %s", c.data, a.data, b.data);
    buf_free(&c);
    buf_free(&a);
    buf_free(&b);
}

static void emit_binary(const EmitAccess *ac, const IrNode *n, Buf *out)
{
    Buf a = {0}, b = {0};
    emit_ref(ac, n->a, &a);
    emit_ref(ac, n->b, &b);
    Type ot = (Type)ac->k->nodes[n->a].type;
    const OpInfo *op = &op_info[n->sub];
    /* ops.def: integers through the prelude's helper, else C's operator typed by the row's form;
     * complex values through their helpers (sema lets only these reach them) */
    if (type_is_complex(ot)) {
        const char *h = n->sub == BIN_EQ ? "eq" : n->sub == BIN_NE ? "ne" : op->helper;
        nnkc_assert(h && (n->sub == BIN_EQ || n->sub == BIN_NE || n->sub == BIN_ADD || n->sub == BIN_SUB ||
                          n->sub == BIN_MUL || n->sub == BIN_DIV));
        buf_printf(out, "nnk_%s_%s(%s, %s)", h, type_name(ot), a.data, b.data);
    } else if (op->helper && is_int_type(ot))
        buf_printf(out, "nnk_%s_%s(%s, %s)", op->helper, type_suffix(ot), a.data, b.data);
    else if (op->form == OPF_CAST)
        buf_printf(out, "(%s)(%s %s %s)", ctype(ot), a.data, op->tok, b.data);
    else if (op->form == OPF_BOOL)
        buf_printf(out, "(uint8_t)(%s %s %s)", a.data, op->tok, b.data);
    else if (ot == T_BOOL)
        nnkc_assert(!"bool arithmetic reaches the emitter");
    else
        buf_printf(out, "%s %s %s", a.data, op->tok, b.data);
    buf_free(&a);
    buf_free(&b);
}

/* A raw parameter's index, load or shape, or index(d): they read the plan
 * (c/prelude.tmpl); an index out of range sets the plan's range error and
 * reads no memory. */
static void emit_raw(const EmitAccess *ac, const IrNode *n, Buf *out)
{
    const char *p = ac->plan ? ac->plan : "p", *h = ac->raw_args ? ac->raw_args : p;
    Buf a = {0};
    if (n->a >= 0)
        emit_ref(ac, n->a, &a);
    if (n->op == IR_RAWIX && n->sub == RAW_FLAT)
        buf_printf(out, "nnk_raw_flat_(%s, %d, %s)", h, n->aux, a.data);
    else if (n->op == IR_RAWIX)
        buf_printf(out, "nnk_raw_at_(%s, %d, %d, %d, %s)", h, n->aux, n->sub, (int)n->value.v.i, a.data);
    else if (n->op == IR_RAWSHAPE)
        buf_printf(out, "nnk_raw_shape_(%s, %d, %d)", h, n->aux, n->sub);
    else if (n->op == IR_DIMIDX)
        buf_printf(out, "nnk_index_(%s, %d, %s)", h, n->sub, ac->idx);
    else {
        Type st = ac->k->raw_storage[n->aux], t = (Type)n->type;
        Buf acc = {0};
        if (ac->raw_data) {
            buf_printf(&acc, ac->raw_data, ac->k->raw_operand[n->aux]);
            buf_printf(&acc, "[%s]", a.data);
        } else {
            buf_printf(&acc, "((const %s *)%s->raw[%d].data)[%s]", stype(st), p, n->aux, a.data);
        }
        buf_printf(out, "(%s->raw[%d].size ? ", p, n->aux);
        emit_load(st, t, acc.data, out);
        buf_puts(out, " : ");
        emit_literal(value_cast(value_int(T_I64, 0), t), t, out);
        buf_puts(out, ")");
        buf_free(&acc);
    }
    buf_free(&a);
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
        if (ac->cached && ac->cached[n->aux])
            emit_load_float(p->storage, p->type, acc.data, out);
        else
            emit_load(p->storage, p->type, acc.data, out);
        buf_free(&acc);
        break;
    }
    case IR_IDX:
        buf_puts(out, ac->idx);
        break;
    case IR_RAWIX: case IR_RAWLD: case IR_RAWSHAPE: case IR_DIMIDX:
        emit_raw(ac, n, out);
        break;
    case IR_N:
        buf_puts(out, ac->n);
        break;
    case IR_RED:
        buf_printf(out, ac->red_fmt, n->aux);
        break;
    case IR_LPARAM:
        /* la, lb; a tuple state's component j > 0: laj, lbj */
        buf_puts(out, n->aux % 2 ? "lb" : "la");
        if (n->aux >= 2)
            buf_printf(out, "%d", n->aux / 2);
        break;
    case IR_UNARY: {
        Type t = (Type)n->type;
        Buf a = {0};
        emit_ref(ac, n->a, &a);
        if (n->sub == UN_NEG && (is_int_type(t) || type_is_complex(t)))
            buf_printf(out, "nnk_%s_%s(%s)", op_info[n->sub].helper, type_suffix(t), a.data);
        else if (n->sub == UN_NEG)
            buf_printf(out, "-%s", a.data);
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
    case IR_SELECT:
        emit_choice(ac, n, out);
        break;
    case IR_CAST: {
        Buf a = {0};
        emit_ref(ac, n->a, &a);
        /* aux: a weak value adopting f16/bf16 keeps f32 precision; from the
         * type to itself: an f16/bf16 compute value rounded (lower.c) */
        if (n->sub == n->type)
            buf_printf(out, "nnk_rnd_%s(%s)", type_name((Type)n->type), a.data);
        else
            emit_convert((Type)n->sub, n->aux ? type_compute((Type)n->type) : (Type)n->type, a.data, out);
        buf_free(&a);
        break;
    }
    case IR_CALL: {
        Type ot = (Type)ac->k->nodes[n->a].type;
        Builtin bi = (Builtin)n->sub;
        if (bi == B_WHERE) {
            emit_choice(ac, n, out);
            break;
        }
        if ((bi == B_ISNAN || bi == B_ISINF || bi == B_ISFINITE) && !type_is_float(ot) && !type_is_complex(ot)) {
            buf_puts(out, bi == B_ISFINITE ? "(uint8_t)1" : "(uint8_t)0");
            break;
        }
        /* nextafter steps on the grid of the type itself, f16 and bf16
         * included (their helpers take and give the f32 compute value) */
        buf_printf(out, "nnk_%s_%s(", builtin_info[bi].name, bi == B_NEXTAFTER ? type_name(ot) : type_suffix(ot));
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

/* "/\* file.nnk:LINE: let u = ... *\/": the source line of range r, for the
 * reader of the generated code (the file's base name, so the text does
 * not depend on the directory nnkc ran in; user text goes through
 * emit_comment_text). */
static void emit_source_comment(const Range *r, const char *indent, Buf *out)
{
    Compiler *c = nnkc_current();
    const SourceFile *sf = c ? source_get(c, r->file) : NULL;
    if (!sf || !sf->text || r->off > sf->len)
        return;
    size_t end, start = source_line(sf, r->off, &end);
    const char *b = sf->text + start, *e = sf->text + end;
    while (b < e && (*b == ' ' || *b == '\t'))
        b++;
    size_t len = (size_t)(e - b);
    bool cut = len > 100;
    char line[104];
    memcpy(line, b, cut ? 100 : len);
    line[cut ? 100 : len] = 0;
    if (strlen(line) < (cut ? 100 : len)) /* a NUL byte in the line */
        cut = true;
    const char *base = strrchr(sf->path, '/');
    buf_printf(out, "%s/* %s:%d: %s%s */\n", indent, emit_comment_text(c, base ? base + 1 : sf->path), r->line,
               emit_comment_text(c, line), cut ? " ..." : "");
}

/* Declares every node marked in `need` and not yet in `done`, in order, as
 * "const T tN = expr;" lines (constants are printed where used), each
 * source line they come from named once in a comment before them. */
void emit_nodes(const EmitAccess *ac, const uint8_t *need, uint8_t *done, const char *indent, Buf *out)
{
    int32_t file = -1, line = -1;
    for (int i = 0; i < ac->k->nnodes; i++) {
        if (!need[i] || (done && done[i]))
            continue;
        const IrNode *n = &ac->k->nodes[i];
        if (done)
            done[i] = 1;
        if (n->op == IR_CONST)
            continue;
        const Range *r = ac->k->ranges ? &ac->k->ranges[i] : NULL;
        if (r && r->line > 0 && (r->line != line || r->file != file)) {
            emit_source_comment(r, indent, out);
            file = r->file, line = r->line;
        }
        buf_printf(out, "%sconst %s t%d = ", indent, ctype((Type)n->type), i);
        emit_expr(ac, i, out);
        buf_puts(out, ";\n");
    }
}

/* ---- reducers: identity, step, combine and final as statements ------------- */

bool red_is_arg(const IrReducer *r)
{
    return r->kind == R_ARGMAX || r->kind == R_ARGMIN;
}

/* The identity of every reducer but reduce(), whose identity is a node. */
void emit_red_identity(const IrReducer *r, Buf *out)
{
    Type a = r->acc_type;
    switch (r->kind) {
    case R_SUM: case R_MEAN: case R_ANY: emit_literal(value_int(a, 0), a, out); break;
    case R_PROD: case R_ALL: emit_literal(value_int(a, 1), a, out); break;
    case R_MAX:
    case R_MIN: {
        buf_puts(out, r->kind == R_MAX ? type_info[a].lowest : type_info[a].highest);
        break;
    }
    case R_ARGMAX: case R_ARGMIN: buf_puts(out, "0"); break;
    default: nnkc_assert(!"reduce() has an identity node");
    }
}

/* acc = acc (+) v, where acc and v have the accumulator type; for
 * argmax/argmin idxv and idx are the index lvalue and the element's index.
 * `comb` names reduce()'s combine function (called as comb(p, a, b)). */
void emit_red_step(const IrReducer *r, const char *comb, const char *acc, const char *v, const char *idxv,
                   const char *idx, Buf *out)
{
    if (r->kind != R_MAX && r->kind != R_MIN) {
        emit_red_combine(r, comb, acc, acc, v, idxv, idxv, idx, out);
        return;
    }
    /* max/min inline rather than through the helpers, so that the lane
     * loop vectorizes; a NaN, once taken, stays: v > NaN and v < NaN are
     * false */
    const char *cmp = r->kind == R_MAX ? ">" : "<";
    if (type_is_float(r->acc_type))
        buf_printf(out, "%s = (%s %s %s || %s != %s) ? %s : %s;\n", acc, v, cmp, acc, v, v, v, acc);
    else
        buf_printf(out, "%s = %s %s %s ? %s : %s;\n", acc, v, cmp, acc, v, acc);
}

/* dst = a combined with b (b covers the elements after a's), for two
 * partial results; dx, ax, bx: their indices (argmax/argmin).  max/min of
 * two partial results (both maybe NaN) use the NaN-propagating helpers. */
void emit_red_combine(const IrReducer *r, const char *comb, const char *dst, const char *a, const char *b,
                      const char *dx, const char *ax, const char *bx, Buf *out)
{
    Type t = r->acc_type;
    const char *sfx = type_suffix(t);
    switch (r->kind) {
    case R_SUM: case R_MEAN:
        if (type_is_int(t) || type_is_complex(t))
            buf_printf(out, "%s = nnk_add_%s(%s, %s);\n", dst, sfx, a, b);
        else
            buf_printf(out, "%s = %s + %s;\n", dst, a, b);
        break;
    case R_PROD:
        if (type_is_int(t) || type_is_complex(t))
            buf_printf(out, "%s = nnk_mul_%s(%s, %s);\n", dst, sfx, a, b);
        else
            buf_printf(out, "%s = %s * %s;\n", dst, a, b);
        break;
    case R_MAX: case R_MIN:
        buf_printf(out, "%s = nnk_%s_%s(%s, %s);\n", dst, r->kind == R_MAX ? "max" : "min", sfx, a, b);
        break;
    case R_ANY: buf_printf(out, "%s = (uint8_t)(%s | %s);\n", dst, a, b); break;
    case R_ALL: buf_printf(out, "%s = (uint8_t)(%s & %s);\n", dst, a, b); break;
    case R_ARGMAX: case R_ARGMIN: {
        /* the earlier (smaller) index wins ties, so the order of a and b
         * matters only through the indices */
        const char *fn = r->kind == R_ARGMAX ? "argmax" : "argmin";
        if (strcmp(dst, a) == 0)
            buf_printf(out, "nnk_%s_%s(&%s, &%s, %s, %s);\n", fn, sfx, dst, dx, b, bx);
        else
            buf_printf(out, "{\n    %s v_ = %s;\n    int64_t i_ = %s;\n    nnk_%s_%s(&v_, &i_, %s, %s);\n    %s = v_;\n    %s = i_;\n}\n",
                       ctype(t), a, ax, fn, sfx, b, bx, dst, dx);
        break;
    }
    case R_CUSTOM:
        buf_printf(out, "%s = %s(p, %s, %s);\n", dst, comb, a, b);
        break;
    default:
        nnkc_assert(!"reducer");
    }
}

/* a = a followed by b. */
void emit_red_merge(const IrReducer *r, const char *comb, const char *a, const char *b, const char *ax,
                    const char *bx, Buf *out)
{
    emit_red_combine(r, comb, a, a, b, ax, ax, bx, out);
}

/* The finished value (compute type of the result) from a state. */
void emit_red_final(const IrReducer *r, const char *acc, const char *idxv, const char *n, Buf *out)
{
    Type res = type_compute(r->res_type);
    switch (r->kind) {
    case R_MEAN:
        if (type_is_complex(r->acc_type)) {
            /* each part divided by n (numpy multiplies by 1/n) */
            const char *p = ctype(type_part(r->acc_type));
            buf_printf(out, "nnk_mk_%s(%s.re / (%s)%s, %s.im / (%s)%s)", type_name(r->acc_type), acc, p, n, acc, p, n);
        } else if (type_is_float(r->acc_type)) {
            Buf q = {0};
            buf_printf(&q, "%s / (%s)%s", acc, ctype(r->acc_type), n);
            emit_convert(r->acc_type, res, q.data, out);
            buf_free(&q);
        } else {
            buf_printf(out, "(double)%s / (double)%s", acc, n);
        }
        break;
    case R_ARGMAX: case R_ARGMIN:
        buf_puts(out, idxv);
        break;
    default:
        emit_convert(r->acc_type, res, acc, out);
    }
}

/* The parameters of a tuple state's combine functions: "T la, U la1, ...,
 * T lb, U lb1, ..." (each component in its accumulator type). */
void emit_red_tuple_params(const IrKernel *k, int head, Buf *out)
{
    const IrReducer *h = &k->reds[head];
    for (int side = 0; side < 2; side++)
        for (int j = 0; j < h->width; j++) {
            buf_printf(out, "%s%s l%c", side || j ? ", " : "", ctype(k->reds[head + j].acc_type), side ? 'b' : 'a');
            if (j)
                buf_printf(out, "%d", j);
        }
}

void emit_red_tuple(const IrKernel *k, int head, const char *comb, const char *dst, const char *a, const char *b,
                    const char *const *bvals, Buf *out)
{
    const IrReducer *h = &k->reds[head];
    Buf args = {0};
    buf_puts(out, "{\n");
    for (int side = 0; side < 2; side++)
        for (int j = 0; j < h->width; j++) {
            const IrReducer *r = &k->reds[head + j];
            buf_printf(out, "    const %s t%c%d_ = ", ctype(r->acc_type), side ? 'b' : 'a', j);
            if (side && bvals)
                buf_puts(out, bvals[j]);
            else
                buf_printf(out, side ? b : a, head + j);
            buf_puts(out, ";\n");
            buf_printf(&args, ", t%c%d_", side ? 'b' : 'a', j);
        }
    for (int j = 0; j < h->width; j++) {
        buf_puts(out, "    ");
        buf_printf(out, dst, head + j);
        buf_printf(out, " = %s%d(p%s);\n", comb, head + j, args.data);
    }
    buf_puts(out, "}\n");
    buf_free(&args);
}

void emit_red_tuple_state(const IrKernel *k, const EmitAccess *ac, int head, const char *name, Buf *step, Buf *merge)
{
    const IrReducer *h = &k->reds[head];
    const char *vals[NNKC_MAX_TUPLE];
    for (int j = 0; j < h->width; j++) {
        const IrReducer *r = &k->reds[head + j];
        Buf e = {0}, ec = {0};
        emit_ref(ac, r->arg, &e);
        emit_convert((Type)k->nodes[r->arg].type, r->acc_type, e.data, &ec);
        vals[j] = arena_strdup(nnkc_current()->arena, ec.data);
        buf_free(&e);
        buf_free(&ec);
    }
    Buf comb = {0};
    buf_printf(&comb, "%s__comb", name);
    emit_red_tuple(k, head, comb.data, "s->a%d", "s->a%d", NULL, vals, step);
    emit_red_tuple(k, head, comb.data, "a->a%d", "a->a%d", "b->a%d", NULL, merge);
    buf_free(&comb);
}

/* ---- the instance model: what every emitter knows of an instance ---------- */

void emit_operands_init(EmitOperands *o, Compiler *c, const Instance *in)
{
    memset(o, 0, sizeof *o);
    o->c = c;
    o->in = in;
    o->k = in->ir;
    for (int i = 0; i < in->nparams; i++) {
        const InstParam *p = &in->params[i];
        if (p->tensor) {
            o->storage[o->nops] = p->storage;
            o->type[o->nops] = p->type;
            o->name[o->nops] = p->name;
            o->nops++;
        } else {
            o->scalar_type[o->nscalars] = p->type;
            o->scalar_name[o->nscalars] = p->name;
            o->nscalars++;
        }
    }
    o->nin = o->nops;
    for (int i = 0; i < in->nouts; i++) {
        const InstParam *p = &in->outs[i];
        o->storage[o->nops] = p->storage;
        o->type[o->nops] = p->type;
        o->reduced[o->nops] = !p->tensor;
        o->output[o->nops] = true;
        o->name[o->nops] = p->name;
        o->nops++;
    }
}

const char *emit_str(Compiler *c, Buf *b)
{
    const char *s = arena_strdup(c->arena, b->data ? b->data : "");
    buf_free(b);
    return s;
}

/* Types in the public signatures: f16 and bf16 by their typedef names. */
const char *emit_api_type(Type t)
{
    return type_info[t].api;
}

const char *emit_scalar_member(Type t)
{
    return type_info[t].member;
}

/* "const float s0 = <plan>scalars[0].f32;" for each scalar parameter in
 * `used`; with used NULL, for all of them, each marked as maybe unused. */
void emit_read_scalars(const EmitOperands *o, const char *plan, const uint8_t *used, Buf *out)
{
    for (int s = 0; s < o->nscalars; s++) {
        if (used && !used[s])
            continue;
        char src[96];
        Type st = o->scalar_type[s];
        snprintf(src, sizeof src, "%sscalars[%d].%s", plan, s, emit_scalar_member(st));
        buf_printf(out, "const %s s%d = ", ctype(st), s);
        if (type_is_complex(st)) /* the union's pair of parts */
            buf_printf(out, "nnk_mk_%s(%s.re, %s.im)", type_name(st), src, src);
        else
            emit_load(st, st, src, out);
        buf_puts(out, ";\n");
        if (!used)
            buf_printf(out, "(void)s%d;\n", s);
    }
}

/* "(a: f32, x: f32[]) -> (z: f32[])" */
const char *emit_signature(const EmitOperands *o)
{
    const Instance *in = o->in;
    Buf b = {0};
    buf_puts(&b, "(");
    for (int i = 0; i < in->nparams; i++)
        buf_printf(&b, "%s%s%s: %s%s", i ? ", " : "", in->params[i].inout ? "inout " : "", in->params[i].name,
                   type_name(in->params[i].type), in->params[i].tensor ? "[]" : "");
    buf_puts(&b, ") -> (");
    for (int i = 0, first = 1; i < in->nouts; i++) {
        if (in->outs[i].inout) /* shown as the parameter */
            continue;
        buf_printf(&b, "%s%s: %s%s", first ? "" : ", ", in->outs[i].name, type_name(in->outs[i].type),
                   in->outs[i].tensor ? "[]" : "");
        first = 0;
    }
    buf_puts(&b, ")");
    return emit_str(o->c, &b);
}

/* Indents every line of `s` by `n` spaces into out. */
void emit_indent(Buf *out, const char *s, int n)
{
    for (const char *line = s, *nl; line && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        buf_printf(out, "%*s%.*s\n", n, "", nl ? (int)(nl - line) : (int)strlen(line), line);
        if (!nl)
            break;
    }
}

/* reduce(e, identity, |a, b| combine): the combine of each such reducer as
 * a function of two accumulator values, NAME__combK(p, la, lb) (of both
 * sides' every value for a tuple state), which may read scalar parameters
 * from the plan p.  Items of list `combines` (ri, A: the accumulator
 * type, params after p, comment, body); the target's template writes the
 * function around them, ac names the nodes (a combine reads no tensor),
 * plan says how p's members are reached ("p->", "p."). */
void emit_combine_keys(const EmitOperands *o, const char *plan, const EmitAccess *ac, TDict *d)
{
    const IrKernel *k = o->k;
    for (int ri = 0; ri < k->nreds; ri++) {
        const IrReducer *r = &k->reds[ri];
        if (r->kind != R_CUSTOM)
            continue;
        uint8_t *need = nnkc_scratch((size_t)k->nnodes + 1);
        ir_mark(k, &r->combine, 1, L_CONST, need);
        uint8_t *used = nnkc_scratch((size_t)o->nscalars + 1);
        bool any_scalar = false;
        for (int i = 0; i < k->nnodes; i++)
            if (need[i] && k->nodes[i].op == IR_SCALAR)
                used[k->nodes[i].aux] = 1, any_scalar = true;
        Buf body = {0}, ps = {0};
        TDict *e = tpush(d, "combines");
        if (r->width > 1) {
            /* a tuple state: value ri - head from every value of both sides */
            emit_red_tuple_params(k, r->head, &ps);
            tsetf(e, "comment", "value %d of the tuple state of reducers #%d..#%d", ri - r->head, r->head,
                  r->head + r->width - 1);
            for (int j = 0; j < r->width; j++)
                buf_printf(&body, j ? "(void)la%d;\n(void)lb%d;\n" : "(void)la;\n(void)lb;\n", j, j);
        } else {
            buf_printf(&ps, "%s la, %s lb", ctype(r->acc_type), ctype(r->acc_type));
            tsetf(e, "comment", "the combine function of reducer #%d", ri);
        }
        tset(e, "params", emit_str(o->c, &ps));
        if (!any_scalar)
            buf_puts(&body, "(void)p;\n");
        emit_read_scalars(o, plan, used, &body);
        emit_levels(ac, need, L_CONST, L_LAMBDA, &body);
        buf_puts(&body, "return ");
        emit_ref(ac, r->combine, &body);
        buf_puts(&body, ";\n");
        tsetf(e, "ri", "%d", ri);
        tset(e, "A", ctype(r->acc_type));
        tset(e, "body", emit_str(o->c, &body));
    }
    tlist(d, "combines");
}

static const char *c_param(const EmitOperands *o, const char *name)
{
    return name_c_param(o->c->arena, name);
}

/* The keys every template of an instance shares (C, CUDA, header, fat
 * object): names, signature, descriptor symbol, the public entry points'
 * parameter lists, the views of NAME_strided and of the fat object's
 * entry points, and the descriptor's CUDA fields. */
void emit_instance_keys(const EmitOperands *o, const EmitOptions *opt, TDict *e)
{
    Compiler *c = o->c;
    const Instance *in = o->in;
    tbool(e, "elementwise", !in->reduction);
    tbool(e, "reduction", in->reduction);
    /* a raw parameter is read by index against its own shape: no
     * contiguous entry points (NAME, NAME_cuda), which know only n */
    bool raw_param = false;
    for (int i = 0; i < in->nparams; i++)
        raw_param |= in->params[i].raw;
    /* NAME_strided: raw views and the range error (index(d) reports one too) */
    tbool(e, "has_raw", raw_param || ir_reads_plan(in->ir));
    tbool(e, "contig_api", !raw_param);
    tset(e, "kind_word", in->reduction ? "reduction" : "elementwise");
    tset(e, "kind", in->reduction ? "NNK_KIND_REDUCTION" : "NNK_KIND_ELEMENTWISE");
    tset(e, "name", in->name);
    tset(e, "display", in->display);
    tset(e, "signature", emit_signature(o));
    tsetf(e, "desc_symbol", "%s__desc%s", in->name, opt->symbol_suffix ? opt->symbol_suffix : "");
    tsetf(e, "nops", "%d", o->nops);
    tsetf(e, "nops_alloc", "%d", o->nops + 1);
    tsetf(e, "nviews", "%d", o->nops > 0 ? o->nops : 1);
    tsetf(e, "nin", "%d", o->nin);
    tsetf(e, "nout", "%d", in->nouts);

    /* api_params: the contiguous entry point's parameters after its sizes
     * (declaration order, outputs last); strided_api_params: NAME_strided's
     * (scalars by value, views); run_params: NAME_run's (nnk arrays) */
    Buf api = {0}, sp = {0}, run = {0}, run_args = {0}, fill = {0};
    for (int i = 0; i < in->nparams + in->nouts; i++) {
        bool out = i >= in->nparams;
        const InstParam *p = out ? &in->outs[i - in->nparams] : &in->params[i];
        const char *nm = c_param(o, p->name);
        const char *sep = sp.len ? ", " : "";
        if (out && p->inout) {
            /* an inout parameter's output: the parameter's pointer, view
             * or array (same name), which the runtime passes for it */
        } else if (p->tensor || out) {
            buf_printf(&api, out || p->inout ? ", %s *%s" : ", const %s *%s", emit_api_type(p->storage), nm);
            buf_printf(&sp, "%sconst nnk_view *%s", sep, nm);
            buf_printf(&run, ", struct nnk_array *%s", nm);
            buf_printf(&run_args, "NNK_FAT_TRY_(nnk_args_%s(a_, %s));\n", out ? "out" : "array", nm);
        } else {
            buf_printf(&api, ", %s %s", emit_api_type(p->type), nm);
            buf_printf(&sp, "%s%s %s", sep, emit_api_type(p->type), nm);
            buf_printf(&run, ", %s %s", emit_api_type(p->type), nm);
            if (p->type == T_F16 || p->type == T_BF16)
                buf_printf(&run_args, "NNK_FAT_TRY_(nnk_args_f64(a_, (double)nnk_%s2f(%s)));\n",
                           p->type == T_F16 ? "h" : "b", nm);
            else if (type_is_float(p->type))
                buf_printf(&run_args, "NNK_FAT_TRY_(nnk_args_f64(a_, (double)%s));\n", nm);
            else if (type_is_complex(p->type))
                buf_printf(&run_args, "NNK_FAT_TRY_(nnk_args_c128(a_, (double)%s.re, (double)%s.im));\n", nm, nm);
            else
                buf_printf(&run_args, "NNK_FAT_TRY_(nnk_args_i64(a_, (int64_t)%s));\n", nm);
        }
    }
    for (int s = 0; s < o->nscalars; s++) {
        const char *m = emit_scalar_member(o->scalar_type[s]), *nm = c_param(o, o->scalar_name[s]);
        if (type_is_complex(o->scalar_type[s]))
            buf_printf(&fill, "p_.scalars[%d].%s.re = %s.re;\np_.scalars[%d].%s.im = %s.im;\n", s, m, nm, s, m, nm);
        else
            buf_printf(&fill, "p_.scalars[%d].%s = %s;\n", s, m, nm);
    }
    tset(e, "api_params", emit_str(c, &api));
    tsetf(e, "strided_api_params_tail", "%s%s", sp.len ? ", " : "", sp.data ? sp.data : "");
    tset(e, "strided_api_params", sp.len ? emit_str(c, &sp) : "void");
    tset(e, "run_params", emit_str(c, &run));
    tset(e, "run_args", emit_str(c, &run_args));
    tset(e, "fill_scalars", emit_str(c, &fill));

    /* every operand as a view: NAME_strided's parameters (view_list), and
     * the local views vK_ of the entry points on pointers ([outer, len,
     * inner] for a reduction, [outer, inner] for a reduced-shape output) */
    Buf vl = {0}, red = {0}, refs = {0}, raw = {0}, rawskip = {0};
    for (int op = 0; op < o->nops; op++) {
        const char *sep = op ? ", " : "";
        int slot = 0;
        for (int r = 0; r < o->k->nraw; r++)
            if (o->k->raw_operand[r] == op)
                slot = r + 1;
        buf_printf(&vl, "%s%s", sep, c_param(o, o->name[op]));
        /* (a raw input is "reduced" for nnk_plan_build: not in the iteration space) */
        buf_printf(&red, "%s%d", sep, o->reduced[op] || slot > 0);
        buf_printf(&raw, "%s%d", sep, slot);
        buf_printf(&rawskip, "%s%d", sep, slot > 0);
        /* an inout parameter's output is the parameter's view (NAME_strided
         * takes it once; NAME_cuda declares it once, as the input's vK_) */
        int view = op;
        if (op >= o->nin && in->outs[op - o->nin].inout)
            for (int j = 0; j < o->nin; j++)
                if (strcmp(o->name[j], o->name[op]) == 0)
                    view = j;
        buf_printf(&refs, "%s&v%d_", sep, view);
        if (view != op)
            continue;
        TDict *v = tpush(e, "views");
        tsetf(v, "k", "%d", op);
        tset(v, "arg", c_param(o, o->name[op]));
        tset(v, "rank", o->reduced[op] ? "2" : "3");
        tset(v, "shape", o->reduced[op] ? "red_" : "full_");
        tset(v, "strides", o->reduced[op] ? "rst_" : "fst_");
    }
    tlist(e, "views");
    tset(e, "view_list", vl.len ? emit_str(c, &vl) : "0");
    tset(e, "reduced_list", red.len ? emit_str(c, &red) : "0");
    tset(e, "view_refs", emit_str(c, &refs));
    tset(e, "raw_list", raw.len ? emit_str(c, &raw) : "0");
    tset(e, "raw_skip_list", rawskip.len ? emit_str(c, &rawskip) : "0");
    buf_free(&raw);
    buf_free(&rawskip);
    buf_free(&vl);
    buf_free(&red);

    /* the descriptor's CUDA fields (c/desc.tmpl): with a fatbin, the
     * instance name prefixes its kernels */
    tbool(e, "has_cuda", opt->with_cuda);
    tset(e, "cuda_symbol", opt->with_cuda ? arena_printf(c->arena, "\"%s\"", in->name) : "0");
    tset(e, "cuda_image", opt->with_cuda ? "nnk_fatbin_" : "0");
    tset(e, "cuda_image_size", opt->with_cuda ? "NNK_FATBIN_SIZE_" : "0");
}

/* Emits the nodes of `need` whose level is in [lo, hi]. */
void emit_levels(const EmitAccess *ac, const uint8_t *need, int lo, int hi, Buf *out)
{
    uint8_t *sel = nnkc_scratch((size_t)ac->k->nnodes + 1);
    for (int i = 0; i < ac->k->nnodes; i++)
        sel[i] = need[i] && ac->k->nodes[i].level >= lo && ac->k->nodes[i].level <= hi;
    emit_nodes(ac, sel, NULL, "", out);
}

/* Whether the marked nodes load tensor operand `op`. */
bool emit_loads(const IrKernel *k, const uint8_t *need, int op)
{
    for (int i = 0; i < k->nnodes; i++)
        if (need[i] && k->nodes[i].op == IR_LOAD && k->nodes[i].aux == op)
            return true;
    return false;
}

/* ---- text from users ----------------------------------------------------------- */

/* Everything a user names (kernels, parameters) is an identifier by the
 * lexer's rule and passes sema's reserved-name table (names.def); the
 * other text a user controls that reaches generated code is the source's
 * file name (nnkc's argument, a JIT module's name=), shown in the files'
 * first comment, and the source lines of the per-statement comments.
 * They go through here and nowhere else: printable ASCII is kept, except
 * that "*" "/" and "/" "*" are split so that the comment can neither end
 * nor nest (-Wcomment); every other byte (newlines,
 * control characters, non-ASCII) is written as \xNN. */
const char *emit_comment_text(Compiler *c, const char *s)
{
    Buf b = {0};
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p > 0x7e || *p == '\\')
            buf_printf(&b, "\\x%02x", *p);
        else if ((p[0] == '*' && p[1] == '/') || (p[0] == '/' && p[1] == '*'))
            buf_printf(&b, "%c\\x%02x", p[0], p[1]), p++;
        else
            buf_put(&b, (const char *)p, 1);
    }
    const char *r = arena_strdup(c->arena, b.data ? b.data : "");
    buf_free(&b);
    return r;
}

void emit_file_keys(Compiler *c, TDict *d, const EmitOptions *opt)
{
    tset(d, "version", NNKC_VERSION);
    tset(d, "source", emit_comment_text(c, opt->source_name ? opt->source_name : "<string>"));
}

/* ---- a reduction phase as the GPU-like targets write it --------------------- */

/* The template keys of reduction phase `ph` whose state is a struct of one
 * accumulator a<r> (and index x<r>) per reducer: state_fields, ident_code
 * (the reduce() identities' nodes), init_code (s->...), merge_code
 * (a->... = a followed by b->...), final_code (f->r<r> from s->...),
 * step_code (element i into s->...), prologue_code (the nodes a slice
 * computes once) and elem_body (per element).  `ac` addresses the slice's
 * elements; n_red is the reduced count; `plan` prefixes the plan's
 * members ("p->").  Returns the nodes the elements
 * need (for the target's operand pointers). */
uint8_t *emit_red_phase(const EmitOperands *o, const EmitAccess *ac, const char *plan, int ph, TDict *P)
{
    const IrKernel *k = o->k;
    const char *name = o->in->name;
    int32_t *roots = nnkc_scratch(sizeof *roots * (size_t)(k->nreds ? k->nreds : 1));
    int nroots = 0;
    Buf fields = {0}, init = {0}, merge = {0}, final = {0}, step = {0}, ident = {0};
    bool ident_n = false;
    uint8_t *ident_done = nnkc_scratch((size_t)k->nnodes + 1);
    for (int ri = 0; ri < k->nreds; ri++) {
        const IrReducer *r = &k->reds[ri];
        if (r->phase != ph)
            continue;
        roots[nroots++] = r->arg;
        char comb[160], a[32], x[32], xa[32], xb[32], sb[32];
        snprintf(comb, sizeof comb, "%s__comb%d", name, ri);
        buf_printf(&fields, "%s a%d;\n", ctype(r->acc_type), ri);
        if (red_is_arg(r))
            buf_printf(&fields, "int64_t x%d;\n", ri);
        Buf id = {0};
        if (r->kind == R_CUSTOM) {
            uint8_t *need = nnkc_scratch((size_t)k->nnodes + 1);
            ir_mark(k, &r->ident, 1, L_CONST, need);
            /* an identity may read n (reduce(x, f32(n), ...)) */
            for (int i = 0; i < k->nnodes && !ident_n; i++)
                if (need[i] && k->nodes[i].op == IR_N) {
                    buf_printf(&ident, "const int64_t n_red = %snreduced;\n", plan);
                    ident_n = true;
                }
            /* two identities may share nodes: each is declared once */
            uint8_t *fresh = nnkc_scratch((size_t)k->nnodes + 1);
            for (int i = 0; i < k->nnodes; i++) {
                fresh[i] = need[i] && !ident_done[i];
                ident_done[i] |= need[i];
            }
            emit_levels(ac, fresh, L_CONST, L_UNIFORM, &ident);
            emit_ref(ac, r->ident, &id);
        } else {
            emit_red_identity(r, &id);
        }
        buf_printf(&init, "s->a%d = %s;\n", ri, id.data);
        if (red_is_arg(r))
            buf_printf(&init, "s->x%d = -1;\n", ri);
        buf_free(&id);
        Buf v = {0}, vc = {0};
        emit_ref(ac, r->arg, &v);
        emit_convert((Type)k->nodes[r->arg].type, r->acc_type, v.data, &vc);
        snprintf(a, sizeof a, "s->a%d", ri);
        snprintf(x, sizeof x, "s->x%d", ri);
        if (r->width == 1)
            emit_red_step(r, comb, a, vc.data, x, "i", &step);
        else if (ri == r->head)
            emit_red_tuple_state(k, ac, ri, name, &step, &merge);
        buf_free(&v);
        buf_free(&vc);
        snprintf(sb, sizeof sb, "b->a%d", ri);
        snprintf(xa, sizeof xa, "a->x%d", ri);
        snprintf(xb, sizeof xb, "b->x%d", ri);
        char sa[32];
        snprintf(sa, sizeof sa, "a->a%d", ri);
        if (r->width == 1)
            emit_red_merge(r, comb, sa, sb, xa, xb, &merge);
        buf_printf(&final, "f->r%d = ", ri);
        emit_red_final(r, a, x, "n_red", &final);
        buf_puts(&final, ";\n");
    }
    uint8_t *need = nnkc_scratch((size_t)k->nnodes + 1);
    ir_mark(k, roots, nroots, L_CONST, need);
    Buf pro = {0}, body = {0};
    emit_levels(ac, need, L_CONST, L_ROW, &pro);
    emit_levels(ac, need, L_ELEM, L_ELEM, &body);
    tset(P, "state_fields", fields.data ? fields.data : "char unused_;");
    tset(P, "ident_code", ident.data ? ident.data : "");
    tset(P, "init_code", init.data ? init.data : "(void)s;");
    tset(P, "merge_code", merge.data ? merge.data : "(void)a;\n(void)b;");
    tset(P, "final_code", final.data ? final.data : "(void)f;\n(void)s;");
    tset(P, "step_code", step.data ? step.data : "");
    tset(P, "prologue_code", pro.data ? pro.data : "");
    tset(P, "elem_body", body.data ? body.data : "");
    buf_free(&fields);
    buf_free(&init);
    buf_free(&merge);
    buf_free(&final);
    buf_free(&step);
    buf_free(&ident);
    buf_free(&pro);
    buf_free(&body);
    return need;
}

/* ---- element functions -------------------------------------------------------- */

/* The per-element nodes that `roots` need, down to (not into) the values
 * of outer levels and the nodes in `given`; which of those the code takes
 * as arguments, which operands' elements, and whether idx and the plan. */
static void elem_scan(const EmitOperands *o, const int32_t *roots, int nroots, const uint8_t *given, EmitElem *e)
{
    const IrKernel *k = o->k;
    e->in = nnkc_scratch((size_t)k->nnodes + 1);
    e->arg = nnkc_scratch((size_t)k->nnodes + 1);
    e->loads = nnkc_scratch((size_t)o->nops + 1);
    e->res = nnkc_scratch(sizeof *e->res * (size_t)(nroots + 1));
    for (int i = 0; i < nroots; i++) {
        int r = roots[i];
        /* the caller has it and declares it (2); an argument of the
         * function (1) only where a node computed in it reads it (an unused
         * parameter drew -Wextra's warning: z2 = x2; z1 = idx; with z2
         * read back by mean(z2), found by the fuzzer) */
        if (r >= 0 && given && given[r])
            e->arg[r] = 2;
        if (r < 0 || k->nodes[r].level != L_ELEM || (given && given[r]) || e->in[r])
            continue;
        e->in[r] = 1;
        e->res[e->nres++] = r;
    }
    for (int i = k->nnodes - 1; i >= 0; i--) {
        if (!e->in[i])
            continue;
        const IrNode *n = &k->nodes[i];
        if (n->op == IR_LOAD)
            e->loads[n->aux] = 1;
        e->idx |= n->op == IR_IDX || n->op == IR_DIMIDX;
        e->plan |= n->op == IR_RAWIX || n->op == IR_RAWLD || n->op == IR_RAWSHAPE || n->op == IR_DIMIDX;
        int32_t ops[3] = {n->a, n->b, n->c};
        for (int j = 0; j < 3; j++) {
            int a = ops[j];
            if (a < 0 || k->nodes[a].op == IR_CONST)
                continue;
            if (k->nodes[a].level == L_ELEM && !(given && given[a]))
                e->in[a] = 1;
            else
                e->arg[a] = 1;
        }
    }
}

static void elem_operand(const EmitAccess *ac, int op, Buf *out)
{
    (void)ac;
    buf_printf(out, "e%d", op);
}

/* Defines NAME, the function computing one element of the values `roots`
 * (those of them that are per-element values; the others the caller has):
 * the per-element nodes, from the operands' elements eK (storage type),
 * idx, the plan and the values of outer levels or in `given` (tN, computed
 * by the caller).  One value is its result; more go through pointers oN.
 * Every loop of an instance calls it instead of repeating the nodes, as
 * PyTorch's jit_utils and CuPy write one element function per kernel; it
 * is always inlined (NNK_INLINE, NNK_DEVICE), so the loops vectorize as
 * before.  `lead` is a first parameter ("" none).  Writes nothing and
 * leaves e->nres 0 when no root is a per-element value, and sets
 * e->direct when the values are only loads (the calls read them). */
void emit_elem_fn(const EmitOperands *o, const EmitElemTarget *t, const char *name, const char *lead,
                  const int32_t *roots, int nroots, const uint8_t *given, EmitElem *e, Buf *out)
{
    const IrKernel *k = o->k;
    memset(e, 0, sizeof *e);
    e->name = name;
    e->t = t;
    elem_scan(o, roots, nroots, given, e);
    if (!e->nres)
        return;
    /* only loads (a sum of x): nothing to share, the loops read them; raw
     * views and index(d) on a target without a plan parameter (CUDA,
     * OpenCL: their raw helpers take the kernel's own arguments): the
     * loops compute them too */
    e->direct = !t->plan_param && e->plan;
    if (!e->direct) {
        e->direct = true;
        for (int i = 0; i < k->nnodes; i++)
            e->direct &= !e->in[i] || k->nodes[i].op == IR_LOAD;
    }
    if (e->direct)
        return;
    Buf params = {0};
    if (lead && *lead)
        buf_printf(&params, "%s", lead);
    if (e->plan)
        buf_printf(&params, "%s%s", params.len ? ", " : "", t->plan_param);
    if (e->idx)
        buf_printf(&params, "%sint64_t idx", params.len ? ", " : "");
    for (int op = 0; op < o->nops; op++)
        if (e->loads[op])
            buf_printf(&params, "%s%s e%d", params.len ? ", " : "", stype(o->storage[op]), op);
    for (int i = 0; i < k->nnodes; i++)
        if (e->arg[i] == 1)
            buf_printf(&params, "%s%s t%d", params.len ? ", " : "", ctype((Type)k->nodes[i].type), i);
    if (e->nres > 1)
        for (int r = 0; r < e->nres; r++)
            buf_printf(&params, "%s%s *o%d", params.len ? ", " : "", ctype((Type)k->nodes[e->res[r]].type), e->res[r]);
    const char *ret = e->nres == 1 ? ctype((Type)k->nodes[e->res[0]].type) : "void";
    buf_printf(out, "%s %s %s(%s)\n{\n", t->qual, ret, name, params.len ? params.data : "void");
    buf_free(&params);
    EmitAccess ac = {.k = k, .operand = elem_operand, .idx = "idx", .n = "n_red", .red_fmt = "r%d", .plan = "p"};
    emit_nodes(&ac, e->in, NULL, "    ", out);
    if (e->nres == 1)
        buf_printf(out, "    return t%d;\n", e->res[0]);
    else
        for (int r = 0; r < e->nres; r++)
            buf_printf(out, "    *o%d = t%d;\n", e->res[r], e->res[r]);
    buf_puts(out, "}\n");
}

/* The call of an element function from a loop addressing operands by
 * `ac`: its values declared as tN.  `lead` is the first argument. */
void emit_elem_call(const EmitOperands *o, const EmitElem *e, const EmitAccess *ac, const char *lead, Buf *out)
{
    const IrKernel *k = o->k;
    if (!e->nres)
        return;
    if (e->direct) {
        emit_nodes(ac, e->in, NULL, "", out);
        return;
    }
    Buf args = {0};
    if (lead && *lead)
        buf_puts(&args, lead);
    if (e->plan)
        buf_printf(&args, "%s%s", args.len ? ", " : "", ac->plan ? ac->plan : "p");
    if (e->idx)
        buf_printf(&args, "%s%s", args.len ? ", " : "", ac->idx);
    for (int op = 0; op < o->nops; op++) {
        if (!e->loads[op])
            continue;
        if (args.len)
            buf_puts(&args, ", ");
        if (ac->cached && ac->cached[op]) { /* the function takes the element as stored: exact */
            Buf v = {0};
            ac->operand(ac, op, &v);
            emit_store(o->storage[op], o->storage[op], v.data, &args);
            buf_free(&v);
        } else {
            ac->operand(ac, op, &args);
        }
    }
    for (int i = 0; i < k->nnodes; i++)
        if (e->arg[i] == 1)
            buf_printf(&args, "%st%d", args.len ? ", " : "", i);
    if (e->nres == 1) {
        int r = e->res[0];
        buf_printf(out, "const %s t%d = %s(%s);\n", ctype((Type)k->nodes[r].type), r, e->name, args.data ? args.data : "");
    } else {
        for (int r = 0; r < e->nres; r++)
            buf_printf(out, "%s t%d;\n", ctype((Type)k->nodes[e->res[r]].type), e->res[r]);
        for (int r = 0; r < e->nres; r++)
            buf_printf(&args, "%s&t%d", args.len ? ", " : "", e->res[r]);
        buf_printf(out, "%s(%s);\n", e->name, args.data);
    }
    buf_free(&args);
}

/* ---- what the GPU-like targets share: operands, loops, epilogue ------------ */

/* A mark of the nodes `roots` need, at every level. */
uint8_t *emit_mark(const IrKernel *k, const int32_t *roots, int n)
{
    uint8_t *need = nnkc_scratch((size_t)k->nnodes + 1);
    ir_mark(k, roots, n, L_CONST, need);
    return need;
}

static void dev_operand(const EmitAccess *ac, int op, Buf *out)
{
    const EmitDevAccess *m = ac->user;
    switch (m->mode) {
    case DEV_VEC: buf_printf(out, m->t->vec, op); break;
    case DEV_FLAT: buf_printf(out, "g%d[i]", op); break;
    case DEV_OFF: buf_printf(out, "g%d[off[%d]]", op, op); break;
    case DEV_SLICE: buf_printf(out, "g%d[b[%d] + ro[%d]]", op, op, op); break;
    case DEV_ROW: /* an operand one pass reads stays as in DEV_SLICE */
        if (((const EmitDevRow *)m)->row[op])
            buf_printf(out, "rc.c%d[j]", op);
        else
            buf_printf(out, "g%d[b[%d] + ro[%d]]", op, op, op);
        break;
    case DEV_SROW:
        if (((const EmitDevRow *)m)->row[op])
            buf_printf(out, "sh%d[r]", op);
        else
            buf_printf(out, "g%d[b[%d] + ro[%d]]", op, op, op);
        break;
    }
}

/* A kernel's loop addressing operands as m says: gK, the typed pointer to
 * operand K, at i, at the plan's offsets off[K] or in the slice b[K] +
 * ro[K], or (DEV_ROW, the operands EmitDevRow marks) element j of the row a
 * thread keeps on chip, rc.cK[j]; the vector element, raw views and
 * index(d) the target's way (m->t).  idx is the flat index "idx" (the
 * slice's position for DEV_SLICE and DEV_ROW). */
EmitAccess emit_dev_access(const EmitOperands *o, const EmitDevAccess *m)
{
    EmitAccess ac = {.k = o->k, .operand = dev_operand, .idx = "idx", .n = "n_red", .red_fmt = "f->r%d",
                     .plan = m->t->plan, .raw_args = m->t->raw_args, .raw_data = m->t->raw_data, .user = m};
    if (m->mode == DEV_SLICE || m->mode == DEV_ROW || m->mode == DEV_SROW)
        ac.idx = arena_printf(o->c->arena, "(b[%d] + ro[%d])", o->nops, o->nops);
    if (m->mode == DEV_ROW || m->mode == DEV_SROW) { /* its f16/bf16 elements are kept as floats */
        uint8_t *cached = nnkc_scratch((size_t)o->nops + 1);
        for (int op = 0; op < o->nops; op++)
            cached[op] = ((const EmitDevRow *)m)->row[op] && (o->storage[op] == T_F16 || o->storage[op] == T_BF16);
        ac.cached = cached;
    }
    return ac;
}

/* Elements per vector access: 16 bytes of the widest operand. */
int emit_vec_elems(const EmitOperands *o)
{
    int widest = 1;
    for (int op = 0; op < o->nops; op++)
        if (type_info[o->storage[op]].bits / 8 > widest)
            widest = type_info[o->storage[op]].bits / 8;
    return 16 / widest;
}

/* An elementwise instance's code for the kernels of a GPU-like target:
 * the element function (elem_fns, qualified as t->elem says), the values
 * computed before the loops (uniform_code), and the loops' bodies, each a
 * call and the stores: vec_body (vector elements as t->vec says), flat_body,
 * off_body.  Returns the nodes the outputs need. */
uint8_t *emit_dev_elementwise(const EmitOperands *o, const EmitDevTarget *t, TDict *d)
{
    const IrKernel *k = o->k;
    int32_t roots[NNKC_MAX_PARAMS * 2 + 2];
    for (int i = 0; i < k->nouts; i++)
        roots[i] = k->outs[i].node;
    uint8_t *need = emit_mark(k, roots, k->nouts);
    EmitDevAccess mv = {DEV_VEC, t}, mf = {DEV_FLAT, t}, mo = {DEV_OFF, t};
    EmitAccess acs[3] = {emit_dev_access(o, &mv), emit_dev_access(o, &mf), emit_dev_access(o, &mo)};
    Buf fns = {0}, uni = {0}, bodies[3] = {{0}};
    EmitElem e;
    emit_elem_fn(o, &t->elem, arena_printf(o->c->arena, "%s__elem", o->in->name), "", roots, k->nouts, NULL, &e,
                 &fns);
    emit_levels(&acs[1], need, L_CONST, L_ROW, &uni);
    for (int a = 0; a < 3; a++)
        emit_elem_call(o, &e, &acs[a], "", &bodies[a]);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *out = &k->outs[i];
        Buf v = {0}, st = {0};
        emit_ref(&acs[1], out->node, &v);
        emit_store(out->type, out->storage, v.data, &st);
        for (int a = 0; a < 3; a++) {
            acs[a].operand(&acs[a], k->nloads + i, &bodies[a]);
            buf_printf(&bodies[a], " = %s;\n", st.data);
        }
        buf_free(&v);
        buf_free(&st);
    }
    tset(d, "elem_fns", emit_str(o->c, &fns));
    tset(d, "uniform_code", emit_str(o->c, &uni));
    tset(d, "vec_body", emit_str(o->c, &bodies[0]));
    tset(d, "flat_body", emit_str(o->c, &bodies[1]));
    tset(d, "off_body", emit_str(o->c, &bodies[2]));
    return need;
}

/* A reduction's finals (fin_fields): one field per reducer. */
void emit_fin_fields(const EmitOperands *o, TDict *d)
{
    const IrKernel *k = o->k;
    Buf fin = {0};
    for (int ri = 0; ri < k->nreds; ri++)
        buf_printf(&fin, "%s r%d;\n", ctype(type_compute(k->reds[ri].res_type)), ri);
    if (!k->nreds)
        buf_puts(&fin, "char unused_;\n");
    tset(d, "fin_fields", emit_str(o->c, &fin));
}

/* Whether a reducer of the kernel is argmax or argmin. */
bool emit_has_arg(const IrKernel *k)
{
    bool has_arg = false;
    for (int ri = 0; ri < k->nreds; ri++)
        has_arg |= red_is_arg(&k->reds[ri]);
    return has_arg;
}

/* A reduction's epilogue on a GPU-like target, one slice at a time (ac:
 * DEV_SLICE): epi_prologue, epi_body (the tensor outputs per element),
 * scalar_stores (the reduced-shape ones), has_tensor_outs.  Returns the
 * nodes it needs (for the target's pointers and scalar reads). */
uint8_t *emit_dev_epilogue(const EmitOperands *o, const EmitAccess *ac, TDict *d)
{
    const IrKernel *k = o->k;
    int32_t roots[NNKC_MAX_PARAMS * 2 + 2];
    bool has_tensor = false;
    for (int i = 0; i < k->nouts; i++) {
        roots[i] = k->outs[i].node;
        has_tensor |= k->outs[i].tensor;
    }
    uint8_t *need = emit_mark(k, roots, k->nouts);
    Buf pro = {0}, body = {0}, stores = {0};
    emit_levels(ac, need, L_CONST, L_ROW, &pro);
    emit_levels(ac, need, L_ELEM, L_ELEM, &body);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *out = &k->outs[i];
        int op = k->nloads + i;
        Buf v = {0}, st = {0};
        emit_ref(ac, out->node, &v);
        emit_store(out->type, out->storage, v.data, &st);
        if (out->tensor)
            buf_printf(&body, "g%d[b[%d] + ro[%d]] = %s;\n", op, op, op, st.data);
        else
            buf_printf(&stores, "g%d[b[%d]] = %s;\n", op, op, st.data);
        buf_free(&v);
        buf_free(&st);
    }
    tset(d, "epi_prologue", emit_str(o->c, &pro));
    tset(d, "epi_body", emit_str(o->c, &body));
    tset(d, "scalar_stores", emit_str(o->c, &stores));
    tbool(d, "has_tensor_outs", has_tensor);
    return need;
}

/* A file's template data: emit_file_keys, then per instance (list
 * `instances`) emit_instance_keys and what the target's `fill` adds;
 * instance_list names them all, uses_raw says whether one reads raw
 * parameters or index(d). */
TDict *emit_instances(Compiler *c, const List *instances, const EmitOptions *opt, EmitFill fill, void *user)
{
    TDict *d = tdict_new(c->arena);
    emit_file_keys(c, d, opt);
    Buf names = {0};
    bool uses_raw = false;
    for (int i = 0; i < instances->n; i++) {
        const Instance *in = instances->items[i];
        buf_printf(&names, "%s%s", i ? ", " : "", in->name);
        uses_raw |= ir_reads_plan(in->ir);
        EmitOperands o;
        emit_operands_init(&o, c, in);
        TDict *e = tpush(d, "instances");
        emit_instance_keys(&o, opt, e);
        fill(&o, e, user);
    }
    tlist(d, "instances");
    /* the preludes' helpers of raw parameters and index(d) */
    tbool(d, "uses_raw", uses_raw);
    tset(d, "instance_list", names.data ? emit_str(c, &names) : "(none)");
    return d;
}
