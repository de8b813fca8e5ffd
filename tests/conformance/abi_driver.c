/* abi_driver.c - runs reduction kernels the way the nnk runtime does when
 * it splits the reduced range over threads (nnk/abi.h: red_partial on
 * chunks, red_merge, red_final, red_epilogue) and checks that the outputs
 * are bit for bit those of run().  The chunks are aligned blocks of a
 * power-of-two multiple of NNK_LEAF (elements) and NNK_CLEAF (rows), and their states
 * are merged in the pairwise tree's order (a run of m chunks splits after
 * the largest power of two below m), as docs/c-backend.md asks of callers.
 *
 * Built by test_reduction.py with -DKERNELS_C='"abi.c"' (the generated C of
 * kernels/abi.nnk, included so the descriptors' static functions are here).
 * Prints one line per case; exits 1 on a mismatch. */
#include KERNELS_C

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 88172645463325252ull;

static float frand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) * 0x1p-53 * 8.0 - 4.0);
}

static void tree_merge(const nnk_kernel_desc *d, const nnk_plan *p, int32_t ph, char *st, size_t sz, int64_t c0, int64_t c1)
{
    if (c1 - c0 <= 1)
        return;
    int64_t m = 1;
    while (2 * m < c1 - c0)
        m *= 2;
    tree_merge(d, p, ph, st, sz, c0, c0 + m);
    tree_merge(d, p, ph, st, sz, c0 + m, c1);
    d->red_merge(p, ph, st + c0 * (int64_t)sz, st + (c0 + m) * (int64_t)sz);
}

static size_t dsize(int32_t dt)
{
    return dt == NNK_I64 || dt == NNK_F64 ? 8 : dt == NNK_F32 ? 4 : 1;
}

