// Deliberately broken kernels: barrier divergence, warp-primitive misuse,
// deadlocks and misaligned vector loads.  Each is valid CUDA C++ (it
// compiles with nvcc) whose behaviour on a GPU is undefined or a hang; the
// emulator must report each one as a launch error.
#include <stdint.h>

#define FULL 0xffffffffu

// Threads 0-4 return early; the others wait at the barrier for them.
extern "C" __global__ void early_return(float *out)
{
	if (threadIdx.x < 5)
		return;
	__syncthreads();
	out[threadIdx.x] = 1.0f;
}

// The last thread returns while the others already wait at the barrier.
extern "C" __global__ void late_return(float *out)
{
	if (threadIdx.x == blockDim.x - 1)
		return;
	__syncthreads();
	out[threadIdx.x] = 1.0f;
}

// Two different barriers in the two branches of a divergent if.
extern "C" __global__ void divergent_barriers(float *out)
{
	if (threadIdx.x % 2 == 0) {
		out[threadIdx.x] = 1.0f;
		__syncthreads(); // BARRIER_EVEN
	} else {
		out[threadIdx.x] = 2.0f;
		__syncthreads(); // BARRIER_ODD
	}
}

// A shuffle whose mask names a lane that has exited (lane 0 runs first).
extern "C" __global__ void shfl_exited_lane(int *out)
{
	if (threadIdx.x == 0)
		return;
	out[threadIdx.x] = __shfl_down_sync(FULL, (int)threadIdx.x, 1);
}

// A lane exits while the others already wait for it in a shuffle.
extern "C" __global__ void lane_exits_during_shuffle(int *out)
{
	if (threadIdx.x == 7)
		return;
	out[threadIdx.x] = __shfl_down_sync(FULL, (int)threadIdx.x, 1);
}

// The calling lane is not in its own mask.
extern "C" __global__ void shfl_not_in_mask(int *out)
{
	out[threadIdx.x] = __shfl_sync(0x0000ffffu, (int)threadIdx.x, 0);
}

// A full mask in the partial last warp of a 40-thread block.
extern "C" __global__ void shfl_missing_lane(int *out)
{
	out[threadIdx.x] = __shfl_xor_sync(FULL, (int)threadIdx.x, 1);
}

// Lane 31 votes while the others shuffle with the same full mask.
extern "C" __global__ void mismatched_primitives(int *out)
{
	if (threadIdx.x % 32 == 31)
		out[threadIdx.x] = (int)__ballot_sync(FULL, 1);
	else
		out[threadIdx.x] = __shfl_sync(FULL, (int)threadIdx.x, 0);
}

// Lane 3 goes to __syncthreads while its warp waits for it in a shuffle.
extern "C" __global__ void shfl_vs_barrier(int *out)
{
	int v = (int)threadIdx.x;
	if (threadIdx.x != 3)
		v = __shfl_xor_sync(FULL, v, 1);
	__syncthreads();
	out[threadIdx.x] = v;
}

// Three lanes wait for each other in a cycle of __syncwarp masks (0 waits
// for 1, 1 for 2, 2 for 0): no single call is inconsistent, so only the
// global check (no thread can run) finds it.
extern "C" __global__ void three_way_deadlock(int *out)
{
	const unsigned lane = threadIdx.x % 32;
	if (lane == 0)
		__syncwarp(0x3u);
	else if (lane == 1)
		__syncwarp(0x6u);
	else if (lane == 2)
		__syncwarp(0x5u);
	out[threadIdx.x] = 1;
}

// An invalid width.
extern "C" __global__ void bad_width(int *out)
{
	out[threadIdx.x] = __shfl_sync(FULL, (int)threadIdx.x, 0, 12);
}

// A float4 load from an address that is only 4-byte aligned.
extern "C" __global__ void misaligned_ldg(const float *in, float4 *out)
{
	const float4 *p = reinterpret_cast<const float4 *>(in + 1);
	out[threadIdx.x] = __ldg(p + threadIdx.x);
}

// Fails only in blocks 3 and later: the reported block must be 3 whatever
// the number of OS threads running blocks.
extern "C" __global__ void fails_from_block_3(int *out)
{
	if (blockIdx.x >= 3 && threadIdx.x == 0)
		return;
	__syncthreads();
	out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// A correct kernel, to show that the emulator recovers after each error.
extern "C" __global__ void healthy(int *out)
{
	__shared__ int s[128];
	s[threadIdx.x] = (int)threadIdx.x;
	__syncthreads();
	int v = s[(threadIdx.x + 1) % blockDim.x];
	v += __shfl_xor_sync(FULL, v, 16);
	out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
