/* emit_c.c - the C back end: fills templates/c/ for every instance.
 *
 * The loops live in the templates; this file computes what goes into
 * them: signatures, prologues, and the per-element code of each loop
 * (emit.c), once per way of addressing operands (modes below).  See
 * docs/c-backend.md for the shape of the generated code and
 * docs/templates.md for the template language.
 *
 * Naming in generated code: tN is IR node N, sK scalar parameter K (in its
 * compute type), operand K (tensor parameters, then outputs) is pK in
 * elementwise loops and cK in reduction loops (dK its stride); idx is
 * "idx0 + i", "ib + i * is" or "ib + c * ics"; a reducer's lanes are aK_[]
 * (value) and xK_[] (index, argmax/argmin).  Names that come from the
 * source are only used for the public entry points' parameters.
 */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

/* How an element loop addresses its operands. */
typedef enum {
    M_EW_CONTIG,   /* elementwise, contiguous: pK[i], idx0 + i */
    M_EW_STRIDED,  /* elementwise, one strided dimension: pK[i * dK] */
    M_ROW_CONTIG,  /* reduction, a contiguous segment of a slice: cK[i] */
    M_ROW_STRIDED, /* reduction, a strided segment: cK[i * dK] */
    M_COL,         /* reduction, column order: row r, position c: cK[c] */
} Mode;

enum { MAXOPS = NNKC_MAX_PARAMS * 2 + 2 };

/* ---- what a piece of code needs ------------------------------------------------ */

typedef struct Need {
    uint8_t *in;                /* per node */
    bool idx, n, red;           /* reads idx, n, reducer results */
    bool plan;                  /* reads the plan (raw parameters, index(d)) */
    bool any_elem;              /* has per-element nodes */
    uint8_t loads[MAXOPS];      /* operands it loads */
    uint8_t scalars[MAXOPS];    /* scalar parameters it reads */
} Need;

/* Fills in what the nodes marked in nd->in read; node `stop` (when >= 0)
 * counts only as a per-element value, whatever it is. */
static void need_scan(const IrKernel *k, Need *nd, int stop)
{
    for (int i = 0; i < k->nnodes; i++) {
        if (!nd->in[i])
            continue;
        const IrNode *n = &k->nodes[i];
        if (i == stop) {
            nd->any_elem = true;
            continue;
        }
        switch ((IrOp)n->op) {
        case IR_IDX: nd->idx = true; break;
        case IR_DIMIDX: nd->idx = nd->plan = true; break;
        case IR_RAWIX: case IR_RAWLD: case IR_RAWSHAPE: nd->plan = true; break;
        case IR_N: nd->n = true; break;
        case IR_RED: nd->red = true; break;
        case IR_LOAD: nd->loads[n->aux] = 1; break;
        case IR_SCALAR: nd->scalars[n->aux] = 1; break;
        default: break;
        }
        if (n->level == L_ELEM)
            nd->any_elem = true;
    }
}

static Need need_of(const EmitOperands *g, const int32_t *roots, int nroots)
{
    const IrKernel *k = g->k;
    Need nd;
    memset(&nd, 0, sizeof nd);
    nd.in = nnkc_scratch((size_t)k->nnodes + 1);
    ir_mark(k, roots, nroots, L_CONST, nd.in);
    need_scan(k, &nd, -1);
    return nd;
}

/* need_of, not looking below node `stop` (its value comes from elsewhere;
 * it counts only as a per-element value, whatever it is) nor below the
 * nodes in `cut` (values the code takes from elsewhere: the column order's
 * cx->tN), which are not in it either.  stop -1, cut NULL: none. */
static Need need_cut(const EmitOperands *g, const int32_t *roots, int nroots, const uint8_t *cut, int stop)
{
    const IrKernel *k = g->k;
    Need nd;
    memset(&nd, 0, sizeof nd);
    nd.in = nnkc_scratch((size_t)k->nnodes + 1);
    for (int i = 0; i < nroots; i++)
        if (roots[i] >= 0)
            nd.in[roots[i]] = 1;
    for (int i = k->nnodes - 1; i >= 0; i--) {
        const IrNode *n = &k->nodes[i];
        if (!nd.in[i] || i == stop || n->op == IR_RED)
            continue;
        if (cut && cut[i]) {
            nd.in[i] = 0;
            continue;
        }
        int32_t ops[3] = {n->a, n->b, n->c};
        for (int j = 0; j < 3; j++)
            if (ops[j] >= 0)
                nd.in[ops[j]] = 1;
    }
    need_scan(k, &nd, stop);
    return nd;
}

/* Scratch is in the compilation's arena (nnkc_scratch): nothing to free,
 * and nothing leaks when an error bails out of the emitter. */
static void need_free(Need *nd)
{
    nd->in = NULL;
}

/* Whether a node of level `have` is on the boundary of level `lvl`: a
 * constant the folder left (exp(c64(3.0j)): complex functions are not
 * folded) is computed with the uniform values, outside the loops, and
 * taken like them. */
static bool at_level(const IrNode *n, int lvl)
{
    return n->op != IR_CONST && ((int)n->level == lvl || (lvl == L_UNIFORM && n->level == L_CONST));
}

/* Nodes of level `lvl` whose values the per-element code takes from outside
 * its loop: operands of per-element nodes, and roots of that level. */
static uint8_t *boundary(const EmitOperands *g, const Need *nd, const int32_t *roots, int nroots, int lvl)
{
    const IrKernel *k = g->k;
    uint8_t *b = nnkc_scratch((size_t)k->nnodes + 1);
    for (int i = 0; i < k->nnodes; i++) {
        const IrNode *n = &k->nodes[i];
        if (!nd->in[i] || n->level != L_ELEM || n->op == IR_RED)
            continue;
        int32_t ops[3] = {n->a, n->b, n->c};
        for (int j = 0; j < 3; j++)
            if (ops[j] >= 0 && nd->in[ops[j]] && at_level(&k->nodes[ops[j]], lvl))
                b[ops[j]] = 1;
    }
    for (int i = 0; i < nroots; i++)
        if (roots[i] >= 0 && at_level(&k->nodes[roots[i]], lvl))
            b[roots[i]] = 1;
    return b;
}

/* ---- access modes ------------------------------------------------------------------ */

static void operand_access(const EmitAccess *ac, int op, Buf *out)
{
    switch (*(const Mode *)ac->user) {
    case M_EW_CONTIG: buf_printf(out, "p%d[i]", op); break;
    case M_EW_STRIDED: buf_printf(out, "p%d[i * d%d]", op, op); break;
    case M_ROW_CONTIG: buf_printf(out, "c%d[i]", op); break;
    case M_ROW_STRIDED: buf_printf(out, "c%d[i * d%d]", op, op); break;
    case M_COL: buf_printf(out, "c%d[c]", op); break;
    }
}

static EmitAccess access_for(const EmitOperands *g, const Mode *m)
{
    EmitAccess ac = {.k = g->k, .operand = operand_access, .n = "n_red", .red_fmt = "f->r%d", .user = m};
    switch (*m) {
    case M_EW_CONTIG: ac.idx = "(idx0 + i)"; break;
    case M_EW_STRIDED: ac.idx = "(idx0 + i * idxs)"; break;
    case M_ROW_CONTIG: case M_ROW_STRIDED: ac.idx = "(ib + i * is)"; break;
    case M_COL: ac.idx = "(ib + c * ics)"; ac.red_fmt = "cx->r%d[c]"; break;
    }
    return ac;
}

/* ---- instance data -------------------------------------------------------------- */

static const char *dtype_enum(Type t)
{
    return type_info[t].abi;
}

/* A source name as a C parameter name (names.c). */
static const char *c_param(const EmitOperands *g, const char *name)
{
    return name_c_param(g->c->arena, name);
}

