"""emu_conformance - the numeric conformance suite of the C back end
(tests/conformance) run once more with every NAME_strided call also
executed by the generated CUDA on the CUDA emulation layer (tests/cudaemu),
through the GPU's host-side dispatch (runtime/ext/cuda/dispatch.c), and
compared with the C result.

For every kernel file the suite builds (nnkconf.build), this builds one
shared object from the generated C, the generated CUDA (compiled as C++
against tests/cudaemu/cudaemu.h), tests/cudaemu/emu_backend.cc,
emu_plan.c, dispatch.c and cudaemu.cc.  Each NAME_strided call of the
suite runs the emulated kernels first, into the same output buffers
(restored to their poison afterwards), then the C code, and the two
results are compared:

  * elementwise kernels: integers and bools bit for bit; floats within
    EW_ULP (4) ulp, 1 for f16/bf16 (NaNs equal): the emulation's math
    functions are the host libm's, the C back end may use its own
    vectorized ones (templates/c), and neither is correctly rounded;
  * reductions: integers, bools and indices exactly; floats within 4 ulp,
    or eps * (n + 16) * max|x| of the inputs (the two back ends add in
    different orders), or 1e-3 (f64: 1e-9) of the largest output (an
    epilogue that divides by a sum that cancels, x / sum(x)).

The dispatch knobs rotate from call to call over every combination of
block size (32, 64, 256), grid cap (1, 3, none: grids smaller than the
data take grid-stride loops) and path: for reductions chosen, block per
output, thread per output, split, warp per output, and rd_row (the row
kept on chip) as a warp and as a block per output (a shape it refuses runs
its per-phase twin; with every combination, the row kernels' results are
compared bit for bit with the twins': row_twins); for elementwise kernels
chosen (32-bit strided offsets where they fit) or 64-bit strided offsets;
NNK_EMU_FULL=1 runs every combination
on every call.  emu_extra.py adds odd sizes with every combination.

    emu_conformance.py TEST_MODULE.py [-k SUBSTRING]

Environment: as nnkconf (top_builddir, top_srcdir, CC), CXX (default c++);
NNK_EMU_CXX (default CXX) and NNK_EMU_OPT (default -O0) compile the
generated CUDA and the emulation runtime, so that an optimiser-dependent
bug of the generated code cannot hide behind one compiler at -O0:
emu-conformance.sh runs the plain build's suite at -O2, the sanitizer
build's at -O0, and emu-clang.sh a slice with clang++ -O2.
"""
import ctypes
import hashlib
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("top_srcdir") or os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "conformance"))
import nnkconf as C  # noqa: E402

CXX = os.environ.get("NNK_EMU_CXX") or os.environ.get("CXX") or "c++"
OPT = os.environ.get("NNK_EMU_OPT") or "-O0"
if OPT not in ("-O0", "-O1", "-O2", "-O3", "-Os"):
    sys.exit("emu_conformance: NNK_EMU_OPT must be -O0..-O3 or -Os, not %r" % OPT)
EMU = os.path.join(SRCDIR, "tests", "cudaemu")
WORK = os.path.join(C.WORK, "emu")
CXXFLAGS = ["-std=gnu++17", OPT, "-fPIC", "-pthread", "-ffp-contract=off", "-w",
            "-I" + os.path.join(EMU, "include"), "-I" + EMU, "-include", os.path.join(EMU, "cudaemu.h")]
FULL = os.environ.get("NNK_EMU_FULL") == "1"
EW_ULP = 4
PLAN_ERANGE = 6  # templates/c/plan.h: NAME_strided's index out of range

BLOCKS = (32, 64, 256)
GRIDS = (1, 3, 0)
FORCES = (0, 1, 2, 3, 4, 5, 6, 7)  # 5, 6: warp and block per output with the row on chip; 7: in shared memory
ROW_TWIN = {5: 4, 6: 1, 7: 1}  # ... which give the bits of these (same block and grid cap)
EW_COMBOS = [(b, g, f) for f in (0, 1) for b in BLOCKS for g in GRIDS]  # f 1: 64-bit strided offsets
RD_COMBOS = [(b, g, f) for f in FORCES for b in BLOCKS for g in GRIDS]


class Stats:
    calls = 0
    launches = 0
    combos = set()
    seconds = 0.0
    row_twins = 0    # row-kernel results compared bit for bit with their twins
    row_skipped = 0  # row-kernel launches refused (no row kernels, or too long a row)


# ---- building -----------------------------------------------------------------

_runtime = None


