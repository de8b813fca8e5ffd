/* opencl_bench.c - the opencl extension against nnk's own CPU path, one
 * kernel per class: triad (elementwise, memory bound), sum (a reduction of
 * one long slice: the split path), softmax over rows (three phases and an
 * epilogue, a work-group per row).  Each kernel runs on arrays on the
 * opencl device and on host arrays (cpu), the same JIT-compiled source;
 * the median of REPS timed calls after a warm-up, the opencl ones
 * synchronised (clFinish).  Then the time of the first call of a fresh
 * kernel in this process (code generation, the OpenCL build or the disk
 * cache, PoCL's work-group compilation): bench/opencl/run.sh runs this
 * program with empty and filled caches to show both.
 *
 *   opencl_bench [all|first]
 *
 * The third column is the OpenMP limit: the case as a plain C loop
 * (`#pragma omp parallel for simd`, built with configure's OPENMP_CFLAGS),
 * on the same host data, what a hand-written kernel gets on these cores.
 *
 * Environment: NNK_EXTENSION_PATH (the build tree's .libs).  Prints one
 * line per case: name, size, omp ms, cpu ms, opencl ms, cpu/omp,
 * opencl/omp, opencl/cpu. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nnk/nnk.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        nnk_status s_ = (call);                                                                         \
        if (s_ != NNK_OK) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, nnk_status_name(s_), nnk_last_error()); \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

static const char code[] =
    "elementwise triad(a: f32, x: f32[], y: f32[]) -> (z: f32[]) { z = a * x + y; }\n"
    "reduction total(x: f32[]) -> (r: f32) { r = sum(x); }\n"
    "reduction softmax(x: f32[]) -> (y: f32[]) { let m = max(x); let s = sum(exp(x - m)); y = exp(x - m) / s; }\n";

enum { REPS = 9 };

/* ---- the OpenMP limit: each case as the plain loop one would write ---- */
#ifdef _OPENMP
#define OMP(x) _Pragma(#x)
#else
#define OMP(x)
#endif

static void omp_triad(float a, const float *restrict x, const float *restrict y, float *restrict z, int64_t n)
{
    OMP(omp parallel for simd schedule(static))
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}

