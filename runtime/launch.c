/* launch.c - argument lists, kernels from descriptors or source, and
 * nnk_launch: binding arguments to parameters, choosing the backend,
 * binding type variables, finding or making the instance, allocating
 * outputs, building the plan and handing it to the extension. */
#include "internal.h"
#include "libnnkc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- argument lists ------------------------------------------------------- */

typedef struct rt_arg {
    char *name;               /* NULL: positional */
    nnk_array *array;         /* retained; NULL for a scalar */
    rt_value value;
    bool out;                 /* nnk_args_out */
    bool is_bool;             /* nnk_args_bool: an RT_I64 0 or 1 of Python's kind bool */
} rt_arg;

struct nnk_args {
    rt_arg *items;
    int32_t n, cap;
    int32_t naxes;            /* -1: all axes */
    int32_t axes[NNK_MAX_DIMS];
    bool keepdims;
    int32_t nshape;           /* -1: no explicit iteration shape */
    int64_t shape[NNK_MAX_DIMS];
    bool has_ctx;
    bool numpy_scalars;       /* nnk_args_numpy_scalars */
    nnk_context ctx;
    nnk_array *outputs[NNK_MAX_TENSORS];
    int32_t nout;
    /* explicit type arguments (nnk_args_type): a variable by name, or by
     * index (-1: the kernel's only one) */
    int32_t ntypes;
    struct {
        char *name;
        int32_t index;
        nnk_dtype dtype;
    } types[RT_MAX_GENERICS];
};

nnk_status nnk_args_new(nnk_args **out)
{
    if (!out)
        return rt_error(NNK_EINVAL, "nnk_args_new: out is NULL");
    nnk_args *a = rt_calloc(1, sizeof *a);
    if (!a)
        return NNK_ENOMEM;
    a->naxes = -1;
    a->nshape = -1;
    rt_live_inc();
    *out = a;
    return NNK_OK;
}

static void clear_outputs(nnk_args *a)
{
    for (int32_t i = 0; i < a->nout; i++)
        nnk_array_free(a->outputs[i]);
    a->nout = 0;
}

void nnk_args_reset(nnk_args *a)
{
    if (!a)
        return;
    for (int32_t i = 0; i < a->n; i++) {
        free(a->items[i].name);
        nnk_array_free(a->items[i].array);
    }
    a->n = 0;
    a->naxes = -1;
    a->nshape = -1;
    a->keepdims = false;
    a->has_ctx = false;
    for (int32_t i = 0; i < a->ntypes; i++)
        free(a->types[i].name);
    a->ntypes = 0;
    a->numpy_scalars = false;
    clear_outputs(a);
}

void nnk_args_free(nnk_args *a)
{
    if (!a)
        return;
    nnk_args_reset(a);
    free(a->items);
    free(a);
    rt_live_dec();
}

static nnk_status push(nnk_args *a, const char *name, nnk_array *x, rt_value v, bool out, const char *fn)
{
    if (!a)
        return rt_error(NNK_EINVAL, "%s: args is NULL", fn);
    if (name && !*name)
        return rt_error(NNK_EINVAL, "%s: the name is empty", fn);
    if (a->n == a->cap) {
        int32_t cap = a->cap ? 2 * a->cap : 8;
        if (cap > 4 * RT_MAX_PARAMS)
            return rt_error(NNK_EINVAL, "%s: too many arguments", fn);
        rt_arg *p = realloc(a->items, (size_t)cap * sizeof *p);
        if (!p)
            return rt_error(NNK_ENOMEM, "out of memory");
        a->items = p;
        a->cap = cap;
    }
    char *copy = NULL;
    if (name && !(copy = rt_strdup(name)))
        return NNK_ENOMEM;
    a->items[a->n++] = (rt_arg){copy, nnk_array_retain(x), v, out, false};
    return NNK_OK;
}

nnk_status nnk_args_array(nnk_args *a, nnk_array *x)
{
    return x ? push(a, NULL, x, (rt_value){0}, false, __func__) : rt_error(NNK_EINVAL, "%s: the array is NULL", __func__);
}

nnk_status nnk_args_named_array(nnk_args *a, const char *name, nnk_array *x)
{
    if (!x || !name)
        return rt_error(NNK_EINVAL, "%s: %s is NULL", __func__, !x ? "the array" : "name");
    return push(a, name, x, (rt_value){0}, false, __func__);
}

nnk_status nnk_args_f64(nnk_args *a, double v)
{
    return push(a, NULL, NULL, (rt_value){RT_F64, {.f = v}}, false, __func__);
}

nnk_status nnk_args_named_f64(nnk_args *a, const char *name, double v)
{
    return name ? push(a, name, NULL, (rt_value){RT_F64, {.f = v}}, false, __func__)
                : rt_error(NNK_EINVAL, "%s: name is NULL", __func__);
}

nnk_status nnk_args_i64(nnk_args *a, int64_t v)
{
    return push(a, NULL, NULL, (rt_value){RT_I64, {.i = v}}, false, __func__);
}

nnk_status nnk_args_named_i64(nnk_args *a, const char *name, int64_t v)
{
    return name ? push(a, name, NULL, (rt_value){RT_I64, {.i = v}}, false, __func__)
                : rt_error(NNK_EINVAL, "%s: name is NULL", __func__);
}

nnk_status nnk_args_u64(nnk_args *a, uint64_t v)
{
    return push(a, NULL, NULL, (rt_value){RT_U64, {.u = v}}, false, __func__);
}

nnk_status nnk_args_named_u64(nnk_args *a, const char *name, uint64_t v)
{
    return name ? push(a, name, NULL, (rt_value){RT_U64, {.u = v}}, false, __func__)
                : rt_error(NNK_EINVAL, "%s: name is NULL", __func__);
}

nnk_status nnk_args_bool(nnk_args *a, int v)
{
    nnk_status s = push(a, NULL, NULL, (rt_value){RT_I64, {.i = v != 0}}, false, __func__);
    if (!s)
        a->items[a->n - 1].is_bool = true;
    return s;
}

nnk_status nnk_args_named_bool(nnk_args *a, const char *name, int v)
{
    nnk_status s = name ? push(a, name, NULL, (rt_value){RT_I64, {.i = v != 0}}, false, __func__)
                        : rt_error(NNK_EINVAL, "%s: name is NULL", __func__);
    if (!s)
        a->items[a->n - 1].is_bool = true;
    return s;
}

nnk_status nnk_args_numpy_scalars(nnk_args *a, int on)
{
    if (!a)
        return rt_error(NNK_EINVAL, "nnk_args_numpy_scalars: args is NULL");
    a->numpy_scalars = on != 0;
    return NNK_OK;
}

nnk_status nnk_args_c128(nnk_args *a, double re, double im)
{
    return push(a, NULL, NULL, (rt_value){RT_C128, {.c = {re, im}}}, false, __func__);
}

nnk_status nnk_args_named_c128(nnk_args *a, const char *name, double re, double im)
{
    return name ? push(a, name, NULL, (rt_value){RT_C128, {.c = {re, im}}}, false, __func__)
                : rt_error(NNK_EINVAL, "%s: name is NULL", __func__);
}

nnk_status nnk_args_out(nnk_args *a, nnk_array *y)
{
    return y ? push(a, NULL, y, (rt_value){0}, true, __func__) : rt_error(NNK_EINVAL, "%s: the array is NULL", __func__);
}