/* One case: a kernel whose tensors are f32 inputs and f32/i64 outputs. */
static int check(const nnk_kernel_desc *d, int32_t ndim, const int64_t *shape, int32_t naxes, const int32_t *axes,
                 int64_t chunk, int fortran)
{
    int64_t total = 1;
    for (int32_t i = 0; i < ndim; i++)
        total *= shape[i];
    int32_t nt = 0, nin = 0;
    const nnk_view *va[NNK_MAX_TENSORS], *vb[NNK_MAX_TENSORS];
    nnk_view views[2][NNK_MAX_TENSORS];
    int64_t strides[NNK_MAX_TENSORS][NNK_MAX_DIMS], rshape[NNK_MAX_TENSORS][NNK_MAX_DIMS];
    void *bufs[2][NNK_MAX_TENSORS] = {{0}};
    size_t bytes[NNK_MAX_TENSORS];
    uint8_t reduced[NNK_MAX_TENSORS] = {0};
    nnk_plan pa, pb;
    for (int32_t i = 0; i < d->nparams + d->nouts; i++) {
        const nnk_param_desc *pd = &d->params[i];
        if (!(pd->flags & NNK_PARAM_TENSOR))
            continue;
        int red = (pd->flags & NNK_PARAM_REDUCED) != 0;
        int32_t nd = 0;
        int64_t n = 1;
        for (int32_t k = 0; k < ndim; k++) {
            int is_red = 0;
            for (int32_t a = 0; a < naxes; a++)
                is_red |= axes[a] == k;
            if (red && is_red)
                continue;
            rshape[nt][nd++] = shape[k];
            n *= shape[k];
        }
        /* C order, or Fortran order (the first axis contiguous) for inputs */
        int64_t s = 1;
        if (fortran && !(pd->flags & NNK_PARAM_OUTPUT)) {
            for (int32_t k = 0; k < nd; k++)
                strides[nt][k] = s, s *= rshape[nt][k];
        } else {
            for (int32_t k = nd - 1; k >= 0; k--)
                strides[nt][k] = s, s *= rshape[nt][k];
        }
        bytes[nt] = (size_t)(n > 0 ? n : 1) * dsize(pd->dtype);
        for (int w = 0; w < 2; w++) {
            bufs[w][nt] = calloc(1, bytes[nt]);
            views[w][nt] = (nnk_view){bufs[w][nt], nd, rshape[nt], strides[nt]};
        }
        if (!(pd->flags & NNK_PARAM_OUTPUT)) {
            float *x = bufs[0][nt];
            for (int64_t e = 0; e < n; e++)
                x[e] = frand();
            memcpy(bufs[1][nt], bufs[0][nt], bytes[nt]);
            nin++;
        }
        reduced[nt] = (uint8_t)red;
        va[nt] = &views[0][nt];
        vb[nt] = &views[1][nt];
        nt++;
    }
    if (nnk_plan_build(&pa, nin, nt - nin, va, reduced, 1, naxes, axes, 0, 0) ||
        nnk_plan_build(&pb, nin, nt - nin, vb, reduced, 1, naxes, axes, 0, 0)) {
        printf("plan error\n");
        return 1;
    }
    for (int32_t i = 0, s = 0; i < d->nparams; i++)
        if (!(d->params[i].flags & NNK_PARAM_TENSOR))
            pa.scalars[s] = pb.scalars[s] = d->params[i].dflt, s++;
    /* A: run() */
    d->run(&pa, 0, pa.nkept);
    /* B: the runtime's split */
    int64_t nred = pb.nreduced, nch = nred > 0 ? (nred + chunk - 1) / chunk : 1;
    char *finals = calloc((size_t)(pb.nkept > 0 ? pb.nkept : 1), (size_t)d->finals_size);
    for (int32_t ph = 1; ph <= d->nphases; ph++) {
        size_t sz = (size_t)d->state_size[ph - 1];
        char *st = calloc((size_t)nch, sz);
        for (int64_t o = 0; o < pb.nkept; o++) {
            char *fo = finals + o * d->finals_size;
            for (int64_t c = 0; c < nch; c++) {
                int64_t r0 = c * chunk, r1 = r0 + chunk < nred ? r0 + chunk : nred;
                d->red_partial(&pb, ph, o, r0, r1, fo, st + c * (int64_t)sz);
            }
            tree_merge(d, &pb, ph, st, sz, 0, nch);
            d->red_final(&pb, ph, o, st, fo);
        }
        free(st);
    }
    for (int64_t o = 0; o < pb.nkept; o++)
        for (int64_t c = 0; c < nch; c++) {
            int64_t r0 = c * chunk, r1 = r0 + chunk < nred ? r0 + chunk : nred;
            d->red_epilogue(&pb, o, r0, r1, finals + o * d->finals_size);
        }
    free(finals);
    int bad = 0;
    for (int32_t t = nin; t < nt; t++)
        bad |= memcmp(bufs[0][t], bufs[1][t], bytes[t]) != 0;
    printf("%s %s shape", bad ? "MISMATCH" : "ok", d->name);
    for (int32_t i = 0; i < ndim; i++)
        printf("%s%lld", i ? "x" : " ", (long long)shape[i]);
    printf(" axes");
    for (int32_t a = 0; a < naxes; a++)
        printf(" %d", axes[a]);
    printf(" chunk %lld%s%s (%lld elements)\n", (long long)chunk, fortran ? " fortran" : "",
           d->red_partial && pa.nkept && sizeof(void *) ? "" : "", (long long)total);
    for (int32_t t = 0; t < nt; t++)
        free(bufs[0][t]), free(bufs[1][t]);
    return bad;
}

int main(void)
{
    const nnk_kernel_desc *ks[] = {&a_sum__desc, &a_softmax__desc, &a_stats__desc, &a_custom__desc, &a_layernorm__desc};
    struct { int32_t ndim; int64_t shape[3]; int32_t naxes; int32_t axes[3]; int fortran; } cases[] = {
        {2, {3, 5000}, 1, {1}, 0},       /* rows */
        {1, {100001}, 1, {0}, 0},        /* one long row */
        {2, {3000, 40}, 1, {0}, 0},      /* column order */
        {2, {40, 3000}, 1, {1}, 1},      /* column order again: Fortran input, reduce the last axis */
        {3, {6, 50, 70}, 2, {0, 2}, 0},  /* several axes: row order with segments */
        {3, {2, 7000, 3}, 1, {1}, 0},    /* [outer, len, inner]: column order, 3 positions */
        {2, {5, 0}, 1, {1}, 0},          /* empty slices */
    };
    /* the smallest chunk a caller may take (one leaf), a few leaves, the runtime's */
    const int64_t chunks[] = {NNK_LEAF, 4 * NNK_LEAF, NNK_SPLIT_CHUNK};
    int bad = 0;
    for (size_t k = 0; k < sizeof ks / sizeof *ks; k++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (size_t h = 0; h < sizeof chunks / sizeof *chunks; h++) {
                if (ks[k]->argmax_empty_error && cases[c].shape[1] == 0)
                    continue;
                bad |= check(ks[k], cases[c].ndim, cases[c].shape, cases[c].naxes, cases[c].axes, chunks[h],
                             cases[c].fortran);
            }
    return bad;
}
