/* norms_demo.c - the reductions of norms.nnk (compiled ahead of time):
 * softmax and logsumexp of each row through the [outer, len, inner] entry
 * points, softmax of each column through NAME_strided with an axis, and
 * layernorm / rmsnorm with gamma and beta broadcast along the rows. */
#include <math.h>
#include <stdio.h>

#include "norms.h"

enum { R = 3, C = 5 };

static void print_matrix(const char *title, const float *m)
{
    printf("%s\n", title);
    for (int i = 0; i < R; i++) {
        printf("   ");
        for (int j = 0; j < C; j++)
            printf(" %9.5f", (double)m[i * C + j]);
        printf("\n");
    }
}

int main(void)
{
    const float x[R * C] = {1, 2, 3, 4, 5, -1, 0, 1, 0, -1, 10, 10, 10, 10, 1000};
    float y[R * C], lse[R];
    int bad = 0;
    print_matrix("x", x);

    /* rows: outer = R slices of len = C, inner = 1 */
    softmax_f32(R, C, 1, x, y);
    print_matrix("softmax over each row", y);
    double lse_ref[R];
    for (int i = 0; i < R; i++) {
        double m = -INFINITY, e = 0;
        for (int j = 0; j < C; j++)
            m = fmax(m, x[i * C + j]);
        for (int j = 0; j < C; j++)
            e += exp(x[i * C + j] - m);
        for (int j = 0; j < C; j++) /* against a double-precision softmax */
            bad |= fabs(y[i * C + j] - exp(x[i * C + j] - m) / e) > 1e-6;
        lse_ref[i] = m + log(e);
    }
    logsumexp_f32(R, C, 1, x, lse);
    printf("logsumexp of each row: %.5f %.5f %.5f  (no overflow: exp(1000) is never formed)\n",
           (double)lse[0], (double)lse[1], (double)lse[2]);
    for (int i = 0; i < R; i++)
        bad |= fabs(lse[i] - lse_ref[i]) > 1e-5 * (1 + fabs(lse_ref[i]));

    /* columns: NAME_strided with axis 0 of a [R, C] view */
    const int64_t shape[2] = {R, C}, strides[2] = {C, 1};
    const nnk_view vx = {(void *)x, 2, shape, strides}, vy = {y, 2, shape, strides};
    const int32_t axis0 = 0;
    int rc = softmax_f32_strided(1, &axis0, &vx, &vy);
    print_matrix("softmax over each column (softmax_f32_strided, axis 0)", y);
    for (int j = 0; j < C; j++) {
        double m = fmax(fmax(x[j], x[C + j]), x[2 * C + j]), e = 0;
        for (int i = 0; i < R; i++)
            e += exp(x[i * C + j] - m);
        for (int i = 0; i < R; i++)
            bad |= fabs(y[i * C + j] - exp(x[i * C + j] - m) / e) > 1e-6;
    }
    bad |= rc != 0;

    /* layernorm and rmsnorm of each row; gamma and beta have shape (C,)
     * and broadcast against (R, C) */
    const float gamma[C] = {1, 1, 1, 1, 2}, beta[C] = {0, 0, 0, 0, 0.5f};
    const int64_t gshape[1] = {C}, gstride[1] = {1};
    const nnk_view vg = {(void *)gamma, 1, gshape, gstride}, vb = {(void *)beta, 1, gshape, gstride};
    const int32_t last = -1;
    rc = layernorm_f32_strided(1, &last, &vx, &vg, &vb, 1e-5f, &vy);
    print_matrix("layernorm over each row (gamma = 1 1 1 1 2, beta = 0 0 0 0 0.5)", y);
    for (int i = 0; i < R; i++) {
        double m = 0, v = 0;
        for (int j = 0; j < C; j++)
            m += x[i * C + j] / (double)C;
        for (int j = 0; j < C; j++)
            v += (x[i * C + j] - m) * (x[i * C + j] - m) / C;
        for (int j = 0; j < C; j++) {
            double r = (x[i * C + j] - m) / sqrt(v + 1e-5) * gamma[j] + beta[j];
            bad |= fabs(y[i * C + j] - r) > 1e-4 * (1 + fabs(r));
        }
    }
    bad |= rc != 0;
    rc = rmsnorm_f32_strided(1, &last, &vx, &vg, 1e-6f, &vy);
    print_matrix("rmsnorm over each row", y);
    for (int i = 0; i < R; i++) {
        double ms = 0;
        for (int j = 0; j < C; j++)
            ms += x[i * C + j] * (double)x[i * C + j] / C;
        for (int j = 0; j < C; j++) {
            double r = x[i * C + j] / sqrt(ms + 1e-6) * gamma[j];
            bad |= fabs(y[i * C + j] - r) > 1e-4 * (1 + fabs(r));
        }
    }
    bad |= rc != 0;
    printf("%s\n", bad ? "norms: WRONG RESULTS" : "norms: ok");
    return bad;
}
