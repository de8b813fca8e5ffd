// Conversions between float and the 16-bit storage types, executed as
// kernels.  Plain CUDA: it also compiles with nvcc (nvcc-check.sh).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

// Every 16-bit pattern, as half and as bfloat16, to float.
extern "C" __global__ void from16(float *half_out, float *bf16_out)
{
	const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < 65536) {
		half_out[i] = __half2float(__ushort_as_half((unsigned short)i));
		bf16_out[i] = __bfloat162float(__ushort_as_bfloat16((unsigned short)i));
	}
}

// Floats (given by their bits) to half and bfloat16, through both spellings
// of each conversion.
extern "C" __global__ void to16(const unsigned *bits, unsigned short *half_rn,
                                unsigned short *half_dflt, unsigned short *bf16_rn,
                                unsigned short *bf16_dflt, long long n)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		const float f = __uint_as_float(bits[i]);
		half_rn[i] = __half_as_ushort(__float2half_rn(f));
		half_dflt[i] = __half_as_ushort(__float2half(f));
		bf16_rn[i] = __bfloat16_as_ushort(__float2bfloat16_rn(f));
		bf16_dflt[i] = __bfloat16_as_ushort(__float2bfloat16(f));
	}
}

// Storage types in arrays, shared memory and __ldg: a block-reversed copy
// through shared memory.
extern "C" __global__ void reverse16(const __half *in_h, __half *out_h,
                                     const __nv_bfloat16 *in_b, __nv_bfloat16 *out_b)
{
	__shared__ __half sh[64];
	__shared__ __nv_bfloat16 sb[64];
	const unsigned t = threadIdx.x, base = blockIdx.x * 64;
	sh[t] = __ldg(in_h + base + t);
	sb[t] = __ldg(in_b + base + t);
	__syncthreads();
	out_h[base + t] = sh[63 - t];
	out_b[base + t] = sb[63 - t];
}