nnk_status nnk_args_axes(nnk_args *a, int32_t n, const int32_t *axes)
{
    if (!a || (n > 0 && !axes))
        return rt_error(NNK_EINVAL, "nnk_args_axes: %s is NULL", !a ? "args" : "axes");
    if (n < 0 || n > NNK_MAX_DIMS)
        return rt_error(NNK_EINVAL, "nnk_args_axes: %d axes (at most %d)", n, NNK_MAX_DIMS);
    memcpy(a->axes, axes, (size_t)n * sizeof *axes);
    a->naxes = n;
    return NNK_OK;
}

nnk_status nnk_args_keepdims(nnk_args *a, int keepdims)
{
    if (!a)
        return rt_error(NNK_EINVAL, "nnk_args_keepdims: args is NULL");
    a->keepdims = keepdims != 0;
    return NNK_OK;
}

nnk_status nnk_args_shape(nnk_args *a, int32_t ndim, const int64_t *shape)
{
    if (!a || (ndim > 0 && !shape))
        return rt_error(NNK_EINVAL, "nnk_args_shape: %s is NULL", !a ? "args" : "shape");
    if (ndim < 0 || ndim > NNK_MAX_DIMS)
        return rt_error(NNK_EINVAL, "nnk_args_shape: %d dimensions (at most %d)", ndim, NNK_MAX_DIMS);
    /* NNK_ESHAPE, as nnk_array_new's: a bad extent, or a product past
     * INT64_MAX (not the extent that makes it so: (2^40, 2^40) has none) */
    for (int32_t d = 0; d < ndim; d++)
        if (shape[d] < 0)
            return rt_error(NNK_ESHAPE, "nnk_args_shape: negative extent %lld in dimension %d", (long long)shape[d], d);
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; d++) { /* a zero extent counts as 1, as in strides (rt_check_shape) */
        int64_t e = shape[d] ? shape[d] : 1;
        if (n > INT64_MAX / e)
            return rt_error(NNK_ESHAPE, "nnk_args_shape: the shape has more than INT64_MAX elements");
        n *= e;
    }
    memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
    a->nshape = ndim;
    return NNK_OK;
}

nnk_status nnk_args_type(nnk_args *a, int32_t i, const char *name, nnk_dtype t)
{
    if (!a)
        return rt_error(NNK_EINVAL, "nnk_args_type: args is NULL");
    if (!name && i < -1)
        return rt_error(NNK_EINVAL, "nnk_args_type: type variable %d (0 and up, or -1: the only one)", i);
    if (name && !*name)
        return rt_error(NNK_EINVAL, "nnk_args_type: the name is empty");
    if (t < 0 || t >= NNK_DTYPE_COUNT)
        return rt_error(NNK_EDTYPE, "nnk_args_type: bad dtype %d", (int)t);
    if (a->ntypes == RT_MAX_GENERICS)
        return rt_error(NNK_EINVAL, "nnk_args_type: more than %d type arguments", RT_MAX_GENERICS);
    char *copy = NULL;
    if (name && !(copy = rt_strdup(name)))
        return NNK_ENOMEM;
    a->types[a->ntypes].name = copy;
    a->types[a->ntypes].index = name ? 0 : i;
    a->types[a->ntypes++].dtype = t;
    return NNK_OK;
}

nnk_status nnk_args_context(nnk_args *a, const nnk_context *ctx)
{
    if (!a || !ctx)
        return rt_error(NNK_EINVAL, "nnk_args_context: %s is NULL", !a ? "args" : "ctx");
    a->ctx = *ctx;
    a->has_ctx = true;
    return NNK_OK;
}

nnk_status nnk_args_output(nnk_args *a, int32_t i, nnk_array **out)
{
    if (!a || !out)
        return rt_error(NNK_EINVAL, "nnk_args_output: %s is NULL", !a ? "args" : "out");
    if (i < 0 || i >= a->nout)
        return rt_error(NNK_EINVAL, "nnk_args_output: no output %d (the last launch gave %d)", i, a->nout);
    *out = nnk_array_retain(a->outputs[i]);
    return NNK_OK;
}

int32_t nnk_args_output_count(const nnk_args *a)
{
    return a ? a->nout : 0;
}

/* ---- kernels --------------------------------------------------------------------- */

nnk_status rt_kernel_init(nnk_kernel *k, rt_kernel_kind kind, const nnk_context *ctx, const char *name)
{
    k->kind = kind;
    k->opt_level = 2;
    pthread_mutex_init(&k->lock, NULL);
    if (!(k->name = rt_strdup(name ? name : "?")))
        return NNK_ENOMEM;
    if (ctx && nnk_context_clone(ctx, &k->ctx))
        return NNK_ENOMEM;
    return NNK_OK;
}

void rt_kernel_fini(nnk_kernel *k)
{
    while (k->instances) {
        rt_instance *i = k->instances;
        k->instances = i->next;
        i->ext->ops->kernel_free(i->ext->state, &i->k);
        free(i);
    }
    nnk_context_free(k->ctx);
    free(k->name);
    pthread_mutex_destroy(&k->lock);
}

/* The inout input an inout output (parameter p) stands for: the inout
 * tensor input of its name; -1 when there is none. */
int32_t rt_inout_input(const nnk_kernel *k, int32_t p)
{
    for (int32_t q = 0; q < k->nin; q++)
        if (k->params[q].inout && k->params[q].tensor && strcmp(k->params[q].name, k->params[p].name) == 0)
            return q;
    return -1;
}

/* Checks a descriptor of linked or compiled code and copies its interface. */
static nnk_status adopt_desc(nnk_kernel *k, const nnk_kernel_desc *d)
{
    if (d->abi != NNK_ABI_VERSION)
        return rt_error(NNK_EABI, "kernel descriptor for ABI version %d; the runtime has version %d", d->abi,
                        NNK_ABI_VERSION);
    const char *what = NULL;
    int32_t ntensors = 0, nscalars = 0;
    if (d->nparams < 0 || d->nouts < 1 || d->nparams + d->nouts > RT_MAX_PARAMS || !d->params)
        what = "bad parameter counts";
    else if (!d->run)
        what = "no run function";
    else if (d->kind != NNK_KIND_ELEMENTWISE && d->kind != NNK_KIND_REDUCTION)
        what = "bad kind";
    else if (d->kind == NNK_KIND_REDUCTION && d->red_partial &&
             (!d->red_merge || !d->red_final || !d->red_epilogue || (d->nphases > 0 && !d->state_size) || d->nphases < 0))
        what = "red_partial without red_merge, red_final, red_epilogue or state_size";
    for (int32_t p = 0; !what && p < d->nparams + d->nouts; p++) {
        const nnk_param_desc *pd = &d->params[p];
        bool out = p >= d->nparams;
        if (!pd->name || (unsigned)pd->dtype >= NNK_DTYPE_COUNT)
            what = "a parameter without a name or with a bad dtype";
        else if (out && !(pd->flags & NNK_PARAM_TENSOR))
            what = "a scalar output";
        ntensors += (pd->flags & NNK_PARAM_TENSOR) != 0;
        nscalars += !(pd->flags & NNK_PARAM_TENSOR);
    }
    if (!what && (ntensors > NNK_MAX_TENSORS || nscalars > NNK_MAX_SCALARS))
        what = "too many parameters";
    if (what)
        return rt_error(NNK_EINVAL, "bad kernel descriptor '%s': %s", d->name ? d->name : "?", what);
    k->desc = d;
    k->reduction = d->kind == NNK_KIND_REDUCTION;
    k->nout = d->nouts;
    k->nin = d->nparams;
    for (int32_t p = 0; p < d->nparams + d->nouts; p++) {
        const nnk_param_desc *pd = &d->params[p];
        k->params[p] = (rt_param){pd->name, (pd->flags & NNK_PARAM_TENSOR) != 0, p >= k->nin,
                                  (pd->flags & NNK_PARAM_REDUCED) != 0, (pd->flags & NNK_PARAM_DEFAULT) != 0, -1,
                                  (nnk_dtype)pd->dtype, (pd->flags & NNK_PARAM_INOUT) != 0,
                                  (pd->flags & NNK_PARAM_RAW) != 0};
    }
    /* An inout output stands for the inout input of its name (same dtype,
     * a full-shape tensor); inout outputs follow the declared ones. */
    for (int32_t p = k->nin; !what && p < k->nin + k->nout; p++) {
        if (!k->params[p].inout) {
            if (p > k->nin && k->params[p - 1].inout)
                what = "a declared output after an inout one";
            continue;
        }
        if (rt_inout_input(k, p) < 0 || k->params[p].reduced)
            what = "an inout output without its inout tensor parameter";
    }
    if (what) {
        k->desc = NULL;
        return rt_error(NNK_EINVAL, "bad kernel descriptor '%s': %s", d->name ? d->name : "?", what);
    }
    return NNK_OK;
}

