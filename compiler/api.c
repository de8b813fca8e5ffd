/* api.c - libnnkc as a library: compile a source text once, then generate
 * code for any instance of its kernels on demand.  The runtime's JIT uses
 * it in-process; nnkc uses the same pipeline.  A module is not
 * thread-safe: callers serialize calls on one module. */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

struct NnkcModule {
    Compiler *c;
    bool ok;
    char *diagnostics;       /* rendered, owned (malloc) */
    NnkcKernelInfo *kernels;
    int nkernels;
    bool rejected;           /* the last emit: the instance does not type-check */
    bool oom;                /* the last emit ran out of memory */
};

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* Renders the diagnostics since `from` into m->diagnostics, after the
 * work of a call (`bailed`: it ended in nnkc_bug or nnkc_oom, whose Buf
 * storage is released here), under a bail-out of its own.  false when out
 * of memory: the caller reports that instead (NULL, nnkc_module_oom). */
static void render_diags(NnkcModule *m, int from);
static bool finish(NnkcModule *m, int from, bool bailed)
{
    Compiler *c = m->c;
    if (bailed)
        nnkc_release(c);
    bool oom = bailed && c->oom;
    char bug[sizeof c->bug];
    snprintf(bug, sizeof bug, "%s", c->bug);
    jmp_buf jb;
    if (oom || setjmp(jb)) {
        nnkc_release(c);
        nnkc_leave(c);
        return false;
    }
    nnkc_enter(c, &jb);
    if (bailed)
        diag_error_plain(c, "internal compiler error at %s", bug);
    render_diags(m, from);
    nnkc_leave(c);
    return true;
}

static void render_diags(NnkcModule *m, int from)
{
    Compiler *c = m->c;
    /* Render only what arrived since `from`, by rendering a view. */
    List all = c->diags;
    c->diags.items = all.items + from;
    c->diags.n = all.n - from;
    Buf b = {0};
    diag_render(c, &b, false);
    c->diags = all;
    free(m->diagnostics);
    m->diagnostics = buf_detach(&b);
}

static void reflect(NnkcModule *m)
{
    Compiler *c = m->c;
    m->nkernels = c->kernels.n;
    m->kernels = arena_alloc(c->arena, sizeof(NnkcKernelInfo) * (size_t)(c->kernels.n + 1));
    for (int i = 0; i < c->kernels.n; i++) {
        Item *k = c->kernels.items[i];
        NnkcKernelInfo *ki = &m->kernels[i];
        ki->name = k->name;
        ki->reduction = k->kind == I_REDUCTION;
        ki->ngenerics = k->generics.n < NNKC_MAX_GENERICS ? k->generics.n : NNKC_MAX_GENERICS;
        for (int g = 0; g < ki->ngenerics; g++) {
            Generic *gen = k->generics.items[g];
            ki->generic_names[g] = gen->name;
            ki->generic_classes[g] = gen->cls;
        }
        ki->nparams = k->params.n;
        ki->nouts = k->outputs.n;
        ki->params = arena_alloc(c->arena, sizeof(NnkcParamInfo) * (size_t)(k->params.n + k->outputs.n + 1));
        for (int p = 0; p < k->params.n + k->outputs.n; p++) {
            bool out = p >= k->params.n;
            Param *pa = out ? k->outputs.items[p - k->params.n] : k->params.items[p];
            NnkcParamInfo *pi = &ki->params[p];
            pi->name = pa->name;
            pi->tensor = pa->ty.tensor;
            pi->output = out;
            pi->reduced = out && !pa->ty.tensor;
            pi->inout = pa->inout || pa->inout_of;
            pi->raw = pa->raw;
            pi->typevar = -1;
            pi->type = pa->ty.scalar;
            for (int g = 0; g < ki->ngenerics && pa->ty.scalar == T_NONE; g++)
                if (ki->generic_names[g] == pa->ty.name)
                    pi->typevar = g;
            if (pa->dflt && (pa->dflt->kind == E_INT || pa->dflt->kind == E_FLOAT || pa->dflt->kind == E_BOOL)) {
                pi->has_default = true;
                pi->dflt = pa->dflt->value;
            } else if (pa->dflt) {
                pi->has_default = true; /* an expression: the instance knows its value */
                pi->dflt = value_int(T_WINT, 0);
            }
        }
    }
}

