// The conversions of CUDA's own cuda_fp16.h/cuda_bf16.h (their host code
// paths), for nvcc-check.sh to compare the emulation layer against.
// Compiled against the real CUDA headers, not against cudaemu.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" unsigned short ref_float2half_rn(float f) { return __half_as_ushort(__float2half_rn(f)); }
extern "C" unsigned short ref_float2bfloat16_rn(float f)
{
	return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
extern "C" float ref_half2float(unsigned short h) { return __half2float(__ushort_as_half(h)); }
extern "C" float ref_bfloat162float(unsigned short b)
{
	return __bfloat162float(__ushort_as_bfloat16(b));
}
