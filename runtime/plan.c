/* plan.c - the runtime's use of the plan builder that generated code
 * shares (templates/c/plan.h, included as text so the broadcasting and
 * coalescing rules exist once). */
#include "internal.h"

#include "c/plan.h"

nnk_status rt_plan_build(nnk_plan *p, int32_t nin, int32_t nout, const nnk_view *const *views, const uint8_t *reduced,
                         bool is_reduction, int32_t naxes, const int32_t *axes)
{
    char msg[512];
    int r = nnk_plan_build(p, nin, nout, views, reduced, is_reduction, naxes, axes, msg, sizeof msg);
    switch (r) {
    case NNK_PLAN_OK: return NNK_OK;
    case NNK_PLAN_EARGS: return rt_error(NNK_EINVAL, "%s", msg);
    default: return rt_error(NNK_ESHAPE, "%s", msg);
    }
}

nnk_status rt_plan_raw(nnk_plan *p, int32_t nops, const nnk_view *const *views, const int8_t *slot,
                       nnk_range_error *range)
{
    char msg[512];
    int r = nnk_plan_raw_(p, nops, views, slot, range, msg, sizeof msg);
    return r == NNK_PLAN_OK ? NNK_OK : rt_error(r == NNK_PLAN_EARGS ? NNK_EINVAL : NNK_ESHAPE, "%s", msg);
}

/* The bytes a raw parameter's view spans (its own shape and strides). */
static void raw_span(const nnk_raw_view *v, int64_t size, uintptr_t *lo, uintptr_t *hi)
{
    int64_t a = 0, b = 0;
    for (int32_t d = 0; d < v->ndim; d++) {
        int64_t e = (v->shape[d] - 1) * v->strides[d];
        if (e < 0)
            a += e;
        else
            b += e;
    }
    *lo = *hi = (uintptr_t)v->data;
    if (v->size > 0) {
        *lo = (uintptr_t)v->data + (uintptr_t)(a * size);
        *hi = (uintptr_t)v->data + (uintptr_t)((b + 1) * size);
    }
}

/* numpy's rule for an output that overlaps an input (docs/runtime.md,
 * "In place"): the output may be that input element for element (the same
 * address, element size and strides in the plan: each element is read
 * before it is written); any other overlap makes the input one to copy.
 * A reduced-shape output is never the same: it is stored while the
 * position's tensor outputs may still read the input. */
uint32_t rt_plan_overlapping_inputs(const nnk_plan *p, int32_t nin, const uint8_t *size, const uint8_t *reduced)
{
    uintptr_t lo[NNK_MAX_TENSORS], hi[NNK_MAX_TENSORS];
    uint32_t copy = 0;
    if (p->nops > NNK_MAX_TENSORS)
        return 0;
    bool raw[NNK_MAX_TENSORS] = {0};
    for (int32_t k = 0; k < p->nops; k++)
        nnk_plan_span_(p, k, size[k], &lo[k], &hi[k]);
    /* a raw input is read anywhere in its view: any overlap copies it */
    for (int32_t r = 0; r < p->nraw && r < NNK_MAX_RAW; r++) {
        int32_t k = p->raw[r].operand;
        if (k < 0 || k >= nin)
            continue;
        raw[k] = true;
        raw_span(&p->raw[r], size[k], &lo[k], &hi[k]);
    }
    for (int32_t i = 0; i < nin; i++) {
        for (int32_t o = nin; o < p->nops && !(copy >> i & 1); o++) {
            if (!(lo[o] < hi[i] && lo[i] < hi[o]))
                continue;
            bool same = !raw[i] && !reduced[o] && p->data[o] == p->data[i] && size[o] == size[i];
            for (int32_t d = 0; same && d < p->ndim; d++)
                same = p->strides[o][d] == p->strides[i][d];
            if (!same)
                copy |= 1u << i;
        }
    }
    return copy;
}
