"""Reduction conformance: every reducer and dtype against numpy, through
NAME_strided with many layouts (contiguous, Fortran order, transposed,
negative strides, strided, broadcast) and axis sets (single, several,
negative, all, keepdims); empty and length-1 slices; multi-phase kernels;
custom reducers; accuracy of float sums.

Tolerances: integer results, max/min/argmax/argmin and any/all are exact;
a float sum of n values is within eps * (log2(n) + 16) * sum|x| of the
exact sum (pairwise summation), which the f16/bf16 result rounds once;
multi-phase kernels (softmax, layernorm...) within a few ulp of float64
numpy rounded to the type.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

rng = np.random.default_rng(2024)


def R():
    return C.load("kernels/reductions.nnk")


SHAPES = [(3, 5, 7), (2, 1, 300), (4, 129, 3), (1000,), (37, 64), (3, 300), (2, 700, 3), (1, 1, 1), (6, 2, 2)]
AXES = [None, 0, 1, 2, -1, (0, 2), (0, 1), (1, 2), (-3, -1), (0, 1, 2)]


def axes_for(nd):
    out = []
    for a in AXES:
        if a is None:
            out.append(None)
            continue
        t = a if isinstance(a, tuple) else (a,)
        if all(-nd <= v < nd for v in t):
            out.append(a)
    return out


def norm_axes(a, nd):
    if a is None:
        return tuple(range(nd))
    t = a if isinstance(a, tuple) else (a,)
    return tuple(sorted(v % nd for v in t))


def layouts(x):
    """(name, view) pairs holding the same values as x with other strides."""
    yield "contiguous", x
    yield "fortran", np.asfortranarray(x)
    if x.ndim >= 2:
        yield "transposed", np.ascontiguousarray(x.T).T
    yield "negative", np.flip(np.ascontiguousarray(np.flip(x)))
    if x.ndim >= 1 and x.size:
        big = np.empty(x.shape[:-1] + (x.shape[-1] * 2,), dtype=x.dtype)
        big[..., ::2] = x
        yield "strided", big[..., ::2]


def red_ref_move(x, axes):
    """x with the reduced axes last, flattened into one (C order)."""
    keep = [i for i in range(x.ndim) if i not in axes]
    y = np.transpose(x, keep + list(axes))
    return y.reshape(y.shape[:len(keep)] + (int(np.prod([x.shape[a] for a in axes], dtype=np.int64)),))


def fsum_ref(x, axes):
    """Exact sums (math.fsum) over the reduced axes, float64, and sum|x|."""
    y = red_ref_move(x.astype(np.float64), axes)
    flat = y.reshape(int(np.prod(y.shape[:-1], dtype=np.int64)), y.shape[-1])
    s = np.array([math.fsum(r) for r in flat]).reshape(y.shape[:-1])
    a = np.abs(y).sum(axis=-1)
    return s, a


def sum_tol(t, n, absum):
    eps = {"f16": 2.0 ** -24, "bf16": 2.0 ** -24, "f32": 2.0 ** -24, "f64": 2.0 ** -53}[t]
    return eps * (math.log2(max(n, 1)) + 16) * absum


def to_f64(a, t):
    return C.bf16_to_f32(a).astype(np.float64) if t == "bf16" else np.asarray(a, dtype=np.float64)


def values(t, shape, lo=-10, hi=10):
    """A random array of type t (bf16 as BF16Array) and its float64 values."""
    if t in ("f16", "bf16", "f32", "f64"):
        v = rng.uniform(lo, hi, shape)
        if t == "bf16":
            s = C.f32_to_bf16(v.astype(np.float32)).view(C.BF16Array)
            return s, C.bf16_to_f32(s).astype(np.float64)
        s = v.astype(C.NP[t])
        return s, s.astype(np.float64)
    info = np.iinfo(C.NP[t])
    s = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(C.NP[t])
    return s, s


def check_all_layouts(kname, t, fn_check, shapes=SHAPES, lo=-10, hi=10):
    k = getattr(R(), kname)
    for shape in shapes:
        xs, xv = values(t, shape, lo, hi)
        for axes in axes_for(len(shape)):
            ax = norm_axes(axes, len(shape))
            for keepdims in (False, True):
                for lname, view in layouts(xs):
                    if t == "bf16":
                        view = view.view(C.BF16Array)
                    got = k(view, axes=axes, keepdims=keepdims)
                    what = "%s shape %s axes %s keepdims %s %s" % (kname, shape, axes, keepdims, lname)
                    fn_check(got, xv, xs, ax, keepdims, what)


def _kd(r, ax, keepdims):
    return np.expand_dims(r, ax) if keepdims else r


def test_sum_float_all_layouts():
    for t in ("f32", "f64", "f16", "bf16"):
        def chk(got, xv, xs, ax, kd, what, t=t):
            exact, absum = fsum_ref(xv, ax)
            n = int(np.prod([xv.shape[a] for a in ax])) if ax else 1
            if t in ("f32", "f64"):
                C.Check.count += 1
                err = np.abs(got.astype(np.float64) - _kd(exact, ax, kd))
                tol = _kd(sum_tol(t, n, absum), ax, kd)
                C.check(np.all(err <= tol), "%s: error %g above %g" % (what, err.max(initial=0), tol.max(initial=0)))
            else:
                # the f32 accumulation is within the f32 bound; then one rounding to t
                g = to_f64(got, t)
                err = np.abs(g - _kd(exact, ax, kd))
                half_ulp = np.abs(_kd(exact, ax, kd)) * (2.0 ** -11 if t == "f16" else 2.0 ** -8)
                tol = _kd(sum_tol("f32", n, absum), ax, kd) + half_ulp
                C.check(np.all(err <= tol * 1.0001), "%s: error %g above %g" % (what, err.max(initial=0), tol.max(initial=0)))
        check_all_layouts("r_sum_" + t, t, chk, lo=-4, hi=4)


def test_sum_int_all_layouts():
    for t in ("i8", "i32", "u8", "i64", "u64"):
        def chk(got, xv, xs, ax, kd, what, t=t):
            acc = np.uint64 if t[0] == "u" else np.int64
            with np.errstate(over="ignore"):
                want = np.sum(xs, axis=ax, dtype=acc, keepdims=kd).astype(C.NP[t])
            C.equal(got, want, what)
        check_all_layouts("r_sum_" + t, t, chk)


def test_max_min_all_layouts():
    for kname, fn in (("r_max", np.max), ("r_min", np.min)):
        for t in ({"r_max": ("f16", "bf16", "f32", "f64", "i8", "i32", "u8", "u64"),
                   "r_min": ("f16", "bf16", "f32", "f64", "i16", "i64", "u32")})[kname]:
            def chk(got, xv, xs, ax, kd, what, t=t, fn=fn):
                if xv.size == 0:
                    return
                if t == "bf16":
                    want = C.f32_to_bf16(fn(xv, axis=ax, keepdims=kd).astype(np.float32))
                    C.equal(np.asarray(got).view(np.uint16), want, what)
                else:
                    C.equal(got, fn(xs, axis=ax, keepdims=kd), what)
            check_all_layouts("%s_%s" % (kname, t), t, chk, shapes=SHAPES[:6])


def test_argmax_argmin_all_layouts():
    for kname, fn in (("r_argmax", np.argmax), ("r_argmin", np.argmin)):
        for t in {"r_argmax": ("f16", "f32", "f64", "i32", "u8"), "r_argmin": ("f32", "f64", "i16")}[kname]:
            def chk(got, xv, xs, ax, kd, what, fn=fn):
                want = fn(red_ref_move(np.asarray(xs).view(np.uint16) if False else xs, ax), axis=-1)
                C.equal(got, _kd(want, ax, kd), what)
            # few distinct values: many ties, first occurrence must win
            k = getattr(R(), "%s_%s" % (kname, t))
            for shape in SHAPES[:7]:
                xs = rng.integers(0, 4, shape).astype(C.NP[t])
                for axes in axes_for(len(shape)):
                    ax = norm_axes(axes, len(shape))
                    for lname, view in layouts(xs):
                        chk(k(view, axes=axes, keepdims=False), None, xs, ax, False,
                            "%s_%s shape %s axes %s %s" % (kname, t, shape, axes, lname))


def test_prod_and_mean():
    def chkp(t):
        def chk(got, xv, xs, ax, kd, what):
            if t in ("f32", "f64"):
                want = np.prod(xv, axis=ax, keepdims=kd)
                C.close(got, want.astype(C.NP[t]), t, ulp=64, what=what)
            else:
                with np.errstate(over="ignore"):
                    acc = np.uint64 if t[0] == "u" else np.int64
                    C.equal(got, np.prod(xs, axis=ax, dtype=acc, keepdims=kd).astype(C.NP[t]), what)
        return chk
    for t in ("f32", "f64"):
        check_all_layouts("r_prod_" + t, t, chkp(t), shapes=[(3, 5, 7), (2, 1, 30), (37, 6)], lo=0.5, hi=1.5)
    for t in ("i32", "u16"):
        check_all_layouts("r_prod_" + t, t, chkp(t), shapes=[(3, 5, 7), (2, 1, 30), (37, 6)])

    for t in ("f32", "f64", "f16", "bf16"):
        def chk(got, xv, xs, ax, kd, what, t=t):
            if xv.size == 0:
                return
            exact, absum = fsum_ref(xv, ax)
            n = int(np.prod([xv.shape[a] for a in ax]))
            g = to_f64(got, t)
            want = _kd(exact / n, ax, kd)
            tol = _kd(sum_tol("f32" if t != "f64" else "f64", n, absum) / n, ax, kd)
            if t in ("f16", "bf16"):
                tol = tol + np.abs(want) * (2.0 ** -11 if t == "f16" else 2.0 ** -8)
            elif t == "f32":
                tol = tol + np.abs(want) * 2.0 ** -23
            C.check(np.all(np.abs(g - want) <= tol * 1.0001), "%s: mean off by %g" % (what, np.abs(g - want).max()))
        check_all_layouts("r_mean_" + t, t, chk, shapes=SHAPES[:6])


def test_accumulator_types():
    x = np.full(5000, 60000, dtype=np.float16)     # the f16 sum overflows f16 but not f32
    C.close(R().acc_sum_f16(x), np.float32(3e8), "f32", ulp=0, what="sum of f16 accumulates in f32")
    x = np.full(1000, 127, dtype=np.int8)
    C.equal(R().acc_sum_i8(x), np.int64(127000), "sum of i8 accumulates in i64")
    x = np.full(10, 2 ** 32 - 1, dtype=np.uint32)
    C.equal(R().acc_sum_u32(x), np.uint64(10 * (2 ** 32 - 1)), "sum of u32 accumulates in u64")
    x = rng.integers(0, 2, 1001).astype(np.bool_)
    C.equal(R().acc_sum_bool(x), np.int64(x.sum()), "sum of bool counts")
    x = np.array([2 ** 31 - 1, 2 ** 31 - 1, 1], dtype=np.int32)
    C.close(R().acc_mean_i32(x), np.float64((2 ** 32 - 1) / 3), "f64", what="mean of i32 is f64")
    x = np.array([2 ** 40, 2 ** 40, 3], dtype=np.int64)
    C.equal(R().acc_prod_i64(x), np.array([2 ** 40], dtype=np.int64).astype(np.uint64).astype(object)[0] * 0 +
            np.int64(np.array(2 ** 80 * 3 % 2 ** 64, dtype=np.uint64).view(np.int64)), "i64 prod wraps")
    x = np.array([[1.0, -1.0], [-1.0, -2.0], [np.nan, 1.0]], dtype=np.float32)
    a, b = R().acc_any_all(x, axes=1)
    C.equal(a, np.array([True, False, True]), "any(x > 0)")
    C.equal(b, np.array([False, False, False]), "all(x > 0)")
    xb = np.array([[0, 0], [0, 1], [1, 1]], dtype=np.bool_)
    a, b = R().acc_any_bool(xb, axes=1)
    C.equal(a, np.array([False, True, True]), "any(bool)")
    C.equal(b, np.array([False, False, True]), "all(bool)")
    a, b = R().acc_any_bool(np.zeros((3, 0), dtype=np.bool_), axes=1)
    C.equal(a, np.zeros(3, dtype=np.bool_), "any of nothing is false")
    C.equal(b, np.ones(3, dtype=np.bool_), "all of nothing is true")
    # max/min of bools: numpy's np.max/np.min of a bool array (any/all), empty slices as any/all
    for shape, axes in (((3, 2), 1), ((4, 33), 0), ((5, 7, 3), (0, 2)), ((3, 0), 1), ((64, 65), None)):
        xb = rng.random(shape) < 0.5
        if len(shape) == 2 and shape[1] > 2:
            xb[0] = True
            xb[1] = False
        y = rng.uniform(-1, 1, shape).astype(np.float32)
        hi, lo, c, e = R().acc_max_bool(xb, y, axes=axes)
        ax = tuple(range(len(shape))) if axes is None else axes
        C.equal(hi, np.any(xb, axis=ax), "max(bool) %s axes %s" % (shape, axes))
        C.equal(lo, np.all(xb, axis=ax), "min(bool) %s axes %s" % (shape, axes))
        C.equal(c, np.any(y > 0, axis=ax), "max(y > 0) %s axes %s" % (shape, axes))
        C.equal(e, xb == np.all(xb, axis=ax, keepdims=True), "x == min(x) %s axes %s" % (shape, axes))


def test_integer_sum_wraps():
    x = np.array([2 ** 63 - 1, 1, 5], dtype=np.int64)
    C.equal(R().r_sum_i64(x), np.int64(-2 ** 63 + 5), "i64 sum wraps")
    x = np.array([2 ** 64 - 1, 2], dtype=np.uint64)
    C.equal(R().r_sum_u64(x), np.uint64(1), "u64 sum wraps")
    x = np.full(3, 100, dtype=np.int8)
    C.equal(R().r_sum_i8(x), np.int8(44), "i8 result of the i64 sum wraps on the store")


def test_nan_and_inf():
    for t in ("f32", "f64", "f16"):
        x = np.array([[1, np.nan, 3], [np.inf, 2, -np.inf], [np.nan, np.nan, 1], [-1, -5, np.inf],
                      [np.inf, np.inf, 1]], dtype=C.NP[t])
        with np.errstate(invalid="ignore"):
            C.equal(R().__getattr__("r_sum_" + t)(x, axes=1), np.sum(x.astype(np.float64), axis=1).astype(C.NP[t]),
                    "sum with NaN/inf <%s>" % t)
            C.equal(R().__getattr__("r_max_" + t)(x, axes=1), np.max(x, axis=1), "max propagates NaN <%s>" % t)
            if t != "f16":
                C.equal(R().__getattr__("r_min_" + t)(x, axes=1), np.min(x, axis=1), "min propagates NaN <%s>" % t)
            C.equal(R().__getattr__("r_argmax_" + t)(x, axes=1), np.argmax(x, axis=1), "argmax: first NaN <%s>" % t)
        if t != "f16":
            C.equal(R().__getattr__("r_argmin_" + t)(x, axes=1), np.argmin(x, axis=1), "argmin: first NaN <%s>" % t)
    # NaN in every position of a long row (across lanes and leaves)
    for pos in (0, 7, 8, 127, 128, 129, 999):
        x = rng.uniform(-1, 1, 1000).astype(np.float32)
        x[pos] = np.nan
        C.check(np.isnan(R().r_max_f32(x)), "max with a NaN at %d" % pos)
        C.check(R().r_argmax_f32(x) == pos, "argmax with a NaN at %d" % pos)
        x[(pos + 500) % 1000] = np.nan
        C.check(R().r_argmin_f32(x) == min(pos, (pos + 500) % 1000), "argmin: the first of two NaNs")


def test_arg_extremes_generated():
    """argmax/argmin over values drawn from the extremes (NaN, +-inf, the
    lowest and highest, ties), in rows long enough for several lanes and
    leaves and in columns, against numpy (first index wins; a NaN wins):
    the lanes and column leaves step with nnk_argmax_next_T, which assumes
    the elements come in index order and that no index is taken yet
    before the first (a row of only the lowest value must give 0)."""
    for kname, fn, types in (("r_argmax", np.argmax, ("f32", "f64", "i32", "u8")),
                             ("r_argmin", np.argmin, ("f32", "f64", "i16"))):
        for t in types:
            k = getattr(R(), "%s_%s" % (kname, t))
            if t[0] == "f":
                pal = np.array([np.nan, -np.inf, np.inf, 0, 1, -1], dtype=C.NP[t])
            else:
                info = np.iinfo(C.NP[t])
                pal = np.array([info.min, info.max, 0, 1], dtype=C.NP[t])
            for shape in ((5, 1100), (1100, 5), (3, 2500)):
                for p_ in (0.001, 0.05, 0.5):
                    # mostly the worst value for the reducer, a few others
                    worst = pal[1] if t[0] == "f" and kname == "r_argmax" else (
                        pal[2] if t[0] == "f" else (pal[0] if kname == "r_argmax" else pal[1]))
                    x = np.where(rng.uniform(size=shape) < p_, rng.choice(pal, shape), worst).astype(C.NP[t])
                    x[0] = worst  # one row, one column of the worst value only
                    x[:, 0] = worst
                    for ax in (0, 1):
                        for lname, view in layouts(x):
                            C.equal(k(view, axes=ax), fn(x, axis=ax),
                                    "%s_%s extremes shape %s axis %d p %g %s" % (kname, t, shape, ax, p_, lname))


def test_empty_and_length_one():
    # len = 0: the identity
    z = np.zeros((3, 0), dtype=np.float32)
    C.equal(R().r_sum_f32(z, axes=1), np.zeros(3, dtype=np.float32), "sum of nothing is 0")
    C.equal(R().r_prod_f32(z, axes=1), np.ones(3, dtype=np.float32), "prod of nothing is 1")
    C.equal(R().r_max_f32(z, axes=1), np.full(3, -np.inf, dtype=np.float32), "max of nothing is -inf")
    C.equal(R().r_min_f32(z, axes=1), np.full(3, np.inf, dtype=np.float32), "min of nothing is +inf")
    C.equal(R().r_max_i32(np.zeros((2, 0), dtype=np.int32), axes=1), np.full(2, -2 ** 31, dtype=np.int32), "max of no i32")
    C.check(np.all(np.isnan(R().r_mean_f32(z, axes=1))), "mean of nothing is NaN (0/0)")
    C.equal(R().r_sum_i32(np.zeros((0, 4), dtype=np.int32), axes=0), np.zeros(4, dtype=np.int32), "column sum of no rows")
    C.equal(R().r_sum_f32(np.zeros((0, 4), dtype=np.float32), axes=1), np.zeros(0, dtype=np.float32), "no positions")
    # argmax/argmin of an empty slice is an error of NAME_strided
    rc = R().r_argmax_f32(z, axes=1, raw=True)
    C.check(rc != 0, "argmax of an empty slice returns an error (got %d)" % rc)
    rc = R().stats(z, axes=1, raw=True)
    C.check(rc != 0, "a kernel with argmin fails on empty slices (got %d)" % rc)
    rc = R().r_argmax_f32(np.zeros((0, 3), dtype=np.float32), axes=1, raw=True)
    C.check(rc == 0, "argmax with no output positions is fine (got %d)" % rc)
    # len = 1
    x = rng.uniform(-1, 1, (4, 1, 3)).astype(np.float32)
    C.equal(R().r_sum_f32(x, axes=1), x[:, 0, :], "sum over a length-1 axis")
    C.equal(R().r_argmax_f32(x, axes=1), np.zeros((4, 3), dtype=np.int64), "argmax over a length-1 axis")
    C.equal(R().r_max_f32(x, axes=1), x[:, 0, :], "max over a length-1 axis")
    # 0-d: reducing no axes of a scalar
    s = np.array(2.5, dtype=np.float32)
    C.equal(R().r_sum_f32(s), np.float32(2.5), "sum of a 0-d array")
    C.equal(R().r_sum_f32(x, axes=()), x, "reducing no axes is the identity")


def test_outer_len_inner_entry_point():
    for outer, ln, inner in [(1, 1000, 1), (7, 33, 1), (5, 17, 9), (1, 5, 300), (3, 0, 2), (0, 4, 4), (2, 1, 1)]:
        x = rng.uniform(-1, 1, (outer, ln, inner)).astype(np.float32)
        got = C.contig_call(R().r_sum_f32, (outer, ln, inner), x.ravel())
        exact, absum = fsum_ref(x.astype(np.float64), (1,))
        C.check(np.all(np.abs(got - exact) <= sum_tol("f32", ln, absum)), "r_sum_f32(%d, %d, %d)" % (outer, ln, inner))
        y = C.contig_call(R().softmax_f32, (outer, ln, inner), x.ravel())
        if x.size:
            e = C.libm("exp")(x.astype(np.float64) - x.max(axis=1, keepdims=True))
            C.close(y.reshape(x.shape), (e / e.sum(axis=1, keepdims=True)).astype(np.float32), "f32", ulp=8,
                    what="softmax_f32(%d, %d, %d)" % (outer, ln, inner))


def test_fused_reducers_and_outputs():
    x = rng.uniform(-5, 5, (6, 200)).astype(np.float32)
    x[2, 50] = x[2, 150] = 9          # a tie for the maximum
    lo, hi, s, i, j = R().stats(x, axes=1)
    C.equal(lo, x.min(axis=1), "stats: min")
    C.equal(hi, x.max(axis=1), "stats: max")
    C.close(s, np.array([math.fsum(r) for r in x.astype(np.float64)]), "f64", ulp=4, what="stats: f64 sum of f32")
    C.equal(i, x.argmax(axis=1), "stats: argmax, first of a tie")
    C.equal(j, x.argmin(axis=1), "stats: argmin")
    lo, hi, s, i, j = R().stats(x, axes=0)
    C.equal(i, x.argmax(axis=0), "stats over axis 0 (column order): argmax")
    C.equal(lo, x.min(axis=0), "stats over axis 0: min")


def test_n_and_idx():
    x = rng.uniform(0, 1, (4, 6, 5)).astype(np.float32)
    r, c = R().with_n(x, axes=(0, 2))
    C.equal(c, np.full(6, 20, dtype=np.int64), "n is the reduced count")
    C.close(r, (x.astype(np.float64).sum(axis=(0, 2)) / 20).astype(np.float32), "f32", ulp=2, what="sum/n")
    for axes in (None, 1, (0, 2), -1, 0):
        for lname, view in layouts(x):
            r, y = R().with_idx(view, axes=axes)
            flat = np.arange(x.size).reshape(x.shape)
            C.equal(y, flat, "idx is the flat index of the iteration space (%s, axes %s)" % (lname, axes))
            C.equal(r, flat.sum(axis=axes), "sum(idx) (%s, axes %s)" % (lname, axes))


def test_broadcast_inputs():
    x = rng.uniform(-1, 1, (5, 1, 7))
    w = rng.uniform(-1, 1, (6, 1))
    for axes in (None, 0, 1, 2, (0, 2)):
        got = R().weighted(x, w, axes=axes)
        want = np.sum(x * w, axis=axes)
        C.close(got, want, "f64", ulp=16, atol=1e-13, what="sum(x * w) broadcast, axes %s" % (axes,))
    # a broadcast (stride 0) input along the reduced axis
    xb = np.broadcast_to(rng.uniform(0, 1, (3, 1)), (3, 1000))
    got = R().weighted(xb, np.ones((1, 1000)), axes=1)
    exact = np.array([math.fsum(r) for r in xb])
    C.check(np.all(np.abs(got - exact) <= sum_tol("f64", 1000, np.abs(xb).sum(axis=1))), "stride-0 reduced axis")


def test_custom_reducers():
    x = rng.uniform(-3, 3, (9, 500)).astype(np.float32)
    for axes in (1, 0, None):
        exact, absum = fsum_ref(x.astype(np.float64), norm_axes(axes, 2))
        got = R().c_sum(x, axes=axes)
        n = x.size if axes is None else x.shape[axes]
        C.check(np.all(np.abs(got - exact) <= sum_tol("f32", n, absum)), "reduce(x, 0, a + b), axes %s" % (axes,))
        C.equal(R().c_amax(x, axes=axes), np.max(np.abs(x), axis=axes), "reduce(abs(x), 0, max), axes %s" % (axes,))
    xd = x.astype(np.float64)
    C.equal(R().c_floor(xd, 1.0, axes=1), np.maximum(xd.max(axis=1), 1.0), "reduce with a scalar identity and combine")
    C.equal(R().c_floor(xd, 10.0, axes=0), np.full(500, 10.0), "reduce: the identity wins")
    xi = rng.integers(-3, 4, (4, 12)).astype(np.int32)
    with np.errstate(over="ignore"):
        C.equal(R().c_prod_i32(xi, axes=1), np.prod(xi, axis=1, dtype=np.int64).astype(np.int32), "reduce(x, 1, a * b)")


def _softmax_ref(x, axes):
    # glibc's scalar exp (C.libm), not numpy's, whose SIMD code differs by machine
    e = C.libm("exp")(x - x.max(axis=axes, keepdims=True))
    return e / e.sum(axis=axes, keepdims=True)


def test_softmax_logsumexp_variance():
    for t in ("f32", "f64", "f16"):
        for shape, axes in [((8, 300), 1), ((8, 300), 0), ((3, 4, 50), (0, 2)), ((1000,), None), ((5, 3, 2), -1)]:
            x, xv = values(t, shape, -8, 8)
            for lname, view in layouts(x):
                got = getattr(R(), "softmax_" + t)(view, axes=axes)
                want = _softmax_ref(xv, axes)
                C.close(got, want.astype(C.NP[t]), t, ulp=1 if t == "f16" else 16, atol=1e-7 if t == "f32" else 0,
                        what="softmax<%s> %s axes %s %s" % (t, shape, axes, lname))
            if t == "f16":
                continue
            m = xv.max(axis=axes, keepdims=True)
            lse = (m + C.libm("log")(C.libm("exp")(xv - m).sum(axis=axes, keepdims=True))).squeeze(axis=axes)
            C.close(getattr(R(), "logsumexp_" + t)(x, axes=axes), lse.astype(C.NP[t]), t, ulp=16,
                    what="logsumexp<%s> %s axes %s" % (t, shape, axes))
            var = np.var(xv, axis=axes)
            C.close(getattr(R(), "variance_" + t)(x, axes=axes), var.astype(C.NP[t]), t, ulp=64,
                    what="variance<%s> %s axes %s" % (t, shape, axes))


def test_layernorm():
    for t in ("f32", "f64", "bf16"):
        for shape, axes in [((16, 256), 1), ((16, 256), 0), ((4, 6, 8), (1, 2))]:
            x, xv = values(t, shape, -3, 3)
            red_shape = [1 if i in norm_axes(axes, len(shape)) else s for i, s in enumerate(shape)]
            full = tuple(shape)
            gshape = tuple(s for i, s in enumerate(full) if i in norm_axes(axes, len(shape)))
            g, gv = values(t, gshape, 0.5, 1.5)
            b, bv = values(t, gshape, -1, 1)
            # gamma and beta broadcast along the kept axes: give them the full rank
            gfull = gv.reshape([s if i in norm_axes(axes, len(shape)) else 1 for i, s in enumerate(full)])
            bfull = bv.reshape(gfull.shape)
            gs = g.reshape(gfull.shape)
            bs = b.reshape(gfull.shape)
            if t == "bf16":
                gs, bs = gs.view(C.BF16Array), bs.view(C.BF16Array)
            y, mu, sigma = getattr(R(), "layernorm_" + t)(x, gs, bs, axes=axes)
            m = xv.mean(axis=axes, keepdims=True)
            v = ((xv - m) ** 2).mean(axis=axes, keepdims=True)
            eps = np.float32(1e-5).astype(np.float64)
            want = (xv - m) / np.sqrt(v + eps) * gfull + bfull
            tolu = {"f32": 64, "f64": 64, "bf16": 1}[t]
            C.close(y, C.f32_to_bf16(want.astype(np.float32)) if t == "bf16" else want.astype(C.NP[t]), t, ulp=tolu,
                    atol=1e-5 if t == "f32" else 1e-12 if t == "f64" else 0.02,
                    what="layernorm<%s> y %s axes %s" % (t, shape, axes))
            mref = m.reshape(mu.shape)
            C.close(to_f64(mu, t), mref, "f64", atol={"f32": 1e-6, "f64": 1e-14, "bf16": 0.02}[t], ulp=0,
                    what="layernorm<%s> mu" % t)
            C.close(to_f64(sigma, t), np.sqrt(v + eps).reshape(sigma.shape), "f64",
                    atol={"f32": 1e-6, "f64": 1e-14, "bf16": 0.02}[t], ulp=0, what="layernorm<%s> sigma" % t)
    # the default of eps can be overridden
    x = rng.uniform(-1, 1, (4, 32)).astype(np.float32)
    one, zero = np.ones((1, 32), np.float32), np.zeros((1, 32), np.float32)
    y1, _, s1 = R().layernorm_f32(x, one, zero, axes=1)
    y2, _, s2 = R().layernorm_f32(x, one, zero, 1e-5, axes=1)
    y3, _, s3 = R().layernorm_f32(x, one, zero, 1.0, axes=1)
    C.equal(y1, y2, "layernorm: the default eps is 1e-5")
    C.check(np.all(s3 > 1.0), "layernorm: eps = 1 given explicitly")


def test_other_epilogues():
    x = rng.uniform(0.5, 1, (7, 90)).astype(np.float32)
    for axes in (1, 0, None):
        got = R().normalize(x, axes=axes)
        C.close(got, (x / x.astype(np.float64).sum(axis=axes, keepdims=True)).astype(np.float32), "f32", ulp=4,
                what="x / sum(x), axes %s" % (axes,))
    for axes in (1, 0):
        r, c = R().constant_out(x, axes=axes)
        C.equal(r, np.full(x.shape[1 - axes], 1.5, dtype=np.float32), "constant reduced output, axes %d" % axes)
        C.equal(c, np.full(x.shape[1 - axes], 2 * x.shape[axes], dtype=np.int64), "n * 2, axes %d" % axes)


def test_output_views():
    x = rng.uniform(-1, 1, (6, 40)).astype(np.float32)
    for axes in (1, 0):
        outbuf = np.zeros(2 * x.shape[1 - axes], dtype=np.float32)
        out = outbuf[::-2]                       # negative stride output
        R().r_sum_f32(x, axes=axes, out=[out])
        exact, absum = fsum_ref(x.astype(np.float64), (axes,))
        C.check(np.all(np.abs(out - exact) <= sum_tol("f32", x.shape[axes], absum)), "sum into a reversed view, axis %d" % axes)
        C.check(np.all(outbuf[::-2][::-1] == outbuf[1::2]) and np.all(outbuf[::2] == 0) if False else np.all(outbuf[-2::-2] == 0),
                "untouched elements of the output buffer, axis %d" % axes)
    y = np.zeros((40, 6), dtype=np.float32).T    # a transposed tensor output
    R().softmax_f32(x, axes=1, out=[y])
    C.close(y, _softmax_ref(x.astype(np.float64), 1).astype(np.float32), "f32", ulp=16, atol=1e-7, what="softmax into a transposed output")
    rc = R().r_sum_f32(x, axes=1, out=[np.zeros(5, dtype=np.float32)], raw=True)
    C.check(rc != 0, "a reduced output of the wrong shape is an error (got %d)" % rc)
    rc = R().r_sum_f32(x, axes=(1, 1), raw=True)
    C.check(rc != 0, "a repeated axis is an error (got %d)" % rc)
    rc = R().r_sum_f32(x, axes=2, raw=True)
    C.check(rc != 0, "an axis out of range is an error (got %d)" % rc)


def test_in_place():
    """An output that is also the input (numpy's out=x): every element is
    read before it is written, also when the last phase stores exp(x - m)
    for the epilogue (softmax)."""
    for axes in (1, 0):
        x = rng.uniform(-3, 3, (40, 300)).astype(np.float32)
        want = R().softmax_f32(x.copy(), axes=axes)
        y = x.copy()
        R().softmax_f32(y, axes=axes, out=[y])
        C.equal(y, want, "softmax in place, axis %d" % axes)
        want = R().normalize(x.copy(), axes=axes)
        y = x.copy()
        R().normalize(y, axes=axes, out=[y])
        C.equal(y, want, "x / sum(x) in place, axis %d" % axes)


def test_row_order_is_layout_independent():
    """The row order's bits depend on the values and the reduced order only."""
    x = rng.uniform(-1, 1, (5, 3001)).astype(np.float32)
    ref = R().r_sum_f32(x, axes=1)
    for lname, view in layouts(x):
        if lname in ("fortran", "transposed"):
            continue            # positions contiguous: column order, other (deterministic) bits
        C.equal(R().r_sum_f32(view, axes=1), ref, "row order bits, %s layout" % lname)
    # column order: the bits of a position do not depend on the tile it is in
    y = rng.uniform(-1, 1, (3001, 300)).astype(np.float32)
    full = R().r_sum_f32(y, axes=0)
    for lo, hi in ((0, 2), (5, 9), (100, 300), (128, 257)):
        C.equal(R().r_sum_f32(y[:, lo:hi], axes=0), full[lo:hi], "column order bits, columns %d:%d" % (lo, hi))


def test_sum_accuracy_vs_numpy():
    """A float32 sum of 10^7 values: the error, measured against the exact
    sum (math.fsum), is no worse than numpy's pairwise sum."""
    for name, x in (("uniform [0, 1)", rng.random(10 ** 7, dtype=np.float32)),
                    ("normal(1, 1)", rng.normal(1, 1, 10 ** 7).astype(np.float32))):
        exact = math.fsum(x.astype(np.float64))
        ours = float(R().r_sum_f32(x))
        theirs = float(np.sum(x))
        e_ours, e_np = abs(ours - exact), abs(theirs - exact)
        ulp = float(np.spacing(np.float32(exact)))
        print("  sum of 1e7 f32, %s: error %.3g (nnk), %.3g (numpy), %.3g (ulp of the sum)" % (name, e_ours, e_np, ulp))
        C.check(e_ours <= max(1.5 * e_np, 4 * ulp), "%s: error %g vs numpy's %g" % (name, e_ours, e_np))
    # the column path: sum over axis 0 of a 4096 x 512 array (numpy adds rows in order)
    y = rng.random((4096, 512), dtype=np.float32)
    ours = R().r_sum_f32(y, axes=0).astype(np.float64)
    theirs = np.sum(y, axis=0).astype(np.float64)
    exact = np.array([math.fsum(c) for c in y.T.astype(np.float64)])
    e_ours, e_np = np.abs(ours - exact).max(), np.abs(theirs - exact).max()
    print("  column sums of 4096 x 512: max error %.3g (nnk), %.3g (numpy)" % (e_ours, e_np))
    C.check(e_ours <= max(1.5 * e_np, 4 * float(np.spacing(np.float32(exact.max())))), "column sums: %g vs numpy's %g" % (e_ours, e_np))


def test_runtime_split_matches_run():
    """abi_driver.c runs reductions as the runtime does when it splits the
    reduced range into chunks (red_partial, red_merge in the pairwise tree's
    order, red_final, red_epilogue) and compares the bits with run()."""
    import subprocess
    cfile = os.path.join(C.WORK, "abi.c")
    C.run([C.NNKC, "-S", "--target=c", os.path.join(C.HERE, "kernels", "abi.nnk"), "-o", cfile])
    exe = os.path.join(C.WORK, "abi_driver")
    C.run([C.CC, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", '-DKERNELS_C="%s"' % cfile,
           os.path.join(C.HERE, "abi_driver.c"), "-o", exe, "-lm"])
    p = subprocess.run([exe], stdout=subprocess.PIPE, universal_newlines=True)
    lines = p.stdout.splitlines()
    bad = [l for l in lines if not l.startswith("ok ")]
    C.Check.count += len(lines) - 1
    C.check(p.returncode == 0 and not bad and len(lines) > 50, "%d cases, %d differ:\n%s" % (len(lines), len(bad), "\n".join(bad[:10])))


if __name__ == "__main__":
    sys.exit(C.main(globals()))
