"""The compiler's Welford rewrite (kernels/welford.nnk): `mean` followed by
the mean (or sum) of the squared deviations, compiled at -O3 as one pass
with the state (running mean, sum of squared deviations, count) merged by
Chan et al.'s formula (language.md, "Tuple state"), against exact moments
(math.fsum), numpy, and the same kernels at -O2 (two passes).

Tolerances: as test_tuple.py's Welford state: f32/f64 within
eps * (log2(n) + 16) relative, scaled by the variance's condition number
1 + |mean| / sd; f16 (f32 accumulators) within 2 ulp; over rows of a large
dynamic range (|x| from 1e-4 to 1e4) and of a large mean (1e4 + U(-1, 1),
where E[x^2] - E[x]^2 in f32 has no digit left). The mean keeps the
two-pass form's bits (its reducer is untouched); where the two-pass form
gives NaN, inf or an empty slice's value, so does the one-pass form. Same
bits on every call (python/tests/test_welford.py: for every thread count
of the runtime's pool).
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402
from test_reduction import layouts, norm_axes, values  # noqa: E402
from test_tuple import exact_moments  # noqa: E402

rng = np.random.default_rng(1820)
SRC = "kernels/welford.nnk"
EPS = {"f16": 2.0 ** -11, "f32": 2.0 ** -24, "f64": 2.0 ** -53}


def fused():
    return C.load(SRC, extra_nnkc=("-O3",))


def two_pass():
    return C.load(SRC)


def test_one_pass_at_O3():
    C.check_one_pass_at_O3(SRC, ("variance_f32", "variance_f16", "layernorm_f32", "forms"))


def rows(t, shape, kind):
    if kind == "range":
        v = rng.standard_normal(shape) * 10.0 ** rng.uniform(-4, 4 if t != "f16" else 2, shape)
    elif kind == "mean":
        c = 1e4 if t != "f16" else 1e3    # f16 holds 1e4 only to 8
        v = c + rng.uniform(-1, 1, shape)
    else:
        v = rng.uniform(-3, 3, shape)
    x = v.astype(C.NP[t])
    return x, x.astype(np.float64)


def check_var(got, want_mean, want_var, n, t, tag):
    if t == "f16":
        C.close(got, want_var.astype(np.float16), t, ulp=2, what=tag)
        return
    tol = EPS[t] * (math.log2(max(n, 2)) + 16)
    cond = 1 + np.abs(want_mean) / np.sqrt(want_var)
    err = np.abs(got.astype(np.float64) - want_var)
    C.check(np.all(err <= 4 * tol * cond * want_var), "%s: variance off by %g relative" % (tag, np.max(err / want_var)))


def test_variance_accuracy():
    cases = [((8, 300), 1), ((8, 300), 0), ((3, 4, 50), (0, 2)), ((1000,), None), ((5, 3, 2), -1), ((2, 40000), 1)]
    for t in ("f32", "f64", "f16"):
        for shape, axes in cases:
            for kind in ("centred", "range", "mean"):
                x, xv = rows(t, shape, kind)
                mean, var, n = exact_moments(xv, norm_axes(axes, len(shape)))
                for lname, view in layouts(x) if x.size < 20000 else [("contiguous", x)]:
                    gm, gv = getattr(fused(), "variance_" + t)(view, axes=axes)
                    m2, _ = getattr(two_pass(), "variance_" + t)(view, axes=axes)
                    tag = "variance<%s> %s axes %s %s %s" % (t, shape, axes, kind, lname)
                    C.equal(gm, m2, tag + ": the mean as two passes give it")
                    check_var(gv, mean, var, n, t, tag)
                    # numpy's own variance, of the float64 values
                    check_var(gv, mean, np.var(xv, axis=axes), n, t, tag + " (numpy)")


def test_beats_two_moments_in_f32():
    x = (1e4 + rng.uniform(-1, 1, (4, 4096))).astype(np.float32)
    _, var, _ = exact_moments(x.astype(np.float64), (1,))
    _, gv = fused().variance_f32(x, axes=1)
    naive = (x * x).mean(axis=1, dtype=np.float32) - x.mean(axis=1, dtype=np.float32) ** 2
    C.check(np.all(np.abs(gv - var) <= 1e-4 * var), "one-pass f32 variance")
    C.check(np.any(np.abs(naive - var) > 0.1 * var), "the naive f32 variance is as bad as expected")


def test_layernorm():
    for t in ("f32", "f16"):
        for shape, axes in [((16, 256), 1), ((16, 256), 0), ((4, 6, 8), (1, 2)), ((2, 5000), 1)]:
            x, xv = rows(t, shape, "mean" if t == "f32" else "centred")
            g, gv = values(t, shape[-1:], 0.5, 2)
            b, bv = values(t, shape[-1:], -1, 1)
            ax = norm_axes(axes, len(shape))
            m = xv.mean(axis=ax, keepdims=True)
            v = ((xv - m) ** 2).mean(axis=ax, keepdims=True)
            want = (xv - m) / np.sqrt(v + np.float64(np.float32(1e-5))) * gv + bv
            for lname, view in layouts(x) if x.size < 5000 else [("contiguous", x)]:
                got = getattr(fused(), "layernorm_" + t)(view, g, b, axes=axes)
                what = "layernorm<%s> %s axes %s %s" % (t, shape, axes, lname)
                # rows of mean 1e4: the deviations carry the f32 mean's
                # rounding (the same mean in both forms), f16 the rounding
                # of x - m and of the sum with beta: within twice the
                # two-pass form's error
                two = getattr(two_pass(), "layernorm_" + t)(view, g, b, axes=axes).astype(np.float64)
                bound = 2 * np.max(np.abs(two - want)) + 64 * EPS[t] * np.abs(want)
                err = np.abs(got.astype(np.float64) - want)
                C.check(np.all(err <= bound), "%s: off by %g, two passes by %g" % (what, np.max(err), np.max(np.abs(two - want))))


def test_forms():
    x = rng.uniform(-30, 30, (6, 1000)).astype(np.float32)
    xv = x.astype(np.float64)
    a, b, c, d = fused().forms(x, np.float32(0.5), axes=1)
    mean, var, n = exact_moments(xv, (1,))
    check_var(a, mean, var, n, "f32", "sum / n")
    check_var(b, mean, var, n, "f32", "mean(pow(mu - x, 2))")
    xs = (x * np.float32(0.5)).astype(np.float64)
    ms, vs, _ = exact_moments(xs, (1,))
    check_var(c, ms, vs, n, "f32", "a scaled element")
    check_var(d, mean, np.var(xv, axis=1, ddof=1), n, "f32", "sample variance (n - 1)")


def test_special_values_as_two_pass():
    inf, nan = np.inf, np.nan
    special = [[inf, 1, 2, 3], [1, inf, inf, 2], [-inf, inf, 1, 2], [nan, 1, 2, 3], [1, 2, nan, inf],
               [-inf, -inf, -inf, -inf], [5, 5, 5, 5], [0, -0.0, 0, -0.0]]
    for t in ("f32", "f64", "f16"):
        big = {"f32": 3e38, "f64": 1.7e308, "f16": 6e4}[t]
        # (f64 elements of opposite signs beyond half the largest f64
        # overflow the state's difference of means: NaN where two passes
        # give inf, as language.md says)
        x = np.array(special + [[big] * 4] + ([[-big, -big, big * 0.5, -big]] if t != "f64" else []), dtype=C.NP[t])
        for axes in (1, None):
            a = getattr(fused(), "variance_" + t)(x, axes=axes)
            b = getattr(two_pass(), "variance_" + t)(x, axes=axes)
            C.equal(a[0], b[0], "variance<%s> axes %s: the mean" % (t, axes))
            u, v = np.atleast_1d(a[1]).astype(np.float64), np.atleast_1d(b[1]).astype(np.float64)
            fin = np.isfinite(v) & np.isfinite(u)
            C.equal(np.isnan(u), np.isnan(v), "variance<%s> axes %s: NaN where two passes give it" % (t, axes))
            C.equal(np.isposinf(u), np.isposinf(v), "variance<%s> axes %s: inf where two passes give it" % (t, axes))
            C.check(np.all(u[fin] == v[fin]) if t != "f16" else True, "variance<%s> exact rows" % t)
        e = np.zeros((3, 0), C.NP[t])
        for k in (fused(), two_pass()):
            m, v = getattr(k, "variance_" + t)(e, axes=1)
            C.check(np.all(np.isnan(m)) and np.all(np.isnan(v)), "variance<%s> of an empty slice: NaN" % t)
    a = fused().forms(np.zeros((2, 0), np.float32), np.float32(1), axes=1)
    b = two_pass().forms(np.zeros((2, 0), np.float32), np.float32(1), axes=1)
    for u, v in zip(a, b):
        C.equal(np.isnan(u), np.isnan(v), "forms of an empty slice")


def test_deterministic():
    x = (1e3 + rng.uniform(-50, 50, (3, 100003))).astype(np.float32)
    first = fused().variance_f32(x, axes=1)
    for _ in range(3):
        for f, g in zip(first, fused().variance_f32(x, axes=1)):
            C.equal(g, f, "the same bits every call")


if __name__ == "__main__":
    sys.exit(C.main(globals()))
