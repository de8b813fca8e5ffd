"""gpu_conformance - the numeric conformance suite of the C back end
(tests/conformance) with every NAME_strided call also run on a GPU through
libnnk and the cuda extension (the kernel's .nnk source compiled by
nnk_module_compile, instantiated for the call's dtypes, generated CUDA
compiled by NVRTC, launched through dispatch.c), compared with the C result:

  * elementwise: integers and bools exactly, floats within MATH_ULP ulp
    (the GPU's libm, libdevice, is not glibc's; f16/bf16 within 1 ulp);
  * reductions: as tests/cuda/emu_conformance.py (different summation
    orders), plus MATH_ULP.

Inputs go to the device as contiguous arrays (the strided kernels are
covered by test_device_views here and by the emulation tests).

    gpu_conformance.py [--ext cuda|cudnn|opencl|cpu] TEST_MODULE.py [-k SUBSTRING]
    gpu_conformance.py [--ext ...] TEST_MODULE.py TEST_MODULE.py ...   several, one process
    gpu_conformance.py [--ext ...] TEST_MODULE.py@I/N ...   every Nth test of it from the Ith (0 <= I < N),
                                                            in the order of the file
    gpu_conformance.py [--ext ...] --views      test_device_views only

NNK_GPU_SHARE=P (0 < P <= 1, default 1) and NNK_GPU_SEED=S (default 1): a
fixed share of the instances on the device, for a device whose compiler is
slow (PoCL: tests/opencl/conformance.sh).  An instance goes to the device
when sha256("S:NAME") read as a fraction is below P, and so does the first
instance each test calls (every test reaches the device); every call of a
chosen instance runs there (all its layouts), the others run in C only.
The summary counts both.

NNK_GPU_TEST_OPTIONS=OPTS and NNK_GPU_REAL_SHARE=R (default 1), --ext
opencl only: the instances outside a fixed share R (sha256("real:S:NAME")
below R) are built with the build options OPTS added (NNK_OPENCL_OPTIONS,
which the extension reads at each build), the share R with the
extension's own; conformance.sh builds most of the suite with
-cl-opt-disable (PoCL's optimiser is most of its cost) and a share with
the real options.

--ext cpu runs the same path on the cpu extension (the C JIT), which checks
this driver on a machine without a GPU.  Environment: as nnkconf, plus
NNK_LIBNNK (libnnk.so, default $top_builddir/.libs/libnnk.so.0).
"""
import ctypes
import functools
import hashlib
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("top_srcdir") or os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "cuda"))
sys.path.insert(0, HERE)
import emu_conformance as E  # noqa: E402  (helpers only: nothing is emulated here)
import nnkrt  # noqa: E402

C = E.C
MATH_ULP = 64


class Stats:
    calls = 0
    seconds = 0.0
    instances = set()
    real_instances = set()    # built with the extension's own options (NNK_GPU_REAL_SHARE)
    hostile_calls = 0         # views no copy can hold: C only
    all_calls = 0
    all_instances = set()