static void desc_params(const EmitOperands *g, TDict *d)
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
        if (p->inout)
            buf_puts(&f, " | NNK_PARAM_INOUT");
        if (!out && p->raw)
            buf_puts(&f, " | NNK_PARAM_RAW");
        if (p->has_default)
            buf_puts(&f, " | NNK_PARAM_DEFAULT");
        tset(e, "pflags", f.data);
        buf_free(&f);
        Buf v = {0};
        if (p->has_default) {
            Value dv = value_cast(p->dflt, p->type);
            const char *m = emit_scalar_member(p->type);
            if (p->type == T_F16 || p->type == T_BF16) {
                buf_printf(&v, ".u16 = 0x%04x", p->type == T_F16 ? nnkc_f64_to_f16(dv.v.f) : nnkc_f64_to_bf16(dv.v.f));
            } else if (type_is_complex(p->type)) {
                Type pt = type_part(p->type);
                buf_printf(&v, ".%s = {", m);
                emit_literal(value_float(pt, dv.v.f), pt, &v);
                buf_puts(&v, ", ");
                emit_literal(value_float(pt, dv.im), pt, &v);
                buf_puts(&v, "}");
            } else {
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
    tsetf(d, "nparams", "%d", g->in->nparams);
    tsetf(d, "nouts", "%d", g->in->nouts);
    tset(d, "kernel", g->in->kernel->name);
}

/* ---- elementwise -------------------------------------------------------------- */

/* s with every `from` replaced by `to`, into out. */
static void replace_all(const char *s, const char *from, const char *to, Buf *out)
{
    size_t n = strlen(from);
    for (const char *p; (p = strstr(s, from)); s = p + n) {
        buf_put(out, s, (size_t)(p - s));
        buf_puts(out, to);
    }
    buf_puts(out, s);
}

/* The f32 helpers with a fast form valid in a range (vmath.h): the
 * contiguous loop calls the fast form, which ORs a flag for arguments out
 * of range into rng_, and recomputes the block with the exact form when it
 * is set.  Outputs go to a block buffer first, so that an output which is
 * also an input still reads the input then. */
static const char *const ranged_helpers[] = {"nnk_sin_f32(", "nnk_cos_f32("};

static bool uses_ranged(const char *body)
{
    for (size_t i = 0; i < sizeof ranged_helpers / sizeof *ranged_helpers; i++)
        if (body && strstr(body, ranged_helpers[i]))
            return true;
    return false;
}

/* body with each ranged helper's call turned into its fast form's:
 * "nnk_sin_f32(" into "nnk_sin_f32r(RNG, ". */
static void ranged_fast(const char *body, const char *rng, Buf *out)
{
    Buf cur = {0};
    buf_puts(&cur, body ? body : "");
    for (size_t i = 0; i < sizeof ranged_helpers / sizeof *ranged_helpers; i++) {
        const char *h = ranged_helpers[i];
        Buf to = {0}, next = {0};
        buf_put(&to, h, strlen(h) - 1); /* nnk_sin_f32 */
        buf_printf(&to, "r(%s, ", rng); /* nnk_sin_f32r(rng_, x) */
        replace_all(cur.data, h, to.data, &next);
        buf_free(&cur);
        buf_free(&to);
        cur = next;
    }
    buf_puts(out, cur.data ? cur.data : "");
    buf_free(&cur);
}

/* plan.h's overlap tests: the element size of each operand, 0 for one the
 * code does not touch. */
static const char *op_sizes(const EmitOperands *g, const bool *touched)
{
    Buf b = {0};
    for (int op = 0; op < g->nops; op++) {
        if (touched[op])
            buf_printf(&b, "%ssizeof(%s)", op ? ", " : "", stype(g->storage[op]));
        else
            buf_puts(&b, op ? ", 0" : "0");
    }
    if (!g->nops)
        buf_puts(&b, "0");
    return emit_str(g->c, &b);
}

/* A parameter list without its NNK_RESTRICT qualifiers. */
static const char *strip_restrict(const EmitOperands *g, const char *params)
{
    Buf plain = {0};
    for (const char *q = params; q && *q;) {
        const char *m = strstr(q, "*NNK_RESTRICT ");
        if (!m) {
            buf_puts(&plain, q);
            break;
        }
        buf_put(&plain, q, (size_t)(m - q) + 1);
        q = m + strlen("*NNK_RESTRICT ");
    }
    return emit_str(g->c, &plain);
}

/* An item of a list of operands the loops address through pointers
 * (row_ops, bcast_ops, segs, crows, epi_ops): k, its storage type st, cst ("const " for an
 * input). */
static void seg_item(const EmitOperands *g, TDict *e, int op)
{
    tsetf(e, "k", "%d", op);
    tset(e, "st", stype(g->storage[op]));
    tset(e, "cst", g->output[op] ? "" : "const ");
}

/* The C back end's element functions: always inlined (c/prelude.tmpl). */
static const EmitElemTarget c_elem = {"NNK_INLINE", "const nnk_plan *p"};

/* The elementwise loops' bodies: contiguous, strided, and the fast and
 * exact forms of a block with ranged helpers, each a call of the element
 * function NAME__elem (NAME__elemr: its fast form) and the stores. */
static void ew_bodies(const EmitOperands *g, TDict *d, const Need *nd)
{
    const IrKernel *k = g->k;
    Mode mc = M_EW_CONTIG, ms = M_EW_STRIDED;
    EmitAccess ac = access_for(g, &mc), as = access_for(g, &ms);
    int32_t roots[MAXOPS];
    for (int i = 0; i < k->nouts; i++)
        roots[i] = k->outs[i].node;
    Buf fns = {0}, uni = {0}, cb = {0}, sb = {0}, rb = {0}, fb = {0}, rdecl = {0}, rstore = {0};
    EmitElem e;
    emit_elem_fn(g, &c_elem, arena_printf(g->c->arena, "%s__elem", g->in->name), "", roots, k->nouts, NULL, &e, &fns);
    bool ranged = uses_ranged(fns.data);
    EmitElem er;
    if (ranged) {
        Buf exact = {0};
        emit_elem_fn(g, &c_elem, arena_printf(g->c->arena, "%s__elemr", g->in->name), "uint32_t *rng_", roots,
                     k->nouts, NULL, &er, &exact);
        buf_puts(&fns, "\n/* The same with the fast forms of sin and cos, which set *rng_ for an\n"
                       " * argument out of their range. */\n");
        ranged_fast(exact.data, "rng_", &fns);
        buf_free(&exact);
    }
    emit_levels(&ac, nd->in, L_CONST, L_ROW, &uni);
    emit_elem_call(g, &e, &ac, "", &cb);
    emit_elem_call(g, &e, &as, "", &sb);
    emit_elem_call(g, &e, &ac, "", &rb);
    if (ranged)
        emit_elem_call(g, &er, &ac, "&rng_", &fb);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *o = &k->outs[i];
        int op = k->nloads + i;
        Buf v = {0}, st = {0};
        emit_ref(&ac, o->node, &v);
        emit_store(o->type, o->storage, v.data, &st);
        buf_printf(&cb, "p%d[i] = %s;\n", op, st.data);
        buf_printf(&rb, "o%d_[j] = %s;\n", op, st.data);
        buf_printf(&fb, "o%d_[j] = %s;\n", op, st.data);
        buf_printf(&rdecl, "%s o%d_[NNK_BLOCK];\n", stype(o->storage), op);
        buf_printf(&rstore, "p%d[b + j] = o%d_[j];\n", op, op);
        buf_printf(&sb, "p%d[i * d%d] = %s;\n", op, op, st.data);
        buf_free(&v);
        buf_free(&st);
    }
    tset(d, "elem_fns", emit_str(g->c, &fns));
    tset(d, "uniform_code", emit_str(g->c, &uni));
    tset(d, "contig_body", emit_str(g->c, &cb));
    tset(d, "strided_body", emit_str(g->c, &sb));
    tbool(d, "ranged", ranged);
    if (ranged) {
        tset(d, "ranged_decls", emit_str(g->c, &rdecl));
        tset(d, "ranged_fast_body", emit_str(g->c, &fb));
        tset(d, "ranged_exact_body", emit_str(g->c, &rb));
        tset(d, "ranged_stores", emit_str(g->c, &rstore));
    } else {
        buf_free(&rb);
        buf_free(&fb);
        buf_free(&rdecl);
        buf_free(&rstore);
    }
}

/* The loops' parameter and argument lists (idx, the scalars and operands
 * they use) and the operands of the row loop (row_ops, bcast_ops). */
