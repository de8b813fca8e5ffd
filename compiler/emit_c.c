/* emit_c.c - the C back end: fills templates/c/ for every instance.
 *
 * The loops live in the templates; this file computes what goes into
 * them: signatures, the scalar prologue, and the per-element code of each
 * loop (emit.c), once per way of addressing operands (contiguous, strided,
 * odometer).  See docs/c-backend.md for the shape of the generated code.
 */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

enum { LEAF = 1024 };

typedef enum { ACC_CONTIG, ACC_STRIDED, ACC_ROW_CONTIG, ACC_ROW_GENERIC } AccessMode;

typedef struct Gen {
    Compiler *c;
    const IrKernel *k;
    const Instance *in;
    int nops;           /* tensor operands: loads then outputs */
    Type op_storage[NNKC_MAX_PARAMS * 2 + 2];
    Type op_type[NNKC_MAX_PARAMS * 2 + 2];
    bool op_reduced[NNKC_MAX_PARAMS * 2 + 2];
    const char *op_name[NNKC_MAX_PARAMS * 2 + 2];
    Type scalar_type[NNKC_MAX_PARAMS * 2 + 2];
    const char *scalar_name[NNKC_MAX_PARAMS * 2 + 2];
    int nscalars;
} Gen;

typedef struct Mode {
    AccessMode mode;
} Mode;

static void operand_access(const EmitAccess *ac, int op, Buf *out)
{
    const Mode *m = ac->user;
    switch (m->mode) {
    case ACC_CONTIG: buf_printf(out, "p%d[i]", op); break;
    case ACC_STRIDED: buf_printf(out, "p%d[i * d%d]", op, op); break;
    case ACC_ROW_CONTIG: buf_printf(out, "c%d[i]", op); break;
    case ACC_ROW_GENERIC: buf_printf(out, "g%d[it.off[%d]]", op, op); break;
    }
}

static EmitAccess access_for(const Gen *g, const Mode *m)
{
    EmitAccess ac = {.k = g->k, .operand = operand_access, .n = "n_red", .red_fmt = "f->r%d", .user = m};
    switch (m->mode) {
    case ACC_CONTIG: ac.idx = "(idx0 + i)"; break;
    case ACC_STRIDED: ac.idx = "(idx0 + i * idxs)"; break;
    case ACC_ROW_CONTIG: ac.idx = "(ps->ib + i * is)"; break;
    case ACC_ROW_GENERIC: ac.idx = arena_printf(g->c->arena, "(ps->ib + it.off[%d])", g->nops); break;
    }
    return ac;
}

static void gen_init(Gen *g, Compiler *c, const Instance *in)
{
    memset(g, 0, sizeof *g);
    g->c = c;
    g->in = in;
    g->k = in->ir;
    for (int i = 0; i < in->nparams; i++) {
        const InstParam *p = &in->params[i];
        if (p->tensor) {
            g->op_storage[g->nops] = p->storage;
            g->op_type[g->nops] = p->type;
            g->op_name[g->nops] = p->name;
            g->nops++;
        } else {
            g->scalar_type[g->nscalars] = p->type;
            g->scalar_name[g->nscalars] = p->name;
            g->nscalars++;
        }
    }
    for (int i = 0; i < in->nouts; i++) {
        const InstParam *o = &in->outs[i];
        g->op_storage[g->nops] = o->storage;
        g->op_type[g->nops] = o->type;
        g->op_reduced[g->nops] = !o->tensor;
        g->op_name[g->nops] = o->name;
        g->nops++;
    }
}

static bool is_output(const Gen *g, int op) { return op >= g->k->nloads; }

/* Types in the public signatures: f16 and bf16 by their typedef names. */
static const char *api_type(Type t)
{
    return t == T_F16 ? "nnk_f16" : t == T_BF16 ? "nnk_bf16" : stype(t);
}

/* The nnk_scalar member holding a scalar of type t. */
static const char *scalar_member(Type t)
{
    switch (t) {
    case T_BOOL: return "b";
    case T_F16: case T_BF16: return "u16";
    default: return type_name(t);
    }
}

static const char *dtype_enum(Type t)
{
    static const char *const names[] = {"NNK_BOOL", "NNK_I8", "NNK_I16", "NNK_I32", "NNK_I64", "NNK_U8", "NNK_U16",
                                        "NNK_U32", "NNK_U64", "NNK_F16", "NNK_BF16", "NNK_F32", "NNK_F64"};
    return names[t];
}

/* Reads the scalar parameters from a plan into compute-typed s0, s1, ... */
static void read_scalars(const Gen *g, Buf *out, bool only_used, const uint8_t *used)
{
    for (int s = 0; s < g->nscalars; s++) {
        if (only_used && !used[s])
            continue;
        char src[64];
        snprintf(src, sizeof src, "p->scalars[%d].%s", s, scalar_member(g->scalar_type[s]));
        buf_printf(out, "const %s s%d = ", ctype(g->scalar_type[s]), s);
        emit_load(g->scalar_type[s], g->scalar_type[s], src, out);
        buf_printf(out, ";\n");
    }
}

