"""complex64/complex128 arrays through the runtime: jit functions and modules.

The jit cases are our own translations of PyTorch's test/test_jiterator.py
(TestPythonJiterator): test_all_dtype_contiguous and
test_all_dtype_noncontiguous (alpha * x + beta * y over pairs of dtypes,
here every pair with a complex member), test_extra_args (alpha and beta
per call; with `T alpha` of a complex T, complex scalars), test_various_num_inputs and test_various_num_outputs, on
complex dtypes.  PyTorch compares with torch's own eager result; here the
reference is numpy's, within rtol 4 eps of the result's part type (the
sums of products round once or twice), the dtype as language.md's
"Complex numbers" says (numpy's, but an integer with c64 gives c64).
"""
import numpy as np
import pytest

import nnk

FUSED = """
elementwise my_fused_kernel<T: num, R: float>(x: T[], y: T[], alpha: R = 1, beta: R = 1) -> (z: T[]) {
    z = alpha * x + beta * y;
}"""
jitted_fn = nnk.jiterator._create_jit_fn(FUSED, alpha=1, beta=1)

REAL = [np.float16, np.float32, np.float64, np.int32, np.bool_]
CPLX = [np.complex64, np.complex128]
PAIRS = [(a, b) for a in CPLX + REAL for b in CPLX + REAL if a in CPLX or b in CPLX]


def ref_fn(x, y, alpha=1, beta=1):
    return alpha * x + beta * y


def nnk_dtype(a, b):
    """The promoted dtype: numpy's, except that an integer (or bool) with
    complex64 stays complex64, as an integer with float32 stays float32."""
    a, b = np.dtype(a), np.dtype(b)
    if a.kind in "biu" and b == np.complex64 or b.kind in "biu" and a == np.complex64:
        return np.dtype(np.complex64)
    return np.result_type(a, b)


def buffer(dtype, n, rng):
    v = rng.random(n) * 10 + 1j * rng.random(n) * 10
    if np.dtype(dtype).kind == "c":
        return v.astype(dtype)
    return v.real.astype(dtype)


def check(result, expected, dtype):
    assert result.dtype == dtype, (result.dtype, dtype)
    eps = np.finfo(np.float32 if dtype == np.complex64 else np.float64).eps
    np.testing.assert_allclose(result.astype(np.complex128), expected.astype(np.complex128), rtol=4 * eps, atol=0)


def strided(buf, shape, strides):
    return np.lib.stride_tricks.as_strided(buf, shape, [s * buf.itemsize for s in strides])


@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda d: "%s-%s" % (np.dtype(d[0]), np.dtype(d[1])))
def test_all_dtype_contiguous(dtypes):
    rng = np.random.default_rng(7)
    a = strided(buffer(dtypes[0], 9, rng), [3, 3], [3, 1])
    b = strided(buffer(dtypes[1], 9, rng), [3, 3], [3, 1])
    want = nnk_dtype(*dtypes)
    expected = ref_fn(a.astype(want), b.astype(want))
    check(jitted_fn(a, b), expected, want)


@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda d: "%s-%s" % (np.dtype(d[0]), np.dtype(d[1])))
def test_all_dtype_noncontiguous(dtypes):
    rng = np.random.default_rng(8)
    a = strided(buffer(dtypes[0], 9, rng), [3, 3], [1, 3])
    b = strided(buffer(dtypes[1], 9, rng), [3, 1], [1, 3])
    want = nnk_dtype(*dtypes)
    expected = ref_fn(a.astype(want), b.astype(want))
    check(jitted_fn(a, b), expected, want)


@pytest.mark.parametrize("dtype", CPLX)
@pytest.mark.parametrize("alpha", [-1, 2.0, None])
@pytest.mark.parametrize("beta", [3, -4.2, None])
def test_extra_args(dtype, alpha, beta):
    rng = np.random.default_rng(9)
    a, b = buffer(dtype, 1024, rng), buffer(dtype, 1024, rng)
    extra = {k: v for k, v in (("alpha", alpha), ("beta", beta)) if v is not None}
    # alpha and beta are R = f32 (the class's default): numpy's python
    # scalars meet complex64 as float32 values too
    part = np.float32
    expected = ref_fn(a, b, **{k: part(v) for k, v in extra.items()})
    check(jitted_fn(a, b, **extra), expected, np.dtype(dtype))


