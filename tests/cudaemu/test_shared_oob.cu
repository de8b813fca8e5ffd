// Out-of-bounds shared-memory accesses, for test_shared_oob.cc: each is a
// bug a sanitizer build of the emulator must report.  Valid CUDA syntax
// (nvcc-check.sh compiles it); undefined behaviour when run.
#include <stdint.h>

// One float past the end of the dynamic shared memory (64 floats).
extern "C" __global__ void dynamic_overflow(float *out)
{
	extern __shared__ __align__(16) unsigned char nnk_smem[];
	float *s = reinterpret_cast<float *>(nnk_smem);
	s[threadIdx.x + 1] = 1.0f;
	__syncthreads();
	out[threadIdx.x] = s[threadIdx.x];
}

// One float before its start.
extern "C" __global__ void dynamic_underflow(float *out, int shift)
{
	extern __shared__ __align__(16) unsigned char nnk_smem[];
	float *s = reinterpret_cast<float *>(nnk_smem);
	s[(int)threadIdx.x - shift] = 1.0f;
	__syncthreads();
	out[threadIdx.x] = 0.0f;
}

// A static array indexed past its end.
extern "C" __global__ void static_overflow(float *out)
{
	__shared__ float s[64];
	s[threadIdx.x] = 1.0f;
	__syncthreads();
	out[threadIdx.x] = s[threadIdx.x % 64];
}