/* Which scalars the marked nodes read. */
static void scalars_used(const Gen *g, const uint8_t *need, uint8_t *used)
{
    memset(used, 0, (size_t)g->nscalars + 1);
    for (int i = 0; i < g->k->nnodes; i++)
        if (need[i] && g->k->nodes[i].op == IR_SCALAR)
            used[g->k->nodes[i].aux] = 1;
}

static void emit_level(const EmitAccess *ac, const uint8_t *need, int lo, int hi, Buf *out)
{
    uint8_t *sel = calloc((size_t)ac->k->nnodes + 1, 1);
    for (int i = 0; i < ac->k->nnodes; i++)
        sel[i] = need[i] && ac->k->nodes[i].level >= lo && ac->k->nodes[i].level <= hi;
    emit_nodes(ac, sel, NULL, "", out);
    free(sel);
}

static const char *bufstr(Compiler *c, Buf *b)
{
    const char *s = arena_strdup(c->arena, b->data ? b->data : "");
    buf_free(b);
    return s;
}

/* "(a: f32, x: f32[]) -> (z: f32[])" */
static const char *signature(const Gen *g)
{
    Buf b = {0};
    buf_puts(&b, "(");
    for (int i = 0; i < g->in->nparams; i++)
        buf_printf(&b, "%s%s: %s%s", i ? ", " : "", g->in->params[i].name, type_name(g->in->params[i].type),
                   g->in->params[i].tensor ? "[]" : "");
    buf_puts(&b, ") -> (");
    for (int i = 0; i < g->in->nouts; i++)
        buf_printf(&b, "%s%s: %s%s", i ? ", " : "", g->in->outs[i].name, type_name(g->in->outs[i].type),
                   g->in->outs[i].tensor ? "[]" : "");
    buf_puts(&b, ")");
    return bufstr(g->c, &b);
}

/* Parameters of the public entry points, in declaration order, outputs last. */
static void api_params(const Gen *g, TDict *d, bool views)
{
    Buf p = {0}, sp = {0};
    int t = 0;
    for (int i = 0; i < g->in->nparams; i++) {
        const InstParam *ip = &g->in->params[i];
        if (ip->tensor) {
            if (views)
                buf_printf(&p, ", const nnk_view *%s", ip->name);
            else
                buf_printf(&p, ", const %s *%s", api_type(ip->storage), ip->name);
            t++;
        } else {
            buf_printf(&p, ", %s %s", api_type(ip->type), ip->name);
        }
    }
    for (int i = 0; i < g->in->nouts; i++) {
        const InstParam *o = &g->in->outs[i];
        if (views)
            buf_printf(&p, ", const nnk_view *%s", o->name);
        else
            buf_printf(&p, ", %s *%s", api_type(o->storage), o->name);
    }
    (void)t;
    tset(d, views ? "strided_api_params_raw" : "api_params", p.data ? p.data : "");
    buf_free(&p);
    buf_free(&sp);
}

static void desc_params(const Gen *g, TDict *d)
{
    for (int i = 0; i < g->in->nparams + g->in->nouts; i++) {
        bool out = i >= g->in->nparams;
        const InstParam *p = out ? &g->in->outs[i - g->in->nparams] : &g->in->params[i];
        TDict *e = tpush(d, "params");
        tset(e, "pname", p->name);
        tset(e, "pdtype", dtype_enum(p->tensor || out ? p->storage : p->type));
        Buf f = {0};
        buf_puts(&f, p->tensor || out ? "NNK_PARAM_TENSOR" : "0");
        if (out)
            buf_puts(&f, " | NNK_PARAM_OUTPUT");
        if (out && !p->tensor)
            buf_puts(&f, " | NNK_PARAM_REDUCED");
        if (p->has_default)
            buf_puts(&f, " | NNK_PARAM_DEFAULT");
        tset(e, "pflags", f.data);
        buf_free(&f);
        Buf v = {0};
        if (p->has_default) {
            Value dv = value_cast(p->dflt, p->type);
            const char *m = scalar_member(p->type);
            if (p->type == T_F16 || p->type == T_BF16)
                buf_printf(&v, ".u16 = 0x%04x", p->type == T_F16 ? nnkc_f32_to_f16((float)dv.v.f) : nnkc_f32_to_bf16((float)dv.v.f));
            else {
                buf_printf(&v, ".%s = ", m);
                emit_literal(dv, p->type, &v);
            }
        } else {
            buf_puts(&v, "0");
        }
        tset(e, "pdefault", v.data);
        buf_free(&v);
    }
    Buf ta = {0};
    for (int i = 0; i < g->in->ntargs; i++)
        buf_printf(&ta, "%s%s", i ? ", " : "", dtype_enum(g->in->targs[i]));
    tbool(d, "has_targs", g->in->ntargs > 0);
    tset(d, "targs", ta.data ? ta.data : "");
    buf_free(&ta);
    tsetf(d, "ntargs", "%d", g->in->ntargs);
    tset(d, "targs_ref", g->in->ntargs ? arena_printf(g->c->arena, "%s__targs", g->in->name) : "0");
    tsetf(d, "nparams", "%d", g->in->nparams);
    tsetf(d, "nouts", "%d", g->in->nouts);
    tset(d, "kernel", g->in->kernel->name);
}

