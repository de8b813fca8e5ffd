"""Errors are exceptions, and nothing a caller passes crashes the interpreter."""
import sys

import numpy as np
import pytest

import nnk

ADD_SRC = "elementwise add(x: f32[], y: f32[], alpha: f32 = 1) -> (z: f32[]) { z = x + alpha * y; }"

def test_hierarchy():
    for name, builtin in [("ArgumentError", ValueError), ("ArgumentError", TypeError), ("ShapeError", ValueError),
                          ("DTypeError", TypeError), ("OutOfMemoryError", MemoryError),
                          ("NotFoundError", LookupError), ("IOFailureError", OSError)]:
        cls = getattr(nnk, name)
        assert issubclass(cls, nnk.Error) and issubclass(cls, builtin)
    for name in ("CompileError", "DeviceError", "UnsupportedError", "ABIError", "InternalError"):
        assert issubclass(getattr(nnk, name), nnk.Error)


def test_compile_error_diagnostics():
    src = "elementwise k(x: f32[]) -> (y: f32[]) {\n    y = x + nosuch;\n}\n"
    with pytest.raises(nnk.CompileError) as e:
        nnk.compile(src, name="bad.nnk")
    d = e.value.diagnostics
    assert e.value.status == "NNK_ECOMPILE" and d == str(e.value)
    assert "bad.nnk:2:" in d and "nosuch" in d and "^" in d
    with pytest.raises(nnk.CompileError):
        nnk.jiterator._create_jit_fn("elementwise (")
    with pytest.raises(nnk.ArgumentError):
        nnk.compile("elementwise k(x: f32[]) -> (y: f32[]) { y = x; }\0")
    with pytest.raises(nnk.ArgumentError):
        nnk.compile(42)


def test_shape_errors(add, norms):
    with pytest.raises(nnk.ShapeError) as e:
        add(np.ones(3, np.float32), np.ones(4, np.float32))
    assert e.value.status == "NNK_ESHAPE"
    with pytest.raises(nnk.ShapeError):
        add(np.ones(3, np.float32), np.ones(3, np.float32), out=np.empty(4, np.float32))
    # the result's shape is the inputs' (it was padded to the output's rank: (1, 4))
    with pytest.raises(nnk.ShapeError, match=r"output 0 has shape \(3, 4\) but the result has shape \(4,\)$"):
        add(np.ones(4, np.float32), np.ones(4, np.float32), out=np.empty((3, 4), np.float32))
    with pytest.raises(nnk.ShapeError):
        nnk.asarray(np.ones((1,) * 17, np.float32))


def test_dtype_errors(add):
    x = np.ones(3, np.float32)
    for bad in (np.ones(3, np.complex64), np.ones(3, ">f4"), np.array(["a", "b"])):
        with pytest.raises((nnk.DTypeError, ValueError, BufferError)):
            add(bad, x)
    with pytest.raises(nnk.DTypeError):
        add(np.ones(3, np.int32), np.ones(3, np.int32))    # T: float cannot be i32
    with pytest.raises(nnk.DTypeError):
        add(x, x, alpha=1j)
    with pytest.raises((ValueError, TypeError, BufferError)):
        add(np.array([object()] * 3), x)


def test_generic_body_refuses_dtype():
    """A generic kernel whose body cannot take the dtype a call binds (the
    runtime instantiates it lazily) is DTypeError with the diagnostic."""
    f = nnk.jiterator._create_jit_fn("elementwise low<T>(x: T[]) -> (y: T[]) { y = x & 1; }")
    assert f(np.arange(4, dtype=np.int32)).tolist() == [0, 1, 0, 1]
    with pytest.raises(nnk.DTypeError) as e:
        f(np.ones(4, np.float32))
    assert e.value.status == "NNK_EDTYPE" and "integer" in str(e.value) and "^" in str(e.value)


def test_unsupported_layouts(add):
    raw = np.zeros(16, np.uint8)
    odd = np.ndarray((3,), dtype=np.float32, buffer=raw, offset=1, strides=(5,))
    with pytest.raises(nnk.UnsupportedError):
        add(odd, odd)
    rec = np.zeros(3, dtype=[("a", np.float32), ("b", np.int8)])
    with pytest.raises((nnk.DTypeError, ValueError, BufferError)):
        add(rec, rec)


