"""Raw (indexed) parameters through the runtime (docs/language.md, "Raw
parameters"): the JIT module and jiterator paths, NNK_ERANGE as
nnk.RangeError naming kernel, parameter and index, and the aliasing rule
(an output over a raw input reads a copy)."""
import numpy as np
import pytest

import nnk

SRC = """
elementwise stencil(raw x: f32[]) -> (y: f32[]) {
    let last = shape(x, 0) - 1;
    y = x[clamp(idx - 1, 0, last)] + x[idx] + x[clamp(idx + 1, 0, last)];
}
elementwise take<T: num>(raw table: T[], k: i64[]) -> (y: T[]) { y = table[k]; }
elementwise at2(raw m: f32[], i: i64[], j: i64[]) -> (y: f32[]) { y = m[i, j]; }
elementwise coords() -> (y: i64[]) { y = index(0) * 10 + index(1); }
"""


@pytest.fixture(scope="module")
def mod():
    return nnk.compile(SRC)


def _stencil_ref(x):
    xp = np.concatenate([x[:1], x, x[-1:]])
    return xp[:-2] + xp[1:-1] + xp[2:]


def test_stencil_and_gather(mod):
    x = np.arange(12, dtype=np.float32) ** 2
    y = mod.stencil(x, out=np.empty(12, np.float32))   # the iteration space comes from the output
    assert np.array_equal(y, _stencil_ref(x))
    t = np.arange(5, dtype=np.int32) * 7
    k = np.array([[4, 0], [2, 2]], np.int64)
    assert np.array_equal(mod.take(t, k), t[k])
    m = np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::-1]
    i, j = np.array([[0], [3]]), np.array([1, 4, 0])
    assert np.array_equal(mod.at2(m, i, j), m[i, j])
    assert np.array_equal(mod.coords(out=np.empty((3, 4), np.int64)), np.indices((3, 4))[0] * 10 + np.indices((3, 4))[1])


def test_explicit_shape(mod):
    """shape=: the iteration space of a kernel whose tensors are all raw."""
    x = np.arange(12, dtype=np.float32) ** 2
    assert np.array_equal(np.asarray(mod.stencil(x, shape=(12,))), _stencil_ref(x))
    c = np.asarray(mod.coords(shape=(2, 3)))
    assert np.array_equal(c, np.indices((2, 3))[0] * 10 + np.indices((2, 3))[1])
    with pytest.raises(nnk.ShapeError, match="the iteration shape given, \\(5,\\), is not the arguments' \\(2,\\)"):
        mod.take(np.ones(3, np.float32), np.zeros(2, np.int64), shape=(5,))
    # the messages name Python's keywords, not the C API's functions
    # (they named nnk_args_out and nnk_args_shape)
    for f in (lambda: mod.stencil(x), lambda: mod.coords(),
              lambda: nnk.jiterator._create_jit_fn("elementwise r(raw x: f32[]) -> (y: f32[]) { y = x[idx]; }")(x)):
        with pytest.raises(nnk.ArgumentError, match=r"pass its outputs \(out=\) or its shape \(shape=\)$") as e:
            f()
        assert "nnk_" not in str(e.value)
    with pytest.raises(nnk.ShapeError, match="^shape=: negative extent -1 in dimension 1$"):
        mod.coords(shape=(2, -1))
    # a product past INT64_MAX is a ShapeError (it was "too large an extent"
    # 2^40, an ArgumentError); a zero extent counts as 1, as in the strides,
    # whose bytes overflowed for (0, 2^62 + 5) (UBSan in the Python module)
    for big in [(2 ** 40, 2 ** 40), (2 ** 62, 4), (3, 2 ** 62), (2 ** 32,) * 3]:
        with pytest.raises(nnk.ShapeError, match="more than INT64_MAX elements"):
            mod.coords(shape=big)
    assert mod.coords(shape=(0, 2 ** 40)).shape == (0, 2 ** 40)
    for big in [(0, 2 ** 62 + 5), (2 ** 62, 0, 4)]:
        with pytest.raises(nnk.ShapeError, match="too many elements|more than INT64_MAX elements"):
            mod.coords(shape=big)
        with pytest.raises(nnk.ShapeError, match="too many elements"):
            nnk.empty(big)
    # a parameter named shape takes its argument, as before shape= existed
    sh = nnk.compile("elementwise f(shape: f32[]) -> (y: f32[]) { y = shape * 2; }")
    assert np.array_equal(sh.f(shape=np.ones(3, np.float32)), np.full(3, 2))


