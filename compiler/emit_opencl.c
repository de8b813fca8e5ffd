/* emit_opencl.c - the OpenCL back end: fills templates/opencl/ for every
 * instance.
 *
 * The third user of the shared instance model (emit.c): the expressions,
 * the reducer steps and merges and the operand list are emit.c's; this
 * file says how a kernel addresses its operands (private vectors, flat
 * indices, plan offsets, slice offsets) and which kernels an instance has.
 * The C back end's helper text is the prelude's (opencl/prelude.tmpl), so
 * the same expressions mean the same bits.  docs/opencl.md describes the
 * kernels and their arguments.
 */
#include "nnkc.h"

#include <string.h>

typedef enum { CL_VEC, CL_FLAT, CL_OFF, CL_SLICE } ClMode;

typedef struct ClAccess {
    ClMode mode;
} ClAccess;

static void cl_operand(const EmitAccess *ac, int op, Buf *out)
{
    const ClAccess *m = ac->user;
    switch (m->mode) {
    case CL_VEC: buf_printf(out, "e%d[j]", op); break;
    case CL_FLAT: buf_printf(out, "g%d[i]", op); break;
    case CL_OFF: buf_printf(out, "g%d[off[%d]]", op, op); break;
    case CL_SLICE: buf_printf(out, "g%d[b[%d] + ro[%d]]", op, op, op); break;
    }
}

static EmitAccess cl_access(Compiler *c, const EmitOperands *o, const ClAccess *m)
{
    /* raw views and index(d): the kernel's rp_ and rng_ (opencl/plan.h), the
     * data through the operand's g<k> */
    EmitAccess ac = {.k = o->k, .operand = cl_operand, .idx = "idx", .n = "n_red", .red_fmt = "f->r%d",
                     .plan = "rp_", .raw_args = "rp_, rng_", .raw_data = "g%d", .user = m};
    if (m->mode == CL_SLICE)
        ac.idx = arena_printf(c->arena, "(b[%d] + ro[%d])", o->nops, o->nops);
    return ac;
}

static uint8_t *mark(const IrKernel *k, const int32_t *roots, int n)
{
    uint8_t *need = nnkc_scratch((size_t)k->nnodes + 1);
    ir_mark(k, roots, n, L_CONST, need);
    return need;
}

static bool uses_op(const IrKernel *k, const uint8_t *need, IrOp op)
{
    for (int i = 0; i < k->nnodes; i++)
        if (need[i] && k->nodes[i].op == op)
            return true;
    return false;
}

/* ", __global const float *a0, __global float *a1": every operand is an
 * argument, used or not, so that the host sets the same list for every
 * kernel of an instance. */
static const char *kernel_params(Compiler *c, const EmitOperands *o)
{
    Buf b = {0};
    for (int op = 0; op < o->nops; op++)
        buf_printf(&b, ", __global %s%s *a%d", o->output[op] ? "" : "const ", stype(o->storage[op]), op);
    /* raw parameters and index(d): their views and the range error */
    if (ir_reads_plan(o->k))
        buf_puts(&b, ", __constant nnk_cl_rplan *rp_, __global nnk_cl_range *rng_");
    return emit_str(c, &b);
}

/* Whether the code reads raw operand op's elements (its g<op>). */
static bool reads_raw(const IrKernel *k, const uint8_t *need, int op)
{
    for (int i = 0; i < k->nnodes; i++)
        if (need[i] && k->nodes[i].op == IR_RAWLD && k->raw_operand[k->nodes[i].aux] == op)
            return true;
    return false;
}

/* g<k>: operand k's element (0, ..., 0), for every operand the code touches. */
static const char *pointers(Compiler *c, const EmitOperands *o, const uint8_t *need, bool outputs)
{
    Buf b = {0};
    for (int op = 0; op < o->nops; op++) {
        bool used = o->output[op] ? outputs : emit_loads(o->k, need, op) || reads_raw(o->k, need, op);
        if (used)
            buf_printf(&b, "__global %s%s *g%d = a%d + p->offset[%d];\n", o->output[op] ? "" : "const ",
                       stype(o->storage[op]), op, op, op);
    }
    return emit_str(c, &b);
}

/* Whether the instance computes in f64 or c128 anywhere (values, accumulators,
 * operands, scalars), or converts a wide integer to f16/bf16 (emit.c
 * rounds those through a double rounded to odd): the file then needs
 * cl_khr_fp64. */
