"""What users of numpy, CuPy, torch's jiterator and NNabla's ext_utils write,
ported to nnk: scalars as 0-d arrays and back, numpy's dtype spellings,
array-interface objects, ext_utils' errors and tests."""
import copy

import numpy as np
import pytest

import nnk
from nnk import ext_utils


def test_zero_d_arrays_feed_scalar_parameters(add, norms):
    x = np.ones(3, np.float32)
    assert add(x, x, alpha=np.array(2.0)).tolist() == [3, 3, 3]
    assert add(x, x, np.array(2, np.int8)).tolist() == [3, 3, 3]            # positional
    r = norms.l2norm(np.float32([3, 4]))                                     # a 0-d result of nnk
    assert r.ndim == 0 and add(x, x, alpha=r).tolist() == [6, 6, 6]
    assert add(x, x, alpha=nnk.asarray(r)).tolist() == [6, 6, 6]
    with pytest.raises(nnk.ArgumentError, match="is a scalar, but an array was given"):
        add(x, x, alpha=np.array([2.0]))                                     # rank 1 is an array
    with pytest.raises(nnk.DTypeError, match="scalar parameter 'alpha'"):
        add(x, x, alpha=np.array(None))


def test_numpy_scalars_are_typed_zero_d_tensors(add):
    x = np.arange(3, dtype=np.float32)
    y = add(x, np.float32(2))                  # np.add(x, np.float32(2))
    assert type(y) is np.ndarray and y.dtype == np.float32 and y.tolist() == [2, 3, 4]
    assert add(x, y=np.float32(1)).tolist() == [1, 2, 3]
    assert add(x, np.float64(1)).dtype == np.float64   # NEP 50: a numpy scalar is not weak
    z = add(np.float32(1), np.float32(2))
    assert z.shape == () and float(z) == 3
    w = add(x, 2.0)                            # a Python number is weak: x's float32 (test_python_scalars.py)
    assert w.dtype == np.float32 and w.tolist() == [2, 3, 4]


def test_numpy_dtype_spellings():
    assert nnk.empty(2, dtype="f2").dtype == "float16"
    assert nnk.empty(2, dtype="<f4").dtype == "float32"
    assert nnk.zeros(2, dtype="=i8").dtype == "int64"
    assert nnk.empty(np.int64(3)).shape == (3,)
    with pytest.raises(nnk.DTypeError, match="byte order"):
        nnk.empty(2, dtype=np.dtype(">f4"))    # was taken as native float32
    with pytest.raises(nnk.DTypeError, match="unknown dtype"):
        nnk.empty(2, dtype=">f4")
    with pytest.raises(nnk.DTypeError, match="unknown dtype 'U3'"):
        nnk.empty(2, dtype="U3")


class Described:
    """Memory described by numpy's array interface only (no buffer, no DLPack)."""

    def __init__(self, arr):
        self.keep = arr
        self.__array_interface__ = arr.__array_interface__


def test_array_interface_objects(add):
    x = np.arange(3, dtype=np.float32)
    o = np.zeros(3, np.float32)
    assert add(Described(x), x, out=Described(o)) is not None
    assert o.tolist() == [0, 2, 4]             # written in place: a view, not a copy
    ro = np.zeros(3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(nnk.ArgumentError, match="read-only"):
        add(x, x, out=Described(ro))


def test_missing_extension_is_an_import_error():
    for f in (ext_utils.import_extension_module, ext_utils.get_extension_context):
        with pytest.raises(ImportError) as e:  # NNabla imports nnabla_ext.NAME
            f("nosuchext")
        assert isinstance(e.value, nnk.NotFoundError) and isinstance(e.value, LookupError)
        assert e.value.status == "NNK_ENOTFOUND" and e.value.name == "nosuchext"
        assert "libnnk_ext_nosuchext.so" in str(e.value)


def test_contexts_copy_as_themselves():
    c = ext_utils.get_extension_context("cpu", type_config="half")
    assert copy.copy(c) is c and copy.deepcopy({"ctx": c})["ctx"] is c


@pytest.mark.parametrize("ext_name", ext_utils.list_extensions())
def test_nnabla_ext_utils_misc(ext_name):
    # NNabla's python/test/test_ext_utils.py, for every listed extension
    ext = ext_utils.import_extension_module(ext_name)
    ext.clear_memory_cache()
    if ext.get_device_count() == 0:
        return
    ds = ext.get_devices()
    ext.device_synchronize(ds[0])
    ctx = ext_utils.get_extension_context(ext_name, device_id=ds[0])
    assert ctx.device_id == ds[0]


def test_positional_outputs(add, two):
    # numpy's np.add(a, b, out) and CuPy's kernel(x, y, z): after every input
    x = np.ones(3, np.float32)
    o, o2 = np.zeros(3, np.float32), np.zeros(3, np.float32)
    assert add(x, x, 2.0, o) is o and o.tolist() == [3, 3, 3]
    a, b = two(x, o, o2)
    assert a is o and b is o2 and o.tolist() == [2, 2, 2] and o2.tolist() == [2, 2, 2]
    with pytest.raises(nnk.ArgumentError, match="both positionally and as out="):
        add(x, x, 2.0, o, out=o)
    with pytest.raises(nnk.ArgumentError, match="out: expected a writable array"):
        add(x, x, 2.0, 3.0)
    with pytest.raises(nnk.ArgumentError, match="takes 3 inputs but 5 were given"):
        add(x, x, 2.0, o, o)


def test_copy_of_an_array_is_a_copy():
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nnk.asarray(base[:, ::2])
    for b in (copy.copy(a), copy.deepcopy([a])[0]):
        assert isinstance(b, nnk.Array) and b.strides == (8, 4)
        assert b.numpy().tolist() == [[0, 2], [3, 5]] and not np.shares_memory(b.numpy(), base)


def test_nnabla_deprecated_cudnn_name():
    with pytest.warns(DeprecationWarning, match="cuda.cudnn"):
        try:
            ext_utils.get_extension_context("cuda.cudnn")
        except nnk.Error:   # no cudnn extension here, or no device: the name was taken as 'cudnn'
            pass