static void ew_lists(const EmitOperands *g, TDict *d, const Need *nd, const bool *used)
{
    /* parameter and argument lists: idx, used scalars, used operands */
    Buf cp = {0}, spp = {0}, apiargs = {0}, zero = {0}, rca = {0}, rsa = {0}, ctest = {0}, btest = {0}, bargs = {0},
        zla = {0}, pf = {0};
    if (nd->plan) { /* raw parameters and index(d) read the plan itself */
        buf_puts(&cp, ", const nnk_plan *p");
        buf_puts(&spp, ", const nnk_plan *p");
        buf_puts(&zero, ", p");
        buf_puts(&zla, ", p");
        buf_puts(&rca, ", p");
        buf_puts(&rsa, ", p");
        buf_puts(&bargs, ", p");
    }
    if (nd->idx) {
        buf_puts(&cp, ", int64_t idx0");
        buf_puts(&spp, ", int64_t idx0, int64_t idxs");
        buf_puts(&apiargs, ", 0");
        buf_puts(&zero, ", 0");
        buf_puts(&zla, ", 0, 0");
        buf_printf(&rca, ", it.off[%d]", g->nops);
        buf_printf(&rsa, ", it.off[%d], p->strides[%d][last]", g->nops, g->nops);
        buf_printf(&bargs, ", it.off[%d] + o", g->nops);
        buf_printf(&ctest, "p->strides[%d][last] == 1", g->nops);
        buf_printf(&btest, "p->strides[%d][last] == 1", g->nops);
    }
    for (int s = 0; s < g->nscalars; s++) {
        if (!nd->scalars[s])
            continue;
        buf_printf(&cp, ", %s s%d", ctype(g->scalar_type[s]), s);
        buf_printf(&spp, ", %s s%d", ctype(g->scalar_type[s]), s);
        buf_puts(&apiargs, ", ");
        emit_load(g->scalar_type[s], g->scalar_type[s], c_param(g, g->scalar_name[s]), &apiargs);
        buf_printf(&zero, ", s%d", s);
        buf_printf(&zla, ", s%d", s);
        buf_printf(&rca, ", s%d", s);
        buf_printf(&rsa, ", s%d", s);
        buf_printf(&bargs, ", s%d", s);
    }
    Buf rs = {0};
    emit_read_scalars(g, "p->", nd->scalars, &rs);
    tset(d, "run_scalars", emit_str(g->c, &rs));
    bool has_bcast = false;
    for (int op = 0; op < g->nops; op++) {
        if (!used[op])
            continue;
        bool out = g->output[op];
        const char *cst = out ? "" : "const ";
        const char *st = stype(g->storage[op]);
        buf_printf(&cp, ", %s%s *NNK_RESTRICT p%d", cst, st, op);
        if (!out)
            buf_printf(&pf, "%sNNK_PF_(p%d + b, NNK_BLOCK);", pf.len ? "\n        " : "", op);
        buf_printf(&spp, ", %s%s *p%d, int64_t d%d", cst, st, op, op);
        buf_printf(&apiargs, ", %s", c_param(g, g->name[op]));
        buf_printf(&zero, ", (%s%s *)p->data[%d]", cst, st, op);
        buf_printf(&zla, ", (%s%s *)p->data[%d], 0", cst, st, op);
        seg_item(g, tpush(d, "row_ops"), op);
        buf_printf(&rca, ", q%d", op);
        buf_printf(&rsa, ", q%d, p->strides[%d][last]", op, op);
        buf_printf(&ctest, "%sp->strides[%d][last] == 1", ctest.len ? " && " : "", op);
        if (out) {
            buf_printf(&btest, "%sp->strides[%d][last] == 1", btest.len ? " && " : "", op);
            buf_printf(&bargs, ", q%d + o", op);
        } else {
            seg_item(g, tpush(d, "bcast_ops"), op);
            has_bcast = true;
            buf_printf(&btest, "%s(uint64_t)p->strides[%d][last] <= 1", btest.len ? " && " : "", op);
            buf_printf(&bargs, ", a%d", op);
        }
    }
    tset(d, "strided_params", emit_str(g->c, &spp));
    tset(d, "api_args", emit_str(g->c, &apiargs));
    tset(d, "zero_args", emit_str(g->c, &zero));
    tset(d, "zero_strided_args", emit_str(g->c, &zla));
    tlist(d, "row_ops");
    tset(d, "row_contig_args", emit_str(g->c, &rca));
    tset(d, "row_strided_args", emit_str(g->c, &rsa));
    tset(d, "contig_test", emit_str(g->c, &ctest));
    tset(d, "bcast_test", emit_str(g->c, &btest));
    tlist(d, "bcast_ops");
    tset(d, "bcast_args", emit_str(g->c, &bargs));
    tbool(d, "has_bcast", has_bcast);
    tset(d, "contig_params", emit_str(g->c, &cp));
    tset(d, "contig_prefetch", emit_str(g->c, &pf));
}

/* The contiguous entry point: its unused parameters, its in-place path
 * through NAME_strided, and whether outputs may meet inputs. */
static void ew_entry(const EmitOperands *g, TDict *d, const Need *nd, const bool *used)
{
    /* the contiguous entry point names every parameter; mark the unused */
    Buf unused = {0};
    for (int i = 0, t = 0, sc = 0; i < g->in->nparams; i++) {
        const InstParam *ip = &g->in->params[i];
        bool u = ip->tensor ? nd->loads[t++] : nd->scalars[sc++];
        if (!u)
            buf_printf(&unused, "(void)%s;\n", c_param(g, ip->name));
    }
    tset(d, "api_unused", emit_str(g->c, &unused));
    {
        /* the contiguous entry point in place: one-dimensional views of
         * every tensor for NAME_strided, in declaration order */
        Buf views = {0}, args = {0};
        int vi = 0;
        for (int i = 0; i < g->in->nparams; i++) {
            const InstParam *ip = &g->in->params[i];
            if (ip->tensor) {
                buf_printf(&views, "const nnk_view v%d_ = {(void *)%s, 1, shape_, strides_};\n", vi,
                           c_param(g, ip->name));
                buf_printf(&args, "%s&v%d_", args.len ? ", " : "", vi++);
            } else {
                buf_printf(&args, "%s%s", args.len ? ", " : "", c_param(g, ip->name));
            }
        }
        for (int i = 0; i < g->in->nouts; i++) {
            if (g->in->outs[i].inout) /* NAME_strided takes the parameter's view for it */
                continue;
            buf_printf(&views, "const nnk_view v%d_ = {(void *)%s, 1, shape_, strides_};\n", vi,
                       c_param(g, g->in->outs[i].name));
            buf_printf(&args, "%s&v%d_", args.len ? ", " : "", vi++);
        }
        tset(d, "api_inplace_views", emit_str(g->c, &views));
        tset(d, "api_inplace_args", emit_str(g->c, &args));
    }
    {
        /* the contiguous entry point: whether an output's n elements meet
         * an input's */
        Buf ap = {0};
        for (int o = g->k->nloads; o < g->nops; o++) {
            for (int op = 0; op < g->k->nloads; op++) {
                if (!used[op])
                    continue;
                buf_printf(&ap, "%snnk_meet_(%s, n * (int64_t)sizeof(%s), %s, n * (int64_t)sizeof(%s))",
                           ap.len ? " ||\n        " : "", c_param(g, g->name[o]), stype(g->storage[o]),
                           c_param(g, g->name[op]), stype(g->storage[op]));
            }
        }
        tset(d, "api_overlap", ap.len ? emit_str(g->c, &ap) : "0");
        /* an inout parameter is its own output: never the restrict loops;
         * index(d) reads the plan: through NAME_strided too */
        bool inout = nd->plan;
        for (int i = 0; i < g->in->nouts; i++)
            inout |= g->in->outs[i].inout;
        tbool(d, "api_inout", inout);
    }
}

/* Whether the kernel's loops get NNK_WIDE_ (prelude: 512-bit vectors where
 * the compiler targets AVX-512 and would prefer 256): those that call the
 * f32 vector math (vmath.h: its polynomials run twice as many lanes per
 * instruction) or hold argmax/argmin lanes (32 values and 32 i64 indices
 * a group: half the compares and blends).  Loops that only stream memory
 * or add up lanes were measured slower with 512-bit vectors (layer norm,
 * variance, int32 a*b+c), so they keep the compiler's choice.  The bits do
 * not depend on the vector width (docs/c-backend.md, "Vector width"). */
static bool wide_loops(const IrKernel *k)
{
    for (int r = 0; r < k->nreds; r++)
        if (red_is_arg(&k->reds[r]))
            return true;
    for (int i = 0; i < k->nnodes; i++) {
        const IrNode *n = &k->nodes[i];
        if (n->op != IR_CALL || type_compute((Type)n->type) != T_F32)
            continue;
        switch ((Builtin)n->sub) {
        case B_EXP: case B_EXPM1: case B_LOG: case B_LOG1P: case B_SIN: case B_COS: case B_TANH: case B_SIGMOID:
            return true;
        default: break;
        }
    }
    return false;
}

static void elementwise(const EmitOperands *g, TDict *d)
{
    const IrKernel *k = g->k;
    tset(d, "wide", wide_loops(k) ? "NNK_WIDE_ " : "");
    int32_t roots[MAXOPS];
    for (int i = 0; i < k->nouts; i++)
        roots[i] = k->outs[i].node;
    Need nd = need_of(g, roots, k->nouts);
    bool used[MAXOPS];
    for (int op = 0; op < g->nops; op++)
        used[op] = g->output[op] || nd.loads[op];
    ew_bodies(g, d, &nd);
    ew_lists(g, d, &nd, used);
    ew_entry(g, d, &nd, used);
    tset(d, "op_sizes", op_sizes(g, used));
}

/* ---- reductions ------------------------------------------------------------------ */

static bool is_arg(const IrReducer *r) { return red_is_arg(r); }

/* The name of reduce()'s combine function of reducer ri. */
static const char *comb_name(const EmitOperands *g, int ri)
{
    return arena_printf(g->c->arena, "%s__comb%d", g->in->name, ri);
}