def runtime_objects():
    """cudaemu.cc, emu_backend.cc, emu_plan.c, dispatch.c: compiled once."""
    global _runtime
    if _runtime:
        return _runtime
    os.makedirs(WORK, exist_ok=True)
    srcs = [(os.path.join(EMU, "cudaemu.cc"), "cxx"), (os.path.join(EMU, "emu_backend.cc"), "cxx"),
            (os.path.join(EMU, "emu_plan.c"), "c"), (os.path.join(SRCDIR, "runtime", "ext", "cuda", "dispatch.c"), "c")]
    h = hashlib.sha1()
    for s, _ in srcs + [(os.path.join(EMU, "cudaemu.h"), ""), (os.path.join(EMU, "cudaemu_launch.h"), ""),
                        (os.path.join(SRCDIR, "runtime", "ext", "cuda", "dispatch.h"), ""),
                        (os.path.join(SRCDIR, "runtime", "include", "nnk", "abi.h"), ""),
                        (os.path.join(SRCDIR, "templates", "c", "plan.h"), "")]:
        with open(s, "rb") as f:
            h.update(f.read())
    h.update((CXX + C.CC).encode())
    tag = h.hexdigest()[:12]
    objs = []
    for s, lang in srcs:
        o = os.path.join(WORK, "%s-%s.o" % (os.path.basename(s), tag))
        if not os.path.exists(o):
            inc = ["-I" + os.path.join(SRCDIR, "runtime", "include"), "-I" + os.path.join(SRCDIR, "runtime", "ext", "cuda"),
                   "-I" + os.path.join(SRCDIR, "templates"), "-I" + EMU]
            if lang == "cxx":
                cmd = [CXX, "-std=gnu++17", "-O2", "-fPIC", "-pthread", "-w"] + inc + ["-I" + os.path.join(EMU, "include")]
                if s.endswith("cudaemu.cc"):
                    cmd += ["-include", os.path.join(EMU, "cudaemu.h")]
            else:
                cmd = [C.CC, "-std=gnu11", "-O2", "-fPIC", "-w"] + inc
            tmp = "%s.tmp%d" % (o, os.getpid())
            C.run(cmd + ["-c", s, "-o", tmp])
            os.replace(tmp, o)
        objs.append(o)
    _runtime = objs
    return objs


def build_emu(src, extra_nnkc, cfile, c_so=None):
    """The emulation library of one kernel file: its generated C (for the
    descriptors) and CUDA, and the emulation runtime.  c_so: the generated
    C already built as a shared object (an absolute path), which the library
    then needs instead of compiling the C once more (tests/fuzz: it is
    loaded first, and the C's compile is a third of the library's)."""
    os.makedirs(WORK, exist_ok=True)
    base = os.path.splitext(os.path.basename(cfile))[0]
    cu = os.path.join(WORK, base + ".cu")
    C.run([C.NNKC, "-S", "--target=cuda"] + list(extra_nnkc) + [src, "-o", cu])
    h = hashlib.sha1()
    for p in (cu, cfile):
        with open(p, "rb") as f:
            h.update(f.read())
    h.update(repr(CXXFLAGS).encode() + CXX.encode())
    # the runtime objects' names carry the hash of their sources (dispatch.c...)
    h.update(" ".join(runtime_objects()).encode())
    h.update(repr(c_so).encode())
    tag = h.hexdigest()[:12]
    so = os.path.join(WORK, "%s-emu-%s.so" % (base, tag))
    if not os.path.exists(so):
        t0 = time.time()
        cuo, co = "%s.%d.cu.o" % (so, os.getpid()), "%s.%d.c.o" % (so, os.getpid())
        C.run([CXX] + CXXFLAGS + ["-x", "c++", "-c", cu, "-o", cuo])
        if c_so is None:
            C.run([C.CC, "-std=c11", "-O0", "-DNNK_NO_CLONES", "-fPIC", "-w", "-c", cfile, "-o", co])  # descriptors only
        tmp = "%s.tmp%d" % (so, os.getpid())
        C.run([CXX, "-shared", "-o", tmp, cuo, co if c_so is None else os.path.abspath(c_so)] + runtime_objects() +
              ["-pthread", "-lm", "-ldl"])
        os.replace(tmp, so)
        for p in (cuo, co) if c_so is None else (cuo,):
            os.unlink(p)
        print("# built %s for the emulation in %.1fs" % (os.path.basename(so), time.time() - t0), flush=True)
    return so


class EmuLib:
    def __init__(self, so):
        self.lib = ctypes.CDLL(so)
        f = self.lib.nnk_emu_strided
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint,
                      ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        self.fn = f


_emu_of_so = {}
_orig_build = C.build


