"""Errors are exceptions, and nothing a caller passes crashes the interpreter."""
import sys

import numpy as np
import pytest

import nnk


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
    with pytest.raises(nnk.ArgumentError):
        add(x, x, alpha=2 ** 70)
    with pytest.raises(nnk.ArgumentError):
        add(x, x, x=x)
    with pytest.raises(nnk.ArgumentError):
        add(*([x] * 100))


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
    with pytest.raises(ValueError):
        add(m, m)
    with pytest.raises(ValueError):
        nnk.asarray(m)


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
