/* plan.h - building an execution plan (nnk/abi.h) from array views.
 *
 * Shared, as text, by the code nnkc generates (NAME_strided, usable with no
 * runtime) and by the runtime (runtime/plan.c includes this file), so the
 * broadcasting and coalescing rules exist once.  Plain C99 and <stdint.h>
 * only, every function static.
 *
 * Rules (numpy's): shapes align at the right; an extent of 1 broadcasts;
 * full-shape outputs must have exactly the broadcast shape; reduced-shape
 * outputs have it with the reduced axes dropped or kept as 1 (keepdims).
 */

/* Not every file calls every function here: the JIT compiles generated
 * code without the entry points (NNK_NO_ENTRY_POINTS), so nothing builds
 * a plan there. */
#if defined(__GNUC__) || defined(__clang__)
#define NNK_PLAN_UNUSED_ __attribute__((unused))
#define NNK_NOINLINE_ __attribute__((noinline))
#else
#define NNK_PLAN_UNUSED_
#define NNK_NOINLINE_
#endif

enum {
    NNK_PLAN_OK = 0,
    NNK_PLAN_EBROADCAST = 1, /* input shapes do not broadcast */
    NNK_PLAN_EOUTPUT = 2,    /* an output has the wrong shape */
    NNK_PLAN_EAXIS = 3,      /* a reduction axis is out of range or repeated */
    NNK_PLAN_ERANK = 4,      /* more than NNK_MAX_DIMS dimensions */
    NNK_PLAN_EARGS = 5,      /* NULL view, too many operands, negative extent */
    NNK_PLAN_ERANGE = 6,     /* a raw parameter's index out of range (nnk_plan.range says which) */
};

/* A bounded string builder for error messages (no stdio here). */
typedef struct nnk_msg_ {
    char *buf;
    unsigned long cap, len;
} nnk_msg_;

NNK_PLAN_UNUSED_ static void nnk_msg_str_(nnk_msg_ *m, const char *s)
{
    if (!m->buf)
        return;
    while (*s && m->len + 1 < m->cap)
        m->buf[m->len++] = *s++;
    m->buf[m->len] = 0;
}

NNK_PLAN_UNUSED_ static void nnk_msg_int_(nnk_msg_ *m, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[n++] = '-';
    char out[24];
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = 0;
    nnk_msg_str_(m, out);
}

NNK_PLAN_UNUSED_ static void nnk_msg_shape_(nnk_msg_ *m, int32_t ndim, const int64_t *shape)
{
    nnk_msg_str_(m, "(");
    for (int32_t i = 0; i < ndim; i++) {
        if (i)
            nnk_msg_str_(m, ", ");
        nnk_msg_int_(m, shape[i]);
    }
    nnk_msg_str_(m, ndim == 1 ? ",)" : ")");
}

/* Builds *p for `nin` tensor inputs and `nout` outputs (views[0..nin+nout)).
 * reduced[k] is nonzero for outputs (k >= nin) with the reduced shape, and
 * for raw inputs (k < nin: no part in the iteration space, strides 0;
 * nnk_plan_raw_ gives the kernel their views).
 * axes == NULL reduces every axis (reductions); is_reduction == 0 ignores
 * axes.  Scalars are left to the caller.  On error returns NNK_PLAN_E* and
 * writes a message into err (may be NULL). */
