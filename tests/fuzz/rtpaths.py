"""rtpaths - the differential fuzzer's execution paths through libnnk's
runtime (tests/fuzz/README, "Runtime paths"), driven through the Python
package python/nnk:

  module   nnk.compile (nnk_module_compile) on the cpu extension, each call
           nnk_launch on the fuzzer's numpy arguments as they are (strided,
           reversed and broadcast views, no copy), and once more with out=
           an input's memory (in place) and with out= fresh arrays;
  jitfn    nnk.jiterator._create_jit_fn (nnk_create_jit_fn) of the
           program's text, called the same way;
  opencl   nnk.compile in an opencl context (PoCL here): the arguments
           copied to device arrays, the outputs read back; in place too.

Each call's outputs are checked against the oracle like the C back end's
(nnkfuzz.check_program); besides, where the docs promise the C back end's
bits, the bytes must be the C back end's:

  module, jitfn: every output (docs/c-backend.md: "the same bits on every
           x86-64, SSE2, AVX2 or AVX-512, JIT or AOT, any thread count";
           docs/runtime.md: a reduction's split gives the same bits);
  opencl:  the outputs of a call whose every operation the oracle takes as
           exact (no float reduction, no function but vmath.h's:
           docs/opencl.md, "Numerics": integers, conversions, f16/bf16
           rounding, + - * / sqrt correctly rounded where the device says
           so, and exp expm1 log log1p sin cos tanh sigmoid in f32, f16 or
           bf16, vmath.h as in C); the others only against the oracle,
           whose perturbed runs (16 ulp) cover OpenCL 1.2's bounds for the
           built-ins (section 7.4).

A kind whose package or device is missing is skipped, saying so once
(NNK_OPENCL_REQUIRED=1: a missing OpenCL device is a failure).
"""
import os
import sys

import numpy as np

import model as M
import nnkconf as C

KINDS = ("module", "jitfn", "opencl")


class Unavailable(Exception):
    pass


_nnk = []
_ctx = {}
STATS = {}      # kind -> programs checked (for the summary)
CALLS = {}      # what -> calls of a kind the summary counts (CALL_WHAT)
CALL_WHAT = {"vmath": "opencl held to the C bytes with vmath functions",
             "empty-arg": "argmax/argmin of an empty slice",
             "dtype": "type variables by dtype=", "out": "type variables by out="}


def count(what):
    CALLS[what] = CALLS.get(what, 0) + 1


def nnk_pkg():
    if not _nnk:
        stage = os.path.join(C.BUILDDIR, "python", "stage")
        if os.path.isdir(stage) and stage not in sys.path:
            sys.path.insert(0, stage)
        try:
            import nnk
        except ImportError as e:
            raise Unavailable("the Python package is not built (%s)" % e)
        _nnk.append(nnk)
    return _nnk[0]


def context(kind):
    """The context of a kind's launches (None: the default, cpu)."""
    if kind in _ctx:
        return _ctx[kind]
    nnk = nnk_pkg()
    ctx = None
    if kind == "opencl":
        from nnk import ext_utils
        old = os.environ.get("NNK_EXTENSION_PATH")
        os.environ["NNK_EXTENSION_PATH"] = os.path.join(C.BUILDDIR, ".libs") + (":" + old if old else "")
        try:
            ext = ext_utils.import_extension_module("opencl")
        except nnk.Error as e:
            raise Unavailable("no opencl extension: %s" % e)
        if ext.get_device_count() == 0:
            if os.environ.get("NNK_OPENCL_REQUIRED") == "1":
                raise RuntimeError("no OpenCL device (NNK_OPENCL_REQUIRED=1): %s" % ext.status)
            raise Unavailable("no OpenCL device: %s" % ext.status)
        ctx = ext.context(device_id=0)
    _ctx[kind] = ctx
    return ctx


def setup_env(opencl_opt_disable):
    """In the fuzzer's child, before the first compile: no disk caches
    (every program is new; PoCL's would grow without end), and the
    OpenCL build options of the batch."""
    os.environ["NNK_CACHE"] = "0"
    os.environ["POCL_KERNEL_CACHE"] = "0"
    if opencl_opt_disable:
        os.environ["NNK_OPENCL_OPTIONS"] = "-cl-opt-disable"
    else:
        os.environ.pop("NNK_OPENCL_OPTIONS", None)