/* Scalar parameter lists of the internal functions (compute types). */
static void scalar_lists(const Gen *g, TDict *d)
{
    Buf params = {0}, args = {0}, api_args = {0}, fill = {0};
    for (int s = 0; s < g->nscalars; s++) {
        buf_printf(&params, ", %s s%d", ctype(g->scalar_type[s]), s);
        buf_printf(&args, ", s%d", s);
        buf_puts(&api_args, ", ");
        emit_load(g->scalar_type[s], g->scalar_type[s], g->scalar_name[s], &api_args);
        buf_printf(&fill, "p.scalars[%d].%s = %s;\n", s, scalar_member(g->scalar_type[s]), g->scalar_name[s]);
    }
    tset(d, "scalar_params", params.data ? params.data : "");
    tset(d, "scalar_args", args.data ? args.data : "");
    tset(d, "scalar_api_args", api_args.data ? api_args.data : "");
    tset(d, "fill_scalars", fill.data ? fill.data : "");
    buf_free(&params);
    buf_free(&args);
    buf_free(&api_args);
    buf_free(&fill);
    Buf rs = {0};
    read_scalars(g, &rs, false, NULL);
    for (int s = 0; s < g->nscalars; s++)
        buf_printf(&rs, "(void)s%d;\n", s);
    tset(d, "read_scalars", rs.data ? rs.data : "");
    buf_free(&rs);
}

static void views_list(const Gen *g, TDict *d)
{
    Buf v = {0}, red = {0}, sp = {0};
    for (int op = 0; op < g->nops; op++) {
        buf_printf(&v, "%s%s", op ? ", " : "", g->op_name[op]);
        buf_printf(&red, "%s%d", op ? ", " : "", g->op_reduced[op]);
    }
    /* strided entry: scalars by value, then views, in declaration order */
    int first = 1;
    for (int i = 0; i < g->in->nparams; i++) {
        const InstParam *ip = &g->in->params[i];
        if (ip->tensor)
            buf_printf(&sp, "%sconst nnk_view *%s", first ? "" : ", ", ip->name);
        else
            buf_printf(&sp, "%s%s %s", first ? "" : ", ", api_type(ip->type), ip->name);
        first = 0;
    }
    for (int i = 0; i < g->in->nouts; i++, first = 0)
        buf_printf(&sp, "%sconst nnk_view *%s", first ? "" : ", ", g->in->outs[i].name);
    tset(d, "view_list", v.data ? v.data : "");
    tset(d, "reduced_list", red.data ? red.data : "0");
    tset(d, "strided_api_params", sp.data ? sp.data : "void");
    tsetf(d, "strided_api_params_tail", "%s%s", sp.data ? ", " : "", sp.data ? sp.data : "");
    tsetf(d, "nviews", "%d", g->nops > 0 ? g->nops : 1);
    tsetf(d, "nin", "%d", g->k->nloads);
    tsetf(d, "nout", "%d", g->in->nouts);
    tsetf(d, "nops", "%d", g->nops);
    tsetf(d, "nops_alloc", "%d", g->nops + 1);
    buf_free(&v);
    buf_free(&red);
    buf_free(&sp);
}

/* ---- elementwise -------------------------------------------------------------- */

static void elementwise(const Gen *g, TDict *d)
{
    const IrKernel *k = g->k;
    int32_t roots[NNKC_MAX_PARAMS * 2];
    for (int i = 0; i < k->nouts; i++)
        roots[i] = k->outs[i].node;
    uint8_t *need = calloc((size_t)k->nnodes + 1, 1);
    ir_mark(k, roots, k->nouts, L_CONST, need);

    Mode contig = {ACC_CONTIG}, strided = {ACC_STRIDED};
    EmitAccess ac = access_for(g, &contig), as = access_for(g, &strided);
    Buf uni = {0}, cb = {0}, sb = {0};
    emit_level(&ac, need, L_CONST, L_ROW, &uni);
    emit_level(&ac, need, L_ELEM, L_ELEM, &cb);
    emit_level(&as, need, L_ELEM, L_ELEM, &sb);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *o = &k->outs[i];
        int op = k->nloads + i;
        Buf v = {0};
        emit_ref(&ac, o->node, &v);
        buf_printf(&cb, "p%d[i] = ", op);
        emit_store(o->type, o->storage, v.data, &cb);
        buf_puts(&cb, ";\n");
        buf_printf(&sb, "p%d[i * d%d] = ", op, op);
        emit_store(o->type, o->storage, v.data, &sb);
        buf_puts(&sb, ";\n");
        buf_free(&v);
    }
    tset(d, "uniform_code", uni.data ? uni.data : "");
    tset(d, "contig_body", cb.data ? cb.data : "");
    tset(d, "strided_body", sb.data ? sb.data : "");
    buf_free(&uni);
    buf_free(&cb);
    buf_free(&sb);

    Buf cp = {0}, spp = {0}, ca = {0}, sa = {0}, aa = {0}, test = {0};
    for (int op = 0; op < g->nops; op++) {
        const char *cst = is_output(g, op) ? "" : "const ";
        const char *st = stype(g->op_storage[op]);
        buf_printf(&cp, ", %s%s *NNK_RESTRICT p%d", cst, st, op);
        buf_printf(&spp, ", %s%s *p%d, int64_t d%d", cst, st, op, op);
        buf_printf(&ca, ", (%s%s *)p->data[%d] + begin", cst, st, op);
        buf_printf(&sa, ", (%s%s *)p->data[%d] + it.off[%d], nd ? p->strides[%d][last] : 0", cst, st, op, op, op);
        buf_printf(&aa, ", %s", g->op_name[op]);
        buf_printf(&test, " && p->strides[%d][0] == 1", op);
    }
    tset(d, "contig_params", cp.data ? cp.data : "");
    tset(d, "strided_params", spp.data ? spp.data : "");
    tset(d, "contig_args", ca.data ? ca.data : "");
    tset(d, "strided_args", sa.data ? sa.data : "");
    /* the contiguous entry passes scalars converted to compute types */
    Buf apiargs = {0};
    for (int s = 0; s < g->nscalars; s++) {
        buf_puts(&apiargs, ", ");
        emit_load(g->scalar_type[s], g->scalar_type[s], g->scalar_name[s], &apiargs);
    }
    buf_puts(&apiargs, aa.data ? aa.data : "");
    tset(d, "api_args", apiargs.data ? apiargs.data : "");
    tsetf(d, "contig_test", "p->ndim == 0 || (p->ndim == 1 && p->strides[%d][0] == 1%s)", g->nops,
          test.data ? test.data : "");
    buf_free(&cp);
    buf_free(&spp);
    buf_free(&ca);
    buf_free(&sa);
    buf_free(&aa);
    buf_free(&test);
    buf_free(&apiargs);
    free(need);
}