def _build(path, extra_nnkc=(), cflags=None, tag=""):
    so, cfile = _orig_build(path, extra_nnkc, cflags, tag)
    if so not in _emu_of_so:
        src = path if os.path.isabs(path) else os.path.join(C.HERE, path)
        _emu_of_so[so] = EmuLib(build_emu(src, extra_nnkc, cfile))
    return so, cfile



# ---- one call on both back ends --------------------------------------------------

def _view_array(v, dtype):
    """A numpy array over the memory an nnk_view describes (no copy)."""
    nd = v.ndim
    shape = [v.shape[i] for i in range(nd)]
    strides = [v.strides[i] for i in range(nd)]
    it = np.dtype(dtype).itemsize
    if any(s == 0 for s in shape) or not v.data:
        return np.empty(shape, dtype=dtype), None
    lo = sum(min(0, (e - 1) * s) for e, s in zip(shape, strides))
    hi = sum(max(0, (e - 1) * s) for e, s in zip(shape, strides))
    nbytes = (hi - lo + 1) * it
    buf = (ctypes.c_char * nbytes).from_address(v.data + lo * it)
    flat = np.frombuffer(buf, dtype=dtype)
    a = np.lib.stride_tricks.as_strided(flat[-lo:], shape=shape, strides=[s * it for s in strides])
    return a, flat


def _float_tol(t):
    return {"f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f32": 2.0 ** -23, "f64": 2.0 ** -52}[t]


def _complex_bad(got, want, t, math_ulp, nred, inputs):
    """c64/c128: equal parts (NaNs equal), or normwise within 16 * math_ulp
    eps of |C's value| (the complex functions combine several of the
    libm's), plus for reductions eps * (n + 16) * max|x| (other orders)."""
    eps = 2.0 ** -24 if t == "c64" else 2.0 ** -53
    g, w = np.asarray(got).astype(np.complex128), np.asarray(want).astype(np.complex128)
    with np.errstate(all="ignore"):
        same = ((g.real == w.real) | (np.isnan(g.real) & np.isnan(w.real))) & \
               ((g.imag == w.imag) | (np.isnan(g.imag) & np.isnan(w.imag)))
        tol = 16 * max(math_ulp, 1) * eps * np.abs(w)
        if nred is not None:
            scale = max([1.0] + [float(np.max(np.abs(np.where(np.isfinite(x), x, 0)))) for x in inputs
                                 if x.size and x.dtype.kind in "fiuc"])
            tol = tol + eps * (nred + 16) * scale
        return ~same & ~(np.abs(g - w) <= tol)


def compare(k, outs, emu_outs, inputs, nred, combo, where=None, math_ulp=0):
    """outs: the C results; emu_outs: the others'.  math_ulp: the ulp
    allowed for elementwise float results (0: bit for bit; a GPU's libm
    differs from the host's)."""
    paths = (["chosen", "block", "thread", "split", "warp", "warp row on chip", "block row on chip",
              "block row in shared memory"] if k.reduction
             else ["chosen", "64-bit offsets"])
    what = where or "%s under emulation (block %d, grid cap %s, path %s)" % (
        k.name, combo[0], combo[1] or "none", paths[combo[2]])
    for p, want, got in zip(k.outputs, outs, emu_outs):
        if want.shape != got.shape:
            raise AssertionError("%s: output %s has shape %s, C %s" % (what, p.name, got.shape, want.shape))
        t = p.dtype
        if t in ("c64", "c128"):
            bad = _complex_bad(got, want, t, math_ulp, nred if k.reduction else None, inputs)
        elif t not in ("f16", "bf16", "f32", "f64") or not k.reduction:
            if t in ("f16", "bf16", "f32", "f64"):
                bad = C.ulps(got, want, t) > (min(math_ulp, 1) if t in ("f16", "bf16") else math_ulp)
            else:
                bad = got != want
        else:
            # different summation orders: a few ulp, or eps * (n + 16) * max|x| of the inputs
            d = C.ulps(got, want, t)
            gv = (C.bf16_to_f32(got) if t == "bf16" else got).astype(np.float64)
            wv = (C.bf16_to_f32(want) if t == "bf16" else want).astype(np.float64)
            scale = 1.0
            for x in inputs:
                xv = C.bf16_to_f32(x) if getattr(x, "_is_bf16", False) else x
                if xv.size and xv.dtype.kind in "fiub":
                    with np.errstate(invalid="ignore"):
                        m = np.nanmax(np.abs(np.where(np.isfinite(xv.astype(np.float64)), xv.astype(np.float64), 0)))
                    scale = max(scale, float(m))
            acc = _float_tol("f64" if t == "f64" else "f32")
            atol = acc * (nred + 16) * scale + 4 * _float_tol(t) * np.abs(wv)
            # an epilogue may divide by a sum that cancels (x / sum(x)): then
            # the difference is relative to the largest output
            finite = np.isfinite(wv)
            big = float(np.max(np.abs(wv[finite]))) if np.any(finite) else 0.0
            glob = (1e-9 if t == "f64" else 1e-3) * big
            with np.errstate(invalid="ignore"):
                close = (d <= max(4, math_ulp)) | (np.abs(gv - wv) <= atol) | (np.abs(gv - wv) <= glob)
            bad = ~close
        if np.any(bad):
            idx = np.argwhere(np.atleast_1d(bad))
            lines = ["%s: %d of %d values of %s differ from the C back end" % (what, len(idx), want.size, p.name)]
            g1, w1 = np.atleast_1d(got), np.atleast_1d(want)
            for ix in idx[:5]:
                ix = tuple(ix)
                lines.append("  at %s: emulated %r, C %r" % (ix, g1[ix], w1[ix]))
            raise AssertionError("\n".join(lines))