NnkcModule *nnkc_module_new(const char *name, const char *source, size_t len, const NnkcModuleOptions *opt)
{
    NnkcModule *volatile m = calloc(1, sizeof *m); /* volatile: used after longjmp */
    if (!m)
        return NULL;
    if (!(m->c = nnkc_new())) {
        free(m);
        return NULL;
    }
    Compiler *c = m->c;
    c->opt.confined_imports = true;
    jmp_buf jb;
    bool bailed = false;
    if (setjmp(jb) == 0) {
        nnkc_enter(c, &jb);
        if (opt) {
            for (const char *const *d = opt->include_dirs; d && *d; d++)
                list_push(c->arena, &c->opt.include_dirs, (void *)arena_strdup(c->arena, *d));
            c->opt.opt_level = opt->opt_level;
        }
        /* checks every kernel once; instances are lowered as they are asked for */
        nnkc_compile(c, name ? name : "<string>", source ? source : "", source ? len : 0, false);
        reflect(m);
    } else {
        bailed = true;
    }
    nnkc_leave(c);
    if ((bailed && c->oom) || !finish(m, 0, bailed)) {
        nnkc_module_free(m);
        return NULL;
    }
    m->ok = c->nerrors == 0;
    return m;
}

bool nnkc_module_ok(const NnkcModule *m) { return m && m->ok; }
bool nnkc_module_emit_rejected(const NnkcModule *m) { return m && m->rejected; }
bool nnkc_module_oom(const NnkcModule *m) { return m && m->oom; }
const char *nnkc_module_diagnostics(const NnkcModule *m) { return m && m->diagnostics ? m->diagnostics : ""; }
int nnkc_module_kernel_count(const NnkcModule *m) { return m ? m->nkernels : 0; }

const NnkcKernelInfo *nnkc_module_kernel(const NnkcModule *m, int i)
{
    return m && i >= 0 && i < m->nkernels ? &m->kernels[i] : NULL;
}

const NnkcKernelInfo *nnkc_module_find(const NnkcModule *m, const char *name)
{
    for (int i = 0; m && name && i < m->nkernels; i++)
        if (strcmp(m->kernels[i].name, name) == 0)
            return &m->kernels[i];
    return NULL;
}

char *nnkc_module_emit(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage,
                       NnkcTarget target, char **symbol, char **error)
{
    if (symbol)
        *symbol = NULL;
    if (error)
        *error = NULL;
    if (m)
        m->rejected = m->oom = false;
    if (!m || !m->ok || !kernel) {
        if (error)
            *error = xstrdup(!m || !kernel ? "invalid arguments" : "the module has errors");
        return NULL;
    }
    Compiler *volatile const c = m->c; /* volatile: live across the setjmp below (-Wclobbered) */
    Item *k = sema_find_kernel(c, kernel);
    if (!k) {
        if (error) {
            static const char fmt[] = "no kernel '%s' in the module";
            size_t n = sizeof fmt + strlen(kernel);
            if ((*error = malloc(n)))
                snprintf(*error, n, fmt, kernel);
        }
        m->oom = error && !*error;
        return NULL;
    }
    int from = c->diags.n;
    int errs = c->nerrors, events = c->error_events;
    char *volatile src = NULL;
    char *volatile sym = NULL;
    bool bailed = false;
    jmp_buf jb;
    if (setjmp(jb) == 0) {
        nnkc_enter(c, &jb);
        for (int g = 0; g < k->generics.n; g++) {
            Generic *gen = k->generics.items[g];
            if (!targs || targs[g] >= T_NSCALAR) {
                diag_error(c, gen->range, "no type given for '%s' of '%s'", gen->name, k->name);
            } else if (!type_in_class(targs[g], gen->cls)) {
                diag_error(c, gen->range, "'%s' of '%s' must be %s, not %s", gen->name, k->name, class_name(gen->cls),
                           type_name(targs[g]));
            }
        }
        Instance *in = c->error_events == events ? sema_instance(c, k, targs, storage) : NULL;
        m->rejected = !in;
        if (in)
            lower_instance(c, in);
        if (in && c->error_events == events) {
            List one = {0};
            list_push(c->arena, &one, in);
            Buf out = {0};
            EmitOptions eo = {.source_name = "<jit>", .symbol_suffix = ""};
            if (target == NNKC_TARGET_C)
                emit_c_file(c, &one, &eo, &out);
            else if (target == NNKC_TARGET_CUDA)
                emit_cuda_file(c, &one, &eo, &out);
            else
                emit_opencl_file(c, &one, &eo, &out);
            if (c->error_events == events) {
                if (symbol && target != NNKC_TARGET_OPENCL) {
                    Buf s = {0};
                    buf_printf(&s, "%s__desc", in->name);
                    sym = buf_detach(&s);
                }
                src = buf_detach(&out); /* last: nothing after it can bail out */
            }
            buf_free(&out);
        }
    } else {
        bailed = true;
        free(sym);
        sym = NULL;
    }
    nnkc_leave(c);
    if (symbol && src)
        *symbol = sym;
    else
        free(sym);
    if (!src) {
        if (bailed && c->oom) {
            nnkc_release(c);
            m->oom = true;
        } else if (!finish(m, from, bailed)) {
            m->oom = true;
        } else if (error && !(*error = xstrdup(m->diagnostics))) {
            m->oom = true;
        }
    }
    /* a failed instance leaves no diagnostics behind, so asking again
     * renders them again (they would be duplicates, dropped, otherwise) */
    if (!src)
        c->diags.n = from;
    /* errors of one instance do not spoil the module for others */
    c->nerrors = errs;
    return src;
}

