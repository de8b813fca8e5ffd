"""Raw (indexed) parameters (docs/language.md, "Raw parameters"): `raw x: T[]`
takes no part in broadcasting and is read by index, x[i] (flat, row-major)
or x[i, j] (per dimension, against its own strides), with shape(x, d) and
index(d); an index out of range is never a read: NAME_strided returns
NNK_PLAN_ERANGE (6).  Through NAME_strided of the C back end, against numpy.

Translated upstream cases (our own translations):
  * CuPy test_manual_indexing (an input read at another element's index);
  * CuPy TestElementwiseGUFuncLike (a kernel reading a row of a raw matrix
    per output element, by index(0) and shape(x, 1));
  * the seed's matrix multiply, as a reduction over a broadcast product and
    with raw indexing.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

K = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "raw.nnk")
RNG = np.random.default_rng(182)
ERANGE = 6


def test_stencil():
    k = C.load(K)
    for t, dt in (("f32", np.float32), ("f64", np.float64)):
        for n in (1, 2, 3, 17, 1000):
            base = RNG.standard_normal(2 * n).astype(dt)
            for name, x in (("contiguous", base[:n]), ("every other", base[::2]), ("reversed", base[::-1][:n])):
                xp = np.concatenate([x[:1], x, x[-1:]])
                wl, wc, wr = dt(0.25), dt(0.5), dt(0.25)
                want = wl * xp[:-2] + wc * xp[1:-1] + wr * xp[2:]
                y = np.empty(n, dt)
                getattr(k, "stencil3_" + t)(x, 0.25, 0.5, 0.25, out=[y])
                C.close(y, want, t, ulp=2, what="stencil3_%s %s n=%d" % (t, name, n))


def test_gather_clamped():
    k = C.load(K)
    for name, tdt, kdt in (("gather_f32_i32", np.float32, np.int32), ("gather_i32_i64", np.int32, np.int64),
                           ("gather_f64_i8", np.float64, np.int8)):
        table = (RNG.standard_normal(37) * 100).astype(tdt)
        idx = RNG.integers(-20, 60, size=(5, 11)).astype(kdt)
        want = table[np.clip(idx.astype(np.int64), 0, len(table) - 1)]
        C.equal(getattr(k, name)(table, idx), want, name)
        # a table viewed with a stride; broadcasting among the other inputs only
        t2 = np.repeat(table, 3)[::3]
        C.equal(getattr(k, name)(t2, idx[:1]), want[:1], name + " strided table")


def test_take_in_range_and_out_of_range():
    k = C.load(K)
    table = np.arange(10, dtype=np.float32) * 1.5
    idx = np.array([0, 9, 3, 3], np.int64)
    C.equal(k.take_f32(table, idx), table[idx], "take in range")
    # hostile indices: negative, past the end, the extremes of int64
    for bad in (-1, 10, 2**63 - 1, -2**63, 2**40):
        rc = k.take_f32(table, np.array([1, bad, 2], np.int64), raw=True)
        C.check(rc == ERANGE, "take_f32 with index %d returned %d, not NNK_PLAN_ERANGE" % (bad, rc))
    # an empty table: every index is out of range, and nothing is read
    rc = k.take_u8(np.zeros(0, np.uint8), np.array([0], np.int64), raw=True)
    C.check(rc == ERANGE, "take from an empty table returned %d" % rc)
    # no index at all (an empty iteration space) is no error
    C.equal(k.take_u8(np.zeros(0, np.uint8), np.zeros(0, np.int64)), np.zeros(0, np.uint8), "empty take")


def test_hostile_raw_views():
    """A raw view whose strides reach past an int64_t offset is refused
    before the kernel runs (NAME_strided: bad views, 5), never indexed."""
    k = C.load(K)
    base = np.zeros(4, np.float32)
    # (byte strides numpy holds; in elements a quarter: 19 * 2**59 and 8 * 2**60 pass 2**63)
    for n, st in ((20, 2**61), (20, -2**61), (9, 2**62)):
        v = np.lib.stride_tricks.as_strided(base, shape=(n,), strides=(st,))
        rc = k.take_f32(v, np.array([0], np.int64), raw=True)
        C.check(rc == 5, "a raw view with stride %d returned %d" % (st, rc))
    # an empty hostile view has no offsets at all: fine, and every index is out of range
    v = np.lib.stride_tricks.as_strided(base, shape=(0,), strides=(2**62,))  # (no element: no reach)
    C.check(k.take_f32(v, np.array([0], np.int64), raw=True) == ERANGE, "an empty raw view")


def test_per_dimension_indexing():
    k = C.load(K)
    m = RNG.standard_normal((6, 7)).astype(np.float32)
    i = RNG.integers(0, 6, size=(4, 1))
    j = RNG.integers(0, 7, size=(1, 5))
    for name, mv in (("contiguous", m), ("transposed", np.ascontiguousarray(m.T).T), ("flipped", m[::-1, ::-1][::-1, ::-1]),
                     ("strided", np.repeat(m, 2, axis=1)[:, ::2])):
        C.equal(k.pick2(mv, i, j), m[i, j], "pick2 " + name)
    C.check(k.pick2(m, np.array([6]), np.array([0]), raw=True) == ERANGE, "row 6 of 6 was accepted")
    C.check(k.pick2(m, np.array([0]), np.array([-1]), raw=True) == ERANGE, "column -1 was accepted")
    # two indices into a 1-D or 3-D array: the rank is checked at the call
    C.check(k.pick2(m[0], np.array([0]), np.array([0]), raw=True) == ERANGE, "2 indices into 1 dimension")
    C.check(k.pick2(m[None], np.array([0]), np.array([0]), raw=True) == ERANGE, "2 indices into 3 dimensions")


def test_gufunc_like_rows():
    """After CuPy's TestElementwiseGUFuncLike: output element r reads row r
    of a raw matrix (index(0)) and its width (shape(m, 1))."""
    k = C.load(K)
    m = RNG.standard_normal((9, 4))
    w = RNG.standard_normal(9)
    want = m[:, 0] * w + m[:, 1] * (1 - w) + 4
    C.close(k.rowdot(m, w), want, "f64", ulp=1, what="rowdot")
    # index(0) is of the iteration space (w's shape), not of m
    C.close(k.rowdot(m[::-1], w[::-1]), want[::-1], "f64", ulp=1, what="rowdot reversed")


def test_index_of_each_dimension():
    k = C.load(K)
    y = np.empty((3, 4, 5), np.int64)
    k.coords(out=[y])
    a, b, c = np.indices((3, 4, 5))
    C.equal(y, a * 1000000 + b * 1000 + c, "index(0..2)")
    # index(2) of a 2-D iteration space is out of range
    C.check(k.coords(out=[np.empty((3, 4), np.int64)], raw=True) == ERANGE, "index(2) of 2 dimensions")


def test_manual_indexing():
    """After CuPy's test_manual_indexing: z[i] = x[i] + y[(i + 1) % n]."""
    k = C.load(K)
    x = RNG.standard_normal(10).astype(np.float32)
    y = RNG.standard_normal(10).astype(np.float32)
    C.equal(k.shifted(x, y), x + np.roll(y, -1), "shifted")


def test_matmul_both_ways():
    k = C.load(K)
    for t, dt, tol in (("f32", np.float32, 1e-4), ("f64", np.float64, 1e-12)):
        for (M, Kd, N) in ((1, 1, 1), (5, 3, 7), (16, 33, 8)):
            a = RNG.standard_normal((M, Kd)).astype(dt)
            b = RNG.standard_normal((Kd, N)).astype(dt)
            want = a.astype(np.float64) @ b.astype(np.float64)
            c1 = getattr(k, "mm_" + t)(a[:, :, None], b[None, :, :], axes=1)
            space = np.broadcast_to(dt(0), (M, Kd, N))
            c2 = getattr(k, "mm_raw_" + t)(a, b, space, axes=1)
            C.close(c1, want.astype(dt), t, atol=tol * Kd, what="mm_%s %s" % (t, (M, Kd, N)))
            C.close(c2, want.astype(dt), t, atol=tol * Kd, what="mm_raw_%s %s" % (t, (M, Kd, N)))
            # the same additions in the same order: the two agree exactly
            C.equal(c1, c2, "mm and mm_raw %s %s" % (t, (M, Kd, N)))


if __name__ == "__main__":
    sys.exit(C.main(globals()))