static float omp_total(const float *restrict x, int64_t n)
{
    float s = 0; /* each thread's share in SIMD lanes, as STREAM-style sums do */
    OMP(omp parallel for simd reduction(+ : s) schedule(static))
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

static void omp_softmax(const float *restrict x, float *restrict y, int64_t rows, int64_t cols)
{
    OMP(omp parallel for schedule(static))
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols, m = -INFINITY, s = 0;
        for (int64_t j = 0; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        for (int64_t j = 0; j < cols; j++)
            s += (yr[j] = expf(xr[j] - m));
        for (int64_t j = 0; j < cols; j++)
            yr[j] /= s;
    }
}

static volatile float omp_sink;

/* One call of the case's loop on host data; returns seconds. */
static double omp_call(const char *name, const float *x, const float *y, float *z, const int64_t *shape, int ndim)
{
    int64_t n = ndim == 2 ? shape[0] * shape[1] : shape[0];
    double t0 = now();
    if (!strcmp(name, "triad"))
        omp_triad(2.5f, x, y, z, n);
    else if (!strcmp(name, "total"))
        omp_sink = omp_total(x, n);
    else
        omp_softmax(x, z, shape[0], shape[1]);
    return now() - t0;
}


static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static nnk_extension *ocl;

/* One call of kernel `name` on x (and y for triad); returns seconds. */
static double call(nnk_module *m, const char *name, nnk_array *x, nnk_array *y, int dev)
{
    nnk_kernel *k;
    nnk_args *args;
    CHECK(nnk_module_kernel(m, name, &k));
    CHECK(nnk_args_new(&args));
    if (y) {
        CHECK(nnk_args_f64(args, 2.5));
        CHECK(nnk_args_array(args, x));
        CHECK(nnk_args_array(args, y));
    } else {
        CHECK(nnk_args_array(args, x));
    }
    double t0 = now();
    CHECK(nnk_launch(k, args));
    if (dev)
        CHECK(nnk_extension_device_synchronize(ocl, 0));
    double t = now() - t0;
    nnk_args_free(args);
    return t;
}

static double median(nnk_module *m, const char *name, nnk_array *x, nnk_array *y, int dev)
{
    double t[REPS];
    call(m, name, x, y, dev); /* warm-up: compile, caches, allocator */
    for (int r = 0; r < REPS; r++)
        t[r] = call(m, name, x, y, dev);
    qsort(t, REPS, sizeof *t, cmp);
    return t[REPS / 2];
}

static void bench(nnk_module *mo, nnk_module *mc, nnk_context *octx, const char *name, int ndim, const int64_t *shape,
                  int two)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    float *h = malloc((size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; i++)
        h[i] = (float)((i * 40503u) % 1000) * 0.001f - 0.5f;
    nnk_array *dx, *dy = NULL, *hx, *hy = NULL;
    CHECK(nnk_array_from_host(octx, NNK_F32, ndim, shape, h, &dx));
    CHECK(nnk_array_wrap(NNK_F32, ndim, shape, NULL, h, &hx));
    if (two) {
        CHECK(nnk_array_from_host(octx, NNK_F32, ndim, shape, h, &dy));
        CHECK(nnk_array_wrap(NNK_F32, ndim, shape, NULL, h, &hy));
    }
    double tc = median(mc, name, hx, hy, 0), to = median(mo, name, dx, dy, 1);
    float *z = malloc((size_t)n * sizeof *z);
    double t[REPS];
    omp_call(name, h, h, z, shape, ndim); /* warm-up: threads, pages */
    for (int r = 0; r < REPS; r++)
        t[r] = omp_call(name, h, h, z, shape, ndim);
    qsort(t, REPS, sizeof *t, cmp);
    double tm = t[REPS / 2];
    free(z);
    char sz[64];
    if (ndim == 2)
        snprintf(sz, sizeof sz, "%lldx%lld", (long long)shape[0], (long long)shape[1]);
    else
        snprintf(sz, sizeof sz, "%lld", (long long)shape[0]);
#ifdef _OPENMP
    const char *omp = "";
#else
    const char *omp = " (built without OpenMP: one thread)";
#endif
    printf("%-8s %-12s omp %8.3f ms   cpu %8.3f ms   opencl %8.3f ms   cpu/omp %6.2f   opencl/omp %6.2f   "
           "opencl/cpu %6.2f%s\n",
           name, sz, tm * 1e3, tc * 1e3, to * 1e3, tc / tm, to / tm, to / tc, omp);
    nnk_array_free(dx);
    nnk_array_free(dy);
    nnk_array_free(hx);
    nnk_array_free(hy);
    free(h);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    CHECK(nnk_import_extension("opencl", &ocl));
    int32_t ndev = 0;
    CHECK(nnk_extension_get_device_count(ocl, &ndev));
    if (ndev == 0) {
        printf("no OpenCL device: %s\n", nnk_extension_status(ocl));
        return 77;
    }
    nnk_context *octx, *cctx;
    CHECK(nnk_get_extension_context("opencl", "device_id=0", &octx));
    CHECK(nnk_get_extension_context("cpu", "", &cctx));
    nnk_module *mo, *mc;
    CHECK(nnk_module_compile(octx, code, "name=bench.nnk", &mo));
    CHECK(nnk_module_compile(cctx, code, "name=bench.nnk", &mc));
    if (!strcmp(mode, "first")) {
        /* the first call of each kernel: generation, build or cache, launch */
        int64_t n = 1 << 20, rows[2] = {256, 1024};
        float *h = calloc((size_t)n, sizeof *h);
        nnk_array *x, *y, *xr;
        CHECK(nnk_array_from_host(octx, NNK_F32, 1, &n, h, &x));
        CHECK(nnk_array_from_host(octx, NNK_F32, 1, &n, h, &y));
        CHECK(nnk_array_from_host(octx, NNK_F32, 2, rows, h, &xr));
        double t = call(mo, "triad", x, y, 1) + call(mo, "total", x, NULL, 1) + call(mo, "softmax", xr, NULL, 1);
        printf("first calls of triad, total, softmax on opencl: %.3f s (%s)\n", t, nnk_extension_status(ocl));
        nnk_array_free(x);
        nnk_array_free(y);
        nnk_array_free(xr);
        free(h);
    } else {
        int64_t big = (int64_t)1 << 24, rows[2] = {4096, 1024};
        bench(mo, mc, octx, "triad", 1, &big, 1);
        bench(mo, mc, octx, "total", 1, &big, 0);
        bench(mo, mc, octx, "softmax", 2, rows, 0);
    }
    nnk_module_free(mo);
    nnk_module_free(mc);
    nnk_context_free(octx);
    nnk_context_free(cctx);
    nnk_shutdown();
    return 0;
}
