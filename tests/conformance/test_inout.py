"""In-out parameters (docs/language.md, "In-out parameters"): `inout y: T[]`
is read and written at the same position, through NAME_strided (any
strides, broadcast inputs) and the contiguous entry point, against numpy.

Translated upstream cases (our own translations):
  * CuPy test_postmap_inplace: an elementwise kernel whose output is also
    its input (`y = y + x` written in place), float and integer dtypes;
  * the batchnorm running statistics CuPy and PyTorch update in place.
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


if __name__ == "__main__":
    sys.exit(C.main(globals()))