/* The identity of reducer r as an expression of its accumulator type. */
static const char *acc_ident(const EmitOperands *g, const IrReducer *r)
{
    Buf s = {0};
    if (r->kind == R_CUSTOM) {
        /* the identity node: a constant, or computed in the init prologue */
        Mode m = M_ROW_CONTIG;
        EmitAccess ac = access_for(g, &m);
        emit_ref(&ac, r->ident, &s);
    } else {
        emit_red_identity(r, &s);
    }
    return emit_str(g->c, &s);
}

/* Prologue of a reduction function: scalars, n, and the nodes of level
 * lo..hi among `nd` (with the row access: reducer values from f->). */
static void prologue(const EmitOperands *g, const Need *nd, int hi, bool uses_f, Buf *out)
{
    emit_read_scalars(g, "p->", nd->scalars, out);
    if (nd->n)
        buf_puts(out, "const int64_t n_red = p->nreduced;\n");
    if (!uses_f)
        buf_puts(out, "(void)f;\n");
    Mode m = M_ROW_CONTIG;
    EmitAccess ac = access_for(g, &m);
    emit_levels(&ac, nd->in, L_CONST, hi, out);
}

/* The per-element code of a reduction loop: the call of the element
 * function. */
static void elem_code(const EmitOperands *g, const EmitElem *e, Mode mode, Buf *out)
{
    EmitAccess ac = access_for(g, &mode);
    emit_elem_call(g, e, &ac, "", out);
}

/* Stores of the tensor outputs for the element loop of `mode`. */
static void tensor_stores(const EmitOperands *g, Mode mode, Buf *out)
{
    const IrKernel *k = g->k;
    EmitAccess ac = access_for(g, &mode);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *o = &k->outs[i];
        if (!o->tensor)
            continue;
        int op = k->nloads + i;
        Buf v = {0};
        emit_ref(&ac, o->node, &v);
        if (mode == M_ROW_STRIDED)
            buf_printf(out, "c%d[i * d%d] = ", op, op);
        else
            buf_printf(out, "c%d[%s] = ", op, mode == M_COL ? "c" : "i");
        emit_store(o->type, o->storage, v.data, out);
        buf_puts(out, ";\n");
        buf_free(&v);
    }
}

/* For the column order: the per-position values (row level) the element
 * code takes from outside its loop live in arrays cx->tN; `loads` gets the
 * lines reading them back as tN (from the hoisted pointers tN_). */
static void col_boundary_loads(const EmitOperands *g, const uint8_t *bnd, Buf *hoist, Buf *loads)
{
    for (int i = 0; i < g->k->nnodes; i++) {
        if (!bnd[i])
            continue;
        const char *T = ctype((Type)g->k->nodes[i].type);
        if (hoist)
            buf_printf(hoist, "const %s *const t%d_ = cx->t%d;\n", T, i, i);
        buf_printf(loads, "const %s t%d = t%d_[c];\n", T, i, i);
    }
}

/* For the column order: the code computing what `roots` need outside the
 * element loops -- scalars, n, uniform values -- and then, per position c,
 * the row-level values, stored into cx->tN[c] for the nodes in `bnd`. */
static void col_prep(const EmitOperands *g, const int32_t *roots, int nroots, const uint8_t *bnd, Buf *out)
{
    const IrKernel *k = g->k;
    Need sub = need_of(g, roots, nroots);
    Mode m = M_COL;
    EmitAccess ac = access_for(g, &m);
    bool uses_p = sub.n;
    for (int s = 0; s < g->nscalars; s++)
        uses_p |= sub.scalars[s];
    if (!uses_p)
        buf_puts(out, "(void)p;\n");
    emit_read_scalars(g, "p->", sub.scalars, out);
    if (sub.n)
        buf_puts(out, "const int64_t n_red = p->nreduced;\n");
    emit_levels(&ac, sub.in, L_CONST, L_UNIFORM, out);
    bool any = false;
    for (int i = 0; i < k->nnodes; i++)
        any |= bnd[i] != 0;
    if (any) {
        Buf rows = {0};
        emit_levels(&ac, sub.in, L_ROW, L_ROW, &rows);
        for (int i = 0; i < k->nnodes; i++)
            if (bnd[i])
                buf_printf(&rows, "cx->t%d[c] = t%d;\n", i, i);
        buf_puts(out, "for (int64_t c = 0; c < T; c++) {\n");
        emit_indent(out, rows.data, 4);
        buf_puts(out, "}\n");
        buf_free(&rows);
    }
    need_free(&sub);
}

/* The nodes set in `set`, as a list of roots. */
static int set_roots(const EmitOperands *g, const uint8_t *set, int32_t *roots, int max)
{
    int n = 0;
    for (int i = 0; i < g->k->nnodes && n < max; i++)
        if (set[i])
            roots[n++] = i;
    return n;
}

/* "float *s_a0 = (float *)s; int64_t *s_x0 = ..." for phase ph's fields in
 * a column level at `base` (T of each, 8-byte aligned). */
static void col_fields(const EmitOperands *g, int ph, const char *base, const char *cst, Buf *out)
{
    const IrKernel *k = g->k;
    Buf off = {0};
    buf_puts(&off, "0");
    for (int ri = 0; ri < k->nreds; ri++) {
        const IrReducer *r = &k->reds[ri];
        if (r->phase != ph)
            continue;
        const char *A = ctype(r->acc_type);
        buf_printf(out, "%s%s *%s_a%d = (%s%s *)(%s + %s);\n", cst, A, base, ri, cst, A, base, off.data);
        buf_printf(&off, " + NNK_A8(T * (int64_t)sizeof(%s))", A);
        if (is_arg(r)) {
            buf_printf(out, "%sint64_t *%s_x%d = (%sint64_t *)(%s + %s);\n", cst, base, ri, cst, base, off.data);
            buf_puts(&off, " + NNK_A8(T * (int64_t)sizeof(int64_t))");
        }
    }
    buf_free(&off);
}

/* An element value the last phase computes and a tensor output of the
 * epilogue needs again (softmax's exp(x - m)): when the output can hold it
 * exactly (its storage, logical and compute types are the value's), the
 * last phase stores it there and the epilogue reads it back instead of
 * computing it twice.  Only when the epilogue then reads no input, so an
 * output that is also an input (in place) still works. */
typedef struct Cache {
    int node; /* -1: none */
    int op;   /* the output operand */
} Cache;

static Cache find_cache(const EmitOperands *g)
{
    const IrKernel *k = g->k;
    Cache c = {-1, -1};
    if (k->nphases < 1)
        return c;
    /* every reducer's argument: a phase may have any number of reducers */
    int32_t *roots = nnkc_scratch(sizeof *roots * (size_t)(k->nreds + 1)), troots[MAXOPS];
    int nroots = 0, nt = 0;
    for (int ri = 0; ri < k->nreds; ri++)
        if (k->reds[ri].phase == k->nphases)
            roots[nroots++] = k->reds[ri].arg;
    for (int i = 0; i < k->nouts; i++)
        if (k->outs[i].tensor)
            troots[nt++] = k->outs[i].node;
    if (!nt)
        return c;
    Need np = need_of(g, roots, nroots), tn = need_of(g, troots, nt);
    for (int i = k->nnodes - 1; i >= 0 && c.node < 0; i--) {
        const IrNode *n = &k->nodes[i];
        if (!np.in[i] || !tn.in[i] || n->level != L_ELEM || n->op == IR_LOAD || n->op == IR_CONST)
            continue;
        Type t = (Type)n->type;
        if (type_compute(t) != t)
            continue;
        for (int o = 0; o < k->nouts; o++) {
            const IrOutput *out = &k->outs[o];
            if (!out->tensor || out->type != t || out->storage != t)
                continue;
            Need sub = need_cut(g, troots, nt, NULL, i);
            bool reads = false;
            for (int op = 0; op < k->nloads; op++)
                reads |= sub.loads[op] != 0;
            need_free(&sub);
            if (!reads) {
                c.node = i;
                c.op = k->nloads + o;
            }
            break;
        }
    }
    need_free(&np);
    need_free(&tn);
    return c;
}

/* The per-element code of a loop of `mode`: the cached value (if the
 * element function takes it) read from its output, then the call. */
static void elem_code_c(const EmitOperands *g, const EmitElem *e, Mode mode, Cache cache, Buf *out)
{
    EmitAccess ac = access_for(g, &mode);
    if (cache.node >= 0 && e->arg[cache.node]) {
        Type t = (Type)g->k->nodes[cache.node].type;
        Buf a = {0};
        operand_access(&ac, cache.op, &a);
        buf_printf(out, "const %s t%d = ", ctype(t), cache.node);
        emit_load(g->storage[cache.op], t, a.data, out);
        buf_puts(out, "; /* stored by the last phase */\n");
        buf_free(&a);
    }
    emit_elem_call(g, e, &ac, "", out);
}

