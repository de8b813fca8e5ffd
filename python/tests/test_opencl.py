"""The device-generic runtime behaviour on the opencl extension's first
device (PoCL in CI), through the package: contexts, arrays of every dtype,
views and broadcasting as inputs, axes/keepdims, jit functions, errors at
the device boundary, allocator statistics, concurrent calls.  The extension
comes from the build tree (NNK_EXTENSION_PATH); without a device the tests
skip, unless NNK_OPENCL_REQUIRED=1 (CI), where that is a failure."""
import os
import threading

import numpy as np
import pytest

import nnk
from nnk import ext_utils

BUILDDIR = os.environ.get("top_builddir") or os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.fixture(scope="module")
def ocl():
    os.environ.setdefault("POCL_CACHE_DIR", os.path.join(BUILDDIR, "tests", "opencl", "pocl-cache"))
    old = os.environ.get("NNK_EXTENSION_PATH")
    os.environ["NNK_EXTENSION_PATH"] = os.path.join(BUILDDIR, ".libs") + (":" + old if old else "")
    try:
        ext = ext_utils.import_extension_module("opencl")
    finally:
        if old is None:
            del os.environ["NNK_EXTENSION_PATH"]
        else:
            os.environ["NNK_EXTENSION_PATH"] = old
    if ext.get_device_count() == 0:
        if os.environ.get("NNK_OPENCL_REQUIRED") == "1":
            pytest.fail("no OpenCL device: " + ext.status)
        pytest.skip("no OpenCL device: " + ext.status)
    return ext


@pytest.fixture(scope="module")
def ctx(ocl):
    return ocl.context(device_id=0)


def test_contexts(ocl):
    devs = ocl.get_devices()
    assert len(devs) >= 1 and devs[0].total_memory > 0
    # vendor, driver and unified memory as the status line says them
    d = devs[0]
    assert d.vendor and d.vendor in ocl.status and d.driver_version and d.driver_version in ocl.status
    assert d.unified_memory is ("host-unified memory" in ocl.status.split(";")[0]) and not d.host_accessible
    assert ocl.context(device_id=0, type_config="half").backend == ["opencl:half", "opencl:float", "cpu:float"]
    assert ocl.context(platform="0", device_type="all").backend == ["opencl:float", "cpu:float"]
    with pytest.raises(nnk.ArgumentError):
        ocl.context(colour="blue")
    # no device matches: the message points to .status, not to the C function
    with pytest.raises(nnk.ArgumentError, match=r"see the extension's \.status\)$"):
        ocl.context(platform="no such platform")
    assert "programs:" in ocl.status


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64"])
def test_array_round_trip(ctx, dtype):
    x = (np.arange(-50, 70) % 7).astype(dtype).reshape(4, 30)
    a = nnk.asarray(x, ctx=ctx)
    assert a.device == "opencl:0"
    np.testing.assert_array_equal(a.numpy(), x)
    v = nnk.asarray(x[::-2, 3::4], ctx=ctx)  # a strided, reversed view is copied in its order
    np.testing.assert_array_equal(v.numpy(), x[::-2, 3::4])


def test_views_and_broadcasting(ctx, add):
    x = np.linspace(-3, 3, 60, dtype=np.float32).reshape(3, 20)
    y = np.linspace(1, 2, 20, dtype=np.float32)
    a, b = nnk.asarray(x.T, ctx=ctx), nnk.asarray(y[:, None], ctx=ctx)   # (20, 3) and (20, 1)
    z = add(a, b, alpha=2.0, ctx=ctx)
    assert z.device == "opencl:0"
    np.testing.assert_array_equal(z.numpy(), x.T + np.float32(2) * y[:, None])
    c = nnk.asarray(np.float32(0.5) * np.ones(3, np.float32), ctx=ctx)  # (3,) against (20, 3)
    np.testing.assert_array_equal(add(a, c, ctx=ctx).numpy(), x.T + np.float32(0.5))


