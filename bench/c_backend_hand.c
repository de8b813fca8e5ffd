/* c_backend_hand.c - hand-written C for the kernels of c_backend.nnk, the
 * way one would write them without nnk; compiled with the same flags as the
 * generated code (bench/c_backend.sh). */
#include <math.h>
#include <stdint.h>

#include "c_backend_hand.h"

void hand_triad(int64_t n, float a, const float *restrict x, const float *restrict y, float *restrict z)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}

/* the obvious loop: one accumulator (the compiler may not reorder it) */
float hand_sum(int64_t n, const float *restrict x)
{
    float s = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

/* the hand-tuned loop: 8 accumulators, which the compiler vectorizes */
float hand_sum8(int64_t n, const float *restrict x)
{
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += x[i + j];
    for (; i < n; i++)
        s[0] += x[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

void hand_gelu(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}

/* softmax of each row: max, then exp stored and summed, then scaled */
void hand_softmax(int64_t rows, int64_t cols, const float *restrict x, float *restrict y)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -INFINITY;
        for (int64_t j = 0; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        float s = 0;
        for (int64_t j = 0; j < cols; j++) {
            yr[j] = expf(xr[j] - m);
            s += yr[j];
        }
        for (int64_t j = 0; j < cols; j++)
            yr[j] /= s;
    }
}

/* column sums of a rows x cols matrix: add each row into the result */
void hand_colsum(int64_t rows, int64_t cols, const float *restrict x, float *restrict r)
{
    for (int64_t j = 0; j < cols; j++)
        r[j] = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            r[j] += x[i * cols + j];
}

void hand_add_bias(int64_t rows, int64_t cols, const float *restrict x, const float *restrict b, float *restrict y)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            y[i * cols + j] = x[i * cols + j] + b[j];
}
