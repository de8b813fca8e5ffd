/* cudnn_ext.c - the `cudnn` extension (libnnk_ext_cudnn.so): the cuda
 * extension's device code (cuda_core.c, linked in) plus cuDNN, loaded with
 * dlopen, for the reductions it has: an instance the runtime reports as a
 * plain reduction (nnk_kernel_source.reduce_op: sum, prod, min, max, amax,
 * mean, norm1, norm2 of one f16/f32/f64 tensor, from libnnkc's
 * nnkc_module_reduce_op) runs with cudnnReduceTensor when the call's
 * layout suits cuDNN (at most 8 dimensions after merging, positive
 * strides, a non-empty slice); everything else runs the generated CUDA.
 *
 * Contexts list "cudnn:T, cuda:T, cpu:float" (T: half then float with
 * type_config=half).  Without cuDNN the extension still has the GPUs, its
 * contexts list "cuda:T, cpu:float" (the fallback), and its status says
 * why.  Environment: NNK_CUDNN (path of libcudnn), NNK_CUDNN_DISABLE=1
 * (never call cuDNN, for comparisons). */
#include "config.h"

#include "cuda_core.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NNK_CUDA_HOME
#define NNK_CUDA_HOME ""
#endif

typedef struct dnn_fns {
#define NNK_X(name, sym, ret, args) ret(*name) args;
    NNK_CUDNN_FUNCTIONS(NNK_X)
#undef NNK_X
} dnn_fns;

/* cuDNN's descriptors of one call shape (dtype, op, dimensions, strides),
 * made once and kept: creating and setting three descriptors per call
 * costs more than a small reduction. */
enum { DNN_SHAPES = 16 };
typedef struct dnn_shape {
    bool used;
    int dt, op, nd, adims[12], astr[12], cdims[12], cstr[12];
    cudnnTensorDescriptor_t a, c;
    cudnnReduceTensorDescriptor_t r;
    size_t ws_bytes;
    unsigned long last;        /* for replacing the least recently used */
} dnn_shape;

/* One handle per device, used under the device's lock: a cudnnHandle_t
 * is not safe to use from two threads at once, and cudnnReduceTensor only
 * queues work on the stream, so the lock is held for microseconds. */
typedef struct dnn_device {
    pthread_mutex_t lock;
    cudnnHandle_t handle;      /* made on first use */
    dnn_shape shapes[DNN_SHAPES];
    unsigned long clock;
} dnn_device;

typedef struct dnn_state {
    cu_state *cu;
    void *lib;
    dnn_fns f;
    bool usable;               /* cuDNN loaded (and not disabled) */
    size_t version;
    char why[1024];            /* cuDNN found, or why not */
    pthread_mutex_t lock;      /* the counters */
    dnn_device *devs;          /* per device */
    unsigned long by_cudnn, by_cuda, shapes_made;
} dnn_state;

