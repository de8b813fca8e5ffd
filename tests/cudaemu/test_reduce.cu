// Block reductions with shared memory and __syncthreads, grid-stride loops,
// dynamic shared memory and multi-dimensional launches.  Plain CUDA: it also
// compiles with nvcc (tests/cudaemu/nvcc-check.sh).
#include <stdint.h>

#define BLOCK 256

// First level: each block reduces a grid-stride slice of `in` into
// partial[blockIdx.x] with a static __shared__ array and a tree of
// __syncthreads() (log2(BLOCK) = 8 of them after the loads).
extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_sum_f64(const double *__restrict__ in, double *__restrict__ partial, long long n)
{
	__shared__ double s[BLOCK];
	const unsigned t = threadIdx.x;
	double acc = 0.0;
	for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n;
	     i += (long long)gridDim.x * blockDim.x)
		acc += in[i];
	s[t] = acc;
	__syncthreads();
	for (unsigned stride = BLOCK / 2; stride > 0; stride >>= 1) {
		if (t < stride)
			s[t] += s[t + stride];
		__syncthreads();
	}
	if (t == 0)
		partial[blockIdx.x] = s[0];
}

// Any block size (not only powers of two), dynamic shared memory sized at
// launch: blockDim.x * sizeof(float) bytes.
extern "C" __global__ void reduce_max_dyn(const float *in, float *out, int n)
{
	extern __shared__ __align__(16) unsigned char nnk_smem[];
	float *s = reinterpret_cast<float *>(nnk_smem);
	const unsigned t = threadIdx.x;
	float m = -INFINITY;
	for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
		m = fmaxf(m, in[i]);
	s[t] = m;
	__syncthreads();
	unsigned pow2 = 1;
	while (pow2 < blockDim.x)
		pow2 <<= 1;
	for (unsigned stride = pow2 / 2; stride > 0; stride >>= 1) {
		if (t < stride && t + stride < blockDim.x)
			s[t] = fmaxf(s[t], s[t + stride]);
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

// Grid-stride elementwise kernel: y = a * x + y.
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = fmaf(a, x[i], y[i]);
}

// 3-D grid of 3-D blocks: every thread records who it is.
struct Who {
	unsigned tx, ty, tz, bx, by, bz, dx, dy, dz, gx, gy, gz;
};

extern "C" __global__ void whoami(Who *out)
{
	const unsigned tpb = blockDim.x * blockDim.y * blockDim.z;
	const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	Who w;
	w.tx = threadIdx.x; w.ty = threadIdx.y; w.tz = threadIdx.z;
	w.bx = blockIdx.x; w.by = blockIdx.y; w.bz = blockIdx.z;
	w.dx = blockDim.x; w.dy = blockDim.y; w.dz = blockDim.z;
	w.gx = gridDim.x; w.gy = gridDim.y; w.gz = gridDim.z;
	out[(size_t)block * tpb + thread] = w;
}

// Shared memory as a staging buffer across a 2-D block: transpose a
// 32x32 tile (threads read rows, write columns).
extern "C" __global__ void transpose32(const int *in, int *out, int width, int height)
{
	__shared__ int tile[32][33];
	const int x = blockIdx.x * 32 + threadIdx.x;
	const int y = blockIdx.y * 32 + threadIdx.y;
	if (x < width && y < height)
		tile[threadIdx.y][threadIdx.x] = in[y * width + x];
	__syncthreads();
	const int tx = blockIdx.y * 32 + threadIdx.x;
	const int ty = blockIdx.x * 32 + threadIdx.y;
	if (tx < height && ty < width)
		out[ty * height + tx] = tile[threadIdx.x][threadIdx.y];
}