NNK_PLAN_UNUSED_ static int nnk_plan_build(nnk_plan *p, int32_t nin, int32_t nout, const nnk_view *const *views,
                          const uint8_t *reduced, int32_t is_reduction, int32_t naxes, const int32_t *axes,
                          char *err, unsigned long errlen)
{
    nnk_msg_ m = {err, errlen, 0};
    if (err && errlen)
        err[0] = 0;
    int32_t nops = nin + nout;
    if (nops > NNK_MAX_TENSORS || nin < 0 || nout < 0) {
        nnk_msg_str_(&m, "too many tensor operands");
        return NNK_PLAN_EARGS;
    }
    for (int32_t k = 0; k < nops; k++) {
        if (!views[k] || views[k]->ndim < 0 || (views[k]->ndim > 0 && (!views[k]->shape || !views[k]->strides))) {
            nnk_msg_str_(&m, "operand ");
            nnk_msg_int_(&m, k);
            nnk_msg_str_(&m, " is not a valid array view");
            return NNK_PLAN_EARGS;
        }
        if (views[k]->ndim > NNK_MAX_DIMS) {
            nnk_msg_str_(&m, "arrays have at most ");
            nnk_msg_int_(&m, NNK_MAX_DIMS);
            nnk_msg_str_(&m, " dimensions");
            return NNK_PLAN_ERANK;
        }
        for (int32_t d = 0; d < views[k]->ndim; d++) {
            if (views[k]->shape[d] < 0) {
                nnk_msg_str_(&m, "negative extent in operand ");
                nnk_msg_int_(&m, k);
                return NNK_PLAN_EARGS;
            }
        }
    }

    /* 1. The iteration shape: inputs and full-shape outputs broadcast. */
    int32_t ndim = 0;
    int64_t shape[NNK_MAX_DIMS];
    int32_t nin_shaped = 0, ndim_in = 0; /* ndim_in: the inputs' rank, for messages */
    for (int32_t k = 0; k < nops; k++)
        if (!(reduced && reduced[k]) && views[k]->ndim > ndim)
            ndim = views[k]->ndim;
    for (int32_t k = 0; k < nin; k++)
        if (!(reduced && reduced[k]) && views[k]->ndim > ndim_in)
            ndim_in = views[k]->ndim;
    for (int32_t d = 0; d < ndim; d++)
        shape[d] = 1;
    for (int32_t k = 0; k < nin; k++) {
        const nnk_view *v = views[k];
        if (reduced && reduced[k])
            continue;
        nin_shaped++;
        for (int32_t d = 0; d < v->ndim; d++) {
            int32_t id = ndim - v->ndim + d;
            int64_t e = v->shape[d];
            if (e == shape[id] || e == 1)
                continue;
            if (shape[id] == 1) {
                shape[id] = e;
                continue;
            }
            nnk_msg_str_(&m, "shapes do not broadcast: operand ");
            nnk_msg_int_(&m, k);
            nnk_msg_str_(&m, " has shape ");
            nnk_msg_shape_(&m, v->ndim, v->shape);
            nnk_msg_str_(&m, " where the others give ");
            nnk_msg_shape_(&m, ndim, shape);
            return NNK_PLAN_EBROADCAST;
        }
    }
    /* Inputs that broadcast against each other (views with zero strides)
     * can make an iteration space no int64_t counts. */
    {
        int64_t n = 1;
        for (int32_t d = 0; d < ndim; d++) {
            if (shape[d] == 0) {
                n = 0;
                break;
            }
            if (n > INT64_MAX / shape[d]) {
                nnk_msg_str_(&m, "the broadcast shape ");
                nnk_msg_shape_(&m, ndim, shape);
                nnk_msg_str_(&m, " has too many elements");
                return NNK_PLAN_EBROADCAST;
            }
            n *= shape[d];
        }
    }
    if (nin_shaped == 0) {
        /* No tensor input (but raw ones): the shape comes from the
         * full-shape outputs. */
        for (int32_t k = nin; k < nops; k++) {
            if (reduced && reduced[k])
                continue;
            for (int32_t d = 0; d < views[k]->ndim; d++)
                shape[ndim - views[k]->ndim + d] = views[k]->shape[d];
            break;
        }
    }

    p->iter_ndim = ndim;
    {
        /* the products fit: step 1 counted the elements (an empty space
         * runs no element, and its products are not needed) */
        int64_t inner = 1;
        int empty = 0;
        for (int32_t d = 0; d < ndim; d++)
            empty |= shape[d] == 0;
        for (int32_t d = ndim - 1; d >= 0; d--) {
            p->iter_shape[d] = shape[d];
            p->iter_inner[d] = inner;
            if (!empty)
                inner *= shape[d];
        }
    }
    p->nraw = 0;
    p->range = 0;

    /* 2. Reduction axes. */
    uint8_t red[NNK_MAX_DIMS] = {0};
    if (is_reduction) {
        if (!axes) {
            for (int32_t d = 0; d < ndim; d++)
                red[d] = 1;
        } else {
            for (int32_t i = 0; i < naxes; i++) {
                int32_t a = axes[i] < 0 ? axes[i] + ndim : axes[i];
                if (a < 0 || a >= ndim || red[a]) {
                    nnk_msg_str_(&m, a < 0 || a >= ndim ? "reduction axis " : "repeated reduction axis ");
                    nnk_msg_int_(&m, axes[i]);
                    if (a < 0 || a >= ndim) {
                        nnk_msg_str_(&m, " is out of range for ");
                        nnk_msg_int_(&m, ndim);
                        nnk_msg_str_(&m, " dimensions");
                    }
                    return NNK_PLAN_EAXIS;
                }
                red[a] = 1;
            }
        }
    }

    /* 3. Strides of every operand in the iteration space. */
    int64_t st[NNK_MAX_TENSORS + 1][NNK_MAX_DIMS];
    for (int32_t k = 0; k < nops; k++) {
        const nnk_view *v = views[k];
        int is_red = k >= nin && reduced && reduced[k];
        if (k < nin && reduced && reduced[k]) {
            for (int32_t d = 0; d < ndim; d++)
                st[k][d] = 0;
            continue;
        }
        if (k >= nin && !is_red) {
            int ok = v->ndim == ndim;
            for (int32_t d = 0; ok && d < ndim; d++)
                ok = v->shape[d] == shape[d];
            if (!ok) {
                nnk_msg_str_(&m, "output ");
                nnk_msg_int_(&m, k - nin);
                nnk_msg_str_(&m, " has shape ");
                nnk_msg_shape_(&m, v->ndim, v->shape);
                nnk_msg_str_(&m, " but the result has shape ");
                if (nin_shaped) /* not the leading 1s of the outputs' rank */
                    nnk_msg_shape_(&m, ndim_in, shape + (ndim - ndim_in));
                else
                    nnk_msg_shape_(&m, ndim, shape);
                return NNK_PLAN_EOUTPUT;
            }
        }
        if (is_red) {
            int32_t nkeep = 0;
            for (int32_t d = 0; d < ndim; d++)
                nkeep += !red[d];
            int keepdims = v->ndim == ndim && ndim != nkeep;
            int ok = v->ndim == (keepdims ? ndim : nkeep);
            int32_t j = 0;
            for (int32_t d = 0; ok && d < ndim; d++) {
                if (red[d]) {
                    if (keepdims)
                        ok = v->shape[j] == 1, st[k][d] = 0, j++;
                    else
                        st[k][d] = 0;
                } else {
                    ok = v->shape[j] == shape[d];
                    st[k][d] = v->strides[j];
                    j++;
                }
            }
            if (!ok) {
                nnk_msg_str_(&m, "reduced output ");
                nnk_msg_int_(&m, k - nin);
                nnk_msg_str_(&m, " has shape ");
                nnk_msg_shape_(&m, v->ndim, v->shape);
                nnk_msg_str_(&m, ", which is not the reduced shape of ");
                nnk_msg_shape_(&m, ndim, shape);
                return NNK_PLAN_EOUTPUT;
            }
            continue;
        }
        for (int32_t d = 0; d < ndim; d++) {
            int32_t vd = d - (ndim - v->ndim);
            st[k][d] = vd < 0 || v->shape[vd] == 1 ? 0 : v->strides[vd];
        }
    }
    /* the idx operand: row-major strides of the iteration space */
    {
        int64_t s = 1;
        for (int32_t d = ndim - 1; d >= 0; d--) {
            st[nops][d] = shape[d] == 1 ? 0 : s;
            s *= shape[d];
        }
    }

    /* 4. Kept axes first, reduced axes last, each group in order; extents
     * of 1 contribute nothing and are dropped. */
    int32_t order[NNK_MAX_DIMS], n = 0, nred = 0;
    for (int32_t pass = 0; pass < 2; pass++)
        for (int32_t d = 0; d < ndim; d++)
            if (red[d] == pass && shape[d] != 1)
                order[n++] = d, nred += pass;

    /* 5. Merge an axis into the plan axis before it (same group) when that
     * one steps exactly over it for every operand. */
    p->abi = NNK_ABI_VERSION;
    p->nops = nops;
    int32_t out = 0, outred = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = order[i];
        int is_red = i >= n - nred;
        if (out > 0 && (outred > 0) == is_red) {
            int32_t q = out - 1;
            int can = 1;
            for (int32_t k = 0; can && k <= nops; k++)
                can = p->strides[k][q] == st[k][d] * shape[d];
            if (can) {
                p->shape[q] *= shape[d];
                for (int32_t k = 0; k <= nops; k++)
                    p->strides[k][q] = st[k][d];
                continue;
            }
        }
        p->shape[out] = shape[d];
        for (int32_t k = 0; k <= nops; k++)
            p->strides[k][out] = st[k][d];
        out++;
        outred += is_red;
    }
    p->ndim = out;
    p->nred = outred;
    p->nkept = 1;
    p->nreduced = 1;
    for (int32_t d = 0; d < out; d++) {
        if (d < out - outred)
            p->nkept *= p->shape[d];
        else
            p->nreduced *= p->shape[d];
    }
    for (int32_t k = 0; k < nops; k++)
        p->data[k] = (char *)views[k]->data;
    return NNK_PLAN_OK;
}

