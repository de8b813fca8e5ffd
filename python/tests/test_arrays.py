"""nnk.Array, nnk.asarray, the buffer protocol and DLPack both ways."""
import array

import numpy as np
import pytest

import nnk


class DLPackOnly:
    """A producer with __dlpack__ only (as torch or jax arrays look to nnk);
    numpy 1.24's __dlpack__ takes no max_version: the pre-1.0 path."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_asarray_zero_copy():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nnk.asarray(x)
    assert isinstance(a, nnk.Array)
    assert a.shape == (3, 4) and a.dtype == "float32" and a.strides == (16, 4)
    assert a.ndim == 2 and a.size == 12 and a.itemsize == 4 and a.nbytes == 48 and len(a) == 3
    assert a.device == "host" and not a.readonly and "float32" in repr(a)
    v = a.numpy()
    assert np.shares_memory(v, x)
    x[0, 0] = 42
    assert v[0, 0] == 42
    t = nnk.asarray(x.T[1:])
    assert t.shape == (3, 3) and t.strides == (4, 16)
    np.testing.assert_array_equal(t.numpy(), x.T[1:])
    assert nnk.asarray(a) is a
    assert nnk.asarray(a, ctx="cpu") is a


def test_asarray_copies_and_conversions():
    x = np.arange(4, dtype=np.float64)
    h = nnk.asarray(x, dtype="float16")
    assert h.dtype == "float16" and not np.shares_memory(h.numpy(), x)
    np.testing.assert_array_equal(h.numpy(), x)
    assert nnk.asarray(x, dtype=np.float32).dtype == "float32"
    assert nnk.asarray(x, dtype=float).dtype == "float64"
    assert nnk.asarray(x, dtype="f32").dtype == "float32"
    assert nnk.asarray([1, 2, 3]).dtype == "int64"
    assert nnk.asarray(2.5).shape == ()
    with pytest.raises(nnk.DTypeError):
        nnk.asarray(x, dtype="float128")


def test_to_and_numpy():
    a = nnk.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    b = a.to("cpu", dtype="float32")
    assert b.device == "cpu:0" and b.dtype == "float32"
    np.testing.assert_array_equal(b.numpy(), [[0, 1, 2], [3, 4, 5]])
    c = a.to()
    assert c.dtype == "int32" and not np.shares_memory(c.numpy(), a.numpy())
    z = nnk.zeros((2, 2), dtype="bfloat16")
    assert z.dtype == "bfloat16"
    assert z.numpy().dtype == np.float32      # numpy has no bfloat16: a float32 copy
    with pytest.raises(BufferError):
        memoryview(z)
    e = nnk.empty(3, dtype="uint8")
    assert e.shape == (3,) and e.dtype == "uint8"
    for name in nnk.dtypes:
        if name != "bfloat16":    # numpy's scalar types come back, not look-alikes (np.longlong for int64)
            assert nnk.zeros(2, dtype=name).numpy().dtype.type is np.dtype(name).type, name


def test_numpy_results_keep_memory_alive(add):
    x = np.arange(1000, dtype=np.float32)
    y = add(x, x)
    base = y.base
    while not isinstance(base, nnk.Array):
        base = base.obj if isinstance(base, memoryview) else base.base
    assert base.device == "cpu:0"
    del base
    import gc
    gc.collect()
    np.testing.assert_array_equal(y, 2 * x)


def test_buffer_protocol_inputs(add):
    f = array.array("f", [1, 2, 3])
    r = add(f, f)
    assert isinstance(r, nnk.Array)
    assert memoryview(r).tolist() == [2, 4, 6]
    m = memoryview(np.ones(4, np.float64))
    np.testing.assert_array_equal(np.asarray(add(m, m)), [2, 2, 2, 2])
    out = array.array("f", [0, 0, 0])
    assert add(f, f, out=out) is out and out.tolist() == [2, 4, 6]


def test_dlpack_export():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nnk.asarray(x)
    assert a.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(a)
    assert np.shares_memory(x, y) and y.shape == (2, 3)
    cap = a.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    cap = a.__dlpack__()
    assert "dltensor" in repr(cap) and "versioned" not in repr(cap)
    del cap                                    # never consumed: the destructor frees it
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(2, 0))
    t = nnk.asarray(x.T)
    np.testing.assert_array_equal(np.from_dlpack(t), x.T)


def test_dlpack_import(add):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    src = nnk.asarray(x)
    a = nnk.asarray(DLPackOnly(src))
    assert np.shares_memory(a.numpy(), x)
    r = add(DLPackOnly(src), DLPackOnly(src))
    assert isinstance(r, nnk.Array)
    np.testing.assert_array_equal(r.numpy(), 2 * x)
    # numpy's own __dlpack__ (unversioned capsule, no max_version keyword)
    r2 = add(DLPackOnly(x), x)
    assert isinstance(r2, np.ndarray)
    np.testing.assert_array_equal(r2, 2 * x)
    t = x.T
    np.testing.assert_array_equal(nnk.asarray(DLPackOnly(t)).numpy(), t)
    out = nnk.empty((2, 3), dtype="float32")
    assert add(src, src, out=DLPackOnly(out)).a is out
    np.testing.assert_array_equal(out.numpy(), 2 * x)


def test_readonly_arrays(add):
    x = np.ones(3, np.float32)
    x.setflags(write=False)
    a = nnk.asarray(x)
    assert a.readonly
    with pytest.raises(BufferError):
        a.__dlpack__()                       # the classic capsule cannot say read-only
    assert "versioned" in repr(a.__dlpack__(max_version=(1, 0)))
    assert not a.to().readonly and "dltensor" in repr(a.to().__dlpack__())   # a copy is writable
    mv = memoryview(a)
    assert mv.readonly
    with pytest.raises(TypeError):
        mv[0] = 1
    np.testing.assert_array_equal(add(a, a).numpy(), [2, 2, 2])
    with pytest.raises(nnk.ArgumentError):
        add(x, x, out=a)
    with pytest.raises(nnk.ArgumentError):
        add(x, x, out=DLPackOnly(a))


def test_numpy_paths_agree(add, tmp_path):
    """numpy arrays go through numpy's C API table and struct heads when they
    check out, else through the buffer protocol and numpy.asarray
    (NNK_PY_NUMPY_API=0): both give the same results, read-only flags, views."""
    import os
    import subprocess
    import sys
    from conftest import ADD
    script = tmp_path / "paths.py"
    script.write_text(f"""
