/* array.c - arrays: storage from the caching allocators, views (slices,
 * permutations, reshapes, broadcasts) that share it, and copies between
 * any two arrays (layout, dtype and device may all differ).
 *
 * An nnk_array is a small refcounted header (dtype, shape, strides in
 * elements, offset) over a refcounted storage.  A view is a new header
 * over the same storage.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Saturates at INT64_MAX: shapes from callers are checked after (and
 * rt_check_shape bounds every array's). */
int64_t rt_shape_size(int32_t ndim, const int64_t *shape)
{
    int64_t n = 1;
    bool over = false;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] == 0)
            return 0;
        over |= !rt_mul(n, shape[d], &n);
    }
    return over ? INT64_MAX : n;
}

void rt_contiguous_strides(int32_t ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] ? shape[d] : 1;
    }
}

nnk_status rt_check_shape(int32_t ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > NNK_MAX_DIMS)
        return rt_error(NNK_ESHAPE, "bad rank %d: arrays have 0 to %d dimensions", ndim, NNK_MAX_DIMS);
    if (ndim > 0 && !shape)
        return rt_error(NNK_EINVAL, "shape is NULL for a %d-dimensional array", ndim);
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return rt_error(NNK_ESHAPE, "negative extent %lld in dimension %d", (long long)shape[d], d);
        /* a zero extent counts as 1, as in the strides: (0, 2^62) has no
         * element but a stride of 2^62 elements, whose bytes overflow */
        int64_t e = shape[d] ? shape[d] : 1;
        if (n > (INT64_MAX >> 4) / e)
            return rt_error(NNK_ESHAPE, "the shape has too many elements");
        n *= e;
    }
    return NNK_OK;
}

static nnk_status check_dtype(nnk_dtype t)
{
    return (unsigned)t < NNK_DTYPE_COUNT ? NNK_OK : rt_error(NNK_EDTYPE, "bad dtype %d", (int)t);
}