/* ---- reductions ------------------------------------------------------------------ */

static const char *acc_ident(const IrReducer *r, Buf *scratch)
{
    Type a = r->acc_type;
    scratch->len = 0;
    switch (r->kind) {
    case R_SUM: case R_MEAN: case R_ANY: emit_literal(value_int(a, 0), a, scratch); break;
    case R_PROD: case R_ALL: emit_literal(value_int(a, 1), a, scratch); break;
    case R_MAX:
    case R_MIN: {
        bool mx = r->kind == R_MAX;
        if (type_is_float(a))
            buf_puts(scratch, mx ? "-INFINITY" : "INFINITY");
        else if (a == T_BOOL)
            buf_puts(scratch, mx ? "0" : "1");
        else {
            static const char *const lo[] = {"0", "INT8_MIN", "INT16_MIN", "INT32_MIN", "INT64_MIN", "0", "0", "0", "0"};
            static const char *const hi[] = {"1", "INT8_MAX", "INT16_MAX", "INT32_MAX", "INT64_MAX", "UINT8_MAX",
                                             "UINT16_MAX", "UINT32_MAX", "UINT64_MAX"};
            buf_puts(scratch, mx ? lo[a] : hi[a]);
        }
        break;
    }
    case R_ARGMAX: case R_ARGMIN: buf_puts(scratch, "0"); break;
    case R_CUSTOM: break; /* the identity node, emitted by the caller */
    default: nnkc_assert(!"reducer");
    }
    if (!scratch->data)
        buf_puts(scratch, "");
    return scratch->data;
}

/* acc (an lvalue) = acc combined with v (an rvalue of the accumulator type). */
static void acc_step(const Gen *g, int ri, const IrReducer *r, const char *acc, const char *v, const char *idxv, const char *idx,
                     Buf *out)
{
    Type a = r->acc_type;
    const char *sfx = type_suffix(a);
    switch (r->kind) {
    case R_SUM: case R_MEAN:
        if (type_is_int(a))
            buf_printf(out, "%s = nnk_add_%s(%s, %s);\n", acc, sfx, acc, v);
        else
            buf_printf(out, "%s = %s + %s;\n", acc, acc, v);
        break;
    case R_PROD:
        if (type_is_int(a))
            buf_printf(out, "%s = nnk_mul_%s(%s, %s);\n", acc, sfx, acc, v);
        else
            buf_printf(out, "%s = %s * %s;\n", acc, acc, v);
        break;
    case R_MAX: case R_MIN: {
        const char *cmp = r->kind == R_MAX ? ">" : "<";
        if (type_is_float(a))
            buf_printf(out, "%s = (%s %s %s || %s != %s) ? %s : %s;\n", acc, v, cmp, acc, v, v, v, acc);
        else
            buf_printf(out, "%s = %s %s %s ? %s : %s;\n", acc, v, cmp, acc, v, acc);
        break;
    }
    case R_ANY: buf_printf(out, "%s = (uint8_t)(%s | %s);\n", acc, acc, v); break;
    case R_ALL: buf_printf(out, "%s = (uint8_t)(%s & %s);\n", acc, acc, v); break;
    case R_ARGMAX: case R_ARGMIN:
        buf_printf(out, "nnk_%s_%s(&%s, &%s, %s, %s);\n", r->kind == R_ARGMAX ? "argmax" : "argmin", sfx, acc, idxv, v,
                   idx);
        break;
    case R_CUSTOM:
        buf_printf(out, "%s = %s__comb%d(p, %s, %s);\n", acc, g->in->name, ri, acc, v);
        break;
    default:
        nnkc_assert(!"reducer");
    }
}