def test_axes_keepdims(ctx, norms):
    x = np.random.default_rng(5).standard_normal((6, 50, 7)).astype(np.float32)
    a = nnk.asarray(x, ctx=ctx)
    r = norms.l2norm(a, axis=(0, 2), keepdims=True, ctx=ctx)
    assert r.device == "opencl:0" and r.numpy().shape == (1, 50, 1)
    want = np.sqrt((x.astype(np.float64) ** 2).sum(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(r.numpy(), want, rtol=2e-6)
    s = norms.softmax(a, axis=1, ctx=ctx).numpy()
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    # the same kernel on host arrays runs on cpu: within a few ulp of the device
    h = norms.softmax(x, axis=1, ctx=ctx)
    np.testing.assert_allclose(np.asarray(h), s, rtol=4e-6, atol=1e-8)


def test_jit_function_dtypes(ctx, add):
    for dt in (np.float16, np.float32):
        x = np.linspace(-1, 1, 257).astype(dt)
        z = add(nnk.asarray(x, ctx=ctx), nnk.asarray(x, ctx=ctx), ctx=ctx)
        assert z.device == "opencl:0" and z.numpy().dtype == dt
        np.testing.assert_array_equal(z.numpy(), (x.astype(np.float32) * 2).astype(dt))


def test_errors_at_the_boundary(ctx, add):
    a = nnk.asarray(np.ones(4, np.float32), ctx=ctx)
    with pytest.raises(nnk.UnsupportedError):
        add(a, np.ones(4, np.float32), ctx=ctx)        # one array on the device, one on the host
    with pytest.raises(nnk.ShapeError):
        add(a, nnk.asarray(np.ones(5, np.float32), ctx=ctx), ctx=ctx)


def test_allocator_stats(ocl, ctx):
    ocl.clear_memory_cache()
    before = ocl.memory_stats(0)["bytes_in_use"]
    a = nnk.asarray(np.zeros(1 << 16, np.float32), ctx=ctx)
    assert ocl.memory_stats(0)["bytes_in_use"] >= before + (1 << 18)
    del a
    st = ocl.memory_stats(0)
    assert st["bytes_in_use"] == before and st["bytes_cached"] >= 1 << 18
    assert ocl.clear_memory_cache() >= 1 << 18


def test_concurrent_calls(ctx, add):
    x = np.arange(10000, dtype=np.float32)
    a = nnk.asarray(x, ctx=ctx)
    errors = []

    def work(k):
        try:
            for _ in range(5):
                z = add(a, a, alpha=float(k), ctx=ctx)
                np.testing.assert_array_equal(z.numpy(), x + np.float32(k) * x)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


# ---- raw parameters and index(d) on the device (docs/opencl.md, "Raw parameters") ----

RAW = """
elementwise stencil(raw x: f32[]) -> (y: f32[]) {
    let last = shape(x, 0) - 1;
    y = x[clamp(idx - 1, 0, last)] + x[idx] + x[clamp(idx + 1, 0, last)];
}
elementwise take<T: num>(raw table: T[], k: i64[]) -> (y: T[]) { y = table[k]; }
elementwise at2(raw m: f32[], i: i64[], j: i64[]) -> (y: f32[]) { y = m[i, j]; }
elementwise coords(z: i64[]) -> (y: i64[]) { y = z + index(0) * 10 + index(1); }
reduction mm_raw(raw a: f64[], raw b: f64[], space: f64[]) -> (c: f64) {
    c = sum(a[index(0), index(1)] * b[index(1), index(2)]);
}
"""


@pytest.fixture(scope="module")
def raw():
    return nnk.compile(RAW, name="raw.nnk")


def test_raw_on_the_device(ctx, raw):
    """The same bits as the cpu backend: gathers, per-dimension indices
    against a view's own strides, index(d), and a raw reduction in every
    layout (a slice per group, per item, and split)."""
    dev = lambda x: nnk.asarray(x, ctx=ctx)  # noqa: E731
    x = np.arange(300, dtype=np.float32) ** 0.5
    y = raw.stencil(dev(x), out=dev(np.empty(300, np.float32)), ctx=ctx)
    assert y.device == "opencl:0"
    np.testing.assert_array_equal(y.numpy(), np.asarray(raw.stencil(x, out=np.empty(300, np.float32))))
    for dt in (np.float32, np.int8, np.float64):
        t = (np.arange(37) * 3 - 50).astype(dt)
        k = np.random.default_rng(1).integers(0, 37, size=(5, 9))
        np.testing.assert_array_equal(raw.take(dev(t), dev(k), ctx=ctx).numpy(), t[k])
    m = np.arange(35, dtype=np.float32).reshape(5, 7)
    i, j = np.array([[0], [4], [2]]), np.array([6, 0, 3, 1])
    for mv in (m, m[::-1, ::2]):   # a reversed, strided view (copied to the device in its order)
        np.testing.assert_array_equal(raw.at2(dev(mv), dev(i), dev(j % mv.shape[1]), ctx=ctx).numpy(),
                                      mv[i, j % mv.shape[1]])
    z = np.zeros((3, 4), np.int64)
    np.testing.assert_array_equal(raw.coords(dev(z), ctx=ctx).numpy(), np.indices((3, 4))[0] * 10 + np.indices((3, 4))[1])
    rng = np.random.default_rng(5)
    for (M, K, N) in ((2, 5000, 3), (40, 5, 30), (1, 1, 1)):
        a, b = rng.random((M, K)), rng.random((K, N))
        space = np.broadcast_to(0.0, (M, K, N))
        c = raw.mm_raw(dev(a), dev(b), dev(np.zeros((M, K, N))), axis=1, ctx=ctx)
        assert c.device == "opencl:0"
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-12)
        # (the cpu backend adds in another order: the same sums to rounding)
        np.testing.assert_allclose(c.numpy(), np.asarray(raw.mm_raw(a, b, space, axis=1)), rtol=1e-13)


def test_raw_range_errors_on_the_device(ctx, raw):
    """An index out of range sets the device's range error: NNK_ERANGE with
    the cpu backend's message, and the next call is fine again."""
    dev = lambda x: nnk.asarray(x, ctx=ctx)  # noqa: E731
    t = dev(np.arange(5, dtype=np.float64))
    with pytest.raises(nnk.RangeError, match=r"kernel 'take': flat index 5 of raw parameter 'table' is out of range \[0, 5\)"):
        raw.take(t, dev(np.array([0, 5, 1], np.int64)), ctx=ctx)
    with pytest.raises(nnk.RangeError, match=r"flat index -1 of raw parameter 'table'"):
        raw.take(t, dev(np.array([-1], np.int64)), ctx=ctx)
    np.testing.assert_array_equal(raw.take(t, dev(np.array([4, 0], np.int64)), ctx=ctx).numpy(), [4.0, 0.0])
    with pytest.raises(nnk.RangeError, match="index 4 of raw parameter 'm' is out of range \\[0, 4\\) in dimension 0"):
        raw.at2(dev(np.zeros((4, 5), np.float32)), dev(np.array([4])), dev(np.array([0])), ctx=ctx)
    with pytest.raises(nnk.RangeError, match="'m' has 1 dimension but is indexed with 2"):
        raw.at2(dev(np.zeros(5, np.float32)), dev(np.array([0])), dev(np.array([0])), ctx=ctx)
    with pytest.raises(nnk.RangeError, match="index\\(1\\) of an iteration space of 1 dimensions"):
        raw.coords(dev(np.zeros(3, np.int64)), ctx=ctx)
    with pytest.raises(nnk.RangeError, match="index 3 of raw parameter 'b' is out of range \\[0, 3\\) in dimension 0"):
        raw.mm_raw(dev(np.ones((2, 4))), dev(np.ones((3, 2))), dev(np.zeros((2, 4, 2))), axis=1, ctx=ctx)


VMATH = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "sigmoid")


