/* module.c - modules: .nnk source compiled in-process by libnnkc, with
 * their kernels instantiated and code-generated lazily per backend and
 * dtype signature (launch.c decides which; this file makes one). */
#include "internal.h"
#include "libnnkc.h"

_Static_assert((int)NNKC_MAX_PARAMS == (int)NNK_MAX_TENSORS && (int)NNKC_MAX_SCALARS == (int)NNK_MAX_SCALARS &&
                   (int)NNKC_MAX_GENERICS == (int)RT_MAX_GENERICS,
               "the language's limits (libnnkc.h) are the ABI's (abi.h)");

#include <stdlib.h>
#include <string.h>

nnk_status rt_parse_module_options(rt_kw *kw, int32_t *opt_level, char ***include_dirs, const char **name)
{
    int64_t opt = 2;
    nnk_status s = rt_kw_int(kw, "opt_level", 0, 3, &opt);
    if (s)
        return s;
    *opt_level = (int32_t)opt;
    const char *n = rt_kw_take(kw, "name");
    *name = n ? n : "<string>";
    const char *dirs = rt_kw_take(kw, "include_dirs");
    *include_dirs = NULL;
    if (!dirs)
        return NNK_OK;
    size_t count = 2;
    for (const char *p = dirs; *p; p++)
        count += *p == ':';
    char **v = rt_calloc(count, sizeof *v);
    char *copy = rt_strdup(dirs);
    if (!v || !copy) {
        free(v);
        free(copy);
        return NNK_ENOMEM;
    }
    /* v[0] owns the storage of every entry */
    size_t i = 0;
    for (char *p = copy;; p++) {
        char *colon = strchr(p, ':');
        if (*p && p != colon)
            v[i++] = p;
        if (!colon)
            break;
        *colon = 0;
        p = colon;
    }
    if (i == 0)
        free(copy);
    *include_dirs = v;
    return NNK_OK;
}

static void free_dirs(char **dirs)
{
    if (dirs) {
        free(dirs[0]);
        free(dirs);
    }
}

/* Fills a module kernel's interface from libnnkc's reflection. */
static void describe_kernel(nnk_kernel *k, const NnkcKernelInfo *info)
{
    k->info = info;
    k->reduction = info->reduction;
    k->nin = info->nparams;
    k->nout = info->nouts;
    k->ngenerics = info->ngenerics;
    for (int v = 0; v < info->ngenerics && v < RT_MAX_GENERICS; v++) {
        k->classes[v] = info->generic_classes[v];
        k->generic_names[v] = info->generic_names[v];
    }
    for (int p = 0; p < info->nparams + info->nouts && p < RT_MAX_PARAMS; p++) {
        const NnkcParamInfo *pi = &info->params[p];
        /* every output is an array; a reduced one is declared `T`, not `T[]` */
        k->params[p] = (rt_param){pi->name, pi->tensor || pi->output, pi->output, pi->reduced, pi->has_default, pi->typevar,
                                  pi->typevar < 0 ? (nnk_dtype)pi->type : NNK_F32, pi->inout, pi->raw};
    }
}

nnk_status nnk_module_compile(const nnk_context *ctx, const char *source, const char *options, nnk_module **out)
{
    if (!source || !out)
        return rt_error(NNK_EINVAL, "nnk_module_compile: %s is NULL", !source ? "source" : "out");
    rt_kw kw;
    nnk_status s = rt_kw_parse(options, "module options", &kw);
    if (s)
        return s;
    int32_t opt;
    char **dirs = NULL;
    const char *name;
    if ((s = rt_parse_module_options(&kw, &opt, &dirs, &name)) || (s = rt_kw_check_unused(&kw, "module options"))) {
        free_dirs(dirs);
        rt_kw_free(&kw);
        return s;
    }
    nnk_module *m = rt_calloc(1, sizeof *m);
    if (!m) {
        free_dirs(dirs);
        rt_kw_free(&kw);
        return NNK_ENOMEM;
    }
    pthread_mutex_init(&m->lock, NULL);
    m->opt_level = opt;
    rt_live_inc();
    NnkcModuleOptions o = {(const char *const *)dirs, opt};
    m->nm = nnkc_module_new(name, source, strlen(source), &o);
    free_dirs(dirs);
    rt_kw_free(&kw);
    if (!m->nm) {
        nnk_module_free(m);
        return rt_error(NNK_ENOMEM, "out of memory compiling the module");
    }
    if (!nnkc_module_ok(m->nm)) {
        s = rt_error(NNK_ECOMPILE, "%s", nnkc_module_diagnostics(m->nm));
        nnk_module_free(m);
        return s;
    }
    if (ctx && (s = nnk_context_clone(ctx, &m->ctx))) {
        nnk_module_free(m);
        return s;
    }
    int n = nnkc_module_kernel_count(m->nm);
    m->kernels = rt_calloc((size_t)(n > 0 ? n : 1), sizeof *m->kernels);
    if (!m->kernels) {
        nnk_module_free(m);
        return NNK_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        const NnkcKernelInfo *info = nnkc_module_kernel(m->nm, i);
        int32_t nscalars = 0;
        for (int p = 0; p < info->nparams; p++)
            nscalars += !info->params[p].tensor;
        /* sema enforces these limits; the fixed arrays of a kernel and a
         * plan are sized by them, so check again rather than trust. */
        if (info->nparams + info->nouts > RT_MAX_PARAMS || info->nparams + info->nouts - nscalars > NNK_MAX_TENSORS ||
            nscalars > NNK_MAX_SCALARS || info->ngenerics > RT_MAX_GENERICS) {
            s = rt_error(NNK_EUNSUPPORTED, "kernel '%s' has too many parameters or type variables", info->name);
            nnk_module_free(m);
            return s;
        }
        nnk_kernel *k = rt_calloc(1, sizeof *k);
        if (!k || (s = rt_kernel_init(k, RT_KERNEL_MODULE, ctx, info->name))) {
            if (k) {
                rt_kernel_fini(k);
                free(k);
            }
            nnk_module_free(m);
            return s ? s : NNK_ENOMEM;
        }
        k->mod = m;
        k->opt_level = opt;
        describe_kernel(k, info);
        m->kernels[m->nkernels++] = k;
    }
    *out = m;
    return NNK_OK;
}

