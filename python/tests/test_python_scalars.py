"""Python numbers under numpy 2's rules (NEP 50).

* An integer out of bounds for its parameter's integer type is
  nnk.IntegerOverflowError, an OverflowError as numpy's "Python integer 300
  out of bounds for uint8" (it wrapped as C converts); floats into f16/f32
  round to inf, as numpy's.
* A Python int, float, complex or bool for a tensor input is a 0-d operand
  that broadcasts (CuPy's ElementwiseKernel, jiterator and numpy's ufuncs
  take them), and weak: the arrays bind its type variable, a scalar of a
  higher kind lifts it (numpy's np.int32 array + 2.5 is float64), and
  scalars alone give bool, int64, float64 or complex128."""
import numpy as np
import pytest

import nnk

# numpy 2's NEP 50 (weak Python scalars, OverflowError); numpy 1 cast by value
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"

GENERIC = "elementwise add<T: num>(x: T[], y: T[], alpha: T = 1) -> (z: T[]) { z = x + alpha * y; }"
ANY = "elementwise pick<T: any>(x: T[], y: T[]) -> (z: T[]) { z = x; }"
FLOAT = "elementwise half_of<T: float>(x: T[]) -> (z: T[]) { z = x / 2; }"
FIXED = "elementwise fixed(x: f32[], y: u8[], b: u8 = 0) -> (z: f32[]) { z = x + y + b; }"
SCALARS = """elementwise scal(x: f32[], pi8: i8 = 0, pi16: i16 = 0, pi32: i32 = 0, pi64: i64 = 0, pu8: u8 = 0,
                            pu16: u16 = 0, pu32: u32 = 0, pu64: u64 = 0, pbool: bool = false, pf16: f16 = 0,
                            pf32: f32 = 0) -> (z: f64[]) {
    z = x + f64(pi8) + f64(pi16) + f64(pi32) + f64(pi64) + f64(pu8) + f64(pu16) + f64(pu32) + f64(pu64)
        + f64(pbool) + f64(pf16) + f64(pf32);
}"""


@pytest.fixture(scope="module")
def k():
    return {name: nnk.jiterator._create_jit_fn(src)
            for name, src in (("add", GENERIC), ("any", ANY), ("float", FLOAT), ("fixed", FIXED),
                              ("scal", SCALARS))}


INT_BOUNDS = {"i8": (-2 ** 7, 2 ** 7 - 1), "i16": (-2 ** 15, 2 ** 15 - 1), "i32": (-2 ** 31, 2 ** 31 - 1),
              "i64": (-2 ** 63, 2 ** 63 - 1), "u8": (0, 2 ** 8 - 1), "u16": (0, 2 ** 16 - 1),
              "u32": (0, 2 ** 32 - 1), "u64": (0, 2 ** 64 - 1)}


@pytest.mark.parametrize("t", sorted(INT_BOUNDS))
def test_scalar_parameter_bounds(k, t):
    x = np.zeros(1, np.float32)
    lo, hi = INT_BOUNDS[t]
    for v in (lo, hi):
        assert k["scal"](x, **{"p" + t: v}).tolist() == [float(v)]
    npname = np.dtype({"i": "int", "u": "uint"}[t[0]] + t[1:]).name
    for v in (lo - 1, hi + 1):
        if NUMPY2:
            with pytest.raises(OverflowError):       # numpy's own error for the same value
                np.asarray(0, dtype=npname) + v
        msg = ("integer %d out of bounds for %s \\(parameter 'p%s'\\)" % (v, t, t) if -2 ** 63 <= v < 2 ** 64
               else "integer %d is outside the int64 and uint64 ranges" % v)   # (past both: refused at the call)
        with pytest.raises(OverflowError, match=msg):
            k["scal"](x, **{"p" + t: v})
    with pytest.raises(nnk.IntegerOverflowError) as e:
        k["scal"](x, **{"p" + t: hi + 1})
    assert isinstance(e.value, nnk.ArgumentError) and isinstance(e.value, OverflowError)   # both, as documented
    assert e.value.status == "NNK_EOVERFLOW"