static nnk_status new_kernel(const nnk_context *ctx, rt_kernel_kind kind, const char *name, nnk_kernel **out)
{
    nnk_kernel *k = rt_calloc(1, sizeof *k);
    if (!k)
        return NNK_ENOMEM;
    nnk_status s = rt_kernel_init(k, kind, ctx, name);
    if (s) {
        rt_kernel_fini(k);
        free(k);
        return s;
    }
    rt_live_inc();
    *out = k;
    return NNK_OK;
}

nnk_status nnk_kernel_from_desc(const nnk_context *ctx, const nnk_kernel_desc *desc, nnk_kernel **out)
{
    if (!desc || !out)
        return rt_error(NNK_EINVAL, "nnk_kernel_from_desc: %s is NULL", !desc ? "desc" : "out");
    nnk_kernel *k;
    nnk_status s = new_kernel(ctx, RT_KERNEL_DESC, desc->name, &k);
    if (s)
        return s;
    if ((s = adopt_desc(k, desc))) {
        nnk_kernel_free(k);
        return s;
    }
    *out = k;
    return NNK_OK;
}

nnk_status nnk_kernel_from_source(const nnk_context *ctx, const char *source, const char *symbol, nnk_kernel **out)
{
    if (!source || !symbol || !out)
        return rt_error(NNK_EINVAL, "nnk_kernel_from_source: %s is NULL", !source ? "source" : !symbol ? "symbol" : "out");
    nnk_context tmp;
    const nnk_context *c = rt_context_or_default(ctx, &tmp);
    if (!c)
        return NNK_ENOMEM;
    rt_ext *e;
    int32_t dev;
    nnk_status s0 = rt_context_device(c, &e, &dev);
    if (s0)
        return s0;
    nnk_status (*compile)(void *, int32_t, const nnk_kernel_source *, nnk_ext_kernel *) = RT_HOOK(e, kernel_compile);
    if (!compile)
        return rt_error(NNK_EUNSUPPORTED, "extension '%s' cannot compile source", e->ops->name);
    nnk_kernel *k;
    nnk_status s = new_kernel(ctx, RT_KERNEL_SOURCE, symbol, &k);
    if (s)
        return s;
    rt_instance *inst = rt_calloc(1, sizeof *inst);
    if (!inst) {
        nnk_kernel_free(k);
        return NNK_ENOMEM;
    }
    nnk_kernel_source src = {sizeof src, e->ops->target, source, symbol, k->opt_level, NULL, NNK_REDUCE_NONE};
    s = compile(e->state, dev, &src, &inst->k);
    if (!s && !inst->k.desc)
        s = rt_error(NNK_EINTERNAL, "extension '%s' compiled no descriptor", e->ops->name);
    if (s) {
        free(inst);
        nnk_kernel_free(k);
        return s;
    }
    inst->ext = e;
    inst->device = dev;
    k->instances = inst;
    k->ninstances = 1;
    if ((s = adopt_desc(k, inst->k.desc))) {
        nnk_kernel_free(k);
        return s;
    }
    *out = k;
    return NNK_OK;
}

void nnk_kernel_free(nnk_kernel *k)
{
    if (!k || k->kind == RT_KERNEL_MODULE)
        return;
    rt_kernel_fini(k);
    free(k);
    rt_live_dec();
}

const char *nnk_kernel_name(const nnk_kernel *k) { return k ? k->name : NULL; }
int nnk_kernel_is_reduction(const nnk_kernel *k) { return k ? k->reduction : 0; }
int32_t nnk_kernel_input_count(const nnk_kernel *k) { return k ? k->nin : 0; }
int32_t nnk_kernel_output_count(const nnk_kernel *k) { return k ? k->nout : 0; }

int32_t nnk_kernel_param_index(const nnk_kernel *k, const char *name)
{
    for (int32_t p = 0; k && name && p < k->nin + k->nout; p++)
        if (strcmp(k->params[p].name, name) == 0)
            return p;
    return -1;
}

int nnk_kernel_input_is_inout(const nnk_kernel *k, int32_t i, const char *name)
{
    if (!k)
        return 0;
    for (int32_t p = 0; p < k->nin; p++)
        if (name ? strcmp(k->params[p].name, name) == 0 : p == i)
            return k->params[p].inout;
    return 0;
}

int nnk_kernel_input_is_scalar(const nnk_kernel *k, int32_t i, const char *name)
{
    if (!k)
        return 0;
    for (int32_t p = 0; p < k->nin; p++)
        if (name ? strcmp(k->params[p].name, name) == 0 : p == i)
            return !k->params[p].tensor;
    return 0;
}

/* ---- launching ----------------------------------------------------------------------- */

/* Everything one launch works out. */
typedef struct call {
    nnk_kernel *k;
    const nnk_context *ctx;
    const rt_arg *slot[RT_MAX_PARAMS];   /* the argument of each parameter, or NULL */
    rt_ext *ext;
    int32_t device;
    uint8_t targs[RT_MAX_GENERICS];
    uint8_t storage[NNK_MAX_TENSORS];
    nnk_array *arrays[NNK_MAX_TENSORS];  /* tensor operands (retained), plan order */
    int32_t nin_t;                        /* tensor inputs */
    nnk_array *weak[RT_MAX_PARAMS];       /* the 0-d operands of scalars given for tensor inputs (owned) */
} call;

/* The array of parameter p's argument: the caller's, or the 0-d array of a
 * scalar given for a tensor input (NULL before make_weak_operands). */
static nnk_array *slot_array(const call *c, int32_t p)
{
    return !c->slot[p] ? NULL : c->slot[p]->array ? c->slot[p]->array : c->weak[p];
}

/* numpy's kinds of a value, in promotion order (NEP 50). */
enum { KIND_BOOL, KIND_INT, KIND_FLOAT, KIND_COMPLEX };

static int value_kind(const rt_arg *g)
{
    return g->is_bool ? KIND_BOOL : g->value.kind == RT_F64 ? KIND_FLOAT : g->value.kind == RT_C128 ? KIND_COMPLEX : KIND_INT;
}

static int type_kind(Type t)
{
    return t == T_BOOL                       ? KIND_BOOL
           : type_in_class(t, CLASS_COMPLEX) ? KIND_COMPLEX
           : type_in_class(t, CLASS_FLOAT)   ? KIND_FLOAT
                                             : KIND_INT;
}

