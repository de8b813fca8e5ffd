"""In-out parameters (docs/language.md, "In-out parameters"): `inout y: T[]`
is read and written at the same position, through NAME_strided (any
strides, broadcast inputs) and the contiguous entry point, against numpy.

Translated upstream cases (our own translations):
  * CuPy test_postmap_inplace: an elementwise kernel whose output is also
    its input (`y = y + x` written in place), float and integer dtypes;
  * the batchnorm running statistics CuPy and PyTorch update in place;
  * PyTorch's in-place softmax_ and an in-place layer norm: inout in a
    reduction kernel, read by the reducers and written by the epilogue.
tests/cuda/emu-inout.sh runs the same calls also through the generated CUDA
on the emulation layer.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

K = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "inout.nnk")
RNG = np.random.default_rng(18)


def _data(shape, dt):
    if np.dtype(dt).kind == "f":
        return RNG.standard_normal(shape).astype(dt)
    return RNG.integers(0, 50, size=shape).astype(dt)


def test_axpy_layouts():
    """y = y + a * x for contiguous, transposed, negative-stride and
    broadcast layouts; the array written is the one passed."""
    k = C.load(K)
    for t, dt in (("f32", np.float32), ("f64", np.float64), ("i32", np.int32), ("u8", np.uint8)):
        kern = getattr(k, "axpy_" + t)
        for shape in ((17,), (5, 33), (4, 3, 9)):
            x = _data(shape, dt)
            layouts = {
                "contiguous": _data(shape, dt),
                "transposed": np.ascontiguousarray(_data(shape[::-1], dt)).T,
                "reversed": _data(shape, dt)[(slice(None, None, -1),) * len(shape)],
                "every other": _data(shape[:-1] + (shape[-1] * 2,), dt)[..., ::2],
            }
            for name, y in layouts.items():
                want = (y + dt(3) * x).astype(dt)
                got = kern(3, x, y)
                C.check(got is y or np.shares_memory(got, y), "axpy_%s %s: the result is not y" % (t, name))
                C.equal(y, want, "axpy_%s %s %s" % (t, name, shape))
            # x broadcast along y's leading axis
            y = _data(shape, dt)
            xb = _data((1,) + shape[1:], dt)
            want = (y + dt(2) * xb).astype(dt)
            kern(2, xb, y)
            C.equal(y, want, "axpy_%s broadcast x %s" % (t, shape))


def test_axpy_contiguous_entry():
    """The contiguous entry point takes one pointer for y."""
    k = C.load(K)
    for n in (0, 1, 7, 1000):
        x = _data((n,), np.float32)
        y = _data((n,), np.float32)
        want = y + np.float32(0.5) * x
        got = C.contig_call(k.axpy_f32, n, 0.5, x, y)
        C.close(got, want, "f32", what="axpy_f32 contiguous n=%d" % n)


def test_postmap_inplace():
    """After CuPy's test_postmap_inplace: the kernel's result written over
    its own input, integers exactly."""
    k = C.load(K)
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    want = a + 1
    k.incr(a)
    C.equal(a, want, "incr")
    b = np.arange(24, dtype=np.int32).reshape(4, 6)[:, ::-2]
    want = b + 1
    k.incr(b)
    C.equal(b, want, "incr strided")


def test_batchnorm_running_stats():
    """Two inout parameters: the running mean and variance per channel,
    from a batch's statistics computed by numpy."""
    k = C.load(K)
    for t, dt in (("f32", np.float32), ("f64", np.float64)):
        x = _data((8, 16), dt)
        mean, var = x.mean(axis=0).astype(dt), x.var(axis=0).astype(dt)
        rmean, rvar = _data((16,), dt), np.abs(_data((16,), dt)) + 1
        r0, v0 = rmean.copy(), rvar.copy()
        getattr(k, "bn_update_" + t)(mean, var, rmean, rvar, 0.25, 8 / 7)
        # the kernel's order of operations, in the compute type (f32 scalars
        # meet T: f32 for f32, f64 for f64)
        m, u = dt(np.float32(0.25)), dt(np.float32(8 / 7))
        C.close(rmean, (1 - m) * r0 + m * mean, t, ulp=1, what="running mean " + t)
        C.close(rvar, (1 - m) * v0 + m * u * var, t, ulp=1, what="running var " + t)
        # a strided channel slice updates in place too
        big = np.ones((16, 3), dt)
        sl = big[:, 1]
        getattr(k, "bn_update_" + t)(mean, var, sl, big[:, 2], 0.5)
        C.close(big[:, 1], dt(0.5) * 1 + dt(0.5) * mean, t, ulp=1, what="strided running mean " + t)
        C.equal(big[:, 0], np.ones(16, dt), "the column next to it")


def test_readback_order():
    """old = y (the value it came in with); new = y + 1 after y's assignment."""
    k = C.load(K)
    y = _data((3, 5), np.float32)
    x = _data((3, 5), np.float32)
    y0 = y.copy()
    old, new, y_out = k.readback(y, x)
    C.check(np.shares_memory(y_out, y), "the inout output is not y")
    C.equal(old, y0, "old")
    C.close(y, y0 * 2 + x, "f32", what="y")
    C.close(new, y0 * 2 + x + 1, "f32", what="new")


