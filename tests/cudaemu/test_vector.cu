// Vector types and 8/16-byte vector loads, bit casts, the math functions
// and integer min/max.  Plain CUDA: it also compiles with nvcc
// (nvcc-check.sh), which checks the sizes and alignments below against
// CUDA's own vector types.
#include <stdint.h>

#define SIZE_ALIGN(T, S, A) static_assert(sizeof(T) == (S) && alignof(T) == (A), #T)
SIZE_ALIGN(float2, 8, 8);
SIZE_ALIGN(float4, 16, 16);
SIZE_ALIGN(int2, 8, 8);
SIZE_ALIGN(int4, 16, 16);
SIZE_ALIGN(uint2, 8, 8);
SIZE_ALIGN(uint4, 16, 16);
SIZE_ALIGN(double2, 16, 16);
SIZE_ALIGN(longlong2, 16, 16);
SIZE_ALIGN(ushort2, 4, 4);
SIZE_ALIGN(ushort4, 8, 8);
SIZE_ALIGN(short4, 8, 8);
SIZE_ALIGN(char4, 4, 4);
SIZE_ALIGN(uchar4, 4, 4);
SIZE_ALIGN(dim3, 12, 4);
SIZE_ALIGN(uint3, 12, 4);

// Copy n vectors, alternating plain and __ldg loads, and check make_*.
template <class V>
__global__ void copy_vec(const V *__restrict__ in, V *__restrict__ out, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = (i & 1) ? __ldg(in + i) : in[i];
}

// A float array read as float4 (16-byte loads) with a scalar tail.
extern "C" __global__ void scale_vec4(const float *in, float *out, float a, int n)
{
	const int nv = n / 4;
	const float4 *in4 = reinterpret_cast<const float4 *>(in);
	float4 *out4 = reinterpret_cast<float4 *>(out);
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += gridDim.x * blockDim.x) {
		const float4 v = __ldg(in4 + i);
		out4[i] = make_float4(a * v.x, a * v.y, a * v.z, a * v.w);
	}
	for (int i = 4 * nv + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = a * __ldg(in + i);
}

struct Made {
	float2 f2; float4 f4; int2 i2; int4 i4; uint2 u2; uint4 u4; double2 d2; longlong2 ll2;
	ushort2 us2; ushort4 us4; short4 s4; char4 c4; uchar4 uc4;
};

extern "C" __global__ void make_all(Made *m)
{
	m->f2 = make_float2(1.5f, -2.0f);
	m->f4 = make_float4(1, 2, 3, 4);
	m->i2 = make_int2(-7, 8);
	m->i4 = make_int4(-1, -2, 3, 4);
	m->u2 = make_uint2(5u, 4000000000u);
	m->u4 = make_uint4(1u, 2u, 3u, 4u);
	m->d2 = make_double2(0.1, -0.2);
	m->ll2 = make_longlong2(-(1LL << 40), 1LL << 41);
	m->us2 = make_ushort2(65535, 1);
	m->us4 = make_ushort4(1, 2, 3, 65535);
	m->s4 = make_short4(-32768, 32767, 0, -1);
	m->c4 = make_char4(-128, 127, 0, -1);
	m->uc4 = make_uchar4(255, 0, 1, 128);
}

// __ldg of the scalar types.
struct Scalars {
	char c; signed char sc; unsigned char uc; short s; unsigned short us; int i; unsigned u;
	long long ll; unsigned long long ull; float f; double d;
};

extern "C" __global__ void ldg_scalars(const Scalars *in, Scalars *out)
{
	out->c = __ldg(&in->c);
	out->sc = __ldg(&in->sc);
	out->uc = __ldg(&in->uc);
	out->s = __ldg(&in->s);
	out->us = __ldg(&in->us);
	out->i = __ldg(&in->i);
	out->u = __ldg(&in->u);
	out->ll = __ldg(&in->ll);
	out->ull = __ldg(&in->ull);
	out->f = __ldg(&in->f);
	out->d = __ldg(&in->d);
}

// Bit casts and integer min/max/abs.
struct Ints {
	int f_as_i; unsigned f_as_u; float i_as_f, u_as_f; long long d_as_ll; double ll_as_d;
	int mn, mx, ab; unsigned umn, umx; long long llmn, llmx, llab;
	unsigned long long ullmn, ullmx; float fmn, fmx; double dmn, dmx;
	int promoted;
};

