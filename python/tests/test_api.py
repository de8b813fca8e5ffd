"""ext_utils, contexts, jiterator functions, modules and reductions."""
import os

import numpy as np
import pytest

import nnk
from nnk import ext_utils


def test_list_and_import_extension():
    names = ext_utils.list_extensions()
    assert names[0] == "cpu" and len(set(names)) == len(names)
    ext = ext_utils.import_extension_module("cpu")
    assert ext is ext_utils.import_extension_module("cpu")
    assert ext.name == "cpu" and ext.status == ""
    assert ext.get_device_count() == 1
    devs = ext.get_devices()
    assert devs == ["0"] and devs[0].id == 0 and devs[0].host_accessible and "cpu" in devs[0].name
    ext.device_synchronize(0)
    ext.device_synchronize("0")
    ext.device_synchronize()
    assert isinstance(ext.clear_memory_cache(), int)
    st = ext.memory_stats(0)
    assert set(st) == {"bytes_in_use", "bytes_cached", "peak_bytes_in_use", "hits", "misses", "retries"}
    ctx = ext.context(device_id=0)
    assert ctx.backend == ["cpu:float"] and ctx.device_id == "0" and ctx.type_config == "float"


def test_import_missing_extension():
    with pytest.raises(nnk.NotFoundError) as e:
        ext_utils.import_extension_module("nosuchext")
    assert "nosuchext" in str(e.value) and e.value.status == "NNK_ENOTFOUND"


def test_get_extension_context():
    ctx = ext_utils.get_extension_context("cpu", device_id="0", type_config="half")
    assert ctx.backend == ["cpu:half", "cpu:float"] and ctx.type_config == "half"
    assert str(ctx) == "backends=[cpu:half, cpu:float] device_id=0 type_config=half"
    assert ctx == ext_utils.get_extension_context("cpu", type_config="half")
    assert ctx != ext_utils.get_extension_context("cpu")
    dev = ext_utils.import_extension_module("cpu").get_devices()[0]
    assert ext_utils.get_extension_context("cpu", device_id=dev).device_id == "0"
    # (device_id=1, past cpu's one device, is the error of the context's
    # first use, as NNabla's: test_context_lazy.py)
    for bad in ({"colour": "red"}, {"device_id": -1}, {"type_config": "quarter"}, {"device_id": "0 1"},
                {"device_id": "0,type_config=half"}, {"device_id": [0]}):
        with pytest.raises(nnk.ArgumentError):
            ext_utils.get_extension_context("cpu", **bad)


def test_default_context_and_scope():
    base = nnk.get_current_context()
    half = ext_utils.get_extension_context("cpu", type_config="half")
    with nnk.context_scope(half) as c:
        assert c is half and nnk.get_current_context() == half
        assert nnk.empty((3,)).dtype == "float16"
        assert nnk.zeros((2,)).numpy().tolist() == [0, 0]
    assert nnk.get_current_context() == base
    with pytest.raises(RuntimeError):
        with nnk.context_scope(half):
            raise RuntimeError("out")
    assert nnk.get_current_context() == base
    nnk.set_default_context(half)
    try:
        assert nnk.get_current_context().type_config == "half"
    finally:
        nnk.set_default_context(base)
    with pytest.raises(nnk.ArgumentError):
        nnk.set_default_context("cpu")


def test_jit_fn_numpy(add):
    x = np.arange(6, dtype=np.float32)
    y = np.full(6, 0.5, np.float32)
    z = add(x, y)
    assert type(z) is np.ndarray and z.dtype == np.float32
    np.testing.assert_array_equal(z, x + y)
    np.testing.assert_array_equal(add(x, y, alpha=4.0), x + 4 * y)
    np.testing.assert_array_equal(add(x, y=y, alpha=2), x + 2 * y)
    assert add(x, 2.0).tolist() == (x + 2).tolist()              # a weak 0-d operand (test_python_scalars.py)
    np.testing.assert_array_equal(add(x, y, np.float32(3)), x + 3 * y)
    out = np.empty(6, np.float32)
    r = add(x, y, out=out)
    assert r is out
    np.testing.assert_array_equal(out, x + y)
    assert add.name == "add" and add.num_inputs == 3 and add.num_outputs == 1 and not add.is_reduction
    assert add.cache_size >= 1 and "add" in repr(add)


def test_jit_fn_defaults_from_creator():
    f = nnk.jiterator._create_jit_fn(
        "elementwise axpb(x: f32[], a: f32 = 1, b: f32 = 0) -> (y: f32[]) { y = a * x + b; }", a=3.0, b=1)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(f(x), 3 * x + 1)
    np.testing.assert_array_equal(f(x, b=-1.0), 3 * x - 1)
    with pytest.raises(nnk.ArgumentError):
        nnk.jiterator._create_jit_fn("elementwise k(x: f32[]) -> (y: f32[]) { y = x; }", nosuch=1.0)


