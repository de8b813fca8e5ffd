/* emit_cuda.c - the CUDA back end: fills templates/cuda/ for every instance.
 *
 * The expressions are emit.c's, shared with the C back end; this file
 * decides how operands are addressed in each kernel (vector registers,
 * flat indices, plan offsets) and writes the reducer states, their warp
 * shuffles and their merges.  docs/cuda-backend.md describes the kernels
 * and the CUDA primitives they may use.
 */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

typedef enum { CU_VEC, CU_FLAT, CU_OFF, CU_SLICE } CuMode;

typedef struct CuAccess {
    CuMode mode;
} CuAccess;

static void cu_operand(const EmitAccess *ac, int op, Buf *out)
{
    const CuAccess *m = ac->user;
    switch (m->mode) {
    case CU_VEC: buf_printf(out, "l%d.e[j]", op); break;
    case CU_FLAT: buf_printf(out, "g%d[i]", op); break;
    case CU_OFF: buf_printf(out, "g%d[off[%d]]", op, op); break;
    case CU_SLICE: buf_printf(out, "g%d[b[%d] + ro[%d]]", op, op, op); break;
    }
}

static EmitAccess cu_access(Compiler *c, const EmitOperands *o, const CuAccess *m)
{
    /* raw views and index(d): the kernel's nnk_cuda_rargs, whose head is p
     * (cuda/prelude.tmpl) */
    EmitAccess ac = {.k = o->k, .operand = cu_operand, .n = "n_red", .red_fmt = "f->r%d", .plan = "NNK_RP(p)",
                     .user = m};
    switch (m->mode) {
    case CU_VEC: case CU_FLAT: ac.idx = "idx"; break;
    case CU_OFF: ac.idx = "idx"; break;
    case CU_SLICE: ac.idx = arena_printf(c->arena, "(b[%d] + ro[%d])", o->nops, o->nops); break;
    }
    return ac;
}

static uint8_t *mark(const IrKernel *k, const int32_t *roots, int n)
{
    uint8_t *need = nnkc_scratch((size_t)k->nnodes + 1);
    ir_mark(k, roots, n, L_CONST, need);
    return need;
}

/* Typed pointers g<k> to every operand the code touches. */
static void pointers(const EmitOperands *o, const uint8_t *need, bool outputs, Buf *out)
{
    for (int op = 0; op < o->nops; op++) {
        bool used = o->output[op] ? outputs : emit_loads(o->k, need, op);
        if (!used)
            continue;
        const char *cst = o->output[op] ? "" : "const ";
        buf_printf(out, "%s%s *__restrict__ g%d = (%s%s *)p.data[%d];\n", cst, stype(o->storage[op]), op, cst,
                   stype(o->storage[op]), op);
    }
}

/* What the marked nodes read: scalar parameters (into used, o->nscalars
 * flags), and whether n (IR_N) or idx (IR_IDX). */
static void reads_of(const EmitOperands *o, const uint8_t *need, uint8_t *used, bool *n, bool *idx)
{
    for (int i = 0; i < o->k->nnodes; i++) {
        const IrNode *x = &o->k->nodes[i];
        if (!need[i])
            continue;
        if (x->op == IR_SCALAR)
            used[x->aux] = 1;
        *n |= x->op == IR_N;
        *idx |= x->op == IR_IDX || x->op == IR_DIMIDX;
    }
}

/* "const float s0 = p.scalars[0].f32;" for the scalars the nodes read. */
static const char *scalars_of(Compiler *c, const EmitOperands *o, const uint8_t *need, bool *n, bool *idx)
{
    uint8_t *used = nnkc_scratch((size_t)o->nscalars + 1);
    bool n_ = false, idx_ = false;
    reads_of(o, need, used, n ? n : &n_, idx ? idx : &idx_);
    Buf rs = {0};
    emit_read_scalars(o, "p.", used, &rs);
    return emit_str(c, &rs);
}

/* ---- elementwise --------------------------------------------------------------- */

/* Bytes of one vector access: vec elements of the operand. */
static const char *vec_type(int bytes)
{
    switch (bytes) {
    case 1: return "unsigned char"; /* a bool beside a c128 (16 bytes: one element a vector) */
    case 2: return "unsigned short";
    case 4: return "unsigned";
    case 8: return "uint2";
    case 16: return "uint4";
    }
    nnkc_assert(!"vector width");
    return "uint4";
}

