// Compares the emulation layer's fp16/bf16 conversions bit for bit with
// CUDA's own (fp16_ref_cuda.cc): all 65536 patterns to float, and floats
// to half/bfloat16 - every float whose bits are a multiple of STEP (argv[1],
// default 61, about 70 million), or all 2^32 with STEP 1.
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" unsigned short ref_float2half_rn(float);
extern "C" unsigned short ref_float2bfloat16_rn(float);
extern "C" float ref_half2float(unsigned short);
extern "C" float ref_bfloat162float(unsigned short);

static bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

int main(int argc, char **argv)
{
	const unsigned long long step = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 61;
	unsigned long long bad = 0, n = 0;
	for (unsigned x = 0; x < 65536; ++x) {
		const unsigned short h = (unsigned short)x;
		bad += !same(__half2float(__ushort_as_half(h)), ref_half2float(h));
		bad += !same(__bfloat162float(__ushort_as_bfloat16(h)), ref_bfloat162float(h));
	}
	for (unsigned long long u = 0; u < (1ull << 32); u += step, ++n) {
		float f;
		const unsigned bits = (unsigned)u;
		std::memcpy(&f, &bits, sizeof f);
		const unsigned short h = __half_as_ushort(__float2half_rn(f));
		const unsigned short b = __bfloat16_as_ushort(__float2bfloat16_rn(f));
		if (h != ref_float2half_rn(f) || b != ref_float2bfloat16_rn(f)) {
			if (++bad <= 5)
				std::printf("float 0x%08x: half 0x%04x (CUDA 0x%04x), bfloat16 0x%04x (CUDA 0x%04x)\n",
				            bits, h, ref_float2half_rn(f), b, ref_float2bfloat16_rn(f));
		}
	}
	std::printf("fp16/bf16 vs CUDA's headers: 65536 patterns each way to float, %llu floats "
	            "(step %llu) to half and bfloat16: %llu mismatches\n", n, step, bad);
	return bad != 0;
}
