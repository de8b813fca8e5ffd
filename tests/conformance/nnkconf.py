"""nnkconf - the numeric conformance harness of the C back end.

Compiles .nnk files with `nnkc -S --target=c`, builds the generated C into a
shared object with the system C compiler, and calls the kernels through
ctypes on numpy arrays.  The kernels describe themselves: every instance
exports `NAME__desc` (nnk/abi.h), from which the wrappers learn the
parameters, so a test reads

    k = nnkconf.load("kernels/ops.nnk")
    y = k.add_i32(a, b)                         # elementwise, broadcasting
    r = k.sum_f32(x, axes=(0, 2), keepdims=True)  # a reduction

Every call goes through NAME_strided (array views: any strides, negative
ones, broadcasting); `k.contig(...)` calls the contiguous entry point of
language.md section 8.

Environment: top_builddir (for nnkc), top_srcdir, CC (default cc),
NNKCONF_CFLAGS (extra flags for the generated C), NNKCONF_WORK (work dir),
NNKCONF_SLICE (N: run every Nth test only).
"""
import ctypes
import hashlib
import os
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from nnkabi import CT, DTYPES, KernelDesc, ParamDesc, Scalar, View  # noqa: E402,F401
from nnkabi import PARAM_DEFAULT, PARAM_INOUT, PARAM_OUTPUT, PARAM_RAW, PARAM_REDUCED, PARAM_TENSOR  # noqa: E402,F401
import nnkabi  # noqa: E402

SRCDIR = os.environ.get("top_srcdir") or os.path.normpath(os.path.join(HERE, "..", ".."))
BUILDDIR = os.environ.get("top_builddir") or SRCDIR
NNKC = os.environ.get("NNKC") or os.path.join(BUILDDIR, "nnkc")
CC = os.environ.get("CC") or "cc"
WORK = os.environ.get("NNKCONF_WORK") or os.path.join(BUILDDIR, "tests", "conformance", "work")
# The flags libnnkc gives the JIT (api.c, nnkc_c_flags(2)) plus warnings as errors.
CFLAGS = ["-std=c11", "-O2", "-ftree-vectorize", "-fno-math-errno", "-ffp-contract=off",
          "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared"] + os.environ.get("NNKCONF_CFLAGS", "").split()

# the types' storage as numpy dtypes (bf16 as its bits), from types.def (tests/nnkabi.py)
NP = {t: np.dtype(n).type for t, n in nnkabi.NP_NAMES.items()}


# ---- references that are the same on every machine ----------------------------

_refm = None


def libm(name):
    """The C library's scalar double function `name` (refm.c) as a function
    of float64 arrays (one or two arguments).  The references of the suite
    for libm functions come from here, not from numpy's float64 functions,
    whose SIMD code (SVML on AVX-512) differs from machine to machine."""
    global _refm
    if _refm is None:
        os.makedirs(WORK, exist_ok=True)
        so = os.path.join(WORK, "refm.so")
        src = os.path.join(HERE, "refm.c")
        if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
            run([CC, "-std=c11", "-O1", "-fno-builtin", "-fno-tree-vectorize", "-fno-fast-math", "-fPIC",
                 "-shared", src, "-o", "%s.tmp%d" % (so, os.getpid()), "-lm"])
            os.replace("%s.tmp%d" % (so, os.getpid()), so)
        _refm = ctypes.CDLL(so)
    fn = getattr(_refm, "nnk_ref_" + name)
    dp = ctypes.POINTER(ctypes.c_double)

    def f(*args):
        xs = [np.ascontiguousarray(np.asarray(a, dtype=np.float64)) for a in args]
        xs = list(np.broadcast_arrays(*xs)) if len(xs) > 1 else xs
        xs = [np.ascontiguousarray(a) for a in xs]
        y = np.empty(xs[0].shape, dtype=np.float64)
        fn(*[a.ctypes.data_as(dp) for a in xs], y.ctypes.data_as(dp), ctypes.c_long(y.size))
        return y
    return f