static void storage_release(rt_storage *st)
{
    if (atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    if (st->block) {
        rt_allocator *a = rt_ext_allocator(st->ext, st->device);
        if (a)
            rt_dealloc(a, st->block);
    }
    free(st);
}

static nnk_array *header(rt_storage *st, nnk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *strides,
                         int64_t offset)
{
    nnk_array *a = rt_malloc(sizeof *a);
    if (!a)
        return NULL;
    atomic_init(&a->refs, 1);
    a->st = st;
    atomic_fetch_add(&st->refs, 1);
    a->dtype = dtype;
    a->ndim = ndim;
    a->offset = offset;
    for (int32_t d = 0; d < ndim; d++)
        a->shape[d] = shape[d], a->strides[d] = strides[d];
    rt_live_inc();
    return a;
}

nnk_status rt_array_alloc(rt_ext *ext, int32_t device, nnk_dtype dtype, int32_t ndim, const int64_t *shape,
                          nnk_array **out)
{
    nnk_status s = check_dtype(dtype);
    if (s || (s = rt_check_shape(ndim, shape)))
        return s;
    if (device < 0 || device >= ext->ndevices)
        return rt_error(NNK_EINVAL, "device %d out of range: extension '%s' has %d devices", device, ext->ops->name,
                        ext->ndevices);
    rt_allocator *al = rt_ext_allocator(ext, device);
    rt_storage *st = rt_calloc(1, sizeof *st);
    if (!al || !st) {
        free(st);
        return NNK_ENOMEM;
    }
    size_t bytes = (size_t)rt_shape_size(ndim, shape) * nnk_dtype_size(dtype);
    if ((s = rt_alloc(al, bytes, &st->block))) {
        free(st);
        return s;
    }
    atomic_init(&st->refs, 1);
    st->ext = ext;
    st->device = device;
    st->base = st->block->ptr;
    int64_t strides[NNK_MAX_DIMS];
    rt_contiguous_strides(ndim, shape, strides);
    nnk_array *a = header(st, dtype, ndim, shape, strides, 0);
    storage_release(st); /* the header holds it now (or nobody does) */
    if (!a)
        return NNK_ENOMEM;
    *out = a;
    return NNK_OK;
}

static nnk_status ctx_device(const nnk_context *ctx, rt_ext **ext, int32_t *device, nnk_dtype *type_config)
{
    nnk_context tmp;
    const nnk_context *c = rt_context_or_default(ctx, &tmp);
    if (!c)
        return NNK_ENOMEM;
    if (type_config)
        *type_config = c->type_config;
    return rt_context_device(c, ext, device);
}

nnk_status nnk_array_new(const nnk_context *ctx, nnk_dtype dtype, int32_t ndim, const int64_t *shape, nnk_array **out)
{
    if (!out)
        return rt_error(NNK_EINVAL, "nnk_array_new: out is NULL");
    rt_ext *e;
    int32_t dev;
    nnk_status s = ctx_device(ctx, &e, &dev, NULL);
    return s ? s : rt_array_alloc(e, dev, dtype, ndim, shape, out);
}

nnk_status nnk_array_new_default(const nnk_context *ctx, int32_t ndim, const int64_t *shape, nnk_array **out)
{
    if (!out)
        return rt_error(NNK_EINVAL, "nnk_array_new_default: out is NULL");
    rt_ext *e;
    int32_t dev;
    nnk_dtype t;
    nnk_status s = ctx_device(ctx, &e, &dev, &t);
    return s ? s : rt_array_alloc(e, dev, t, ndim, shape, out);
}

nnk_status nnk_array_zeros(const nnk_context *ctx, nnk_dtype dtype, int32_t ndim, const int64_t *shape, nnk_array **out)
{
    if (!out)
        return rt_error(NNK_EINVAL, "nnk_array_zeros: out is NULL");
    nnk_array *a;
    nnk_status s = nnk_array_new(ctx, dtype, ndim, shape, &a);
    if (s)
        return s;
    rt_ext *e = a->st->ext;
    size_t bytes = (size_t)rt_shape_size(ndim, shape) * nnk_dtype_size(dtype);
    if (bytes && (s = e->ops->memset_zero(e->state, a->st->device, a->st->base, bytes))) {
        nnk_array_free(a);
        return s;
    }
    *out = a;
    return NNK_OK;
}

nnk_status nnk_array_from_host(const nnk_context *ctx, nnk_dtype dtype, int32_t ndim, const int64_t *shape,
                               const void *data, nnk_array **out)
{
    if (!out)
        return rt_error(NNK_EINVAL, "nnk_array_from_host: out is NULL");
    if (!data && rt_shape_size(ndim >= 0 && ndim <= NNK_MAX_DIMS && shape ? ndim : 0, shape) > 0)
        return rt_error(NNK_EINVAL, "nnk_array_from_host: data is NULL");
    nnk_array *a;
    nnk_status s = nnk_array_new(ctx, dtype, ndim, shape, &a);
    if (s)
        return s;
    if ((s = nnk_array_from_host_into(a, dtype, data, (size_t)nnk_array_size(a) * nnk_dtype_size(dtype)))) {
        nnk_array_free(a);
        return s;
    }
    *out = a;
    return NNK_OK;
}

nnk_status nnk_array_wrap(nnk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *strides, void *data,
                          nnk_array **out)
{
    nnk_status s = check_dtype(dtype);
    if (s || (s = rt_check_shape(ndim, shape)))
        return s;
    if (!out || (!data && rt_shape_size(ndim, shape) > 0))
        return rt_error(NNK_EINVAL, "nnk_array_wrap: %s is NULL", !out ? "out" : "data");
    int64_t cs[NNK_MAX_DIMS];
    if (!strides) {
        rt_contiguous_strides(ndim, shape, cs);
        strides = cs;
    } else if (rt_shape_size(ndim, shape) > 0) {
        /* The bytes the view reaches on each side of data must be
         * representable: every copy and plan computes them. */
        int64_t lo = 0, hi = 0, reach;
        bool ok = true;
        for (int32_t d = 0; ok && d < ndim; d++)
            ok = rt_mul(shape[d] - 1, strides[d], &reach) && rt_add(reach > 0 ? hi : lo, reach, reach > 0 ? &hi : &lo);
        ok = ok && rt_mul(hi + 1, (int64_t)nnk_dtype_size(dtype), &hi) && rt_mul(lo, (int64_t)nnk_dtype_size(dtype), &lo) &&
             rt_add(hi, -lo, &reach);
        if (!ok)
            return rt_error(NNK_ESHAPE, "nnk_array_wrap: the strides reach beyond the address space");
    }
    rt_storage *st = rt_calloc(1, sizeof *st);
    if (!st)
        return NNK_ENOMEM;
    atomic_init(&st->refs, 1);
    st->base = data;
    nnk_array *a = header(st, dtype, ndim, shape, strides, 0);
    storage_release(st);
    if (!a)
        return NNK_ENOMEM;
    *out = a;
    return NNK_OK;
}

nnk_array *nnk_array_retain(nnk_array *a)
{
    if (a)
        atomic_fetch_add(&a->refs, 1);
    return a;
}

void nnk_array_free(nnk_array *a)
{
    if (!a || atomic_fetch_sub(&a->refs, 1) != 1)
        return;
    storage_release(a->st);
    free(a);
    rt_live_dec();
}

nnk_dtype nnk_array_dtype(const nnk_array *a) { return a ? a->dtype : NNK_DTYPE_COUNT; }
int32_t nnk_array_ndim(const nnk_array *a) { return a ? a->ndim : -1; }
const int64_t *nnk_array_shape(const nnk_array *a) { return a ? a->shape : NULL; }
const int64_t *nnk_array_strides(const nnk_array *a) { return a ? a->strides : NULL; }
int64_t nnk_array_offset(const nnk_array *a) { return a ? a->offset : 0; }
int64_t nnk_array_size(const nnk_array *a) { return a ? rt_shape_size(a->ndim, a->shape) : 0; }
void *nnk_array_data(const nnk_array *a) { return a ? rt_array_ptr(a) : NULL; }
nnk_extension *nnk_array_extension(const nnk_array *a) { return a && a->st->ext ? (nnk_extension *)a->st->ext : NULL; }
int32_t nnk_array_device(const nnk_array *a) { return a ? a->st->device : -1; }

int nnk_array_is_contiguous(const nnk_array *a)
{
    if (!a)
        return 0;
    int64_t s = 1;
    for (int32_t d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] == 0)
            return 1;
        if (a->shape[d] != 1 && a->strides[d] != s)
            return 0;
        s *= a->shape[d];
    }
    return 1;
}