void nnk_module_free(nnk_module *m)
{
    if (!m)
        return;
    for (int32_t i = 0; i < m->nkernels; i++) {
        rt_kernel_fini(m->kernels[i]);
        free(m->kernels[i]);
    }
    free(m->kernels);
    if (m->nm)
        nnkc_module_free(m->nm);
    nnk_context_free(m->ctx);
    pthread_mutex_destroy(&m->lock);
    free(m);
    rt_live_dec();
}

int32_t nnk_module_kernel_count(const nnk_module *m)
{
    return m ? m->nkernels : 0;
}

const char *nnk_module_kernel_name(const nnk_module *m, int32_t i)
{
    return m && i >= 0 && i < m->nkernels ? m->kernels[i]->name : NULL;
}

nnk_status nnk_module_kernel(nnk_module *m, const char *name, nnk_kernel **k)
{
    if (!m || !name || !k)
        return rt_error(NNK_EINVAL, "nnk_module_kernel: %s is NULL", !m ? "module" : !name ? "name" : "k");
    for (int32_t i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i]->name, name) == 0)
            return *k = m->kernels[i], NNK_OK;
    rt_str b = {0};
    for (int32_t i = 0; i < m->nkernels; i++)
        rt_str_printf(&b, "%s%s", i ? ", " : "", m->kernels[i]->name);
    nnk_status s = rt_error(NNK_ENOTFOUND, "the module has no kernel '%s' (it has: %s)", name, b.s ? b.s : "none");
    rt_str_free(&b);
    return s;
}

/* The interface the runtime knows, for extensions without host-side
 * descriptors in their compiled code. */
static void fill_interface(nnk_kernel *k, rt_instance *inst, const Value *dflt, const bool *has)
{
    nnk_kernel_desc *d = &inst->iface;
    d->abi = NNK_ABI_VERSION;
    d->kind = k->reduction ? NNK_KIND_REDUCTION : NNK_KIND_ELEMENTWISE;
    d->name = k->name;
    d->kernel = k->name;
    d->nparams = k->nin;
    d->nouts = k->nout;
    d->params = inst->iface_params;
    for (int32_t p = 0; p < k->nin + k->nout; p++) {
        const rt_param *pm = &k->params[p];
        nnk_param_desc *pd = &inst->iface_params[p];
        pd->name = pm->name;
        pd->dtype = pm->typevar >= 0 ? inst->targs[pm->typevar] : (int32_t)pm->type;
        pd->flags = (pm->tensor ? NNK_PARAM_TENSOR : 0) | (pm->output ? NNK_PARAM_OUTPUT : 0) |
                    (pm->reduced ? NNK_PARAM_REDUCED : 0) | (pm->has_default ? NNK_PARAM_DEFAULT : 0) |
                    (pm->inout ? NNK_PARAM_INOUT : 0) | (pm->raw ? NNK_PARAM_RAW : 0);
        /* a scalar's default as the launch passes it when the call gives
         * none (generated C carries its own descriptor; CUDA and OpenCL
         * code is launched with this one) */
        memset(&pd->dflt, 0, sizeof pd->dflt);
        const NnkcKernelInfo *info = k->info;
        if (!pm->tensor && pm->has_default && info && p < info->nparams) {
            const nnk_dtype t = (nnk_dtype)pd->dtype;
            /* the instance's value (an expression default evaluated), else
             * the literal as written */
            const Value v = p < k->nin && has[p] ? value_cast(dflt[p], (Type)t) : value_cast(info->params[p].dflt, (Type)t);
            pd->dflt = t == NNK_C64 || t == NNK_C128 ? rt_scalar_from_c128(t, v.v.f, v.im)
                       : t == NNK_F16 || t == NNK_BF16 || t == NNK_F32 || t == NNK_F64 ? rt_scalar_from_f64(t, v.v.f)
                       : t >= NNK_U8 && t <= NNK_U64                                   ? rt_scalar_from_i64(t, (int64_t)v.v.u)
                                                                                       : rt_scalar_from_i64(t, v.v.i);
        }
    }
}

