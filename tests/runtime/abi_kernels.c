/* abi_kernels.c - hand-written kernel descriptors (see abi_kernels.h).
 * Plain and slow on purpose: every element goes through the plan's
 * strides, so any plan the runtime builds is computed correctly. */
#include "abi_kernels.h"

#include <math.h>

/* Offset in elements of operand k at kept position o and reduced position r. */
static int64_t offset(const nnk_plan *p, int k, int64_t o, int64_t r)
{
    int64_t off = 0;
    int32_t k0 = p->ndim - p->nred;
    for (int32_t d = k0 - 1; d >= 0; d--) {
        off += (o % p->shape[d]) * p->strides[k][d];
        o /= p->shape[d];
    }
    for (int32_t d = p->ndim - 1; d >= k0 && r; d--) { /* r == 0 for an empty slice's epilogue */
        off += (r % p->shape[d]) * p->strides[k][d];
        r /= p->shape[d];
    }
    return off;
}

#define AT(p, k, T, o, r) (((T *)(p)->data[k])[offset(p, k, o, r)])

/* ---- saxpy ---- */

static void saxpy_run(const nnk_plan *p, int64_t b, int64_t e)
{
    float a = p->scalars[0].f32;
    for (int64_t i = b; i < e; i++)
        AT(p, 2, float, i, 0) = a * AT(p, 0, const float, i, 0) + AT(p, 1, const float, i, 0);
}

static const nnk_param_desc saxpy_params[] = {
    {"a", NNK_F32, NNK_PARAM_DEFAULT, {.f32 = 2.0f}},
    {"x", NNK_F32, NNK_PARAM_TENSOR, {0}},
    {"y", NNK_F32, NNK_PARAM_TENSOR, {0}},
    {"z", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}},
};

const nnk_kernel_desc abi_saxpy = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_ELEMENTWISE, .name = "saxpy", .kernel = "saxpy",
    .nparams = 3, .nouts = 1, .params = saxpy_params, .run = saxpy_run,
};

/* ---- take: a raw parameter ---- */

static void take_run(const nnk_plan *p, int64_t b, int64_t e)
{
    const nnk_raw_view *t = &p->raw[0];
    for (int64_t i = b; i < e; i++) {
        int64_t k = AT(p, 1, const int64_t, i, 0);
        float v = 0;
        if (t->ndim != 1 || k < 0 || k >= t->shape[0]) {
            if (p->range && !p->range->set)
                *p->range = (nnk_range_error){1, 0, -1, 0, k, t->size};
        } else {
            v = ((const float *)t->data)[k * t->strides[0]];
        }
        AT(p, 2, float, i, 0) = v;
    }
}

static const nnk_param_desc take_params[] = {
    {"t", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_RAW, {0}},
    {"k", NNK_I64, NNK_PARAM_TENSOR, {0}},
    {"y", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}},
};

const nnk_kernel_desc abi_take = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_ELEMENTWISE, .name = "take", .kernel = "take",
    .nparams = 2, .nouts = 1, .params = take_params, .run = take_run,
};

/* ---- bump: an inout parameter ---- */

static void bump_run(const nnk_plan *p, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++)
        AT(p, 2, float, i, 0) = AT(p, 1, const float, i, 0) + AT(p, 0, const float, i, 0);
}

static const nnk_param_desc bump_params[] = {
    {"x", NNK_F32, NNK_PARAM_TENSOR, {0}},
    {"y", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_INOUT, {0}},
    {"y", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT | NNK_PARAM_INOUT, {0}},
};

const nnk_kernel_desc abi_bump = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_ELEMENTWISE, .name = "bump", .kernel = "bump",
    .nparams = 2, .nouts = 1, .params = bump_params, .run = bump_run,
};

static const nnk_param_desc bad_inout_params[] = {
    {"x", NNK_F32, NNK_PARAM_TENSOR, {0}},
    {"w", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT | NNK_PARAM_INOUT, {0}},
};

const nnk_kernel_desc abi_bad_inout = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_ELEMENTWISE, .name = "bad_inout", .kernel = "bad_inout",
    .nparams = 1, .nouts = 1, .params = bad_inout_params, .run = bump_run,
};

/* ---- sum ---- */

