/* test_capi.h: what a generated header would give a C test driver - the
 * parameter structs and the kernels' C declarations.  Shared by the CUDA
 * source (test_capi.cu) and the C driver (test_capi.c). */
#ifndef TEST_CAPI_H
#define TEST_CAPI_H

#include <stdint.h>

/* One struct by value per kernel (the launch convention); 40 bytes. */
struct axpy_params {
	const float *x;
	float *y;
	float a;
	int32_t n;
	int64_t pad_to_check_the_layout;
	double bias;
};

/* 8 bytes: travels in a register, so it needs cudaemu_launch_thunk. */
struct fill_params {
	int32_t *out;
};

#ifdef __cplusplus
extern "C" {
#endif
#ifdef __CUDACC__
__global__
#endif
void capi_axpy(struct axpy_params p);
#ifdef __CUDACC__
__global__
#endif
void capi_fill(struct fill_params p);
#ifdef __cplusplus
}
#endif

#endif