/* ---- outputs that share memory with inputs (docs/c-backend.md, "In place")
 * The contiguous loops take restrict pointers, so the compiler may move an
 * output's store ahead of a load of the same memory through an input.  A
 * call where an output may share memory with an input takes loops that do
 * not let it (no restrict, or inputs copied first); these tests pick them,
 * once per call.  size[k] is the element size of operand k in bytes, 0 for
 * one the kernel does not touch (operands 0..nin-1 are the inputs).  Not
 * every file calls every test. */

/* ---- raw (indexed) parameters (docs/language.md, "Raw parameters") ------------
 * slot[k] is 1 + the raw slot of operand k, 0 for the others (which
 * nnk_plan_build took as reduced[k] != 0).  After nnk_plan_build,
 * nnk_plan_raw_ copies the raw views into p->raw (checked: rank, extents,
 * an element count int64_t holds) and points p->range at *range. */
NNK_PLAN_UNUSED_ static int nnk_plan_raw_(nnk_plan *p, int32_t nops, const nnk_view *const *views, const int8_t *slot,
                                         nnk_range_error *range, char *err, unsigned long errlen)
{
    nnk_msg_ m = {err, errlen, 0};
    p->nraw = 0;
    for (int32_t k = 0; k < nops; k++) {
        if (!slot[k])
            continue;
        const nnk_view *v = views[k];
        int32_t r = slot[k] - 1;
        if (r >= NNK_MAX_RAW || !v || v->ndim < 0 || v->ndim > NNK_MAX_DIMS ||
            (v->ndim > 0 && (!v->shape || !v->strides))) {
            nnk_msg_str_(&m, "raw operand ");
            nnk_msg_int_(&m, k);
            nnk_msg_str_(&m, v && v->ndim > NNK_MAX_DIMS ? " has too many dimensions" : " is not a valid array view");
            return v && v->ndim > NNK_MAX_DIMS ? NNK_PLAN_ERANK : NNK_PLAN_EARGS;
        }
        nnk_raw_view *w = &p->raw[r];
        w->data = (const char *)v->data;
        w->ndim = v->ndim;
        w->operand = k;
        w->size = 1;
        for (int32_t d = 0; d < v->ndim; d++) {
            int64_t e = v->shape[d];
            if (e < 0 || (e > 0 && w->size > INT64_MAX / e)) {
                nnk_msg_str_(&m, e < 0 ? "negative extent in raw operand " : "too many elements in raw operand ");
                nnk_msg_int_(&m, k);
                return NNK_PLAN_EARGS;
            }
            w->size *= e;
            w->shape[d] = e;
            w->strides[d] = v->strides[d];
        }
        /* the kernel's offsets are sums of index times stride: the
         * extremes of those sums must fit an int64_t (a hostile view) */
        int64_t reach = 0;
        for (int32_t d = 0; d < v->ndim && w->size > 0; d++) {
            int64_t st = v->strides[d], e = v->shape[d] - 1;
            if (st == INT64_MIN || (e > 0 && (st < 0 ? -st : st) > (INT64_MAX - reach) / e)) {
                nnk_msg_str_(&m, "the strides of raw operand ");
                nnk_msg_int_(&m, k);
                nnk_msg_str_(&m, " reach past what an int64_t offset holds");
                return NNK_PLAN_EARGS;
            }
            reach += e * (st < 0 ? -st : st);
        }
        if (r + 1 > p->nraw)
            p->nraw = r + 1;
    }
    *range = (nnk_range_error){0, 0, 0, 0, 0, 0};
    p->range = range;
    return NNK_PLAN_OK;
}