def cbrt_ref(x):
    """Correctly rounded cube roots of float64 values: glibc's cbrt (within
    an ulp), then the neighbour whose rounding interval holds x, decided in
    exact rational arithmetic."""
    import fractions
    import math
    x = np.asarray(x, dtype=np.float64)
    r = libm("cbrt")(x)
    out = r.copy()
    for i, (v, c) in enumerate(zip(x.flat, r.flat)):
        if v == 0 or not math.isfinite(v):
            continue
        a, c = abs(float(v)), abs(float(c))
        X = fractions.Fraction(a)
        while True:
            lo = (fractions.Fraction(math.nextafter(c, 0)) + fractions.Fraction(c)) / 2
            hi = (fractions.Fraction(c) + fractions.Fraction(math.nextafter(c, math.inf))) / 2
            if lo ** 3 > X:
                c = math.nextafter(c, 0)
            elif hi ** 3 < X:
                c = math.nextafter(c, math.inf)
            else:
                break
        out.flat[i] = math.copysign(c, v)
    return out


def host_isa():
    """The widest x86-64 vector extension of this machine, from /proc/cpuinfo:
    "AVX-512", "AVX2" or "SSE2" (what -march=native, the JIT's target, uses)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        flags = []
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE2"


# the flags the JIT adds on gcc (runtime/jit_cpu.c): the code it runs on this machine
NATIVE_CFLAGS = ["-march=native", "-fvect-cost-model=dynamic"]


_native = {}


def load_native(path):
    """`path` built as the JIT builds it on this machine (CFLAGS plus
    -march=native; without the gcc-only cost model flag where the compiler
    rejects it, as the JIT does).  Host code only: built with this module's
    own build(), which the CUDA emulation suite does not wrap (its calls
    are not emulated a second time)."""
    if path not in _native:
        try:
            so, cfile = _plain_build(path, cflags=CFLAGS + NATIVE_CFLAGS, tag="-native")
        except RuntimeError:
            so, cfile = _plain_build(path, cflags=CFLAGS + NATIVE_CFLAGS[:1], tag="-native")
        _native[path] = Module(so, cfile)
    return _native[path]


def vector_math_calls(so):
    """The libmvec functions (_ZGV*: glibc's vector math, whose error bounds
    are not libm's) that a shared object calls."""
    out = run(["nm", "-D", "--undefined-only", so]).stdout
    return sorted({w for w in out.split() if w.startswith("_ZGV")})


# ---- bf16 and f16 helpers -----------------------------------------------------

def f32_to_bf16(x):
    """Round-to-nearest-even f32 -> bf16 bits, computed without bit tricks:
    the two neighbouring bf16 values are found in float64 and compared."""
    shape = np.shape(x)
    x = np.atleast_1d(np.asarray(x, dtype=np.float32))
    u = x.view(np.uint32).astype(np.uint64)
    lo = (u & 0xFFFF0000)                         # truncated toward zero
    hi = lo + 0x10000                              # next one away from zero
    xv = x.astype(np.float64)
    lov = (lo.astype(np.uint32)).view(np.float32).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        hiv = (hi.astype(np.uint32)).view(np.float32).astype(np.float64)
        # one step above the largest finite value is 2^128 for rounding purposes
        hiv = np.where((hi & 0x7FFFFFFF) == 0x7F800000, np.copysign(2.0 ** 128, xv), hiv)
        dl, dh = np.abs(xv - lov), np.abs(hiv - xv)
    lo_even = ((lo >> 16) & 1) == 0
    pick_hi = (dh < dl) | ((dh == dl) & ~lo_even)
    r = np.where(pick_hi, hi, lo) >> 16
    # overflow of the largest finite values rounds to inf: hi of 0x7f7f.. is 0x7f80.. (inf)
    nan = np.isnan(x)
    r = np.where(nan, (u >> 16) | 0x40, r)
    inf = np.isinf(x)
    r = np.where(inf, u >> 16, r)
    return r.astype(np.uint16).reshape(shape)


def bf16_to_f32(b):
    a = np.asarray(b, dtype=np.uint16)
    r = (np.atleast_1d(a).astype(np.uint32) << 16).view(np.float32)
    return r.reshape(a.shape)


def to_storage(a, t):
    """numpy array (any dtype) -> array of t's storage dtype (bf16 as bits)."""
    if t == "bf16":
        if np.asarray(a).dtype == np.uint16 and getattr(a, "_is_bf16", False):
            return a
        return f32_to_bf16(np.asarray(a, dtype=np.float32))
    return np.asarray(a).astype(NP[t], copy=False)


class BF16Array(np.ndarray):
    """A uint16 array marked as holding bf16 bits."""
    _is_bf16 = True


def bf16(a):
    """f32 values -> an array of bf16 bits for a bf16 parameter."""
    return f32_to_bf16(np.asarray(a, dtype=np.float32)).view(BF16Array)


# ---- building ------------------------------------------------------------------

def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, **kw)
    if p.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p


