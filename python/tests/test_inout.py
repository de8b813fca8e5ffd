"""In-out parameters through the runtime (docs/language.md, "In-out
parameters"; docs/runtime.md, "In place"): the JIT module path and the
jiterator path, the aliasing rule, and the errors of misuse."""
import numpy as np
import pytest

import nnk

SRC = """
elementwise axpy<T: num>(a: T, x: T[], inout y: T[]) { y = y + a * x; }
elementwise bump(inout y: f32[], x: f32[]) -> (old: f32[]) { old = y; y = y + x; }
"""


@pytest.fixture(scope="module")
def mod():
    return nnk.compile(SRC)


def test_inout_updates_the_array(mod):
    x = np.arange(10, dtype=np.float32)
    y = np.ones(10, dtype=np.float32)
    r = mod.axpy(2.0, x, y)
    assert np.array_equal(y, 1 + 2 * np.arange(10, dtype=np.float32))
    assert r is y                          # the inout output is y itself
    yi = np.arange(10, dtype=np.int64)
    mod.axpy(3, np.ones(10, np.int64), yi)
    assert np.array_equal(yi, np.arange(10) + 3)


def test_inout_named_and_with_outputs(mod):
    y = np.full(5, 4, dtype=np.float32)
    old, y2 = mod.bump(x=np.ones(5, np.float32), y=y)
    assert np.array_equal(old, np.full(5, 4)) and np.array_equal(y, np.full(5, 5))
    assert y2 is y
    # a preallocated declared output is still an out=
    o = np.zeros(5, np.float32)
    mod.bump(y, np.ones(5, np.float32), out=o)
    assert np.array_equal(o, np.full(5, 5)) and np.array_equal(y, np.full(5, 6))


def test_overlapping_alias_is_copied_first(mod):
    """x is y shifted by one: numpy's y[1:] += y[:-1] semantics (the input
    read from a copy), never a running sum."""
    buf = np.arange(8, dtype=np.float32)
    want = buf.copy()
    want[1:] = want[1:] + want[:-1]
    mod.axpy(1.0, buf[:-1], buf[1:])
    assert np.array_equal(buf, want)


def test_inout_misuse(mod):
    y = np.ones(4, np.float32)
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(nnk.ArgumentError, match="read-only"):
        mod.axpy(1.0, y, ro)
    assert np.array_equal(ro, np.ones(4))
    with pytest.raises(nnk.ArgumentError, match="0 outputs besides its inout parameters"):
        mod.axpy(1.0, y, y.copy(), out=np.empty(4, np.float32))
    with pytest.raises(nnk.ShapeError):
        mod.axpy(1.0, np.ones((3, 4), np.float32), y)   # y would be written from 3 rows
    with pytest.raises(nnk.ArgumentError):
        mod.axpy(1.0, y)                                 # y is an input: required


def test_inout_jiterator():
    fn = nnk.jiterator._create_jit_fn("elementwise scale(inout y: f32[], s: f32 = 2) { y = y * s; }")
    y = np.arange(6, dtype=np.float32)
    fn(y)
    assert np.array_equal(y, 2 * np.arange(6))
    fn(y, s=0.5)
    assert np.array_equal(y, np.arange(6))


RED = """
reduction softmax_(inout x: f32[]) {
    let m = max(x);
    let s = sum(exp(x - m));
    x = exp(x - m) / s;
}
reduction addnorm(a: f32[], inout x: f32[]) -> (s: f32) {
    let t = sum(a);
    s = t;
    x = (x + a) / t;
}
"""


def _softmax(x, axis):
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_inout_in_a_reduction():
    """The reducers read x, the epilogue writes it: rows split across the
    pool's threads (200000 elements) and the column order (axis 0)."""
    m = nnk.compile(RED)
    for shape, axis in (((3, 200000), 1), ((200000, 3), 0), ((7, 9), None)):
        x0 = np.random.default_rng(3).uniform(-5, 5, shape).astype(np.float32)
        x = x0.copy()
        r = m.softmax_(x, axis=axis)
        assert np.shares_memory(r, x)
        np.testing.assert_allclose(x, _softmax(x0, axis), rtol=2e-6, atol=1e-9)


def test_inout_in_a_reduction_overlap_copied_first():
    """a is x shifted by one: a is read from a copy taken first."""
    m = nnk.compile(RED)
    buf = np.random.default_rng(4).uniform(1, 2, 1001).astype(np.float32)
    a0, x0 = buf[:-1].copy(), buf[1:].copy()
    s, _ = m.addnorm(buf[:-1], buf[1:])
    t = a0.astype(np.float64).sum()
    np.testing.assert_allclose(s, t, rtol=1e-6)
    np.testing.assert_allclose(buf[1:], (x0 + a0) / np.float32(s), rtol=1e-6)
    assert buf[0] == a0[0]


def test_inout_result_is_the_callers_object(mod):
    """The output of an inout parameter comes back as the object given for it
    (as an out= array does: numpy's and CuPy's convention), whatever its
    kind, positional or named, among declared outputs, in a reduction; it
    was a new numpy view or nnk.Array over the same memory."""
    import array
    red = nnk.compile("reduction norm_(inout x: f32[], eps: f32 = 0) -> (s: f32) { s = sum(x); x = x / (sum(x) + eps); }")
    two = nnk.compile("elementwise swap(inout a: f32[], inout b: f32[]) -> (c: f32[]) { c = a + b; a = b; b = c; }")
    kinds = [lambda: np.ones(4, np.float32), lambda: nnk.asarray(np.ones(4, np.float32)),
             lambda: array.array("f", [1, 1, 1, 1]), lambda: np.ones(8, np.float32)[::2]]
    for make in kinds:
        y = make()
        assert mod.axpy(2.0, np.ones(4, np.float32), y) is y
        assert mod.axpy(x=np.ones(4, np.float32), y=y, a=2.0) is y
        assert np.array_equal(np.asarray(y), np.full(4, 5))
        old, r = mod.bump(y=y, x=np.ones(4, np.float32))
        assert r is y and type(old) is np.ndarray
        z = make()
        s, r = red.norm_(z, axis=0)
        assert r is z and float(np.asarray(s)) == 4 and np.array_equal(np.asarray(z), np.full(4, 0.25))
        a, b = make(), make()
        c, ra, rb = two.swap(b=b, a=a)
        assert ra is a and rb is b and np.array_equal(np.asarray(b), np.full(4, 2))
