/* fatgpu.c - a fat object on the GPU (tests/gpu/run.sh): the object
 * nnkc -c made of tests/cuda/kernels/fat.nnk with nvcc, its embedded
 * fatbin loaded by the cuda extension:
 *   - NAME_cuda on device pointers (from nnk arrays of a cuda context) and
 *     the default stream: elementwise, a reduction and an epilogue
 *     (NAME__cu_sizes read from the fatbin);
 *   - NAME_run on arrays of a cuda context (kernel_load of the fatbin);
 * every result against the object's own CPU entry points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nnk/nnk.h>

#include "fat.h"

static int failures;
#define CHECK(cond, ...)                                                                                 \
    do {                                                                                                 \
        printf("%s ", (cond) ? "ok  " : "FAIL");                                                         \
        printf(__VA_ARGS__);                                                                             \
        printf("\n");                                                                                    \
        failures += !(cond);                                                                             \
    } while (0)
#define NNK(call)                                                                                        \
    do {                                                                                                 \
        nnk_status s_ = (call);                                                                          \
        if (s_) {                                                                                        \
            printf("FAIL %s: %s: %s\n", #call, nnk_status_name(s_), nnk_last_error());                   \
            return 1;                                                                                    \
        }                                                                                                \
    } while (0)

enum { N = 1 << 20, OUTER = 64, LEN = 4099 };

static double maxrel(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + 1e-30);
        m = d > m ? d : m;
    }
    return m;
}

int main(void)
{
    nnk_context *ctx;
    NNK(nnk_get_extension_context("cuda", "device_id=0", &ctx));
    printf("context: %s\n", nnk_context_str(ctx));
    nnk_extension *ext;
    NNK(nnk_import_extension("cuda", &ext));

    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *z = malloc(sizeof(float) * N),
          *ref = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 1000) * 0.001f - 0.5f;
        y[i] = (float)(i % 7);
    }
    int64_t shape[1] = {N};
    nnk_array *dx, *dy, *dz;
    NNK(nnk_array_from_host(ctx, NNK_F32, 1, shape, x, &dx));
    NNK(nnk_array_from_host(ctx, NNK_F32, 1, shape, y, &dy));
    NNK(nnk_array_new(ctx, NNK_F32, 1, shape, &dz));

    /* NAME_cuda: device pointers, default stream */
    saxpy(N, 2.0f, x, y, ref);
    int st = saxpy_cuda(N, 2.0f, nnk_array_data(dx), nnk_array_data(dy), nnk_array_data(dz), NULL);
    CHECK(st == 0, "saxpy_cuda: %d %s", st, st ? nnk_last_error() : "");
    NNK(nnk_extension_device_synchronize(ext, 0));
    NNK(nnk_array_to_host(dz, NNK_F32, z, sizeof(float) * N));
    CHECK(memcmp(z, ref, sizeof(float) * N) == 0, "saxpy_cuda equals the CPU entry bit for bit");

    float r[OUTER], rref[OUTER];
    l2norm_f32(OUTER, LEN, 1, x, rref);
    int64_t rs[1] = {OUTER};
    nnk_array *dr;
    NNK(nnk_array_new(ctx, NNK_F32, 1, rs, &dr));
    st = l2norm_f32_cuda(OUTER, LEN, 1, nnk_array_data(dx), nnk_array_data(dr), NULL);
    CHECK(st == 0, "l2norm_f32_cuda: %d %s", st, st ? nnk_last_error() : "");
    NNK(nnk_extension_device_synchronize(ext, 0));
    NNK(nnk_array_to_host(dr, NNK_F32, r, sizeof r));
    CHECK(maxrel(r, rref, OUTER) < 1e-5, "l2norm_f32_cuda against the CPU: max relative difference %g",
          maxrel(r, rref, OUTER));
    /* one long row: the split path (rd_part, rd_fin, rd_epi) */
    st = l2norm_f32_cuda(1, N, 1, nnk_array_data(dx), nnk_array_data(dr), NULL);
    l2norm_f32(1, N, 1, x, rref);
    NNK(nnk_extension_device_synchronize(ext, 0));
    NNK(nnk_array_to_host(dr, NNK_F32, r, sizeof(float)));
    CHECK(st == 0 && maxrel(r, rref, 1) < 1e-5, "l2norm_f32_cuda of one row of %d: %g vs %g", N, r[0], rref[0]);

    softmax_f32(OUTER, LEN, 1, x, ref);
    st = softmax_f32_cuda(OUTER, LEN, 1, nnk_array_data(dx), nnk_array_data(dz), NULL);
    NNK(nnk_extension_device_synchronize(ext, 0));
    NNK(nnk_array_to_host(dz, NNK_F32, z, sizeof(float) * OUTER * LEN));
    CHECK(st == 0 && maxrel(z, ref, (size_t)OUTER * LEN) < 1e-4, "softmax_f32_cuda: max relative difference %g",
          maxrel(z, ref, (size_t)OUTER * LEN));

    /* NAME_run on a cuda context: the runtime loads the fatbin (kernel_load) */
    st = saxpy_run(ctx, 2.0f, dx, dy, dz);
    CHECK(st == 0, "saxpy_run on the GPU: %d %s", st, st ? nnk_last_error() : "");
    NNK(nnk_array_to_host(dz, NNK_F32, z, sizeof(float) * N));
    saxpy(N, 2.0f, x, y, ref);
    CHECK(memcmp(z, ref, sizeof(float) * N) == 0, "saxpy_run equals the CPU entry bit for bit");
    nnk_array *dx2, *dr2;
    int64_t s2[2] = {OUTER, LEN};
    NNK(nnk_array_from_host(ctx, NNK_F32, 2, s2, x, &dx2));
    NNK(nnk_array_new(ctx, NNK_F32, 1, rs, &dr2));
    const int32_t axis = 1;
    st = l2norm_f32_run(ctx, 1, &axis, dx2, dr2);
    l2norm_f32(OUTER, LEN, 1, x, rref);
    NNK(nnk_array_to_host(dr2, NNK_F32, r, sizeof r));
    CHECK(st == 0 && maxrel(r, rref, OUTER) < 1e-5, "l2norm_f32_run on the GPU: %d %s", st, st ? nnk_last_error() : "");

    nnk_array_free(dx);
    nnk_array_free(dy);
    nnk_array_free(dz);
    nnk_array_free(dr);
    nnk_array_free(dx2);
    nnk_array_free(dr2);
    nnk_context_free(ctx);
    nnk_shutdown();
    free(x);
    free(y);
    free(z);
    free(ref);
    printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
    return failures != 0;
}