_cache = {}


def build(path, extra_nnkc=(), cflags=None, tag=""):
    """nnkc -S then cc -shared; returns (so path, c path)."""
    os.makedirs(WORK, exist_ok=True)
    src = path if os.path.isabs(path) else os.path.join(HERE, path)
    base = os.path.splitext(os.path.basename(src))[0] + tag
    cfile = os.path.join(WORK, base + ".c")
    # written beside, then renamed: processes that share a work directory
    # (tests/opencl/conformance.sh's two) never read a half-written file
    # (the temporary ends in .c: cc picks the language by the name)
    ctmp = os.path.join(WORK, "%s.tmp%d.c" % (base, os.getpid()))
    try:
        run([NNKC, "-S", "--target=c"] + list(extra_nnkc) + [src, "-o", ctmp])
        with open(ctmp, "rb") as f:
            h = hashlib.sha1(f.read() + repr(cflags).encode() + CC.encode()).hexdigest()[:12]
        so = os.path.join(WORK, "%s-%s.so" % (base, h))
        if not os.path.exists(so):
            # a temporary of this process: suites that share a work directory
            # may build the same object at once
            tmp = "%s.tmp%d" % (so, os.getpid())
            run([CC] + (cflags if cflags is not None else CFLAGS) + [ctmp, "-o", tmp, "-lm"])
            os.replace(tmp, so)
        os.replace(ctmp, cfile)
    finally:
        if os.path.exists(ctmp):  # a failed step's
            os.unlink(ctmp)
    return so, cfile


_plain_build = build


def load(path, extra_nnkc=(), cflags=None, tag=""):
    key = (path, tuple(extra_nnkc), repr(cflags), tag)
    if key not in _cache:
        try:
            so, cfile = build(path, extra_nnkc, cflags, tag)
            _cache[key] = Module(so, cfile)
        except RuntimeError as e:
            _cache[key] = e          # fail every test that needs it, build once
    if isinstance(_cache[key], Exception):
        raise _cache[key]
    return _cache[key]


class Module:
    def __init__(self, so, cfile):
        self.so = so
        self.cfile = cfile
        self.lib = ctypes.CDLL(so)
        self._kernels = {}

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._kernels:
            self._kernels[name] = Kernel(self.lib, name)
        return self._kernels[name]


class Param:
    def __init__(self, d):
        self.name = d.name.decode()
        self.dtype = DTYPES[d.dtype]
        self.tensor = bool(d.flags & PARAM_TENSOR)
        self.output = bool(d.flags & PARAM_OUTPUT)
        self.reduced = bool(d.flags & PARAM_REDUCED)
        self.has_default = bool(d.flags & PARAM_DEFAULT)
        self.inout = bool(d.flags & PARAM_INOUT)  # written in place; its output is the input's array
        self.raw = bool(d.flags & PARAM_RAW)      # read by index: no part in the iteration space
        m = {"bool": "b", "f16": "u16", "bf16": "u16"}.get(self.dtype, self.dtype)
        self.default = getattr(d.dflt, m) if self.has_default else None
        if self.has_default and self.dtype in ("c64", "c128"):
            self.default = complex(self.default.re, self.default.im)