INT_SCALAR_TYPES = ("i8", "i32", "i64", "u8", "u32", "u64", "f64")
INT_SCALAR_KERNEL = "elementwise ints(x: f32[], %s) -> (%s) { %s }" % (
    ", ".join("p%s: %s = 0" % (t, t) for t in INT_SCALAR_TYPES),
    ", ".join("o%s: %s[]" % (t, t) for t in INT_SCALAR_TYPES),
    " ".join("o%s = p%s;" % (t, t) for t in INT_SCALAR_TYPES))


def _c_conversion(value, t):
    """value as C converts an integer of the int64/uint64 ranges to t."""
    if t == "f64":
        return float(value)
    bits = int(t[1:])
    v = value % (1 << bits)
    return v - (1 << bits) if t[0] == "i" and v >= 1 << (bits - 1) else v


def _fits(value, t):
    if t == "f64":
        return True
    bits = int(t[1:])
    return (-(1 << (bits - 1)) <= value < 1 << (bits - 1)) if t[0] == "i" else 0 <= value < 1 << bits


@pytest.mark.parametrize("mode", ["create", "call"])
def test_integer_scalars_of_the_uint64_range(mode):
    """Every integer of the int64 and uint64 ranges is a scalar argument (a u64
    mask 2**64 - 1 at a call was refused as outside the int64 range, and at
    _create_jit_fn became a float); one its parameter's integer type holds
    keeps its value, another is nnk.IntegerOverflowError (an OverflowError,
    numpy 2's "Python integer 300 out of bounds for uint8"; it wrapped as C
    converts), at the call also for a creator's default; f64 takes them all;
    one outside both ranges is an IntegerOverflowError either way."""
    x = np.zeros(1, np.float32)
    plain = nnk.jiterator._create_jit_fn(INT_SCALAR_KERNEL)
    for value in (0, -1, 5, 2 ** 31, -2 ** 31 - 1, 2 ** 63 - 1, -2 ** 63, 2 ** 63, 2 ** 63 + 1, 2 ** 64 - 1,
                  np.uint64(2 ** 64 - 1), np.uint64(2 ** 63 + 7)):
        fits = [t for t in INT_SCALAR_TYPES if _fits(int(value), t)]
        kw = {"p" + t: value for t in fits}
        outs = nnk.jiterator._create_jit_fn(INT_SCALAR_KERNEL, **kw)(x) if mode == "create" else plain(x, **kw)
        for t, o in zip(INT_SCALAR_TYPES, outs):
            assert o.tolist() == [_c_conversion(int(value), t) if t in fits else 0], (t, value, o)
            assert t not in fits or _c_conversion(int(value), t) == (float(value) if t == "f64" else int(value))
        for t in set(INT_SCALAR_TYPES) - set(fits):
            with pytest.raises(OverflowError, match="integer %d out of bounds for %s \\(parameter 'p%s'\\)"
                               % (int(value), t, t)) as e:
                if mode == "create":
                    nnk.jiterator._create_jit_fn(INT_SCALAR_KERNEL, **{"p" + t: value})(x)
                else:
                    plain(x, **{"p" + t: value})
            assert isinstance(e.value, nnk.IntegerOverflowError) and e.value.status == "NNK_EOVERFLOW"
    for value in (2 ** 64, -2 ** 63 - 1, 2 ** 100):
        with pytest.raises(nnk.IntegerOverflowError, match="int64 and uint64 ranges"):
            if mode == "create":
                nnk.jiterator._create_jit_fn(INT_SCALAR_KERNEL, pu64=value)
            else:
                plain(x, pu64=value)


def test_jit_fn_storage_dtypes(add):
    x = np.arange(8, dtype=np.float16)
    z = add(x, x, alpha=2.0)
    assert z.dtype == np.float16
    np.testing.assert_array_equal(z, x * 3)
    buf = np.empty(8, np.float32)
    assert add(x, x, out=buf) is buf
    np.testing.assert_array_equal(buf, x.astype(np.float32) * 2)