@pytest.mark.parametrize("dtype", CPLX)
@pytest.mark.parametrize("num_inputs", [1, 5, 8])
def test_various_num_inputs(dtype, num_inputs):
    rng = np.random.default_rng(num_inputs)
    inputs = [buffer(dtype, 10, rng) for _ in range(num_inputs)]
    params = ", ".join("i%d: T[]" % i for i in range(num_inputs))
    body = " + ".join("i%d" % i for i in range(num_inputs))
    fn = nnk.jiterator._create_jit_fn(
        "elementwise my_kernel<T: complex>(%s) -> (out: T[]) { out = %s; }" % (params, body))
    expected = inputs[0].copy()
    for x in inputs[1:]:
        expected = expected + x
    check(fn(*inputs), expected, np.dtype(dtype))


@pytest.mark.parametrize("num_outputs", [1, 4, 8])
def test_various_num_outputs(num_outputs):
    rng = np.random.default_rng(10 + num_outputs)
    x = buffer(np.complex128, 10, rng)
    outs = ", ".join("o%d: T[]" % i for i in range(num_outputs))
    body = " ".join("o%d = x + c128(%d, -%d);" % (i, i, i) for i in range(num_outputs))
    fn = nnk.jiterator._create_multi_output_jit_fn(
        "elementwise my_kernel<T: complex>(x: T[]) -> (%s) { %s }" % (outs, body), num_outputs=num_outputs)
    got = fn(x)
    for i in range(num_outputs):
        check(got[i], x + complex(i, -i), np.dtype(np.complex128))