/* With numpy's rules: an integer that type t (an integer type; not bool)
 * cannot hold is NNK_EOVERFLOW, as numpy 2's "Python integer 300 out of
 * bounds for uint8"; other values and types convert as C converts them. */
static nnk_status check_int_range(const nnk_kernel *k, const char *param, nnk_dtype t, const rt_value *v)
{
    Type ty = (Type)t;
    bool sign = type_in_class(ty, CLASS_INT);
    if ((!sign && !type_in_class(ty, CLASS_UINT)) || (v->kind != RT_I64 && v->kind != RT_U64))
        return NNK_OK;
    int bits = (int)nnk_dtype_size(t) * 8;
    bool ok;
    if (v->kind == RT_U64) /* above INT64_MAX: u64 only */
        ok = ty == T_U64;
    else if (sign)
        ok = bits >= 64 || (v->v.i >= -(INT64_C(1) << (bits - 1)) && v->v.i < (INT64_C(1) << (bits - 1)));
    else
        ok = v->v.i >= 0 && (bits >= 64 || v->v.i < (INT64_C(1) << bits));
    if (ok)
        return NNK_OK;
    char num[32];
    if (v->kind == RT_U64)
        snprintf(num, sizeof num, "%llu", (unsigned long long)v->v.u);
    else
        snprintf(num, sizeof num, "%lld", (long long)v->v.i);
    return rt_error(NNK_EOVERFLOW, "kernel '%s': integer %s out of bounds for %s (parameter '%s')", k->name, num,
                    nnk_dtype_name(t), param);
}

static void list_params(const nnk_kernel *k, rt_str *b)
{
    for (int32_t p = 0; p < k->nin + k->nout; p++)
        rt_str_printf(b, "%s%s", p ? ", " : "", k->params[p].name);
}

static nnk_status bind_args(call *c, const nnk_args *a)
{
    nnk_kernel *k = c->k;
    /* the messages name every positional argument given, not the first
     * one too many */
    int32_t givenpos = 0, givenout = 0;
    for (int32_t i = 0; i < a->n; i++)
        if (!a->items[i].name)
            *(a->items[i].out ? &givenout : &givenpos) += 1;
    int32_t npos = 0, nposout = 0, ninout = 0;
    for (int32_t p = k->nin; p < k->nin + k->nout; p++)
        ninout += k->params[p].inout;
    for (int32_t i = 0; i < a->n; i++) {
        const rt_arg *g = &a->items[i];
        int32_t p = -1;
        if (g->name) {
            for (int32_t q = 0; q < k->nin + k->nout && p < 0; q++)
                if (strcmp(k->params[q].name, g->name) == 0)
                    p = q;
            if (p < 0) {
                rt_str b = {0};
                list_params(k, &b);
                nnk_status s = rt_error(NNK_EINVAL, "kernel '%s' has no parameter '%s' (parameters: %s)", k->name,
                                        g->name, b.s ? b.s : "");
                rt_str_free(&b);
                return s;
            }
        } else if (g->out) {
            if (nposout == k->nout - ninout)
                return rt_error(NNK_EINVAL, "kernel '%s' has %d output%s%s but %d were given", k->name,
                                k->nout - ninout, k->nout - ninout == 1 ? "" : "s",
                                ninout ? " besides its inout parameters" : "", givenout);
            p = k->nin + nposout++;
        } else {
            if (npos == k->nin)
                return rt_error(NNK_EINVAL, "kernel '%s' takes %d input%s but %d were given", k->name, k->nin,
                                k->nin == 1 ? "" : "s", givenpos);
            p = npos++;
        }
        const rt_param *pm = &k->params[p];
        if (c->slot[p])
            return rt_error(NNK_EINVAL, "kernel '%s': argument '%s' given twice", k->name, pm->name);
        /* (a name finds the input first: an inout output is never named) */
        if (pm->inout && g->out)
            return rt_error(NNK_EINVAL, "kernel '%s': '%s' is an inout parameter: pass it as an input, not as an output",
                            k->name, pm->name);
        /* (with numpy's rules a scalar for a tensor input is a weak 0-d
         * operand; an inout or raw parameter takes an array all the same) */
        if (pm->tensor && !g->array && (!a->numpy_scalars || p >= k->nin || pm->inout || pm->raw))
            return rt_error(NNK_EINVAL, "kernel '%s': parameter '%s' is an array, but a scalar was given", k->name,
                            pm->name);
        if (!pm->tensor && g->array)
            return rt_error(NNK_EINVAL, "kernel '%s': parameter '%s' is a scalar, but an array was given", k->name,
                            pm->name);
        c->slot[p] = g;
    }
    for (int32_t p = 0; p < k->nin; p++) {
        const rt_param *pm = &k->params[p];
        if (c->slot[p] || (!pm->tensor && (pm->has_default || k->defaults[p].kind != RT_NONE)))
            continue;
        return rt_error(NNK_EINVAL, "kernel '%s': missing argument '%s'%s", k->name, pm->name,
                        pm->tensor ? "" : " (a scalar without a default)");
    }
    if (!k->reduction && (a->naxes >= 0 || a->keepdims)) /* numpy's ufuncs refuse keepdims too */
        return rt_error(NNK_EINVAL, "kernel '%s' is elementwise: it takes no reduction axes%s", k->name,
                        a->naxes >= 0 ? "" : " (keepdims)");
    /* An inout parameter's array is its output too: the same array at the
     * same position, which the generated code reads before it writes. */
    for (int32_t p = k->nin; p < k->nin + k->nout; p++) {
        if (!k->params[p].inout)
            continue;
        int32_t q = rt_inout_input(k, p);
        if (q < 0 || !c->slot[q])
            return rt_error(NNK_EINTERNAL, "kernel '%s': inout parameter '%s' without its input", k->name, k->params[p].name);
        c->slot[p] = c->slot[q];
    }
    return NNK_OK;
}

/* The first backend of the context that can reach every array. */
static nnk_status choose_backend(call *c)
{
    nnk_kernel *k = c->k;
    const char *why = "";
    rt_ext *e0;
    int32_t dev0;
    /* the device the context names exists (its first use says so) */
    nnk_status s = rt_context_device(c->ctx, &e0, &dev0);
    if (s)
        return rt_error_prefix(s, "kernel '%s'", k->name);
    for (int32_t b = 0; b < c->ctx->nbackends; b++) {
        rt_ext *e = c->ctx->ext[b];
        int32_t dev = c->ctx->device_id < e->ndevices ? c->ctx->device_id : 0;
        if (e->ndevices == 0)
            continue;
        bool ok = true;
        for (int32_t p = 0; ok && p < k->nin + k->nout; p++) {
            const nnk_array *x = c->slot[p] ? c->slot[p]->array : NULL;
            if (!x)
                continue;
            ok = rt_array_on_host(x) ? rt_ext_host_memory(e) : x->st->ext == e && x->st->device == dev;
            if (!ok)
                why = "the arrays are on another device";
        }
        if (ok && k->kind == RT_KERNEL_SOURCE && e != k->instances->ext)
            ok = false, why = "the kernel's source was compiled for another backend";
        if (ok && k->kind == RT_KERNEL_DESC && !RT_HOOK(e, kernel_load))
            ok = false, why = "the extension cannot load linked kernels";
        if (ok && k->kind == RT_KERNEL_MODULE && !RT_HOOK(e, kernel_compile))
            ok = false, why = "the extension cannot compile kernels";
        if (ok) {
            c->ext = e;
            c->device = dev;
            return NNK_OK;
        }
    }
    return rt_error(NNK_EUNSUPPORTED, "kernel '%s': no backend of the context (%s) can run it: %s", k->name,
                    c->ctx->str, why);
}