class Error(Exception):
    pass


def view_of(a, keep):
    """An nnk_view of numpy array a (strides in elements); `keep` holds the ctypes arrays."""
    isz = a.itemsize
    for s in a.strides:
        assert s % isz == 0, "stride not a multiple of the item size"
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    strides = (ctypes.c_int64 * max(a.ndim, 1))(*[s // isz for s in a.strides])
    v = View(a.ctypes.data if a.size else (a.__array_interface__["data"][0] or 0), a.ndim, shape, strides)
    keep += [shape, strides, a]
    return v


class Kernel:
    def __init__(self, lib, name):
        self.name = name
        desc = KernelDesc.in_dll(lib, name + "__desc")
        self.reduction = desc.kind == 1
        # nparams counts the inputs; the array holds the outputs after them
        self.params = [Param(desc.params[i]) for i in range(desc.nparams + desc.nouts)]
        self.nouts = desc.nouts
        self.inputs = self.params[:desc.nparams]
        self.outputs = self.params[desc.nparams:]
        self.strided = getattr(lib, name + "_strided")
        self.strided.restype = ctypes.c_int
        # (no contiguous entry point for a kernel with raw parameters)
        self.contig_fn = getattr(lib, name, None)
        if self.contig_fn is not None:
            self.contig_fn.restype = None

    def _scalar(self, p, v):
        if p.dtype in ("f16",):
            return CT[p.dtype](int(np.array(v, dtype=np.float16).view(np.uint16)))
        if p.dtype == "bf16":
            return CT[p.dtype](int(f32_to_bf16(np.array([v], dtype=np.float32))[0]))
        if p.dtype == "bool":
            return CT[p.dtype](1 if v else 0)
        if p.dtype in ("f32", "f64"):
            return CT[p.dtype](float(v))
        if p.dtype in ("c64", "c128"):   # nnk_c64 / nnk_c128 by value
            z = complex(v)
            return (nnkabi.C64 if p.dtype == "c64" else nnkabi.C128)(z.real, z.imag)
        return CT[p.dtype](int(v))

    def __call__(self, *args, axes=None, keepdims=False, out=None, raw=False, iter_shape=None, **kw):
        """Inputs in declaration order (scalars may be omitted when they have
        defaults, or given by keyword); returns the outputs (one or a tuple).
        axes: reduction axes (None: all).  out: preallocated outputs (any
        strides).  raw: return the status code instead of raising.
        iter_shape: the iteration shape of a kernel whose tensor inputs are
        all raw (the runtime's shape=; without it, the shape ())."""
        args = list(args)
        vals = []
        for p in self.inputs:
            if args:
                vals.append(args.pop(0))
            elif p.name in kw:
                vals.append(kw.pop(p.name))
            elif p.has_default:
                vals.append(None)
            else:
                raise TypeError("%s: missing argument %s" % (self.name, p.name))
        if args or kw:
            raise TypeError("%s: too many arguments" % self.name)
        keep, cargs, views = [], [], []
        tensors, inout = [], {}
        for p, v in zip(self.inputs, vals):
            if p.tensor:
                a = v if (p.dtype == "bf16" and getattr(v, "_is_bf16", False)) else to_storage(v, p.dtype)
                a = np.asarray(a)
                if not p.raw:
                    tensors.append(a)
                if p.inout:
                    inout[p.name] = a
                views.append(view_of(a, keep))
            else:
                if v is None:
                    cargs.append(self._scalar(p, p.default) if p.dtype in ("c64", "c128") else CT[p.dtype](p.default))
                else:
                    cargs.append(self._scalar(p, v))
        # output shapes
        try:
            shape = np.broadcast_shapes(*[t.shape for t in tensors]) if tensors else \
                (tuple(iter_shape) if iter_shape is not None else ())
        except ValueError:
            if out is None:
                raise
            shape = ()          # the kernel reports the mismatch itself
        nd = len(shape)
        if axes is None:
            red = list(range(nd))
        else:
            red = sorted(set((a + nd) if a < 0 else a for a in (axes if isinstance(axes, (tuple, list)) else [axes])))
        rshape = tuple((1 if i in red else s) for i, s in enumerate(shape)) if keepdims else \
            tuple(s for i, s in enumerate(shape) if i not in red)
        outs = []
        for i, p in enumerate(self.outputs):
            if p.inout:  # NAME_strided takes the parameter's view for it
                outs.append(inout[p.name])
                continue
            if out is not None:
                o = out[i]
            else:
                st = NP[p.dtype]
                o = np.full(rshape if p.reduced else shape, 0x55, dtype=np.uint8).view(st) if False else \
                    _poison(rshape if p.reduced else shape, st)
            outs.append(o)
            views.append(view_of(o, keep))
        vptrs = [ctypes.byref(v) for v in views]
        # NAME_strided: (naxes, axes,) then parameters in declaration order, outputs last
        ordered, ti, si = [], 0, 0
        for p in self.inputs:
            if p.tensor:
                ordered.append(vptrs[ti]); ti += 1
            else:
                ordered.append(cargs[si]); si += 1
        ordered += vptrs[ti:]
        if self.reduction:
            if axes is None:
                ax = None
                pre = [ctypes.c_int32(0), ctypes.c_void_p(None)]
            else:
                al = list(axes) if isinstance(axes, (tuple, list)) else [axes]
                ax = (ctypes.c_int32 * max(len(al), 1))(*al)
                keep.append(ax)
                pre = [ctypes.c_int32(len(al)), ax]
            ordered = pre + ordered
        rc = self.strided(*ordered)
        if raw:
            return rc
        if rc != 0:
            raise Error("%s_strided returned %d" % (self.name, rc))
        res = [o.view(BF16Array) if p.dtype == "bf16" else o for p, o in zip(self.outputs, outs)]
        return res[0] if len(res) == 1 else tuple(res)

    def contig(self, *args):
        """The section 8 entry point: elementwise (n, scalars/pointers..., outputs)
        or reduction (outer, len, inner, ...).  Tensors are given as numpy
        arrays (contiguous); outputs are allocated: elementwise n, reduction
        outer*inner (reduced) or outer*len*inner."""
        raise NotImplementedError


def _poison(shape, dt):
    """An output buffer filled with a recognisable garbage pattern."""
    o = np.empty(shape, dtype=dt)
    np.atleast_1d(o).view(np.uint8)[...] = 0xA5
    return o


def contig_call(k, shape3_or_n, *args):
    """Calls the contiguous entry point of kernel k: elementwise with n, or a
    reduction with (outer, len, inner).  Tensor inputs are numpy arrays (made
    contiguous); returns the outputs."""
    keep, cargs, out = [], [], []
    if k.reduction:
        outer, ln, inner = shape3_or_n
        cargs += [ctypes.c_int64(outer), ctypes.c_int64(ln), ctypes.c_int64(inner)]
    else:
        cargs.append(ctypes.c_int64(shape3_or_n))
    args = list(args)
    inout = {}
    for p in k.inputs:
        v = args.pop(0)
        if p.tensor:
            a = np.ascontiguousarray(v if getattr(v, "_is_bf16", False) else to_storage(v, p.dtype))
            keep.append(a)
            inout[p.name] = a
            cargs.append(ctypes.c_void_p(a.ctypes.data))
        else:
            cargs.append(k._scalar(p, v))
    for p in k.outputs:
        if p.inout:  # the parameter's pointer, written in place
            out.append(inout[p.name])
            continue
        if k.reduction:
            outer, ln, inner = shape3_or_n
            sh = (outer, inner) if p.reduced else (outer, ln, inner)
        else:
            sh = (shape3_or_n,)
        o = _poison(sh, NP[p.dtype])
        out.append(o)
        cargs.append(ctypes.c_void_p(o.ctypes.data))
    k.contig_fn(*cargs)
    res = [o.view(BF16Array) if p.dtype == "bf16" else o for p, o in zip(k.outputs, out)]
    return res[0] if len(res) == 1 else tuple(res)


# ---- comparisons ------------------------------------------------------------------

class Check:
    """Counts comparisons; raises AssertionError with a readable report."""
    count = 0


def _ordered(a, t):
    """Float values as integers ordered like the values (for ulp distances)."""
    if t == "f16":
        i = np.asarray(a, dtype=np.float16).view(np.int16).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFF), i)
    if t == "bf16":
        i = np.asarray(a, dtype=np.uint16).view(np.int16).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFF), i)
    if t == "f32":
        i = np.asarray(a, dtype=np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    i = np.asarray(a, dtype=np.float64).view(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFFFFFFFFFF), i)