def test_bad_arguments(add):
    x = np.ones(3, np.float32)
    for bad in ({}, "abc", None, object(), [1.0, 2.0]):
        with pytest.raises(nnk.ArgumentError):
            add(bad, x)
    with pytest.raises(nnk.ArgumentError):
        add(x)                                  # y missing
    with pytest.raises(nnk.ArgumentError):
        add(x, x, 1.0, 2.0)                     # too many
    with pytest.raises(nnk.ArgumentError):
        add(x, x, nosuch=1.0)
    with pytest.raises(nnk.IntegerOverflowError):   # (an ArgumentError too, as it was)
        add(x, x, alpha=2 ** 70)
    with pytest.raises(nnk.ArgumentError):
        add(x, x, x=x)
    with pytest.raises(nnk.ArgumentError, match="is elementwise: it takes no reduction axes \\(keepdims\\)"):
        add(x, x, keepdims=True)                # as axis=: numpy's ufuncs refuse it (it was ignored)
    add(x, x, keepdims=False)
    with pytest.raises(nnk.ArgumentError):
        add(*([x] * 100))
    # a name holding a NUL is not cut there: 'alpha\0x' named alpha, 'cpu\0x' cpu
    for call in (lambda: add(x, x, **{"alpha\0x": 5.0}), lambda: add(x, x, ctx="cpu\0x"),
                 lambda: nnk.empty((2,), dtype="float32\0x"),
                 lambda: nnk.ext_utils.get_extension_context("cpu", **{"type_config\0x": "half"}),
                 lambda: nnk.jiterator._create_jit_fn(ADD_SRC, **{"alpha\0x": 2.0})):
        with pytest.raises(nnk.ArgumentError, match="holds a NUL character"):
            call()


def test_bad_outputs(add):
    x = np.ones(3, np.float32)
    ro = np.empty(3, np.float32)
    ro.setflags(write=False)
    for bad in (ro, b"\0" * 12, memoryview(b"\0" * 12).cast("f"), 5, "abc"):
        with pytest.raises(nnk.ArgumentError):
            add(x, x, out=bad)
    with pytest.raises(nnk.ArgumentError):
        add(x, x, out=(np.empty(3, np.float32), np.empty(3, np.float32)))


def test_released_buffer(add):
    m = memoryview(np.ones(3, np.float32))
    m.release()
    with pytest.raises(nnk.ArgumentError) as e:
        add(m, m)
    assert "released" in str(e.value) and isinstance(e.value.__cause__, ValueError)
    with pytest.raises(ValueError):
        nnk.asarray(m)
    with pytest.raises(nnk.DTypeError):
        add(np.array([object()] * 3), np.ones(3, np.float32))   # format 'O'
    with pytest.raises(nnk.ArgumentError):
        add(np.ones(3, "M8[s]"), np.ones(3, np.float32))         # numpy exports no datetime buffer


def test_buffer_kept_while_used(add):
    b = bytearray(12)
    a = nnk.asarray(b)
    with pytest.raises(BufferError):
        b.extend(b"1234")                       # exported: cannot move under nnk
    del a


def test_allocation_errors():
    with pytest.raises(nnk.Error):
        nnk.empty((2 ** 40, 2 ** 30), dtype="float32")
    with pytest.raises(nnk.Error):
        nnk.empty((-1,))
    with pytest.raises((nnk.Error, OverflowError)):
        nnk.empty((2 ** 70,))


def test_exception_refcounts(add):
    x = np.ones(3, np.float32)
    before = sys.getrefcount(x)
    for _ in range(1000):
        with pytest.raises(nnk.ShapeError):
            add(x, np.ones(4, np.float32))
    assert sys.getrefcount(x) == before