/* A lane or field name of reducer ri ("a%d_[j]"), in the arena. */
static const char *lane_name(const EmitOperands *g, const char *fmt, int ri)
{
    return arena_printf(g->c->arena, fmt, ri);
}

/* dst = a combined with b, for reducer ri, every name a format of ri. */
static const char *red_combine(const EmitOperands *g, int ri, const char *d, const char *a, const char *b,
                               const char *dx, const char *ax, const char *bx)
{
    const IrReducer *r = &g->k->reds[ri];
    Buf out = {0};
    if (r->width > 1) {
        /* a tuple state combines all its values at its first reducer */
        if (ri == r->head)
            emit_red_tuple(g->k, ri, arena_printf(g->c->arena, "%s__comb", g->in->name), d, a, b, NULL, &out);
    } else {
        emit_red_combine(r, comb_name(g, ri), lane_name(g, d, ri), lane_name(g, a, ri), lane_name(g, b, ri),
                         lane_name(g, dx, ri), lane_name(g, ax, ri), lane_name(g, bx, ri), &out);
    }
    return emit_str(g->c, &out);
}

/* One item of a phase's list `reds` (templates/c/reduction.tmpl): reducer
 * ri's accumulator type, identity, and its combines for each place the
 * template merges two partial results. */
static void reducer_item(const EmitOperands *g, TDict *R, int ri)
{
    const IrReducer *r = &g->k->reds[ri];
    tsetf(R, "ri", "%d", ri);
    tset(R, "A", ctype(r->acc_type));
    tbool(R, "is_arg", is_arg(r));
    tset(R, "ident", acc_ident(g, r));
    tset(R, "merge", red_combine(g, ri, "a->a%d[j]", "a->a%d[j]", "b->a%d[j]", "a->x%d[j]", "a->x%d[j]", "b->x%d[j]"));
    tset(R, "carry", red_combine(g, ri, "a%d_[j]", "lv%d_[k][j]", "a%d_[j]", "x%d_[j]", "lvx%d_[k][j]", "x%d_[j]"));
    tset(R, "into", red_combine(g, ri, "s->a%d[j]", "s->a%d[j]", "a%d_[j]", "s->x%d[j]", "s->x%d[j]", "x%d_[j]"));
    tset(R, "cmerge", red_combine(g, ri, "a_a%d[c]", "a_a%d[c]", "b_a%d[c]", "a_x%d[c]", "a_x%d[c]", "b_x%d[c]"));
    tset(R, "pair", red_combine(g, ri, "a%d_[j]", "a%d_[j]", "a%d_[j + w]", "x%d_[j]", "x%d_[j]", "x%d_[j + w]"));
    Buf f = {0};
    emit_red_final(r, lane_name(g, "a%d_[0]", ri), lane_name(g, "x%d_[0]", ri), "n_red", &f);
    tset(R, "finish", emit_str(g->c, &f));
}

/* What the functions of one phase share: its reducers' arguments (roots)
 * and reduce() identities (iroots), and their element updates. */
typedef struct Phase {
    int ph;
    Cache cache;       /* the last phase stores a value the epilogue needs */
    int32_t *roots, *iroots;
    int nroots, niroots;
    bool custom, mean, has_arg;
    Buf upd, cupd;     /* row order and column order updates of the lanes */
    Need nd, ind;      /* what the arguments and the identities read */
    EmitElem e;        /* the element function: the arguments (and the cached value) */
} Phase;

/* The step of a lane (row order) or of a column leaf's position: their
 * elements come in index order, so argmax/argmin take the prelude's
 * nnk_argmax_next_T, which leaves out the tie terms and vectorizes. */
static void lane_step(const IrReducer *r, const char *comb, const char *acc, const char *v, const char *idxv,
                      const char *idx, Buf *out)
{
    if (!is_arg(r)) {
        emit_red_step(r, comb, acc, v, idxv, idx, out);
        return;
    }
    buf_printf(out, "nnk_%s_next_%s(&%s, &%s, %s, %s);\n", r->kind == R_ARGMAX ? "argmax" : "argmin",
               type_suffix(r->acc_type), acc, idxv, v, idx);
}

/* The phase's reducers: list `reds`, init and final, the element updates. */
static void phase_reducers(const EmitOperands *g, TDict *P, Phase *f, int *lane_bytes)
{
    const IrKernel *k = g->k;
    /* no cap: a reducer left out would have its value undeclared */
    f->roots = nnkc_scratch(sizeof *f->roots * (size_t)(k->nreds + 1));
    f->iroots = nnkc_scratch(sizeof *f->iroots * (size_t)(k->nreds + 1));
    Buf names = {0};
    *lane_bytes = 0;
    for (int ri = 0; ri < k->nreds; ri++) {
        const IrReducer *r = &k->reds[ri];
        if (r->phase != f->ph)
            continue;
        bool arg = is_arg(r);
        f->has_arg |= arg;
        f->custom |= r->kind == R_CUSTOM;
        f->mean |= r->kind == R_MEAN;
        f->roots[f->nroots++] = r->arg;
        if (r->kind == R_CUSTOM)
            f->iroots[f->niroots++] = r->ident;
        buf_printf(&names, "%s#%d %s", names.len ? ", " : "", ri, reducer_info[r->kind].name);
        *lane_bytes += arg ? 16 : 8;
        reducer_item(g, tpush(P, "reds"), ri);
        /* element updates: the argument converted to the accumulator type */
        Mode mr = M_ROW_CONTIG, mcol = M_COL;
        EmitAccess ar = access_for(g, &mr), acol = access_for(g, &mcol);
        Buf v = {0}, vc = {0}, vcol = {0}, vccol = {0};
        emit_ref(&ar, r->arg, &v);
        emit_convert((Type)k->nodes[r->arg].type, r->acc_type, v.data, &vc);
        emit_ref(&acol, r->arg, &vcol);
        emit_convert((Type)k->nodes[r->arg].type, r->acc_type, vcol.data, &vccol);
        if (r->width > 1) {
            /* a tuple state steps at its first reducer, with every value's element */
            if (ri == r->head) {
                const char *rows[NNKC_MAX_TUPLE], *cols[NNKC_MAX_TUPLE];
                for (int j = 0; j < r->width; j++) {
                    const IrReducer *m = &k->reds[ri + j];
                    Buf e = {0}, ec = {0};
                    emit_ref(&ar, m->arg, &e);
                    emit_convert((Type)k->nodes[m->arg].type, m->acc_type, e.data, &ec);
                    rows[j] = emit_str(g->c, &ec);
                    e.len = 0;
                    emit_ref(&acol, m->arg, &e);
                    emit_convert((Type)k->nodes[m->arg].type, m->acc_type, e.data, &ec);
                    cols[j] = emit_str(g->c, &ec);
                    buf_free(&e);
                }
                const char *tcomb = arena_printf(g->c->arena, "%s__comb", g->in->name);
                emit_red_tuple(k, ri, tcomb, "a%d_[j]", "a%d_[j]", NULL, rows, &f->upd);
                emit_red_tuple(k, ri, tcomb, "a%d[c]", "a%d[c]", NULL, cols, &f->cupd);
            }
        } else {
            lane_step(r, comb_name(g, ri), lane_name(g, "a%d_[j]", ri), vc.data, lane_name(g, "x%d_[j]", ri), "rb + i",
                      &f->upd);
            lane_step(r, comb_name(g, ri), lane_name(g, "a%d[c]", ri), vccol.data, lane_name(g, "x%d[c]", ri), "r",
                      &f->cupd);
        }
        Buf *tmp[] = {&v, &vc, &vcol, &vccol};
        for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
            buf_free(tmp[i]);
    }
    tlist(P, "reds");
    tset(P, "phase_reducers", emit_str(g->c, &names));
    tset(P, "final_prologue", f->mean ? "const int64_t n_red = p->nreduced;" : f->custom ? "" : "(void)p;");
    tset(P, "merge_prologue", f->custom ? "" : "(void)p;");

    /* init and merge prologues: the identities of reduce() */
    f->ind = need_of(g, f->iroots, f->niroots);
    Buf ipro = {0};
    bool uses_p = f->ind.n;
    for (int s = 0; s < g->nscalars; s++)
        uses_p |= f->ind.scalars[s];
    if (!uses_p)
        buf_puts(&ipro, "(void)p;\n");
    emit_read_scalars(g, "p->", f->ind.scalars, &ipro);
    if (f->ind.n) /* an identity may read n: reduce(x, f32(n), ...) */
        buf_puts(&ipro, "const int64_t n_red = p->nreduced;\n");
    Mode m = M_ROW_CONTIG;
    EmitAccess ac = access_for(g, &m);
    emit_levels(&ac, f->ind.in, L_CONST, L_UNIFORM, &ipro);
    tset(P, "init_prologue", emit_str(g->c, &ipro));
    f->nd = need_of(g, f->roots, f->nroots);
}

