/* main.c - the saxpy sample: a kernel compiled ahead of time (nnkc -c, or
 * nnkc -S and the C compiler) and called through its generated header.
 * No runtime library is involved: the object is self-contained C.
 *
 *   saxpy(n, a, x, y, z)            contiguous arrays (language.md section 8)
 *   saxpy_strided(a, &x, &y, &z)    array views: any strides, broadcasting
 */
#include <math.h>
#include <stdio.h>

#include "saxpy.h"

int main(void)
{
    enum { N = 8 };
    float x[N], y[N], z[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)(N - i);
    }
    const float a = 2.0f;
    saxpy(N, a, x, y, z);
    int bad = 0;
    printf("saxpy: z = %g * x + y\n", (double)a);
    printf("     x       y       z\n");
    for (int i = 0; i < N; i++) {
        printf("%6.2f  %6.2f  %6.2f\n", (double)x[i], (double)y[i], (double)z[i]);
        bad |= z[i] != a * x[i] + y[i];
    }

    /* Views: every other element of x, and one element of y broadcast
     * (stride 0) against them; the result is a plain array of 4. */
    const int64_t shape[1] = {N / 2}, every_other[1] = {2}, broadcast[1] = {0}, unit[1] = {1};
    float w[N / 2];
    const nnk_view vx = {x, 1, shape, every_other};
    const nnk_view vy = {&y[3], 1, shape, broadcast};
    const nnk_view vw = {w, 1, shape, unit};
    int rc = saxpy_strided(-1.0f, &vx, &vy, &vw);
    printf("saxpy_strided(-1, x[::2], y[3]) = [");
    for (int i = 0; i < N / 2; i++) {
        printf("%s%g", i ? ", " : "", (double)w[i]);
        bad |= w[i] != -x[2 * i] + y[3];
    }
    printf("]  (status %d)\n", rc);
    printf("  one call on views, no copies: x[::2] takes every other element of x (stride 2),\n"
           "  y[3] is one element broadcast to all four (stride 0), so each w[i] = -x[2i] + %g\n", (double)y[3]);
    bad |= rc != 0;
    printf("%s\n", bad ? "saxpy: WRONG RESULTS" : "saxpy: ok");
    return bad;
}