/* ---- plain reductions (nnkc_module_reduce_op) ---------------------------------- */

/* Node `id` is the load of tensor operand 0. */
static bool is_x(const IrKernel *k, int id)
{
    return id >= 0 && id < k->nnodes && k->nodes[id].op == IR_LOAD && k->nodes[id].aux == 0;
}

static bool is_call(const IrKernel *k, int id, Builtin b)
{
    return id >= 0 && id < k->nnodes && k->nodes[id].op == IR_CALL && k->nodes[id].sub == b;
}

NnkcReduceOp nnkc_instance_reduce_op(const Instance *in)
{
    const IrKernel *k = in ? in->ir : NULL;
    if (!k || !in->reduction || k->nouts != 1 || k->outs[0].tensor || k->nreds != 1 || k->nphases != 1 ||
        k->nloads != 1)
        return NNKC_REDUCE_NONE;
    /* one float dtype everywhere: the tensor, the output, the reducer */
    Type t = k->outs[0].type;
    if ((t != T_F16 && t != T_F32 && t != T_F64) || k->outs[0].storage != t)
        return NNKC_REDUCE_NONE;
    int nt = 0;
    for (int i = 0; i < in->nparams; i++) {
        const InstParam *p = &in->params[i];
        if (p->tensor && (nt++ || p->type != t || p->storage != t))
            return NNKC_REDUCE_NONE;
    }
    const IrReducer *r = &k->reds[0];
    if (r->res_type != t || r->arg_type != t)
        return NNKC_REDUCE_NONE;
    int out = k->outs[0].node, red = out;
    bool root_sqrt = is_call(k, out, B_SQRT);
    if (root_sqrt)
        red = k->nodes[out].a;
    if (red < 0 || k->nodes[red].op != IR_RED || k->nodes[red].aux != 0)
        return NNKC_REDUCE_NONE;
    int arg = r->arg;
    if (root_sqrt) {
        const IrNode *m = &k->nodes[arg];
        return r->kind == R_SUM && m->op == IR_BINARY && m->sub == BIN_MUL && is_x(k, m->a) && is_x(k, m->b)
                   ? NNKC_REDUCE_NORM2 : NNKC_REDUCE_NONE;
    }
    if (is_call(k, arg, B_ABS) && is_x(k, k->nodes[arg].a))
        return r->kind == R_MAX ? NNKC_REDUCE_AMAX : r->kind == R_SUM ? NNKC_REDUCE_NORM1 : NNKC_REDUCE_NONE;
    if (!is_x(k, arg))
        return NNKC_REDUCE_NONE;
    switch (r->kind) {
    case R_SUM: return NNKC_REDUCE_SUM;
    case R_PROD: return NNKC_REDUCE_PROD;
    case R_MIN: return NNKC_REDUCE_MIN;
    case R_MAX: return NNKC_REDUCE_MAX;
    case R_MEAN: return NNKC_REDUCE_MEAN;
    default: return NNKC_REDUCE_NONE;
    }
}

/* A query of one instance's IR: the kernel of that kind with its type
 * arguments in their classes, checked and lowered under the error guard,
 * then `use` on it (still under the guard: it may allocate).  A query
 * leaves no diagnostics behind; false when any step failed. */