/* ---- views ------------------------------------------------------------------ */

static nnk_status view(const nnk_array *a, int32_t ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                       nnk_array **out)
{
    nnk_array *v = header(a->st, a->dtype, ndim, shape, strides, offset);
    if (!v)
        return NNK_ENOMEM;
    *out = v;
    return NNK_OK;
}

nnk_status nnk_array_slice(const nnk_array *a, int32_t nslices, const nnk_slice *s, nnk_array **out)
{
    if (!a || !out || (nslices > 0 && !s))
        return rt_error(NNK_EINVAL, "nnk_array_slice: a, out or the slices are NULL");
    if (nslices < 0 || nslices > a->ndim)
        return rt_error(NNK_ESHAPE, "nnk_array_slice: %d slices for a %d-dimensional array", nslices, a->ndim);
    int64_t shape[NNK_MAX_DIMS], strides[NNK_MAX_DIMS], offset = a->offset;
    for (int32_t d = 0; d < a->ndim; d++) {
        shape[d] = a->shape[d];
        strides[d] = a->strides[d];
        if (d >= nslices)
            continue;
        int64_t n = a->shape[d], step = s[d].step ? s[d].step : 1, start = s[d].start, stop = s[d].stop, len;
        if (step == INT64_MIN)
            return rt_error(NNK_EINVAL, "nnk_array_slice: bad step in axis %d", d);
        /* Python's slice.indices(n) */
        if (step > 0) {
            start = start == NNK_SLICE_NONE ? 0 : start < 0 ? (start + n < 0 ? 0 : start + n) : (start > n ? n : start);
            stop = stop == NNK_SLICE_NONE ? n : stop < 0 ? (stop + n < 0 ? 0 : stop + n) : (stop > n ? n : stop);
            len = stop > start ? (stop - start - 1) / step + 1 : 0;
        } else {
            start = start == NNK_SLICE_NONE ? n - 1 : start < 0 ? (start + n < 0 ? -1 : start + n) : (start >= n ? n - 1 : start);
            stop = stop == NNK_SLICE_NONE ? -1 : stop < 0 ? (stop + n < 0 ? -1 : stop + n) : (stop >= n ? n - 1 : stop);
            len = start > stop ? (start - stop - 1) / -step + 1 : 0;
        }
        if (len > 0)
            offset += start * a->strides[d];
        shape[d] = len;
        /* One element or none: the stride is never used (and a huge step
         * times the stride may not fit). */
        if (len > 1 && !rt_mul(a->strides[d], step, &strides[d]))
            return rt_error(NNK_ESHAPE, "nnk_array_slice: step %lld overflows the stride of axis %d", (long long)step, d);
    }
    return view(a, a->ndim, shape, strides, offset, out);
}

