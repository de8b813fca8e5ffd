/* The sample application of the build-integration tests: uses the headers
 * nnkc generated for two kernel files and checks the results. */
#include <math.h>
#include <stdio.h>

#include "standalone.h"
#include "uses_common.h"

int main(void)
{
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {1, 1, 1, 1, 1}, z[5], e[5], t;
    axpy(5, 2.0f, x, y, z);
    energy(5, x, e);
    total_energy(1, 5, 1, x, &t);
    int ok = z[4] == 11.0f && e[1] == 2.0f && fabsf(t - 27.5f) < 1e-5f;
    printf("axpy z[4]=%g energy e[1]=%g total=%g: %s\n", z[4], e[1], t, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