def test_module_functions_and_reductions():
    mod = nnk.compile("""
elementwise polar<T: complex>(z: T[]) -> (r: T[], w: T[]) { r = abs(z); w = exp(log(z) * 0.5); }
reduction stats<T: complex>(z: T[]) -> (s: T, m: T) { s = sum(z); m = mean(z); }
""", name="complex.nnk")
    rng = np.random.default_rng(11)
    z = (rng.standard_normal((4, 64)) + 1j * rng.standard_normal((4, 64))).astype(np.complex64)
    r, w = mod.polar(z)
    assert r.dtype == np.complex64 and w.dtype == np.complex64
    np.testing.assert_allclose(r.real, np.abs(z.astype(np.complex128)), rtol=1e-6)
    assert np.all(r.imag == 0)
    np.testing.assert_allclose(w, np.sqrt(z.astype(np.complex128)), rtol=1e-5)
    s, m = mod.stats(z, axis=1)
    assert s.dtype == np.complex64 and s.shape == (4,)
    np.testing.assert_allclose(s, z.astype(np.complex128).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(m, z.astype(np.complex128).mean(axis=1), rtol=1e-5)
    s, m = mod.stats(z.astype(np.complex128), axis=(0, 1), keepdims=True)
    assert s.dtype == np.complex128 and s.shape == (1, 1)


def test_dtype_errors():
    fn = nnk.jiterator._create_jit_fn("elementwise halve<T: float>(x: T[]) -> (y: T[]) { y = x * 0.5; }")
    with pytest.raises(nnk.DTypeError) as e:
        fn(np.ones(3, np.complex64))
    assert "c64" in str(e.value)
    mod = nnk.compile("elementwise re(x: f32[]) -> (y: f32[]) { y = x; }")
    with pytest.raises(nnk.DTypeError) as e:
        mod.re(np.ones(3, np.complex64))
    assert "imaginary" in str(e.value) or "real(z)" in str(e.value)
    # a real array for a complex parameter is read as complex values
    mod = nnk.compile("elementwise twice(z: c128[]) -> (y: c128[]) { y = 2 * z; }")
    y = mod.twice(np.arange(3, dtype=np.float32))
    assert y.dtype == np.complex128 and y.tolist() == [0j, 2 + 0j, 4 + 0j]
    # a complex scalar for a real parameter is refused at the call
    mod = nnk.compile("elementwise s(x: f32[], a: f32) -> (y: f32[]) { y = a * x; }")
    with pytest.raises(nnk.DTypeError) as e:
        mod.s(np.ones(3, np.float32), 1j)
    assert "'a' is f32, but its argument is complex" in str(e.value)


# jiterator's `T alpha` with a complex T: the scalars are complex too
# (nnk_scalar's c64 / c128 members, nnk_args_c128)
TYPED = """
elementwise my_fused_kernel<T: num>(x: T[], y: T[], alpha: T = 1, beta: T = 1) -> (z: T[]) {
    z = alpha * x + beta * y;
}"""
typed_fn = nnk.jiterator._create_jit_fn(TYPED, alpha=1, beta=1)


@pytest.mark.parametrize("dtype", CPLX)
@pytest.mark.parametrize("alpha", [1 + 2j, -0.5j, 3, None])
@pytest.mark.parametrize("beta", [2.5 - 1j, -4.2, None])
def test_complex_scalar_args(dtype, alpha, beta):
    rng = np.random.default_rng(10)
    a, b = buffer(dtype, 1000, rng), buffer(dtype, 1000, rng)
    extra = {k: v for k, v in (("alpha", alpha), ("beta", beta)) if v is not None}
    expected = ref_fn(a, b, **{k: np.dtype(dtype).type(v) for k, v in extra.items()})
    check(typed_fn(a, b, **extra), expected, np.dtype(dtype))
    # positionally, and with a complex default
    mod = nnk.compile("elementwise rot<T: complex>(x: T[], w: T = 0.5 - 2j) -> (y: T[]) { y = x * w; }")
    check(mod.rot(a), a * np.dtype(dtype).type(0.5 - 2j), np.dtype(dtype))
    check(mod.rot(a, 1j), a * np.dtype(dtype).type(1j), np.dtype(dtype))
    check(mod.rot(a, np.complex64(2 - 1j)), a * np.dtype(dtype).type(2 - 1j), np.dtype(dtype))


@pytest.mark.parametrize("dtype", CPLX)
@pytest.mark.parametrize("alpha", [1 + 2j, -0.5j, complex(-0.0, 3.25), "(1+2j)", "2.5-1e-3J"])
def test_complex_defaults_at_creation(dtype, alpha):
    # jiterator's keyword defaults of a complex T: a Python complex (written
    # as RE+IMj for the options text) or that text itself
    rng = np.random.default_rng(11)
    a, b = buffer(dtype, 257, rng), buffer(dtype, 257, rng)
    fn = nnk.jiterator._create_jit_fn(TYPED, alpha=alpha, beta=2 - 1j)
    want = complex(alpha.replace("J", "j")) if isinstance(alpha, str) else alpha
    t = np.dtype(dtype).type
    check(fn(a, b), ref_fn(a, b, t(want), t(2 - 1j)), np.dtype(dtype))
    check(fn(a, b, beta=3), ref_fn(a, b, t(want), t(3)), np.dtype(dtype))


def test_complex_default_text_refused():
    for bad in ("1+j", "1+-2j", "(1+2j", "j", "1+2"):
        with pytest.raises(nnk.Error):
            nnk.jiterator._create_jit_fn(TYPED, alpha=bad)


def test_products_and_quotients_bit_exact_through_the_jit():
    """The JIT compiles for the host (-march=native): there gcc 12 fused a
    complex product's lanes into one vfmaddsub (one rounding where numpy
    rounds each product) despite -ffp-contract=off; templates/c/complex.tmpl
    keeps the products apart, so *, / are numpy's bits on every host."""
    mod = nnk.compile("""
elementwise mq<T: complex>(a: T[], b: T[]) -> (p: T[], q: T[]) { p = a * b; q = a / b; }
""", name="mq.nnk")
    rng = np.random.default_rng(12)
    for dt in (np.complex64, np.complex128):
        a = (rng.standard_normal(4099) * 3 + 1j * rng.standard_normal(4099)).astype(dt)
        b = (rng.standard_normal(4099) + 1j * rng.standard_normal(4099) * 5).astype(dt)
        p, q = mod.mq(a, b)
        part = np.float32 if dt == np.complex64 else np.float64
        np.testing.assert_array_equal(np.asarray(p).view(part), (a * b).view(part))
        np.testing.assert_array_equal(np.asarray(q).view(part), (a / b).view(part))