/* The code an extension's target names, as libnnkc's target (the values
 * of nnk/extension.h's NNK_TARGET_* are NnkcTarget's). */
static const struct {
    int32_t ext;
    NnkcTarget nnkc;
} targets[] = {{NNK_TARGET_C, NNKC_TARGET_C}, {NNK_TARGET_CUDA, NNKC_TARGET_CUDA}, {NNK_TARGET_OPENCL, NNKC_TARGET_OPENCL}};

nnk_status rt_module_instance(nnk_kernel *k, rt_instance *inst)
{
    nnk_module *m = k->mod;
    nnk_status (*compile)(void *, int32_t, const nnk_kernel_source *, nnk_ext_kernel *) = RT_HOOK(inst->ext, kernel_compile);
    int32_t target = inst->ext->ops->target;
    size_t ti = 0;
    while (ti < sizeof targets / sizeof *targets && targets[ti].ext != target)
        ti++;
    if (!compile || ti == sizeof targets / sizeof *targets)
        return rt_error(NNK_EUNSUPPORTED, "extension '%s' cannot compile kernels", inst->ext->ops->name);
    Type targs[RT_MAX_GENERICS], storage[NNK_MAX_TENSORS];
    for (int32_t v = 0; v < k->ngenerics; v++)
        targs[v] = (Type)inst->targs[v];
    int32_t nt = 0;
    for (int32_t p = 0; p < k->nin + k->nout; p++)
        nt += k->params[p].tensor;
    for (int32_t t = 0; t < NNK_MAX_TENSORS; t++)
        storage[t] = t < nt ? (Type)inst->storage[t] : T_NONE;
    char *symbol = NULL, *error = NULL;
    pthread_mutex_lock(&m->lock);
    char *src = nnkc_module_emit(m->nm, k->name, targs, storage, targets[ti].nnkc,
                                 &symbol, &error);
    /* the scalars' defaults as the instance has them (fill_interface) */
    Value dflt[RT_MAX_PARAMS];
    bool has[RT_MAX_PARAMS] = {0};
    if (src && !nnkc_module_defaults(m->nm, k->name, targs, storage, dflt, has,
                                     k->nin < RT_MAX_PARAMS ? k->nin : RT_MAX_PARAMS))
        memset(has, 0, sizeof has);
    /* the cpu's first launches may run on the evaluator while the C
     * compiles (jit_cpu.c, rt_jit_c_async) */
    NnkcEval *ev = src && inst->ext->ops == &rt_cpu_ops && target == NNK_TARGET_C && rt_jit_eval_enabled()
                       ? nnkc_module_eval(m->nm, k->name, targs, storage)
                       : NULL;
    /* libraries such as cuDNN may run plain reductions themselves */
    int32_t reduce_op = src && target == NNK_TARGET_CUDA ? (int32_t)nnkc_module_reduce_op(m->nm, k->name, targs, storage)
                                                         : NNK_REDUCE_NONE;
    /* a generic body that cannot take these dtypes is the caller's dtype
     * error (docs/runtime.md), not a broken module */
    const bool rejected = !src && nnkc_module_emit_rejected(m->nm);
    const bool oom = !src && nnkc_module_oom(m->nm);
    pthread_mutex_unlock(&m->lock);
    if (oom || !src)
        nnkc_eval_free(ev);
    if (oom) {
        free(error);
        free(symbol);
        return rt_error(NNK_ENOMEM, "kernel '%s': out of memory generating code", k->name);
    }
    if (!src) {
        nnk_status s = rt_error(rejected ? NNK_EDTYPE : NNK_ECOMPILE, "kernel '%s': %s", k->name,
                                error ? error : "code generation failed");
        free(error);
        free(symbol);
        return s;
    }
    fill_interface(k, inst, dflt, has);
    nnk_kernel_source ks = {sizeof ks, target, src, symbol, k->opt_level, &inst->iface, reduce_op};
    nnk_status s = ev ? rt_jit_c_async(src, symbol, k->opt_level, ev, &inst->iface, &inst->k)
                      : compile(inst->ext->state, inst->device, &ks, &inst->k);
    if (!s && !inst->k.desc)
        s = rt_error(NNK_EINTERNAL, "extension '%s' compiled no descriptor", inst->ext->ops->name);
    free(src);
    free(symbol);
    free(error);
    return s;
}