class Program:
    """One program on one path: compiled on the first call."""

    def __init__(self, kind, prog, path, extra):
        self.kind, self.prog, self.path, self.extra = kind, prog, path, extra
        self.fn = None

    def kernel(self):
        if self.fn is not None:
            return self.fn
        nnk = nnk_pkg()
        ctx = context(self.kind)
        opt = {"opt_level": 3} if "-O3" in self.extra else {}
        p = self.prog
        try:
            if self.kind == "jitfn":
                self.fn = nnk.jiterator._create_jit_fn(p.render(), kernel=p.kernel.name, **opt)
            else:
                lib = os.path.basename(self.path)[:-4] + "-" + p.prefix + "lib.nnk" if p.imported else None
                m = nnk.compile(p.render(lib), name=os.path.basename(self.path),
                                include_dirs=[os.path.dirname(os.path.abspath(self.path))], ctx=ctx, **opt)
                self.fn = getattr(m, p.kernel.name)
        except nnk.Error as e:
            raise Fail("reject", "%s: %s refused a valid program: %s" % (self.kind, p.kernel.name, e))
        STATS[self.kind] = STATS.get(self.kind, 0) + 1
        return self.fn


class Fail(Exception):
    def __init__(self, kind, msg):
        Exception.__init__(self, "%s: %s" % (kind, msg))
        self.kind, self.msg = kind, msg


def unbound(prog, b):
    """The type variables of instance b that no array input binds, each
    with how the call binds it (docs/runtime.md, nnk_launch 3): "out", a
    given output typed with it (its dtype); "dtype", the call's dtype=
    (nnk_args_type), where only scalars have it."""
    tys = {p.ty for p in prog.kernel.params if p.tensor or p.mode}
    outs = {o.ty for o in prog.kernel.outs}
    return {v: "out" if v in outs else "dtype" for v in b if v not in tys}


def dtype_form(prog, b, need, rng):
    """dtype= for the variables need (names): by name (a dict), a tuple in
    declaration order (None for the others), or a bare dtype for a kernel
    of one type variable (python.md)."""
    gs = [g for g, _ in prog.kernel.generics]
    forms = ["dict", "tuple"] + (["one"] if len(gs) == 1 else [])
    f = forms[rng.integers(len(forms))] if rng is not None else "dict"
    if f == "one":
        return b[gs[0]]
    if f == "tuple":
        return tuple(b[g] if g in need else None for g in gs)
    return {g: b[g] for g in need}


def to_arg(kind, a, t, ctx):
    """A fuzzer argument (numpy storage, bf16 as bits) for this path."""
    nnk = nnk_pkg()
    if t == "bf16":
        # numpy has no bfloat16: a bfloat16 array made from the values (exact)
        a = nnk.asarray(C.bf16_to_f32(np.asarray(a).view(np.uint16)), dtype="bfloat16", ctx=ctx)
    elif kind == "opencl":
        a = nnk.asarray(np.asarray(a), ctx=ctx)
    return a


def from_out(o, t):
    """An output as the fuzzer holds them (numpy storage, bf16 as bits)."""
    if not isinstance(o, np.ndarray):
        o = o.numpy()
    o = np.asarray(o)
    if t == "bf16":
        return (np.array(o, dtype=np.float32, order="C").view(np.uint32) >> 16).astype(np.uint16)
    return o


def scalar_arg(v, t):
    if M.is_complex(t):
        return complex(v)
    if t == "bool":
        return bool(v)
    if M.is_int(t):
        return int(v)
    return float(v)


def new_out(kind, t, shape, ctx):
    """A fresh output array of type t for this path."""
    nnk = nnk_pkg()
    if t == "bf16":
        return nnk.empty(tuple(shape), dtype="bfloat16", ctx=ctx)
    dt = np.dtype(C.NP[t]) if t in C.NP else np.dtype(t)
    if kind == "opencl":
        return nnk.empty(tuple(shape), dtype=dt.name, ctx=ctx)
    return np.empty(tuple(shape), dtype=dt)