def row_twins(k, results):
    """The row kernel (rd_row, as a warp or a block per position) gives rd_warp's and rd_block's
    bits exactly, whatever the tolerance against C: same block, grid cap."""
    by = {c: (rc, got) for c, rc, _, got in results}
    for (b, g, f), (rc, got) in by.items():
        twin = by.get((b, g, ROW_TWIN.get(f)))
        if f not in ROW_TWIN or twin is None or rc != 0 or twin[0] != 0:
            continue
        Stats.row_twins += 1
        for p, x, y in zip(k.outputs, got, twin[1]):
            if x.tobytes() != y.tobytes():
                raise AssertionError("%s under emulation (block %d, grid cap %s): output %s of the row kept on chip "
                                     "(path %d) differs from path %d's bits" % (k.name, b, g or "none", p.name, f,
                                                                                 ROW_TWIN[f]))


class EmuStrided:
    """Stands in for a kernel's NAME_strided: the emulated CUDA, then C."""

    def __init__(self, k, real, emu):
        self.k, self.real, self.emu = k, real, emu
        self.restype = real.restype

    def __call__(self, *ordered):
        k = self.k
        naxes, axes, views, scalars, nin = parse_call(k, ordered)
        sc = (C.Scalar * max(len(scalars), 1))()
        for i, (p, a) in enumerate(scalars):
            # (a complex one is an nnk_c64 / nnk_c128 structure: the member as it is)
            setattr(sc[i], C.nnkabi.MEMBER[p.dtype], a if p.dtype in ("c64", "c128") else a.value)
        vptrs = (ctypes.c_void_p * len(views))(*[ctypes.addressof(v) for v in views])
        # (a raw input is no part of the iteration space: emu_backend.cc
        # learns it from NAME__cu_raw, which only an instance whose kernels
        # read raw parameters has; one that reads none still has the view)
        reduced = (ctypes.c_uint8 * len(views))(*([int(p.raw) for p in k.inputs if p.tensor] +
                                                  [int(p.reduced) for p in k.outputs]))
        outs = [_view_array(v, C.NP[p.dtype]) for v, p in zip(views[nin:], k.outputs)]
        # (the inputs scale the tolerances; a raw view may be hostile, strides past any buffer: not mapped)
        ins = [np.zeros(0) if p.raw else _view_array(v, C.NP[p.dtype])[0]
               for v, p in zip(views[:nin], [p for p in k.inputs if p.tensor])]
        poison = [f.copy() if f is not None else None for _, f in outs]
        nred = 1
        if k.reduction:
            shape = [views[0].shape[i] for i in range(views[0].ndim)] if nin else []
            nd = len(shape)
            red = range(nd) if axes is None else {(axes[i] + nd) % nd for i in range(naxes)} if nd else []
            for i in red:
                nred *= max(shape[i], 1)
        Stats.calls += 1
        combos = (RD_COMBOS if k.reduction else EW_COMBOS)
        todo = combos if FULL else [combos[Stats.calls % len(combos)]]
        results = []
        t0 = time.time()
        for combo in todo:
            err = ctypes.create_string_buffer(1024)
            rc = self.emu.fn(k.name.encode(), int(k.reduction), nin, len(k.outputs), vptrs, reduced, sc,
                             len(scalars), naxes, axes, combo[0], combo[1], combo[2], err, 1024)
            if rc == -3 and combo[2] == 3 and b"too many output positions" in err.value:
                combo = (combo[0], combo[1], 0)
                rc = self.emu.fn(k.name.encode(), int(k.reduction), nin, len(k.outputs), vptrs, reduced, sc,
                                 len(scalars), naxes, axes, combo[0], combo[1], combo[2], err, 1024)
            if rc == -3 and combo[2] in ROW_TWIN and b"does not fit the kernel that keeps it on chip" in err.value:
                # no row kernels (one pass reads each input), or a longer
                # row: with every combination the twin runs anyway, else it
                # runs instead, so that the call is still emulated
                Stats.row_skipped += 1
                if FULL:
                    continue
                combo = (combo[0], combo[1], ROW_TWIN[combo[2]])
                rc = self.emu.fn(k.name.encode(), int(k.reduction), nin, len(k.outputs), vptrs, reduced, sc,
                                 len(scalars), naxes, axes, combo[0], combo[1], combo[2], err, 1024)
            Stats.launches += 1
            Stats.combos.add((k.reduction,) + combo)
            results.append((combo, rc, err.value.decode(errors="replace"), [a.copy() for a, _ in outs]))
            for (_, f), p0 in zip(outs, poison):   # the C code starts from the same poison
                if f is not None:
                    f[...] = p0
        Stats.seconds += time.time() - t0
        row_twins(k, results)
        rc = self.real(*ordered)
        if rc == PLAN_ERANGE:
            # an index out of range (raw parameters, index(d)): the device's
            # range flag says so too (emu_backend.cc returns -4)
            for combo, erc, msg, _ in results:
                if erc != -4:
                    raise AssertionError("%s under emulation (block %d, grid cap %d, path %d): the C code gives "
                                         "NNK_PLAN_ERANGE, the emulated CUDA %d (%s)" % (
                                             k.name, combo[0], combo[1], combo[2], erc, msg))
        if rc == 0:
            want = [a.copy() for a, _ in outs]
            for combo, erc, msg, got in results:
                if erc != 0:
                    raise AssertionError("%s under emulation (block %d, grid cap %d, path %d) failed (%d): %s" % (
                        k.name, combo[0], combo[1], combo[2], erc, msg))
                compare(k, want, got, ins, nred, combo, math_ulp=EW_ULP)
        return rc


