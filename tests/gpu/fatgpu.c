/* fatgpu.c - a fat object on the GPU (tests/gpu/run.sh): the object
 * nnkc -c made of tests/cuda/kernels/fat.nnk with nvcc, its embedded
 * fatbin loaded by the cuda extension:
 *   - NAME_cuda on device pointers (from nnk arrays of a cuda context) and
 *     the default stream: elementwise, a reduction and an epilogue
 *     (NAME__cu_sizes read from the fatbin);
 *   - NAME_run on arrays of a cuda context (kernel_load of the fatbin);
 *   - NAME_cuda on two non-blocking streams at once (split reductions,
 *     their scratch stream-ordered), and captured into a CUDA graph that
 *     is launched twice (no synchronisation inside NAME_cuda);
 * every result against the object's own CPU entry points.  The driver
 * API comes from libcuda.so.1 with dlopen (no CUDA header needed). */
#include <dlfcn.h>
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

/* The few driver calls of the stream tests (libcuda.so.1 with dlopen). */
typedef int (*cu_stream_create)(void **s, unsigned flags);
typedef int (*cu_stream_1)(void *s);
typedef int (*cu_begin_capture)(void *s, int mode);
typedef int (*cu_end_capture)(void *s, void **graph);
typedef int (*cu_graph_instantiate)(void **exec, void *graph, unsigned long long flags);
typedef int (*cu_graph_launch)(void *exec, void *s);
typedef int (*cu_destroy)(void *g);

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

    /* NAME_cuda on two non-blocking streams at once: split reductions of
     * one row of N (rd_part, rd_fin, rd_epi), scratch in stream order */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    cu_stream_create create = lib ? (cu_stream_create)dlsym(lib, "cuStreamCreate") : NULL;
    cu_stream_1 ssync = lib ? (cu_stream_1)dlsym(lib, "cuStreamSynchronize") : NULL;
    cu_stream_1 sdestroy = lib ? (cu_stream_1)dlsym(lib, "cuStreamDestroy_v2") : NULL;
    cu_begin_capture begin = lib ? (cu_begin_capture)dlsym(lib, "cuStreamBeginCapture_v2") : NULL;
    cu_end_capture end = lib ? (cu_end_capture)dlsym(lib, "cuStreamEndCapture") : NULL;
    cu_graph_instantiate inst = lib ? (cu_graph_instantiate)dlsym(lib, "cuGraphInstantiateWithFlags") : NULL;
    cu_graph_launch glaunch = lib ? (cu_graph_launch)dlsym(lib, "cuGraphLaunch") : NULL;
    cu_destroy gdestroy = lib ? (cu_destroy)dlsym(lib, "cuGraphDestroy") : NULL;
    cu_destroy edestroy = lib ? (cu_destroy)dlsym(lib, "cuGraphExecDestroy") : NULL;
    CHECK(create && ssync && sdestroy && begin && end && inst && glaunch && gdestroy && edestroy,
          "the driver's stream and graph entry points");
    if (create && ssync && sdestroy && begin && end && inst && glaunch && gdestroy && edestroy) {
        void *s1 = NULL, *s2 = NULL;
        CHECK(create(&s1, 1) == 0 && create(&s2, 1) == 0, "two non-blocking streams");
        nnk_array *dr3;
        int64_t two[1] = {2};
        NNK(nnk_array_new(ctx, NNK_F32, 1, two, &dr3));
        float *o = nnk_array_data(dr3), got[2];
        l2norm_f32(1, N, 1, x, rref);
        int ok = 1;
        for (int round = 0; round < 20 && ok; round++) {
            int a = l2norm_f32_cuda(1, N, 1, nnk_array_data(dx), o, s1);
            int b = l2norm_f32_cuda(1, N, 1, nnk_array_data(dy), o + 1, s2);
            ok = a == 0 && b == 0 && ssync(s1) == 0 && ssync(s2) == 0;
        }
        NNK(nnk_array_to_host(dr3, NNK_F32, got, sizeof got));
        float yref[1];
        l2norm_f32(1, N, 1, y, yref);
        CHECK(ok && maxrel(got, rref, 1) < 1e-5 && maxrel(got + 1, yref, 1) < 1e-5,
              "split reductions on two non-blocking streams, 20 rounds: %g %g (CPU %g %g)", got[0], got[1], rref[0],
              yref[0]);
        /* stream capture: NAME_cuda queues only (CU_STREAM_CAPTURE_MODE_GLOBAL = 0) */
        void *graph = NULL, *exec = NULL;
        int cb = begin(s1, 0);
        int st1 = l2norm_f32_cuda(1, N, 1, nnk_array_data(dx), o, s1);
        int st2 = saxpy_cuda(N, 3.0f, nnk_array_data(dx), nnk_array_data(dy), nnk_array_data(dz), s1);
        int ce = end(s1, &graph);
        CHECK(cb == 0 && st1 == 0 && st2 == 0 && ce == 0 && graph, "NAME_cuda under stream capture: begin %d, %d %s, "
              "%d, end %d", cb, st1, st1 ? nnk_last_error() : "", st2, ce);
        if (graph && inst(&exec, graph, 0) == 0) {
            int gl = glaunch(exec, s1) == 0 && glaunch(exec, s1) == 0 && ssync(s1) == 0;
            NNK(nnk_array_to_host(dr3, NNK_F32, got, sizeof got));
            NNK(nnk_array_to_host(dz, NNK_F32, z, sizeof(float) * N));
            saxpy(N, 3.0f, x, y, ref);
            CHECK(gl && maxrel(got, rref, 1) < 1e-5 && memcmp(z, ref, sizeof(float) * N) == 0,
                  "the captured graph, launched twice: l2norm %g (CPU %g), saxpy bit for bit", got[0], rref[0]);
            edestroy(exec);
        } else {
            CHECK(0, "the captured graph instantiates");
        }
        if (graph)
            gdestroy(graph);
        nnk_array_free(dr3);
        sdestroy(s1);
        sdestroy(s2);
    }

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