class Share:
    """Which instances go to the device (NNK_GPU_SHARE, NNK_GPU_SEED)."""
    p = 1.0
    seed = "1"
    chosen = {}       # instance -> on the device
    test_reached = False  # the current test has had a call on the device

    @classmethod
    def setup(cls):
        v = os.environ.get("NNK_GPU_SHARE", "") or "1"
        try:
            cls.p = float(v)
        except ValueError:
            cls.p = -1.0
        if not 0 < cls.p <= 1:
            raise SystemExit("gpu_conformance: NNK_GPU_SHARE=%r: expected a fraction in (0, 1]" % v)
        cls.seed = os.environ.get("NNK_GPU_SEED", "") or "1"

    options_var = None    # the extension's variable of extra build options
    options_orig = None   # its value at the start
    test_options = None   # NNK_GPU_TEST_OPTIONS
    real_share = 1.0      # NNK_GPU_REAL_SHARE
    real_chosen = {}

    @classmethod
    def setup_options(cls, ext):
        opts = os.environ.get("NNK_GPU_TEST_OPTIONS", "").strip()
        v = os.environ.get("NNK_GPU_REAL_SHARE", "") or "1"
        try:
            cls.real_share = float(v)
        except ValueError:
            cls.real_share = -1.0
        if not 0 <= cls.real_share <= 1:
            raise SystemExit("gpu_conformance: NNK_GPU_REAL_SHARE=%r: expected a fraction in [0, 1]" % v)
        if not opts:
            return
        if ext != "opencl":
            raise SystemExit("gpu_conformance: NNK_GPU_TEST_OPTIONS is for --ext opencl only")
        cls.options_var = "NNK_OPENCL_OPTIONS"
        cls.options_orig = os.environ.get(cls.options_var)
        cls.test_options = opts

    @classmethod
    def set_options(cls, name):
        """The build options of instance NAME: set before its launches,
        the first of which builds it."""
        if cls.test_options is None:
            Stats.real_instances.add(name)
            return
        if name not in cls.real_chosen:
            h = int(hashlib.sha256(("real:%s:%s" % (cls.seed, name)).encode()).hexdigest(), 16) / float(1 << 256)
            cls.real_chosen[name] = h < cls.real_share
        if cls.real_chosen[name]:
            Stats.real_instances.add(name)
            if cls.options_orig is None:
                os.environ.pop(cls.options_var, None)
            else:
                os.environ[cls.options_var] = cls.options_orig
        else:
            os.environ[cls.options_var] = ((cls.options_orig or "") + " " + cls.test_options).strip()

    @classmethod
    def on_device(cls, name):
        if name not in cls.chosen:
            h = int(hashlib.sha256(("%s:%s" % (cls.seed, name)).encode()).hexdigest(), 16) / float(1 << 256)
            cls.chosen[name] = h < cls.p or not cls.test_reached
        if cls.chosen[name]:
            cls.test_reached = True
        return cls.chosen[name]

    @classmethod
    def wrap(cls, fn):
        @functools.wraps(fn)      # nnkconf orders the tests by the __wrapped__ function's line
        def run():
            cls.test_reached = False
            return fn()
        return run


class Gpu:
    rt = None
    ext_name = "cuda"
    ext = None
    ctx = None
    modules = {}      # C .so -> (nnk module, {instance: kernel name})


def setup(ext_name):
    build = os.environ.get("top_builddir") or os.getcwd()
    Gpu.rt = nnkrt.Runtime(os.environ.get("NNK_LIBNNK") or nnkrt.find_libnnk(build))
    Gpu.ext_name = ext_name
    Gpu.ext = Gpu.rt.extension(ext_name)
    n = Gpu.rt.device_count(Gpu.ext)
    print("# extension %s: %d device%s: %s" % (ext_name, n, "" if n == 1 else "s", Gpu.rt.status(Gpu.ext) or
                                                ", ".join(d[1] for d in Gpu.rt.devices(Gpu.ext))), flush=True)
    if n == 0:
        raise SystemExit("gpu_conformance: extension %s has no devices: %s" % (ext_name, Gpu.rt.status(Gpu.ext)))
    Gpu.ctx = Gpu.rt.context(ext_name, "device_id=0")
    print("# context: %s" % Gpu.rt.context_str(Gpu.ctx), flush=True)


_orig_build = C.build


def _build(path, extra_nnkc=(), cflags=None, tag=""):
    so, cfile = _orig_build(path, extra_nnkc, cflags, tag)
    if so not in Gpu.modules:
        src = path if os.path.isabs(path) else os.path.join(C.HERE, path)
        dirs = [os.path.dirname(src)] + [a[2:] for a in extra_nnkc if a.startswith("-I") and len(a) > 2]
        with open(src) as f:
            text = f.read()
        Gpu.modules[so] = Gpu.rt.module(Gpu.ctx, text, "include_dirs=%s name=%s" % (":".join(dirs), os.path.basename(src)))
    return so, cfile


