/* vmath.h - nnk's float32 elementary functions, written to vectorize.
 *
 * Shared, as text, by the code nnkc generates (the C prelude includes it)
 * and by libnnkc's constant folding (compiler/fold.c includes this file),
 * so a folded constant has the bits the generated code computes.  Plain
 * C99, <stdint.h> and <math.h> only; every function static.
 *
 * Each function is straight-line code (sin and cos of |x| > 2^19 aside,
 * below): no calls, no table lookups, selects instead of branches, only
 * + - * / and conversions, so that gcc and clang
 * inline it and vectorize the loop around it (-O2 and up; no -ffast-math,
 * and exact under -ffp-contract=off: the bits do not depend on the target
 * ISA, SSE2 or AVX2, nor on the thread count).  Special values follow
 * C99 Annex F: NaN in, NaN out; +-Inf; overflow to Inf; underflow through
 * the subnormals to 0; the sign of zero where the function keeps it.
 *
 * Measured maximum errors, in units in the last place of the exact result
 * (0.5: correctly rounded), over every 13th float, and in brackets the bound
 * tests/conformance/test_vmath.py enforces (docs/c-backend.md, "Vector math"):
 *   nnk_vm_exp      1.03 [1.5]     nnk_vm_expm1   1.46 [2]
 *   nnk_vm_log      0.81 [1]       nnk_vm_log1p   1.21 [1.5]
 *   nnk_vm_sin/cos  0.93 [1]       nnk_vm_tanh    1.49 [2]
 *   nnk_vm_sigmoid  2.34 [2.5]
 *
 * sin and cos reduce the argument in double (three-part pi/2, exact for
 * |x| <= NNK_VM_TRIG_MAX); beyond it nnk_vm_sin/nnk_vm_cos reduce it with
 * the bits of 2/pi (integer products, a table: nnk_vm_sincos_big), the same
 * code in C and OpenCL C, not libm's sinf/cosf, whose bits are the C
 * library's.  The *_fast variants skip that test (callers check the range
 * themselves: the generated contiguous loops flag out-of-range lanes and
 * recompute their block with the exact functions). */
#ifndef NNK_VMATH_H
#define NNK_VMATH_H

#if defined(__GNUC__) || defined(__clang__)
/* always inlined: a call in the loop would stop its vectorization, and gcc
 * -O2 does not inline functions this size on its own */
#define NNK_VM_FN static inline __attribute__((unused, always_inline))
#else
#define NNK_VM_FN static inline
#endif