/* The row order (templates/c/reduction_row.tmpl, acc): the leaf prologue, the
 * segment pointers of the operands, the element code. */
static void phase_row(const EmitOperands *g, TDict *P, Phase *f)
{
    const IrKernel *k = g->k;
    const Need *nd = &f->nd, *ind = &f->ind;
    const Cache cache = f->cache;
    Buf pro = {0}, cbody = {0}, sbody = {0};
    prologue(g, nd, L_ROW, nd->red, &pro);
    {
        /* the identities of reduce() start every leaf */
        Mode m = M_ROW_CONTIG;
        EmitAccess ac = access_for(g, &m);
        uint8_t *done = nnkc_scratch((size_t)k->nnodes + 1);
        for (int i = 0; i < k->nnodes; i++)
            done[i] = nd->in[i] && k->nodes[i].level <= L_ROW;
        uint8_t sc[MAXOPS];
        for (int s = 0; s < g->nscalars; s++)
            sc[s] = ind->scalars[s] && !nd->scalars[s];
        emit_read_scalars(g, "p->", sc, &pro);
        if (ind->n && !nd->n)
            buf_puts(&pro, "const int64_t n_red = p->nreduced;\n");
        uint8_t *sel = nnkc_scratch((size_t)k->nnodes + 1);
        for (int i = 0; i < k->nnodes; i++)
            sel[i] = ind->in[i] && k->nodes[i].level <= L_UNIFORM;
        emit_nodes(&ac, sel, done, "", &pro);
    }
    /* the element loop's index i, unused when the arguments read no
     * tensor, no idx and no position (sum(1.5)) */
    bool uses_i = f->has_arg || nd->idx || cache.node >= 0;
    for (int op = 0; op < k->nloads; op++)
        uses_i |= nd->loads[op] != 0;
    if (!uses_i)
        buf_puts(&cbody, "(void)i;\n");
    elem_code(g, &f->e, M_ROW_CONTIG, &cbody);
    buf_puts(&cbody, f->upd.data ? f->upd.data : "");
    elem_code(g, &f->e, M_ROW_STRIDED, &sbody);
    buf_puts(&sbody, f->upd.data ? f->upd.data : "");
    bool any_seg = false;
    if (cache.node >= 0) {
        /* the value the epilogue needs again goes to its output now */
        int op = cache.op;
        const char *v = arena_printf(g->c->arena, "t%d", cache.node);
        Type t = (Type)k->nodes[cache.node].type;
        buf_printf(&cbody, "c%d[i] = ", op);
        emit_store(t, g->storage[op], v, &cbody);
        buf_puts(&cbody, "; /* read again by the epilogue */\n");
        buf_printf(&sbody, "c%d[i * d%d] = ", op, op);
        emit_store(t, g->storage[op], v, &sbody);
        buf_puts(&sbody, ";\n");
        seg_item(g, tpush(P, "segs"), op);
        any_seg = true;
    }
    /* segment bases bK; the element loops index cK from the segment's
     * start (head, tail, strided) or from the first whole group (main) */
    for (int op = 0; op < k->nloads; op++) {
        if (nd->loads[op]) {
            seg_item(g, tpush(P, "segs"), op);
            any_seg = true;
        }
    }
    tlist(P, "segs");
    tbool(P, "seg_idx", nd->idx);
    tbool(P, "seg_arg", f->has_arg);
    if (!any_seg && !nd->idx) /* a reducer of no tensor (sum(1.5)) reads no segment */
        buf_puts(&pro, "(void)ps;\n");
    tset(P, "leaf_prologue", emit_str(g->c, &pro));
    tset(P, "contig_body", emit_str(g->c, &cbody));
    tset(P, "strided_body", emit_str(g->c, &sbody));
}

/* The column order (templates/c/reduction_col.tmpl, cleaf and its callers). */
static void phase_col(const EmitOperands *g, TDict *P, Phase *f, uint8_t *col_rows)
{
    const IrKernel *k = g->k;
    const Need *nd = &f->nd;
    const Cache cache = f->cache;
    uint8_t *bnd = boundary(g, nd, f->roots, f->nroots, L_ROW);
    for (int i = 0; i < k->nnodes; i++)
        col_rows[i] |= bnd[i];
    Buf crows = {0}, cpro = {0}, choist = {0}, cload = {0}, colb = {0}, cfs_s = {0}, cfs_ab = {0}, cfs_cur = {0},
        cfs_res = {0};
    int32_t *br = nnkc_scratch(sizeof *br * (size_t)(k->nnodes + 1));
    int nb = set_roots(g, bnd, br, k->nnodes);
    if (nb)
        col_prep(g, br, nb, bnd, &crows);
    else
        buf_puts(&crows, "(void)p;\n(void)cx;\n(void)T;\n");
    /* the leaf's own scalars, n and uniform values: not those only the
     * row-level values it reads from cx need (unused variables) */
    Need leaf = need_cut(g, f->roots, f->nroots, bnd, -1);
    emit_read_scalars(g, "p->", leaf.scalars, &cpro);
    if (leaf.n)
        buf_puts(&cpro, "const int64_t n_red = p->nreduced;\n");
    Mode m = M_COL;
    EmitAccess ac = access_for(g, &m);
    emit_levels(&ac, leaf.in, L_CONST, L_UNIFORM, &cpro);
    need_free(&leaf);
    col_boundary_loads(g, bnd, &choist, &cload);
    if (!choist.len)
        buf_puts(&cpro, "(void)cx;\n");
    buf_puts(&cpro, choist.data ? choist.data : "");
    buf_free(&choist);
    buf_puts(&colb, cload.data ? cload.data : "");
    buf_free(&cload);
    elem_code(g, &f->e, M_COL, &colb);
    buf_puts(&colb, f->cupd.data ? f->cupd.data : "");
    bool any_row = false;
    for (int op = 0; op < k->nloads + g->in->nouts; op++) {
        bool out = op >= k->nloads;
        if (out ? cache.node < 0 || op != cache.op : !nd->loads[op])
            continue;
        if (out) {
            /* the value the epilogue needs again goes to its output now */
            Type t = (Type)k->nodes[cache.node].type;
            buf_printf(&colb, "c%d[c] = ", op);
            emit_store(t, g->storage[op], arena_printf(g->c->arena, "t%d", cache.node), &colb);
            buf_puts(&colb, "; /* read again by the epilogue */\n");
        }
        seg_item(g, tpush(P, "crows"), op);
        any_row = true;
    }
    tlist(P, "crows");
    tbool(P, "crow_none", !any_row && !nd->idx); /* a reducer of no tensor (sum(1.5)): nothing to read */
    col_fields(g, f->ph, "s", "", &cfs_s);
    col_fields(g, f->ph, "a", "", &cfs_ab);
    col_fields(g, f->ph, "b", "const ", &cfs_ab);
    col_fields(g, f->ph, "cur", "", &cfs_cur);
    col_fields(g, f->ph, "res", "const ", &cfs_res);
    tset(P, "cfields_s", emit_str(g->c, &cfs_s));
    tset(P, "cfields_ab", emit_str(g->c, &cfs_ab));
    tset(P, "cfields_cur", emit_str(g->c, &cfs_cur));
    tset(P, "cfields_res", emit_str(g->c, &cfs_res));
    tset(P, "crows_code", emit_str(g->c, &crows));
    tset(P, "cleaf_prologue", emit_str(g->c, &cpro));
    tset(P, "col_body", emit_str(g->c, &colb));
}

/* Emits the data of one phase (P) of a reduction: a row-order and a
 * column-order emitter over what the phase's reducers need. */
static void reduction_phase(const EmitOperands *g, TDict *P, int ph, Cache cache, uint8_t *red_loads, uint8_t *col_rows,
                            int *lane_bytes)
{
    Phase f = {.ph = ph, .cache = cache};
    phase_reducers(g, P, &f, lane_bytes);
    {
        /* the element function: the reducers' arguments and the value the
         * epilogue reads again */
        int32_t *roots = nnkc_scratch(sizeof *roots * (size_t)(f.nroots + 2));
        memcpy(roots, f.roots, sizeof *roots * (size_t)f.nroots);
        int nr = f.nroots;
        if (cache.node >= 0)
            roots[nr++] = cache.node;
        Buf fn = {0};
        emit_elem_fn(g, &c_elem, arena_printf(g->c->arena, "%s__elem%d", g->in->name, ph), "", roots, nr, NULL, &f.e,
                     &fn);
        tset(P, "elem_fn", emit_str(g->c, &fn));
    }
    for (int op = 0; op < g->k->nloads; op++)
        red_loads[op] |= f.nd.loads[op];
    phase_row(g, P, &f);
    phase_col(g, P, &f, col_rows);
    buf_free(&f.upd);
    buf_free(&f.cupd);
}