def _scalar_value(p, a):
    if p.dtype in ("c64", "c128"):  # nnkabi.C64 / C128: the parts
        return complex(a.re, a.im)
    v = a.value
    if p.dtype == "f16":
        return float(np.array([v], dtype=np.uint16).view(np.float16)[0])
    if p.dtype == "bf16":
        return float(C.bf16_to_f32(np.array([v], dtype=np.uint16))[0])
    if p.dtype in ("f32", "f64"):
        return float(v)
    return int(v)


def _unreachable(v, dtype):
    """A view whose elements span more than 2**40 bytes (or past
    int64_t): no copy of it can be made."""
    it = np.dtype(dtype).itemsize
    if not v.data or any(v.shape[i] == 0 for i in range(v.ndim)):
        return False
    span = sum(abs((v.shape[i] - 1) * v.strides[i]) for i in range(v.ndim)) * it
    return span >= 1 << 40


class GpuStrided:
    """Stands in for NAME_strided: the C code, then the same call on the GPU."""

    def __init__(self, k, real, module, kernel_name):
        self.k, self.real, self.module, self.kernel_name = k, real, module, kernel_name
        self.restype = real.restype

    def __call__(self, *ordered):
        k, rt = self.k, Gpu.rt
        Stats.all_calls += 1
        Stats.all_instances.add(k.name)
        if not Share.on_device(k.name):
            return self.real(*ordered)
        naxes, axes, views, scalars, nin = E.parse_call(k, ordered)
        tparams = [p for p in k.inputs if p.tensor]
        if any(_unreachable(v, C.NP[p.dtype]) for v, p in zip(views[:nin], tparams)):
            # a hostile view (test_raw's strides past int64_t): no array
            # holds it, so none can be copied to a device; the C code must
            # refuse it
            Stats.hostile_calls += 1
            rc = self.real(*ordered)
            if rc == 0:
                raise AssertionError("%s: the C code accepted a view whose elements span 2**40 bytes or more" % k.name)
            return rc
        # the inputs before the C code runs: an output may be an input (in place)
        ins = [np.array(E._view_array(v, C.NP[p.dtype])[0], order="C") for v, p in zip(views[:nin], tparams)]
        rc = self.real(*ordered)
        if rc != 0:
            return rc
        want = [E._view_array(v, C.NP[p.dtype])[0].copy() for v, p in zip(views[nin:], k.outputs)]
        axes_l = None if axes is None else [axes[i] for i in range(naxes)]
        # the iteration space: the broadcast of the inputs not read by
        # index (a raw input has no part in it: test_raw's mm_raw reads
        # (M, K) and (K, N) matrices over an (M, K, N) space)
        space = np.broadcast_shapes(*[a.shape for a, p in zip(ins, tparams)
                                      if not p.raw])
        nred = 1
        if k.reduction and nin:
            shape = space
            nd = len(shape)
            for i in (range(nd) if axes_l is None else {(a + nd) % nd for a in axes_l}):
                nred *= max(shape[i], 1)
        t0 = time.time()
        arrays, outs = [], []
        try:
            vals, si = [], 0
            ti = 0
            by_name = {}
            for p in k.inputs:
                if p.tensor:
                    a = rt.from_numpy(Gpu.ctx, ins[ti], dtype=p.dtype)
                    arrays.append(a)
                    vals.append(a)
                    by_name[p.name] = a
                    ti += 1
                else:
                    vals.append(_scalar_value(p, scalars[si][1]))
                    si += 1
            given = []            # the outputs the call passes: an inout parameter's is its input, written in place
            for p, w in zip(k.outputs, want):
                if p.inout:
                    outs.append(by_name[p.name])
                    continue
                o = rt.new(Gpu.ctx, p.dtype, list(w.shape))
                arrays.append(o)
                outs.append(o)
                given.append(o)
            Share.set_options(k.name)
            kern = self.module.kernel(self.kernel_name)
            # NAME_strided takes a reduced output in either form; nnk_launch
            # the one keepdims names: kept when a reduced output has the
            # iteration space's rank and axes are reduced
            nd_in = len(space)
            keep = k.reduction and any(p.reduced and not p.inout and w.ndim == nd_in and w.ndim > 0
                                       and (axes_l is None or len(axes_l) > 0) for p, w in zip(k.outputs, want))
            res = rt.launch(kern, vals, given, axes=axes_l, keepdims=keep)
            for r in res:
                rt.free(r)
            got = [rt.to_numpy(o).view(C.NP[p.dtype]) for o, p in zip(outs, k.outputs)]
        except nnkrt.NnkError as e:
            raise AssertionError("%s on %s: %s" % (k.name, Gpu.ext_name, e))
        finally:
            for a in arrays:
                rt.free(a)
            Stats.seconds += time.time() - t0
        Stats.calls += 1
        Stats.instances.add(k.name)
        E.compare(k, want, got, ins, nred, (0, 0, 0), where="%s on %s" % (k.name, Gpu.ext_name),
                  math_ulp=0 if Gpu.ext_name == "cpu" else MATH_ULP)
        return rc