/* The final value of reducer r from its state fields, as res compute type. */
static void acc_final(const IrReducer *r, const char *acc, const char *idxv, Buf *out)
{
    Type res = type_compute(r->res_type);
    switch (r->kind) {
    case R_MEAN:
        if (type_is_float(r->acc_type)) {
            Buf q = {0};
            buf_printf(&q, "%s / (%s)n_red", acc, ctype(r->acc_type));
            emit_convert(r->acc_type, res, q.data, out);
            buf_free(&q);
        } else {
            buf_printf(out, "(double)%s / (double)n_red", acc);
        }
        break;
    case R_ARGMAX: case R_ARGMIN:
        buf_puts(out, idxv);
        break;
    default:
        emit_convert(r->acc_type, res, acc, out);
    }
}

static bool is_arg(const IrReducer *r) { return r->kind == R_ARGMAX || r->kind == R_ARGMIN; }

static void combine_functions(const Gen *g, TDict *d)
{
    const IrKernel *k = g->k;
    Buf fns = {0};
    for (int ri = 0; ri < k->nreds; ri++) {
        const IrReducer *r = &k->reds[ri];
        if (r->kind != R_CUSTOM)
            continue;
        uint8_t *need = calloc((size_t)k->nnodes + 1, 1);
        ir_mark(k, &r->combine, 1, L_CONST, need);
        Mode m = {ACC_ROW_CONTIG};
        EmitAccess ac = access_for(g, &m);
        uint8_t used[NNKC_MAX_PARAMS * 2 + 2];
        scalars_used(g, need, used);
        const char *A = ctype(r->acc_type);
        buf_printf(&fns, "\nstatic inline %s %s__comb%d(const nnk_plan *p, %s la, %s lb)\n{\n", A, g->in->name, ri, A, A);
        buf_puts(&fns, "    (void)p;\n    (void)la;\n    (void)lb;\n");
        Buf body = {0};
        read_scalars(g, &body, true, used);
        emit_level(&ac, need, L_CONST, L_LAMBDA, &body);
        Buf v = {0};
        emit_ref(&ac, r->combine, &v);
        buf_printf(&body, "return %s;\n", v.data);
        buf_free(&v);
        for (char *line = body.data, *nl; line && *line; line = nl + 1) {
            nl = strchr(line, '\n');
            buf_printf(&fns, "    %.*s\n", (int)(nl - line), line);
            if (!nl)
                break;
        }
        buf_puts(&fns, "}\n");
        buf_free(&body);
        free(need);
    }
    tset(d, "combine_fns", fns.data ? fns.data : "");
    buf_free(&fns);
}

