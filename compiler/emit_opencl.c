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

/* How the kernels address operands (emit.c's EmitDevAccess): a vector of
 * operand k is a private array e<k> (vload/vstore); raw views and index(d)
 * are the kernel's rp_ and rng_ (opencl/plan.h), the data through the
 * operand's g<k>. */
static const EmitDevTarget cl_target = {
    .vec = "e%d[j]",
    .plan = "rp_",
    .raw_args = "rp_, rng_",
    .raw_data = "g%d",
    .elem = {.qual = "NNK_INLINE"},
};

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
    /* the element function, called by every kernel's loop */
    uint8_t *need = emit_dev_elementwise(o, &cl_target, d);
    int vec = emit_vec_elems(o);
    Buf loads = {0}, stores = {0};
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
    tsetf(d, "vec", "%d", vec);
    tbool(d, "uses_idx", uses_op(k, need, IR_IDX) || uses_op(k, need, IR_DIMIDX));
    tset(d, "vec_loads", emit_str(c, &loads));
    tset(d, "vec_stores", emit_str(c, &stores));
    tset(d, "ptrs", pointers(c, o, need, true));
}

/* ---- reductions ------------------------------------------------------------------ */

static void reduction(Compiler *c, const EmitOperands *o, TDict *d)
{
    const IrKernel *k = o->k;
    EmitDevAccess m = {DEV_SLICE, &cl_target};
    EmitAccess ac = emit_dev_access(o, &m);
    tsetf(d, "nphases", "%d", k->nphases);
    tset(d, "flags", emit_has_arg(k) ? "1" : "0");
    emit_combine_keys(o, "p->", &ac, d);
    Buf args = {0};
    for (int op = 0; op < o->nops; op++)
        buf_printf(&args, ", a%d", op);
    if (ir_reads_plan(k))
        buf_puts(&args, ", rp_, rng_");
    tset(d, "kernel_args", emit_str(c, &args));

    emit_fin_fields(o, d);

    for (int ph = 1; ph <= k->nphases; ph++) {
        TDict *P = tpush(d, "phases");
        tsetf(P, "phase", "%d", ph);
        uint8_t *need = emit_red_phase(o, &ac, "p->", ph, P);
        tset(P, "ptrs", pointers(c, o, need, false));
    }
    tlist(d, "phases");

    /* the epilogue: tensor outputs per element, reduced-shape ones once */
    uint8_t *need = emit_dev_epilogue(o, &ac, d);
    tset(d, "epi_ptrs", pointers(c, o, need, true));
}

/* An instance's kernels; *user (bool) is set when it computes in f64. */
static void instance(const EmitOperands *o, TDict *e, void *user)
{
    *(bool *)user |= needs_fp64(o);
    tset(e, "kernel_params", kernel_params(o->c, o));
    Buf rs = {0};
    emit_read_scalars(o, "p->", NULL, &rs);
    tset(e, "read_scalars", emit_str(o->c, &rs));
    if (o->in->reduction)
        reduction(o->c, o, e);
    else
        elementwise(o->c, o, e);
}

void emit_opencl_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out)
{
    bool fp64 = false;
    TDict *d = emit_instances(c, instances, opt, instance, &fp64);
    tbool(d, "needs_fp64", fp64);
    template_render("opencl/file.tmpl", d, out);
}