def call(pp, prog, b, args, kw, shape, out=None, inout_bufs=None, rng=None):
    """The program's call on pp's path; returns its outputs in the order of
    prog.kernel.outs (numpy storage).  A type variable no array input binds
    is bound as unbound() says: the outputs before and at the last one
    typed with an "out" one given (fresh arrays), the "dtype" ones by
    dtype=."""
    nnk = nnk_pkg()
    k = prog.kernel
    ctx = context(pp.kind)
    free = unbound(prog, b)
    pos, named, dev_inout = [], {}, {}
    tensor_args, gap = 0, False
    for i, (p, a) in enumerate(zip(k.params, args)):
        t = b.get(p.ty, p.ty)
        if p.tensor or p.mode:
            if not p.mode:
                tensor_args += 1
            if inout_bufs is not None and i in inout_bufs:
                x = inout_bufs[i]
            else:
                x = to_arg(pp.kind, np.array(a, copy=True) if p.mode == "inout" else a, t, ctx)
            if p.mode == "inout":
                dev_inout[p.name] = x
        elif a is None:
            gap = True      # its default: the later arguments by name
            continue
        else:
            x = scalar_arg(a, t)
        if gap:
            named[p.name] = x
        else:
            pos.append(x)
    kwargs = dict(named)
    if k.kind == "reduction":
        ax = kw.get("axes")
        kwargs["axis"] = None if ax is None else tuple(ax)
        kwargs["keepdims"] = bool(kw.get("keepdims"))
    if not tensor_args and "shape" not in [p.name for p in k.params]:
        kwargs["shape"] = tuple(shape)
    need = [v for v, how in free.items() if how == "dtype"]
    if need:
        kwargs["dtype"] = dtype_form(prog, b, need, rng)
        count("dtype")
    decl = [o for o in k.outs if not o.inout]
    last = max([i for i, o in enumerate(decl) if free.get(o.ty) == "out"], default=-1)
    if out is None and last >= 0:
        # the outputs up to the last that binds a variable (python.md: out=
        # gives the first outputs), in the reduced shape as keepdims says
        nd = len(shape)
        ax = kw.get("axes")
        red = set(range(nd)) if ax is None else {a % nd for a in ax}
        keep = bool(kw.get("keepdims"))
        rshape = tuple(1 if i in red else d for i, d in enumerate(shape) if keep or i not in red)
        out = [new_out(pp.kind, b.get(o.ty, o.ty), rshape if o.reduced else shape, ctx) for o in decl[:last + 1]]
        count("out")
    if out is not None:
        kwargs["out"] = tuple(out)
    res = pp.kernel()(*pos, **kwargs)
    res = list(res) if isinstance(res, tuple) else [res]
    # the declared outputs, then the inout parameters' (python.md)
    got = dict(zip([o.name for o in decl], res[:len(decl)]))
    inouts = [p for p in k.params if p.mode == "inout"]
    got.update(zip([p.name for p in inouts], res[len(decl):]))
    return [from_out(got[o.name], b.get(o.ty, o.ty)) for o in k.outs]


def same_bytes(a, b, t=None):
    """The same bits, but that any NaN equals any NaN: the language leaves
    a NaN's sign and payload open (gcc folds 0.0 / 0.0 to +NaN at -O2, x86
    computes -NaN; PoCL's LLVM gives +NaN), and so does "the same bits" of
    docs/c-backend.md.  bf16 (t) is held as its bits (from_out): compared
    as the f32 values they are the upper half of, so that its NaNs are
    NaNs too.  (np.ascontiguousarray would make a 0-d array 1-d.)"""
    a, b = np.array(a, order="C"), np.array(b, order="C")
    if t == "bf16" and a.dtype == b.dtype == np.uint16:
        # (1-d: numpy 1.24 shifts a 0-d uint32 into an int64)
        a, b = [(np.atleast_1d(x).astype(np.uint32) << np.uint32(16)).view(np.float32) for x in (a, b)]
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        parts = [(a, b)] if a.dtype.kind == "f" else [(a.real, b.real), (a.imag, b.imag)]
        for x, y in parts:
            nx, ny = np.isnan(x), np.isnan(y)
            if not np.array_equal(nx, ny):
                return False
            x, y = np.where(nx, 0, x), np.where(ny, 0, y)
            if np.array(x, order="C").tobytes() != np.array(y, order="C").tobytes():
                return False
        return True
    return a.tobytes() == b.tobytes()