nnk_status nnk_array_permute(const nnk_array *a, int32_t n, const int32_t *perm, nnk_array **out)
{
    if (!a || !out || (n > 0 && !perm))
        return rt_error(NNK_EINVAL, "nnk_array_permute: a, perm or out is NULL");
    if (n != a->ndim)
        return rt_error(NNK_ESHAPE, "nnk_array_permute: %d axes given for a %d-dimensional array", n, a->ndim);
    int64_t shape[NNK_MAX_DIMS], strides[NNK_MAX_DIMS];
    uint8_t seen[NNK_MAX_DIMS] = {0};
    for (int32_t i = 0; i < n; i++) {
        int32_t p = perm[i] < 0 ? perm[i] + n : perm[i];
        if (p < 0 || p >= n || seen[p])
            return rt_error(NNK_ESHAPE, "nnk_array_permute: axis %d is %s", perm[i],
                            p < 0 || p >= n ? "out of range" : "repeated");
        seen[p] = 1;
        shape[i] = a->shape[p];
        strides[i] = a->strides[p];
    }
    return view(a, n, shape, strides, a->offset, out);
}

nnk_status nnk_array_transpose(const nnk_array *a, nnk_array **out)
{
    if (!a)
        return rt_error(NNK_EINVAL, "nnk_array_transpose: a is NULL");
    int32_t perm[NNK_MAX_DIMS];
    for (int32_t i = 0; i < a->ndim; i++)
        perm[i] = a->ndim - 1 - i;
    return nnk_array_permute(a, a->ndim, perm, out);
}

/* numpy's attempt_nocopy_reshape: new strides for `shape` over a's
 * elements, or false when the layout needs a copy. */
static bool nocopy_strides(const nnk_array *a, int32_t nnd, const int64_t *nd, int64_t *ns)
{
    int64_t od[NNK_MAX_DIMS], os[NNK_MAX_DIMS];
    int32_t ond = 0;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != 1)
            od[ond] = a->shape[d], os[ond++] = a->strides[d];
    int32_t oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nnd && oi < ond) {
        int64_t np = nd[ni], op = od[oi];
        while (np != op) {
            if (np < op)
                np *= nd[nj++];
            else
                op *= od[oj++];
        }
        for (int32_t ok = oi; ok < oj - 1; ok++)
            if (os[ok] != od[ok + 1] * os[ok + 1])
                return false;
        ns[nj - 1] = os[oj - 1];
        for (int32_t nk = nj - 1; nk > ni; nk--)
            ns[nk - 1] = ns[nk] * nd[nk];
        ni = nj++;
        oi = oj++;
    }
    int64_t last = ni >= 1 ? ns[ni - 1] : 1;
    for (int32_t nk = ni; nk < nnd; nk++)
        ns[nk] = last;
    return true;
}