/* The explicit type arguments (nnk_args_type) into bound, from[v] = -2. */
static nnk_status bind_explicit(const nnk_kernel *k, const nnk_args *a, Type *bound, int32_t *from)
{
    for (int32_t i = 0; i < a->ntypes; i++) {
        int32_t v = a->types[i].index;
        if (a->types[i].name) {
            for (v = 0; v < k->ngenerics && strcmp(k->generic_names[v], a->types[i].name) != 0; v++)
                ;
        } else if (v == -1) {
            if (k->ngenerics != 1)
                return rt_error(NNK_EINVAL, "kernel '%s' has %d type variables: a type argument needs the variable's "
                                "name or index", k->name, k->ngenerics);
            v = 0;
        }
        if (v >= k->ngenerics) {
            rt_str b = {0};
            for (int32_t w = 0; w < k->ngenerics; w++)
                rt_str_printf(&b, "%s%s", w ? ", " : "", k->generic_names[w]);
            nnk_status s = a->types[i].name
                               ? rt_error(NNK_EINVAL, "kernel '%s' has no type variable '%s' (it has: %s)", k->name,
                                          a->types[i].name, b.s ? b.s : "none")
                               : rt_error(NNK_EINVAL, "kernel '%s' has no type variable %d (it has: %s)", k->name, v,
                                          b.s ? b.s : "none");
            rt_str_free(&b);
            return s;
        }
        if (from[v] == -2)
            return rt_error(NNK_EINVAL, "kernel '%s': type variable %s is given twice", k->name, k->generic_names[v]);
        Type t = (Type)a->types[i].dtype;
        if (!type_in_class(t, (TypeClass)k->classes[v]))
            return rt_error(NNK_EDTYPE, "kernel '%s': type variable %s must be %s, but the type argument given is %s",
                            k->name, k->generic_names[v], class_name((TypeClass)k->classes[v]), type_name(t));
        bound[v] = t;
        from[v] = -2;
    }
    return NNK_OK;
}

/* Binds the type variables (module kernels) and the storage dtypes. */
static nnk_status bind_types(call *c, const nnk_args *a)
{
    nnk_kernel *k = c->k;
    Type bound[RT_MAX_GENERICS];
    int32_t from[RT_MAX_GENERICS];
    for (int32_t v = 0; v < k->ngenerics; v++)
        bound[v] = T_NONE, from[v] = -1;
    /* explicit type arguments first, then inputs; outputs only for
     * variables neither binds */
    nnk_status s = bind_explicit(k, a, bound, from);
    if (s)
        return s;
    for (int32_t pass = 0; pass < 2; pass++) {
        for (int32_t p = pass ? k->nin : 0; p < (pass ? k->nin + k->nout : k->nin); p++) {
            const rt_param *pm = &k->params[p];
            if (!pm->tensor || pm->typevar < 0 || !c->slot[p] || !c->slot[p]->array) /* (weak scalars below) */
                continue;
            int32_t v = pm->typevar;
            if (from[v] == -2 || (pass && from[v] >= 0 && from[v] < k->nin))
                continue;
            Type t = (Type)c->slot[p]->array->dtype;
            bound[v] = bound[v] == T_NONE ? t : type_promote(bound[v], t);
            if (from[v] < 0)
                from[v] = p;
        }
    }
    for (int32_t v = 0; v < k->ngenerics; v++) {
        TypeClass cls = (TypeClass)k->classes[v];
        /* Scalars given for tensor inputs are weak (numpy's NEP 50): the
         * arrays bind the variable, a scalar of a higher kind lifts it
         * (i32 and 2.5: f64; f32 and 1j: c64), and scalars alone give
         * bool, i64 (u64 for an integer above INT64_MAX), f64 or c128. */
        int wkind = -1, wfrom = -1;
        bool wu64 = false;
        for (int32_t p = 0; p < k->nin; p++) {
            const rt_arg *g = c->slot[p];
            if (!g || g->array || !k->params[p].tensor || k->params[p].typevar != v)
                continue;
            if (value_kind(g) > wkind)
                wkind = value_kind(g), wfrom = p;
            wu64 |= g->value.kind == RT_U64;
        }
        if (wkind >= 0 && from[v] != -2) { /* (an explicit type argument binds it: they convert) */
            static const Type dflt[] = {T_BOOL, T_I64, T_F64, T_C128};
            if (bound[v] == T_NONE) {
                bound[v] = wkind == KIND_INT && wu64 ? T_U64 : dflt[wkind];
                from[v] = wfrom;
                /* a class the kind is not in: the next kind that is, as
                 * numpy's np.sin(2) is float64 */
                for (int kd = wkind + 1; kd <= KIND_COMPLEX && !type_in_class(bound[v], cls); kd++)
                    if (kd >= KIND_INT && type_in_class(dflt[kd], cls))
                        bound[v] = dflt[kd];
            } else if (wkind > type_kind(bound[v])) {
                bound[v] = wkind == KIND_COMPLEX && type_kind(bound[v]) == KIND_FLOAT ? (bound[v] == T_F64 ? T_C128 : T_C64)
                                                                                      : dflt[wkind];
                from[v] = wfrom;
            }
        }
        if (bound[v] == T_NONE) {
            Type t = (Type)c->ctx->type_config;
            bound[v] = type_in_class(t, cls) ? t : class_default(cls);
        }
        if (!type_in_class(bound[v], cls))
            return rt_error(NNK_EDTYPE, "kernel '%s': type variable %s must be %s, but argument '%s' makes it %s",
                            k->name, k->generic_names[v], class_name(cls), k->params[from[v]].name,
                            type_name(bound[v]));
        c->targs[v] = (uint8_t)bound[v];
    }
    int32_t t = 0;
    for (int32_t p = 0; p < k->nin + k->nout; p++) {
        const rt_param *pm = &k->params[p];
        if (!pm->tensor)
            continue;
        nnk_dtype logical = pm->typevar >= 0 ? (nnk_dtype)c->targs[pm->typevar] : pm->type;
        nnk_dtype have = c->slot[p] && c->slot[p]->array ? c->slot[p]->array->dtype : logical;
        if (c->slot[p] && !c->slot[p]->array && c->slot[p]->value.kind == RT_C128 && logical != NNK_C64 &&
            logical != NNK_C128)
            return rt_error(NNK_EDTYPE, "kernel '%s': parameter '%s' is %s, but its argument is complex", k->name,
                            pm->name, nnk_dtype_name(logical));
        if (k->kind != RT_KERNEL_MODULE && have != logical)
            return rt_error(NNK_EDTYPE, "kernel '%s': parameter '%s' has dtype %s, but the array has dtype %s", k->name,
                            pm->name, nnk_dtype_name(logical), nnk_dtype_name(have));
        /* a complex array read or written as a real parameter would lose
         * the imaginary part (numpy refuses the cast too) */
        if ((have == NNK_C64 || have == NNK_C128) && logical != NNK_C64 && logical != NNK_C128)
            return rt_error(NNK_EDTYPE, "kernel '%s': parameter '%s' is %s, but the array is %s (pass real(z) or abs(z))",
                            k->name, pm->name, nnk_dtype_name(logical), nnk_dtype_name(have));
        c->storage[t++] = (uint8_t)have;
    }
    return NNK_OK;
}

