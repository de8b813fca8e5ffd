"""The compiler's one-pass rewrite of softmax's two reductions
(kernels/online.nnk): `max` followed by `sum(exp(x - m))` compiled at -O3
as one pass with the state (m, s), the running maximum rescaling the
running sum (language.md, "Tuple state"), against numpy and against the
same kernels at -O2 (two passes).

Tolerances: as test_reduction.py's softmax and logsumexp (16 ulp in f32
and f64, 1 ulp in f16, of float64 references with glibc's scalar exp), over
rows of a large dynamic range, sorted rows (a rescaling at every element)
and rows of 2^15; where the two-pass form gives NaN, inf or an empty
slice's value, the one-pass form gives the same bits.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402
from test_reduction import layouts, _softmax_ref  # noqa: E402

rng = np.random.default_rng(1819)
SRC = "kernels/online.nnk"


def fused():
    return C.load(SRC, extra_nnkc=("-O3",))


def two_pass():
    return C.load(SRC)


def test_one_pass_at_O3():
    C.check_one_pass_at_O3(SRC, ("softmax_f32", "logsumexp_f16", "parts"))


def rows(t, shape, kind):
    lo, hi = {"f16": (-10, 10), "f32": (-80, 80), "f64": (-600, 600)}[t]
    x = rng.uniform(lo, hi, shape)
    if kind == "increasing":
        x = np.sort(x, axis=-1)
    elif kind == "decreasing":
        x = -np.sort(-x, axis=-1)
    elif kind == "spiky":
        x = rng.uniform(-1, 1, shape)
        x[..., ::97] += hi
    x = x.astype(C.NP[t])
    return x, x.astype(np.float64)


def test_softmax_logsumexp_accuracy():
    for t in ("f32", "f64", "f16"):
        for shape, axes in [((8, 300), 1), ((8, 300), 0), ((3, 4, 50), (0, 2)), ((2, 32768), 1), ((5, 3, 2), -1)]:
            for kind in ("random", "increasing", "decreasing", "spiky"):
                x, xv = rows(t, shape, kind)
                what = "<%s> %s axes %s %s" % (t, shape, axes, kind)
                for lname, view in layouts(x) if x.size < 10000 else [("contiguous", x)]:
                    got = getattr(fused(), "softmax_" + t)(view, axes=axes)
                    C.close(got, _softmax_ref(xv, axes).astype(C.NP[t]), t, ulp=1 if t == "f16" else 16,
                            atol=1e-7 if t == "f32" else 0, what="softmax" + what + " " + lname)
                m = xv.max(axis=axes, keepdims=True)
                lse = (m + C.libm("log")(C.libm("exp")(xv - m).sum(axis=axes, keepdims=True))).squeeze(axis=axes)
                C.close(getattr(fused(), "logsumexp_" + t)(x, axes=axes), lse.astype(C.NP[t]), t,
                        ulp=1 if t == "f16" else 16, what="logsumexp" + what)


def test_special_values_as_two_pass():
    inf, nan = np.inf, np.nan
    special = [[1, 2, 3, 4], [-inf, -inf, -inf, -inf], [-inf, 1, -inf, 2], [inf, 1, 2, 3], [1, inf, inf, 2],
               [nan, 1, 2, 3], [1, 2, nan, inf], [-inf, nan, 1, 1], [5, 5, 5, 5], [-inf, -inf, 3, -inf],
               [0, -0.0, 0, -0.0], [88, 89, -inf, 90]]
    for t in ("f32", "f64", "f16"):
        x = np.array(special, dtype=C.NP[t])
        for axes in (1, 0, None):
            for k in ("softmax_", "logsumexp_"):
                a = getattr(fused(), k + t)(x, axes=axes)
                b = getattr(two_pass(), k + t)(x, axes=axes)
                C.equal(a.view(np.uint16 if t == "f16" else a.dtype), b.view(np.uint16 if t == "f16" else b.dtype),
                        "%s%s axes %s: one pass and two passes" % (k, t, axes))
        e = np.zeros((3, 0), C.NP[t])
        C.equal(getattr(fused(), "logsumexp_" + t)(e, axes=1), getattr(two_pass(), "logsumexp_" + t)(e, axes=1),
                "logsumexp of an empty slice")
    x = np.array(special, dtype=np.float32)
    for tt in (1.0, -2.0, 0.0):
        a, b = fused().parts(x, tt, axes=1), two_pass().parts(x, tt, axes=1)
        for u, v in zip(a, b):
            C.equal(u, v, "parts t=%g: one pass and two passes" % tt)


def test_parts_against_numpy():
    x = rng.uniform(-30, 30, (6, 1000)).astype(np.float32)
    m, s = fused().parts(x, np.float32(0.5), axes=1)
    xv = x.astype(np.float64) * np.float64(np.float32(0.5))
    C.equal(m, (x * np.float32(0.5)).max(axis=1), "parts: the maximum")
    C.close(s, C.libm("exp")(xv - xv.max(axis=1, keepdims=True)).sum(axis=1).astype(np.float32), "f32", ulp=16,
            what="parts: the sum")


def test_deterministic():
    x = rng.uniform(-50, 50, (3, 100003)).astype(np.float32)
    first = fused().logsumexp_f32(x, axes=1)
    for _ in range(3):
        C.equal(fused().logsumexp_f32(x, axes=1), first, "the same bits every call")


if __name__ == "__main__":
    sys.exit(C.main(globals()))