_orig_init = C.Kernel.__init__


def _init(self, lib, name):
    _orig_init(self, lib, name)
    m = Gpu.modules.get(lib._name)
    if m is not None:
        kernel_name = C.KernelDesc.in_dll(lib, name + "__desc").kernel.decode()
        self.strided = GpuStrided(self, self.strided, m, kernel_name)


def install():
    C.build = _build
    C.Kernel.__init__ = _init


# ---- device views: strided kernels on the GPU ------------------------------------------

VIEWS_SRC = """
elementwise scale<T: float>(x: T[], a: T) -> (y: T[]) { y = a * x; }
reduction rsum<T: float>(x: T[]) -> (r: T) { r = sum(x); }
reduction softmax<T: float>(x: T[]) -> (y: T[]) { let m = max(x); let s = sum(exp(x - m)); y = exp(x - m) / s; }
"""


def test_device_views():
    """Transposed device arrays (strided kernels: ew_s, thread-per-output
    and split reductions) against numpy."""
    rt, ctx = Gpu.rt, Gpu.ctx
    m = rt.module(ctx, VIEWS_SRC, "name=views.nnk")
    rng = np.random.default_rng(5)
    for shape in ((257, 3), (3, 1031), (64, 4097), (2, 100003)):
        x = rng.standard_normal(shape).astype(np.float32)
        d = rt.from_numpy(ctx, x)
        t = rt.permute(d, [1, 0])
        xt = x.T
        y = rt.launch(m.kernel("scale"), [t, 1.5])[0]
        C.close(rt.to_numpy(y), (np.float32(1.5) * xt).astype(np.float32), "f32", what="scale of a transposed %s" % (shape,))
        rt.free(y)
        for axis in (0, 1):
            r = rt.launch(m.kernel("rsum"), [t], axes=[axis])[0]
            want = xt.astype(np.float64).sum(axis=axis)
            got = rt.to_numpy(r)
            C.check(np.allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(xt.shape[axis])),
                    "rsum over axis %d of a transposed %s" % (axis, shape))
            rt.free(r)
            s = rt.launch(m.kernel("softmax"), [t], axes=[axis])[0]
            e = np.exp(xt.astype(np.float64) - xt.max(axis=axis, keepdims=True))
            C.close(rt.to_numpy(s), (e / e.sum(axis=axis, keepdims=True)).astype(np.float32), "f32", ulp=64,
                    atol=1e-6, what="softmax over axis %d of a transposed %s" % (axis, shape))
            rt.free(s)
        rt.free(t)
        rt.free(d)


