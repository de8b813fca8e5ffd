/* clrun RUN.nnk - runs the kernels of tests/opencl/run.nnk through the
 * OpenCL C that libnnkc writes (nnkc_module_emit, NNKC_TARGET_OPENCL) on the
 * first OpenCL device (PoCL in CI), with plans built here as the opencl
 * extension builds them, and checks the results against references
 * computed here: every elementwise path (contiguous with and without
 * vectors, strided with broadcasting), the three reduction orders (a
 * work-group per row, a work-item per row, split), the phase plan with an
 * epilogue (softmax), argmax ties, f16/bf16 rounding, integer semantics, and
 * that a reduction gives the same bits on every run.  The runtime's own
 * tests go through libnnk_ext_opencl.so; this one checks the compiler's
 * half alone.  Skips (77) without libOpenCL.so.1 or a device. */
#include "nnkc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nnk/abi.h"
#include "opencl/plan.h"
#include "cl_min.h"

static int failures;
#define CHECK(c, ...) ((c) ? (void)0 : (failures++, fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__), \
                                       fprintf(stderr, __VA_ARGS__), fputc('\n', stderr)))

static NnkcModule *mod;
static bool has_fp64;

/* The program of one instance, built. */
static cl_id program(const char *kernel)
{
    char *err = NULL;
    char *src = nnkc_module_emit(mod, kernel, NULL, NULL, NNKC_TARGET_OPENCL, NULL, &err);
    if (!src) {
        fprintf(stderr, "%s: %s\n", kernel, err ? err : "out of memory");
        free(err);
        exit(1);
    }
    cl_id p = strstr(src, "#define NNK_NEEDS_FP64") && !has_fp64 ? NULL : cl_build(kernel, src, "-cl-std=CL1.2");
    free(src);
    return p;
}

static cl_id buffer(size_t bytes, const void *init)
{
    cl_int err;
    cl_id b = cl.CreateBuffer(cl.ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0), bytes ? bytes : 1,
                              (void *)init, &err);
    CHECK(b, "clCreateBuffer: %d", (int)err);
    return b;
}

static void readback(cl_id b, size_t bytes, void *out)
{
    CHECK(cl.EnqueueReadBuffer(cl.queue, b, 1, 0, bytes, out, 0, NULL, NULL) == CL_SUCCESS, "read");
}

/* Runs kernel NAME+sfx with the plan and the operand buffers (reductions:
 * then scratch and finals). */
static void launch(cl_id prog, const char *name, const char *sfx, const nnk_cl_plan *plan, cl_id *bufs, int nbufs,
                   int dims, const size_t *global, const size_t *local)
{
    char kn[256];
    snprintf(kn, sizeof kn, "%s%s", name, sfx);
    cl_int err;
    cl_id k = cl.CreateKernel(prog, kn, &err);
    CHECK(k, "clCreateKernel %s: %d", kn, (int)err);
    if (!k)
        return;
    cl_id pb = buffer(sizeof *plan, plan);
    cl.SetKernelArg(k, 0, sizeof pb, &pb);
    for (int i = 0; i < nbufs; i++)
        cl.SetKernelArg(k, (cl_uint)i + 1, sizeof bufs[i], &bufs[i]);
    err = cl.EnqueueNDRangeKernel(cl.queue, k, (cl_uint)dims, NULL, global, local, 0, NULL, NULL);
    CHECK(err == CL_SUCCESS, "clEnqueueNDRangeKernel %s: %d", kn, (int)err);
    cl.Finish(cl.queue);
    cl.ReleaseMemObject(pb);
    cl.ReleaseKernel(k);
}

/* A 2-D plan of rows x cols; each operand's strides given as (row, col);
 * idx is the row-major index.  Reductions reduce the last nred dims. */