static void reduction(const Gen *g, TDict *d)
{
    const IrKernel *k = g->k;
    Buf scratch = {0};
    tsetf(d, "leaf", "%d", LEAF);
    tsetf(d, "nphases", "%d", k->nphases);
    combine_functions(g, d);

    /* finals: one field per reducer */
    Buf fin = {0};
    for (int ri = 0; ri < k->nreds; ri++)
        buf_printf(&fin, "%s r%d;\n", ctype(type_compute(k->reds[ri].res_type)), ri);
    if (!k->nreds)
        buf_puts(&fin, "char unused_;\n");
    tset(d, "fin_fields", fin.data);
    buf_free(&fin);
    for (int op = 0; op < g->nops; op++) {
        TDict *o = tpush(d, "operands");
        tsetf(o, "k", "%d", op);
        tset(o, "st", stype(g->op_storage[op]));
    }
    tlist(d, "operands");

    Buf sizes = {0};
    bool has_arg = false;
    for (int ph = 1; ph <= k->nphases; ph++) {
        TDict *P = tpush(d, "phases");
        tsetf(P, "phase", "%d", ph);
        int32_t roots[256];
        int nroots = 0;
        Buf fields = {0}, init = {0}, merge = {0}, lanes = {0}, lane1 = {0}, upd = {0}, lmerge = {0}, l1merge = {0},
            final = {0}, ident = {0};
        for (int ri = 0; ri < k->nreds; ri++) {
            const IrReducer *r = &k->reds[ri];
            if (r->phase != ph)
                continue;
            has_arg |= is_arg(r);
            if (nroots < 256)
                roots[nroots++] = r->arg;
            const char *A = ctype(r->acc_type);
            buf_printf(&fields, "%s a%d;\n", A, ri);
            if (is_arg(r))
                buf_printf(&fields, "int64_t x%d;\n", ri);
            /* identity */
            const char *id;
            if (r->kind == R_CUSTOM) {
                uint8_t *need = calloc((size_t)k->nnodes + 1, 1);
                ir_mark(k, &r->ident, 1, L_CONST, need);
                Mode m = {ACC_ROW_CONTIG};
                EmitAccess ac = access_for(g, &m);
                emit_level(&ac, need, L_CONST, L_UNIFORM, &ident);
                Buf v = {0};
                emit_ref(&ac, r->ident, &v);
                id = arena_strdup(g->c->arena, v.data);
                buf_free(&v);
                free(need);
            } else {
                id = arena_strdup(g->c->arena, acc_ident(r, &scratch));
            }
            buf_printf(&init, "s->a%d = %s;\n", ri, id);
            if (is_arg(r))
                buf_printf(&init, "s->x%d = -1;\n", ri);
            /* lanes */
            buf_printf(&lanes, "%s a%d_[8] = {%s, %s, %s, %s, %s, %s, %s, %s};\n", A, ri, id, id, id, id, id, id, id, id);
            buf_printf(&lane1, "%s a%d_[1] = {%s};\n", A, ri, id);
            if (is_arg(r)) {
                buf_printf(&lanes, "int64_t x%d_[8] = {-1, -1, -1, -1, -1, -1, -1, -1};\n", ri);
                buf_printf(&lane1, "int64_t x%d_[1] = {-1};\n", ri);
            }
            /* the element value converted to the accumulator type */
            Mode m = {ACC_ROW_CONTIG};
            EmitAccess ac = access_for(g, &m);
            Buf v = {0}, vc = {0}, accl = {0}, idxl = {0};
            emit_ref(&ac, r->arg, &v);
            emit_convert((Type)k->nodes[r->arg].type, r->acc_type, v.data, &vc);
            buf_printf(&accl, "a%d_[j]", ri);
            buf_printf(&idxl, "x%d_[j]", ri);
            acc_step(g, ri, r, accl.data, vc.data, idxl.data, "i", &upd);
            /* lanes into the state, pairwise */
            for (int pass = 0; pass < 2; pass++) {
                Buf *dst = pass ? &l1merge : &lmerge;
                int nl = pass ? 1 : 8;
                for (int w = 1; w < nl; w *= 2) {
                    for (int j = 0; j + w < nl; j += 2 * w) {
                        char a1[32], b1[32], ax[32], bx[32];
                        snprintf(a1, sizeof a1, "a%d_[%d]", ri, j);
                        snprintf(b1, sizeof b1, "a%d_[%d]", ri, j + w);
                        snprintf(ax, sizeof ax, "x%d_[%d]", ri, j);
                        snprintf(bx, sizeof bx, "x%d_[%d]", ri, j + w);
                        if (is_arg(r))
                            buf_printf(dst, "nnk_%s_%s(&%s, &%s, %s, %s);\n", r->kind == R_ARGMAX ? "argmax" : "argmin",
                                       type_suffix(r->acc_type), a1, ax, b1, bx);
                        else if (r->kind == R_MAX || r->kind == R_MIN)
                            buf_printf(dst, "%s = nnk_%s_%s(%s, %s);\n", a1, r->kind == R_MAX ? "max" : "min",
                                       type_suffix(r->acc_type), a1, b1);
                        else
                            acc_step(g, ri, r, a1, b1, ax, bx, dst);
                    }
                }
                buf_printf(dst, "out->a%d = a%d_[0];\n", ri, ri);
                if (is_arg(r))
                    buf_printf(dst, "out->x%d = x%d_[0];\n", ri, ri);
            }
            /* state merge */
            char sa[32], sb[32], xa[32], xb[32];
            snprintf(sa, sizeof sa, "a->a%d", ri);
            snprintf(sb, sizeof sb, "b->a%d", ri);
            snprintf(xa, sizeof xa, "a->x%d", ri);
            snprintf(xb, sizeof xb, "b->x%d", ri);
            if (is_arg(r))
                buf_printf(&merge, "nnk_%s_%s(&%s, &%s, %s, %s);\n", r->kind == R_ARGMAX ? "argmax" : "argmin",
                           type_suffix(r->acc_type), sa, xa, sb, xb);
            else if (r->kind == R_MAX || r->kind == R_MIN)
                buf_printf(&merge, "%s = nnk_%s_%s(%s, %s);\n", sa, r->kind == R_MAX ? "max" : "min",
                           type_suffix(r->acc_type), sa, sb);
            else
                acc_step(g, ri, r, sa, sb, xa, xb, &merge);
            /* final */
            char fa[32], fx[32];
            snprintf(fa, sizeof fa, "s->a%d", ri);
            snprintf(fx, sizeof fx, "s->x%d", ri);
            buf_printf(&final, "f->r%d = ", ri);
            acc_final(r, fa, fx, &final);
            buf_puts(&final, ";\n");
            buf_free(&v);
            buf_free(&vc);
            buf_free(&accl);
            buf_free(&idxl);
        }
        buf_printf(&sizes, "%s(int32_t)sizeof(%s__s%d)", ph > 1 ? ", " : "", g->in->name, ph);
        /* element code of this phase's arguments */
        uint8_t *need = calloc((size_t)k->nnodes + 1, 1);
        ir_mark(k, roots, nroots, L_CONST, need);
        uint8_t used[NNKC_MAX_PARAMS * 2 + 2];
        scalars_used(g, need, used);
        Mode mc = {ACC_ROW_CONTIG}, mg = {ACC_ROW_GENERIC};
        EmitAccess ac = access_for(g, &mc), ag = access_for(g, &mg);
        Buf pro = {0}, cbody = {0}, gbody = {0}, ptrs = {0}, test = {0};
        emit_level(&ac, need, L_CONST, L_ROW, &pro);
        emit_level(&ac, need, L_ELEM, L_ELEM, &cbody);
        emit_level(&ag, need, L_ELEM, L_ELEM, &gbody);
        /* the generic body reads operands through g<k> pointers */
        Buf gptrs = {0};
        for (int op = 0; op < g->k->nloads; op++) {
            bool loaded = false;
            for (int i = 0; i < k->nnodes; i++)
                loaded |= need[i] && k->nodes[i].op == IR_LOAD && k->nodes[i].aux == op;
            if (!loaded)
                continue;
            buf_printf(&ptrs, "const %s *NNK_RESTRICT c%d = (const %s *)ps->b[%d];\n", stype(g->op_storage[op]), op,
                       stype(g->op_storage[op]), op);
            buf_printf(&gptrs, "const %s *g%d = (const %s *)ps->b[%d];\n", stype(g->op_storage[op]), op,
                       stype(g->op_storage[op]), op);
            buf_printf(&test, " && p->strides[%d][p->ndim - 1] == 1", op);
        }
        buf_puts(&gptrs, gbody.data ? gbody.data : "");
        tset(P, "state_fields", fields.data ? fields.data : "char unused_;");
        tset(P, "ident_code", ident.data ? ident.data : "");
        tset(P, "init_code", init.data ? init.data : "(void)s;");
        tset(P, "merge_code", merge.data ? merge.data : "(void)a;\n(void)b;");
        tset(P, "prologue_code", pro.data ? pro.data : "");
        tset(P, "contig_ptrs", ptrs.data ? ptrs.data : "");
        tsetf(P, "contig_test", "p->nred == 1%s", test.data ? test.data : "");
        tset(P, "lane_decls", lanes.data ? lanes.data : "");
        tset(P, "lane1_decls", lane1.data ? lane1.data : "");
        tset(P, "contig_body", cbody.data ? cbody.data : "");
        tset(P, "generic_body", gptrs.data ? gptrs.data : "");
        tset(P, "lane_update", upd.data ? upd.data : "(void)j;");
        tset(P, "lane_merge", lmerge.data ? lmerge.data : "");
        tset(P, "lane1_merge", l1merge.data ? l1merge.data : "");
        tset(P, "final_code", final.data ? final.data : "(void)f;\n(void)s;");
        Buf rs = {0};
        read_scalars(g, &rs, false, NULL);
        for (int s = 0; s < g->nscalars; s++)
            buf_printf(&rs, "(void)s%d;\n", s);
        tset(P, "read_scalars", rs.data ? rs.data : "");
        buf_free(&rs);
        Buf *all[] = {&fields, &init, &merge, &lanes, &lane1, &upd, &lmerge, &l1merge, &final, &ident,
                      &pro, &cbody, &gbody, &ptrs, &test, &gptrs};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            buf_free(all[i]);
        free(need);
    }
    tlist(d, "phases");
    tset(d, "state_sizes", sizes.data ? sizes.data : "0");
    buf_free(&sizes);
    tsetf(d, "finals_size", "(int32_t)sizeof(%s__fin)", g->in->name);
    tbool(d, "has_arg_reducer", has_arg);
    tset(d, "argmax_flag", has_arg ? "1" : "0");

    /* epilogue: tensor outputs per element, reduced-shape outputs per row */
    int32_t roots[NNKC_MAX_PARAMS * 2];
    int nr = 0;
    bool has_tensor = false;
    for (int i = 0; i < k->nouts; i++) {
        roots[nr++] = k->outs[i].node;
        has_tensor |= k->outs[i].tensor;
    }
    uint8_t *need = calloc((size_t)k->nnodes + 1, 1);
    ir_mark(k, roots, nr, L_CONST, need);
    Mode mc = {ACC_ROW_CONTIG}, mg = {ACC_ROW_GENERIC};
    EmitAccess ac = access_for(g, &mc), ag = access_for(g, &mg);
    Buf pro = {0}, cbody = {0}, gbody = {0}, ptrs = {0}, test = {0}, sstores = {0};
    emit_level(&ac, need, L_CONST, L_ROW, &pro);
    emit_level(&ac, need, L_ELEM, L_ELEM, &cbody);
    for (int op = 0; op < g->nops; op++) {
        bool loaded = false;
        for (int i = 0; i < k->nnodes; i++)
            loaded |= need[i] && k->nodes[i].op == IR_LOAD && k->nodes[i].aux == op;
        bool tout = is_output(g, op) && !g->op_reduced[op];
        if (!loaded && !tout)
            continue;
        const char *cst = tout ? "" : "const ";
        buf_printf(&ptrs, "%s%s *NNK_RESTRICT c%d = (%s%s *)ps->b[%d];\n", cst, stype(g->op_storage[op]), op, cst,
                   stype(g->op_storage[op]), op);
        buf_printf(&gbody, "%s%s *g%d = (%s%s *)ps->b[%d];\n", cst, stype(g->op_storage[op]), op, cst,
                   stype(g->op_storage[op]), op);
        buf_printf(&test, " && p->strides[%d][p->ndim - 1] == 1", op);
    }
    emit_level(&ag, need, L_ELEM, L_ELEM, &gbody);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *o = &k->outs[i];
        int op = k->nloads + i;
        Buf v = {0};
        emit_ref(&ac, o->node, &v);
        if (o->tensor) {
            buf_printf(&cbody, "c%d[i] = ", op);
            emit_store(o->type, o->storage, v.data, &cbody);
            buf_puts(&cbody, ";\n");
            buf_printf(&gbody, "g%d[it.off[%d]] = ", op, op);
            emit_store(o->type, o->storage, v.data, &gbody);
            buf_puts(&gbody, ";\n");
        } else {
            buf_printf(&sstores, "*(%s *)ps->b[%d] = ", stype(o->storage), op);
            emit_store(o->type, o->storage, v.data, &sstores);
            buf_puts(&sstores, ";\n");
        }
        buf_free(&v);
    }
    tset(d, "epi_prologue", pro.data ? pro.data : "");
    tset(d, "scalar_stores", sstores.data ? sstores.data : "");
    tbool(d, "has_tensor_outs", has_tensor);
    tset(d, "epi_ptrs", ptrs.data ? ptrs.data : "");
    tsetf(d, "epi_contig_test", "p->nred == 1%s", test.data ? test.data : "");
    tset(d, "epi_contig_body", cbody.data ? cbody.data : "");
    tset(d, "epi_generic_body", gbody.data ? gbody.data : "");
    Buf *all[] = {&pro, &cbody, &gbody, &ptrs, &test, &sstores, &scratch};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        buf_free(all[i]);
    free(need);

    /* §6 entry: [outer, len, inner] views */
    Buf args = {0};
    int vi = 0;
    for (int i = 0; i < g->in->nparams; i++) {
        const InstParam *ip = &g->in->params[i];
        if (ip->tensor) {
            TDict *v = tpush(d, "api_views");
            tsetf(v, "k", "%d", vi);
            tset(v, "arg", ip->name);
            tset(v, "rank", "3");
            tset(v, "shape", "full");
            tset(v, "strides", "fst");
            buf_printf(&args, ", &v%d", vi++);
        } else {
            buf_printf(&args, ", %s", ip->name);
        }
    }
    for (int i = 0; i < g->in->nouts; i++) {
        const InstParam *o = &g->in->outs[i];
        TDict *v = tpush(d, "api_views");
        tsetf(v, "k", "%d", vi);
        tset(v, "arg", o->name);
        tset(v, "rank", o->tensor ? "3" : "2");
        tset(v, "shape", o->tensor ? "full" : "red");
        tset(v, "strides", o->tensor ? "fst" : "rst");
        buf_printf(&args, ", &v%d", vi++);
    }
    tlist(d, "api_views");
    tset(d, "api_args", args.data ? args.data : "");
    buf_free(&args);
}