def test_vmath_bits_of_the_cpu(ctx):
    """f32 exp, expm1, log, log1p, sin, cos, tanh, sigmoid are vmath.h on
    both (docs/opencl.md, "Numerics"): the cpu backend's bits, f16 storage
    too, but for a NaN's sign and payload.  sin and cos of |x| > 2^19 were
    libm's sinf/cosf on the cpu and OpenCL's sin/cos on the device: 10% of
    those arguments differed (PoCL)."""
    src = "\n".join("elementwise v_%s<T: float>(x: T[]) -> (y: T[]) { y = %s(x); }" % (f, f) for f in VMATH)
    mc, mo = nnk.compile(src, name="vm.nnk"), nnk.compile(src, name="vm.nnk", ctx=ctx)
    x32 = np.arange(0, 2 ** 32, 30011, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x16 = np.arange(0, 2 ** 16, 3, dtype=np.uint32).astype(np.uint16).view(np.float16)
    for f in VMATH:
        for x, ut in ((x32, np.uint32), (x16, np.uint16)):
            want = np.asarray(getattr(mc, "v_" + f)(x))
            got = getattr(mo, "v_" + f)(nnk.asarray(x, ctx=ctx)).numpy()
            nan = np.isnan(want) & np.isnan(got)
            bad = (want.view(ut) != got.view(ut)) & ~nan
            assert not bad.any(), "%s %s: %d of %d differ, e.g. x = %r: %r, cpu %r" % (
                f, x.dtype, bad.sum(), x.size, x[bad][:3], got[bad][:3], want[bad][:3])


# ---- complex c64/c128 on the device (docs/opencl.md, "Complex numbers") ----

CPLX = """
elementwise arith<T: complex>(a: T[], b: T[]) -> (s: T[], d: T[], p: T[], q: T[]) {
    s = a + b; d = a - b; p = a * b; q = a / b;
}
elementwise funcs<T: complex>(z: T[]) -> (e: T[], l: T[], r: T[], w: T[], t: T[], c: T[]) {
    e = exp(z); l = log(z); r = sqrt(z); w = pow(z, z); t = tanh(z); c = conj(z) * abs(z) + arg(z);
}
elementwise parts<T: complex>(z: T[]) -> (re: T[], im: T[]) { re = real(z); im = imag(z); }
reduction stats<T: complex>(z: T[]) -> (s: T, m: T, p: T) { s = sum(z); m = mean(z); p = prod(z / abs(z)); }
elementwise rot<T: complex>(x: T[], w: T = 2) -> (y: T[]) { y = x * w; }
"""


@pytest.fixture(scope="module")
def cplx():
    return nnk.compile(CPLX, name="cplx.nnk")


def _cvalues(dt, n, rng):
    v = rng.standard_normal(n) * 3 + 1j * rng.standard_normal(n) * 3
    # Smith's division's branches and numpy's zero divisor, infinities and NaNs
    v[:8] = [0, 1e30 + 1e-30j, 1e-30 + 1e30j, np.inf, complex(np.nan, 1), -0.0, 2 - 0j, complex(0, np.inf)]
    return v.astype(dt)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_arithmetic_bit_exact(ctx, cplx, dt):
    """+, -, * and Smith's / are numpy's operation for operation: the
    device gives numpy's bits (the cpu backend's too), special values included."""
    rng = np.random.default_rng(3)
    a, b = _cvalues(dt, 600, rng), _cvalues(dt, 600, rng)[::-1].copy()
    got = cplx.arith(nnk.asarray(a, ctx=ctx), nnk.asarray(b, ctx=ctx), ctx=ctx)
    with np.errstate(all="ignore"):
        want = (a + b, a - b, a * b, a / b)
    for g, w in zip(got, want):
        assert g.device == "opencl:0"
        g = g.numpy()
        assert g.dtype == dt
        np.testing.assert_array_equal(g.view(g.real.dtype), w.view(w.real.dtype))
    for g, c in zip(got, cplx.arith(a, b)):   # and the cpu backend's
        np.testing.assert_array_equal(g.numpy().view(g.numpy().real.dtype), np.asarray(c).view(c.real.dtype))
    # complex scalars (the plan's nnk_scalar c64/c128 members), the default and given
    for w in ((), (dt(1.5 + 0.25j),)):
        y = cplx.rot(nnk.asarray(a, ctx=ctx), *w, ctx=ctx).numpy()
        c = dt(w[0] if w else 2)
        # the textbook product part by part (numpy's array-by-scalar loop may fuse on AVX-512)
        with np.errstate(all="ignore"):
            want = a.real * c.real - a.imag * c.imag, a.real * c.imag + a.imag * c.real
        np.testing.assert_array_equal(y.real, want[0])
        np.testing.assert_array_equal(y.imag, want[1])


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_functions_and_reductions(ctx, cplx, dt):
    """The functions against numpy within a few eps (OpenCL's f64 libm and,
    without cl_khr_fp64, its f32 sin/cos are not glibc's); parts exactly;
    sum/mean/prod in every reduction layout."""
    rng = np.random.default_rng(4)
    z = (rng.standard_normal(500) + 1j * rng.standard_normal(500)).astype(dt)
    eps = np.finfo(np.float32 if dt == np.complex64 else np.float64).eps
    got = [g.numpy() for g in cplx.funcs(nnk.asarray(z, ctx=ctx), ctx=ctx)]
    zz = z.astype(np.complex128)
    want = (np.exp(zz), np.log(zz), np.sqrt(zz), zz ** zz, np.tanh(zz), np.conj(zz) * np.abs(zz) + np.angle(zz))
    for g, w in zip(got, want):
        assert g.dtype == dt
        np.testing.assert_allclose(g, w, rtol=64 * eps, atol=64 * eps)
    re, im = (g.numpy() for g in cplx.parts(nnk.asarray(z, ctx=ctx), ctx=ctx))
    np.testing.assert_array_equal(re, z.real.astype(dt))
    np.testing.assert_array_equal(im, z.imag.astype(dt))
    for shape, axis in (((4, 3000), 1), ((3000, 5), 0), ((2, 70000), 1)):
        x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
        s, m, p = (g.numpy() for g in cplx.stats(nnk.asarray(x, ctx=ctx), axis=axis, ctx=ctx))
        xx = x.astype(np.complex128)
        n = shape[axis]
        np.testing.assert_allclose(s, xx.sum(axis=axis), rtol=0, atol=eps * (n + 16) * 8)
        np.testing.assert_allclose(m, xx.mean(axis=axis), rtol=0, atol=eps * (n + 16) * 8 / n)
        np.testing.assert_allclose(np.abs(p), 1, rtol=n * 8 * eps)


def test_expression_defaults_on_the_device(ctx):
    """A scalar default that is an expression (-0.5, 1.0 / 4.0, 0.5 - 2j)
    reaches a device kernel as the instance evaluates it (the interface the
    runtime gives CUDA and OpenCL code had 0 for every one of them)."""
    m = nnk.compile("""
elementwise lin(x: f32[], w: f32 = -0.5, v: f32 = 1.0 / 4.0) -> (y: f32[]) { y = x * w + v; }
elementwise rot<T: complex>(x: T[], w: T = 0.5 - 2j) -> (y: T[]) { y = x * w; }
""", name="defaults.nnk")
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(m.lin(nnk.asarray(x, ctx=ctx), ctx=ctx).numpy(), x * np.float32(-0.5) + np.float32(0.25))
    np.testing.assert_array_equal(m.lin(nnk.asarray(x, ctx=ctx), ctx=ctx).numpy(), np.asarray(m.lin(x)))
    z = (np.arange(5) + 1j).astype(np.complex64)
    w = np.complex64(0.5 - 2j)
    got = m.rot(nnk.asarray(z, ctx=ctx), ctx=ctx).numpy()
    np.testing.assert_array_equal(got.real, z.real * w.real - z.imag * w.imag)
    np.testing.assert_array_equal(got.imag, z.real * w.imag + z.imag * w.real)