static bool query_lowered(NnkcModule *m, const char *kernel, ItemKind kind, const Type *targs, const Type *storage,
                          void (*use)(Instance *, void *), void *arg)
{
    if (!m || !m->ok || !kernel)
        return false;
    Compiler *const c = m->c;
    Item *k = sema_find_kernel(c, kernel);
    if (!k || k->kind != kind)
        return false;
    for (int g = 0; g < k->generics.n; g++) {
        Generic *gen = k->generics.items[g];
        if (!targs || targs[g] >= T_NSCALAR || !type_in_class(targs[g], gen->cls))
            return false;
    }
    int from = c->diags.n;
    int errs = c->nerrors, events = c->error_events;
    volatile bool ok = false;
    jmp_buf jb;
    if (setjmp(jb) != 0) {
        nnkc_release(c); /* an internal error or out of memory: no answer */
    } else {
        nnkc_enter(c, &jb);
        Instance *in = sema_instance(c, k, targs, storage);
        if (in && c->error_events == events) {
            if (!in->ir)
                lower_instance(c, in);
            if (c->error_events == events && in->ir) {
                use(in, arg);
                ok = true;
            }
        }
    }
    nnkc_leave(c);
    c->diags.n = from;
    c->nerrors = errs;
    return ok;
}

static void use_reduce_op(Instance *in, void *arg) { *(NnkcReduceOp *)arg = nnkc_instance_reduce_op(in); }

NnkcReduceOp nnkc_module_reduce_op(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage)
{
    NnkcReduceOp op = NNKC_REDUCE_NONE;
    return query_lowered(m, kernel, I_REDUCTION, targs, storage, use_reduce_op, &op) ? op : NNKC_REDUCE_NONE;
}

static void use_eval(Instance *in, void *arg) { *(NnkcEval **)arg = nnkc_eval_new(in->ir); }

NnkcEval *nnkc_module_eval(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage)
{
    NnkcEval *ev = NULL;
    return query_lowered(m, kernel, I_ELEMENTWISE, targs, storage, use_eval, &ev) ? ev : NULL;
}

bool nnkc_module_defaults(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage, Value *out,
                          bool *has, int n)
{
    if (!m || !m->ok || !kernel || !out || !has)
        return false;
    Compiler *const c = m->c;
    Item *k = sema_find_kernel(c, kernel);
    if (!k)
        return false;
    for (int g = 0; g < k->generics.n; g++) {
        Generic *gen = k->generics.items[g];
        if (!targs || targs[g] >= T_NSCALAR || !type_in_class(targs[g], gen->cls))
            return false;
    }
    int from = c->diags.n;
    int errs = c->nerrors, events = c->error_events;
    volatile bool ok = false;
    jmp_buf jb;
    if (setjmp(jb) != 0) {
        nnkc_release(c);
    } else {
        nnkc_enter(c, &jb);
        Instance *in = sema_instance(c, k, targs, storage);
        if (in && c->error_events == events) {
            for (int p = 0; p < n; p++)
                has[p] = false;
            for (int p = 0; p < in->nparams && p < n; p++) {
                has[p] = in->params[p].has_default && !in->params[p].tensor;
                if (has[p])
                    out[p] = in->params[p].dflt;
            }
            ok = true;
        }
    }
    nnkc_leave(c);
    /* a query leaves no diagnostics behind */
    c->diags.n = from;
    c->nerrors = errs;
    return ok;
}

void nnkc_module_free(NnkcModule *m)
{
    if (!m)
        return;
    nnkc_free(m->c);
    free(m->diagnostics);
    free(m);
}

const char *nnkc_c_flags(int opt_level)
{
    /* No -ffast-math: results must match the language's IEEE semantics.
     * -fno-math-errno lets sqrt and friends inline; contraction into fma
     * stays off so the C and CUDA back ends round alike where they can. */
    switch (opt_level) {
    case 0: return "-std=c11 -O0 -fno-math-errno -ffp-contract=off";
    case 1: return "-std=c11 -O1 -fno-math-errno -ffp-contract=off";
    case 2: return "-std=c11 -O2 -ftree-vectorize -fno-math-errno -ffp-contract=off";
    default: return "-std=c11 -O3 -fno-math-errno -ffp-contract=off";
    }
}