/* Items of list `key` for templates/c/blocked.tmpl: the loop SUFFIX over
 * COUNT elements IDX with `params`, and SUFFIX_a, the same without
 * restrict, for calls where an output shares memory with an input. */
static void blocked_fns(const EmitOperands *g, TDict *d, const char *key, const char *comment, const char *suffix,
                        const char *count, const char *idx, const char *params, const char *body)
{
    for (int alias = 0; alias < 2; alias++) {
        TDict *f = tpush(d, key);
        tset(f, "comment", alias ? "The same without restrict, for calls where an output shares memory with an input"
                                 : comment);
        tsetf(f, "suffix", "%s%s", suffix, alias ? "_a" : "");
        tset(f, "count", count);
        tset(f, "idx", idx);
        tset(f, "params", alias ? strip_restrict(g, params) : params);
        tset(f, "body", body);
    }
}

/* What the two epilogues share: the outputs (roots; troots the tensor
 * ones), what they need, and the values of the outer levels the tensor
 * outputs' element code takes (bu uniform, br row level). */
typedef struct Epi {
    int32_t roots[MAXOPS], troots[MAXOPS];
    int nr, nt;
    bool has_tensor;
    Cache cache;
    Need nd, tnd;
    uint8_t *bu, *br;
    EmitElem e; /* the tensor outputs' element function */
} Epi;

/* The parameters of the epilogues' row functions (epirow, cepirow) and
 * the arguments of their calls: the plan (raw reads, index(d)), idx's base and step, the values of the
 * outer levels (the column order's row-level ones from cx, through
 * pointers tN_ that `loads` reads per position), the operands. */
static void epi_params(const EmitOperands *g, const Epi *E, bool col, Buf *params, Buf *args, Buf *loads)
{
    const IrKernel *k = g->k;
    if (E->tnd.plan) { /* raw parameters and index(d) read the plan itself */
        buf_puts(params, ", const nnk_plan *p");
        buf_puts(args, ", p");
        /* (a uniform raw read comes in computed: then p is not used) */
        buf_puts(loads, "(void)p;\n");
    }
    if (E->tnd.idx) {
        buf_puts(params, col ? ", int64_t ib, int64_t ics" : ", int64_t ib, int64_t is");
        buf_puts(args, col ? ", ib, ics" : ", ib, is");
    }
    for (int i = 0; i < k->nnodes; i++) {
        const char *T = ctype((Type)k->nodes[i].type);
        if (E->bu[i] || (E->br[i] && !col)) {
            buf_printf(params, ", %s t%d", T, i);
            buf_printf(args, ", t%d", i);
        } else if (E->br[i]) {
            buf_printf(params, ", const %s *NNK_RESTRICT t%d_", T, i);
            buf_printf(args, ", cx->t%d", i);
            buf_printf(loads, "const %s t%d = t%d_[c];\n", T, i, i);
        }
    }
    for (int op = 0; op < g->nops; op++) {
        bool tout = g->output[op] && !g->reduced[op];
        if (!E->tnd.loads[op] && !tout)
            continue;
        buf_printf(params, ", %s%s *NNK_RESTRICT c%d", tout ? "" : "const ", stype(g->storage[op]), op);
        buf_printf(args, ", c%d", op);
    }
}

/* The row order epilogue (templates/c/reduction_row.tmpl, epi and epirow). */
static void epilogue_row(const EmitOperands *g, TDict *d, const Epi *E)
{
    const IrKernel *k = g->k;
    Buf pro = {0}, sstores = {0}, sbody = {0}, eparams = {0}, eargs = {0}, cbody = {0};
    prologue(g, &E->nd, L_ROW, E->nd.red, &pro);
    Mode m = M_ROW_CONTIG;
    EmitAccess ac = access_for(g, &m);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *o = &k->outs[i];
        if (o->tensor)
            continue;
        int op = k->nloads + i;
        Buf v = {0};
        emit_ref(&ac, o->node, &v);
        buf_printf(&sstores, "*(%s *)ps->b[%d] = ", stype(o->storage), op);
        emit_store(o->type, o->storage, v.data, &sstores);
        buf_puts(&sstores, ";\n");
        buf_free(&v);
    }
    /* the contiguous row functions: values of the outer levels as parameters */
    epi_params(g, E, false, &eparams, &eargs, &cbody);
    for (int op = 0; op < g->nops; op++)
        if (E->tnd.loads[op] || (g->output[op] && !g->reduced[op]))
            seg_item(g, tpush(d, "epi_ops"), op);
    tlist(d, "epi_ops");
    tbool(d, "epi_idx", E->tnd.idx);
    elem_code_c(g, &E->e, M_ROW_CONTIG, E->cache, &cbody);
    tensor_stores(g, M_ROW_CONTIG, &cbody);
    elem_code_c(g, &E->e, M_ROW_STRIDED, E->cache, &sbody);
    tensor_stores(g, M_ROW_STRIDED, &sbody);
    if (E->has_tensor)
        blocked_fns(g, d, "epirow", "n contiguous elements of the tensor outputs (row order epilogue)", "epirow", "n",
                    "i", eparams.data, cbody.data);
    tlist(d, "epirow");
    /* whether a call may be in place (only the tensor outputs' stores are
     * in the restrict loops) */
    Buf ad = {0};
    bool all[MAXOPS];
    for (int op = 0; op < g->nops; op++)
        all[op] = true;
    if (E->has_tensor)
        buf_printf(&ad, "static const uint8_t size_[%d] = {%s};\nconst int alias_ = nnk_plan_overlap_(p, %d, size_);",
                   g->nops > 0 ? g->nops : 1, op_sizes(g, all), k->nloads);
    else
        buf_puts(&ad, "const int alias_ = 0; /* no tensor output */");
    tset(d, "alias_decl", emit_str(g->c, &ad));
    tset(d, "epi_prologue", emit_str(g->c, &pro));
    tset(d, "scalar_stores", emit_str(g->c, &sstores));
    tbool(d, "has_tensor_outs", E->has_tensor);
    tset(d, "epi_contig_args", emit_str(g->c, &eargs));
    tset(d, "epi_strided_body", emit_str(g->c, &sbody));
    buf_free(&eparams);
    buf_free(&cbody);
}

/* The column order epilogue (cepi, cepirow): the row values of the
 * outputs into cx, the reduced-shape outputs per position, the tensor
 * outputs row by row. */
static void epilogue_col(const EmitOperands *g, TDict *d, const Epi *E, uint8_t *col_rows)
{
    const IrKernel *k = g->k;
    uint8_t *ball = boundary(g, &E->nd, E->roots, E->nr, L_ROW);
    /* (reduced-shape outputs of row level are read back from cx too) */
    for (int i = 0; i < k->nouts; i++)
        if (!k->outs[i].tensor && k->nodes[k->outs[i].node].level == L_ROW && k->nodes[k->outs[i].node].op != IR_CONST)
            ball[k->outs[i].node] = 1;
    for (int i = 0; i < k->nnodes; i++)
        col_rows[i] |= ball[i];
    Buf cepro = {0}, cstores = {0}, ceparams = {0}, ceargs = {0}, cebody = {0};
    /* what cepi computes before the rows: the row values (into cx), the
     * uniform values cepirow takes, the reduced-shape outputs' values */
    uint8_t *set = nnkc_scratch((size_t)k->nnodes + 1);
    for (int i = 0; i < k->nnodes; i++)
        set[i] = ball[i] || E->bu[i];
    for (int i = 0; i < k->nouts; i++)
        if (!k->outs[i].tensor && k->nodes[k->outs[i].node].op != IR_CONST)
            set[k->outs[i].node] = 1;
    int32_t *sr = nnkc_scratch(((size_t)k->nnodes + 1) * sizeof(int32_t));
    int ns = set_roots(g, set, sr, k->nnodes + 1);
    if (ns)
        col_prep(g, sr, ns, ball, &cepro);
    if (!cepro.len || !strstr(cepro.data, "cx->")) /* (only uniform values: cx unused) */
        buf_puts(&cepro, "(void)cx;\n");
    Mode m = M_COL;
    EmitAccess ac = access_for(g, &m);
    for (int i = 0; i < k->nouts; i++) {
        const IrOutput *o = &k->outs[i];
        if (o->tensor)
            continue;
        int op = k->nloads + i;
        const IrNode *n = &k->nodes[o->node];
        Buf v = {0};
        if (n->level == L_ROW && n->op != IR_CONST)
            buf_printf(&v, "cx->t%d[c]", o->node);
        else
            emit_ref(&ac, o->node, &v);
        buf_printf(&cstores, "((%s *)ps->b[%d])[c * p->strides[%d][p->ndim - p->nred - 1]] = ", stype(o->storage), op,
                   op);
        emit_store(o->type, o->storage, v.data, &cstores);
        buf_puts(&cstores, ";\n");
        buf_free(&v);
    }
    epi_params(g, E, true, &ceparams, &ceargs, &cebody);
    elem_code_c(g, &E->e, M_COL, E->cache, &cebody);
    tensor_stores(g, M_COL, &cebody);
    if (E->has_tensor)
        blocked_fns(g, d, "cepirow", "T positions of one row of the tensor outputs (column order epilogue)",
                    "cepirow", "T", "c", ceparams.data, cebody.data);
    tlist(d, "cepirow");
    tset(d, "cepi_prologue", emit_str(g->c, &cepro));
    tset(d, "cscalar_stores", emit_str(g->c, &cstores));
    tset(d, "cepi_args", emit_str(g->c, &ceargs));
    buf_free(&cebody);
    buf_free(&ceparams);
}

