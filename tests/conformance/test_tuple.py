"""Reductions with a tuple state (kernels/tuple.nnk) against numpy:
Welford mean/variance, layernorm in one pass, argmax with its value, a
hand-written online softmax and logsumexp, integer states of mixed types,
tuple states in later phases and next to other reducers; through
NAME_strided with several layouts and axis sets.

Tolerances: integer results and the argmax are exact; the Welford mean and
variance of n values within eps * (log2(n) + 16) relative to the exact
values (math.fsum over the values and their deviations), rows with a large
mean (1e4 + U(-1, 1)) included, where E[x^2] - E[x]^2 loses every digit in
f32, the variance's error scaled by its condition number 1 + |mean| / sd
(the deviations carry the mean's rounding); f16 (f32 accumulators, one
rounding) within 2 ulp; the hand-written online softmax as
test_reduction.py's softmax (16 ulp f32/f64, 1 ulp f16), logsumexp 16 ulp.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402
from test_reduction import layouts, norm_axes, red_ref_move, values, _softmax_ref  # noqa: E402

rng = np.random.default_rng(1818)


def K():
    return C.load("kernels/tuple.nnk")


def exact_moments(xv, axes):
    """Exact mean and population variance over the reduced axes (float64)."""
    y = red_ref_move(xv.astype(np.float64), axes)
    flat = y.reshape(int(np.prod(y.shape[:-1], dtype=np.int64)), y.shape[-1])
    mean = np.array([math.fsum(r) / len(r) for r in flat])
    var = np.array([math.fsum((r - m) ** 2) / len(r) for r, m in zip(flat, mean)])
    return mean.reshape(y.shape[:-1]), var.reshape(y.shape[:-1]), y.shape[-1]


def test_welford_mean_var():
    cases = [((8, 300), 1), ((8, 300), 0), ((3, 4, 50), (0, 2)), ((1000,), None), ((5, 3, 2), -1), ((2, 5000), 1)]
    for t in ("f32", "f64", "f16"):
        eps = {"f16": 2.0 ** -11, "f32": 2.0 ** -24, "f64": 2.0 ** -53}[t]
        for shape, axes in cases:
            for lo, hi, what in ((-3, 3, "centred"), (1e4 - 1, 1e4 + 1, "mean 1e4")):
                if t == "f16" and lo > 1000:
                    lo, hi = 999, 1001  # f16 holds 1e4 only to 8: its own large-mean case
                x, xv = values(t, shape, lo, hi)
                ax = norm_axes(axes, len(shape))
                mean, var, n = exact_moments(xv, ax)
                for lname, view in layouts(x):
                    gm, gv, gc = getattr(K(), "welford_" + t)(view, axes=axes)
                    tag = "welford<%s> %s axes %s %s %s" % (t, shape, axes, what, lname)
                    C.equal(gc, np.full(mean.shape, n, dtype=np.int64), tag + ": count")
                    if t == "f16":
                        C.close(gm, mean.astype(np.float16), t, ulp=2, what=tag + ": mean")
                        C.close(gv, var.astype(np.float16), t, ulp=2, what=tag + ": var")
                        continue
                    tol = eps * (math.log2(n) + 16)
                    gm64, gv64 = gm.astype(np.float64), gv.astype(np.float64)
                    C.check(np.all(np.abs(gm64 - mean) <= tol * np.abs(mean) + tol * np.sqrt(var)),
                            "%s: mean off by %g" % (tag, np.max(np.abs(gm64 - mean))))
                    # the deviations carry the mean's rounding: relative to the
                    # variance, that is the condition number |mean| / sd
                    cond = 1 + np.abs(mean) / np.sqrt(var)
                    C.check(np.all(np.abs(gv64 - var) <= 4 * tol * cond * var),
                            "%s: variance off by %g relative" % (tag, np.max(np.abs(gv64 - var) / var)))


def test_welford_beats_two_moments_in_f32():
    """The point of the tuple state: E[x^2] - E[x]^2 in f32 has no digit left."""
    x = (1e4 + rng.uniform(-1, 1, (4, 4096))).astype(np.float32)
    _, var, _ = exact_moments(x.astype(np.float64), (1,))
    _, gv, _ = K().welford_f32(x, axes=1)
    naive = (x * x).mean(axis=1, dtype=np.float32) - x.mean(axis=1, dtype=np.float32) ** 2
    C.check(np.all(np.abs(gv - var) <= 1e-4 * var), "welford f32 variance")
    C.check(np.any(np.abs(naive - var) > 0.1 * var), "the naive f32 variance is as bad as expected")


def test_layernorm_one_pass():
    for t in ("f32", "f16"):
        for shape, axes in [((16, 256), 1), ((16, 256), 0), ((4, 6, 8), (1, 2))]:
            x, xv = values(t, shape, -3, 3)
            ax = norm_axes(axes, len(shape))
            m = xv.mean(axis=ax, keepdims=True)
            v = ((xv - m) ** 2).mean(axis=ax, keepdims=True)
            want = (xv - m) / np.sqrt(v + 1e-5)
            for lname, view in layouts(x):
                got = getattr(K(), "layernorm1_" + t)(view, axes=axes)
                C.close(got, want.astype(C.NP[t]), t, ulp=2 if t == "f16" else 64, atol=1e-6 if t == "f32" else 0,
                        what="layernorm1<%s> %s axes %s %s" % (t, shape, axes, lname))


def test_value_and_argmax():
    # small integers: many ties, first occurrence (smallest flat index) wins
    for shape in ((7, 300), (1, 5000), (64, 3)):
        x = rng.integers(-20, 20, shape).astype(np.float32)
        v, i = K().vargmax(x, axes=1)
        C.equal(v, x.max(axis=1), "vargmax value %s" % (shape,))
        C.equal(i, np.argmax(x, axis=1) + np.arange(shape[0]) * shape[1], "vargmax index %s" % (shape,))
        v, i = K().vargmax(x, axes=None)
        C.equal(i, np.int64(np.argmax(x)), "vargmax over all %s" % (shape,))
    v, i = K().vargmax(np.zeros((3, 0), np.float32), axes=1)
    C.equal(v, np.full(3, -np.inf, np.float32), "empty slice: the identity")
    C.equal(i, np.full(3, -1, np.int64), "empty slice: the identity's index")


def test_online_softmax_logsumexp():
    for t in ("f32", "f64", "f16"):
        for shape, axes in [((8, 300), 1), ((8, 300), 0), ((3, 4, 50), (0, 2)), ((1000,), None), ((5, 3, 2), -1)]:
            x, xv = values(t, shape, -8, 8)
            if t != "f16":
                x[..., 0] += 60  # a large dynamic range: one value dominates the sum
                xv = x.astype(np.float64)
            for lname, view in layouts(x):
                got = getattr(K(), "osoftmax_" + t)(view, axes=axes)
                C.close(got, _softmax_ref(xv, axes).astype(C.NP[t]), t, ulp=1 if t == "f16" else 16,
                        atol=1e-7 if t == "f32" else 0, what="osoftmax<%s> %s axes %s %s" % (t, shape, axes, lname))
            if t == "f16":
                continue
            m = xv.max(axis=axes, keepdims=True)
            lse = (m + C.libm("log")(C.libm("exp")(xv - m).sum(axis=axes, keepdims=True))).squeeze(axis=axes)
            C.close(getattr(K(), "ologsumexp_" + t)(x, axes=axes), lse.astype(C.NP[t]), t, ulp=16,
                    what="ologsumexp<%s> %s axes %s" % (t, shape, axes))


def test_integer_state_of_mixed_types():
    for shape, axes in [((9, 100), 1), ((9, 100), 0), ((4, 5, 6), (0, 2)), ((300,), None)]:
        x = rng.integers(-1000, 1000, shape).astype(np.int32)
        for lname, view in layouts(x):
            s, c, lo = K().possum(view, axes=axes)
            what = "possum %s axes %s %s" % (shape, axes, lname)
            C.equal(s, x.sum(axis=axes, dtype=np.int64), what + ": sum")
            C.equal(c, (x > 0).sum(axis=axes).astype(np.int32), what + ": count")
            C.equal(lo, x.min(axis=axes), what + ": min")
    s, c, lo = K().possum(np.zeros((2, 0), np.int32), axes=1)
    C.equal(lo, np.full(2, 2147483647, np.int32), "possum: empty slice gives the identity")


def test_tuple_in_later_phases():
    for shape, axes in [((6, 200), 1), ((6, 200), 0), ((1000,), None)]:
        x = rng.uniform(-5, 5, shape)
        w = 0.5
        r, t = K().phases(x, w, axes=axes)
        m = x.max(axis=axes, keepdims=True)
        lse = (m + C.libm("log")(C.libm("exp")(x - m).sum(axis=axes, keepdims=True))).squeeze(axis=axes)
        q = (w * x).sum(axis=axes, keepdims=True)
        dev = np.abs(x * w - q).sum(axis=axes)
        C.close(r, lse, "f64", ulp=16, what="phases: logsumexp, %s axes %s" % (shape, axes))
        C.check(np.all(np.abs(t - dev) <= 1e-12 * np.abs(dev) * 1000), "phases: a phase after the tuple, %s" % (shape,))


def test_two_tuples_and_a_plain_reducer():
    x = rng.uniform(-2, 2, (5, 777)).astype(np.float32)
    for axes in (1, 0, None):
        a, b, c = K().two(x, axes=axes)
        C.close(a, x.astype(np.float64).mean(axis=axes).astype(np.float32), "f32", ulp=0, atol=1e-6, what="two: mean")
        C.equal(b, x.max(axis=axes) - x.min(axis=axes), "two: range")
        exact = x.astype(np.float64).sum(axis=axes)
        C.check(np.all(np.abs(c - exact) <= 1e-4 * np.abs(x).sum(axis=axes)), "two: sum")


def test_complex_value():
    x = (rng.uniform(-1, 1, (5, 300)) + 1j * rng.uniform(-1, 1, (5, 300))).astype(np.complex64)
    for axes in (1, 0, None):
        r, c = K().csum(x, axes=axes)
        want = x.astype(np.complex128).sum(axis=axes)
        n = x.size if axes is None else x.shape[axes]
        C.check(np.all(np.abs(r - want) <= 1e-5 * n), "csum axes %s: the complex sum" % (axes,))
        C.equal(c, np.full(np.shape(want), n, np.float32), "csum axes %s: the count" % (axes,))


def test_deterministic():
    x = rng.uniform(-1, 1, (3, 100001)).astype(np.float32)
    first = K().welford_f32(x, axes=1)
    for _ in range(3):
        again = K().welford_f32(x, axes=1)
        for f, g in zip(first, again):
            C.equal(g, f, "welford: the same bits every call")


if __name__ == "__main__":
    sys.exit(C.main(globals()))
