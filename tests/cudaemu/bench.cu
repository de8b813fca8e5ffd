// Kernels for the emulator's speed measurements (bench.cc).  Plain CUDA:
// it also compiles with nvcc (nvcc-check.sh).
#include <stdint.h>

// (a) Grid-stride elementwise.
extern "C" __global__ void bench_axpy(const float *__restrict__ x, float *__restrict__ y, float a,
                                      int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = a * x[i] + y[i];
}

// (b) Block reduction, 256 threads: grid-stride loads, then a shared-memory
// tree with 8 __syncthreads().  Run twice for a two-level reduction.
extern "C" __global__ void __launch_bounds__(256)
bench_block_sum(const float *__restrict__ in, float *__restrict__ out, int n)
{
	__shared__ float s[256];
	const unsigned t = threadIdx.x;
	float acc = 0.0f;
	for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
		acc += in[i];
	s[t] = acc;
	for (unsigned stride = 128; stride > 0; stride >>= 1) {
		__syncthreads();
		if (t < stride)
			s[t] += s[t + stride];
	}
	__syncthreads();
	if (t == 0)
		out[blockIdx.x] = s[0];
}

// (c) Shuffle-heavy: every 32-element chunk is summed by a warp with five
// __shfl_down_sync rounds (with a 256x256 grid: 80 shuffles per thread).
extern "C" __global__ void bench_warp_chunks(const float *__restrict__ in, float *__restrict__ out,
                                            int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i - (int)(threadIdx.x % 32) < n;
	     i += gridDim.x * blockDim.x) {
		float v = i < n ? in[i] : 0.0f;
		for (int offset = 16; offset > 0; offset >>= 1)
			v += __shfl_down_sync(0xffffffffu, v, offset);
		if (threadIdx.x % 32 == 0)
			out[i / 32] = v;
	}
}

// (d) The launch the speed target names: 64 blocks x 256 threads with a
// few (four) __syncthreads each and little work in between.
extern "C" __global__ void bench_barriers(int *out)
{
	__shared__ int s[256];
	const unsigned t = threadIdx.x;
	int v = (int)t;
	for (int k = 0; k < 2; ++k) {
		s[t] = v;
		__syncthreads();
		v += s[(t + 1) % 256];
		__syncthreads();
	}
	out[blockIdx.x * 256 + t] = v;
}