NNK_VM_FN uint32_t nnk_vm_f2u(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

NNK_VM_FN float nnk_vm_u2f(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

/* c ? a : b for floats, through bit masks.  A float ?: lets gcc move the
 * arithmetic that feeds only one side into a branch, where (floating-point
 * operations being able to trap, by default) it can no longer be made
 * branch-free, and the loop is not vectorized; masks keep every operation
 * unconditional. */
NNK_VM_FN float nnk_vm_sel(int c, float a, float b)
{
    const uint32_t m = (uint32_t)0 - (uint32_t)(c != 0);
    return nnk_vm_u2f((nnk_vm_f2u(a) & m) | (nnk_vm_f2u(b) & ~m));
}

/* 2^n for n in [-126, 127]. */
NNK_VM_FN float nnk_vm_pow2i(int32_t n) { return nnk_vm_u2f((uint32_t)(n + 127) << 23); }

/* ---- exp -------------------------------------------------------------------
 * x = n ln2 + r, |r| <= ln2/2 (Cody-Waite, n ln2_hi exact); e^r by a
 * degree-6 polynomial (error 0.12 ulp); 2^n applied in two exact halves so
 * that subnormal results round once. */
#define NNK_VM_LN2_HI 0x1.62e400p-1f   /* 16 bits: n * NNK_VM_LN2_HI is exact for |n| < 2^8 */
#define NNK_VM_LN2_LO 0x1.7f7d1cp-20f
#define NNK_VM_RND 0x1.8p23f            /* adding and subtracting it rounds to an integer (|v| < 2^22) */

NNK_VM_FN float nnk_vm_expk(float r)
{
    /* e^r - 1 - r = r^2 (c2 + c3 r + ... + c6 r^4) */
    const float p = 0x1.5554dcp-3f + r * (0x1.5554b8p-5f + r * (0x1.120b66p-7f + r * 0x1.6d751ep-10f));
    return 1.0f + (r + r * r * (0.5f + r * p));
}

NNK_VM_FN float nnk_vm_exp(float x)
{
    /* beyond [-104, 89] the result is 0 or Inf anyway; NaN passes */
    const int lo = x < -104.0f, hi = x > 89.0f;
    const float xc = nnk_vm_sel(lo, -104.0f, nnk_vm_sel(hi, 89.0f, x));
    const float t = xc * 0x1.715476p+0f + NNK_VM_RND;
    const int32_t n = (int32_t)(nnk_vm_f2u(t) - nnk_vm_f2u(NNK_VM_RND)); /* [-150, 128] */
    const float nf = t - NNK_VM_RND;
    const float r = (xc - nf * NNK_VM_LN2_HI) - nf * NNK_VM_LN2_LO;
    const int32_t n1 = n / 2, n2 = n - n1;
    return nnk_vm_expk(r) * nnk_vm_pow2i(n1) * nnk_vm_pow2i(n2);
}

/* ---- expm1 -----------------------------------------------------------------
 * The same reduction; q = e^r - 1 by a degree-7 polynomial, then
 * e^x - 1 = 2^n q + (2^n - 1), both terms exact for n <= 24 (one rounding);
 * larger n: 2^n (1 + q) - 1. */
NNK_VM_FN float nnk_vm_expm1(float x)
{
    const int lo = x < -18.0f, hi = x > 89.0f, zero = x == 0.0f;
    const float xc = nnk_vm_sel(lo, -18.0f, nnk_vm_sel(hi, 89.0f, x));
    const float t = xc * 0x1.715476p+0f + NNK_VM_RND;
    const int32_t n = (int32_t)(nnk_vm_f2u(t) - nnk_vm_f2u(NNK_VM_RND)); /* [-26, 128] */
    const float nf = t - NNK_VM_RND;
    const float r = (xc - nf * NNK_VM_LN2_HI) - nf * NNK_VM_LN2_LO;
    const float p = 0x1.555556p-3f +
                    r * (0x1.5554eap-5f + r * (0x1.1110acp-7f + r * (0x1.6d431ap-10f + r * 0x1.a17de0p-13f)));
    const float q = r + r * r * (0.5f + r * p);
    const float h = nnk_vm_pow2i(n - 1); /* 2^n / 2: finite up to n = 128 */
    const float s = h * 2.0f;
    const float small = s * q + (s - 1.0f);
    const float big = (1.0f + q) * h * 2.0f - 1.0f;
    const float res = nnk_vm_sel(n > 24, big, small);
    return nnk_vm_sel(zero, x, res); /* -0 stays -0 */
}

/* ---- log -------------------------------------------------------------------
 * x = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1 (exact);
 * log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f)  (fdlibm's
 * logf kernel); subnormal x are scaled by 2^23 first. */
NNK_VM_FN float nnk_vm_logk(float f, float k)
{
    const float s = f / (2.0f + f);
    const float z = s * s, w = z * z;
    const float t1 = w * (0x1.999c26p-2f + w * 0x1.f13c4cp-3f);
    const float t2 = z * (0x1.555554p-1f + w * 0x1.23d3dcp-2f);
    const float R = t2 + t1, hfsq = 0.5f * f * f;
    return s * (hfsq + R) + k * 0x1.2fefa2p-17f /* ln2_lo */ - hfsq + f + k * 0x1.62e300p-1f /* ln2_hi */;
}

NNK_VM_FN float nnk_vm_log(float x)
{
    const int sub = x < 0x1p-126f, zero = x == 0.0f, neg = x < 0.0f, inf = x == INFINITY, nan = x != x;
    const float xs = x * 0x1p23f;
    const uint32_t ux = nnk_vm_f2u(nnk_vm_sel(sub, xs, x)) - 0x3f3504f3u;
    /* the exponent, floor((bits - bits(sqrt(2)/2)) / 2^23), with unsigned shifts only */
    const int32_t k = (int32_t)(ux >> 23) - (int32_t)((ux >> 31) << 9) - (sub ? 23 : 0);
    const float m = nnk_vm_u2f((ux & 0x007fffffu) + 0x3f3504f3u);
    const float x2 = x + x;
    float res = nnk_vm_logk(m - 1.0f, (float)k);
    res = nnk_vm_sel(zero, -INFINITY, res);
    res = nnk_vm_sel(neg, NAN, res);
    return nnk_vm_sel(inf | nan, x2, res);
}

/* ---- log1p -----------------------------------------------------------------
 * 1 + x in [sqrt(2)/2, sqrt(2)): f = x, no rounding; otherwise u = 1 + x
 * rounded, reduced as log does, plus the correction c / u for the
 * rounding of u. */
NNK_VM_FN float nnk_vm_log1p(float x)
{
    const float u = 1.0f + x;
    const uint32_t uu = nnk_vm_f2u(u) - 0x3f3504f3u;
    const int32_t ku = (int32_t)(uu >> 23) - (int32_t)((uu >> 31) << 9);
    const float fu = nnk_vm_u2f((uu & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
    const int ge1 = x >= 1.0f, m1 = x == -1.0f, lt1 = x < -1.0f, inf = x == INFINITY, nan = x != x,
              zero = x == 0.0f;
    const int near1 = (x > -0x1.2bec34p-2f) & (x < 0x1.a8279ap-2f); /* 1 + x in [sqrt(2)/2, sqrt(2)) */
    const float c1 = 1.0f - (u - x), c2 = x - (u - 1.0f);
    const float c = nnk_vm_sel(ge1, c1, c2) / u;
    const float kf = (float)ku, x2 = x + x;
    float res = nnk_vm_logk(nnk_vm_sel(near1, x, fu), nnk_vm_sel(near1, 0.0f, kf));
    const float rc = res + c;
    res = nnk_vm_sel(near1, res, rc);
    res = nnk_vm_sel(m1, -INFINITY, res);
    res = nnk_vm_sel(lt1, NAN, res);
    res = nnk_vm_sel(inf | nan, x2, res);
    return nnk_vm_sel(zero, x, res); /* -0 stays -0 */
}

/* ---- sin, cos ----------------------------------------------------------------
 * x = n pi/2 + r in double (pi/2 in three parts, n * P1 exact for
 * |n| < 2^20), r = r_hi + r_lo in float, |r| <= pi/4; sin and cos of r by
 * polynomials in r^2 (relative error below 2^-32); the quadrant n mod 4
 * picks one and its sign. */
#define NNK_VM_TRIG_MAX 0x1p19f

/* sin (c = 0) or cos (c = 1) of r = rd (|r| <= pi/4) in quadrant q */
NNK_VM_FN float nnk_vm_sincos_r(double rd, int32_t q)
{
    const float rh = (float)rd;
    const float rl = (float)(rd - (double)rh);
    const float z = rh * rh;
    const float s = rh + (rl + rh * z *
                     (-0x1.555556p-3f + z * (0x1.11110ep-7f + z * (-0x1.a013a8p-13f + z * 0x1.6dbe4ap-19f))));
    const float hz = 0.5f * z, w = 1.0f - hz;
    const float co = w + (((1.0f - w) - hz) +
                     (z * z * (0x1.555556p-5f + z * (-0x1.6c16c0p-10f + z * (0x1.a015c6p-16f + z * -0x1.252474p-22f))) -
                      rh * rl));
    const float v = nnk_vm_sel(q & 1, co, s);
    return nnk_vm_u2f(nnk_vm_f2u(v) ^ ((uint32_t)(q & 2) << 30));
}

NNK_VM_FN float nnk_vm_sincos_fast(float x, int32_t c)
{
    const float a = fabsf(x);
    const int in = a <= NNK_VM_TRIG_MAX, zero = x == 0.0f;
    const double xd = (double)nnk_vm_sel(in, x, 0.0f); /* out of range (or NaN): garbage, replaced below */
    const double nd = (xd * 0x1.45f306dc9c883p-1 + 0x1.8p52) - 0x1.8p52;
    const int32_t q = (int32_t)nd + c;
    const double rd = (xd - nd * 0x1.921fb544p+0) - nd * 0x1.0b4611a626331p-34 - nd * 0x1.1701b839a2520p-88;
    const float res = nnk_vm_sincos_r(rd, q);
    /* NaN and Inf give NaN; sin(-0) is -0 */
    const float nan = x - x;
    return nnk_vm_sel(in, nnk_vm_sel((c == 0) & zero, x, res), nan);
}

/* ---- sin, cos of |x| > NNK_VM_TRIG_MAX ------------------------------------
 * |x| = m 2^(e-23), m a 24-bit integer: |x| 2/pi mod 4 is m W 2^-94 mod 4,
 * W the 96 bits of 2/pi after bit e - 25 (the bits before give multiples
 * of 4).  Its 64 bits above 2^-62 are hi = (m w0 << 32) + m w1 + (m w2 >> 32)
 * (mod 2^64; the dropped bits are below 2^-62, the bits of 2/pi beyond W
 * below 2^-70), the quadrant n the nearest integer to hi 2^-62, and
 * r = (hi - n 2^62) 2^-62 pi/2 in double (|r| <= pi/4, relative error
 * 2^-52: the closest float to a multiple of pi/2 is 2^-29 or more away);
 * then the kernel above.  NaN and Inf give NaN. */
#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__) /* OpenCL C: clang defines only the first, PoCL both */
#define NNK_VM_TABLE __constant
#elif defined(__GNUC__) || defined(__clang__)
#define NNK_VM_TABLE static const __attribute__((unused))
#else
#define NNK_VM_TABLE static const
#endif
/* 2/pi: 32 zero bits (|x| < 2^25 starts before the point), then its first
 * 224 bits after the point */
NNK_VM_TABLE uint32_t nnk_vm_2opi[8] = {0x00000000u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
                                        0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu};

NNK_VM_FN float nnk_vm_sincos_big(float x, int32_t c)
{
    const uint32_t ux = nnk_vm_f2u(x) & 0x7fffffffu;
    const int fin = ux < 0x7f800000u;
    const uint32_t u = fin && ux > 0x48000000u ? ux : 0x48000001u; /* (the table's range: 2^17 < |x| < 2^128) */
    const int32_t t = (int32_t)(u >> 23) - 127 + 7;                /* W's first bit, counted in the table */
    const int32_t j = t >> 5, sh = t & 31;
    const uint64_t m = (u & 0x7fffffu) | 0x800000u;
    uint64_t w[3];
    for (int32_t i = 0; i < 3; i++)
        w[i] = ((((uint64_t)nnk_vm_2opi[j + i] << 32) | nnk_vm_2opi[j + i + 1]) >> (32 - sh)) & 0xffffffffu;
    const uint64_t hi = ((m * w[0]) << 32) + m * w[1] + ((m * w[2]) >> 32);
    const uint64_t n = (hi + (UINT64_C(1) << 61)) >> 62;
    const double rd = (double)(int64_t)(hi - (n << 62)) * 0x1.921fb54442d18p-62;
    const float res = nnk_vm_sincos_r(rd, (int32_t)(n & 3) + c);
    /* sin(-x) = -sin(x), cos(-x) = cos(x) */
    const float r = c == 0 && x < 0.0f ? -res : res;
    return fin ? r : x - x;
}

NNK_VM_FN float nnk_vm_sin_fast(float x) { return nnk_vm_sincos_fast(x, 0); }
NNK_VM_FN float nnk_vm_cos_fast(float x) { return nnk_vm_sincos_fast(x, 1); }
/* nonzero when the fast versions do not hold for x (|x| beyond the range; Inf) */
NNK_VM_FN uint32_t nnk_vm_trig_out(float x) { return fabsf(x) > NNK_VM_TRIG_MAX; }
NNK_VM_FN float nnk_vm_sin(float x) { return nnk_vm_trig_out(x) ? nnk_vm_sincos_big(x, 0) : nnk_vm_sin_fast(x); }
NNK_VM_FN float nnk_vm_cos(float x) { return nnk_vm_trig_out(x) ? nnk_vm_sincos_big(x, 1) : nnk_vm_cos_fast(x); }

/* ---- tanh ------------------------------------------------------------------
 * |x| < 0.55: x + x^3 P(x^2) (degree 5 in x^2, error 0.06 ulp); above,
 * tanh |x| = e / (e + 2) with e = expm1(2|x|); 1 from |x| > 9.1 on (where
 * tanh rounds to 1); the sign put back (tanh(-0) = -0). */
NNK_VM_FN float nnk_vm_tanh(float x)
{
    const float a = fabsf(x);
    const int big = a > 9.1f, small = a < 0.55f;
    const float z = a * a;
    const float ps = a + a * z * (-0x1.555554p-2f + z * (0x1.110ff4p-3f + z * (-0x1.b9a2eep-5f +
                                  z * (0x1.5d3e24p-6f + z * -0x1.b1ee8ap-8f))));
    const float a2 = 2.0f * a;
    const float e = nnk_vm_expm1(nnk_vm_sel(big, 9.1f, a2));
    const float q = e / (e + 2.0f);
    const float t = nnk_vm_sel(small, ps, nnk_vm_sel(big, 1.0f, q));
    return nnk_vm_u2f(nnk_vm_f2u(t) | (nnk_vm_f2u(x) & 0x80000000u));
}

/* ---- sigmoid: 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 (no overflow of
 * e^-x before the result is subnormal) ---------------------------------------- */
NNK_VM_FN float nnk_vm_sigmoid(float x)
{
    const int neg = x < 0.0f;
    const float mx = -x;
    const float e = nnk_vm_exp(nnk_vm_sel(neg, x, mx));
    return nnk_vm_sel(neg, e, 1.0f) / (1.0f + e);
}

#endif /* NNK_VMATH_H */
