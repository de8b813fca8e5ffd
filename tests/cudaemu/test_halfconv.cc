// Driver for test_halfconv.cu: the fp16/bf16 conversions must be bit-exact
// IEEE round-to-nearest-even with CUDA's NaN handling.  The references are
// independent of the layer's bit tricks: a nearest-value search over the
// representable values, ldexp for the exact decodings, and the CPU's F16C
// instructions where the CPU has them.
#include "test_halfconv.cu"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_F16C_INTRINSICS 1
#endif

#include "test_util.h"

static_assert(sizeof(__half) == 2 && alignof(__half) == 2, "__half is 16 bits");
static_assert(sizeof(__nv_bfloat16) == 2 && alignof(__nv_bfloat16) == 2, "bfloat16 is 16 bits");
static_assert(std::is_trivially_copyable<__half>::value &&
                  std::is_trivially_copyable<__nv_bfloat16>::value &&
                  std::is_trivially_default_constructible<__half>::value &&
                  std::is_standard_layout<__half>::value,
              "storage types");

static uint32_t f2u(float f)
{
	uint32_t u;
	std::memcpy(&u, &f, 4);
	return u;
}
static float u2f(uint32_t u)
{
	float f;
	std::memcpy(&f, &u, 4);
	return f;
}

// Exact values of the 16-bit formats (NaN for NaNs).
static double half_value(unsigned h)
{
	const int e = (h >> 10) & 31, m = h & 1023;
	const double mag = e == 31 ? (m ? NAN : INFINITY)
	                 : e == 0  ? std::ldexp((double)m, -24)
	                           : std::ldexp((double)(1024 + m), e - 25);
	return h & 0x8000 ? -mag : mag;
}
static double bf16_value(unsigned b)
{
	const int e = (b >> 7) & 255, m = b & 127;
	const double mag = e == 255 ? (m ? NAN : INFINITY)
	                 : e == 0   ? std::ldexp((double)m, -133)
	                            : std::ldexp((double)(128 + m), e - 134);
	return b & 0x8000 ? -mag : mag;
}

// Round |x| to the nearest of two neighbouring encodings lo < hi (their
// magnitudes vlo <= |x| <= vhi); ties go to the even encoding.
static unsigned nearest(double ax, unsigned lo, double vlo, unsigned hi, double vhi)
{
	const double dlo = ax - vlo, dhi = vhi - ax;
	return dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1) ? hi : lo;
}

// Float to half by search: the finite halves in increasing order, with the
// infinity encoding standing for 2^16 (where the exponent range would
// continue), which is what IEEE overflow rounding amounts to.
static std::vector<double> half_ladder()
{
	std::vector<double> v(0x7c01);
	for (unsigned h = 0; h < 0x7c00; ++h)
		v[h] = half_value(h);
	v[0x7c00] = 65536.0;
	return v;
}

static unsigned ref_float2half(float f, const std::vector<double> &ladder)
{
	if (std::isnan(f))
		return 0x7fff; // CUDA returns the canonical NaN
	const unsigned sign = std::signbit(f) ? 0x8000 : 0;
	const double ax = std::fabs((double)f);
	if (ax >= 65536.0)
		return sign | 0x7c00;
	const unsigned hi = (unsigned)(std::lower_bound(ladder.begin(), ladder.end(), ax) - ladder.begin());
	if (ladder[hi] == ax)
		return sign | hi;
	return sign | nearest(ax, hi - 1, ladder[hi - 1], hi, ladder[hi]);
}

static unsigned ref_float2bf16(float f)
{
	if (std::isnan(f))
		return 0x7fff;
	const uint32_t u = f2u(f);
	const unsigned sign = (u >> 16) & 0x8000, lo = (u >> 16) & 0x7fff, hi = lo + 1;
	if ((u & 0xffff) == 0)
		return sign | lo;
	const double vhi = hi == 0x7f80 ? std::ldexp(1.0, 128) : bf16_value(hi);
	return sign | nearest(std::fabs((double)f), lo, bf16_value(lo), hi, vhi);
}