_orig_init = C.Kernel.__init__


def _init(self, lib, name):
    _orig_init(self, lib, name)
    emu = _emu_of_so.get(lib._name)
    if emu is not None:
        self.strided = EmuStrided(self, self.strided, emu)


def install():
    """Runs every NAME_strided call of the suite under emulation too."""
    C.build = _build
    C.Kernel.__init__ = _init


def parse_call(k, ordered):
    """The arguments of a NAME_strided call: (naxes, axes or None, views,
    [(param, ctypes scalar)], number of tensor inputs)."""
    args = list(ordered)
    naxes, axes = 0, None
    if k.reduction:
        naxes = args.pop(0).value
        ax = args.pop(0)
        axes = None if isinstance(ax, ctypes.c_void_p) and ax.value is None else ax
    views, scalars = [], []
    for p in k.inputs:
        a = args.pop(0)
        if p.tensor:
            views.append(a._obj)
        else:
            scalars.append((p, a))
    ins = dict(zip([p.name for p in k.inputs if p.tensor], views))
    views += [a._obj for a in args]
    # an inout parameter's output (after the declared ones) is its input's
    # view: the restored "poison" is then the input's value
    views += [ins[p.name] for p in k.outputs if p.inout]
    return naxes, axes, views, scalars, len(views) - len(k.outputs)


def main():
    if len(sys.argv) < 2:
        print("usage: emu_conformance.py TEST_MODULE.py [-k SUBSTRING]")
        return 2
    name = sys.argv[1]
    path = name if os.path.isabs(name) or os.path.exists(name) else os.path.join(SRCDIR, "tests", "conformance", name)
    sys.path.insert(0, os.path.dirname(path))
    mod_name = os.path.splitext(os.path.basename(path))[0]
    t0 = time.time()
    install()
    import importlib
    mod = importlib.import_module(mod_name)
    sys.argv = [path] + sys.argv[2:]
    rc = C.main(vars(mod), sys.argv[1:])
    print("# %s under emulation (%s %s): %d calls, %d emulated launches over %d knob combinations, %.1fs emulating, "
          "%.1fs in all" % (mod_name, CXX, OPT, Stats.calls, Stats.launches, len(Stats.combos), Stats.seconds,
                            time.time() - t0), flush=True)
    if Stats.calls == 0:
        print("# no NAME_strided call was emulated")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