class BadDLPack:
    """Producers that lie: a non-capsule, a wrong name, a raising __dlpack__,
    a device nnk cannot reach, a __dlpack_device__ of the wrong shape."""

    def __init__(self, kind):
        self.kind = kind

    def __dlpack__(self, **kw):
        if self.kind == "raise":
            raise RuntimeError("producer failed")
        if self.kind == "notcap":
            return 42
        if self.kind == "badname":
            import ctypes
            PyCapsule_New = ctypes.pythonapi.PyCapsule_New
            PyCapsule_New.restype = ctypes.py_object
            PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
            return PyCapsule_New(id(self), b"not_dltensor", None)
        return nnk.asarray(np.ones(3, np.float32)).__dlpack__(**kw)

    def __dlpack_device__(self):
        if self.kind == "cuda":
            return (2, 0)
        if self.kind == "baddev":
            return "cpu"
        return (1, 0)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_generated_arguments_never_crash(add, two, norms):
    """Random calls over a pool of hostile and valid objects: every call returns
    or raises nnk.Error (or Python's own ValueError / TypeError / BufferError /
    OverflowError for objects that refuse to export) -- never SystemError or a
    crash.  The valid arrays and numpy scalars (0-d tensors) are float32 so no
    call compiles a new instance."""
    import array
    import random

    f32 = np.arange(12, dtype=np.float32).reshape(3, 4)
    ro = f32.copy()
    ro.setflags(write=False)
    released = memoryview(bytearray(16))
    released.release()
    pool = [
        f32, f32[:, ::2], f32.T, f32[::-1, 1:], np.float32(2), np.array(3, np.float32), np.zeros((0, 4), np.float32),
        ro, np.ones(4, ">f4"), np.ones(4, np.complex64), np.array([None, 1]),
        np.zeros(2, dtype=[("a", "f4"), ("b", "i1")]), np.ones((1,) * 17, np.float32),
        memoryview(bytearray(16)).cast("f"), memoryview(bytearray(16)).cast("f").toreadonly(), released,
        array.array("f", [1, 2, 3, 4]), nnk.asarray(f32), nnk.asarray(ro), nnk.zeros((3, 4)),
        BadDLPack("ok"), BadDLPack("raise"), BadDLPack("notcap"), BadDLPack("badname"), BadDLPack("cuda"),
        BadDLPack("baddev"),
        0, 1, -1, 2 ** 63, 2 ** 80, 1.5, float("nan"), float("inf"), True, 1j, None, "x", b"", {}, [], (), [f32],
        (f32, f32), object(), np.float32(-1.0), np.complex128(1j), slice(1),
    ]
    allowed = (nnk.Error, ValueError, TypeError, BufferError, OverflowError, RuntimeError)
    rng = random.Random(17)
    calls = [
        lambda a, b, c: add(a, b),
        lambda a, b, c: add(a, b, alpha=c),
        lambda a, b, c: add(a, b, c),
        lambda a, b, c: add(a, b, out=c),
        lambda a, b, c: add(a, y=b, out=(c,)),
        lambda a, b, c: two(a, out=(b, c)),
        lambda a, b, c: norms.l2norm(a, axis=b, keepdims=c),
        lambda a, b, c: norms.softmax(a, axis=-1, out=b),
        lambda a, b, c: add(a, b, ctx=c),
        lambda a, b, c: nnk.asarray(a, ctx=b, dtype=c),
        lambda a, b, c: nnk.asarray(a).to(b, c),
        lambda a, b, c: add(**{"x": a, "y": b, "nosuch": c}),
    ]
    outcomes = {"ok": 0, "error": 0}
    compiles = nnk._nnk.jit_stats()["compiles"] + nnk._nnk.jit_stats()["disk_hits"]
    for _ in range(3000):
        f = rng.choice(calls)
        a, b, c = rng.choice(pool), rng.choice(pool), rng.choice(pool)
        try:
            f(a, b, c)
            outcomes["ok"] += 1
        except allowed as e:
            assert not isinstance(e, SystemError), e
            outcomes["error"] += 1
    new = nnk._nnk.jit_stats()["compiles"] + nnk._nnk.jit_stats()["disk_hits"] - compiles
    assert new <= 8, "%d instances compiled: keep the pool's valid arrays float32" % new
    assert outcomes["ok"] > 20 and outcomes["error"] > 1000, outcomes


@pytest.mark.parametrize("big", [2 ** 31, 2 ** 63, 2 ** 64, 2 ** 70, -2 ** 64])
def test_huge_integers_are_out_of_range(norms, big):
    """An axis or a device beyond what a C long holds is out of range, like
    axis 17 or device 5 (it was called 'not an integer'); an axis out of
    range is a ShapeError as numpy's AxisError is a ValueError."""
    x = np.ones((2, 3), np.float32)
    with pytest.raises(nnk.ShapeError, match="out of range"):
        norms.l2norm(x, axis=big)
    with pytest.raises(nnk.ShapeError, match="out of range"):
        norms.l2norm(x, axis=(0, big))
    ext = nnk.ext_utils.import_extension_module("cpu")
    for dev in (big, str(big)):
        with pytest.raises(nnk.ArgumentError, match="out of range"):
            ext.device_synchronize(dev)
        with pytest.raises(nnk.ArgumentError, match="out of range"):
            ext.memory_stats(dev)


def test_messages_name_the_python_api():
    """A device out of the extension's range names the method called, not
    the C function under it (it said nnk_extension_device_synchronize)."""
    ext = nnk.ext_utils.import_extension_module("cpu")
    with pytest.raises(nnk.ArgumentError, match="^device_synchronize: device 5 out of range: extension 'cpu' has 1 device$"):
        ext.device_synchronize(5)
    with pytest.raises(nnk.ArgumentError, match="^memory_stats: device 7 out of range"):
        ext.memory_stats(7)