/* ---- the file ---------------------------------------------------------------------- */

/* What the C file and the header say about every instance. */
static TDict *file_dict(Compiler *c, const List *instances, const EmitOptions *opt, bool bodies)
{
    TDict *d = tdict_new(c->arena);
    tset(d, "version", NNKC_VERSION);
    tset(d, "source", opt->source_name ? opt->source_name : "<string>");
    Buf names = {0};
    for (int i = 0; i < instances->n; i++) {
        const Instance *in = instances->items[i];
        buf_printf(&names, "%s%s", i ? ", " : "", in->name);
        Gen g;
        gen_init(&g, c, in);
        TDict *e = tpush(d, "instances");
        tbool(e, "elementwise", !in->reduction);
        tbool(e, "reduction", in->reduction);
        tset(e, "kind_word", in->reduction ? "reduction" : "elementwise");
        tset(e, "name", in->name);
        tset(e, "display", in->display);
        tset(e, "signature", signature(&g));
        tsetf(e, "desc_symbol", "%s__desc%s", in->name, opt->symbol_suffix ? opt->symbol_suffix : "");
        tset(e, "kind", in->reduction ? "NNK_KIND_REDUCTION" : "NNK_KIND_ELEMENTWISE");
        tset(e, "cuda_symbol", opt->with_cuda ? arena_printf(c->arena, "\"%s__cuda\"", in->name) : "0");
        scalar_lists(&g, e);
        api_params(&g, e, false);
        views_list(&g, e);
        if (!bodies)
            continue;
        desc_params(&g, e);
        tlist(e, "params");
        if (in->reduction)
            reduction(&g, e);
        else
            elementwise(&g, e);
    }
    tlist(d, "instances");
    tset(d, "instance_list", names.data ? names.data : "(none)");
    buf_free(&names);
    return d;
}

void emit_c_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out)
{
    template_render("c/file.tmpl", file_dict(c, instances, opt, true), out);
}

void emit_header(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out)
{
    TDict *d = file_dict(c, instances, opt, false);
    /* the guard names the header after its source */
    const char *base = opt->source_name ? opt->source_name : "kernels";
    const char *slash = strrchr(base, '/');
    base = slash ? slash + 1 : base;
    Buf guard = {0};
    buf_puts(&guard, "NNK_GENERATED_");
    for (const char *p = base; *p; p++) {
        char ch = *p;
        ch = (ch >= 'a' && ch <= 'z') ? (char)(ch - 32) : ((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) ? ch : '_';
        buf_put(&guard, &ch, 1);
    }
    buf_puts(&guard, "_H");
    tset(d, "guard", guard.data);
    buf_free(&guard);
    template_render("header.tmpl", d, out);
}
