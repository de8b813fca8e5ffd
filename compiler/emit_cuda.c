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

/* How the kernels address operands (emit.c's EmitDevAccess): a vector of
 * operand k is a union l<k> of the vector word and its elements; raw views
 * and index(d) go through the kernel's nnk_cuda_rargs, whose head is p
 * (cuda/prelude.tmpl). */
static const EmitDevTarget cu_target = {
    .vec = "l%d.e[j]",
    .plan = "NNK_RP(p)",
    .elem = {.qual = "NNK_DEVICE"},
};

/* Typed pointers g<k> to every operand the code touches, but those that
 * `skip` marks (NULL: none; the row kept on chip holds them). */
static void pointers(const EmitOperands *o, const uint8_t *need, bool outputs, const uint8_t *skip, Buf *out)
{
    for (int op = 0; op < o->nops; op++) {
        bool used = o->output[op] ? outputs : emit_loads(o->k, need, op) && !(skip && skip[op]);
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
    /* the element function, called by every kernel's loop */
    uint8_t *need = emit_dev_elementwise(o, &cu_target, d);
    int vec = emit_vec_elems(o);
    Buf loads = {0}, stores = {0}, ptrs = {0};
    pointers(o, need, true, NULL, &ptrs);
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
    static const char *const itypes[2][2] = {{"c", "unsigned"}, {"c64", "unsigned long long"}};
    for (int t = 0; t < 2; t++) {
        TDict *e = tpush(d, "index_types");
        tset(e, "suffix", itypes[t][0]);
        tset(e, "itype", itypes[t][1]);
    }
    tsetf(d, "vec", "%d", vec);
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

/* The row kept on chip (NAME__rd_row): a thread keeps its
 * elements of the tensor inputs that more than one pass (the phases, the
 * epilogue) reads, ROW_SLOTS_MAX of them at most, in registers of at most
 * ROW_REG_BYTES (the unrolled loops index them by constants).  Fewer than
 * ROW_SLOTS_MIN slots would cover too short a row to be worth a kernel
 * (and the NNK_ILP groups need 8).  Marks them in `row`; returns the slots
 * a thread holds, 0 for no row kernels. */
enum { ROW_SLOTS_MAX = 16, ROW_SLOTS_MIN = 8, ROW_REG_BYTES = 128 };

static int row_operands(const EmitOperands *o, uint8_t *row)
{
    const IrKernel *k = o->k;
    int reads[NNKC_MAX_PARAMS * 2 + 2] = {0};
    int32_t *roots = nnkc_scratch(sizeof *roots * (size_t)(k->nreds + k->nouts + 1));
    /* the passes' nodes as emit_red_phase and emit_dev_epilogue mark them */
    for (int ph = 1; ph <= k->nphases + 1; ph++) {
        int n = 0;
        if (ph <= k->nphases) {
            for (int ri = 0; ri < k->nreds; ri++)
                if (k->reds[ri].phase == ph)
                    roots[n++] = k->reds[ri].arg;
        } else {
            for (int i = 0; i < k->nouts; i++)
                roots[n++] = k->outs[i].node;
        }
        uint8_t *need = emit_mark(k, roots, n);
        for (int op = 0; op < o->nops; op++)
            reads[op] += !o->output[op] && emit_loads(k, need, op);
    }
    int bytes = 0;
    for (int op = 0; op < o->nops; op++) {
        row[op] = reads[op] > 1;
        /* a register holds one element of 4 bytes or less */
        int b = type_info[o->storage[op]].bits / 8;
        bytes += row[op] ? (b < 4 ? 4 : b) : 0;
    }
    if (!bytes)
        return 0;
    int slots = ROW_SLOTS_MAX;
    while (slots >= ROW_SLOTS_MIN && slots * bytes > ROW_REG_BYTES)
        slots /= 2;
    return slots >= ROW_SLOTS_MIN ? slots : 0;
}

/* The row kernels' keys: the row's fields, its loads and pointers, in
 * registers (NAME__rd_row) and in shared memory (NAME__rd_srow); returns
 * the shared row's part of NAME__cu_sizes' flags. */
static int row_keys(Compiler *c, const EmitOperands *o, const uint8_t *row, int slots, TDict *d)
{
    Buf fields = {0}, loads = {0}, ptrs = {0};
    for (int op = 0; op < o->nops; op++) {
        if (!row[op])
            continue;
        /* f16/bf16 elements are kept widened to float (the passes read
         * them as they are: emit_dev_access's `cached`) */
        Type st = o->storage[op];
        bool wide = st == T_F16 || st == T_BF16;
        const char *t = stype(st);
        buf_printf(&fields, "%s c%d[%d];\n", wide ? "float" : t, op, slots);
        buf_printf(&ptrs, "const %s *__restrict__ g%d = (const %s *)p.data[%d];\n", t, op, t, op);
        buf_printf(&loads, "rc->c%d[j] = %sg%d[b[%d] + ro[%d]]%s;\n", op, !wide ? "" : st == T_F16 ? "nnk_h2f(" : "nnk_b2f(",
                   op, op, op, wide ? ")" : "");
    }
    /* the row in shared memory (NAME__rd_srow): an array of p.nreduced
     * elements an input, each at a 16-byte boundary, in operand order */
    Buf sptrs = {0}, scptrs = {0}, sloads = {0};
    int bytes = 0, inputs = 0;
    buf_puts(&sptrs, "size_t so_ = 0;\n");
    buf_puts(&scptrs, "size_t so_ = 0;\n");
    for (int op = 0; op < o->nops; op++) {
        if (!row[op])
            continue;
        Type st = o->storage[op];
        bool wide = st == T_F16 || st == T_BF16;
        const char *t = wide ? "float" : stype(st);
        int size = wide ? 4 : type_info[st].bits / 8;
        bytes += size;
        inputs++;
        for (int cst = 0; cst < 2; cst++)
            buf_printf(cst ? &scptrs : &sptrs,
                       "%s%s *__restrict__ sh%d = (%s%s *)(dsh + so_);\n"
                       "so_ += ((size_t)p.nreduced * %d + 15) & ~(size_t)15;\n",
                       cst ? "const " : "", t, op, cst ? "const " : "", t, size);
        buf_printf(&sloads, "sh%d[r] = %sg%d[b[%d] + r * p.strides[%d][p.ndim - 1]]%s;\n", op,
                   !wide ? "" : st == T_F16 ? "nnk_h2f(" : "nnk_b2f(", op, op, op, wide ? ")" : "");
    }
    buf_puts(&sptrs, "(void)so_;\n");
    buf_puts(&scptrs, "(void)so_;\n");
    tsetf(d, "srow_bytes", "%d", bytes);
    tset(d, "srow_ptrs", emit_str(c, &sptrs));
    tset(d, "srow_cptrs", emit_str(c, &scptrs));
    tset(d, "srow_loads", emit_str(c, &sloads));
    tsetf(d, "row_slots", "%d", slots);
    tset(d, "row_fields", emit_str(c, &fields));
    tset(d, "row_loads", emit_str(c, &loads));
    tset(d, "row_ptrs", emit_str(c, &ptrs));
    /* NAME__cu_sizes' flags: the bytes of an element of the shared row in
     * bits 16-23, its inputs in bits 24-27 */
    return bytes << 16 | inputs << 24;
}

/* Phase ph's pass reading the row kept on chip through ac, as keys
 * PFX_elem_body, PFX_step_code and PFX_ro of P (the row kernels' passes:
 * PFX "row", from registers; "srow", from shared memory). */
static void row_phase(Compiler *c, const EmitOperands *o, const EmitAccess *ac, int ph, const char *pfx, TDict *P)
{
    TDict *Q = tdict_new(c->arena);
    emit_red_phase(o, ac, "p.", ph, Q);
    const char *body = tget(Q, "elem_body"), *step = tget(Q, "step_code");
    tset(P, arena_printf(c->arena, "%s_elem_body", pfx), body);
    tset(P, arena_printf(c->arena, "%s_step_code", pfx), step);
    /* the offsets in the slice, for what is not on chip (other operands,
     * idx); NVVM warns of an array set and never read */
    tbool(P, arena_printf(c->arena, "%s_ro", pfx), strstr(body, "ro[") || strstr(step, "ro["));
}

static void reduction(Compiler *c, const EmitOperands *o, TDict *d)
{
    const IrKernel *k = o->k;
    tsetf(d, "nphases", "%d", k->nphases);
    uint8_t *row = nnkc_scratch((size_t)o->nops + 1);
    int slots = row_operands(o, row);
    tbool(d, "row", slots > 0);
    int sflags = slots ? row_keys(c, o, row, slots, d) : 0;
    /* NAME__cu_sizes' last entry: 1 = argmax/argmin, the row kernels' slots
     * a thread in bits 8-15 */
    tsetf(d, "cu_flags", "%d", (emit_has_arg(k) ? 1 : 0) | slots << 8 | sflags);
    EmitDevAccess cm = {DEV_SLICE, &cu_target};
    EmitDevRow rm = {{DEV_ROW, &cu_target}, row}, sm = {{DEV_SROW, &cu_target}, row};
    EmitAccess cac = emit_dev_access(o, &cm), rac = emit_dev_access(o, &rm.m), sac = emit_dev_access(o, &sm.m);
    emit_combine_keys(o, "p.", &cac, d);
    emit_fin_fields(o, d);

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
        pointers(o, need, false, NULL, &ptrs);
        if (slots) {
            /* the same pass reading the row from rc (NAME__racc) and from
             * shared memory (NAME__sacc) */
            row_phase(c, o, &rac, ph, "row", P);
            row_phase(c, o, &sac, ph, "srow", P);
            Buf rptrs = {0};
            pointers(o, need, false, row, &rptrs);
            tset(P, "row_phase_ptrs", rptrs.data ? emit_str(c, &rptrs) : "");
        }
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
    uint8_t *need = emit_dev_epilogue(o, &cac, d);
    Buf ptrs = {0};
    pointers(o, need, true, NULL, &ptrs);
    if (slots) {
        TDict *Q = tdict_new(c->arena);
        emit_dev_epilogue(o, &rac, Q);
        tset(d, "row_epi_body", tget(Q, "epi_body"));
        TDict *R = tdict_new(c->arena);
        emit_dev_epilogue(o, &sac, R);
        tset(d, "srow_epi_body", tget(R, "epi_body"));
        Buf rptrs = {0};
        pointers(o, need, true, row, &rptrs);
        tset(d, "row_epi_ptrs", emit_str(c, &rptrs));
    }
    bool epi_n = false;
    tset(d, "read_scalars", scalars_of(c, o, need, &epi_n, NULL));
    tbool(d, "epi_n", epi_n);
    tset(d, "ptrs", emit_str(c, &ptrs));
}

static void instance(const EmitOperands *o, TDict *e, void *user)
{
    (void)user;
    /* raw parameters and index(d): the kernels take nnk_cuda_rargs
     * (nnk/abi.h), every kernel of the instance the same */
    bool raw = ir_reads_plan(o->k);
    tbool(e, "cu_raw", raw);
    tset(e, "cu_param", raw ? "const nnk_cuda_rargs ra_" : "const nnk_cuda_args a");
    tset(e, "cu_head", raw ? "const nnk_cuda_args &a = ra_.a;\n    " : "");
    if (o->in->reduction)
        reduction(o->c, o, e);
    else
        elementwise(o->c, o, e);
}

void emit_cuda_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out)
{
    template_render("cuda/file.tmpl", emit_instances(c, instances, opt, instance, NULL), out);
}