# nnkfuzz's out_shape and unstable_mask (set by the driver, which imports this module)
OUT_SHAPE = UNSTABLE = None


def open_mask(name, gshape, ref, perts, prog, shape, raxes):
    """The elements of output `name` (in the C output's shape gshape) that
    the oracle leaves open: the perturbed runs move them beyond rounding
    (signbit of a NaN, whose sign the C code's constant folding and the
    CPU's arithmetic may give either way: docs/c-backend.md, "The same
    bits"), so their bytes may differ between paths as between compilers."""
    o = prog.kernel.out(name)
    if not ref or name not in ref or not perts:
        return np.zeros(gshape, dtype=bool)
    t = ref[name][0]
    want = OUT_SHAPE(ref[name][1], o, shape, raxes, gshape)
    ps = [OUT_SHAPE(p[name][1], o, shape, raxes, gshape) for p in perts]
    if M.is_complex(t):
        return UNSTABLE(np.real(want), [np.real(p) for p in ps], M.PART[t])[0] | \
            UNSTABLE(np.imag(want), [np.imag(p) for p in ps], M.PART[t])[0]
    return UNSTABLE(want, ps, t)[0]


def check_call(pp, prog, b, args, kw, c_outs, shape, exact, rng, open_elems=None):
    """The call on pp's path (plain, then with out=: fresh arrays or an
    input's memory); returns [(what, outputs)] for the oracle, and checks
    the bytes against the C back end's outputs c_outs where the docs
    promise them (exact: the oracle takes every operation of the call as
    exact, or as one of vmath.h's f32 functions)."""
    k = prog.kernel
    nnk = nnk_pkg()
    name = prog.instance_name(b)
    res = []
    try:
        got = call(pp, prog, b, args, kw, shape, rng=rng)
        res.append(("(%s)" % pp.kind, got))
        res += in_place(pp, prog, b, args, kw, got, shape, rng)
    except nnk.Error as e:
        raise Fail("miscompile", "%s on %s: %s: %s" % (name, pp.kind, type(e).__name__, e))
    if pp.kind != "opencl" or exact:
        for what, outs in res:
            if what in RELAID:
                continue
            for o, x, y in zip(k.outs, outs, c_outs):
                if not same_bytes(x, y, b.get(o.ty, o.ty)) and not open_only(x, y, b.get(o.ty, o.ty),
                                                                             open_elems, o.name):
                    bad = np.argwhere(np.atleast_1d(np.ascontiguousarray(x) != np.ascontiguousarray(y)))[:3] \
                        if np.shape(x) == np.shape(y) else "shape %s, C %s" % (np.shape(x), np.shape(y))
                    raise Fail("miscompile", "%s %s: output %s (%s) is not the C back end's bytes (%s): %s: got %r, "
                               "C %r" % (name, what, o.name, b.get(o.ty, o.ty),
                                         "the docs promise them" if pp.kind != "opencl" else
                                         "an exact call, vmath aside",
                                         bad, np.ravel(x)[:6], np.ravel(y)[:6]))
    return res


RELAID = set()  # the in-place calls whose input layout differs from the C call's


