/* test_capi.c: a plain C test driver launching CUDA kernels through the
 * emulation layer's C entry points (cudaemu_launch.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaemu_launch.h"
#include "test_capi.h"

static int failures;

#define CHECK(cond, ...)                                          \
	do {                                                      \
		if (!(cond)) {                                    \
			++failures;                               \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                      \
			printf("\n");                             \
		}                                                 \
	} while (0)

static void fill_thunk(void *arg)
{
	capi_fill(*(const struct fill_params *)arg);
}

static void axpy_thunk(void *arg)
{
	capi_axpy(*(const struct axpy_params *)arg);
}

static int check_axpy(const float *y, int n)
{
	int bad = 0;
	for (int i = 0; i < n; ++i)
		bad += y[i] != 2.0f * (float)i + 1.0f + 0.5f + 3.0f;
	return bad;
}

int run_test_capi(void); /* test-list.h, run by run-tests */
int run_test_capi(void)
{
	enum { N = 1000 };
	float x[N], y[N];
	int32_t out[256];

	printf("-- cudaemu_launch_kernel: one 40-byte struct by value (cuLaunchKernel style)\n");
	for (int i = 0; i < N; ++i) {
		x[i] = (float)i;
		y[i] = 1.0f;
	}
	struct axpy_params p = {x, y, 2.0f, N, 3, 0.5};
	void *params[] = {&p};
	int st = cudaemu_launch_kernel("capi_axpy", (cudaemu_kernel_fn)capi_axpy, (N + 127) / 128, 1, 1,
	                               128, 1, 1, 0, params, sizeof p);
	CHECK(st == CUDAEMU_OK, "status %d: %s", st, cudaemu_last_error());
	CHECK(check_axpy(y, N) == 0, "%d wrong", check_axpy(y, N));

	printf("-- cudaemu_launch_thunk: the same kernel through a typed thunk\n");
	for (int i = 0; i < N; ++i)
		y[i] = 1.0f;
	st = cudaemu_launch_thunk("capi_axpy", axpy_thunk, &p, (N + 127) / 128, 1, 1, 128, 1, 1, 0);
	CHECK(st == CUDAEMU_OK, "status %d: %s", st, cudaemu_last_error());
	CHECK(check_axpy(y, N) == 0, "%d wrong", check_axpy(y, N));

	printf("-- cudaemu_launch_thunk: an 8-byte struct, 2 OS threads\n");
	cudaemu_set_threads(2);
	CHECK(cudaemu_get_threads() == 2, "threads %u", cudaemu_get_threads());
	struct fill_params f = {out};
	st = cudaemu_launch_thunk(NULL, fill_thunk, &f, 4, 1, 1, 64, 1, 1, 0);
	CHECK(st == CUDAEMU_OK, "status %d: %s", st, cudaemu_last_error());
	int bad = 0;
	for (int i = 0; i < 256; ++i)
		bad += out[i] != 2 * i + 1;
	CHECK(bad == 0, "%d wrong", bad);
	cudaemu_set_threads(0);

	printf("-- errors come back as a status and a message\n");
	void *fparams[] = {&f};
	st = cudaemu_launch_kernel("capi_fill", (cudaemu_kernel_fn)capi_fill, 1, 1, 1, 32, 1, 1, 0,
	                           fparams, sizeof f);
	CHECK(st == CUDAEMU_INVALID_VALUE && strstr(cudaemu_last_error(), "capi_fill"),
	      "status %d: %s", st, cudaemu_last_error());
	st = cudaemu_launch_kernel(NULL, (cudaemu_kernel_fn)capi_axpy, 1, 1, 1, 2000, 1, 1, 0, params,
	                           sizeof p);
	CHECK(st == CUDAEMU_INVALID_CONFIGURATION && *cudaemu_last_error(),
	      "status %d: %s", st, cudaemu_last_error());
	printf("   -> %s\n", cudaemu_last_error());
	/* The kernel's own barrier with a partial block of 40 threads: fine. */
	st = cudaemu_launch_kernel(NULL, (cudaemu_kernel_fn)capi_axpy, 1, 1, 1, 40, 1, 1, 0, params,
	                           sizeof p);
	CHECK(st == CUDAEMU_OK && *cudaemu_last_error() == 0, "status %d: %s", st,
	      cudaemu_last_error());

	if (failures) {
		printf("test_capi: %d checks FAILED\n", failures);
		return 1;
	}
	printf("test_capi: all checks passed\n");
	return 0;
}