nnk_status nnk_array_reshape(const nnk_array *a, int32_t ndim, const int64_t *shape, nnk_array **out)
{
    if (!a || !out || (ndim > 0 && !shape))
        return rt_error(NNK_EINVAL, "nnk_array_reshape: a, shape or out is NULL");
    if (ndim < 0 || ndim > NNK_MAX_DIMS)
        return rt_error(NNK_ESHAPE, "nnk_array_reshape: bad rank %d", ndim);
    int64_t nd[NNK_MAX_DIMS], ns[NNK_MAX_DIMS], known = 1, size = nnk_array_size(a);
    int32_t infer = -1;
    for (int32_t d = 0; d < ndim; d++) {
        nd[d] = shape[d];
        if (shape[d] == -1 && infer < 0)
            infer = d;
        else if (shape[d] < 0)
            return rt_error(NNK_ESHAPE, "nnk_array_reshape: bad extent %lld in dimension %d%s", (long long)shape[d], d,
                            shape[d] == -1 ? " (only one extent may be -1)" : "");
        else if (!rt_mul(known, shape[d], &known))
            return rt_error(NNK_ESHAPE, "nnk_array_reshape: the shape has too many elements");
    }
    if (infer >= 0) {
        if (known == 0 || size % known)
            return rt_error(NNK_ESHAPE, "nnk_array_reshape: cannot reshape %lld elements with an extent of -1",
                            (long long)size);
        nd[infer] = size / known;
        known = size;
    }
    if (known != size)
        return rt_error(NNK_ESHAPE, "nnk_array_reshape: cannot reshape an array of %lld elements into %lld elements",
                        (long long)size, (long long)known);
    if (size == 0)
        rt_contiguous_strides(ndim, nd, ns);
    else if (!nocopy_strides(a, ndim, nd, ns))
        return rt_error(NNK_ESHAPE,
                        "nnk_array_reshape: this layout cannot take the new shape without a copy (copy into a contiguous array first)");
    return view(a, ndim, nd, ns, a->offset, out);
}

/* Strides of `a` broadcast to (ndim, shape) into st, or an NNK_ESHAPE. */
static nnk_status broadcast_strides(int32_t andim, const int64_t *ashape, const int64_t *astrides, int32_t ndim,
                                    const int64_t *shape, int64_t *st)
{
    if (ndim < andim)
        return rt_error(NNK_ESHAPE, "cannot broadcast a %d-dimensional array to %d dimensions", andim, ndim);
    for (int32_t d = 0; d < ndim; d++) {
        int32_t ad = d - (ndim - andim);
        if (ad < 0)
            st[d] = 0;
        else if (ashape[ad] == shape[d])
            st[d] = ashape[ad] == 1 ? 0 : astrides[ad];
        else if (ashape[ad] == 1)
            st[d] = 0;
        else
            return rt_error(NNK_ESHAPE, "cannot broadcast extent %lld of dimension %d to %lld", (long long)ashape[ad], ad,
                            (long long)shape[d]);
    }
    return NNK_OK;
}

nnk_status nnk_array_broadcast_to(const nnk_array *a, int32_t ndim, const int64_t *shape, nnk_array **out)
{
    if (!a || !out)
        return rt_error(NNK_EINVAL, "nnk_array_broadcast_to: a or out is NULL");
    nnk_status s = rt_check_shape(ndim, shape);
    int64_t st[NNK_MAX_DIMS];
    if (s || (s = broadcast_strides(a->ndim, a->shape, a->strides, ndim, shape, st)))
        return s;
    return view(a, ndim, shape, st, a->offset, out);
}

/* ---- copies ---------------------------------------------------------------------- */

/* One side of a copy: where the elements are and how they are laid out. */
typedef struct region {
    rt_ext *ext;          /* NULL or host-memory: the host */
    int32_t device;
    char *ptr;            /* element (0,...,0) */
    nnk_dtype dtype;
    const int64_t *strides;
} region;