def in_place(pp, prog, b, args, kw, outs, shape, rng):
    """The call again with out=: a full-shape output in the memory of an
    input of its type and shape (docs/c-backend.md, docs/python.md: an
    output may be exactly an input), or, without such a pair, fresh
    arrays; the results must not change."""
    k = prog.kernel
    ctx = context(pp.kind)
    nnk = nnk_pkg()
    decl = [i for i, o in enumerate(k.outs) if not o.inout]
    pairs = []
    for oi in decl:
        o = k.outs[oi]
        if o.reduced:
            continue
        for pi, p in enumerate(k.params):
            if p.tensor and not p.mode and b.get(p.ty, p.ty) == b.get(o.ty, o.ty) and \
                    np.shape(args[pi]) == tuple(shape):
                pairs.append((oi, pi))
    inout_bufs = None
    if pairs:
        oi, pi = pairs[rng.integers(len(pairs))]
        t = b.get(k.params[pi].ty, k.params[pi].ty)
        buf = to_arg(pp.kind, np.ascontiguousarray(args[pi]).copy(), t, ctx)
        if not isinstance(buf, np.ndarray) and pp.kind != "opencl":
            buf = nnk.asarray(buf)
        cargs = list(args)
        inout_bufs = {pi: buf}
        what = "(%s, in place: output %s in input %s's memory)" % (pp.kind, k.outs[oi].name, k.params[pi].name)
        # the buffer is C-ordered; when the input was another layout, a
        # reduction's plan may take the other order of the additions
        # (docs/c-backend.md, "The order of the additions": column order
        # when the innermost kept dimension is contiguous for every
        # operand), so the bytes are the oracle's to judge, not C's
        if k.kind == "reduction" and not np.asarray(args[pi]).flags.c_contiguous:
            what += " (C-ordered copy)"
            RELAID.add(what)
    else:
        oi, cargs = None, list(args)
        what = "(%s, out=)" % pp.kind
    pre = []
    for j in decl:
        o = k.outs[j]
        t = b.get(o.ty, o.ty)
        if j == oi:
            pre.append(buf)
            continue
        x = outs[j]
        if t == "bf16":
            pre.append(nnk.asarray(C.bf16_to_f32(np.asarray(x).view(np.uint16)) * 0, dtype="bfloat16", ctx=ctx))
        elif pp.kind == "opencl":
            pre.append(nnk.asarray(np.zeros_like(np.asarray(x)), ctx=ctx))
        else:
            pre.append(np.full_like(np.asarray(x), 0x55 if M.is_int(t) else np.nan, dtype=np.asarray(x).dtype)
                       if t != "bool" else np.ones_like(np.asarray(x)))
    # the input that shares the output's memory is the same object
    got = call(pp, prog, b, cargs_with(cargs, inout_bufs), kw, shape, out=pre, inout_bufs=inout_bufs, rng=rng)
    return [(what, got)]


def open_only(x, y, t, open_elems, name):
    """Whether x and y differ only at elements the oracle leaves open."""
    if open_elems is None or np.shape(x) != np.shape(y):
        return False
    x, y = np.atleast_1d(np.array(x, order="C")), np.atleast_1d(np.array(y, order="C"))
    if t == "bf16" and x.dtype == y.dtype == np.uint16:
        x, y = [(v.astype(np.uint32) << np.uint32(16)).view(np.float32) for v in (x, y)]
    with np.errstate(all="ignore"):
        diff = (x != y) & ~(np.isnan(x) & np.isnan(y)) if x.dtype.kind in "fc" else x != y
    if not np.any(diff):
        return False
    m = np.atleast_1d(open_elems(name, np.shape(x)))
    return not np.any(diff & ~m)


def cargs_with(args, bufs):
    out = list(args)
    for i, x in (bufs or {}).items():
        out[i] = x
    return out


# ---- the hooks of nnkfuzz.py ---------------------------------------------------------------

PROGS = {}      # id(prog) -> [Program] of the current batch (in the fuzzer's child)
SKIPPED = {}    # kind -> why it is not available (reported by the parent)


def begin(cfg, path, progs, extra, seeds):
    """In the fuzzer's child, before a batch's checks: the paths of each
    program (cfg: {"kinds": [...], "cl_O0": bool}).  module and jitfn
    take the programs in turn (by seed), opencl all of them."""
    PROGS.clear()
    kinds = list(cfg.get("kinds") or ())
    if not kinds:
        return
    setup_env(cfg.get("cl_O0"))
    for kind in list(kinds):
        try:
            context(kind)
        except Unavailable as e:
            SKIPPED[kind] = str(e)
            kinds.remove(kind)
    for p, s in zip(progs, seeds):
        ks = []
        for kind in kinds:
            if kind in ("module", "jitfn") and "module" in kinds and "jitfn" in kinds:
                if (kind == "jitfn") != bool((s >> 3) & 1):
                    continue
            ks.append(kind)
        PROGS[id(p)] = [Program(k, p, path, extra) for k in ks]