static bool is_fp64(Type t)
{
    return t == T_F64 || t == T_C128; /* (a c128 is a pair of doubles) */
}

static bool needs_fp64(const EmitOperands *o)
{
    const IrKernel *k = o->k;
    for (int op = 0; op < o->nops; op++)
        if (is_fp64(o->storage[op]) || is_fp64(o->type[op]))
            return true;
    for (int s = 0; s < o->nscalars; s++)
        if (is_fp64(o->scalar_type[s]))
            return true;
    for (int r = 0; r < k->nreds; r++)
        if (is_fp64(k->reds[r].acc_type) || is_fp64(k->reds[r].res_type))
            return true;
    for (int i = 0; i < k->nnodes; i++) {
        const IrNode *n = &k->nodes[i];
        if (is_fp64((Type)n->type))
            return true;
        if (n->op == IR_CAST && (n->type == T_F16 || n->type == T_BF16) && n->sub < T_NSCALAR &&
            type_is_int((Type)n->sub) && type_info[n->sub].bits > 16)
            return true;
    }
    for (int op = 0; op < o->nops; op++)
        if ((o->type[op] == T_F16 || o->type[op] == T_BF16) && type_is_int(o->storage[op]) &&
            type_info[o->storage[op]].bits > 16)
            return true;
    return false;
}

/* ---- elementwise --------------------------------------------------------------- */

static void elementwise(Compiler *c, const EmitOperands *o, TDict *d)
{
    const IrKernel *k = o->k;
    int32_t roots[NNKC_MAX_PARAMS * 2];
    for (int i = 0; i < k->nouts; i++)
        roots[i] = k->outs[i].node;
    uint8_t *need = mark(k, roots, k->nouts);

    /* a vector is 16 bytes of the widest operand */
    int widest = 1;
    for (int op = 0; op < o->nops; op++)
        if (type_info[o->storage[op]].bits / 8 > widest)
            widest = type_info[o->storage[op]].bits / 8;
    int vec = 16 / widest;

    ClAccess mv = {CL_VEC}, mf = {CL_FLAT}, mo = {CL_OFF};
    EmitAccess av = cl_access(c, o, &mv), af = cl_access(c, o, &mf), ao = cl_access(c, o, &mo);
    Buf uni = {0}, vb = {0}, fb = {0}, ob = {0}, loads = {0}, stores = {0};
    emit_levels(&af, need, L_CONST, L_ROW, &uni);
    emit_levels(&av, need, L_ELEM, L_ELEM, &vb);
    emit_levels(&af, need, L_ELEM, L_ELEM, &fb);
    emit_levels(&ao, need, L_ELEM, L_ELEM, &ob);
    for (int op = 0; op < o->nops; op++) {
        /* vloadN/vstoreN take scalar element types and N >= 2: a complex
         * operand (a struct), or any beside a c128 (vec 1), moves element
         * by element */
        bool cx = type_is_complex(o->storage[op]) || vec == 1;
        if (o->output[op]) {
            buf_printf(&loads, "%s e%d[%d];\n", stype(o->storage[op]), op, vec);
            if (cx)
                buf_printf(&stores, "for (int j = 0; j < %d; j++)\n    g%d[v * %d + j] = e%d[j];\n", vec, op, vec, op);
            else
                buf_printf(&stores, "vstore%d(vload%d(0, e%d), v, g%d);\n", vec, vec, op, op);
        } else if (emit_loads(k, need, op)) {
            buf_printf(&loads, "%s e%d[%d];\n", stype(o->storage[op]), op, vec);
            if (cx)
                buf_printf(&loads, "for (int j = 0; j < %d; j++)\n    e%d[j] = g%d[v * %d + j];\n", vec, op, op, vec);
            else
                buf_printf(&loads, "vstore%d(vload%d(v, g%d), 0, e%d);\n", vec, vec, op, op);
        }
    }
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *out = &k->outs[i];
        int op = k->nloads + i;
        Buf v = {0}, st = {0};
        emit_ref(&af, out->node, &v);
        emit_store(out->type, out->storage, v.data, &st);
        buf_printf(&vb, "e%d[j] = %s;\n", op, st.data);
        buf_printf(&fb, "g%d[i] = %s;\n", op, st.data);
        buf_printf(&ob, "g%d[off[%d]] = %s;\n", op, op, st.data);
        buf_free(&v);
        buf_free(&st);
    }
    tsetf(d, "vec", "%d", vec);
    tbool(d, "uses_idx", uses_op(k, need, IR_IDX) || uses_op(k, need, IR_DIMIDX));
    tset(d, "uniform_code", emit_str(c, &uni));
    tset(d, "vec_body", emit_str(c, &vb));
    tset(d, "flat_body", emit_str(c, &fb));
    tset(d, "off_body", emit_str(c, &ob));
    tset(d, "vec_loads", emit_str(c, &loads));
    tset(d, "vec_stores", emit_str(c, &stores));
    tset(d, "ptrs", pointers(c, o, need, true));
}