import numpy as np, nnk
add = nnk.jiterator._create_jit_fn({ADD!r})
x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
ro = np.ones((3, 2), np.float32); ro.setflags(write=False)
z = add(x, ro, alpha=2.0)
assert type(z) is np.ndarray and z.flags.writeable and z.dtype == np.float32, z
np.testing.assert_array_equal(z, x + 2)
try:
    add(x, x, out=ro)
except nnk.ArgumentError:
    pass
else:
    raise SystemExit("read-only out accepted")
h = add(x.astype(np.float16), x.astype(np.int64))
assert h.dtype == np.float16
for name in nnk.dtypes:
    if name != "bfloat16":
        assert nnk.zeros(2, dtype=name).numpy().dtype.type is np.dtype(name).type, name
print("ok", nnk._nnk._numpy_fast_paths())
""")
    for flag in ("1", "0"):
        env = dict(os.environ, NNK_PY_NUMPY_API=flag)
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.startswith("ok"), (flag, r.stdout, r.stderr)
        assert r.stdout.split(None, 1)[1].strip() == ("(True, True)" if flag == "1" else "(False, False)"), r.stdout


def test_buffer_requests():
    """The buffer protocol honours contiguity requests (a consumer asking for
    C-contiguous memory never gets a strided view it would read past)."""
    import ctypes

    class Py_buffer(ctypes.Structure):
        _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
                    ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                    ("format", ctypes.c_char_p), ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                    ("strides", ctypes.POINTER(ctypes.c_ssize_t)), ("suboffsets", ctypes.c_void_p),
                    ("internal", ctypes.c_void_p)]

    get = ctypes.pythonapi.PyObject_GetBuffer
    get.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
    release = ctypes.pythonapi.PyBuffer_Release
    release.argtypes = [ctypes.POINTER(Py_buffer)]
    SIMPLE, WRITABLE, ND, STRIDES = 0, 1, 8, 0x18
    C, F, ANY = 0x20 | STRIDES, 0x40 | STRIDES, 0x80 | STRIDES
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    dense, strided = nnk.asarray(x), nnk.asarray(x[:, ::2])
    for arr, flags, ok in [(dense, SIMPLE, True), (dense, ND, True), (dense, C, True), (dense, ANY, True),
                           (dense, F, False), (strided, STRIDES, True), (strided, SIMPLE, False),
                           (strided, ND, False), (strided, C, False), (strided, F, False), (strided, ANY, False),
                           (nnk.asarray(x[:1]), F, True)]:
        b = Py_buffer()
        if ok:
            assert get(arr, ctypes.byref(b), flags) == 0
            assert b.len == arr.nbytes and (flags & ND) == 0 or b.ndim == arr.ndim
            release(ctypes.byref(b))
        else:
            with pytest.raises(BufferError):
                get(arr, ctypes.byref(b), flags)
    ro = nnk.asarray(np.ones(2, np.float32).view())
    ro_np = np.ones(2, np.float32)
    ro_np.setflags(write=False)
    with pytest.raises(BufferError):
        get(nnk.asarray(ro_np), ctypes.byref(Py_buffer()), WRITABLE)
    b = Py_buffer()
    assert get(ro, ctypes.byref(b), WRITABLE) == 0
    release(ctypes.byref(b))


def test_python_numbers_of_arrays():
    """float(), int(), bool(), complex(), operator.index(), .item() and
    .tolist() of an nnk.Array are numpy's (a reduction's result with torch or
    nnk inputs is an nnk.Array: float(r) is the usual way out).  float() and
    int() used to read the buffer protocol's bytes as text: a ValueError for
    most values, and 12 for a uint8 array holding the bytes of '12'."""
    import operator
    for dt in ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int64", "uint64", "bool", "complex64"):
        ref = np.array(3, "float32").astype(dt if dt != "bfloat16" else "float32")
        a = nnk.asarray(np.array(3, "float32")).to(dtype=dt)
        assert a.item() == ref.item() and a.tolist() == ref.tolist()
        assert bool(a) is True and complex(a) == complex(ref)
        if dt != "complex64":
            assert float(a) == float(ref) and int(a) == int(ref)
        if dt.startswith(("int", "uint")):
            assert operator.index(a) == 3
    digits = nnk.asarray(np.frombuffer(b"12", np.uint8))
    with pytest.raises(TypeError):
        int(digits)              # two elements: numpy's error, not int(b"12")
    with pytest.raises(ValueError):
        bool(digits)
    assert digits.tolist() == [49, 50]
    assert float(nnk.asarray(np.array([2.5], np.float32))) == 2.5
    assert bool(nnk.zeros((1,))) is False
    with pytest.raises(TypeError):
        operator.index(nnk.asarray(np.array(1.5, np.float32)))
    m = nnk.compile("reduction total(x: f32[]) -> (s: f32) { s = sum(x); }")
    assert float(m.total(nnk.asarray(np.arange(4, dtype=np.float32)))) == 6.0
