/* perf_bench.c - the C side of the CPU performance harness (bench/perf/run.py).
 *
 * A server: reads "CASE IMPL" lines on stdin, runs that case once and
 * prints the seconds it took (or "skip"), so that the driver can interleave
 * these runs with numpy, numexpr and torch in one schedule.  IMPL is
 *   nnk  the runtime: perf.nnk compiled by nnk_module_compile, run with
 *        nnk_launch on the thread pool (NNK_NUM_THREADS, JIT disk cache);
 *   aot  the same kernels compiled ahead of time (nnkc -c, portable flags),
 *        run with nnk_launch through nnk_kernel_from_desc (built with -DPERF_AOT);
 *   omp  the hand-written OpenMP C loop of the case: the practical limit of
 *        the machine for triad and sum (STREAM style).
 * "launch" runs LAUNCH_CALLS calls of a 1,000-element triad and reports the
 * seconds per call.  "check" compares nnk's results with references and
 * prints one line per case.  Sizes: 2^25 elements, 4096 x 4096 matrices.
 *
 * Usage: perf_bench PERF_NNK_FILE   (commands on stdin, results on stdout) */
#define _GNU_SOURCE /* madvise's MADV_HUGEPAGE */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <nnk/nnk.h>

#define CHECK(call)                                                                                        \
    do {                                                                                                   \
        nnk_status s_ = (call);                                                                            \
        if (s_ != NNK_OK) {                                                                                \
            fprintf(stderr, "perf_bench: %s:%d: %s: %s\n", __FILE__, __LINE__, nnk_status_name(s_),       \
                    nnk_last_error());                                                                     \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

enum { N = 1 << 25, ROWS = 4096, COLS = 4096, SMALL = 1000, LAUNCH_CALLS = 4000 };

static float *X, *Y, *Z, *A, *B;       /* N floats each */
static uint16_t *H, *HO;               /* N halfs */
static nnk_module *mod;

#ifdef PERF_AOT
extern const nnk_kernel_desc triad__desc, total__desc, fused__desc, gelu_f32__desc, gelu_f16__desc,
    softmax__desc, layernorm__desc;
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Big buffers on transparent huge pages where the kernel allows it, as
 * numpy (and so torch.from_numpy) gets them: the same TLB reach for all. */
static void *xalloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    bytes = (bytes + huge - 1) & ~(huge - 1);
    void *p = aligned_alloc(huge, bytes);
    if (!p) {
        fprintf(stderr, "perf_bench: out of memory\n");
        exit(1);
    }
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static uint16_t f2h(float f) /* round to nearest even; the bench's inputs are normal */
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax < 0x38800000u)
        return (uint16_t)sign;
    return (uint16_t)(sign | ((ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13));
}

static nnk_array *wrap(nnk_dtype t, void *data, int32_t ndim, int64_t d0, int64_t d1)
{
    int64_t shape[2] = {d0, d1};
    nnk_array *a;
    CHECK(nnk_array_wrap(t, ndim, shape, NULL, data, &a));
    return a;
}

/* ---- one case: its arguments, built once ------------------------------------ */

typedef struct Case {
    const char *name;
    const char *kernel;                 /* in perf.nnk */
    nnk_kernel *k, *kaot;
    nnk_args *args;
} Case;

static Case cases[] = {
    {"triad", "triad"}, {"sum", "total"}, {"fused", "fused"}, {"gelu", "gelu"}, {"gelu_f16", "gelu"},
    {"softmax", "softmax"}, {"layernorm", "layernorm"}, {"colsum", "total"}, {"rowsum", "total"},
    {"launch", "triad"},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static float sum_out[COLS];

/* the args keep their own references */
static void in_(nnk_args *a, nnk_array *x)
{
    CHECK(nnk_args_array(a, x));
    nnk_array_free(x);
}

static void out_(nnk_args *a, nnk_array *y)
{
    CHECK(nnk_args_out(a, y));
    nnk_array_free(y);
}

static nnk_args *make_args(const char *name)
{
    nnk_args *a;
    CHECK(nnk_args_new(&a));
    const int32_t ax0 = 0, ax1 = 1;
    if (!strcmp(name, "triad") || !strcmp(name, "launch")) {
        int64_t n = !strcmp(name, "launch") ? SMALL : N;
        CHECK(nnk_args_f64(a, 2.5));
        in_(a, wrap(NNK_F32, X, 1, n, 0));
        in_(a, wrap(NNK_F32, Y, 1, n, 0));
        out_(a, wrap(NNK_F32, Z, 1, n, 0));
    } else if (!strcmp(name, "sum")) {
        in_(a, wrap(NNK_F32, X, 1, N, 0));
        out_(a, wrap(NNK_F32, sum_out, 0, 0, 0));
    } else if (!strcmp(name, "fused")) {
        in_(a, wrap(NNK_F32, A, 1, N, 0));
        in_(a, wrap(NNK_F32, B, 1, N, 0));
        out_(a, wrap(NNK_F32, Z, 1, N, 0));
    } else if (!strcmp(name, "gelu")) {
        in_(a, wrap(NNK_F32, X, 1, N, 0));
        out_(a, wrap(NNK_F32, Z, 1, N, 0));
    } else if (!strcmp(name, "gelu_f16")) {
        in_(a, wrap(NNK_F16, H, 1, N, 0));
        out_(a, wrap(NNK_F16, HO, 1, N, 0));
    } else if (!strcmp(name, "softmax") || !strcmp(name, "layernorm")) {
        in_(a, wrap(NNK_F32, X, 2, ROWS, COLS));
        out_(a, wrap(NNK_F32, Z, 2, ROWS, COLS));
        CHECK(nnk_args_axes(a, 1, &ax1));
    } else if (!strcmp(name, "colsum") || !strcmp(name, "rowsum")) {
        int col = !strcmp(name, "colsum");
        in_(a, wrap(NNK_F32, X, 2, ROWS, COLS));
        out_(a, wrap(NNK_F32, sum_out, 1, col ? COLS : ROWS, 0));
        CHECK(nnk_args_axes(a, 1, col ? &ax0 : &ax1));
    }
    return a;
}

#ifdef PERF_AOT
static const nnk_kernel_desc *aot_desc(const char *name)
{
    if (!strcmp(name, "triad") || !strcmp(name, "launch"))
        return &triad__desc;
    if (!strcmp(name, "sum") || !strcmp(name, "colsum") || !strcmp(name, "rowsum"))
        return &total__desc;
    if (!strcmp(name, "fused"))
        return &fused__desc;
    if (!strcmp(name, "gelu"))
        return &gelu_f32__desc;
    if (!strcmp(name, "gelu_f16"))
        return &gelu_f16__desc;
    if (!strcmp(name, "softmax"))
        return &softmax__desc;
    return &layernorm__desc;
}
#endif

static Case *find(const char *name)
{
    for (int i = 0; i < NCASES; i++)
        if (!strcmp(cases[i].name, name)) {
            Case *c = &cases[i];
            if (!c->args) {
                CHECK(nnk_module_kernel(mod, c->kernel, &c->k));
                c->args = make_args(name);
#ifdef PERF_AOT
                CHECK(nnk_kernel_from_desc(NULL, aot_desc(name), &c->kaot));
#endif
            }
            return c;
        }
    return NULL;
}

/* ---- the OpenMP reference loops ------------------------------------------------ */

static void omp_triad(float a, const float *restrict x, const float *restrict y, float *restrict z, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}

/* STREAM-style: each thread adds its static share with 16 independent
 * accumulators (two AVX vectors), vectorized by OpenMP's simd reduction. */
static float omp_sum(const float *restrict x, int64_t n)
{
    float s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

static int run_omp(const char *name)
{
    static volatile float sink;
    if (!strcmp(name, "triad"))
        omp_triad(2.5f, X, Y, Z, N);
    else if (!strcmp(name, "sum"))
        sink = omp_sum(X, N);
    else
        return 0;
    (void)sink;
    return 1;
}

/* ---- running ---------------------------------------------------------------------- */

/* Evicts the caches (3 x a 32 MiB L3) so that no run finds the data of the
 * one before it, whichever process ran that one. */
static void flush_caches(void)
{
    enum { FLUSH = 3 << 25 };
    static char *buf;
    static volatile char sink;
    if (!buf)
        buf = xalloc(FLUSH);
    memset(buf, (int)(now() * 1000) & 0xff, FLUSH);
    char acc = 0;
    for (size_t i = 0; i < FLUSH; i += 64)
        acc ^= buf[i];
    sink = acc;
}

static double run_once(const char *name, const char *impl)
{
    Case *c = find(name);
    if (!c)
        return -1;
    flush_caches();
    if (!strcmp(impl, "omp")) {
        double t0 = now();
        return run_omp(name) ? now() - t0 : -1;
    }
    nnk_kernel *k = !strcmp(impl, "nnk") ? c->k : !strcmp(impl, "aot") ? c->kaot : NULL;
    if (!k)
        return -1;
    if (!strcmp(name, "launch")) {
        double t0 = now();
        for (int i = 0; i < LAUNCH_CALLS; i++)
            CHECK(nnk_launch(k, c->args));
        return (now() - t0) / LAUNCH_CALLS;
    }
    double t0 = now();
    CHECK(nnk_launch(k, c->args));
    return now() - t0;
}

/* the largest |a - b| / scale (NaN counts as infinite) */
static double maxrel(const float *a, const float *b, const float *scale, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]) / (scale[i] + 1e-30);
        if (d > m || d != d)
            m = d;
    }
    return m;
}