def test_range_errors_name_kernel_parameter_index(mod):
    t = np.arange(5, dtype=np.float64)
    with pytest.raises(nnk.RangeError, match=r"kernel 'take': flat index 5 of raw parameter 'table' is out of range \[0, 5\)"):
        mod.take(t, np.array([0, 5], np.int64))
    with pytest.raises(IndexError):   # a RangeError is an IndexError
        mod.take(t, np.array([-1], np.int64))
    with pytest.raises(nnk.RangeError, match="index 4 of raw parameter 'm' is out of range \\[0, 4\\) in dimension 0"):
        mod.at2(np.zeros((4, 5), np.float32), np.array([4]), np.array([0]))
    with pytest.raises(nnk.RangeError, match="'m' has 1 dimension but is indexed with 2"):
        mod.at2(np.zeros(5, np.float32), np.array([0]), np.array([0]))
    with pytest.raises(nnk.RangeError, match="index\\(1\\) of an iteration space of 1 dimensions"):
        mod.coords(out=np.empty(3, np.int64))
    with pytest.raises(nnk.RangeError):
        mod.take(np.zeros(0, np.float32), np.array([0], np.int64))   # an empty table: nothing to read


def test_output_over_raw_input_reads_a_copy(mod):
    """y = stencil(x, out=x): every element reads the original x (numpy's
    rule: the input that an output overlaps is copied first)."""
    x = np.arange(10, dtype=np.float32) ** 2
    want = _stencil_ref(x)
    mod.stencil(x, out=x)
    assert np.array_equal(x, want)


def test_raw_jiterator():
    fn = nnk.jiterator._create_jit_fn("elementwise rev(raw x: f32[], k: i64[]) -> (y: f32[]) { y = x[shape(x, 0) - 1 - k]; }")
    x = np.arange(6, dtype=np.float32)
    assert np.array_equal(fn(x, np.arange(6)), x[::-1])


def test_raw_in_every_reduction_path():
    """mm_raw (samples/indexed) where the runtime splits the reduced range
    over chunks (a long K, few outputs), reduces columns (axis 0) and runs
    a slice per output: the same sums as the broadcast-product kernel."""
    import os
    m = nnk.load(os.path.join(os.path.dirname(__file__), "..", "..", "samples", "indexed", "indexed.nnk"))
    rng = np.random.default_rng(5)
    for (M, K, N) in ((2, 70000, 3), (300, 5, 200), (1, 1, 1)):
        a, b = rng.random((M, K)), rng.random((K, N))
        c = m.mm_raw(a, b, np.broadcast_to(0.0, (M, K, N)), axis=1)
        assert np.array_equal(c, m.mm(a[:, :, None], b[None], axis=1))
        assert np.abs(c - a @ b).max() < 1e-9 * K
    col = nnk.compile("reduction colsum(raw m: f64[], w: f64[]) -> (r: f64) { r = sum(m[index(0), index(1)] * w); }")
    x = rng.random((1000, 37))
    assert np.allclose(col.colsum(x, np.ones((1000, 37)), axis=0), x.sum(0), rtol=1e-13)
    assert np.allclose(col.colsum(x, np.ones((1000, 37)), axis=1), x.sum(1), rtol=1e-13)