def ulps(got, want, t):
    """ulp distance of float arrays of type t (bf16 as bits); NaN vs NaN is 0,
    NaN vs number is huge."""
    g, w = np.asarray(got), np.asarray(want)
    if t == "bf16":
        gn, wn = np.isnan(bf16_to_f32(g)), np.isnan(bf16_to_f32(w))
    else:
        gn, wn = np.isnan(g), np.isnan(w)
    d = np.abs(_ordered(g, t).astype(object) - _ordered(w, t).astype(object)) if t == "f64" else \
        np.abs(_ordered(g, t) - _ordered(w, t))
    d = np.where(gn & wn, 0, d)
    d = np.where(gn != wn, 1 << 62, d)
    return d.astype(np.float64)


def _fmt(a, t):
    if t == "bf16":
        return "%r (bf16 0x%04x)" % (float(bf16_to_f32(np.uint16(a))), int(a))
    return repr(a.item() if hasattr(a, "item") else a)


def close(got, want, t, ulp=0, atol=0.0, what="", inputs=None):
    """got and want (arrays of t's storage dtype, bf16 as bits) agree within
    `ulp` units in the last place or `atol` absolutely."""
    Check.count += 1
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError("%s: shape %s, expected %s" % (what, got.shape, want.shape))
    if t not in ("f16", "bf16", "f32", "f64"):
        bad = got != want
    else:
        d = ulps(got, want, t)
        bad = d > ulp
        if atol:
            gv = bf16_to_f32(got) if t == "bf16" else got
            wv = bf16_to_f32(want) if t == "bf16" else want
            with np.errstate(invalid="ignore"):
                bad &= ~(np.abs(gv.astype(np.float64) - wv.astype(np.float64)) <= atol)
    if np.any(bad):
        idx = np.argwhere(bad)
        lines = ["%s: %d of %d values differ (tolerance %s ulp%s)" % (what, len(idx), got.size, ulp,
                                                                       ", atol %g" % atol if atol else "")]
        for ix in idx[:6]:
            ix = tuple(ix)
            s = "  at %s: got %s, expected %s" % (ix, _fmt(got[ix], t), _fmt(want[ix], t))
            if inputs is not None:
                s += "  inputs: " + ", ".join(_fmt(np.broadcast_to(x, got.shape)[ix], "f64" if x.dtype.kind == "f" else "i")
                                              for x in inputs)
            lines.append(s)
        raise AssertionError("\n".join(lines))