#ifdef HAVE_F16C_INTRINSICS
__attribute__((target("f16c"))) static unsigned hw_float2half(float f)
{
	return (unsigned)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
__attribute__((target("f16c"))) static float hw_half2float(unsigned h)
{
	return _cvtsh_ss((unsigned short)h);
}
#endif

TEST_IMPL(halfconv)
{
	bool f16c = false;
#ifdef HAVE_F16C_INTRINSICS
	unsigned eax, ebx, ecx, edx;
	f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
#endif
	note("F16C cross-check: %s", f16c ? "yes" : "no (CPU lacks F16C)");

	note("all 65536 half and bfloat16 patterns to float (exact; NaN -> 0x7fffffff for half, "
	     "payload kept for bfloat16)");
	{
		std::vector<float> h(65536), b(65536);
		LAUNCH_OK(from16, 256, 256, 0, h.data(), b.data());
		int bad_h = 0, bad_b = 0, bad_hw = 0, nans = 0, subnormals = 0;
		for (unsigned x = 0; x < 65536; ++x) {
			const double hv = half_value(x), bv = bf16_value(x);
			if (std::isnan(hv)) {
				++nans;
				bad_h += f2u(h[x]) != 0x7fffffffu;
			} else {
				subnormals += (x & 0x7c00) == 0 && (x & 0x3ff) != 0;
				bad_h += f2u(h[x]) != f2u((float)hv) || std::signbit(h[x]) != std::signbit(hv);
#ifdef HAVE_F16C_INTRINSICS
				if (f16c)
					bad_hw += f2u(h[x]) != f2u(hw_half2float(x));
#endif
			}
			if (std::isnan(bv))
				bad_b += f2u(b[x]) != x << 16;
			else
				bad_b += f2u(b[x]) != f2u((float)bv) || std::signbit(b[x]) != std::signbit(bv);
		}
		CHECK(bad_h == 0 && bad_b == 0 && bad_hw == 0,
		      "%d half, %d bfloat16 patterns wrong, %d differ from F16C", bad_h, bad_b, bad_hw);
		note("   (%d NaN patterns, %d subnormal halves)", nans, subnormals);
	}

	note("floats to half and bfloat16: every 13-bit rounding position around each tie, "
	     "2M random floats, specials");
	{
		std::vector<unsigned> bits;
		// For every combination of the 19 high bits, the low 13 bits (what
		// half rounding drops in the normal range) at and around 0, the tie
		// and the top; bfloat16's 16-bit tie 0x8000 and its neighbours are
		// among these too.
		for (uint32_t hi = 0; hi < (1u << 19); ++hi)
			for (uint32_t lo : {0x0u, 0x1u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu})
				bits.push_back(hi << 13 | lo);
		uint64_t s = 0x9e3779b97f4a7c15ull;
		for (int k = 0; k < 2000000; ++k) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			bits.push_back((uint32_t)s);
		}
		for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, 65504.0f, 65519.996f, 65520.0f, 65536.0f,
		                3.4028235e38f, 5.9604645e-8f /* 2^-24 */, 2.9802322e-8f /* 2^-25 */,
		                1e-45f, 6.1035156e-5f /* 2^-14 */, 6.1031434e-5f})
			bits.push_back(f2u(f));
		for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0xffffffffu})
			bits.push_back(nan);
		bits.push_back(f2u(5.9604645e-8f) + 1); // just above 2^-25 * 2: rounds up

		const long long n = (long long)bits.size();
		std::vector<unsigned short> hrn(n), hd(n), brn(n), bd(n);
		LAUNCH_OK(to16, 64, 256, 0, bits.data(), hrn.data(), hd.data(), brn.data(), bd.data(), n);

		const std::vector<double> ladder = half_ladder();
		long long bad_h = 0, bad_b = 0, bad_hw = 0, ties_h = 0, ties_b = 0, nan = 0, sub = 0;
		for (long long k = 0; k < n; ++k) {
			const float f = u2f(bits[k]);
			const unsigned eh = ref_float2half(f, ladder), eb = ref_float2bf16(f);
			if (hrn[k] != eh || hd[k] != eh) {
				if (++bad_h <= 5)
					std::printf("   float 0x%08x -> half 0x%04x/0x%04x, expected 0x%04x\n",
					            bits[k], hrn[k], hd[k], eh);
			}
			if (brn[k] != eb || bd[k] != eb) {
				if (++bad_b <= 5)
					std::printf("   float 0x%08x -> bfloat16 0x%04x/0x%04x, expected 0x%04x\n",
					            bits[k], brn[k], bd[k], eb);
			}
#ifdef HAVE_F16C_INTRINSICS
			if (f16c && !std::isnan(f))
				bad_hw += hrn[k] != hw_float2half(f);
#endif
			nan += std::isnan(f);
			sub += (eh & 0x7c00) == 0 && (eh & 0x3ff) != 0;
			ties_h += (bits[k] & 0x1fff) == 0x1000 && std::fabs(f) >= 6.1035156e-5f &&
			          std::fabs(f) < 65536.0f;
			ties_b += (bits[k] & 0xffff) == 0x8000 && !std::isnan(f);
		}
		CHECK(bad_h == 0 && bad_b == 0 && bad_hw == 0,
		      "%lld half, %lld bfloat16 conversions wrong, %lld differ from F16C", bad_h, bad_b,
		      bad_hw);
		note("   (%lld floats: %lld NaNs, %lld half subnormal results, %lld half ties, "
		     "%lld bfloat16 ties)", n, nan, sub, ties_h, ties_b);
	}

	note("storage types through shared memory and __ldg");
	{
		std::vector<__half> ih(128), oh(128);
		std::vector<__nv_bfloat16> ib(128), ob(128);
		for (unsigned k = 0; k < 128; ++k) {
			ih[k] = __float2half((float)k * 0.5f);
			ib[k] = __float2bfloat16((float)k * -0.25f);
		}
		LAUNCH_OK(reverse16, 2, 64, 0, ih.data(), oh.data(), ib.data(), ob.data());
		int bad = 0;
		for (unsigned k = 0; k < 128; ++k) {
			const unsigned src = (k & ~63u) + 63 - k % 64;
			bad += __half2float(oh[k]) != (float)src * 0.5f;
			bad += __bfloat162float(ob[k]) != (float)src * -0.25f;
		}
		CHECK(bad == 0, "%d values wrong", bad);
	}

	return test_finish("test_halfconv");
}
