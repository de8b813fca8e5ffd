/* activations_demo.c - the kernels of activations.nnk (compiled ahead of
 * time) on a few points, next to a double-precision reference. */
#include <math.h>
#include <stdio.h>

#include "activations.h"

enum { N = 9 };

static double ref(int which, double x)
{
    double sp = log1p(exp(-fabs(x))) + fmax(x, 0);
    switch (which) {
    case 0: return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case 1: return x / (1 + exp(-x));
    case 2: return x * tanh(sp);
    case 3: return sp;
    case 4: return x * fmin(fmax(x + 3, 0), 6) / 6;
    default: return x > 0 ? x : expm1(x);
    }
}

int main(void)
{
    float x[N], y[6][N];
    for (int i = 0; i < N; i++)
        x[i] = -4.0f + (float)i;
    gelu_f32(N, x, y[0]);
    silu_f32(N, x, y[1]);
    mish_f32(N, x, y[2]);
    softplus_f32(N, x, 1.0f, y[3]);   /* in C, defaults (beta = 1) are passed explicitly */
    hardswish_f32(N, x, y[4]);
    elu_f32(N, x, 1.0f, y[5]);
    static const char *const names[6] = {"gelu", "silu", "mish", "softplus", "hardswish", "elu"};
    printf("%6s", "x");
    for (int k = 0; k < 6; k++)
        printf("  %10s", names[k]);
    printf("\n");
    int bad = 0;
    for (int i = 0; i < N; i++) {
        printf("%6.1f", (double)x[i]);
        for (int k = 0; k < 6; k++) {
            printf("  %10.6f", (double)y[k][i]);
            double r = ref(k, x[i]);
            bad |= fabs(y[k][i] - r) > 1e-5 * (1 + fabs(r));
        }
        printf("\n");
    }
    printf("%s\n", bad ? "activations: WRONG RESULTS" : "activations: ok (within 1e-5 of double precision)");
    return bad;
}