/* Whether an output's byte range [lo, hi) meets an input's. */
NNK_PLAN_UNUSED_ static int nnk_spans_meet_(int32_t nin, int32_t nops, const uintptr_t *lo, const uintptr_t *hi, const uint8_t *size)
{
    for (int32_t o = nin; o < nops; o++)
        for (int32_t k = 0; size[o] && k < nin; k++)
            if (size[k] && lo[o] < hi[k] && lo[k] < hi[o])
                return 1;
    return 0;
}

/* Whether the a_bytes from a meet the b_bytes from b (the contiguous
 * entry points ask it of each pair). */
NNK_PLAN_UNUSED_ static inline int nnk_meet_(const void *a, int64_t a_bytes, const void *b, int64_t b_bytes)
{
    return (uintptr_t)a < (uintptr_t)b + (uintptr_t)b_bytes && (uintptr_t)b < (uintptr_t)a + (uintptr_t)a_bytes;
}

/* The byte range operand k of a plan touches (a plan of no element touches
 * nothing: lo == hi). */
NNK_PLAN_UNUSED_ static void nnk_plan_span_(const nnk_plan *p, int32_t k, int64_t size, uintptr_t *lo, uintptr_t *hi)
{
    int64_t a = 0, b = 0;
    for (int32_t d = 0; d < p->ndim; d++) {
        if (p->shape[d] == 0) {
            *lo = *hi = (uintptr_t)p->data[k];
            return;
        }
        const int64_t e = (p->shape[d] - 1) * p->strides[k][d];
        if (e < 0)
            a += e;
        else
            b += e;
    }
    *lo = (uintptr_t)p->data[k] + (uintptr_t)(a * size);
    *hi = (uintptr_t)p->data[k] + (uintptr_t)((b + 1) * size);
}

/* Whether an output of the plan may share memory with an input. */
NNK_PLAN_UNUSED_ NNK_NOINLINE_ static int nnk_plan_overlap_(const nnk_plan *p, int32_t nin, const uint8_t *size)
{
    uintptr_t lo[NNK_MAX_TENSORS], hi[NNK_MAX_TENSORS];
    if (p->nops > NNK_MAX_TENSORS)
        return 1;
    for (int32_t k = 0; k < p->nops; k++)
        nnk_plan_span_(p, k, size[k], &lo[k], &hi[k]);
    return nnk_spans_meet_(nin, p->nops, lo, hi, size);
}