static void elementwise(Compiler *c, const EmitOperands *o, TDict *d)
{
    const IrKernel *k = o->k;
    int32_t roots[NNKC_MAX_PARAMS * 2];
    for (int i = 0; i < k->nouts; i++)
        roots[i] = k->outs[i].node;
    uint8_t *need = mark(k, roots, k->nouts);

    int widest = 1;
    for (int op = 0; op < o->nops; op++)
        if (type_info[o->storage[op]].bits / 8 > widest)
            widest = type_info[o->storage[op]].bits / 8;
    int vec = 16 / widest;

    CuAccess mv = {CU_VEC}, mf = {CU_FLAT}, mo = {CU_OFF};
    EmitAccess av = cu_access(c, o, &mv), af = cu_access(c, o, &mf), ao = cu_access(c, o, &mo);
    Buf uni = {0}, vb = {0}, fb = {0}, ob = {0}, loads = {0}, stores = {0}, ptrs = {0};
    emit_levels(&af, need, L_CONST, L_ROW, &uni);
    emit_levels(&av, need, L_ELEM, L_ELEM, &vb);
    emit_levels(&af, need, L_ELEM, L_ELEM, &fb);
    emit_levels(&ao, need, L_ELEM, L_ELEM, &ob);
    pointers(o, need, true, &ptrs);
    bool uses_idx = false;
    tset(d, "read_scalars", scalars_of(c, o, need, NULL, &uses_idx));
    tbool(d, "uses_idx", uses_idx);
    for (int op = 0; op < o->nops; op++) {
        int bytes = vec * type_info[o->storage[op]].bits / 8;
        if (o->output[op]) {
            buf_printf(&loads, "union { %s w; %s e[%d]; } l%d;\n", vec_type(bytes), stype(o->storage[op]), vec, op);
            buf_printf(&stores, "((%s *)g%d)[v] = l%d.w;\n", vec_type(bytes), op, op);
        } else if (emit_loads(k, need, op)) {
            buf_printf(&loads, "union { %s w; %s e[%d]; } l%d;\n", vec_type(bytes), stype(o->storage[op]), vec, op);
            buf_printf(&loads, "l%d.w = __ldg((const %s *)g%d + v);\n", op, vec_type(bytes), op);
        }
    }
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *out = &k->outs[i];
        int op = k->nloads + i;
        Buf v = {0};
        emit_ref(&af, out->node, &v);
        Buf st = {0};
        emit_store(out->type, out->storage, v.data, &st);
        buf_printf(&vb, "l%d.e[j] = %s;\n", op, st.data);
        buf_printf(&fb, "g%d[i] = %s;\n", op, st.data);
        buf_printf(&ob, "g%d[off[%d]] = %s;\n", op, op, st.data);
        buf_free(&v);
        buf_free(&st);
    }
    static const char *const itypes[2][2] = {{"c", "unsigned"}, {"c64", "unsigned long long"}};
    for (int t = 0; t < 2; t++) {
        TDict *e = tpush(d, "index_types");
        tset(e, "suffix", itypes[t][0]);
        tset(e, "itype", itypes[t][1]);
    }
    tsetf(d, "vec", "%d", vec);
    tset(d, "uniform_code", emit_str(c, &uni));
    tset(d, "vec_body", emit_str(c, &vb));
    tset(d, "flat_body", emit_str(c, &fb));
    tset(d, "off_body", emit_str(c, &ob));
    tset(d, "vec_loads", emit_str(c, &loads));
    tset(d, "vec_stores", emit_str(c, &stores));
    tset(d, "ptrs", emit_str(c, &ptrs));
}

/* ---- reductions ------------------------------------------------------------------ */

/* A state field through a warp shuffle, carried as types.def's shuffle
 * type (8/16-bit and bool fields as int, 64-bit integers as long long). */
static void shfl_field(Type t, const char *field, Buf *out)
{
    buf_printf(out, "o.%s = (%s)nnk_shfl_down((%s)s->%s, d);\n", field, ctype(t), type_info[t].shuffle, field);
}