/* The 0-d arrays of the scalars given for tensor inputs, on the chosen
 * device, in the parameter's bound type (integers range-checked). */
static nnk_status make_weak_operands(call *c)
{
    nnk_kernel *k = c->k;
    int32_t t = 0;
    for (int32_t p = 0; p < k->nin + k->nout; p++) {
        const rt_param *pm = &k->params[p];
        if (!pm->tensor)
            continue;
        const rt_arg *g = c->slot[p];
        nnk_dtype dt = (nnk_dtype)c->storage[t++];
        if (!g || g->array)
            continue;
        nnk_status s = check_int_range(k, pm->name, dt, &g->value);
        if (s)
            return s;
        const rt_value *v = &g->value;
        nnk_scalar x = v->kind == RT_F64 ? rt_scalar_from_f64(dt, v->v.f)
                       : v->kind == RT_U64 ? rt_scalar_from_u64(dt, v->v.u)
                       : v->kind == RT_C128 ? rt_scalar_from_c128(dt, v->v.c[0], v->v.c[1])
                                            : rt_scalar_from_i64(dt, v->v.i);
        if ((s = rt_array_alloc(c->ext, c->device, dt, 0, NULL, &c->weak[p])) ||
            (s = nnk_array_from_host_into(c->weak[p], dt, &x, nnk_dtype_size(dt))))
            return rt_error_prefix(s, "kernel '%s': the 0-d array of argument '%s'", k->name, pm->name);
    }
    return NNK_OK;
}

/* The instance for the call's backend and dtypes, made on first use. */
static nnk_status find_instance(call *c, rt_instance **out)
{
    nnk_kernel *k = c->k;
    pthread_mutex_lock(&k->lock);
    for (rt_instance *i = k->instances; i; i = i->next) {
        if (i->ext == c->ext && i->device == c->device && memcmp(i->targs, c->targs, sizeof c->targs) == 0 &&
            memcmp(i->storage, c->storage, sizeof c->storage) == 0) {
            pthread_mutex_unlock(&k->lock);
            *out = i;
            return NNK_OK;
        }
    }
    rt_instance *i = rt_calloc(1, sizeof *i);
    nnk_status s = i ? NNK_OK : NNK_ENOMEM;
    if (i) {
        i->ext = c->ext;
        i->device = c->device;
        memcpy(i->targs, c->targs, sizeof c->targs);
        memcpy(i->storage, c->storage, sizeof c->storage);
        if (k->kind == RT_KERNEL_MODULE) {
            s = rt_module_instance(k, i);
        } else {
            nnk_status (*ld)(void *, int32_t, const nnk_kernel_desc *, nnk_ext_kernel *) = RT_HOOK(c->ext, kernel_load);
            s = ld(c->ext->state, c->device, k->desc, &i->k);
            if (!s && !i->k.desc)
                i->k.desc = k->desc;
        }
    }
    if (!s) {
        i->next = k->instances;
        k->instances = i;
        k->ninstances++;
        *out = i;
    } else {
        free(i);
    }
    pthread_mutex_unlock(&k->lock);
    return s;
}

static void format_shape(char *buf, size_t n, int32_t ndim, const int64_t *shape)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int32_t d = 0; d < ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (len < n)
        snprintf(buf + len, n - len, ndim == 1 ? ",)" : ")");
}

/* The iteration shape of the inputs (numpy broadcasting; plan.h checks it
 * again with full messages), for allocating outputs. */
static nnk_status result_shapes(call *c, const nnk_args *a, int32_t *ndim, int64_t *shape, int32_t *rndim,
                                int64_t *rshape)
{
    nnk_kernel *k = c->k;
    *ndim = 0;
    bool any = false;
    for (int32_t p = 0; p < k->nin + k->nout; p++) {
        const nnk_array *x = slot_array(c, p);
        /* a raw parameter takes no part in the iteration space */
        if (!x || k->params[p].raw || (p >= k->nin && (k->params[p].reduced || any)))
            continue;
        if (p >= k->nin) { /* no input: a given full-shape output decides */
            *ndim = x->ndim;
            memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
            any = true;
            break;
        }
        any = true;
        for (int32_t d = *ndim; d < x->ndim; d++) {
            memmove(shape + 1, shape, sizeof(int64_t) * (size_t)d);
            shape[0] = 1;
        }
        if (x->ndim > *ndim)
            *ndim = x->ndim;
        for (int32_t d = 0; d < x->ndim; d++) {
            int64_t *e = &shape[*ndim - x->ndim + d];
            if (x->shape[d] != 1 && *e != 1 && *e != x->shape[d]) {
                char have[256], want[256];
                format_shape(have, sizeof have, x->ndim, x->shape);
                format_shape(want, sizeof want, *ndim, shape);
                return rt_error(NNK_ESHAPE, "kernel '%s': shapes do not broadcast: argument '%s' has shape %s where the others give %s",
                                k->name, k->params[p].name, have, want);
            }
            if (*e == 1)
                *e = x->shape[d];
        }
    }
    if (a->nshape >= 0) {
        bool same = *ndim == a->nshape;
        for (int32_t d = 0; same && d < *ndim; d++)
            same = shape[d] == a->shape[d];
        if (any && !same) {
            char have[256], want[256];
            format_shape(have, sizeof have, a->nshape, a->shape);
            format_shape(want, sizeof want, *ndim, shape);
            return rt_error(NNK_ESHAPE, "kernel '%s': the iteration shape given, %s, is not the arguments' %s", k->name,
                            have, want);
        }
        if (!any && k->reduction)
            return rt_error(NNK_EINVAL, "kernel '%s' is a reduction: its iteration shape comes from a tensor argument "
                            "(a zero-strided view costs no memory), not an explicit shape", k->name);
        *ndim = a->nshape;
        memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->nshape);
        any = true;
    }
    if (!any)
        return rt_error(NNK_EINVAL, "kernel '%s' has no array input that is not raw to take its shape from: pass its outputs "
                        "(nnk_args_out) or its shape (nnk_args_shape)", k->name);
    uint8_t red[NNK_MAX_DIMS] = {0};
    if (k->reduction) {
        for (int32_t i = 0; i < (a->naxes < 0 ? *ndim : a->naxes); i++) {
            int32_t ax = a->naxes < 0 ? i : a->axes[i] < 0 ? a->axes[i] + *ndim : a->axes[i];
            if (ax < 0 || ax >= *ndim || red[ax])
                return rt_error(NNK_ESHAPE, "kernel '%s': reduction axis %d is %s for %d dimensions", k->name,
                                a->naxes < 0 ? i : a->axes[i], ax < 0 || ax >= *ndim ? "out of range" : "repeated",
                                *ndim);
            red[ax] = 1;
        }
    }
    *rndim = 0;
    for (int32_t d = 0; d < *ndim; d++)
        if (!red[d] || a->keepdims)
            rshape[(*rndim)++] = red[d] ? 1 : shape[d];
    return NNK_OK;
}

/* The message of an index out of range (nnk_plan.range, set by the kernel). */
/* e comes back from the kernel (device memory for CUDA and OpenCL): its
 * raw slot is bounded by the launch's own count before it names one. */