def equal(got, want, what=""):
    Check.count += 1
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want, equal_nan=got.dtype.kind == "f"):
        if got.shape != want.shape:
            raise AssertionError("%s: shape %s, expected %s" % (what, got.shape, want.shape))
        bad = np.argwhere(~((got == want) | ((got != got) & (want != want))) if got.dtype.kind == "f" else got != want)
        lines = ["%s: %d of %d values differ" % (what, len(bad), got.size)]
        for ix in bad[:6]:
            ix = tuple(ix)
            lines.append("  at %s: got %r, expected %r" % (ix, got[ix], want[ix]))
        raise AssertionError("\n".join(lines))


def check(cond, msg):
    Check.count += 1
    if not cond:
        raise AssertionError(msg)


def check_one_pass_at_O3(path, kernels):
    """The rewrites into one pass (online softmax, Welford) fire at -O3
    only: each kernel of `kernels` in `path` (relative to this directory)
    has two phases at -O0 and -O2 and one at -O3 in --emit=ir."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), path)
    for opt, want in (("-O0", "2 phases"), ("-O2", "2 phases"), ("-O3", "1 phase")):
        ir = subprocess.run([NNKC, opt, "--emit=ir", src, "-o", "-"], capture_output=True, text=True, check=True).stdout
        for k in kernels:
            head = [l for l in ir.splitlines() if l.startswith("kernel %s " % k)]
            check(len(head) == 1 and want in head[0], "%s %s: %s, expected %s" % (k, opt, head, want))


# ---- the runner ----------------------------------------------------------------------

def main(module_globals, argv=None):
    """Runs every test_* function of the calling module (or those matching
    -k SUBSTRING); prints one line per test and a summary."""
    argv = sys.argv[1:] if argv is None else argv
    np.seterr(all="ignore")          # the references compute inf and NaN on purpose
    import warnings
    warnings.simplefilter("ignore", RuntimeWarning)
    pat = None
    if len(argv) >= 2 and argv[0] == "-k":
        pat = argv[1]
    tests = [(n, f) for n, f in module_globals.items() if n.startswith("test_") and callable(f)]
    tests.sort(key=lambda nf: getattr(nf[1], "__wrapped__", nf[1]).__code__.co_firstlineno)  # in source order
    print("# host: %s (the JIT's -march=native code); %s %s" % (host_isa(), CC, " ".join(CFLAGS)), flush=True)
    # NNKCONF_SLICE=N: every Nth test only, the first included (a slice of
    # the suite for a stage that repeats it: the emulated suites under the
    # sanitizers, tests/run-all.sh); a module of fewer than 2N tests runs
    # whole (a slice of one test may not exercise what the module is for);
    # unset, empty or 1: every test
    nth = os.environ.get("NNKCONF_SLICE", "")
    if nth not in ("", "1"):
        if not nth.isdigit() or int(nth) < 1:
            print("# bad NNKCONF_SLICE=%r (expected a count N: every Nth test)" % nth, flush=True)
            return 2
        if len(tests) >= 2 * int(nth):
            tests = tests[::int(nth)]
            print("# NNKCONF_SLICE=%s: %d of the tests (every %sth)" % (nth, len(tests), nth), flush=True)
        else:
            print("# NNKCONF_SLICE=%s: all %d tests (fewer than %d)" % (nth, len(tests), 2 * int(nth)), flush=True)
    npass = nfail = 0
    t0 = time.time()
    for name, fn in tests:
        if pat and pat not in name:
            continue
        c0, s = Check.count, time.time()
        try:
            fn()
            npass += 1
            print("PASS: %s (%d checks, %.1fs)" % (name, Check.count - c0, time.time() - s), flush=True)
        except Exception as e:   # noqa: BLE001 - report every failure and go on
            nfail += 1
            print("FAIL: %s" % name, flush=True)
            if isinstance(e, (AssertionError, RuntimeError)):
                print("  " + str(e).replace("\n", "\n  "), flush=True)
            else:
                traceback.print_exc(file=sys.stdout)
    print("# %s: %d passed, %d failed, %d checks, %.1fs" % (
        os.path.basename(sys.argv[0]), npass, nfail, Check.count, time.time() - t0), flush=True)
    return 1 if nfail else 0
