// Driver for test_vector.cu: vector loads, make_*, __ldg, bit casts,
// min/max/abs, and the float and double math functions.
#include "test_vector.cu"

#include <cfloat>
#include <cmath>
#include <vector>

#include "test_util.h"

template <class V>
static void check_copy(const char *name)
{
	const int n = 1001;
	std::vector<V> in(n), out(n);
	unsigned char *bytes = reinterpret_cast<unsigned char *>(in.data());
	for (size_t k = 0; k < n * sizeof(V); ++k)
		bytes[k] = (unsigned char)(k * 37 + 11);
	CHECK(reinterpret_cast<uintptr_t>(in.data()) % alignof(V) == 0, "%s: misaligned vector", name);
	LAUNCH_OK(copy_vec<V>, 3, 64, 0, in.data(), out.data(), n);
	CHECK(std::memcmp(in.data(), out.data(), n * sizeof(V)) == 0, "%s: copy differs", name);
}

// Relative error of a float result against the double-precision value.
static bool close_to(float got, double want)
{
	if (std::isnan(want))
		return std::isnan(got);
	if (std::isinf(want))
		return got == (float)want;
	return std::fabs(got - want) <= 4 * FLT_EPSILON * std::fmax(std::fabs(want), FLT_MIN);
}

TEST_IMPL(vector)
{
	note("vector loads and stores of all 13 vector types (plain and __ldg)");
	check_copy<float2>("float2");
	check_copy<float4>("float4");
	check_copy<int2>("int2");
	check_copy<int4>("int4");
	check_copy<uint2>("uint2");
	check_copy<uint4>("uint4");
	check_copy<double2>("double2");
	check_copy<longlong2>("longlong2");
	check_copy<ushort2>("ushort2");
	check_copy<ushort4>("ushort4");
	check_copy<short4>("short4");
	check_copy<char4>("char4");
	check_copy<uchar4>("uchar4");

	note("float array through float4 loads with a scalar tail");
	for (int n : {0, 3, 4, 1023, 4097}) {
		std::vector<float> in(n + 1), out(n + 1, -1.0f);
		for (int k = 0; k < n; ++k)
			in[k] = (float)k;
		LAUNCH_OK(scale_vec4, 2, 32, 0, in.data(), out.data(), 3.0f, n);
		int bad = out[n] != -1.0f;
		for (int k = 0; k < n; ++k)
			bad += out[k] != 3.0f * k;
		CHECK(bad == 0, "n=%d: %d wrong", n, bad);
	}

	note("make_* for every vector type");
	{
		Made m;
		LAUNCH_OK(make_all, 1, 1, 0, &m);
		CHECK(m.f2.x == 1.5f && m.f2.y == -2.0f && m.f4.w == 4.0f && m.i2.x == -7 &&
		          m.i4.y == -2 && m.u2.y == 4000000000u && m.u4.z == 3u && m.d2.y == -0.2 &&
		          m.ll2.x == -(1LL << 40) && m.us2.x == 65535 && m.us4.w == 65535 &&
		          m.s4.x == -32768 && m.c4.x == -128 && m.c4.w == -1 && m.uc4.w == 128,
		      "wrong components");
	}

	note("__ldg of the scalar types");
	{
		const Scalars in = {'a', -5, 250, -300, 60000, -70000, 4000000000u, -(1LL << 50),
		                    1ULL << 63, 1.25f, -2.5};
		Scalars out = {};
		LAUNCH_OK(ldg_scalars, 1, 1, 0, &in, &out);
		CHECK(out.c == in.c && out.sc == in.sc && out.uc == in.uc && out.s == in.s &&
		          out.us == in.us && out.i == in.i && out.u == in.u && out.ll == in.ll &&
		          out.ull == in.ull && out.f == in.f && out.d == in.d,
		      "scalar __ldg differs");
	}

	note("bit casts, min/max/abs/umin/umax/llmin/llmax/llabs/ullmin/ullmax");
	{
		Ints r = {};
		LAUNCH_OK(ints, 1, 1, 0, &r, -1.5f, 0x3f800000, 0x40000000u, 1.0, 0x4000000000000000LL);
		CHECK(r.f_as_i == (int)0xbfc00000 && r.f_as_u == 0xbfc00000u && r.i_as_f == 1.0f &&
		          r.u_as_f == 2.0f && r.d_as_ll == 0x3ff0000000000000LL && r.ll_as_d == 2.0,
		      "bit casts");
		CHECK(r.mn == -0x3f800000 && r.mx == 0x3f800000 && r.ab == 0x3f800000, "int min/max/abs");
		CHECK(r.umn == 7u && r.umx == 0x40000000u, "umin/umax");
		CHECK(r.llmn == -0x4000000000000000LL && r.llmx == 0x4000000000000000LL &&
		          r.llab == 0x4000000000000000LL,
		      "llmin/llmax/llabs");
		CHECK(r.ullmn == 3ull && r.ullmx == 0x4000000000000000ull, "ullmin/ullmax");
		CHECK(r.fmn == -1.5f && r.fmx == 2.0f && r.dmn == 1.0 && r.dmx == 2.0, "float min/max");
		CHECK(r.promoted == -4 + 1, "short arguments promote to int: %d", r.promoted);
	}

	note("float math: %d functions at 9 points against double precision", NFLOAT);
	{
		const std::vector<float> xs = {0.0f, -0.0f, 0.3f, -0.7f, 1.0f, 2.5f, -3.75f, 10.0f, NAN};
		const int n = (int)xs.size();
		std::vector<float> out(NFLOAT * n);
		LAUNCH_OK(math_f32, 1, n, 0, xs.data(), out.data(), n);
		for (int i = 0; i < n; ++i) {
			const double x = xs[i], y = 0.75, z = -1.25, p = std::fabs(x) + 0.5;
			const double want[NFLOAT] = {
			    std::sqrt(p), 1 / std::sqrt(p), std::cbrt(x), std::exp(x), std::exp2(x),
			    std::expm1(x), std::log(p), std::log2(p), std::log10(p), std::log1p(p),
			    std::sin(x), std::cos(x), std::tan(x), std::asin(y), std::acos(y), std::atan(x),
			    std::atan2(x, z), std::sinh(x), std::cosh(x), std::tanh(x), std::asinh(x),
			    std::acosh(p + 1), std::atanh(y), std::erf(x), std::erfc(x), std::lgamma(p),
			    std::tgamma(p), std::pow(p, y), std::hypot(x, z), std::floor(x), std::ceil(x),
			    std::rint(x), std::nearbyint(x), std::round(x), std::trunc(x), std::fmod(x, z),
			    std::copysign(p, z), std::fma(x, y, z), std::fmin(x, y), std::fmax(x, y),
			    std::fabs(x), std::sin(x), std::cos(x),
			    (double)(std::isnan(x) + 2 * std::isinf(x) + 4 * std::isfinite(x) +
			             8 * std::signbit(x))};
			int bad = 0;
			for (int k = 0; k < NFLOAT; ++k)
				if (!close_to(out[NFLOAT * i + k], want[k])) {
					++bad;
					std::printf("   x=%g: function #%d gave %.9g, expected %.9g\n", x, k,
					            out[NFLOAT * i + k], want[k]);
				}
			CHECK(bad == 0, "x=%g: %d float functions off", x, bad);
		}
	}

	note("double math: %d functions at 9 points against the host's <cmath>", NDOUBLE);
	{
		const std::vector<double> xs = {0.0, -0.0, 0.3, -0.7, 1.0, 2.5, -3.75, 10.0, NAN};
		const int n = (int)xs.size();
		std::vector<double> out(NDOUBLE * n);
		LAUNCH_OK(math_f64, 1, n, 0, xs.data(), out.data(), n);
		// Same libm underneath: identical results (NaN where NaN).
		auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
		for (int i = 0; i < n; ++i) {
			const double x = xs[i], p = std::fabs(x) + 0.5;
			const double *o = &out[NDOUBLE * i];
			CHECK(same(o[0], std::sqrt(p)) && same(o[1], 1 / std::sqrt(p)) &&
			          same(o[3], std::exp(x)) && same(o[20], std::asinh(x)) &&
			          same(o[26], std::tgamma(p)) && same(o[37], std::fma(x, 0.75, -1.25)) &&
			          o[43] == (double)(std::isnan(x) + 2 * std::isinf(x) + 4 * std::isfinite(x) +
			                            8 * std::signbit(x)),
			      "x=%g: wrong double results", x);
		}
	}

	return test_finish("test_vector");
}