def test_the_u8_example(k):
    with pytest.raises(OverflowError, match="integer 300 out of bounds for u8"):
        k["fixed"](np.ones(2, np.float32), np.ones(2, np.uint8), 300)      # wrapped to 44 before
    with pytest.raises(OverflowError):
        nnk.jiterator._create_jit_fn(FIXED, b=300)(np.ones(2, np.float32), np.ones(2, np.uint8))  # a creator's default


def test_bool_and_floats_do_not_overflow(k):
    x = np.zeros(1, np.float32)
    assert k["scal"](x, pbool=2).tolist() == [1.0]           # bool parameters convert (bool is excluded)
    assert k["scal"](x, pu8=True).tolist() == [1.0]          # a bool fits every integer type
    assert k["scal"](x, pf16=1e10).tolist() == [float("inf")]    # numpy: np.float16(1e10) is inf
    assert k["scal"](x, pf32=-1e300).tolist() == [float("-inf")]
    with np.errstate(over="ignore"):
        assert np.float16(1e10) == np.inf and np.float32(-1e300) == -np.inf
    assert k["scal"](x, pf32=2 ** 64 - 1).tolist() == [float(np.float32(2 ** 64 - 1))]


def test_generic_scalar_parameter_bounds(k):
    u8 = np.arange(3, dtype=np.uint8)
    assert k["add"](u8, u8, alpha=255).dtype == np.uint8
    with pytest.raises(OverflowError, match="integer 256 out of bounds for u8 \\(parameter 'alpha'\\)"):
        k["add"](u8, u8, alpha=256)                          # alpha: T, T bound to u8 by the arrays
    with pytest.raises(OverflowError, match="integer -1 out of bounds for u8"):
        k["add"](u8, u8, alpha=-1)
    assert k["add"](u8.astype(np.int8), u8.astype(np.int8), alpha=-128).tolist() == [0, -127, 2]


def test_non_generic_tensor_input(k):
    x = np.arange(3, dtype=np.float32)
    z = k["fixed"](x, 2)                                     # y: u8[] given 2: a 0-d u8
    assert type(z) is np.ndarray and z.tolist() == [2, 3, 4]
    assert k["fixed"](x, y=True).tolist() == [1, 2, 3]
    assert k["fixed"](x, 2.0).tolist() == [2, 3, 4]          # converted as a scalar parameter's value
    with pytest.raises(OverflowError, match="integer 256 out of bounds for u8 \\(parameter 'y'\\)"):
        k["fixed"](x, 256)
    with pytest.raises(nnk.DTypeError, match="parameter 'y' is u8, but its argument is complex"):
        k["fixed"](x, 1j)


def test_generic_weak_binding(k):
    add = k["add"]
    f32 = np.arange(3, dtype=np.float32)
    cases = [  # (args, nnk's dtype, numpy's np.add of the same)
        ((f32, 2), np.float32), ((2, f32), np.float32), ((f32, 2.5), np.float32),
        ((f32, True), np.float32), ((f32, 1j), np.complex64),
        ((f32.astype(np.float64), 1j), np.complex128), ((f32.astype(np.float16), 1j), np.complex64),
        ((f32.astype(np.int32), 2.5), np.float64), ((f32.astype(np.int32), 2), np.int32),
        ((f32.astype(np.uint8), 1j), np.complex128), ((f32.astype(np.int16), 7), np.int16),
    ]
    for args, want in cases:
        z = add(*args)
        assert z.dtype == want, (args, z.dtype)
        assert not NUMPY2 or np.add(*args).dtype == want
        np.testing.assert_array_equal(z, np.add(*args).astype(want))
    assert add(np.ones(2, np.bool_).astype(np.int8), 3).dtype == np.int8


def test_weak_integer_bounds_for_tensor_inputs(k):
    u8 = np.arange(3, dtype=np.uint8)
    for v in (256, -1, 2 ** 63):
        if NUMPY2:
            with pytest.raises(OverflowError):
                np.add(u8, v)                                # numpy 2 refuses the same
        with pytest.raises(OverflowError, match="out of bounds for u8 \\(parameter 'y'\\)"):
            k["add"](u8, v)
    assert k["add"](u8, 255).tolist() == [255, 0, 1]         # in bounds: the u8 sum wraps, as numpy's
    i64 = np.arange(2, dtype=np.int64)
    with pytest.raises(OverflowError, match="integer 9223372036854775808 out of bounds for i64"):
        k["add"](i64, 2 ** 63)
    with pytest.raises(OverflowError, match="int64 and uint64 ranges"):
        k["add"](i64, 2 ** 64)


