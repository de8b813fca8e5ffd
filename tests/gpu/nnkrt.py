"""nnkrt - a small ctypes binding of libnnk (nnk/nnk.h) for the GPU script:
contexts, arrays, modules, launches, extension queries.  Every call that
fails raises NnkError with nnk_last_error().

    rt = nnkrt.Runtime("/path/to/.libs/libnnk.so")
    ctx = rt.context("cuda", "device_id=0")
    x = rt.from_numpy(ctx, np.arange(10, dtype=np.float32))
    m = rt.module(ctx, source)
    y = rt.launch(m.kernel("scale"), [x, 2.0], outs=[None])[0]
    print(rt.to_numpy(y))
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from nnkabi import DTYPES, NP_NAMES, STATUS, DeviceInfo, MemoryStats, Slice  # noqa: E402,F401


class NnkError(Exception):
    def __init__(self, what, status, message):
        Exception.__init__(self, "%s: %s: %s" % (what, STATUS[status] if 0 <= status < len(STATUS) else status, message))
        self.status = status


class Runtime:
    def __init__(self, path=None):
        self.lib = ctypes.CDLL(path or "libnnk.so.0")
        L = self.lib
        P, I32, I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
        sigs = {
            "nnk_last_error": (ctypes.c_char_p, []),
            "nnk_import_extension": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(P)]),
            "nnk_extension_get_device_count": (ctypes.c_int, [P, ctypes.POINTER(I32)]),
            "nnk_extension_get_devices": (ctypes.c_int, [P, ctypes.POINTER(DeviceInfo), I32, ctypes.POINTER(I32)]),
            "nnk_extension_status": (ctypes.c_char_p, [P]),
            "nnk_extension_device_synchronize": (ctypes.c_int, [P, I32]),
            "nnk_extension_clear_memory_cache": (ctypes.c_int, [P, ctypes.POINTER(ctypes.c_uint64)]),
            "nnk_extension_memory_stats": (ctypes.c_int, [P, I32, ctypes.POINTER(MemoryStats)]),
            "nnk_get_extension_context": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P)]),
            "nnk_context_free": (None, [P]),
            "nnk_context_str": (ctypes.c_char_p, [P]),
            "nnk_array_new": (ctypes.c_int, [P, ctypes.c_int, I32, ctypes.POINTER(I64), ctypes.POINTER(P)]),
            "nnk_array_from_host": (ctypes.c_int, [P, ctypes.c_int, I32, ctypes.POINTER(I64), P, ctypes.POINTER(P)]),
            "nnk_array_to_host": (ctypes.c_int, [P, ctypes.c_int, P, ctypes.c_size_t]),
            "nnk_array_free": (None, [P]),
            "nnk_array_copy": (ctypes.c_int, [P, P]),
            "nnk_array_permute": (ctypes.c_int, [P, I32, ctypes.POINTER(I32), ctypes.POINTER(P)]),
            "nnk_array_slice": (ctypes.c_int, [P, I32, ctypes.POINTER(Slice), ctypes.POINTER(P)]),
            "nnk_array_broadcast_to": (ctypes.c_int, [P, I32, ctypes.POINTER(I64), ctypes.POINTER(P)]),
            "nnk_array_ndim": (I32, [P]),
            "nnk_array_shape": (ctypes.POINTER(I64), [P]),
            "nnk_array_dtype": (ctypes.c_int, [P]),
            "nnk_array_size": (I64, [P]),
            "nnk_module_compile": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P)]),
            "nnk_module_free": (None, [P]),
            "nnk_module_kernel": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.POINTER(P)]),
            "nnk_args_new": (ctypes.c_int, [ctypes.POINTER(P)]),
            "nnk_args_free": (None, [P]),
            "nnk_args_reset": (None, [P]),
            "nnk_args_array": (ctypes.c_int, [P, P]),
            "nnk_args_f64": (ctypes.c_int, [P, ctypes.c_double]),
            "nnk_args_i64": (ctypes.c_int, [P, I64]),
            "nnk_args_c128": (ctypes.c_int, [P, ctypes.c_double, ctypes.c_double]),
            "nnk_args_out": (ctypes.c_int, [P, P]),
            "nnk_args_axes": (ctypes.c_int, [P, I32, ctypes.POINTER(I32)]),
            "nnk_args_keepdims": (ctypes.c_int, [P, ctypes.c_int]),
            "nnk_args_context": (ctypes.c_int, [P, P]),
            "nnk_args_output": (ctypes.c_int, [P, I32, ctypes.POINTER(P)]),
            "nnk_args_output_count": (I32, [P]),
            "nnk_launch": (ctypes.c_int, [P, P]),
            "nnk_shutdown": (None, []),
        }
        for name, (res, args) in sigs.items():
            f = getattr(L, name)
            f.restype = res
            f.argtypes = args

    # ---- errors ----
    def check(self, status, what):
        if status != 0:
            raise NnkError(what, status, self.lib.nnk_last_error().decode(errors="replace"))

    # ---- extensions ----
    def extension(self, name):
        e = ctypes.c_void_p()
        self.check(self.lib.nnk_import_extension(name.encode(), ctypes.byref(e)), "import %s" % name)
        return e

    def device_count(self, ext):
        n = ctypes.c_int32()
        self.check(self.lib.nnk_extension_get_device_count(ext, ctypes.byref(n)), "get_device_count")
        return n.value

    def devices(self, ext):
        n = self.device_count(ext)
        out = (DeviceInfo * max(n, 1))()
        cnt = ctypes.c_int32()
        self.check(self.lib.nnk_extension_get_devices(ext, out, n, ctypes.byref(cnt)), "get_devices")
        return [(d.id, d.name.decode(), d.total_memory) for d in out[:n]]

    def status(self, ext):
        s = self.lib.nnk_extension_status(ext)
        return s.decode(errors="replace") if s else ""

    def sync(self, ext, device=0):
        self.check(self.lib.nnk_extension_device_synchronize(ext, device), "device_synchronize")

    def clear_cache(self, ext):
        r = ctypes.c_uint64()
        self.check(self.lib.nnk_extension_clear_memory_cache(ext, ctypes.byref(r)), "clear_memory_cache")
        return r.value

    def memory_stats(self, ext, device=0):
        s = MemoryStats()
        self.check(self.lib.nnk_extension_memory_stats(ext, device, ctypes.byref(s)), "memory_stats")
        return s

    def context(self, ext, kw=""):
        c = ctypes.c_void_p()
        self.check(self.lib.nnk_get_extension_context(ext.encode(), kw.encode(), ctypes.byref(c)), "context %s" % ext)
        return c

    def context_str(self, ctx):
        return self.lib.nnk_context_str(ctx).decode()

    # ---- arrays ----
    def new(self, ctx, dtype, shape):
        a = ctypes.c_void_p()
        sh = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.check(self.lib.nnk_array_new(ctx, DTYPES.index(dtype), len(shape), sh, ctypes.byref(a)), "array_new")
        return a

    def from_numpy(self, ctx, x, dtype=None):
        import numpy as np
        dtype = dtype or {v: k for k, v in NP_NAMES.items() if k != "bf16"}[str(x.dtype)]
        x = np.array(x, order="C", copy=False) if x.flags.c_contiguous else np.array(x, order="C")  # keeps 0-d
        a = ctypes.c_void_p()
        sh = (ctypes.c_int64 * max(x.ndim, 1))(*x.shape)
        self.check(self.lib.nnk_array_from_host(ctx, DTYPES.index(dtype), x.ndim, sh,
                                                ctypes.c_void_p(x.ctypes.data), ctypes.byref(a)), "array_from_host")
        return a

    def shape(self, a):
        n = self.lib.nnk_array_ndim(a)
        s = self.lib.nnk_array_shape(a)
        return tuple(s[i] for i in range(n))

    def dtype(self, a):
        return DTYPES[self.lib.nnk_array_dtype(a)]

    def to_numpy(self, a):
        import numpy as np
        dt = self.dtype(a)
        out = np.empty(self.shape(a), dtype=NP_NAMES[dt])
        self.check(self.lib.nnk_array_to_host(a, DTYPES.index(dt), ctypes.c_void_p(out.ctypes.data), out.nbytes),
                   "array_to_host")
        return out

    def permute(self, a, perm):
        v = ctypes.c_void_p()
        p = (ctypes.c_int32 * len(perm))(*perm)
        self.check(self.lib.nnk_array_permute(a, len(perm), p, ctypes.byref(v)), "array_permute")
        return v

    def slice(self, a, start, stop, step=1):
        """a[start:stop:step] along the first axis (Python semantics)."""
        v = ctypes.c_void_p()
        s = Slice(start, stop, step)
        self.check(self.lib.nnk_array_slice(a, 1, ctypes.byref(s), ctypes.byref(v)), "array_slice")
        return v

    def broadcast_to(self, a, shape):
        v = ctypes.c_void_p()
        sh = (ctypes.c_int64 * len(shape))(*shape)
        self.check(self.lib.nnk_array_broadcast_to(a, len(shape), sh, ctypes.byref(v)), "array_broadcast_to")
        return v

    def copy(self, dst, src):
        self.check(self.lib.nnk_array_copy(dst, src), "array_copy")

    def free(self, a):
        self.lib.nnk_array_free(a)

    # ---- modules and launches ----
    def module(self, ctx, source, options=""):
        m = ctypes.c_void_p()
        self.check(self.lib.nnk_module_compile(ctx, source.encode(), options.encode(), ctypes.byref(m)),
                   "module_compile")
        return Module(self, m)

    def args(self):
        a = ctypes.c_void_p()
        self.check(self.lib.nnk_args_new(ctypes.byref(a)), "args_new")
        return a

    def fill_args(self, a, inputs, outs=(), axes=None, ctx=None, keepdims=False):
        """inputs: arrays (c_void_p), floats (f64), complex numbers (c128)
        and ints/bools (i64)."""
        L = self.lib
        L.nnk_args_reset(a)
        for v in inputs:
            if isinstance(v, ctypes.c_void_p):
                self.check(L.nnk_args_array(a, v), "args_array")
            elif isinstance(v, float):
                self.check(L.nnk_args_f64(a, v), "args_f64")
            elif isinstance(v, complex):
                self.check(L.nnk_args_c128(a, v.real, v.imag), "args_c128")
            else:
                self.check(L.nnk_args_i64(a, int(v)), "args_i64")
        for o in outs:
            if o is not None:
                self.check(L.nnk_args_out(a, o), "args_out")
        if axes is not None:
            ax = (ctypes.c_int32 * max(len(axes), 1))(*axes)
            self.check(L.nnk_args_axes(a, len(axes), ax), "args_axes")
        if keepdims:
            self.check(L.nnk_args_keepdims(a, 1), "args_keepdims")
        if ctx is not None:
            self.check(L.nnk_args_context(a, ctx), "args_context")

    def launch_args(self, kernel, a, what="launch"):
        self.check(self.lib.nnk_launch(kernel, a), what)

    def launch(self, kernel, inputs, outs=(), axes=None, ctx=None, keepdims=False):
        """Runs kernel; returns the outputs (new references).  A given
        reduced output must have the shape keepdims says (docs/runtime.md)."""
        a = self.args()
        try:
            self.fill_args(a, inputs, outs, axes, ctx, keepdims)
            self.launch_args(kernel, a)
            res = []
            for i in range(self.lib.nnk_args_output_count(a)):
                o = ctypes.c_void_p()
                self.check(self.lib.nnk_args_output(a, i, ctypes.byref(o)), "args_output")
                res.append(o)
            return res
        finally:
            self.lib.nnk_args_free(a)

    def shutdown(self):
        self.lib.nnk_shutdown()


class Module:
    def __init__(self, rt, m):
        self.rt, self.m = rt, m
        self.kernels = {}

    def kernel(self, name):
        if name not in self.kernels:
            k = ctypes.c_void_p()
            self.rt.check(self.rt.lib.nnk_module_kernel(self.m, name.encode(), ctypes.byref(k)), "module_kernel %s" % name)
            self.kernels[name] = k
        return self.kernels[name]


def find_libnnk(builddir):
    for p in (os.path.join(builddir, ".libs", "libnnk.so.0"), os.path.join(builddir, ".libs", "libnnk.so")):
        if os.path.exists(p):
            return p
    return "libnnk.so.0"