def test_multi_output(two):
    x = np.arange(5, dtype=np.float32)
    a, b = two(x)
    np.testing.assert_array_equal(a, x + 1)
    np.testing.assert_array_equal(b, x * 2)
    oa = np.empty(5, np.float32)
    ra, rb = two(x, out=(oa,))
    assert ra is oa
    np.testing.assert_array_equal(rb, x * 2)
    with pytest.raises(nnk.ArgumentError):
        nnk.jiterator._create_multi_output_jit_fn("elementwise k(x: f32[]) -> (y: f32[]) { y = x; }", num_outputs=2)
    with pytest.raises(nnk.ArgumentError):
        nnk.jiterator._create_multi_output_jit_fn("elementwise k(x: f32[]) -> (y: f32[]) { y = x; }", num_outputs=0)
    one = nnk.jiterator._create_multi_output_jit_fn(
        "elementwise k(x: f32[]) -> (y: f32[]) { y = x; }", num_outputs=1)
    assert isinstance(one(x), tuple)


def test_kernel_choice():
    src = ("elementwise neg(x: f32[]) -> (y: f32[]) { y = -x; }\n"
           "elementwise dbl(x: f32[]) -> (y: f32[]) { y = 2 * x; }\n")
    with pytest.raises(nnk.ArgumentError):
        nnk.jiterator._create_jit_fn(src)
    f = nnk.jiterator._create_jit_fn(src, kernel="dbl")
    assert f.name == "dbl"
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [2, 2, 2])



def test_type_arguments_by_dtype():
    """dtype= binds type variables that no array input binds (a T of scalars
    only took the context's type_config: k<i32> could not be called),
    whatever the arrays' dtypes (read in their own): a dtype for the only
    variable, a tuple in declaration order (None: from the arguments), a
    dict by name; out= binds a variable of outputs only (runtime.md)."""
    src = ("elementwise fill<T: int>(a: T, x: f32[]) -> (y: f32[]) { y = x + f32(a % T(100)); }\n"
           "elementwise cast<T: any, U: any>(x: T[], s: U = 3) -> (y: U[]) { y = U(x) * s; }\n")
    m = nnk.compile(src, name="targs.nnk")
    x = np.zeros(3, np.float32)
    # 2**32 + 5 is 4294967301 in i64 and out of bounds for i32 (numpy 2's
    # OverflowError: test_python_scalars.py); 249 is out of bounds for i8
    np.testing.assert_array_equal(m.fill(2 ** 31 - 1, x, dtype=np.int32), [47, 47, 47])
    np.testing.assert_array_equal(m.fill(2 ** 32 + 5, x, dtype="i64"), [1, 1, 1])
    np.testing.assert_array_equal(m.fill(-7, x, dtype="i8"), [-7] * 3)
    with pytest.raises(nnk.IntegerOverflowError, match="integer 4294967301 out of bounds for i32"):
        m.fill(2 ** 32 + 5, x, dtype=np.int32)
    with pytest.raises(nnk.IntegerOverflowError, match="integer 249 out of bounds for i8"):
        m.fill(249, x, dtype="i8")
    f = nnk.jiterator._create_jit_fn(src, kernel="fill")
    np.testing.assert_array_equal(f(2 ** 31 - 1, x, dtype="int32"), [47, 47, 47])
    assert f.cache_size == 1
    xi = np.arange(4, dtype=np.int16)
    y = m.cast(xi, 1.5, dtype={"U": "float32"})
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, xi * 1.5)
    y = m.cast(xi, 1.5, dtype=(None, np.float64))
    assert y.dtype == np.float64
    # T given: the int16 array is read as it is, computed as f32
    y = m.cast(xi, dtype=("float32", "int8"))
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, xi * 3)
    # out= binds U (its dtype)
    buf = np.empty(4, np.float16)
    assert m.cast(xi, 0.5, out=buf) is buf
    np.testing.assert_array_equal(buf, xi * np.float16(0.5))
    with pytest.raises(nnk.ArgumentError, match="2 type variables"):
        m.cast(xi, dtype="float32")
    with pytest.raises(nnk.ArgumentError, match="no type variable 'V'"):
        m.cast(xi, dtype={"V": "float32"})
    with pytest.raises(nnk.ArgumentError, match="no type variable 2"):
        m.cast(xi, dtype=(None, None, "f32"))
    with pytest.raises(nnk.DTypeError, match="type variable T must be int"):
        m.fill(1, x, dtype=np.float32)
    with pytest.raises(nnk.DTypeError):
        m.fill(1, x, dtype="quarter")
    # a parameter named dtype takes its argument
    k = nnk.compile("elementwise k(x: f32[], dtype: f32 = 1) -> (y: f32[]) { y = x + dtype; }").k
    np.testing.assert_array_equal(k(x, dtype=2.0), [2, 2, 2])