static void reduction(Compiler *c, const EmitOperands *o, TDict *d)
{
    const IrKernel *k = o->k;
    tsetf(d, "nphases", "%d", k->nphases);
    bool has_arg = false;
    for (int ri = 0; ri < k->nreds; ri++)
        has_arg |= red_is_arg(&k->reds[ri]);
    tset(d, "cu_flags", has_arg ? "1" : "0"); /* NAME__cu_sizes' last entry: 1 = argmax/argmin */
    CuAccess cm = {CU_SLICE};
    EmitAccess cac = cu_access(c, o, &cm);
    emit_combine_keys(o, "p.", &cac, d);

    Buf fin = {0};
    for (int ri = 0; ri < k->nreds; ri++)
        buf_printf(&fin, "%s r%d;\n", ctype(type_compute(k->reds[ri].res_type)), ri);
    if (!k->nreds)
        buf_puts(&fin, "char unused_;\n");
    tset(d, "fin_fields", emit_str(c, &fin));

    for (int ph = 1; ph <= k->nphases; ph++) {
        TDict *P = tpush(d, "phases");
        tsetf(P, "phase", "%d", ph);
        uint8_t *need = emit_red_phase(o, &cac, "p.", ph, P);
        /* the state through warp shuffles */
        Buf shfl = {0}, ptrs = {0};
        for (int ri = 0; ri < k->nreds; ri++) {
            const IrReducer *r = &k->reds[ri];
            if (r->phase != ph)
                continue;
            shfl_field(r->acc_type, arena_printf(c->arena, "a%d", ri), &shfl);
            if (red_is_arg(r))
                shfl_field(T_I64, arena_printf(c->arena, "x%d", ri), &shfl);
        }
        pointers(o, need, false, &ptrs);
        /* what init (the identities), acc (the arguments) and final read */
        uint8_t *ineed = nnkc_scratch((size_t)k->nnodes + 1);
        bool acc_n = false, acc_i = false, final_n = false;
        for (int ri = 0; ri < k->nreds; ri++) {
            const IrReducer *r = &k->reds[ri];
            if (r->phase != ph)
                continue;
            if (r->kind == R_CUSTOM)
                ir_mark(k, &r->ident, 1, L_CONST, ineed);
            acc_i |= red_is_arg(r) && r->width == 1;
            final_n |= r->kind == R_MEAN;
        }
        tset(P, "init_scalars", scalars_of(c, o, ineed, NULL, NULL));
        tset(P, "read_scalars", scalars_of(c, o, need, &acc_n, NULL));
        tbool(P, "acc_n", acc_n);
        tbool(P, "acc_i", acc_i);
        tbool(P, "final_n", final_n);
        tset(P, "shfl_code", shfl.data ? emit_str(c, &shfl) : "o = *s;");
        tset(P, "ptrs", emit_str(c, &ptrs));
    }
    tlist(d, "phases");

    /* the epilogue */
    int32_t roots[NNKC_MAX_PARAMS * 2];
    bool has_tensor = false;
    for (int i = 0; i < k->nouts; i++) {
        roots[i] = k->outs[i].node;
        has_tensor |= k->outs[i].tensor;
    }
    uint8_t *need = mark(k, roots, k->nouts);
    CuAccess m = {CU_SLICE};
    EmitAccess ac = cu_access(c, o, &m);
    Buf pro = {0}, body = {0}, ptrs = {0}, stores = {0};
    emit_levels(&ac, need, L_CONST, L_ROW, &pro);
    emit_levels(&ac, need, L_ELEM, L_ELEM, &body);
    pointers(o, need, true, &ptrs);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *out = &k->outs[i];
        int op = k->nloads + i;
        Buf v = {0}, st = {0};
        emit_ref(&ac, out->node, &v);
        emit_store(out->type, out->storage, v.data, &st);
        if (out->tensor)
            buf_printf(&body, "g%d[b[%d] + ro[%d]] = %s;\n", op, op, op, st.data);
        else
            buf_printf(&stores, "g%d[b[%d]] = %s;\n", op, op, st.data);
        buf_free(&v);
        buf_free(&st);
    }
    bool epi_n = false;
    tset(d, "read_scalars", scalars_of(c, o, need, &epi_n, NULL));
    tbool(d, "epi_n", epi_n);
    tset(d, "epi_prologue", emit_str(c, &pro));
    tset(d, "epi_body", emit_str(c, &body));
    tset(d, "scalar_stores", emit_str(c, &stores));
    tset(d, "ptrs", emit_str(c, &ptrs));
    tbool(d, "has_tensor_outs", has_tensor);
}

void emit_cuda_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out)
{
    TDict *d = tdict_new(c->arena);
    emit_file_keys(c, d, opt);
    Buf names = {0};
    bool uses_raw = false;
    for (int i = 0; i < instances->n; i++) {
        const Instance *in = instances->items[i];
        buf_printf(&names, "%s%s", i ? ", " : "", in->name);
        EmitOperands o;
        emit_operands_init(&o, c, in);
        TDict *e = tpush(d, "instances");
        emit_instance_keys(&o, opt, e);
        /* raw parameters and index(d): the kernels take nnk_cuda_rargs
         * (nnk/abi.h), every kernel of the instance the same */
        bool raw = ir_reads_plan(in->ir);
        uses_raw |= raw;
        tbool(e, "cu_raw", raw);
        tset(e, "cu_param", raw ? "const nnk_cuda_rargs ra_" : "const nnk_cuda_args a");
        tset(e, "cu_head", raw ? "const nnk_cuda_args &a = ra_.a;\n    " : "");
        if (in->reduction)
            reduction(c, &o, e);
        else
            elementwise(c, &o, e);
    }
    tlist(d, "instances");
    tbool(d, "uses_raw", uses_raw);
    tset(d, "instance_list", names.data ? names.data : "(none)");
    buf_free(&names);
    template_render("cuda/file.tmpl", d, out);
}