def main():
    argv = sys.argv[1:]
    ext = "cuda"
    if len(argv) >= 2 and argv[0] == "--ext":
        ext = argv[1]
        argv = argv[2:]
    if not argv:
        print(__doc__)
        return 2
    Share.setup()
    Share.setup_options(ext)
    setup(ext)
    t0 = time.time()
    if argv[0] == "--views":
        rc = C.main({"test_device_views": test_device_views}, argv[1:])
    else:
        install()
        def module_arg(a):
            return a.endswith(".py") or (".py@" in a and "/" in a.rsplit("@", 1)[1])
        paths = [a for a in argv if module_arg(a)]
        opts = [a for a in argv if not module_arg(a)]
        rc = 0
        import importlib
        for p in paths:
            part = None
            if not p.endswith(".py"):
                p, spec = p.rsplit("@", 1)
                try:
                    part = tuple(int(x) for x in spec.split("/"))
                except ValueError:
                    part = (-1, 0)
                if len(part) != 2 or not 0 <= part[0] < part[1]:
                    raise SystemExit("gpu_conformance: %s@%s: expected @I/N with 0 <= I < N" % (p, spec))
            path = p if os.path.exists(p) else os.path.join(SRCDIR, "tests", "conformance", p)
            sys.path.insert(0, os.path.dirname(path))
            mod = importlib.import_module(os.path.splitext(os.path.basename(path))[0])
            sys.argv = [path] + opts
            tests = {n: Share.wrap(f) if n.startswith("test_") and callable(f) else f for n, f in vars(mod).items()}
            if part is not None:  # the tests in the file's order (as nnkconf runs them), every Nth
                names = sorted((n for n, f in tests.items() if n.startswith("test_") and callable(f)),
                               key=lambda n: getattr(tests[n], "__wrapped__", tests[n]).__code__.co_firstlineno)
                for i, n in enumerate(names):
                    if i % part[1] != part[0]:
                        del tests[n]
                print("# %s@%d/%d: %d of its %d tests" % (os.path.basename(path), part[0], part[1],
                                                         (len(names) - part[0] + part[1] - 1) // part[1], len(names)),
                      flush=True)
            for name in os.environ.get("NNK_GPU_SKIP", "").split(","):
                if name.strip() in tests:
                    del tests[name.strip()]
                    print("# skipped: %s (NNK_GPU_SKIP)" % name.strip(), flush=True)
            rc = C.main(tests, opts) or rc
        print("# on %s: %d calls of %d instances, %.1fs on the device side, %.1fs in all" % (
            ext, Stats.calls, len(Stats.instances), Stats.seconds, time.time() - t0), flush=True)
        print("# share %g (seed %s): %d of %d instances (%.1f%%) and %d of %d calls (%.1f%%) on %s, the rest in C "
              "only" % (Share.p, Share.seed, len(Stats.instances), len(Stats.all_instances),
                        100.0 * len(Stats.instances) / max(len(Stats.all_instances), 1), Stats.calls,
                        Stats.all_calls, 100.0 * Stats.calls / max(Stats.all_calls, 1), ext), flush=True)
        if Stats.hostile_calls:
            print("# %d calls with views no copy can hold (strides past int64_t) ran in C only" % Stats.hostile_calls,
                  flush=True)
        if Share.test_options is not None:
            print("# build options: %d of the %d instances on %s with the extension's own (NNK_GPU_REAL_SHARE %g), "
                  "the rest with '%s' added" % (len(Stats.real_instances & Stats.instances), len(Stats.instances),
                                                ext, Share.real_share, Share.test_options), flush=True)
        if Stats.calls == 0:
            print("# nothing ran on %s" % ext)
            rc = 1
    Gpu.rt.lib.nnk_context_free(Gpu.ctx)
    return rc


if __name__ == "__main__":
    sys.exit(main())