def test_f16_storage():
    k = C.load(K)
    y = RNG.standard_normal(100).astype(np.float16)
    want = (y.astype(np.float32) * np.float32(1.5)).astype(np.float16)
    k.scale_h(y, 1.5)
    C.equal(y.view(np.uint16), want.view(np.uint16), "scale_h")


def test_inout_broadcast_refused():
    """An inout parameter is an output: it must have the iteration shape
    (a broadcast one would be written at one position from several)."""
    k = C.load(K)
    x = _data((4, 5), np.float32)
    y = _data((1, 5), np.float32)
    y0 = y.copy()
    rc = k.axpy_f32(1, x, y, raw=True)
    C.check(rc != 0, "a broadcast inout parameter was accepted")
    C.equal(y, y0, "y unchanged after the refused call")


def _layouts(x):
    """x's values in several layouts (each a fresh array or view)."""
    yield "contiguous", x.copy()
    yield "fortran", np.asfortranarray(x)
    yield "reversed", np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]
    big = np.zeros(x.shape[:-1] + (x.shape[-1] * 2,), x.dtype)
    big[..., ::2] = x
    yield "every other", big[..., ::2]


def test_reduction_softmax_in_place():
    """In a reduction the reducers read x and the epilogue writes it at the
    same position (torch's softmax_): the array passed holds the result,
    for every layout and axis, as numpy's softmax of the old values."""
    k = C.load(K)
    for t in ("f32", "f64", "f16"):
        dt = C.NP[t]
        for shape, axes in (((6, 50), 1), ((6, 50), 0), ((3, 4, 20), (0, 2)), ((2, 40000), 1), ((5, 7), None)):
            x0 = RNG.uniform(-8, 8, shape).astype(dt)
            xv = x0.astype(np.float64)
            ax = axes if axes is not None else tuple(range(len(shape)))
            e = np.exp(xv - xv.max(axis=ax, keepdims=True))
            want = (e / e.sum(axis=ax, keepdims=True)).astype(dt)
            for name, x in _layouts(x0) if x0.ndim == 2 and x0.size < 10000 else [("contiguous", x0.copy())]:
                got = getattr(k, "softmax__" + t)(x, axes=axes)
                C.check(np.shares_memory(got, x), "softmax_<%s> %s: the result is not x" % (t, name))
                C.close(x, want, t, ulp=1 if t == "f16" else 16, atol=1e-7 if t == "f32" else 0,
                        what="softmax_<%s> %s axes %s %s" % (t, shape, axes, name))


def test_reduction_layernorm_in_place():
    """Reduced-shape outputs next to the inout epilogue output; gamma and
    beta broadcast; the mean and 1/sd from the values x came in with."""
    k = C.load(K)
    for t in ("f32", "f64"):
        dt = C.NP[t]
        for shape, axes in (((8, 64), 1), ((64, 8), 0)):
            x0 = RNG.uniform(-3, 3, shape).astype(dt)
            g = RNG.uniform(0.5, 2, shape[-1:]).astype(dt)
            b = RNG.uniform(-1, 1, shape[-1:]).astype(dt)
            xv = x0.astype(np.float64)
            m = xv.mean(axis=axes, keepdims=True)
            r = 1 / np.sqrt(((xv - m) ** 2).mean(axis=axes, keepdims=True) + np.float64(np.float32(1e-5)))
            for name, x in _layouts(x0):
                gm, gr, gx = getattr(k, "layernorm__" + t)(x, g, b, axes=axes)
                C.check(np.shares_memory(gx, x), "layernorm_ %s: the result is not x" % name)
                what = "layernorm_<%s> %s axes %s %s" % (t, shape, axes, name)
                C.close(gm, m.squeeze(axis=axes).astype(dt), t, ulp=16, atol=1e-6, what=what + ": mean")
                C.close(gr, r.squeeze(axis=axes).astype(dt), t, ulp=16, what=what + ": rstd")
                C.close(x, ((xv - m) * r * g + b).astype(dt), t, ulp=64, atol=1e-6, what=what + ": x")


def test_reduction_contiguous_entry():
    """The contiguous entry point [outer, len, inner] takes one pointer for x."""
    k = C.load(K)
    x0 = RNG.uniform(-8, 8, (3, 40, 5)).astype(np.float32)
    xv = x0.astype(np.float64)
    e = np.exp(xv - xv.max(axis=1, keepdims=True))
    got = C.contig_call(k.softmax__f32, (3, 40, 5), x0)
    C.close(got, (e / e.sum(axis=1, keepdims=True)).astype(np.float32), "f32", ulp=16, atol=1e-7,
            what="softmax__f32 contiguous")


def test_reduction_integer_read_back():
    """After its assignment a reads back as the assigned value (a - lo)."""
    k = C.load(K)
    a = RNG.integers(-20, 20, (5, 30)).astype(np.int32)
    for axes in (1, 0, None):
        x = a.copy()
        above, lo, _ = k.shift_min(x, axes=axes)
        want_lo = a.min(axis=axes, keepdims=axes is not None)
        C.equal(x, a - want_lo, "shift_min axes %s: a" % (axes,))
        C.equal(lo, a.min(axis=axes), "shift_min axes %s: lo" % (axes,))
        C.equal(above, ((a - want_lo) > 0).sum(axis=axes), "shift_min axes %s: above" % (axes,))


if __name__ == "__main__":
    sys.exit(C.main(globals()))
