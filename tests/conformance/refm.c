/* refm.c - the references of the conformance suite for libm functions:
 * the C library's scalar double functions over arrays (nnkconf.libm).
 *
 * numpy's own float64 functions dispatch to SIMD code chosen by the host
 * (AVX-512's SVML cbrt, exp, log, ... differ from the AVX2 and scalar ones
 * by up to a few ulp), so a reference taken from them changes from machine
 * to machine.  These loops are compiled without vectorization and without
 * builtins, so every element is one call of glibc's scalar function, the
 * same on every x86-64 the suite runs on.  cbrt is corrected to the
 * correctly rounded value in nnkconf.cbrt_ref. */
#include <math.h>

#define UNARY(f)                                                    \
    void nnk_ref_##f(const double *x, double *y, long n)            \
    {                                                               \
        for (long i = 0; i < n; i++)                                \
            y[i] = f(x[i]);                                         \
    }
#define BINARY(f)                                                   \
    void nnk_ref_##f(const double *x, const double *z, double *y, long n) \
    {                                                               \
        for (long i = 0; i < n; i++)                                \
            y[i] = f(x[i], z[i]);                                   \
    }

UNARY(exp) UNARY(exp2) UNARY(expm1) UNARY(log) UNARY(log2) UNARY(log10) UNARY(log1p)
UNARY(sin) UNARY(cos) UNARY(tan) UNARY(asin) UNARY(acos) UNARY(atan)
UNARY(sinh) UNARY(cosh) UNARY(tanh) UNARY(asinh) UNARY(acosh) UNARY(atanh)
UNARY(erf) UNARY(erfc) UNARY(lgamma) UNARY(tgamma) UNARY(cbrt) UNARY(sqrt)
BINARY(atan2) BINARY(pow) BINARY(hypot) BINARY(fmod)