static nnk_status range_error(const nnk_kernel *k, const nnk_range_error *e, const int32_t *rawparam, int32_t nraw)
{
    const char *name = e->raw >= 0 && e->raw < nraw ? k->params[rawparam[e->raw]].name : "(unknown)";
    if (e->raw < 0)
        return rt_error(NNK_ERANGE, "kernel '%s': index(%lld) of an iteration space of %lld dimensions", k->name,
                        (long long)e->index, (long long)e->extent);
    switch (e->dim) {
    case -1:
        return rt_error(NNK_ERANGE, "kernel '%s': flat index %lld of raw parameter '%s' is out of range [0, %lld)",
                        k->name, (long long)e->index, name, (long long)e->extent);
    case -2:
        return rt_error(NNK_ERANGE, "kernel '%s': raw parameter '%s' has %lld dimension%s but is indexed with %lld",
                        k->name, name, (long long)e->extent, e->extent == 1 ? "" : "s", (long long)e->index);
    case -3:
        return rt_error(NNK_ERANGE, "kernel '%s': shape(%s, %lld) of an array of %lld dimensions", k->name, name,
                        (long long)e->index, (long long)e->extent);
    default:
        return rt_error(NNK_ERANGE, "kernel '%s': index %lld of raw parameter '%s' is out of range [0, %lld) in dimension %d",
                        k->name, (long long)e->index, name, (long long)e->extent, e->dim);
    }
}

static nnk_status launch(call *c, nnk_args *a)
{
    nnk_kernel *k = c->k;
    nnk_status s = bind_args(c, a);
    if (s || (s = choose_backend(c)) || (s = bind_types(c, a)) || (s = make_weak_operands(c)))
        return s;
    rt_instance *inst;
    if ((s = find_instance(c, &inst)))
        return s;
    const nnk_kernel_desc *d = inst->k.desc;
    if (d->nparams != k->nin || d->nouts != k->nout || (d->kind == NNK_KIND_REDUCTION) != k->reduction)
        return rt_error(NNK_EINTERNAL, "kernel '%s': the compiled descriptor does not match the kernel's interface",
                        k->name);

    /* Tensor operands in plan order; missing outputs are allocated. */
    int32_t ndim = -1, rndim = 0, nt = 0, nraw = 0;
    int64_t shape[NNK_MAX_DIMS], rshape[NNK_MAX_DIMS];
    uint8_t reduced[NNK_MAX_TENSORS] = {0};
    int8_t rawslot[NNK_MAX_TENSORS] = {0};
    int32_t rawparam[NNK_MAX_RAW];
    for (int32_t p = 0; p < k->nin + k->nout; p++) {
        if (!(d->params[p].flags & NNK_PARAM_TENSOR))
            continue;
        nnk_array *x = c->slot[p] ? nnk_array_retain(slot_array(c, p)) : NULL;
        bool red = (d->params[p].flags & NNK_PARAM_REDUCED) != 0;
        if (!x) {
            if (ndim < 0 && (s = result_shapes(c, a, &ndim, shape, &rndim, rshape)))
                return s;
            s = rt_array_alloc(c->ext, c->device, (nnk_dtype)c->storage[nt], red ? rndim : ndim, red ? rshape : shape,
                               &x);
            if (s)
                return s;
        }
        /* a given reduced output has exactly the shape the axes and
         * keepdims make (numpy's check; the plan builder, which generated
         * code shares without a keepdims flag, takes either) */
        if (c->slot[p] && red && !(d->params[p].flags & NNK_PARAM_RAW)) {
            if (ndim < 0 && (s = result_shapes(c, a, &ndim, shape, &rndim, rshape))) {
                nnk_array_free(x);
                return s;
            }
            bool same = x->ndim == rndim;
            for (int32_t e = 0; same && e < rndim; e++)
                same = x->shape[e] == rshape[e];
            if (!same) {
                char have[256], want[256], full[256], axes[256] = "all axes";
                format_shape(have, sizeof have, x->ndim, x->shape);
                format_shape(want, sizeof want, rndim, rshape);
                format_shape(full, sizeof full, ndim, shape);
                if (a->naxes >= 0) {
                    int64_t ax[NNK_MAX_DIMS];
                    for (int32_t e = 0; e < a->naxes; e++)
                        ax[e] = a->axes[e];
                    memcpy(axes, "axis=", 5);
                    format_shape(axes + 5, sizeof axes - 5, a->naxes, ax);
                }
                nnk_array_free(x);
                return rt_error(NNK_ESHAPE, "kernel '%s': output '%s' has shape %s, but the reduction of shape %s over %s "
                                "%s keepdims gives %s", k->name, k->params[p].name, have, full, axes,
                                a->keepdims ? "with" : "without", want);
            }
        }
        c->arrays[nt] = x;
        reduced[nt] = red;
        if (d->params[p].flags & NNK_PARAM_RAW) {
            if (p >= k->nin || nraw == NNK_MAX_RAW)
                return rt_error(NNK_EINTERNAL, "kernel '%s': a bad raw parameter '%s'", k->name, k->params[p].name);
            rawparam[nraw] = p;
            rawslot[nt] = (int8_t)++nraw;
        }
        if (p < k->nin)
            c->nin_t++;
        nt++;
    }
    nnk_view views[NNK_MAX_TENSORS];
    const nnk_view *vp[NNK_MAX_TENSORS];
    for (int32_t t = 0; t < nt; t++) {
        nnk_array *x = c->arrays[t];
        views[t] = (nnk_view){rt_array_ptr(x), x->ndim, x->shape, x->strides};
        vp[t] = &views[t];
    }
    /* raw parameters: 0-dimensional in the iteration space, their own
     * views in plan.raw (language.md, "Raw parameters") */
    nnk_range_error range;
    nnk_plan plan;
    for (int32_t t = 0; t < nt; t++)
        if (rawslot[t])
            reduced[t] = 1;
    s = rt_plan_build(&plan, c->nin_t, nt - c->nin_t, vp, reduced, k->reduction, a->naxes < 0 ? 0 : a->naxes,
                      a->naxes < 0 ? NULL : a->axes);
    /* (every launch: index(d) reports a range error too) */
    if (!s)
        s = rt_plan_raw(&plan, nt, vp, rawslot, &range);
    if (s)
        return rt_error_prefix(s, "kernel '%s'", k->name);
    /* An input an output overlaps other than element for element is read
     * from a copy taken first, as numpy does (docs/runtime.md, "In place");
     * the exact alias (out=x) needs none: the generated code then takes
     * its loops without restrict. */
    uint8_t esize[NNK_MAX_TENSORS];
    for (int32_t t = 0; t < nt; t++)
        esize[t] = (uint8_t)nnk_dtype_size(c->arrays[t]->dtype);
    uint32_t copy = rt_plan_overlapping_inputs(&plan, c->nin_t, esize, reduced);
    if (copy) {
        for (int32_t t = 0; t < c->nin_t; t++) {
            if (!(copy >> t & 1))
                continue;
            nnk_array *x = c->arrays[t], *y;
            if ((s = nnk_array_to(x, NULL, x->dtype, &y)))
                return rt_error_prefix(s, "kernel '%s': copying an input that an output overlaps", k->name);
            nnk_array_free(x);
            c->arrays[t] = y;
            views[t] = (nnk_view){rt_array_ptr(y), y->ndim, y->shape, y->strides};
        }
        s = rt_plan_build(&plan, c->nin_t, nt - c->nin_t, vp, reduced, k->reduction, a->naxes < 0 ? 0 : a->naxes,
                          a->naxes < 0 ? NULL : a->axes);
        if (!s)
            s = rt_plan_raw(&plan, nt, vp, rawslot, &range);
        if (s)
            return rt_error_prefix(s, "kernel '%s'", k->name);
    }
    int32_t j = 0;
    for (int32_t p = 0; p < k->nin; p++) {
        const nnk_param_desc *pd = &d->params[p];
        if (pd->flags & NNK_PARAM_TENSOR)
            continue;
        if (j == NNK_MAX_SCALARS) /* rt_kernel_init and sema bound them; never past the array */
            return rt_error(NNK_EINTERNAL, "kernel '%s' has more than %d scalar parameters", k->name, NNK_MAX_SCALARS);
        const rt_value *v = c->slot[p] ? &c->slot[p]->value : &k->defaults[p];
        nnk_dtype t = (nnk_dtype)pd->dtype;
        if (v->kind == RT_C128 && t != NNK_C64 && t != NNK_C128)
            return rt_error(NNK_EDTYPE, "kernel '%s': scalar parameter '%s' is %s, but its argument is complex",
                            k->name, pd->name, nnk_dtype_name(t));
        if (a->numpy_scalars && (s = check_int_range(k, pd->name, t, v)))
            return s;
        plan.scalars[j++] = v->kind == RT_F64 ? rt_scalar_from_f64(t, v->v.f)
                            : v->kind == RT_I64 ? rt_scalar_from_i64(t, v->v.i)
                            : v->kind == RT_U64 ? rt_scalar_from_u64(t, v->v.u)
                            : v->kind == RT_C128 ? rt_scalar_from_c128(t, v->v.c[0], v->v.c[1])
                                                : pd->dflt;
    }
    if (d->argmax_empty_error && plan.nreduced == 0 && plan.nkept > 0)
        return rt_error(NNK_ESHAPE, "kernel '%s': argmax/argmin of an empty slice", k->name);
    /* (the C, CUDA and OpenCL back ends have raw views and the range error) */
    if (nraw && c->ext->ops->target != NNK_TARGET_C && c->ext->ops->target != NNK_TARGET_CUDA &&
        c->ext->ops->target != NNK_TARGET_OPENCL)
        return rt_error(NNK_EUNSUPPORTED, "kernel '%s': raw parameters run on the cpu, cuda and opencl backends only "
                        "(not '%s')", k->name, c->ext->ops->name);
    if ((s = c->ext->ops->launch(c->ext->state, c->device, &inst->k, &plan)))
        return s;
    if (range.set)
        return range_error(k, &range, rawparam, nraw);
    for (int32_t t = c->nin_t; t < nt; t++) {
        a->outputs[a->nout++] = c->arrays[t];
        c->arrays[t] = NULL;
    }
    return NNK_OK;
}