def test_layouts(add):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for x in (base[:, ::2], base[1:, 1:], base.T, base[::-1], base[..., None][:, 3]):
        np.testing.assert_array_equal(add(x, x), x + x)
    col = np.arange(3, dtype=np.float32).reshape(3, 1)
    row = np.arange(4, dtype=np.float32).reshape(1, 4)
    np.testing.assert_array_equal(add(col, row), col + row)
    zero = np.array(5, np.float32)              # 0-d: a tensor that broadcasts
    np.testing.assert_array_equal(add(base, zero), base + 5)
    empty = np.zeros((0, 3), np.float32)
    assert add(empty, empty).shape == (0, 3)


def test_module(norms, x32):
    assert norms.kernels == ("softmax", "l2norm")
    assert norms.softmax is norms["softmax"] and norms.softmax.is_reduction
    assert "softmax" in dir(norms) and "norms.nnk" in repr(norms)
    with pytest.raises(AttributeError) as e:
        norms.nosuch
    assert "softmax" in str(e.value)
    with pytest.raises(nnk.NotFoundError):
        norms["nosuch"]


def test_reductions(norms, x32):
    y = norms.softmax(x32, axis=-1)
    e = np.exp(x32 - x32.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-6)
    r = norms.l2norm(x32, axis=(0, 2), keepdims=True)
    assert r.shape == (1, 3, 1)
    np.testing.assert_allclose(r, np.sqrt((x32 ** 2).sum(axis=(0, 2), keepdims=True)), rtol=1e-6)
    np.testing.assert_allclose(norms.l2norm(x32, axis=[1]), np.sqrt((x32 ** 2).sum(1)), rtol=1e-6)
    np.testing.assert_allclose(norms.l2norm(x32), np.sqrt((x32 ** 2).sum()), rtol=1e-6)
    out = np.empty((2, 4), np.float32)
    assert norms.l2norm(x32, axis=1, out=out) is out
    np.testing.assert_allclose(out, np.sqrt((x32 ** 2).sum(1)), rtol=1e-6)
    with pytest.raises(nnk.ShapeError):
        norms.l2norm(x32, axis=3)
    with pytest.raises(nnk.ArgumentError):
        norms.l2norm(x32, axis="0")


def test_elementwise_refuses_axis(add):
    x = np.ones(3, np.float32)
    with pytest.raises(nnk.ArgumentError):
        add(x, x, axis=0)


def test_load_with_import(tmp_path):
    (tmp_path / "lib.nnk").write_text("func sq(v) = v * v;\n")
    (tmp_path / "main.nnk").write_text('import "lib.nnk";\nelementwise k(x: f32[]) -> (y: f32[]) { y = sq(x); }\n')
    m = nnk.load(tmp_path / "main.nnk")
    np.testing.assert_array_equal(m.k(np.arange(3, dtype=np.float32)), [0, 1, 4])
    assert m.name == str(tmp_path / "main.nnk")
    m2 = nnk.compile('import "lib.nnk";\nelementwise k(x: f32[]) -> (y: f32[]) { y = sq(x) + 1; }\n',
                     include_dirs=[str(tmp_path)], opt_level=1)
    np.testing.assert_array_equal(m2.k(np.arange(3, dtype=np.float32)), [1, 2, 5])
    with pytest.raises(FileNotFoundError):
        nnk.load(tmp_path / "absent.nnk")


def test_load_hostile_paths_and_files(tmp_path):
    """nnk.load of a file whose directory has a space or a comma (it was an
    ArgumentError: libnnk's option strings had no escape), a name kept as it
    is in diagnostics (spaces were '_'), a file with bytes that are not UTF-8
    in a comment (a UnicodeDecodeError; the compiler takes bytes), and what
    is not a regular file refused rather than read (a FIFO blocked, /dev/zero
    filled the memory)."""
    for dname in ("my kernels", "a,b", "back\\slash", "tab\tdir"):
        d = tmp_path / dname
        d.mkdir()
        (d / "lib.nnk").write_text("func sq(v) = v * v;\n")
        (d / "main.nnk").write_bytes(b'import "lib.nnk"; // caf\xe9\nelementwise k(x: f32[]) -> (y: f32[]) { y = sq(x); }\n')
        (d / "bad.nnk").write_text("elementwise k(x: f32[]) -> (y: f32[]) { y = q; }\n")
        m = nnk.load(d / "main.nnk")
        np.testing.assert_array_equal(m.k(np.arange(3, dtype=np.float32)), [0, 1, 4])
        m2 = nnk.compile('import "lib.nnk";\nelementwise k(x: f32[]) -> (y: f32[]) { y = sq(x) + 1; }\n',
                         include_dirs=[str(d)], name=str(d / "string, with spaces"))
        np.testing.assert_array_equal(m2.k(np.arange(3, dtype=np.float32)), [1, 2, 5])
        with pytest.raises(nnk.CompileError) as e:
            nnk.load(str(d / "bad.nnk"))
        assert e.value.diagnostics.startswith(str(d / "bad.nnk") + ":1:45: error: unknown name 'q'")
    fifo = tmp_path / "fifo.nnk"
    os.mkfifo(fifo)
    for p in (fifo, "/dev/zero", tmp_path):
        with pytest.raises(nnk.IOFailureError, match="not a regular file"):
            nnk.load(p)