/* The column order's scratch (cx): finals and row values per position. */
static void col_scratch(const EmitOperands *g, TDict *d, const uint8_t *col_rows, int max_lane_bytes)
{
    const IrKernel *k = g->k;
    Buf cxf = {0}, cxb = {0}, cxa = {0}, f2c = {0};
    int nfix = 0;
    buf_puts(&cxb, "0");
    for (int ri = 0; ri < k->nreds; ri++) {
        const char *R = ctype(type_compute(k->reds[ri].res_type));
        buf_printf(&cxf, "%s *r%d;\n", R, ri);
        buf_printf(&cxb, " + NNK_A8(T * (int64_t)sizeof(%s))", R);
        buf_printf(&cxa, "cx->r%d = (%s *)mem;\nmem += NNK_A8(T * (int64_t)sizeof(%s));\n", ri, R, R);
        buf_printf(&f2c, "cx.r%d[0] = f->r%d;\n", ri, ri);
        nfix++;
    }
    for (int i = 0; i < k->nnodes; i++) {
        if (!col_rows[i])
            continue;
        const char *T = ctype((Type)k->nodes[i].type);
        buf_printf(&cxf, "%s *t%d;\n", T, i);
        buf_printf(&cxb, " + NNK_A8(T * (int64_t)sizeof(%s))", T);
        buf_printf(&cxa, "cx->t%d = (%s *)mem;\nmem += NNK_A8(T * (int64_t)sizeof(%s));\n", i, T, T);
        nfix++;
    }
    if (!k->nreds)
        buf_puts(&f2c, "(void)f;\n");
    tset(d, "cx_fields", emit_str(g->c, &cxf));
    tset(d, "cx_bytes", emit_str(g->c, &cxb));
    tset(d, "cx_assign", emit_str(g->c, &cxa));
    tset(d, "fin_to_cx", emit_str(g->c, &f2c));
    /* stack scratch: NNK_COLT_MIN positions, or one (red_partial), with
     * every level (each array at most 8 bytes an element) */
    int lane_bytes = max_lane_bytes > 0 ? max_lane_bytes : 8;
    tsetf(d, "cx_small", "NNK_COLT_MIN * %d + (NNK_LEVELS + 1) * NNK_COLT_MIN * %d", 8 * (nfix + 1), lane_bytes);
    tsetf(d, "cx_one", "%d + (NNK_LEVELS + 1) * %d", 8 * (nfix + 1), lane_bytes);
}

/* The column test: the innermost kept dimension contiguous for every
 * operand used, the innermost reduced one not (for some input). */
static void col_test(const EmitOperands *g, TDict *d, const uint8_t *red_loads, const Need *epi)
{
    const IrKernel *k = g->k;
    bool has_col = false;
    Buf ct = {0}, rowc = {0};
    for (int op = 0; op < g->nops; op++) {
        bool tout = g->output[op] && !g->reduced[op];
        bool loaded = op < k->nloads && (red_loads[op] || epi->loads[op]);
        if (loaded || tout)
            buf_printf(&ct, "%sp->strides[%d][k0 - 1] == 1", ct.len ? " && " : "", op);
        if (op < k->nloads && red_loads[op]) {
            has_col = true;
            buf_printf(&rowc, "%sp->strides[%d][last] == 1", rowc.len ? " && " : "", op);
        }
    }
    if (has_col)
        tsetf(d, "col_test", "%s && !(%s)", ct.data, rowc.data);
    else
        tset(d, "col_test", "0");
    tbool(d, "has_col", has_col);
    buf_free(&ct);
    buf_free(&rowc);
}

static void reduction(const EmitOperands *g, TDict *d)
{
    const IrKernel *k = g->k;
    tset(d, "wide", wide_loops(k) ? "NNK_WIDE_ " : "");
    tsetf(d, "nphases", "%d", k->nphases);
    Mode m = M_ROW_CONTIG;
    EmitAccess ac = access_for(g, &m);
    emit_combine_keys(g, "p->", &ac, d);

    emit_fin_fields(g, d);
    for (int op = 0; op < g->nops; op++)
        seg_item(g, tpush(d, "operands"), op);
    tlist(d, "operands");

    const Cache cache = find_cache(g);
    uint8_t red_loads[MAXOPS] = {0};
    uint8_t *col_rows = nnkc_scratch((size_t)k->nnodes + 1);
    bool has_arg = emit_has_arg(k);
    int max_lane_bytes = 0;
    Buf sizes = {0};
    for (int ph = 1; ph <= k->nphases; ph++) {
        TDict *P = tpush(d, "phases");
        tsetf(P, "phase", "%d", ph);
        int lb = 0;
        reduction_phase(g, P, ph, ph == k->nphases ? cache : (Cache){-1, -1}, red_loads, col_rows, &lb);
        if (lb > max_lane_bytes)
            max_lane_bytes = lb;
        buf_printf(&sizes, "%s(int32_t)sizeof(%s__s%d)", ph > 1 ? ", " : "", g->in->name, ph);
    }
    tlist(d, "phases");
    tset(d, "state_sizes", sizes.data ? emit_str(g->c, &sizes) : "0");
    tsetf(d, "finals_size", "(int32_t)sizeof(%s__fin)", g->in->name);
    tbool(d, "has_arg_reducer", has_arg);
    tset(d, "argmax_flag", has_arg ? "1" : "0");

    /* the epilogues: tensor outputs per element, reduced-shape outputs per position */
    Epi E = {.cache = cache};
    for (int i = 0; i < k->nouts; i++) {
        E.roots[E.nr++] = k->outs[i].node;
        if (k->outs[i].tensor)
            E.troots[E.nt++] = k->outs[i].node;
        E.has_tensor |= k->outs[i].tensor;
    }
    E.nd = need_cut(g, E.roots, E.nr, NULL, cache.node);
    E.tnd = need_cut(g, E.troots, E.nt, NULL, cache.node);
    E.bu = boundary(g, &E.tnd, E.troots, E.nt, L_UNIFORM);
    E.br = boundary(g, &E.tnd, E.troots, E.nt, L_ROW);
    {
        uint8_t *given = nnkc_scratch((size_t)k->nnodes + 1);
        if (cache.node >= 0)
            given[cache.node] = 1;
        Buf fn = {0};
        emit_elem_fn(g, &c_elem, arena_printf(g->c->arena, "%s__epi_elem", g->in->name), "", E.troots, E.nt, given,
                     &E.e, &fn);
        tset(d, "epi_elem_fn", emit_str(g->c, &fn));
    }
    epilogue_row(g, d, &E);
    epilogue_col(g, d, &E, col_rows);
    col_scratch(g, d, col_rows, max_lane_bytes);
    col_test(g, d, red_loads, &E.nd);

    /* §8 entry: [outer, len, inner] views (views), scalars by value */
    Buf args = {0};
    for (int i = 0, vi = 0; i < g->in->nparams + g->in->nouts; i++) {
        const InstParam *ip = i < g->in->nparams ? &g->in->params[i] : NULL;
        if (!ip && g->in->outs[i - g->in->nparams].inout)
            vi++; /* the parameter's view stands for it */
        else if (!ip || ip->tensor)
            buf_printf(&args, ", &v%d_", vi++);
        else
            buf_printf(&args, ", %s", c_param(g, ip->name));
    }
    tset(d, "api_args", emit_str(g->c, &args));
}

/* ---- the file ---------------------------------------------------------------------- */

/* What the C file and the header say about every instance. */
/* An instance's loops and descriptor; *user (bool): with bodies (the
 * header has none). */
static void instance(const EmitOperands *g, TDict *e, void *user)
{
    if (!*(const bool *)user)
        return;
    desc_params(g, e);
    tlist(e, "params");
    if (g->in->reduction)
        reduction(g, e);
    else
        elementwise(g, e);
}

static TDict *file_dict(Compiler *c, const List *instances, const EmitOptions *opt, bool bodies)
{
    return emit_instances(c, instances, opt, instance, &bodies);
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