static nnk_cl_plan plan2(int64_t rows, int64_t cols, int nops, const int64_t (*st)[2], int nred)
{
    nnk_cl_plan p;
    memset(&p, 0, sizeof p);
    p.abi = NNK_CL_ABI_VERSION;
    p.ndim = 2;
    p.nred = nred;
    p.nops = nops;
    p.shape[0] = rows;
    p.shape[1] = cols;
    for (int k = 0; k < nops; k++) {
        p.strides[k][0] = st[k][0];
        p.strides[k][1] = st[k][1];
    }
    p.strides[nops][0] = cols;
    p.strides[nops][1] = 1;
    p.nkept = nred ? rows : rows * cols;
    p.nreduced = nred ? cols : 1;
    return p;
}

static void test_triad(void)
{
    cl_id prog = program("triad");
    if (!prog)
        return;
    enum { N = 1003, R = 7, C = 13 };
    static float x[N], y[N], z[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i * 0.25f - 3.0f, y[i] = 1.0f / (float)(i + 1);
    const float a = 1.5f;
    for (int vec = 0; vec < 2; vec++) {
        /* contiguous: one dimension, element offset 1 into each buffer */
        cl_id b[3] = {buffer(sizeof x, x), buffer(sizeof y, y), buffer(sizeof z, NULL)};
        const int64_t st[3][2] = {{0, 1}, {0, 1}, {0, 1}};
        nnk_cl_plan p = plan2(1, N - 1, 3, st, 0);
        p.ndim = 1;
        p.shape[0] = N - 1;
        p.strides[0][0] = p.strides[1][0] = p.strides[2][0] = p.strides[3][0] = 1;
        p.offset[0] = p.offset[1] = p.offset[2] = 1;
        p.flags = vec ? NNK_CL_VEC : 0;
        p.scalars[0].f32 = a;
        size_t g = 64;
        launch(prog, "triad", "__ew_c", &p, b, 3, 1, &g, NULL);
        readback(b[2], sizeof z, z);
        for (int i = 1; i < N; i++) {
            volatile float t = a * x[i];
            CHECK(z[i] == t + y[i], "triad ew_c vec=%d z[%d] = %g, not %g", vec, i, z[i], (double)(t + y[i]));
        }
        for (int i = 0; i < 3; i++)
            cl.ReleaseMemObject(b[i]);
    }
    /* strided: x a broadcast row [C], y [R, C] transposed in memory, z [R, C] */
    cl_id b[3] = {buffer(sizeof x, x), buffer(sizeof y, y), buffer(sizeof z, NULL)};
    const int64_t st[3][2] = {{0, 1}, {1, R}, {C, 1}};
    nnk_cl_plan p = plan2(R, C, 3, st, 0);
    p.scalars[0].f32 = a;
    size_t g = 32;
    launch(prog, "triad", "__ew_s", &p, b, 3, 1, &g, NULL);
    readback(b[2], sizeof z, z);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            volatile float t = a * x[c];
            float want = t + y[c * R + r];
            CHECK(z[r * C + c] == want, "triad ew_s z[%d][%d] = %g, not %g", r, c, z[r * C + c], (double)want);
        }
    for (int i = 0; i < 3; i++)
        cl.ReleaseMemObject(b[i]);
    cl.ReleaseProgram(prog);
}

