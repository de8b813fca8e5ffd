// Warp primitives: shuffle reductions, the width argument, ballot/any/all,
// __activemask, __syncwarp, disjoint masks within one warp, 64-bit values.
// Plain CUDA: it also compiles with nvcc (tests/cudaemu/nvcc-check.sh).
#include <stdint.h>

#define FULL 0xffffffffu

// Sum of a warp with __shfl_down_sync: lane 0 ends up with the total.
template <class T>
__device__ __forceinline__ T warp_sum_down(T v)
{
	for (int offset = 16; offset > 0; offset >>= 1)
		v += __shfl_down_sync(FULL, v, offset);
	return v;
}

// Butterfly sum with __shfl_xor_sync: every lane ends up with the total.
template <class T>
__device__ __forceinline__ T warp_sum_xor(T v)
{
	for (int mask = 16; mask > 0; mask >>= 1)
		v += __shfl_xor_sync(FULL, v, mask);
	return v;
}

// Block reduction built from warp reductions: warp totals go through
// shared memory, then warp 0 reduces them.  out[blockIdx.x] = block sum.
extern "C" __global__ void block_sum_shfl(const float *in, float *out, int n)
{
	__shared__ float warp_totals[32];
	const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	float v = 0.0f;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		v += in[i];
	v = warp_sum_down(v);
	if (lane == 0)
		warp_totals[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < blockDim.x / 32 ? warp_totals[lane] : 0.0f;
		v = warp_sum_xor(v);
		if (lane == 0)
			out[blockIdx.x] = v;
	}
}

// Every lane records the results of both reductions, for int, unsigned,
// long long, unsigned long long, float and double.
template <class T>
__global__ void warp_sums(const T *in, T *down, T *xored)
{
	const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	down[i] = warp_sum_down(in[i]);
	xored[i] = warp_sum_xor(in[i]);
}

// The four shuffles with an explicit width, recorded per lane.
extern "C" __global__ void shuffles_width(const int *in, int *idx, int *up, int *down, int *bfly,
                                          int width, int src, int delta)
{
	const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	const int v = in[i];
	idx[i] = __shfl_sync(FULL, v, src, width);
	up[i] = __shfl_up_sync(FULL, v, delta, width);
	down[i] = __shfl_down_sync(FULL, v, delta, width);
	bfly[i] = __shfl_xor_sync(FULL, v, delta, width);
}

// Inclusive scan of each warp with __shfl_up_sync.
extern "C" __global__ void warp_scan(const int *in, int *out)
{
	const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	const unsigned lane = threadIdx.x % 32;
	int v = in[i];
	for (int d = 1; d < 32; d <<= 1) {
		const int other = __shfl_up_sync(FULL, v, d);
		if (lane >= (unsigned)d)
			v += other;
	}
	out[i] = v;
}

// Votes: out[4*i .. 4*i+3] = ballot, any, all, activemask.
extern "C" __global__ void votes(const int *pred, unsigned *out)
{
	const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	const int p = pred[i];
	out[4 * i + 0] = __ballot_sync(FULL, p);
	out[4 * i + 1] = (unsigned)__any_sync(FULL, p);
	out[4 * i + 2] = (unsigned)__all_sync(FULL, p);
	out[4 * i + 3] = __activemask();
}

// The last warp of a 48-thread block has 16 lanes: masks name only those.
extern "C" __global__ void partial_warp(int *out)
{
	const unsigned lane = threadIdx.x % 32;
	const unsigned mask = threadIdx.x < 32 ? FULL : 0x0000ffffu;
	int v = (int)threadIdx.x;
	for (int offset = 8; offset > 0; offset >>= 1)
		v += __shfl_xor_sync(mask, v, offset);
	if (threadIdx.x < 32)
		v = __shfl_sync(mask, v, lane & 15);
	out[2 * threadIdx.x] = v;
	out[2 * threadIdx.x + 1] = (int)__activemask();
}

// The two halves of each warp take different branches and shuffle among
// themselves with disjoint masks; then they meet again at __syncwarp().
extern "C" __global__ void split_halves(int *out)
{
	const unsigned lane = threadIdx.x % 32;
	int v = (int)lane;
	if (lane < 16) {
		for (int offset = 8; offset > 0; offset >>= 1)
			v += __shfl_down_sync(0x0000ffffu, v, offset, 16);
	} else {
		v *= 2;
		for (int offset = 1; offset < 16; offset <<= 1)
			v += __shfl_xor_sync(0xffff0000u, v, offset, 16);
	}
	__syncwarp();
	out[threadIdx.x] = __shfl_sync(FULL, v, lane < 16 ? 0 : 16);
}

// __syncwarp orders shared-memory accesses within a warp: each lane writes
// its slot, then reads its neighbour's.
extern "C" __global__ void syncwarp_exchange(int *out)
{
	__shared__ int s[64];
	const unsigned t = threadIdx.x;
	s[t] = (int)(t * 3);
	__syncwarp();
	out[t] = s[(t & ~31u) | ((t + 1) & 31u)];
}

// A shuffle whose source lane is computed per lane (a rotation).
extern "C" __global__ void rotate(const double *in, double *out, int by)
{
	const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = __shfl_sync(FULL, in[i], (int)(threadIdx.x + by) % 32);
}

template __global__ void warp_sums<int>(const int *, int *, int *);
template __global__ void warp_sums<unsigned>(const unsigned *, unsigned *, unsigned *);
template __global__ void warp_sums<long long>(const long long *, long long *, long long *);
template __global__ void warp_sums<unsigned long long>(const unsigned long long *,
                                                       unsigned long long *,
                                                       unsigned long long *);
template __global__ void warp_sums<float>(const float *, float *, float *);
template __global__ void warp_sums<double>(const double *, double *, double *);