def test_all_scalar_inputs(k):
    add = k["add"]
    cases = [((1, 2), "int64", 3), ((1, 2.5), "float64", 3.5), ((1j, 2), "complex128", 2 + 1j),
             ((2 ** 63, 1), "uint64", 2 ** 63 + 1), ((1.5, 2.5), "float64", 4.0)]
    for args, dt, v in cases:
        z = add(*args)
        assert isinstance(z, nnk.Array) and z.shape == () and z.dtype == dt and z.item() == v, (args, z)
        assert not NUMPY2 or np.add(*args).dtype.name == dt   # numpy's type for the same call
    b = k["any"](True, False)                                # a class with bool: numpy's bool
    assert b.dtype == "bool" and b.item() is True
    assert add(True, True).dtype == "int64"                  # num has no bool: the next kind
    h = k["float"](3)                                        # float class, an int alone: float64 (np.sin(2))
    assert h.dtype == "float64" and h.item() == 1.5
    with pytest.raises(OverflowError, match="out of bounds for u64"):
        add(2 ** 63, -1)                                     # numpy 2 refuses it too
    if NUMPY2:
        with pytest.raises(OverflowError):
            np.add(2 ** 63, -1)


def test_out_given(k):
    add = k["add"]
    out = np.empty((), np.float32)
    assert add(1, 2.5, out=out) is out and out.item() == 3.5    # the output binds T: f32
    out = np.empty(3, np.float64)
    assert add(np.arange(3, dtype=np.float32), 1, out=out) is out
    assert out.tolist() == [1, 2, 3]
    out8 = np.empty(3, np.uint8)
    assert add(1, np.arange(3, dtype=np.uint8), out=out8) is out8 and out8.tolist() == [1, 2, 3]
    with pytest.raises(OverflowError, match="integer 300 out of bounds for u8"):
        add(300, 1, out=np.empty((), np.uint8))              # the output's u8 bounds the scalars
    with pytest.raises(OverflowError):
        add(np.arange(3, dtype=np.uint8), 300, out=np.empty(3, np.uint8))


def test_broadcast_and_reduction(k):
    norms = nnk.compile("reduction wsum<T: float>(x: T[], w: T[]) -> (r: T) { r = sum(x * w); }")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = norms.wsum(x, 2, axis=1)                             # the 0-d operand broadcasts
    assert r.dtype == np.float32 and r.tolist() == [6, 24]
    assert norms.wsum(x, 0.5).item() == 7.5


def test_inout_and_raw_take_arrays():
    m = nnk.compile("elementwise acc(inout a: f32[], x: f32[]) { a = a + x; }")
    a = np.zeros(3, np.float32)
    assert m.acc(a, 2) is a and a.tolist() == [2, 2, 2]      # x weak; the inout one needs an array
    with pytest.raises(nnk.ArgumentError):
        m.acc(1.0, a)


def test_numpy_scalars_stay_typed(k):
    x = np.arange(3, dtype=np.float32)
    assert k["add"](x, np.float64(1)).dtype == np.float64    # np.float64 is a Python float subclass, not weak
    assert k["add"](x, np.complex128(1j)).dtype == np.complex128
    assert k["add"](x, 1.0).dtype == np.float32


def test_explicit_type_argument_binds_before_the_scalars(k):
    add = k["add"]
    z = add(1, 2.5, dtype="float32")                         # dtype= binds T: the scalars convert into it
    assert z.dtype == "float32" and z.item() == 3.5
    assert add(np.arange(3, dtype=np.int32), 2.5, dtype="float16").dtype == np.float16
    assert add(1, 2, dtype="uint8").item() == 3
    with pytest.raises(OverflowError, match="integer 300 out of bounds for u8"):
        add(300, 1, dtype="uint8")