extern "C" __global__ void ints(Ints *r, float f, int i, unsigned u, double d, long long ll)
{
	r->f_as_i = __float_as_int(f);
	r->f_as_u = __float_as_uint(f);
	r->i_as_f = __int_as_float(i);
	r->u_as_f = __uint_as_float(u);
	r->d_as_ll = __double_as_longlong(d);
	r->ll_as_d = __longlong_as_double(ll);
	r->mn = min(i, -i);
	r->mx = max(i, -i);
	r->ab = abs(-i);
	r->umn = umin(u, 7u);
	r->umx = umax(u, 7u);
	r->llmn = llmin(ll, -ll);
	r->llmx = llmax(ll, -ll);
	r->llab = llabs(-ll);
	r->ullmn = ullmin(3ull, (unsigned long long)ll);
	r->ullmx = ullmax(3ull, (unsigned long long)ll);
	r->fmn = min(f, 2.0f);
	r->fmx = max(f, 2.0f);
	r->dmn = min(d, 2.0);
	r->dmx = max(d, 2.0);
	const short s1 = 3, s2 = -4;
	r->promoted = min(s1, s2) + max(min(1u, 2u), 0u); // short promotes to int
}

// Every float function of the set, evaluated at x (and y, z where needed);
// out[k] in the order of the list in docs/cuda-backend.md.
#define NFLOAT 44
extern "C" __global__ void math_f32(const float *xs, float *out, int n)
{
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const float x = xs[i], y = 0.75f, z = -1.25f, p = fabsf(x) + 0.5f;
	float *o = out + NFLOAT * i;
	float s, c;
	sincosf(x, &s, &c);
	const float r[NFLOAT] = {
	    sqrtf(p), rsqrtf(p), cbrtf(x), expf(x), exp2f(x), expm1f(x), logf(p), log2f(p),
	    log10f(p), log1pf(p), sinf(x), cosf(x), tanf(x), asinf(y), acosf(y), atanf(x),
	    atan2f(x, z), sinhf(x), coshf(x), tanhf(x), asinhf(x), acoshf(p + 1.0f), atanhf(y),
	    erff(x), erfcf(x), lgammaf(p), tgammaf(p), powf(p, y), hypotf(x, z), floorf(x),
	    ceilf(x), rintf(x), nearbyintf(x), roundf(x), truncf(x), fmodf(x, z), copysignf(p, z),
	    fmaf(x, y, z), fminf(x, y), fmaxf(x, y), fabsf(x), s, c,
	    (float)(isnan(x) + 2 * isinf(x) + 4 * isfinite(x) + 8 * signbit(x))};
	for (int k = 0; k < NFLOAT; ++k)
		o[k] = r[k];
}

#define NDOUBLE 44
extern "C" __global__ void math_f64(const double *xs, double *out, int n)
{
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const double x = xs[i], y = 0.75, z = -1.25, p = fabs(x) + 0.5;
	double *o = out + NDOUBLE * i;
	double s, c;
	sincos(x, &s, &c);
	const double r[NDOUBLE] = {
	    sqrt(p), rsqrt(p), cbrt(x), exp(x), exp2(x), expm1(x), log(p), log2(p),
	    log10(p), log1p(p), sin(x), cos(x), tan(x), asin(y), acos(y), atan(x),
	    atan2(x, z), sinh(x), cosh(x), tanh(x), asinh(x), acosh(p + 1.0), atanh(y),
	    erf(x), erfc(x), lgamma(p), tgamma(p), pow(p, y), hypot(x, z), floor(x),
	    ceil(x), rint(x), nearbyint(x), round(x), trunc(x), fmod(x, z), copysign(p, z),
	    fma(x, y, z), fmin(x, y), fmax(x, y), fabs(x), s, c,
	    (double)(isnan(x) + 2 * isinf(x) + 4 * isfinite(x) + 8 * signbit(x))};
	for (int k = 0; k < NDOUBLE; ++k)
		o[k] = r[k];
}

template __global__ void copy_vec<float2>(const float2 *, float2 *, int);
template __global__ void copy_vec<float4>(const float4 *, float4 *, int);
template __global__ void copy_vec<int2>(const int2 *, int2 *, int);
template __global__ void copy_vec<int4>(const int4 *, int4 *, int);
template __global__ void copy_vec<uint2>(const uint2 *, uint2 *, int);
template __global__ void copy_vec<uint4>(const uint4 *, uint4 *, int);
template __global__ void copy_vec<double2>(const double2 *, double2 *, int);
template __global__ void copy_vec<longlong2>(const longlong2 *, longlong2 *, int);
template __global__ void copy_vec<ushort2>(const ushort2 *, ushort2 *, int);
template __global__ void copy_vec<ushort4>(const ushort4 *, ushort4 *, int);
template __global__ void copy_vec<short4>(const short4 *, short4 *, int);
template __global__ void copy_vec<char4>(const char4 *, char4 *, int);
template __global__ void copy_vec<uchar4>(const uchar4 *, uchar4 *, int);