static int32_t c_div(int32_t a, int32_t b) { return b == 0 ? 0 : b == -1 ? (int32_t)(0u - (uint32_t)a) : a / b; }
static int32_t c_mod(int32_t a, int32_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static int32_t c_shl(int32_t a, int32_t b) { return b < 0 || b >= 32 ? 0 : (int32_t)((uint32_t)a << b); }

static void test_iops(void)
{
    cl_id prog = program("iops");
    if (!prog)
        return;
    enum { N = 64 };
    int32_t a[N], b[N], out[4][N];
    for (int i = 0; i < N; i++) {
        a[i] = i % 5 == 0 ? INT32_MIN : (i - 20) * 123457;
        b[i] = i % 7 == 0 ? 0 : i % 11 == 0 ? -1 : (i % 40) - 3;
    }
    cl_id bufs[6] = {buffer(sizeof a, a), buffer(sizeof b, b)};
    for (int k = 0; k < 4; k++)
        bufs[2 + k] = buffer(sizeof out[k], NULL);
    const int64_t st[6][2] = {{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}};
    nnk_cl_plan p = plan2(1, N, 6, st, 0);
    size_t g = 16;
    launch(prog, "iops", "__ew_s", &p, bufs, 6, 1, &g, NULL);
    for (int k = 0; k < 4; k++)
        readback(bufs[2 + k], sizeof out[k], out[k]);
    for (int i = 0; i < N; i++) {
        int32_t w = (int32_t)((uint32_t)a[i] * (uint32_t)a[i] + (uint32_t)b[i]);
        CHECK(out[0][i] == c_div(a[i], b[i]), "%d / %d = %d", a[i], b[i], out[0][i]);
        CHECK(out[1][i] == c_mod(a[i], b[i]), "%d %% %d = %d", a[i], b[i], out[1][i]);
        CHECK(out[2][i] == c_shl(a[i], b[i]), "%d << %d = %d", a[i], b[i], out[2][i]);
        CHECK(out[3][i] == w, "%d * %d + %d = %d", a[i], a[i], b[i], out[3][i]);
    }
    for (int k = 0; k < 6; k++)
        cl.ReleaseMemObject(bufs[k]);
    cl.ReleaseProgram(prog);
}

static void test_halves(void)
{
    cl_id prog = program("halves");
    if (!prog)
        return;
    enum { N = 301 };
    static float x[N], y[N];
    static uint16_t h[N], bf[N];
    for (int i = 0; i < N; i++)
        x[i] = i == 0 ? NAN : i == 1 ? 1e30f : i == 2 ? -0.0f : ((float)i - 150.0f) * 0.0137f + 1e-6f * (float)i;
    cl_id b[4] = {buffer(sizeof x, x), buffer(sizeof h, NULL), buffer(sizeof bf, NULL), buffer(sizeof y, NULL)};
    const int64_t st[4][2] = {{0, 1}, {0, 1}, {0, 1}, {0, 1}};
    nnk_cl_plan p = plan2(1, N, 4, st, 0);
    p.ndim = 1;
    p.shape[0] = N;
    for (int k = 0; k <= 4; k++)
        p.strides[k][0] = 1;
    p.flags = NNK_CL_VEC;
    size_t g = 8;
    launch(prog, "halves", "__ew_c", &p, b, 4, 1, &g, NULL);
    readback(b[1], sizeof h, h);
    readback(b[2], sizeof bf, bf);
    readback(b[3], sizeof y, y);
    for (int i = 0; i < N; i++) {
        volatile float x3 = x[i] * 3.0f;
        CHECK(h[i] == nnkc_f32_to_f16(x3), "f16(%g) = %#x, not %#x", (double)x3, h[i], nnkc_f32_to_f16(x3));
        CHECK(bf[i] == nnkc_f32_to_bf16(x3), "bf16(%g) = %#x, not %#x", (double)x3, bf[i], nnkc_f32_to_bf16(x3));
        float want = nnkc_f16_to_f32(nnkc_f32_to_f16(x[i])) + (float)i;
        CHECK(y[i] == want || (want != want && y[i] != y[i]), "y[%d] = %g, not %g", i, y[i], (double)want);
    }
    for (int k = 0; k < 4; k++)
        cl.ReleaseMemObject(b[k]);
    cl.ReleaseProgram(prog);
}

/* The sizes NAME__info reports. */
static void info(cl_id prog, const char *name, int32_t *out, int n)
{
    cl_id b = buffer((size_t)n * 4, NULL);
    char kn[256];
    snprintf(kn, sizeof kn, "%s__info", name);
    cl_int err;
    cl_id k = cl.CreateKernel(prog, kn, &err);
    CHECK(k, "%s: %d", kn, (int)err);
    if (k) {
        cl.SetKernelArg(k, 0, sizeof b, &b);
        size_t g = 1;
        cl.EnqueueNDRangeKernel(cl.queue, k, 1, NULL, &g, NULL, 0, NULL, NULL);
        readback(b, (size_t)n * 4, out);
        cl.ReleaseKernel(k);
    }
    cl.ReleaseMemObject(b);
}

/* Runs reduction NAME over rows x cols (x contiguous, reduced-shape outputs
 * of strides (1, 0), tensor outputs like x) in `order`: 0 a work-group per
 * row, 1 a work-item per row, 2 split in `nparts` parts; outputs read back
 * into outs[k] (bytes each). */
static void reduce_rows(cl_id prog, const char *name, const float *x, int64_t rows, int64_t cols, int nouts,
                        const bool *tensor, const size_t *elsize, void **outs, int order, int nparts)
{
    int nops = 1 + nouts;
    int64_t st[8][2] = {{cols, 1}};
    cl_id b[10];
    b[0] = buffer((size_t)(rows * cols) * 4, x);
    for (int k = 0; k < nouts; k++) {
        st[1 + k][0] = tensor[k] ? cols : 1;
        st[1 + k][1] = tensor[k] ? 1 : 0;
        b[1 + k] = buffer((size_t)(tensor[k] ? rows * cols : rows) * elsize[k], NULL);
    }
    int32_t sz[16] = {0};
    info(prog, name, sz, 16);
    int nph = sz[0];
    size_t maxstate = 0;
    for (int ph = 1; ph <= nph; ph++)
        maxstate = (size_t)sz[1 + ph] > maxstate ? (size_t)sz[1 + ph] : maxstate;
    b[nops] = buffer((size_t)(rows * (nparts > 0 ? nparts : 1)) * maxstate, NULL);
    b[nops + 1] = buffer((size_t)rows * (size_t)sz[1], NULL);
    nnk_cl_plan p = plan2(rows, cols, nops, (const int64_t(*)[2])st, 1);
    if (order == 0) {
        size_t g = 3 * NNK_CL_GROUP, l = NNK_CL_GROUP;
        launch(prog, name, "__rd_group", &p, b, nops + 2, 1, &g, &l);
    } else if (order == 1) {
        size_t g = 2;
        launch(prog, name, "__rd_item", &p, b, nops + 2, 1, &g, NULL);
    } else {
        p.nparts = nparts;
        for (int ph = 1; ph <= nph; ph++) {
            p.phase = ph;
            size_t g2[2] = {(size_t)nparts * NNK_CL_GROUP, 2}, l2[2] = {NNK_CL_GROUP, 1}, g = 5;
            launch(prog, name, "__rd_part", &p, b, nops + 2, 2, g2, l2);
            launch(prog, name, "__rd_fin", &p, b, nops + 2, 1, &g, NULL);
        }
        size_t g = 77;
        launch(prog, name, "__rd_epi", &p, b, nops + 2, 1, &g, NULL);
    }
    for (int k = 0; k < nouts; k++)
        readback(b[1 + k], (size_t)(tensor[k] ? rows * cols : rows) * elsize[k], outs[k]);
    for (int k = 0; k < nops + 2; k++)
        cl.ReleaseMemObject(b[k]);
}

static void test_reductions(void)
{
    enum { ROWS = 5, COLS = 3001 };
    static float x[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = (float)((i * 7919) % 1000) * 0.001f - 0.3f;
    x[2 * COLS + 17] = 5.0f; /* row 2: argmax 17, a tie at 900 */
    x[2 * COLS + 900] = 5.0f;

    cl_id prog = program("rsum");
    if (prog) {
        float r[3][ROWS], again[ROWS];
        const bool tensor[1] = {false};
        const size_t es[1] = {4};
        for (int order = 0; order < 3; order++) {
            void *o[1] = {r[order]};
            reduce_rows(prog, "rsum", x, ROWS, COLS, 1, tensor, es, o, order, 3);
        }
        void *o[1] = {again};
        reduce_rows(prog, "rsum", x, ROWS, COLS, 1, tensor, es, o, 0, 0);
        for (int i = 0; i < ROWS; i++) {
            double want = 0;
            for (int j = 0; j < COLS; j++)
                want += x[i * COLS + j];
            for (int order = 0; order < 3; order++)
                CHECK(fabs(r[order][i] - want) <= 1e-5 * fabs(want) + 1e-4, "sum order %d row %d = %.9g, not %.9g",
                      order, i, r[order][i], want);
            CHECK(memcmp(&again[i], &r[0][i], 4) == 0, "sum row %d: %a then %a", i, r[0][i], again[i]);
        }
        cl.ReleaseProgram(prog);
    }

    prog = program("softmax");
    if (prog) {
        static float y[ROWS * COLS];
        const bool tensor[1] = {true};
        const size_t es[1] = {4};
        for (int order = 0; order < 3; order++) {
            void *o[1] = {y};
            reduce_rows(prog, "softmax", x, ROWS, COLS, 1, tensor, es, o, order, 4);
            for (int i = 0; i < ROWS; i++) {
                double m = -INFINITY, s = 0;
                for (int j = 0; j < COLS; j++)
                    m = fmax(m, x[i * COLS + j]);
                for (int j = 0; j < COLS; j++)
                    s += exp(x[i * COLS + j] - m);
                int bad = 0;
                for (int j = 0; j < COLS; j++) {
                    double want = exp(x[i * COLS + j] - m) / s;
                    bad += !(fabs(y[i * COLS + j] - want) <= 1e-5 * want + 1e-9);
                }
                CHECK(!bad, "softmax order %d row %d: %d elements off", order, i, bad);
            }
        }
        cl.ReleaseProgram(prog);
    }

    prog = program("amax");
    if (prog) {
        int64_t idx[ROWS];
        double s[ROWS];
        const bool tensor[2] = {false, false};
        const size_t es[2] = {8, 8};
        for (int order = 0; order < 3; order++) {
            void *o[2] = {idx, s};
            reduce_rows(prog, "amax", x, ROWS, COLS, 2, tensor, es, o, order, 2);
            for (int i = 0; i < ROWS; i++) {
                int64_t best = 0;
                double sum = 0;
                for (int j = 0; j < COLS; j++) {
                    best = x[i * COLS + j] > x[i * COLS + best] ? j : best;
                    sum += x[i * COLS + j];
                }
                CHECK(idx[i] == best, "argmax order %d row %d = %lld, not %lld", order, i, (long long)idx[i],
                      (long long)best);
                CHECK(fabs(s[i] - sum) <= 1e-9 * fabs(sum) + 1e-9, "f64 sum order %d row %d = %.17g, not %.17g",
                      order, i, s[i], sum);
            }
        }
        cl.ReleaseProgram(prog);
    } else {
        printf("note: no cl_khr_fp64: the f64 kernel is not run\n");
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: clrun RUN.nnk\n");
        return 2;
    }
    int rc = cl_setup();
    if (rc)
        return rc;
    char ext[8192] = "";
    cl.GetDeviceInfo(cl.dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
    has_fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    FILE *f = fopen(argv[1], "rb");
    static char src[1 << 16];
    size_t n = f ? fread(src, 1, sizeof src - 1, f) : 0;
    if (f)
        fclose(f);
    mod = nnkc_module_new("run.nnk", src, n, NULL);
    if (!mod || !nnkc_module_ok(mod)) {
        fprintf(stderr, "%s: %s\n", argv[1], mod ? nnkc_module_diagnostics(mod) : "out of memory");
        return 1;
    }
    test_triad();
    test_iops();
    test_halves();
    test_reductions();
    nnkc_module_free(mod);
    printf("%s\n", failures ? "FAILED" : "all OpenCL runs match");
    return failures ? 1 : 0;
}