nnk_status nnk_launch(nnk_kernel *k, nnk_args *a)
{
    if (!k || !a)
        return rt_error(NNK_EINVAL, "nnk_launch: %s is NULL", !k ? "kernel" : "args");
    clear_outputs(a);
    nnk_context tmp;
    call c = {.k = k};
    c.ctx = a->has_ctx ? &a->ctx : rt_context_or_default(k->ctx, &tmp);
    if (!c.ctx)
        return NNK_ENOMEM;
    nnk_status s = launch(&c, a);
    for (int32_t t = 0; t < NNK_MAX_TENSORS; t++)
        nnk_array_free(c.arrays[t]);
    for (int32_t p = 0; p < RT_MAX_PARAMS; p++)
        nnk_array_free(c.weak[p]);
    return s;
}

/* ---- linked descriptors for nnkc fat objects (NAME_run, NAME_cuda) ------------ */

/* The kernels nnk_launch_desc made, one per descriptor.  They are not
 * counted as live objects: the runtime owns them (nnk_shutdown frees
 * them), so an application that used NAME_run still tears down at exit. */
static struct {
    pthread_mutex_t lock;
    const nnk_kernel_desc **descs;
    nnk_kernel **kernels;
    int32_t n, cap;
} linked = {.lock = PTHREAD_MUTEX_INITIALIZER};

void rt_linked_atfork(rt_fork_phase phase)
{
    if (phase == RT_FORK_PREPARE)
        pthread_mutex_lock(&linked.lock);
    else
        pthread_mutex_unlock(&linked.lock);
}

static nnk_status linked_kernel(const nnk_kernel_desc *desc, nnk_kernel **out)
{
    pthread_mutex_lock(&linked.lock);
    for (int32_t i = 0; i < linked.n; i++)
        if (linked.descs[i] == desc) {
            *out = linked.kernels[i];
            pthread_mutex_unlock(&linked.lock);
            return NNK_OK;
        }
    nnk_status s = NNK_OK;
    if (linked.n == linked.cap) {
        int32_t cap = linked.cap ? 2 * linked.cap : 16;
        const nnk_kernel_desc **d = realloc(linked.descs, (size_t)cap * sizeof *d);
        if (d)
            linked.descs = d;
        nnk_kernel **k = d ? realloc(linked.kernels, (size_t)cap * sizeof *k) : NULL;
        if (k)
            linked.kernels = k, linked.cap = cap;
        else
            s = rt_error(NNK_ENOMEM, "out of memory");
    }
    nnk_kernel *k = NULL;
    if (!s && !(s = nnk_kernel_from_desc(NULL, desc, &k))) {
        rt_live_dec();
        linked.descs[linked.n] = desc;
        linked.kernels[linked.n++] = k;
        *out = k;
    }
    pthread_mutex_unlock(&linked.lock);
    return s;
}

nnk_status nnk_launch_desc(const nnk_kernel_desc *desc, nnk_args *args)
{
    if (!desc || !args)
        return rt_error(NNK_EINVAL, "nnk_launch_desc: %s is NULL", !desc ? "desc" : "args");
    nnk_kernel *k;
    nnk_status s = linked_kernel(desc, &k);
    return s ? s : nnk_launch(k, args);
}

void rt_linked_shutdown(void)
{
    pthread_mutex_lock(&linked.lock);
    for (int32_t i = 0; i < linked.n; i++) {
        rt_live_inc();
        nnk_kernel_free(linked.kernels[i]);
    }
    free(linked.descs);
    free(linked.kernels);
    linked.descs = NULL;
    linked.kernels = NULL;
    linked.n = linked.cap = 0;
    pthread_mutex_unlock(&linked.lock);
}

nnk_status nnk_launch_desc_stream(const char *ext, const nnk_kernel_desc *desc, const nnk_plan *plan, void *stream)
{
    if (!desc || !plan)
        return rt_error(NNK_EINVAL, "nnk_launch_desc_stream: %s is NULL", !desc ? "desc" : "plan");
    if (desc->abi != NNK_ABI_VERSION)
        return rt_error(NNK_EABI, "kernel descriptor for ABI version %d; the runtime has version %d", desc->abi,
                        NNK_ABI_VERSION);
    const char *name = ext ? ext : "cuda";
    rt_ext *e;
    nnk_status s = rt_ext_import(name, strlen(name), &e);
    if (s)
        return s;
    nnk_status (*hook)(void *, const nnk_kernel_desc *, const nnk_plan *, void *) = RT_HOOK(e, launch_stream);
    if (!hook)
        return rt_error(NNK_EUNSUPPORTED, "extension '%s' cannot run linked kernels on a caller's stream", name);
    if (e->ndevices == 0) {
        const char *why = nnk_extension_status((nnk_extension *)e);
        return rt_error(NNK_EUNSUPPORTED, "extension '%s' has no devices%s%s", name, why && *why ? ": " : "",
                        why ? why : "");
    }
    if (desc->argmax_empty_error && plan->nreduced == 0 && plan->nkept > 0)
        return rt_error(NNK_ESHAPE, "kernel '%s': argmax/argmin of an empty slice", desc->name ? desc->name : "?");
    return hook(e->state, desc, plan, stream);
}
