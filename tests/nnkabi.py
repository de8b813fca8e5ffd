"""nnkabi - the C lists and structs the Python tests share, in one place.

The scalar types come from compiler/types.def, read at import (the one list
of them): DTYPES in nnk_dtype order, and per type its storage as a numpy
name (NP_NAMES), a ctypes type (CT), its nnk_scalar member (MEMBER), its
class and width.  The status names come from nnk/nnk.h.  The ctypes
structs mirror nnk/abi.h (View, Scalar, ParamDesc, KernelDesc) and
nnk/nnk.h (MemoryStats, DeviceInfo, Slice); tests/unit/lists.py checks them
against the headers.  No numpy here: the GPU script's binding imports it
without numpy.
"""
import ctypes
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("top_srcdir") or os.path.normpath(os.path.join(HERE, ".."))


def _src(*parts):
    p = os.path.join(SRCDIR, *parts)
    return p if os.path.exists(p) else os.path.join(HERE, "..", *parts)


def _args(text):
    """The comma-separated arguments of one TYPE(...) row (strings may hold commas)."""
    return [a.strip() for a in re.findall(r'"[^"]*"|[^,]+', text)]


def _rows(path, macro):
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    return [_args(m) for m in re.findall(r"^\s*%s\((.*)\)\s*$" % macro, text, flags=re.M)]


# TYPE(ID, name, class, bits, storage, compute, api, member, lowest, highest, shuffle)
TYPES = [{"id": r[0], "name": r[1].strip('"'), "class": r[2], "bits": int(r[3]),
          "storage": r[4].strip('"'), "member": r[7].strip('"')}
         for r in _rows(_src("compiler", "types.def"), "TYPE")]
DTYPES = [t["name"] for t in TYPES]
BITS = {t["name"]: t["bits"] for t in TYPES}
CLASS = {t["name"]: t["class"][len("CLASS_"):].lower() for t in TYPES}
MEMBER = {t["name"]: t["member"] for t in TYPES}
SIZE = {t["name"]: t["bits"] // 8 for t in TYPES}

# storage C type -> ctypes type and numpy name; f16 is numpy's own float16
_C_STORAGE = {"uint8_t": ("c_uint8", "uint8"), "uint16_t": ("c_uint16", "uint16"),
              "uint32_t": ("c_uint32", "uint32"), "uint64_t": ("c_uint64", "uint64"),
              "int8_t": ("c_int8", "int8"), "int16_t": ("c_int16", "int16"),
              "int32_t": ("c_int32", "int32"), "int64_t": ("c_int64", "int64"),
              "float": ("c_float", "float32"), "double": ("c_double", "float64"),
              "nnk_c64": (None, "complex64"), "nnk_c128": (None, "complex128")}
# complex: a pair of the part's type (real part first, as numpy)
_C_PAIR = {"nnk_c64": ctypes.c_float * 2, "nnk_c128": ctypes.c_double * 2}
CT = {t["name"]: _C_PAIR[t["storage"]] if t["storage"] in _C_PAIR else getattr(ctypes, _C_STORAGE[t["storage"]][0])
      for t in TYPES}
NP_NAMES = {t["name"]: "bool" if t["class"] == "CLASS_BOOL" else "float16" if t["name"] == "f16"
            else _C_STORAGE[t["storage"]][1] for t in TYPES}
FLOATS = [t for t in DTYPES if CLASS[t] == "float"]
COMPLEX = [t for t in DTYPES if CLASS[t] == "complex"]


def _status_names():
    with open(_src("runtime", "include", "nnk", "nnk.h")) as f:
        body = re.search(r"typedef enum nnk_status \{(.*?)\} nnk_status;", f.read(), flags=re.S).group(1)
    names = re.findall(r"^\s*(NNK_[A-Z0-9_]+)", re.sub(r"/\*.*?\*/", "", body, flags=re.S), flags=re.M)
    return [n for n in names if n != "NNK_STATUS_COUNT"]


STATUS = _status_names()

PARAM_TENSOR, PARAM_OUTPUT, PARAM_REDUCED, PARAM_DEFAULT, PARAM_INOUT, PARAM_RAW = 1, 2, 4, 8, 16, 32


# ---- nnk/abi.h ------------------------------------------------------------------

class View(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64))]


class C64(ctypes.Structure):
    """nnk_c64 (and nnk_scalar's c64 member) by value: real part first."""
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class C128(ctypes.Structure):
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


class Scalar(ctypes.Union):
    # the complex members make it 16 bytes (ABI version 2)
    _fields_ = [("i64", ctypes.c_int64), ("u64", ctypes.c_uint64), ("f64", ctypes.c_double),
                ("f32", ctypes.c_float), ("i32", ctypes.c_int32), ("u32", ctypes.c_uint32),
                ("i16", ctypes.c_int16), ("u16", ctypes.c_uint16), ("i8", ctypes.c_int8),
                ("u8", ctypes.c_uint8), ("b", ctypes.c_uint8), ("c64", C64), ("c128", C128)]


class ParamDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("flags", ctypes.c_int32),
                ("dflt", Scalar)]


class KernelDesc(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_int32), ("kind", ctypes.c_int32), ("name", ctypes.c_char_p),
                ("kernel", ctypes.c_char_p), ("nparams", ctypes.c_int32), ("nouts", ctypes.c_int32),
                ("params", ctypes.POINTER(ParamDesc)), ("ntargs", ctypes.c_int32),
                ("targs", ctypes.POINTER(ctypes.c_int32))]   # the rest is not read by the tests


# ---- nnk/nnk.h ------------------------------------------------------------------

class MemoryStats(ctypes.Structure):
    _fields_ = [("bytes_in_use", ctypes.c_uint64), ("bytes_cached", ctypes.c_uint64),
                ("peak_bytes_in_use", ctypes.c_uint64), ("hits", ctypes.c_uint64), ("misses", ctypes.c_uint64),
                ("retries", ctypes.c_uint64)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int32), ("name", ctypes.c_char * 128), ("total_memory", ctypes.c_uint64),
                ("host_accessible", ctypes.c_int32)]


class DeviceProps(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("id", ctypes.c_int32), ("name", ctypes.c_char * 128),
                ("vendor", ctypes.c_char * 128), ("driver_version", ctypes.c_char * 128),
                ("total_memory", ctypes.c_uint64), ("host_accessible", ctypes.c_int32),
                ("unified_memory", ctypes.c_int32)]


class Slice(ctypes.Structure):
    _fields_ = [("start", ctypes.c_int64), ("stop", ctypes.c_int64), ("step", ctypes.c_int64)]
