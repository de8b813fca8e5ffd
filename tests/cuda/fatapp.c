/* fatapp.c - an application of a fat object (tests/cuda/fatobj-check.sh).
 *
 * Built twice from the object nnkc -c made of kernels/fat.nnk: with libnnk
 * (-DWITH_NNK, -lnnk) and without it (no -lnnk at all: the object's
 * references to libnnk are weak).  On a machine without a GPU both run the
 * CPU code; NAME_run then runs on the cpu backend with libnnk and returns
 * NNK_EUNSUPPORTED (8) without it; NAME_cuda reports that there is no GPU.
 *
 *     fatapp cuda|nocuda     whether the object should carry GPU code
 * Prints what it checks; exit 0 when everything holds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat.h"
#ifdef WITH_NNK
#include <nnk/nnk.h>
#endif

static int failures;

#define CHECK(cond, ...)                                                                                 \
    do {                                                                                                 \
        if (cond) {                                                                                      \
            printf("ok   ");                                                                             \
        } else {                                                                                         \
            printf("FAIL ");                                                                             \
            failures++;                                                                                  \
        }                                                                                                \
        printf(__VA_ARGS__);                                                                             \
        printf("\n");                                                                                    \
    } while (0)

enum { N = 1000, OUTER = 3, LEN = 257 };

static float x[N], y[N], z[N], ref[N];

int main(int argc, char **argv)
{
    int want_cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 17) - 8.0f;
        y[i] = (float)i * 0.25f;
        ref[i] = 2.0f * x[i] + y[i];
    }

    /* the descriptor points at the embedded fatbin */
    if (want_cuda) {
        CHECK(saxpy__desc.cuda_image && saxpy__desc.cuda_image_size > 1000 && saxpy__desc.cuda_symbol &&
                  strcmp(saxpy__desc.cuda_symbol, "saxpy") == 0 && l2norm_f32__desc.cuda_image == saxpy__desc.cuda_image,
              "descriptors point at the fatbin (%llu bytes), symbol '%s'",
              (unsigned long long)saxpy__desc.cuda_image_size, saxpy__desc.cuda_symbol ? saxpy__desc.cuda_symbol : "");
        const unsigned char *img = saxpy__desc.cuda_image;
        CHECK(img && img[0] == 0x50 && img[1] == 0xed && img[2] == 0x55 && img[3] == 0xba &&
                  ((uintptr_t)img & 7) == 0,
              "the image is an aligned fatbin");
    } else {
        CHECK(!saxpy__desc.cuda_image && saxpy__desc.cuda_image_size == 0 && !saxpy__desc.cuda_symbol,
              "a CPU-only object has no CUDA image");
    }

    /* the CPU entry points need no library */
    saxpy(N, 2.0f, x, y, z);
    CHECK(memcmp(z, ref, sizeof z) == 0, "saxpy on the CPU");
    float r[OUTER];
    l2norm_f32(OUTER, LEN, 1, x, r);
    double s0 = 0;
    for (int i = 0; i < LEN; i++)
        s0 += (double)x[i] * x[i];
    CHECK(fabs(r[0] - sqrt(s0)) < 1e-3 * sqrt(s0), "l2norm on the CPU: %g (expected %g)", r[0], sqrt(s0));

    /* NAME_cuda: through libnnk to the cuda extension */
    int st = saxpy_cuda(N, 2.0f, x, y, z, NULL);
#ifdef WITH_NNK
    CHECK(st == NNK_EUNSUPPORTED, "saxpy_cuda without a GPU: %d (%s)", st, st ? nnk_last_error() : "");
#else
    CHECK(st == 8, "saxpy_cuda without libnnk: %d (NNK_EUNSUPPORTED)", st);
#endif

#ifdef WITH_NNK
    /* NAME_run on the cpu backend (the default context) */
    int64_t shape[1] = {N}, shape2[2] = {OUTER, LEN}, rshape[1] = {OUTER};
    nnk_array *ax, *ay, *az, *bx, *br, *bs;
    static float sm[OUTER * LEN];
    nnk_array_wrap(NNK_F32, 1, shape, NULL, x, &ax);
    nnk_array_wrap(NNK_F32, 1, shape, NULL, y, &ay);
    memset(z, 0, sizeof z);
    nnk_array_wrap(NNK_F32, 1, shape, NULL, z, &az);
    st = saxpy_run(NULL, 2.0f, ax, ay, az);
    CHECK(st == 0 && memcmp(z, ref, sizeof z) == 0, "saxpy_run on the default (cpu) context: %d %s", st,
          st ? nnk_last_error() : "");
    float r2[OUTER];
    nnk_array_wrap(NNK_F32, 2, shape2, NULL, x, &bx);
    nnk_array_wrap(NNK_F32, 1, rshape, NULL, r2, &br);
    const int32_t axis = 1;
    st = l2norm_f32_run(NULL, 1, &axis, bx, br);
    CHECK(st == 0 && memcmp(r, r2, sizeof r) == 0, "l2norm_f32_run over axis 1: %d %s", st, st ? nnk_last_error() : "");
    nnk_array_wrap(NNK_F32, 2, shape2, NULL, sm, &bs);
    st = softmax_f32_run(NULL, 1, &axis, bx, bs);
    double tot = 0;
    for (int i = 0; i < LEN; i++)
        tot += sm[i];
    CHECK(st == 0 && fabs(tot - 1) < 1e-4, "softmax_f32_run: rows sum to %g", tot);
    /* f16 scalars travel as bits */
    nnk_f16 hx[4] = {0x3c00, 0x4000, 0xbc00, 0}, hy[4]; /* 1, 2, -1, 0 */
    int64_t four[1] = {4};
    nnk_array *hxa, *hya;
    nnk_array_wrap(NNK_F16, 1, four, NULL, hx, &hxa);
    nnk_array_wrap(NNK_F16, 1, four, NULL, hy, &hya);
    st = scale_f16_run(NULL, hxa, 0x4200 /* 3 */, hya);
    CHECK(st == 0 && hy[0] == 0x4200 && hy[1] == 0x4600 && hy[2] == 0xc200 && hy[3] == 0,
          "scale_f16_run with an f16 scalar: %04x %04x %04x %04x", hy[0], hy[1], hy[2], hy[3]);
    /* a cuda context cannot be had here; the error says why */
    nnk_context *ctx = NULL;
    st = nnk_get_extension_context("cuda", NULL, &ctx);
    if (st == NNK_OK) {
        printf("note: this machine has a GPU: %s\n", nnk_context_str(ctx));
        nnk_context_free(ctx);
    } else {
        CHECK(st == NNK_EDEVICE || st == NNK_ENOTFOUND, "no cuda context: %s", nnk_last_error());
        nnk_get_extension_context("cpu", NULL, &ctx);
        st = saxpy_run(ctx, 2.0f, ax, ay, az);
        CHECK(st == 0 && memcmp(z, ref, sizeof z) == 0, "saxpy_run on an explicit cpu context");
        nnk_context_free(ctx);
    }
    nnk_array_free(ax);
    nnk_array_free(ay);
    nnk_array_free(az);
    nnk_array_free(bx);
    nnk_array_free(br);
    nnk_array_free(bs);
    nnk_array_free(hxa);
    nnk_array_free(hya);
    nnk_shutdown();
#else
    st = saxpy_run(NULL, 2.0f, NULL, NULL, NULL);
    CHECK(st == 8, "saxpy_run without libnnk: %d (NNK_EUNSUPPORTED)", st);
#endif
    printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
    return failures != 0;
}