/* ---- reductions ------------------------------------------------------------------ */

static void reduction(Compiler *c, const EmitOperands *o, TDict *d)
{
    const IrKernel *k = o->k;
    ClAccess m = {CL_SLICE};
    EmitAccess ac = cl_access(c, o, &m);
    tsetf(d, "nphases", "%d", k->nphases);
    bool has_arg = false;
    for (int ri = 0; ri < k->nreds; ri++)
        has_arg |= red_is_arg(&k->reds[ri]);
    tset(d, "flags", has_arg ? "1" : "0");
    emit_combine_keys(o, "p->", &ac, d);
    Buf args = {0};
    for (int op = 0; op < o->nops; op++)
        buf_printf(&args, ", a%d", op);
    if (ir_reads_plan(k))
        buf_puts(&args, ", rp_, rng_");
    tset(d, "kernel_args", emit_str(c, &args));

    Buf fin = {0};
    for (int ri = 0; ri < k->nreds; ri++)
        buf_printf(&fin, "%s r%d;\n", ctype(type_compute(k->reds[ri].res_type)), ri);
    if (!k->nreds)
        buf_puts(&fin, "char unused_;\n");
    tset(d, "fin_fields", emit_str(c, &fin));

    for (int ph = 1; ph <= k->nphases; ph++) {
        TDict *P = tpush(d, "phases");
        tsetf(P, "phase", "%d", ph);
        uint8_t *need = emit_red_phase(o, &ac, "p->", ph, P);
        tset(P, "ptrs", pointers(c, o, need, false));
    }
    tlist(d, "phases");

    /* the epilogue: tensor outputs per element, reduced-shape ones once */
    int32_t roots[NNKC_MAX_PARAMS * 2];
    bool has_tensor = false;
    for (int i = 0; i < k->nouts; i++) {
        roots[i] = k->outs[i].node;
        has_tensor |= k->outs[i].tensor;
    }
    uint8_t *need = mark(k, roots, k->nouts);
    Buf pro = {0}, body = {0}, stores = {0};
    emit_levels(&ac, need, L_CONST, L_ROW, &pro);
    emit_levels(&ac, need, L_ELEM, L_ELEM, &body);
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
    tset(d, "epi_prologue", emit_str(c, &pro));
    tset(d, "epi_body", emit_str(c, &body));
    tset(d, "scalar_stores", emit_str(c, &stores));
    tset(d, "epi_ptrs", pointers(c, o, need, true));
    tbool(d, "has_tensor_outs", has_tensor);
}

void emit_opencl_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out)
{
    TDict *d = tdict_new(c->arena);
    emit_file_keys(c, d, opt);
    Buf names = {0};
    bool fp64 = false, uses_raw = false;
    for (int i = 0; i < instances->n; i++) {
        const Instance *in = instances->items[i];
        buf_printf(&names, "%s%s", i ? ", " : "", in->name);
        uses_raw |= ir_reads_plan(in->ir);
        EmitOperands o;
        emit_operands_init(&o, c, in);
        fp64 |= needs_fp64(&o);
        TDict *e = tpush(d, "instances");
        emit_instance_keys(&o, opt, e);
        tset(e, "kernel_params", kernel_params(c, &o));
        Buf rs = {0};
        emit_read_scalars(&o, "p->", NULL, &rs);
        tset(e, "read_scalars", emit_str(c, &rs));
        if (in->reduction)
            reduction(c, &o, e);
        else
            elementwise(c, &o, e);
    }
    tlist(d, "instances");
    tbool(d, "needs_fp64", fp64);
    tbool(d, "uses_raw", uses_raw);
    tset(d, "instance_list", names.data ? names.data : "(none)");
    buf_free(&names);
    template_render("opencl/file.tmpl", d, out);
}
