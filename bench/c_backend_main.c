/* c_backend_main.c - times the generated C of c_backend.nnk against the
 * hand-written loops of c_backend_hand.c, one thread, best of BENCH_REPS
 * runs (default 5).  Prints one tab-separated line per kernel:
 *   kernel  size  nnk_seconds  hand_seconds  [hand_tuned_seconds]
 * bench/c_backend.sh turns them into the table of docs/performance.md. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "c_backend.h"
#include "c_backend_hand.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int reps = 5;
static volatile float sink;

/* best of `reps` runs of each statement, the runs interleaved (and their
 * order alternated) so that both see the same machine */
#define TIME2(best_a, stmt_a, best_b, stmt_b)          \
    do {                                               \
        best_a = best_b = 1e30;                        \
        for (int rep_ = 0; rep_ < 2 * reps; rep_++) {  \
            double t0_ = now();                        \
            if (rep_ & 1) {                            \
                stmt_b;                                \
            } else {                                   \
                stmt_a;                                \
            }                                          \
            double t1_ = now() - t0_;                  \
            if (rep_ & 1) {                            \
                if (t1_ < best_b)                      \
                    best_b = t1_;                      \
            } else if (t1_ < best_a) {                 \
                best_a = t1_;                          \
            }                                          \
        }                                              \
    } while (0)

static float *alloc(int64_t n)
{
    float *p = malloc((size_t)n * sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static int close_enough(const float *a, const float *b, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)a[i] - (double)b[i]) <= tol * (1 + fabs((double)b[i]))))
            return 0;
    return 1;
}

int main(void)
{
    const char *r = getenv("BENCH_REPS");
    if (r && atoi(r) > 0)
        reps = atoi(r);
    const int64_t n = (int64_t)1 << 25, rows = 4096, cols = 4096;
    float *x = alloc(n), *y = alloc(n), *z = alloc(n), *w = alloc(n), *b = alloc(cols);
    srand(1);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)rand() / (float)RAND_MAX * 8 - 4;
        y[i] = (float)rand() / (float)RAND_MAX;
    }
    for (int64_t j = 0; j < cols; j++)
        b[j] = (float)j / (float)cols;
    double tn, th, tt;
    int bad = 0;

    TIME2(tn, triad(n, 2.5f, x, y, z), th, hand_triad(n, 2.5f, x, y, w));
    bad |= (memcmp(z, w, (size_t)n * sizeof(float)) != 0) << 0;
    printf("triad\t2^25\t%.6f\t%.6f\n", tn, th);

    float s1 = 0, s2 = 0, s3 = 0;
    TIME2(tn, total(1, n, 1, x, &s1), tt, s3 = hand_sum8(n, x));
    double tnone;
    TIME2(th, s2 = hand_sum(n, x), tnone, (void)0);
    (void)tnone;
    sink = s1 + s2 + s3;
    bad |= (fabs((double)s1 - (double)s3) > 1e-3 * fabs((double)s3) + 1) << 1;
    printf("sum\t2^25\t%.6f\t%.6f\t%.6f\n", tn, th, tt);

    TIME2(tn, gelu(n, x, z), th, hand_gelu(n, x, w));
    bad |= (!close_enough(z, w, n, 1e-6)) << 2;
    printf("gelu\t2^25\t%.6f\t%.6f\n", tn, th);

    TIME2(tn, softmax(rows, cols, 1, x, z), th, hand_softmax(rows, cols, x, w));
    bad |= (!close_enough(z, w, rows * cols, 1e-5)) << 3;
    printf("softmax rows\t4096x4096\t%.6f\t%.6f\n", tn, th);

    /* sum over axis 0: the column order (rows streamed) */
    {
        const int64_t shape[2] = {rows, cols}, st[2] = {cols, 1}, rshape[1] = {cols}, rst[1] = {1};
        const nnk_view vx = {x, 2, shape, st}, vr = {z, 1, rshape, rst};
        const int32_t axis0 = 0;
        TIME2(tn, total_strided(1, &axis0, &vx, &vr), th, hand_colsum(rows, cols, x, w));
        bad |= (!close_enough(z, w, cols, 1e-3)) << 4; /* the hand loop adds 4096 rows in order */
        printf("sum over axis 0\t4096x4096\t%.6f\t%.6f\n", tn, th);
    }
    /* x + bias: the bias broadcast along rows (stride 0 in the outer dimension) */
    {
        const int64_t shape[2] = {rows, cols}, st[2] = {cols, 1}, bst[2] = {0, 1};
        const nnk_view vx = {x, 2, shape, st}, vb = {b, 2, shape, bst}, vy = {z, 2, shape, st};
        TIME2(tn, add_bias_strided(&vx, &vb, &vy), th, hand_add_bias(rows, cols, x, b, w));
        bad |= (memcmp(z, w, (size_t)(rows * cols) * sizeof(float)) != 0) << 5;
        printf("x + bias[None, :]\t4096x4096\t%.6f\t%.6f\n", tn, th);
    }
    if (bad)
        fprintf(stderr, "c_backend_main: results differ between nnk and the hand-written loops (mask %d)\n", bad);
    free(x), free(y), free(z), free(w), free(b);
    return bad;
}