def test_kernel_outlives_module(norms):
    m = nnk.compile("reduction s(x: f32[]) -> (r: f32) { r = sum(x); }")
    k = m.s
    del m
    assert k(np.ones(4, np.float32)).item() == 4


def test_per_call_context(add):
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(add(x, x, ctx=ext_utils.get_extension_context("cpu")), [2, 2, 2])
    np.testing.assert_array_equal(add(x, x, ctx="cpu"), [2, 2, 2])
    with pytest.raises(nnk.ArgumentError):
        add(x, x, ctx=3)


def test_jit_stats():
    st = nnk._nnk.jit_stats()
    assert set(st) == {"memory_hits", "disk_hits", "compiles", "corrupt_entries"}
    assert os.environ.get("NNK_CACHE_DIR") is None or st["corrupt_entries"] == 0


def test_tuple_state_reduction():
    """A reduce() with a tuple state through the runtime's JIT: Welford's
    mean and variance in one pass, value and index of the maximum."""
    m = nnk.compile("""
func wn(na, nb) = na + nb;
reduction welford(x: f32[]) -> (mean: f32, var: f32) {
    let (mu, q, c) = reduce((x, f32(0), f32(1)), (f32(0), f32(0), f32(0)), |(ma, qa, na), (mb, qb, nb)| (
        wn(na, nb) > 0 ? ma + (mb - ma) * (nb / wn(na, nb)) : ma,
        wn(na, nb) > 0 ? qa + qb + (mb - ma) * (mb - ma) * (na * (nb / wn(na, nb))) : qa,
        wn(na, nb)));
    mean = mu;
    var = q / c;
}
reduction vargmax(x: f32[]) -> (v: f32, i: i64) {
    let (bv, bi) = reduce((x, idx), (-1.0 / 0.0, -1),
                          |(va, ia), (vb, ib)| (vb > va ? vb : va, vb > va || (vb == va && ib < ia) ? ib : ia));
    v = bv;
    i = bi;
}
""")
    x = (1e4 + np.random.default_rng(7).uniform(-1, 1, (3, 5000))).astype(np.float32)
    mean, var = m.welford(x, axis=1)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean, x64.mean(1), rtol=1e-6)
    np.testing.assert_allclose(var, x64.var(1), rtol=1e-2)
    v, i = m.vargmax(x, axis=None)
    assert v == x.max() and i == np.argmax(x)


def test_mean_of_integers_is_computed_in_f64():
    """mean() of integers and bools converts each element to f64 and sums in
    f64, as numpy's mean: it summed in i64 / u64, which wraps for values near
    the type's range (six int64 nanosecond timestamps of 2026 do), and
    divided the wrapped sum."""
    mod = nnk.compile("""
    reduction means(a: i8[], b: u8[], c: i32[], d: i64[], e: u64[], f: bool[], g: u32[]) -> (
            ma: f64, mb: f64, mc: f64, md: f64, me: f64, mf: f64, mg: f64) {
        ma = mean(a); mb = mean(b); mc = mean(c); md = mean(d); me = mean(e); mf = mean(f); mg = mean(g);
    }""")
    rng = np.random.default_rng(7)
    for n in (6, 1001, 70001):
        cols = []
        for dt in (np.int8, np.uint8, np.int32, np.int64, np.uint64, np.bool_, np.uint32):
            if dt is np.bool_:
                cols.append(rng.integers(0, 2, (2, n)).astype(dt))
                continue
            info = np.iinfo(dt)
            # the upper end of the range: the sums wrap an accumulator of the type's width
            cols.append(rng.integers(info.max - info.max // 8, info.max, (2, n), dtype=dt, endpoint=True))
        cols[3][1] = 1_780_000_000_000_000_000 + np.arange(n)     # timestamps in ns
        got = mod.means(*cols, axis=1)
        for x, g in zip(cols, got):
            np.testing.assert_allclose(np.asarray(g), x.mean(axis=1), rtol=1e-12, err_msg=str(x.dtype))
