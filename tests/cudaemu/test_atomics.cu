// Atomics across threads and blocks (blocks may run on several OS threads),
// __threadfence and the "last block finishes the reduction" pattern.
// Plain CUDA: it also compiles with nvcc (tests/cudaemu/nvcc-check.sh).
#include <stdint.h>

struct Counters {
	int i;
	unsigned u;
	unsigned long long ull;
	float f;
	double d;
	int imax, imin;
	unsigned umax, umin;
	long long llmax, llmin;
	unsigned long long ullmax, ullmin;
	int cas_i;
	unsigned cas_u;
	unsigned long long cas_ull;
};

extern "C" __global__ void atomics_all(Counters *c, int n)
{
	const int id = blockIdx.x * blockDim.x + threadIdx.x;
	if (id >= n)
		return;
	atomicAdd(&c->i, 1);
	atomicAdd(&c->u, 2u);
	atomicAdd(&c->ull, 3ull << 32);
	atomicAdd(&c->f, 0.5f);
	atomicAdd(&c->d, 0.25);
	const int v = (id * 7919) % n - n / 2; // a permutation of [-n/2, n/2)
	atomicMax(&c->imax, v);
	atomicMin(&c->imin, v);
	atomicMax(&c->umax, (unsigned)id * 3u);
	atomicMin(&c->umin, (unsigned)id + 5u);
	atomicMax(&c->llmax, (long long)v * (1LL << 33));
	atomicMin(&c->llmin, (long long)v * (1LL << 33));
	atomicMax(&c->ullmax, (unsigned long long)id << 40);
	atomicMin(&c->ullmin, ((unsigned long long)id << 40) + 9);
	// Increments built from compare-and-swap loops.
	int old_i = c->cas_i, seen_i;
	do {
		seen_i = old_i;
		old_i = atomicCAS(&c->cas_i, seen_i, seen_i + 1);
	} while (old_i != seen_i);
	unsigned old_u = c->cas_u, seen_u;
	do {
		seen_u = old_u;
		old_u = atomicCAS(&c->cas_u, seen_u, seen_u + 3u);
	} while (old_u != seen_u);
	unsigned long long old_ull = c->cas_ull, seen_ull;
	do {
		seen_ull = old_ull;
		old_ull = atomicCAS(&c->cas_ull, seen_ull, seen_ull + (1ull << 35));
	} while (old_ull != seen_ull);
}

// Every thread swaps its own id in; the values seen plus the final one are
// each id exactly once.
extern "C" __global__ void exchange(int *slot, int *seen, unsigned *useen, unsigned *uslot,
                                    unsigned long long *llslot, unsigned long long *llseen,
                                    float *fslot, float *fseen, int n)
{
	const int id = blockIdx.x * blockDim.x + threadIdx.x;
	if (id >= n)
		return;
	seen[id] = atomicExch(slot, id);
	useen[id] = atomicExch(uslot, (unsigned)id);
	llseen[id] = atomicExch(llslot, (unsigned long long)id << 32);
	fseen[id] = atomicExch(fslot, (float)id);
}

// CUDA's threadFenceReduction sample: each block writes its partial sum,
// fences, and takes a ticket; the block that takes the last ticket adds the
// partials up.
extern "C" __global__ void last_block_sum(const float *in, volatile float *partial,
                                          unsigned *ticket, float *total, int n)
{
	__shared__ float s[128];
	__shared__ bool is_last;
	float acc = 0.0f;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		acc += in[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (unsigned stride = 64; stride > 0; stride >>= 1) {
		if (threadIdx.x < stride)
			s[threadIdx.x] += s[threadIdx.x + stride];
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		partial[blockIdx.x] = s[0];
		__threadfence();
		is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
	}
	__syncthreads();
	if (is_last && threadIdx.x == 0) {
		float sum = 0.0f;
		for (unsigned b = 0; b < gridDim.x; ++b)
			sum += partial[b];
		*total = sum;
		*ticket = 0;
	}
}

// Shared-memory atomics: a histogram per block, merged into global memory.
extern "C" __global__ void histogram(const unsigned char *in, unsigned *bins, int n)
{
	__shared__ unsigned local[16];
	if (threadIdx.x < 16)
		local[threadIdx.x] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		atomicAdd(&local[in[i] % 16], 1u);
	__syncthreads();
	if (threadIdx.x < 16)
		atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