static void sum_partial(const nnk_plan *p, int32_t phase, int64_t o, int64_t r0, int64_t r1, const void *finals,
                        void *state)
{
    double s = 0;
    for (int64_t r = r0; r < r1; r++)
        s += AT(p, 0, const double, o, r);
    *(double *)state = s;
}

static void sum_merge(const nnk_plan *p, int32_t phase, void *acc, const void *other)
{
    *(double *)acc += *(const double *)other;
}

static void sum_final(const nnk_plan *p, int32_t phase, int64_t o, const void *state, void *finals)
{
    *(double *)finals = *(const double *)state;
}

static void sum_epilogue(const nnk_plan *p, int64_t o, int64_t r0, int64_t r1, const void *finals)
{
    if (r0 == 0)
        AT(p, 1, double, o, 0) = *(const double *)finals;
}

static void sum_run(const nnk_plan *p, int64_t b, int64_t e)
{
    for (int64_t o = b; o < e; o++) {
        double s;
        sum_partial(p, 1, o, 0, p->nreduced, 0, &s);
        sum_epilogue(p, o, 0, p->nreduced, &s);
    }
}

static const int32_t one_double[] = {8};

static const nnk_param_desc sum_params[] = {
    {"x", NNK_F64, NNK_PARAM_TENSOR, {0}},
    {"r", NNK_F64, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT | NNK_PARAM_REDUCED, {0}},
};

const nnk_kernel_desc abi_sum = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_REDUCTION, .name = "sum", .kernel = "sum",
    .nparams = 1, .nouts = 1, .params = sum_params, .run = sum_run,
    .nphases = 1, .finals_size = 8, .state_size = one_double,
    .red_partial = sum_partial, .red_merge = sum_merge, .red_final = sum_final, .red_epilogue = sum_epilogue,
};

/* ---- center: a tensor epilogue ---- */

static void center_final(const nnk_plan *p, int32_t phase, int64_t o, const void *state, void *finals)
{
    *(double *)finals = p->nreduced ? *(const double *)state / (double)p->nreduced : NAN;
}

static void center_epilogue(const nnk_plan *p, int64_t o, int64_t r0, int64_t r1, const void *finals)
{
    double m = *(const double *)finals;
    for (int64_t r = r0; r < r1; r++)
        AT(p, 1, double, o, r) = AT(p, 0, const double, o, r) - m;
    if (r0 == 0)
        AT(p, 2, double, o, 0) = m;
}

static void center_run(const nnk_plan *p, int64_t b, int64_t e)
{
    for (int64_t o = b; o < e; o++) {
        double s, m;
        sum_partial(p, 1, o, 0, p->nreduced, 0, &s);
        center_final(p, 1, o, &s, &m);
        center_epilogue(p, o, 0, p->nreduced, &m);
    }
}

static const nnk_param_desc center_params[] = {
    {"x", NNK_F64, NNK_PARAM_TENSOR, {0}},
    {"y", NNK_F64, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}},
    {"m", NNK_F64, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT | NNK_PARAM_REDUCED, {0}},
};

const nnk_kernel_desc abi_center = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_REDUCTION, .name = "center", .kernel = "center",
    .nparams = 1, .nouts = 2, .params = center_params, .run = center_run,
    .nphases = 1, .finals_size = 8, .state_size = one_double,
    .red_partial = sum_partial, .red_merge = sum_merge, .red_final = center_final, .red_epilogue = center_epilogue,
};

/* ---- argmax: run only (no split), with the empty-slice check ---- */

static void argmax_run(const nnk_plan *p, int64_t b, int64_t e)
{
    for (int64_t o = b; o < e; o++) {
        int64_t best = 0;
        for (int64_t r = 1; r < p->nreduced; r++)
            if (AT(p, 0, const double, o, r) > AT(p, 0, const double, o, best))
                best = r;
        AT(p, 1, int64_t, o, 0) = best;
    }
}

static const nnk_param_desc argmax_params[] = {
    {"x", NNK_F64, NNK_PARAM_TENSOR, {0}},
    {"i", NNK_I64, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT | NNK_PARAM_REDUCED, {0}},
};

const nnk_kernel_desc abi_argmax = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_REDUCTION, .name = "argmax", .kernel = "argmax",
    .nparams = 1, .nouts = 1, .params = argmax_params, .run = argmax_run, .argmax_empty_error = 1,
};