static bool on_host(const region *r) { return !r->ext || rt_ext_host_memory(r->ext); }

/* The byte range [lo, hi) a strided region touches. */
static void span(const region *r, int32_t ndim, const int64_t *shape, int64_t *lo, int64_t *hi)
{
    int64_t es = (int64_t)nnk_dtype_size(r->dtype), mn = 0, mx = 0;
    for (int32_t d = 0; d < ndim; d++) {
        int64_t reach = (shape[d] - 1) * r->strides[d];
        if (reach > 0)
            mx += reach;
        else
            mn += reach;
    }
    *lo = mn * es;
    *hi = (mx + 1) * es;
}

/* Copies with conversion between regions of the same shape.  Device
 * memory goes through a host staging buffer covering its span (read first
 * when the destination has gaps, so they are kept). */
static nnk_status copy_regions(int32_t ndim, const int64_t *shape, const region *dst, const region *src)
{
    if (rt_shape_size(ndim, shape) == 0)
        return NNK_OK;
    int64_t slo, shi, dlo, dhi;
    span(src, ndim, shape, &slo, &shi);
    span(dst, ndim, shape, &dlo, &dhi);
    int64_t count = rt_shape_size(ndim, shape);
    int64_t dbytes = count * (int64_t)nnk_dtype_size(dst->dtype);
    int64_t sbytes = count * (int64_t)nnk_dtype_size(src->dtype);
    bool dense_dst = dhi - dlo == dbytes, dense_src = shi - slo == sbytes;
    int64_t dcs[NNK_MAX_DIMS];
    rt_contiguous_strides(ndim, shape, dcs);
    bool cdst = dense_dst, csrc = dense_src;
    for (int32_t d = 0; d < ndim; d++) {
        cdst &= shape[d] == 1 || dst->strides[d] == dcs[d];
        csrc &= shape[d] == 1 || src->strides[d] == dcs[d];
    }
    /* Same device, same dtype, both C-contiguous: one device copy. */
    if (!on_host(dst) && dst->ext == src->ext && dst->device == src->device && dst->dtype == src->dtype && cdst && csrc)
        return dst->ext->ops->copy(dst->ext->state, dst->device, NNK_COPY_DEVICE_TO_DEVICE, dst->ptr, src->ptr,
                                   (size_t)dbytes);

    /* Same device, same dtype, strided: the extension's copy_strided when
     * it does the layout (it answers NNK_EUNSUPPORTED otherwise). */
    nnk_status (*strided)(void *, int32_t, int32_t, const int64_t *, void *, const int64_t *, const void *,
                          const int64_t *, size_t) = on_host(dst) ? NULL : RT_HOOK(dst->ext, copy_strided);
    if (strided && dst->ext == src->ext && dst->device == src->device && dst->dtype == src->dtype) {
        nnk_status cs = strided(dst->ext->state, dst->device, ndim, shape, dst->ptr, dst->strides, src->ptr,
                                src->strides, nnk_dtype_size(dst->dtype));
        if (cs != NNK_EUNSUPPORTED)
            return cs;
    }

    nnk_status s = NNK_OK;
    char *sbuf = NULL, *dbuf = NULL;
    const char *sp = src->ptr;
    char *dp = dst->ptr;
    if (!on_host(src)) {
        if (!(sbuf = rt_malloc((size_t)(shi - slo))))
            return NNK_ENOMEM;
        s = src->ext->ops->copy(src->ext->state, src->device, NNK_COPY_DEVICE_TO_HOST, sbuf, src->ptr + slo,
                                (size_t)(shi - slo));
        sp = sbuf - slo;
    }
    if (!s && !on_host(dst)) {
        if (!(dbuf = rt_malloc((size_t)(dhi - dlo))))
            s = NNK_ENOMEM;
        else if (!dense_dst)
            s = dst->ext->ops->copy(dst->ext->state, dst->device, NNK_COPY_DEVICE_TO_HOST, dbuf, dst->ptr + dlo,
                                    (size_t)(dhi - dlo));
        dp = dbuf - dlo;
    }
    if (!s) {
        rt_copy_strided(ndim, shape, dp, dst->dtype, dst->strides, sp, src->dtype, src->strides);
        if (dbuf)
            s = dst->ext->ops->copy(dst->ext->state, dst->device, NNK_COPY_HOST_TO_DEVICE, dst->ptr + dlo, dbuf,
                                    (size_t)(dhi - dlo));
    }
    free(sbuf);
    free(dbuf);
    return s;
}