/* Results against plain double-precision C, to catch a broken build. */
static void check(void)
{
    float *ref = xalloc(sizeof(float) * N);
    run_once("triad", "nnk");
    for (int64_t i = 0; i < N; i++)
        ref[i] = 2.5f * X[i] + Y[i];
    printf("check triad: %s\n", memcmp(ref, Z, sizeof(float) * N) ? "DIFFERENT" : "bit-identical to C");
    run_once("sum", "nnk");
    double s = 0;
    for (int64_t i = 0; i < N; i++)
        s += X[i];
    printf("check sum: relative error %.2g\n", fabs(sum_out[0] - s) / fabs(s));
    float *scale = xalloc(sizeof(float) * N);
    run_once("fused", "nnk");
    for (int64_t i = 0; i < N; i++) {
        double e = exp((double)A[i]) * sin((double)B[i]), r = sqrt((double)A[i] * (double)B[i]);
        ref[i] = (float)(e + r);
        scale[i] = (float)(fabs(e) + fabs(r));
    }
    printf("check fused: max error %.2g (relative to |exp(a) sin(b)| + |sqrt(ab)|)\n", maxrel(Z, ref, scale, N));
    run_once("gelu", "nnk");
    for (int64_t i = 0; i < N; i++) {
        double x = X[i];
        ref[i] = (float)(0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
        scale[i] = (float)fabs(x);
    }
    printf("check gelu: max error %.2g (relative to |x|)\n", maxrel(Z, ref, scale, N));
    free(scale);
    run_once("softmax", "nnk");
    double worst = 0;
    for (int64_t r = 0; r < ROWS; r++) {
        double t = 0;
        for (int64_t c = 0; c < COLS; c++)
            t += Z[r * COLS + c];
        worst = fabs(t - 1) > worst ? fabs(t - 1) : worst;
    }
    printf("check softmax: rows sum to 1 within %.2g\n", worst);
    free(ref);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: perf_bench PERF_NNK_FILE < commands\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static char src[1 << 16];
    size_t len = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[len] = 0;
    CHECK(nnk_module_compile(NULL, src, "name=perf.nnk", &mod));

    X = xalloc(sizeof(float) * N), Y = xalloc(sizeof(float) * N), Z = xalloc(sizeof(float) * N);
    A = xalloc(sizeof(float) * N), B = xalloc(sizeof(float) * N);
    H = xalloc(sizeof(uint16_t) * N), HO = xalloc(sizeof(uint16_t) * N);
    uint64_t st = 88172645463325252ull;
    for (int64_t i = 0; i < N; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        float u = (float)(st >> 40) * 0x1p-24f, v = (float)((st >> 16) & 0xffffff) * 0x1p-24f;
        X[i] = u * 8 - 4;
        Y[i] = v;
        A[i] = u * 2 + 0x1p-10f;   /* (0, 2]: exp(a) and sqrt(a * b) finite */
        B[i] = v * 6.28f;
        H[i] = f2h(X[i]);
        Z[i] = 0;
        HO[i] = 0;
    }
    char line[256], name[64], impl[64];
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "%63s %63s", name, impl) < 1)
            continue;
        if (!strcmp(name, "quit"))
            break;
        if (!strcmp(name, "check")) {
            check();
            continue;
        }
        double t = run_once(name, impl);
        if (t < 0)
            printf("skip\n");
        else
            printf("%.9f\n", t);
        fflush(stdout);
    }
    for (int i = 0; i < NCASES; i++) {
        nnk_args_free(cases[i].args);
        nnk_kernel_free(cases[i].kaot);
    }
    nnk_module_free(mod);
    nnk_shutdown();
    free(X), free(Y), free(Z), free(A), free(B), free(H), free(HO);
    return 0;
}