static void load_cudnn(dnn_state *D)
{
    const nnk_host_api *host = D->cu->host;
    const char *dis = host->getenv("NNK_CUDNN_DISABLE");
    if (dis && strcmp(dis, "0") != 0 && *dis) {
        snprintf(D->why, sizeof D->why, "cuDNN disabled (NNK_CUDNN_DISABLE)");
        return;
    }
    const char *path = host->getenv("NNK_CUDNN");
    size_t len = (size_t)snprintf(D->why, sizeof D->why, "cuDNN unavailable; tried:");
    const char *names[] = {"libcudnn.so.9", "libcudnn.so.8"};
    if (path && *path) {
        if (!(D->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
            len += (size_t)snprintf(D->why + len, sizeof D->why - len, " %s", dlerror());
    } else {
        for (size_t i = 0; !D->lib && i < 2; i++) {
            if (!(D->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) && len < sizeof D->why)
                len += (size_t)snprintf(D->why + len, sizeof D->why - len, " %s;", dlerror());
        }
        const char *homes[] = {host->getenv("NNK_CUDA_HOME"), NNK_CUDA_HOME, host->getenv("CUDA_HOME")};
        for (size_t h = 0; !D->lib && h < 3; h++) {
            if (!homes[h] || !*homes[h])
                continue;
            for (size_t i = 0; !D->lib && i < 2; i++) {
                char p[1200];
                snprintf(p, sizeof p, "%s/lib64/%s", homes[h], names[i]);
                D->lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
            }
        }
    }
    if (!D->lib)
        return;
#define NNK_X(name, sym, ret, args)                                                                         \
    if (!(*(void **)&D->f.name = dlsym(D->lib, sym))) {                                                        \
        snprintf(D->why, sizeof D->why, "cuDNN unavailable: the library lacks %s", sym);                       \
        return;                                                                                            \
    }
    NNK_CUDNN_FUNCTIONS(NNK_X)
#undef NNK_X
    D->version = D->f.cudnnGetVersion();
    snprintf(D->why, sizeof D->why, "cuDNN %zu.%zu.%zu", D->version / 10000 >= 1 ? D->version / 10000 : D->version / 1000,
             D->version / 10000 >= 1 ? D->version / 100 % 100 : D->version / 100 % 10, D->version % 100);
    D->usable = true;
}

static nnk_status init(const nnk_host_api *host, void **state)
{
    dnn_state *D = calloc(1, sizeof *D);
    if (!D)
        return host->set_error(NNK_ENOMEM, "cudnn: out of memory");
    nnk_status s = cu_init(host, "cudnn", &D->cu);
    if (s) {
        free(D);
        return s;
    }
    pthread_mutex_init(&D->lock, NULL);
    load_cudnn(D);
    if (D->cu->ndevices > 0 && !(D->devs = calloc((size_t)D->cu->ndevices, sizeof *D->devs))) {
        cu_fini(D->cu);
        pthread_mutex_destroy(&D->lock);
        free(D);
        return host->set_error(NNK_ENOMEM, "cudnn: out of memory");
    }
    for (int i = 0; i < D->cu->ndevices; i++)
        pthread_mutex_init(&D->devs[i].lock, NULL);
    *state = D;
    return NNK_OK;
}

static void drop_shape(dnn_state *D, dnn_shape *sh)
{
    if (sh->r)
        D->f.cudnnDestroyReduceTensorDescriptor(sh->r);
    if (sh->c)
        D->f.cudnnDestroyTensorDescriptor(sh->c);
    if (sh->a)
        D->f.cudnnDestroyTensorDescriptor(sh->a);
    memset(sh, 0, sizeof *sh);
}

static void fini(void *state)
{
    dnn_state *D = state;
    for (int i = 0; i < D->cu->ndevices; i++) {
        dnn_device *dv = &D->devs[i];
        if (dv->handle && cu_enter(D->cu, i) == NNK_OK) {
            for (int k = 0; k < DNN_SHAPES; k++)
                if (dv->shapes[k].used)
                    drop_shape(D, &dv->shapes[k]);
            D->f.cudnnDestroy(dv->handle);
            cu_leave(D->cu);
        }
        pthread_mutex_destroy(&dv->lock);
    }
    free(D->devs);
    cu_fini(D->cu);
    pthread_mutex_destroy(&D->lock);
    free(D);
}

/* In a buffer of the calling thread, as cu_status's. */
static _Thread_local char status_buf[3072];

static const char *status(void *state)
{
    dnn_state *D = state;
    pthread_mutex_lock(&D->lock);
    snprintf(status_buf, sizeof status_buf, "%s%s; %lu reduction%s by cuDNN (%lu shape%s described), %lu by generated CUDA; %s",
             D->why, D->usable ? "" : " (contexts fall back to cuda)", D->by_cudnn, D->by_cudnn == 1 ? "" : "s",
             D->shapes_made, D->shapes_made == 1 ? "" : "s", D->by_cuda, cu_status(D->cu));
    pthread_mutex_unlock(&D->lock);
    return status_buf;
}

/* NNabla's backend list for cudnn: cudnn:T, cuda:T, cpu:float. */
static nnk_status context(void *state, nnk_context_spec *spec)
{
    dnn_state *D = state;
    if (spec->nkw > 0)
        return D->cu->host->set_error(NNK_EINVAL, "context of extension 'cudnn': unknown key '%s' (known: device_id, type_config)",
                                      spec->kw[0].key);
    int n = 0;
    const char *exts[2] = {"cudnn", "cuda"};
    for (int e = D->usable ? 0 : 1; e < 2; e++) {
        if (spec->type_config == NNK_F16)
            snprintf(spec->backends[n++], 32, "%s:half", exts[e]);
        snprintf(spec->backends[n++], 32, "%s:float", exts[e]);
    }
    snprintf(spec->backends[n++], 32, "cpu:float");
    spec->nbackends = n;
    return NNK_OK;
}

static nnk_status get_device_count(void *st, int32_t *n) { return cu_get_device_count(((dnn_state *)st)->cu, n); }
static nnk_status get_devices(void *st, nnk_device_info *o, int32_t cap)
{
    return cu_get_devices(((dnn_state *)st)->cu, o, cap);
}
static nnk_status get_device_props(void *st, int32_t d, nnk_device_props *o)
{
    return cu_get_device_props(((dnn_state *)st)->cu, d, o);
}
static nnk_status device_synchronize(void *st, int32_t d) { return cu_device_synchronize(((dnn_state *)st)->cu, d); }
static nnk_status clear_memory_cache(void *st) { return cu_clear_memory_cache(((dnn_state *)st)->cu); }
static nnk_status mem_alloc(void *st, int32_t d, size_t n, void **p) { return cu_mem_alloc(((dnn_state *)st)->cu, d, n, p); }
static void mem_free(void *st, int32_t d, void *p) { cu_mem_free(((dnn_state *)st)->cu, d, p); }
static nnk_status memset_zero(void *st, int32_t d, void *p, size_t n)
{
    return cu_memset_zero(((dnn_state *)st)->cu, d, p, n);
}
static nnk_status copy(void *st, int32_t d, nnk_copy_kind k, void *dst, const void *src, size_t n)
{
    return cu_copy(((dnn_state *)st)->cu, d, k, dst, src, n);
}
static nnk_status kernel_compile(void *st, int32_t d, const nnk_kernel_source *src, nnk_ext_kernel *out)
{
    return cu_kernel_compile(((dnn_state *)st)->cu, d, src, out);
}
static nnk_status kernel_load(void *st, int32_t d, const nnk_kernel_desc *desc, nnk_ext_kernel *out)
{
    return cu_kernel_load(((dnn_state *)st)->cu, d, desc, out);
}
static void kernel_free(void *st, nnk_ext_kernel *k) { cu_kernel_free(((dnn_state *)st)->cu, k); }
static nnk_status launch_stream(void *st, const nnk_kernel_desc *desc, const nnk_plan *plan, void *stream)
{
    return cu_launch_stream(((dnn_state *)st)->cu, desc, plan, stream);
}
static nnk_status copy_strided(void *st, int32_t d, int32_t ndim, const int64_t *shape, void *dst, const int64_t *ds,
                               const void *src, const int64_t *ss, size_t esize)
{
    return cu_copy_strided(((dnn_state *)st)->cu, d, ndim, shape, dst, ds, src, ss, esize);
}

/* ---- reductions through cuDNN ------------------------------------------------------ */

static int dnn_dtype(int32_t t)
{
    return t == NNK_F32 ? CUDNN_DATA_FLOAT : t == NNK_F16 ? CUDNN_DATA_HALF : t == NNK_F64 ? CUDNN_DATA_DOUBLE : -1;
}

/* cuDNN's descriptors of the plan's input (operand 0) and reduced output
 * (operand 1): the plan's dimensions (kept, then reduced), padded with
 * leading 1s to 4; the output has extent 1 on the reduced ones.  false
 * when cuDNN cannot express it. */
static bool describe(const nnk_plan *p, int *nd, int *adims, int *astr, int *cdims, int *cstr)
{
    if (p->nops != 2 || p->nred < 1 || p->nkept < 1 || p->nreduced < 1 || p->ndim > 8)
        return false;
    int pad = p->ndim < 4 ? 4 - p->ndim : 0;
    *nd = p->ndim + pad;
    int64_t a_extent = 1, c_extent = 1;
    for (int i = 0; i < pad; i++)
        adims[i] = cdims[i] = 1;
    /* strides of the padding: beyond everything else */
    for (int d = 0; d < p->ndim; d++) {
        int64_t e = p->shape[d], sa = p->strides[0][d], sc = p->strides[1][d];
        bool red = d >= p->ndim - p->nred;
        if (e > 0x7fffffff)
            return false;
        if (e > 1 && sa <= 0)
            return false;
        if (!red && e > 1 && sc <= 0)
            return false;
        adims[pad + d] = (int)e;
        cdims[pad + d] = red ? 1 : (int)e;
        int64_t as = e > 1 ? sa : 1, cs = red || e == 1 ? 1 : sc;
        if (as > 0x7fffffff || cs > 0x7fffffff)
            return false;
        astr[pad + d] = (int)as;
        cstr[pad + d] = (int)cs;
        if (e > 1) {
            int64_t ea = (e - 1) * sa + 1, ec = red ? 1 : (e - 1) * sc + 1;
            a_extent = ea > a_extent ? ea : a_extent;
            c_extent = ec > c_extent ? ec : c_extent;
        }
    }
    for (int i = pad - 1; i >= 0; i--) {
        astr[i] = (int)(a_extent > 0x7fffffff ? 0x7fffffff : a_extent);
        cstr[i] = (int)(c_extent > 0x7fffffff ? 0x7fffffff : c_extent);
    }
    return true;
}

/* The descriptors of a shape on device dv (its lock held, its context
 * current): cached, else made (replacing the least recently used). */
static dnn_shape *shape_of(dnn_state *D, dnn_device *dv, int dt, int op, int comp, int nd, const int *adims,
                           const int *astr, const int *cdims, const int *cstr)
{
    dnn_shape *victim = &dv->shapes[0];
    size_t n = (size_t)nd * sizeof(int);
    for (int k = 0; k < DNN_SHAPES; k++) {
        dnn_shape *sh = &dv->shapes[k];
        if (sh->used && sh->dt == dt && sh->op == op && sh->nd == nd && memcmp(sh->adims, adims, n) == 0 &&
            memcmp(sh->astr, astr, n) == 0 && memcmp(sh->cdims, cdims, n) == 0 && memcmp(sh->cstr, cstr, n) == 0) {
            sh->last = ++dv->clock;
            return sh;
        }
        if (!sh->used || (victim->used && sh->last < victim->last))
            victim = sh;
    }
    if (victim->used)
        drop_shape(D, victim);
    dnn_shape *sh = victim;
    sh->dt = dt;
    sh->op = op;
    sh->nd = nd;
    memcpy(sh->adims, adims, n);
    memcpy(sh->astr, astr, n);
    memcpy(sh->cdims, cdims, n);
    memcpy(sh->cstr, cstr, n);
    if (D->f.cudnnCreateTensorDescriptor(&sh->a) == 0 && D->f.cudnnCreateTensorDescriptor(&sh->c) == 0 &&
        D->f.cudnnCreateReduceTensorDescriptor(&sh->r) == 0 &&
        D->f.cudnnSetTensorNdDescriptor(sh->a, dt, nd, adims, astr) == 0 &&
        D->f.cudnnSetTensorNdDescriptor(sh->c, dt, nd, cdims, cstr) == 0 &&
        D->f.cudnnSetReduceTensorDescriptor(sh->r, op - 1, comp, CUDNN_PROPAGATE_NAN, CUDNN_REDUCE_TENSOR_NO_INDICES,
                                            CUDNN_32BIT_INDICES) == 0 &&
        D->f.cudnnGetReductionWorkspaceSize(dv->handle, sh->r, sh->a, sh->c, &sh->ws_bytes) == 0) {
        sh->used = true;
        sh->last = ++dv->clock;
        pthread_mutex_lock(&D->lock);
        D->shapes_made++;
        pthread_mutex_unlock(&D->lock);
        return sh;
    }
    drop_shape(D, sh);
    return NULL;
}

/* Runs the reduction with cuDNN on the device's stream; false when it
 * did not (the caller runs the generated CUDA). */
static bool run_cudnn(dnn_state *D, int32_t dev, const nnk_ext_kernel *k, const nnk_plan *p, int32_t op)
{
    const nnk_kernel_desc *d = k->desc;
    if (!d || d->nparams < 1 || d->nouts != 1)
        return false;
    int32_t tin = -1, tout = d->params[d->nparams].dtype;
    for (int32_t i = 0; i < d->nparams; i++)
        if (d->params[i].flags & NNK_PARAM_TENSOR)
            tin = d->params[i].dtype;
    int dt = dnn_dtype(tin);
    int nd, adims[12], astr[12], cdims[12], cstr[12];
    if (dt < 0 || tin != tout || !describe(p, &nd, adims, astr, cdims, cstr))
        return false;
    cu_state *S = D->cu;
    if (cu_enter(S, dev) != NNK_OK)
        return false;
    dnn_device *dv = &D->devs[dev];
    bool ok = false;
    void *ws = NULL, *block = NULL;
    int comp = tin == NNK_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    pthread_mutex_lock(&dv->lock);
    if (!dv->handle && D->f.cudnnCreate(&dv->handle) == CUDNN_STATUS_SUCCESS &&
        D->f.cudnnSetStream(dv->handle, S->devs[dev].stream) != CUDNN_STATUS_SUCCESS) {
        D->f.cudnnDestroy(dv->handle);
        dv->handle = NULL;
    }
    dnn_shape *sh = dv->handle ? shape_of(D, dv, dt, op, comp, nd, adims, astr, cdims, cstr) : NULL;
    if (sh && (sh->ws_bytes == 0 || S->host->block_alloc("cudnn", dev, sh->ws_bytes, &ws, &block) == NNK_OK)) {
        double one64 = 1, zero64 = 0;
        float one32 = 1, zero32 = 0;
        const void *alpha = comp == CUDNN_DATA_DOUBLE ? (const void *)&one64 : (const void *)&one32;
        const void *beta = comp == CUDNN_DATA_DOUBLE ? (const void *)&zero64 : (const void *)&zero32;
        ok = D->f.cudnnReduceTensor(dv->handle, sh->r, NULL, 0, ws, sh->ws_bytes, alpha, sh->a, p->data[0], beta,
                                    sh->c, p->data[1]) == 0;
    }
    pthread_mutex_unlock(&dv->lock);
    if (block)
        S->host->block_free(block); /* stream-ordered: later users queue behind the reduction */
    cu_leave(S);
    return ok;
}

static nnk_status launch(void *st, int32_t d, const nnk_ext_kernel *k, const nnk_plan *plan)
{
    dnn_state *D = st;
    cu_kernel *ck = k->handle;
    if (D->usable && ck->reduce_op > NNK_REDUCE_NONE && ck->reduce_op <= NNK_REDUCE_NORM2 &&
        run_cudnn(D, d, k, plan, ck->reduce_op)) {
        pthread_mutex_lock(&D->lock);
        D->by_cudnn++;
        pthread_mutex_unlock(&D->lock);
        return NNK_OK;
    }
    if (ck->m->reduction) {
        pthread_mutex_lock(&D->lock);
        D->by_cuda++;
        pthread_mutex_unlock(&D->lock);
    }
    return cu_launch(D->cu, d, k, plan);
}

static const nnk_extension_ops ops = {
    NNK_EXT_OPS_COMMON,
    .name = "cudnn",
    .description = "NVIDIA GPUs with cuDNN for plain reductions; generated CUDA for everything else",
    .target = NNK_TARGET_CUDA,
    .context = context,
    .kernel_load = kernel_load,
    .launch_stream = launch_stream,
    .copy_strided = copy_strided,
};

NNK_EXT_ENTRY(ops)