static region region_of(const nnk_array *a, const int64_t *strides)
{
    return (region){a->st->ext, a->st->device, rt_array_ptr(a), a->dtype, strides ? strides : a->strides};
}

nnk_status nnk_array_copy(nnk_array *dst, const nnk_array *src)
{
    if (!dst || !src)
        return rt_error(NNK_EINVAL, "nnk_array_copy: %s is NULL", !dst ? "dst" : "src");
    int64_t st[NNK_MAX_DIMS];
    nnk_status s = broadcast_strides(src->ndim, src->shape, src->strides, dst->ndim, dst->shape, st);
    if (s)
        return rt_error_prefix(s, "nnk_array_copy");
    region d = region_of(dst, NULL), r = region_of(src, st);
    return copy_regions(dst->ndim, dst->shape, &d, &r);
}

nnk_status nnk_array_to(const nnk_array *a, const nnk_context *ctx, nnk_dtype dtype, nnk_array **out)
{
    if (!a || !out)
        return rt_error(NNK_EINVAL, "nnk_array_to: %s is NULL", !a ? "a" : "out");
    rt_ext *e = a->st->ext;
    int32_t dev = a->st->device;
    nnk_status s = NNK_OK;
    if (ctx || !e)
        s = ctx_device(ctx, &e, &dev, NULL);
    nnk_array *r;
    if (s || (s = rt_array_alloc(e, dev, dtype, a->ndim, a->shape, &r)))
        return s;
    if ((s = nnk_array_copy(r, a))) {
        nnk_array_free(r);
        return s;
    }
    *out = r;
    return NNK_OK;
}

/* The host side of to_host / from_host_into: C-contiguous memory. */
static nnk_status host_region(const nnk_array *a, nnk_dtype dtype, const void *p, size_t bytes, region *r,
                              int64_t *strides, const char *fn)
{
    if (!a || (!p && nnk_array_size(a) > 0))
        return rt_error(NNK_EINVAL, "%s: %s is NULL", fn, !a ? "a" : "the host buffer");
    nnk_status s = check_dtype(dtype);
    if (s)
        return s;
    size_t need = (size_t)nnk_array_size(a) * nnk_dtype_size(dtype);
    if (bytes < need)
        return rt_error(NNK_EINVAL, "%s: the host buffer has %zu bytes; the array needs %zu", fn, bytes, need);
    rt_contiguous_strides(a->ndim, a->shape, strides);
    *r = (region){NULL, 0, (char *)p, dtype, strides};
    return NNK_OK;
}

nnk_status nnk_array_to_host(const nnk_array *a, nnk_dtype dtype, void *dst, size_t bytes)
{
    region h;
    int64_t st[NNK_MAX_DIMS];
    nnk_status s = host_region(a, dtype, dst, bytes, &h, st, "nnk_array_to_host");
    if (s)
        return s;
    region r = region_of(a, NULL);
    return copy_regions(a->ndim, a->shape, &h, &r);
}

nnk_status nnk_array_from_host_into(nnk_array *a, nnk_dtype dtype, const void *src, size_t bytes)
{
    region h;
    int64_t st[NNK_MAX_DIMS];
    nnk_status s = host_region(a, dtype, src, bytes, &h, st, "nnk_array_from_host_into");
    if (s)
        return s;
    region r = region_of(a, NULL);
    return copy_regions(a->ndim, a->shape, &r, &h);
}
