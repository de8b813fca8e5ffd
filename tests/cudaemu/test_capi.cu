// Kernels that a plain C driver (test_capi.c) launches through the C entry
// points.  Plain CUDA: it also compiles with nvcc (nvcc-check.sh).
#include "test_capi.h"

extern "C" __global__ void capi_axpy(struct axpy_params p)
{
	__shared__ float s[128];
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = i < p.n ? p.x[i] : 0.0f;
	__syncthreads();
	if (i < p.n)
		p.y[i] = p.a * s[threadIdx.x] + p.y[i] + (float)p.bias +
		         (float)p.pad_to_check_the_layout;
}

extern "C" __global__ void capi_fill(struct fill_params p)
{
	const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	p.out[i] = (int32_t)(i * 2 + __shfl_xor_sync(0xffffffffu, 1, 1));
}