def check(prog, b, args, kw, c_outs, shape, ref, perts, raxes, seed, trial, compare, failure):
    """After the C back end's call of check_program: the same call on each
    path of the program, against the oracle (compare) and the C bytes."""
    for pp in PROGS.get(id(prog), ()):
        rng = np.random.default_rng([seed, trial, KINDS.index(pp.kind)])
        try:
            pp.kernel()
            # (ref[None]: an inexact result; "inexact_other": one not of vmath.h)
            exact = not (ref and ref[None] and ref["inexact_other"])
            if pp.kind == "opencl" and exact and ref and ref[None]:
                count("vmath")
            res = check_call(pp, prog, b, args, kw, c_outs, shape, exact, rng,
                             lambda name, gs: open_mask(name, gs, ref, perts, prog, shape, raxes))
        except Fail as f:
            raise failure(f.kind, f.msg)
        for what, outs in res:
            compare(prog, prog.instance_name(b), outs, ref, perts, what, shape, raxes)


def check_range(prog, b, args, kw, shape, failure):
    """A call with an index out of range (the C back end returned
    NNK_ERANGE): each path must raise nnk.RangeError (NNK_ERANGE)."""
    nnk = nnk_pkg()
    for pp in PROGS.get(id(prog), ()):
        try:
            pp.kernel()
            call(pp, prog, b, args, kw, shape)
        except Fail as f:
            raise failure(f.kind, f.msg)
        except nnk.RangeError:
            continue
        except nnk.Error as e:
            raise failure("miscompile", "%s on %s: an index out of range, but %s: %s" % (
                prog.instance_name(b), pp.kind, type(e).__name__, e))
        raise failure("miscompile", "%s on %s: an index out of range, but the call returned" % (
            prog.instance_name(b), pp.kind))


def check_empty_arg(prog, b, args, kw, shape, rc, c_outs, failure):
    """A call with an empty slice of a program with an argmax or argmin (the
    C back end's NAME_strided returned rc: -1 for "argmax/argmin of an
    empty slice", 0 where no output needs the argmax, or NNK_ERANGE): each
    path must raise nnk.ShapeError (NNK_ESHAPE, docs/runtime.md) where C
    returned -1, else do as C did (module and jitfn: the C back end's
    bytes, c_outs)."""
    nnk = nnk_pkg()
    for pp in PROGS.get(id(prog), ()):
        name = "%s on %s (shape %s, an empty slice)" % (prog.instance_name(b), pp.kind, shape)
        try:
            pp.kernel()
            count("empty-arg")
            got = call(pp, prog, b, args, kw, shape)
        except Fail as f:
            raise failure(f.kind, f.msg)
        except nnk.ShapeError as e:
            if rc == -1 and "argmax/argmin of an empty slice" in str(e):
                continue
            raise failure("miscompile", "%s: %s, but NAME_strided returned %d" % (name, e, rc))
        except nnk.RangeError as e:
            if rc == ERANGE:
                continue
            raise failure("miscompile", "%s: %s, but NAME_strided returned %d" % (name, e, rc))
        except nnk.Error as e:
            raise failure("miscompile", "%s: %s: %s, but NAME_strided returned %d" % (name, type(e).__name__, e, rc))
        if rc != 0:
            raise failure("miscompile", "%s: the call returned, but NAME_strided returned %d%s" % (
                name, rc, " (argmax/argmin of an empty slice)" if rc == -1 else ""))
        if pp.kind != "opencl" and c_outs is not None:
            for o, x, y in zip(prog.kernel.outs, got, c_outs):
                if not same_bytes(x, y):
                    raise failure("miscompile", "%s: output %s is not the C back end's bytes: got %r, C %r" % (
                        name, o.name, np.ravel(x)[:6], np.ravel(y)[:6]))


ERANGE = 6      # NNK_ERANGE


def counts():
    return {"programs": dict(STATS), "skipped": dict(SKIPPED), "calls": dict(CALLS)}
