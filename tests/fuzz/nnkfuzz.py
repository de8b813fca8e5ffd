"""nnkfuzz - the differential fuzzer of nnk (tests/fuzz/README).

    nnkfuzz.py [--seed S] [--count N | --seconds T] [--batch B] [--cuda-every K]
               [--avoid LIST] [--out DIR] [--minimize] [--quiet]
    nnkfuzz.py --case FILE.nnk ...        # regression cases (tests/fuzz/regress)
    nnkfuzz.py --show SEED                # print the program of one seed

Each program of gen.py is compiled with nnkc, run through the C back end
(the generated C built with $CC, called through tests/conformance/nnkconf.py)
on random inputs and compared with oracle.py; an all-constant variant of
each elementwise program checks the constant folder; every K-th batch also
runs the generated CUDA on the emulation layer (tests/cuda/emu_conformance.py).
"""
import argparse
import ctypes
import functools
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("top_srcdir") or os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRCDIR, "tests", "conformance"))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "cuda"))
import nnkconf as C  # noqa: E402

import gen  # noqa: E402
import model as M  # noqa: E402
import oracle  # noqa: E402

WORK = os.environ.get("NNKFUZZ_WORK") or os.path.join(C.BUILDDIR, "tests", "fuzz", "work")
TIMEOUT = 60
UBSAN_EXIT = 99
# the generated C of some batches is built with UBSan: its first report ends the run
os.environ["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1:exitcode=%d" % UBSAN_EXIT
UBSAN = ["-fsanitize=undefined", "-fno-sanitize-recover=undefined"]
# the C compiler's warnings (-Wall -Wextra) are failures (kind c-warning) in
# one campaign batch in WARN_EVERY; the other batches are built with -w (the
# warnings cost 10-15% of a build and nothing reads them there).
# NNKFUZZ_WARNINGS=1: in every batch, 0: in none
WARN_ENV = os.environ.get("NNKFUZZ_WARNINGS")
WARN_EVERY = 3
WARNINGS = WARN_ENV == "1"
CUDA_RAW = os.environ.get("NNKFUZZ_CUDA_RAW") == "1"     # every CUDA batch with raw parameters (else --cuda-raw-every)
# the runtime paths of the current batch (rtpaths.py): {"kinds": [module, jitfn, opencl], "cl_O0": bool}
RT = {}
RT_COUNT = {}   # programs run on each runtime path
RT_CALLS = {}   # calls of the kinds rtpaths.CALL_WHAT names
RT_SKIPPED = {}  # the runtime paths not available: why
CC_CPU = [0.0]  # CPU seconds of the C compiler (the host builds), for the summary
NOTES = []      # (kind, seed): what the campaign met that is not nnk's failure (the C compiler's bugs)


class Failure(Exception):
    names = ()      # the generated functions a C compiler's messages name
    ice = False     # the C compiler's internal error

    def __init__(self, kind, msg):
        Exception.__init__(self, "%s: %s" % (kind, msg))
        self.kind, self.msg = kind, msg


# ---- inputs ----------------------------------------------------------------------------

def int_values(t, size, rng):
    b = M.BITS[t]
    lo, hi = (0, (1 << b) - 1) if M.is_uns(t) else (-(1 << (b - 1)), (1 << (b - 1)) - 1)
    edges = [lo, hi, 0, 1, lo + 1, hi - 1, 2, 3, 7, 8, 31, 32, 63, 64] + ([] if M.is_uns(t) else [-1, -2, -8])
    out = []
    for _ in range(size):
        x = rng.random()
        if x < 0.3:
            v = edges[rng.integers(len(edges))]
        elif x < 0.75:
            v = int(rng.integers(-10, 11))
        else:
            v = int(rng.integers(lo, hi, endpoint=True, dtype=np.int64 if hi < 2 ** 63 else np.uint64)) \
                if b < 64 else int(rng.integers(-2 ** 62, 2 ** 62)) * 2 + int(rng.integers(2))
        out.append(min(max(v, lo), hi) if not (b == 64 and M.is_uns(t)) else v % (1 << 64))
    return out


def float_values(t, size, rng):
    big = {"f16": 60000.0, "bf16": 1e37, "f32": 1e37, "f64": 1e300}[t]
    out = []
    for _ in range(size):
        x = rng.random()
        if x < 0.03:
            v = [np.inf, -np.inf, np.nan][rng.integers(3)]
        elif x < 0.12:
            v = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0][rng.integers(7)]
        elif x < 0.4:
            v = float(rng.integers(-20, 21))
        elif x < 0.45:
            v = big * (1 if rng.random() < 0.5 else -1)
        elif x < 0.48:
            v = {"f16": 3e-6, "bf16": 1e-39, "f32": 1e-40, "f64": 1e-310}[t]
        else:
            v = float(rng.normal() * 10.0 ** rng.integers(-2, 3))
        out.append(v)
    return out


def make_array(t, shape, rng):
    """(storage array for the call, value for the oracle)."""
    size = int(np.prod(shape)) if shape else 1
    if M.is_complex(t):
        # parts drawn as the part type's values, now and then one of them 0
        pt = M.PART[t]
        re, im = np.array(float_values(pt, size, rng)), np.array(float_values(pt, size, rng))
        re = np.where(rng.random(size) < 0.15, 0.0, re)
        im = np.where(rng.random(size) < 0.15, 0.0, im)
        a = M.mk_complex(re, im, t).reshape(shape)
        return a, a
    if t == "bool":
        a = rng.random(size) < 0.5
        return a.reshape(shape), a.reshape(shape)
    if M.is_int(t):
        vals = int_values(t, size, rng)
        a = np.array(vals, dtype=C.NP[t]).reshape(shape)
        return a, M.obj(vals).reshape(shape)
    vals = float_values(t, size, rng)
    with np.errstate(all="ignore"):
        if t == "bf16":
            a = C.bf16(np.array(vals, dtype=np.float32).reshape(shape))
            return a, C.bf16_to_f32(np.asarray(a).view(np.uint16))
        a = np.array(vals, dtype=C.NP[t]).reshape(shape)
        return a, a.astype(np.float32) if t == "f16" else a


def scalar_value(t, rng):
    a, v = make_array(t, (), rng)
    if M.is_complex(t):
        return complex(a.item()), a
    if t == "bf16":
        return float(v), np.float32(v)
    return a.item(), (v if not M.is_int(t) else M.obj(int(v.item())))


SHAPES_EW = [(7,), (3, 5), (2, 3, 4), (1,), (4, 1, 3), (6, 2)]
SHAPES_RD = [(5,), (3, 4), (2, 3, 5), (4, 1, 6), (1, 7)]


def sub_shape(shape, rng):
    """A shape that broadcasts to shape."""
    s = list(shape)
    if rng.random() < 0.6:
        return tuple(s)
    if rng.random() < 0.5 and len(s) > 1:
        s = s[rng.integers(1, len(s)):]
    return tuple(1 if rng.random() < 0.3 else d for d in s)


def odd_layout(a, rng):
    """Sometimes the same values in a non-contiguous view."""
    if a.ndim == 0 or a.size < 2 or rng.random() < 0.7:
        return a
    x = rng.random()
    if x < 0.5:
        return np.flip(np.flip(a).copy())[...] if False else np.flip(a.copy(), axis=-1)[..., ::-1]
    big = np.repeat(a, 2, axis=-1)
    return big[..., ::2]


# (the last: no slice at all, as the kept extent is 0: no error either,
# runtime.md "with outputs", c-backend.md's -1 is for an empty slice)
SHAPES_EMPTY = [((3, 0), (1,)), ((0, 4), (0,)), ((2, 0, 3), (0, 1)), ((0, 0), (1,))]


def has_arg_reducer(prog):
    """Whether an output surely depends on an argmax or argmin (an unused
    let's is not computed, so it cannot fail the call; nor one under a
    function whose result is a constant, imag(argmax(x)))."""
    return live_any(prog, lambda e: e[0] == "red" and e[1] in ("argmax", "argmin"),
                    lambda e: e[0] == "call" and e[1] in PRED_FNS)


def live_any(prog, pred, cut=lambda e: False, branches=False):
    """Whether a node for which pred holds is computed: reached from an
    output, not only through a let nothing reads, a func argument its body
    does not read, a branch of a constant condition (unless branches: then
    it may be computed), or a node for which cut holds."""
    lets = {st.name: st.expr for st in prog.kernel.body if st.kind == "let"}
    lets.update({n: st.expr for st in prog.kernel.body if st.kind == "tlet" for n in st.name})
    # what const_cond may look through: lets and outputs read back
    bound = {st.name: st.expr for st in prog.kernel.body if st.kind in ("let", "out")}
    seen = set()

    def live(e, fps=None):
        # fps: in a func's body, which of its parameters the call binds to
        # constants (const_cond's fparams)
        if pred(e):
            return True
        if cut(e):
            return False
        if e[0] == "name" and e[1] == "let" and e[2] not in seen:
            seen.add(e[2])
            return live(lets[e[2]])
        if e[0] == "fcall":
            # an argument the func's body does not read is not computed
            f = prog.funcs[e[1]]
            ps = {pn: const_cond(a, bound, prog.funcs, fps) for (pn, _), a in zip(f.params, e[2])}
            # (with branches, also one read only in a branch of a constant
            # condition: the folder may keep that branch)
            used = [reads(f.body, pn, ps, cut) or
                    (branches and any(n == ("name", "fparam", pn) for _, n in gen.nodes(f.body)))
                    for pn, _ in f.params]
            return live(f.body, ps) or any(live(a, fps) for a, u in zip(e[2], used) if u)
        if e[0] == "sel" and same_branches(e[3], e[4], bound, prog.funcs, fps):
            # where(c, a, a): c's value cannot matter, and the compiler
            # may not compute it (language.md: such a raw read is not made)
            return live(e[3], fps) or live(e[4], fps) or (branches and live(e[2], fps))
        if e[0] == "sel" and const_cond(e[2], bound, prog.funcs, fps):
            # a constant condition: the folder keeps one branch (which one
            # is not worked out here, so neither counts)
            return live(e[2], fps) or (branches and (live(e[3], fps) or live(e[4], fps)))
        return any(live(c, fps) for _, c in gen.children(e))
    return any(live(st.expr) for st in prog.kernel.body if st.kind == "out")


def same_branches(a, b, bound=None, funcs=None, fparams=None):
    """Whether the branches of a select may be one value to the compiler,
    which then drops the condition: equal once conversions and double
    negations are gone (lowering takes --x and ~~x to x, and equal nodes
    are one), or both constant (where(c, .1, 0) into an i32 output selects
    two constants converted to i32, both 0)."""
    return denoise(a) == denoise(b) or \
        (const_cond(a, bound, funcs, fparams) and const_cond(b, bound, funcs, fparams))


def denoise(e):
    """e without conversions and double negations, everywhere in it."""
    e = uncast(e)
    while e[0] == "un" and e[1] in ("-", "~") and uncast(e[2])[0] == "un" and uncast(e[2])[1] == e[1]:
        e = uncast(uncast(e[2])[2])
    if e[0] in ("lit", "name"):
        return e
    return map_children(denoise, e)


def is_node(x):
    """Whether x is an expression node (a tuple headed by its kind)."""
    return isinstance(x, tuple) and x and isinstance(x[0], str)


def map_children(f, e):
    """Node e with f applied to each child node, in its fields and in its
    list-valued fields (a call's arguments); other fields as they are."""
    return tuple(f(x) if is_node(x) else [f(y) if is_node(y) else y for y in x] if isinstance(x, list) else x
                 for x in e)


def uncast(e):
    """e without its conversions: where(c, x, f32(x)) has the same branches
    once they are promoted (a closer look than the compiler's is not needed:
    this only makes a read's NNK_ERANGE unsure)."""
    while e[0] == "cast":
        e = e[2]
    return e


def const_cond(c, bound=None, funcs=None, fparams=None):
    """Whether condition c folds to a constant: it reads consts, literals,
    and lets and outputs read back that fold (let u = 10.; where(u, ...)),
    and calls of funcs (given funcs) whose body folds with the arguments
    it reads (func f(p0, p1) = trunc(0.001); where(f(idx, x), ...)),
    nothing else."""
    bound = bound or {}
    if c[0] == "call" and c[1] in PRED_FNS:
        # of an integer (imag: of a real value, signbit: of an unsigned
        # one) a constant (language.md), which the tree's node does not
        # tell: it may fold (isnan(r0[i]) ? r0[x0] : s with integer r0:
        # the read r0[x0] is not made)
        return True
    if c[0] == "fcall" and funcs and c[1] in funcs:
        f = funcs[c[1]]
        ps = {pn: const_cond(a, bound, funcs, fparams) for (pn, _), a in zip(f.params, c[2])}
        return const_cond(f.body, bound, funcs, ps)
    if c[0] == "name" and c[1] == "fparam" and fparams is not None:
        return fparams.get(c[2], False)
    if c[0] == "name" and c[1] in ("let", "out") and c[2] in bound:
        return const_cond(bound[c[2]], bound, funcs, fparams)
    if c[0] in ("name", "idx", "n", "red", "reduce", "treduce", "raw", "shape", "index") and \
            not (c[0] == "name" and c[1] == "const"):
        return False
    return all(const_cond(x, bound, funcs, fparams) for _, x in gen.children(c))


def reads(e, pn, fparams=None, cut=lambda e: False):
    """Whether e surely reads func parameter pn (not only in a branch of a
    constant condition, which the folder may drop, nor under a node for
    which cut holds).  fparams: which parameters the call binds to
    constants (const_cond's)."""
    if e[0] == "name" and e[1] == "fparam" and e[2] == pn:
        return True
    if cut(e):
        return False
    if e[0] == "sel" and const_cond(e[2], None, None, fparams):
        return reads(e[2], pn, fparams, cut)
    if e[0] == "sel" and same_branches(e[3], e[4], None, None, fparams):
        # (where(c, a, a): c need not be computed)
        return reads(e[3], pn, fparams, cut) and reads(e[4], pn, fparams, cut)
    return any(reads(c, pn, fparams, cut) for _, c in gen.children(e))


def mentions_arg(prog):
    exprs = [st.expr for st in prog.kernel.body] + [f.body for f in prog.funcs.values()]
    return any(n[0] == "red" and n[1] in ("argmax", "argmin") for e in exprs for _, n in gen.nodes(e))


def make_call(prog, b, rng):
    k = prog.kernel
    red = k.kind == "reduction"
    shape = (SHAPES_RD if red else SHAPES_EW)[rng.integers(len(SHAPES_RD if red else SHAPES_EW))]
    empty = None
    if rng.random() < 0.08:
        # an empty slice: every reducer has its value for it (argmax and
        # argmin make the call fail, the test checks that instead)
        shape, empty = SHAPES_EMPTY[rng.integers(len(SHAPES_EMPTY))]
    args, oin = [], {}
    first = True
    for p in k.params:
        t = b.get(p.ty, p.ty)
        if p.mode == "raw":
            # a shape of its own, not broadcast
            a, v = make_array(t, tuple(int(rng.integers(1, 6)) for _ in range(p.rank)), rng)
            args.append(a if t == "bf16" else odd_layout(a, rng))
            oin[p.name] = v
        elif p.mode == "inout":
            # an output too: the iteration shape
            a, v = make_array(t, shape, rng)
            args.append(a)
            oin[p.name] = v
        elif p.tensor:
            a, v = make_array(t, shape if first else sub_shape(shape, rng), rng)
            first = False
            if t == "bf16":
                args.append(a)
            else:
                args.append(odd_layout(a, rng))
            oin[p.name] = np.broadcast_to(v, shape) if v.shape != shape else v
        else:
            if p.default is not None and rng.random() < 0.5:
                args.append(None)
                d = p.default
                dt, dv = oracle.ev(None, d) if d[0] != "bool" else ("bool", np.asarray(d[1]))
                oin[p.name] = M.storage_round(M.convert(dv, dt, t, explicit=True), t)
            else:
                sv, ov = scalar_value(t, rng)
                args.append(sv)
                oin[p.name] = ov
    axes, keep = None, False
    raxes = ()
    if red:
        nd = len(shape)
        if empty is not None:
            raxes = empty
            axes = tuple(a - nd if rng.random() < 0.3 else a for a in raxes)
        elif rng.random() < 0.3:
            raxes = tuple(range(nd))
        else:
            raxes = tuple(sorted(set(int(i) for i in rng.choice(nd, size=rng.integers(1, nd + 1), replace=False))))
            axes = tuple(a - nd if rng.random() < 0.3 else a for a in raxes)
        keep = bool(rng.random() < 0.4)
    return args, oin, shape, raxes, axes, keep


# ---- comparing ----------------------------------------------------------------------------

def as_model(a, t):
    """A C output (storage dtype) as the oracle represents values."""
    a = np.asarray(a)
    if M.is_complex(t):
        return a
    if t == "bf16":
        return C.bf16_to_f32(a.view(np.uint16))
    if t == "f16":
        return a.astype(np.float32)
    if M.is_int(t):
        return np.array(a.tolist(), dtype=object) if a.ndim else M.obj(int(a.item()))
    return a


def float_ulp(v, t):
    v = np.abs(np.asarray(v, dtype=np.float64))
    e = M.EPS[t]
    tiny = {"f16": 2.0 ** -24, "bf16": 2.0 ** -133, "f32": 2.0 ** -149, "f64": 2.0 ** -1074}[t]
    with np.errstate(all="ignore"):
        return np.maximum(v * e, tiny)


def diff_mask(got, ref, perts, t, ut=None):
    """Elements of got that disagree with ref (perts: the perturbed runs);
    ut: the float type whose rounding the value carries (the type it was
    computed in, when narrower than t)."""
    if np.size(got) == 0:
        return np.zeros(np.shape(got), dtype=bool)
    if not M.is_float(t):
        g, r = np.asarray(got), np.asarray(ref)
        bad = np.asarray(g != r, dtype=bool)
        for p in perts:
            bad &= np.asarray(np.asarray(p) == r, dtype=bool)
        return bad
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    with np.errstate(all="ignore"):
        same = (g == r) | (np.isnan(g) & np.isnan(r))
        if not perts:
            return ~same
        unstable, dev = unstable_mask(r, perts, t)
        tol = 4 * dev + 4 * float_ulp(r, ut or t)
        close = np.abs(g - r) <= tol
        return ~(same | close | unstable)


def unstable_mask(ref, perts, t):
    """The elements the perturbed runs move beyond rounding (sensitive:
    not compared), and the largest move of the others."""
    if not M.is_float(t):
        r = np.asarray(ref)
        m = np.zeros(r.shape, dtype=bool)
        for p in perts:
            m |= np.asarray(np.asarray(p) != r, dtype=bool)
        return m, np.zeros(r.shape)
    r = np.asarray(ref, dtype=np.float64)
    dev = np.zeros(r.shape)
    unstable = np.zeros(r.shape, dtype=bool)
    with np.errstate(all="ignore"):
        for p in perts:
            p = np.asarray(p, dtype=np.float64)
            pn = np.isnan(p) != np.isnan(r)
            pi = (np.isinf(p) | np.isinf(r)) & (p != r)
            d = np.where(np.isnan(p) | np.isnan(r), 0, np.abs(p - r))
            unstable |= pn | pi | (d > 1e-2 * np.abs(r) + 64 * float_ulp(r, t))
            dev = np.maximum(dev, np.where(np.isfinite(d), d, 0))
    return unstable, dev


def out_shape(v, o, shape, raxes, gshape):
    """An oracle value (broadcastable) in the shape of the C output."""
    if o.reduced:
        ks = tuple(1 if i in raxes else d for i, d in enumerate(shape))
        return np.broadcast_to(np.asarray(v), ks).reshape(gshape)
    return np.broadcast_to(np.asarray(v), shape)


class Perturbed:
    """The oracle's perturbed runs of one call, made when first needed: a
    comparison needs them only where the values differ from the exact run's
    (an element equal to it is never a failure), and most calls give the
    exact run's bits; they were 70% of the oracle's time."""

    def __init__(self, make):
        self.make, self.runs = make, None

    def __iter__(self):
        if self.runs is None:
            self.runs = self.make()
        return iter(self.runs)


def compare(prog, name, outs, ref, perts, what, shape, raxes):
    # first without the perturbed runs: equal values pass with or without them
    if _compare(prog, name, outs, ref, [], what, shape, raxes):
        lines = _compare(prog, name, outs, ref, list(perts), what, shape, raxes)
        if lines:
            raise Failure("miscompile", "\n".join(lines))


def _compare(prog, name, outs, ref, perts, what, shape, raxes):
    k = prog.kernel
    lines = []
    for o, got in zip(k.outs, outs):
        t, want = ref[o.name]
        got_m = as_model(got, t)
        gs = np.shape(got_m)
        want = out_shape(want, o, shape, raxes, gs)
        ps = [out_shape(p[o.name][1], o, shape, raxes, gs) for p in perts]
        # a value computed in a narrower float type (c128 of a c64
        # expression) carries that type's rounding: a formula's exact steps
        # (Kahan's tanh) round the C library's 1-ulp error of a real function
        # into a few ulp that the perturbed runs, moving by 16 ulp where the
        # formula is insensitive, may not reproduce
        ct = ref.get("computed", {}).get(o.name)
        ct = M.PART.get(ct, ct)
        pt = M.PART.get(t, t)
        # (f16 and bf16 compute in f32 too: erfc(x) of a bf16 x is glibc's
        # erfcf, whose error at a subnormal result is 2^-149, all of it)
        ut = "f32" if ct in ("f16", "bf16", "f32") and pt == "f64" else None
        if M.is_complex(t):
            # each part as a value of the part type
            bad = diff_mask(np.real(got_m), np.real(want), [np.real(p) for p in ps], pt, ut) | \
                diff_mask(np.imag(got_m), np.imag(want), [np.imag(p) for p in ps], pt, ut)
        else:
            bad = diff_mask(got_m, want, ps, t, ut)
        if np.any(bad):
            ix = [tuple(i) for i in np.argwhere(np.atleast_1d(bad))[:4]]
            g1, w1 = np.atleast_1d(got_m), np.atleast_1d(want)
            lines.append("%s %s: %d of %d values of %s (%s) differ: %s" % (
                name, what, int(np.sum(bad)), np.size(bad), o.name, t,
                "; ".join("at %s got %r want %r" % (i, g1[i], w1[i]) for i in ix)) +
                ("" if not ps else " (the perturbed runs at %s: %s)" % (
                    ix[0], ", ".join(repr(np.atleast_1d(p)[ix[0]]) for p in ps))))
            if not perts:
                break
    return lines


# ---- one program ------------------------------------------------------------------------------

def fresh(prog, args):
    """The arguments of one call: an inout parameter's array is written by
    the call, so each call gets a copy of what it came with."""
    out = list(args)
    for i, p in enumerate(prog.kernel.params):
        if p.mode == "inout":
            out[i] = np.array(args[i], copy=True)
            if getattr(args[i], "_is_bf16", False):
                out[i] = out[i].view(C.BF16Array)
    return out


# (and signbit: of an unsigned integer the constant false; imag: of a real
# value the constant 0)
PRED_FNS = ("isnan", "isinf", "isfinite", "signbit", "imag")
ERANGE = 6      # NNK_ERANGE, what NAME_strided returns for an index out of range


def range_verdict(prog, ref, perts):
    """(out of range, unsure) for a program with raw parameters: whether a
    computed raw read or index(d) is out of range by the oracle, and
    whether the perturbed runs (an index from a float near an integer's
    edge) disagree about it."""
    if ref is None or not any(p.mode == "raw" for p in prog.kernel.params):
        return False, False
    keys = ref["oob"]
    # in a branch of a constant condition, the read is made or not
    oob = bool(keys) and live_any(prog, lambda e: repr(e) in keys, branches=True)
    # isnan, isinf and isfinite of an integer (imag of a real value) are
    # constants: the read in their argument is not made, and its index not
    # checked (language.md)
    # a comparison with a constant at its other operand's range bound
    # folds too (0u > x, b < false, x_u8 <= 255: lower.c), which the tree
    # does not tell either: a comparison with a constant side is unsure
    # (a constant side may be a let or an output read back that folds:
    # u64(x) < u2 with let u2 = 0)
    bound = {st.name: st.expr for st in prog.kernel.body if st.kind in ("let", "out")}
    sure = oob and live_any(prog, lambda e: repr(e) in keys, lambda e: e[0] == "call" and e[1] in PRED_FNS or
                            e[0] == "bin" and e[1] in M.COMPARE and
                            (const_cond(e[2], bound, prog.funcs) or const_cond(e[3], bound, prog.funcs)))
    unsure = any(q["oob"] != keys for q in perts) or oob != sure or ref["oob_unsure"]
    return oob, unsure


def call(kern, name, *args, **kw):
    try:
        return kern(*args, **kw)
    except C.Error as e:
        raise Failure("miscompile", "%s: %s" % (name, e))


def check_program(mod, prog, seed, emu=False):
    rng = np.random.default_rng(seed)
    for b in prog.bindings:
        name = prog.instance_name(b)
        try:
            kern = getattr(mod, name)
        except AttributeError:
            raise Failure("missing", "no instance %s in the generated C" % name)
        for trial in range(2):
            args, oin, shape, raxes, axes, keep = make_call(prog, b, rng)
            if not any(p.tensor and not p.mode for p in prog.kernel.params):
                # tensor inputs all raw: the C call gets the iteration shape
                # the runtime paths get as shape= (rtpaths.call)
                kern = functools.partial(getattr(mod, name), iter_shape=tuple(shape))
            red = prog.kernel.kind == "reduction"
            nred = int(np.prod([shape[i] for i in raxes])) if raxes else 1
            # an empty slice: some kept element reduces none
            empty = red and nred == 0 and int(np.prod([d for i, d in enumerate(shape) if i not in raxes])) > 0
            if empty and has_arg_reducer(prog):
                ref = None
            else:
                ref = oracle.run(prog, b, oin, shape, raxes, 0)
            perts = Perturbed(lambda: [oracle.run(prog, b, oin, shape, raxes, m, seed)
                                       for m in ((1, 2, 3, 4) if ref["marked"] or ref["summed"] else (1, 2, 3))]) \
                if ref and ref[None] else []
            kw = {"axes": axes, "keepdims": keep} if prog.kernel.kind == "reduction" else {}
            cargs = list(args)
            if empty and (has_arg_reducer(prog) or mentions_arg(prog)):
                # an argmax an output uses fails the call (-1); one the
                # folder may drop or keep (a let nothing reads, a branch of
                # a constant condition) fails it or not: the runtime paths
                # must do as the C back end did (runtime.md: NNK_ESHAPE)
                rc = kern(*fresh(prog, cargs), raw=True, **kw)
                if has_arg_reducer(prog) and rc != -1:
                    raise Failure("miscompile", "%s: argmax/argmin of an empty slice returned %d, not -1" % (name, rc))
                if RT.get("kinds"):
                    c_outs = None
                    if rc == 0:
                        c_outs = call(kern, name, *fresh(prog, cargs), **kw)
                        c_outs = list(c_outs) if isinstance(c_outs, tuple) else [c_outs]
                    rtpaths().check_empty_arg(prog, b, fresh(prog, cargs), kw, shape, rc, c_outs, Failure)
                continue
            oob, unsure = range_verdict(prog, ref, perts)
            if oob or unsure:
                rc = kern(*fresh(prog, cargs), raw=True, **kw)
                if oob and not unsure and rc != ERANGE:
                    raise Failure("miscompile", "%s (shape %s): an index out of range, but the call returned %d, "
                                  "not NNK_ERANGE (%d): %s" % (name, shape, rc, ERANGE, " ".join(sorted(ref["oob"]))))
                if oob and not unsure and RT.get("kinds"):
                    rtpaths().check_range(prog, b, fresh(prog, cargs), kw, shape, Failure)
                continue
            outs = call(kern, name, *fresh(prog, cargs), **kw)
            outs = list(outs) if isinstance(outs, tuple) else [outs]
            compare(prog, name, outs, ref, perts, "(shape %s axes %s)" % (shape, raxes), shape, raxes)
            again = call(kern, name, *fresh(prog, cargs), **kw)
            again = list(again) if isinstance(again, tuple) else [again]
            for x, y in zip(outs, again):
                if np.asarray(x).tobytes() != np.asarray(y).tobytes():
                    raise Failure("nondeterministic", "%s: two runs give different bytes" % name)
            if RT.get("kinds"):
                rtpaths().check(prog, b, cargs, kw, outs, shape, ref, perts, raxes, seed, trial, compare, Failure)
            if emu and trial == 0:
                got = EMU_SEEN.pop() if EMU_SEEN else None
                if got is not None:
                    compare(prog, name, got, ref, perts, "(CUDA on the emulation layer)", shape, raxes)
            if trial == 0 and "inplace" not in AVOID:
                in_place(prog, b, kern, args, outs, kw, ref, perts, shape, raxes, rng)


AVOID = set(gen.AVOID_DEFAULT)


def rtpaths():
    import rtpaths as R
    R.OUT_SHAPE, R.UNSTABLE = out_shape, unstable_mask
    return R


def in_place(prog, b, kern, args, outs, kw, ref, perts, shape, raxes, rng):
    """The call again with a full-shape output in the memory of an input of
    its type and shape (docs/c-backend.md: an output may be exactly an
    input): the results must not change."""
    k = prog.kernel
    tensors = [i for i, p in enumerate(k.params) if p.tensor and not p.mode]
    pairs = []
    for oi, o in enumerate(k.outs):
        if o.reduced or o.inout:
            continue
        for pi in tensors:
            p = k.params[pi]
            if b.get(p.ty, p.ty) == b.get(o.ty, o.ty) and np.shape(args[pi]) == tuple(shape):
                pairs.append((oi, pi))
    if not pairs:
        return
    oi, pi = pairs[rng.integers(len(pairs))]
    buf = np.ascontiguousarray(args[pi]).copy()
    if getattr(args[pi], "_is_bf16", False):
        buf = buf.view(C.BF16Array)
    cargs = fresh(prog, args)
    cargs[pi] = buf
    pre = [buf if j == oi else np.empty_like(np.asarray(x)) for j, x in enumerate(outs)]
    got = call(kern, prog.instance_name(b), *cargs, out=pre, **kw)
    got = list(got) if isinstance(got, tuple) else [got]
    compare(prog, prog.instance_name(b), got, ref, perts, "(in place: output %s in input %s's memory)" % (
        k.outs[oi].name, k.params[pi].name), shape, raxes)


EMU_SEEN = []


# ---- batches -------------------------------------------------------------------------------------

def nnkc(args, timeout=TIMEOUT):
    try:
        p = subprocess.run([C.NNKC] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure("timeout", "nnkc %s" % " ".join(args))
    if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
        # NNKC may be a sanitized build (./configure --enable-sanitizers)
        raise Failure("sanitizer", "nnkc %s:\n%s" % (" ".join(args), p.stderr[-3000:]))
    if p.returncode < 0 or p.returncode > 1:
        raise Failure("crash", "nnkc %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    if p.returncode == 1:
        raise Failure("reject", "nnkc %s rejected a valid program:\n%s" % (" ".join(args), p.stderr[-3000:]))
    return p


def build_c(path, opt, extra=()):
    base = os.path.splitext(path)[0]
    cfile = base + ".c"
    nnkc(["-S", "--target=c"] + list(extra) + [path, "-o", cfile])
    so = base + ".so"
    # the conformance suite's flags, warnings kept but not errors: a
    # warning in generated code is a finding of its own (kind c-warning);
    # where warnings are not checked, none are computed
    # opt: the C compiler's flags, after "CC=PATH" where another compiler
    # than C.CC builds the batch (batch_opt)
    words = opt.split()
    cc = words.pop(0)[3:] if words and words[0].startswith("CC=") else C.CC
    flags = [f for f in C.CFLAGS if not f.startswith("-O") and f != "-Werror" and
             (WARNINGS or f not in ("-Wall", "-Wextra"))] + ([] if WARNINGS else ["-w"]) + words
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        # -z defs: an undefined symbol (a prelude function never defined) is
        # a link error here, not a failure to load
        p = subprocess.run([cc] + flags + [cfile, "-o", so, "-lm", "-Wl,-z,defs"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=CC_WALL, preexec_fn=cc_limit)
    except subprocess.TimeoutExpired:
        raise Failure("timeout", "cc on the generated C ran more than %d s" % CC_WALL)
    finally:
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        CC_CPU[0] += r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    if p.returncode != 0 and ("CPU time limit exceeded" in p.stderr or "Killed signal" in p.stderr):
        raise Failure("timeout", "cc on the generated C ran more than %d CPU seconds" % CC_CPU_LIMIT)
    if p.returncode != 0:
        f = Failure("cc", "the generated C does not compile:\n" + p.stderr[-3000:])
        # gcc's "In function 'p15_k__acc1.constprop'", ld's "in function
        # `p3_k__run'": the programs to build alone (check_batch)
        f.names = re.findall(r"[Ii]n function [\u2018'`]([A-Za-z_][A-Za-z0-9_]*)", p.stderr)
        f.ice = "internal compiler error" in p.stderr
        raise f
    if "warning:" in p.stderr and WARNINGS:
        raise Failure("c-warning", "the generated C has warnings:\n" + p.stderr[-3000:])
    return so, cfile


# The C compiler's limit is in CPU seconds (a compiler that hangs), not
# wall seconds: on a loaded machine (load 23 on 2 cores) a batch's -O2 build
# of 19 CPU seconds took more than the 300 wall seconds it had, and the
# batch was then built again program by program
CC_CPU_LIMIT = 300
CC_WALL = 3600


def cc_limit():
    # SIGXCPU at the soft limit (gcc: "CPU time limit exceeded signal
    # terminated program cc1"), SIGKILL at the hard one
    resource.setrlimit(resource.RLIMIT_CPU, (CC_CPU_LIMIT, CC_CPU_LIMIT + 10))


def run_child(fn, timeout):
    """fn() in a forked child: returns its JSON result, or a Failure for a
    signal or a timeout."""
    r, w = os.pipe()
    errpath = os.path.join(WORK, "child%d.err" % os.getpid())
    pid = os.fork()
    if pid == 0:
        os.close(r)
        ef = os.open(errpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(ef, 2)      # a sanitizer's report, for the failure message
        try:
            res = fn()
        except BaseException as e:  # noqa: BLE001
            res = {"error": "%s\n%s" % (e, traceback.format_exc())}
        with os.fdopen(w, "w") as f:
            json.dump(res, f)
        os._exit(0)
    os.close(w)
    t0 = time.time()
    data = b""
    os.set_blocking(r, False)
    while True:
        try:
            chunk = os.read(r, 65536)
            if chunk:
                data += chunk
            else:
                pass
        except BlockingIOError:
            chunk = None
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            while True:
                try:
                    c = os.read(r, 65536)
                except BlockingIOError:
                    break
                if not c:
                    break
                data += c
            break
        if time.time() - t0 > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return Failure("timeout", "the kernels ran more than %ds" % timeout)
        time.sleep(0.005)
    os.close(r)
    try:
        with open(errpath, errors="replace") as f:
            err = f.read()[-3000:]
    except OSError:
        err = ""
    if os.WIFSIGNALED(status):
        return Failure("exec-crash", "signal %d while running the kernels\n%s" % (os.WTERMSIG(status), err))
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == UBSAN_EXIT:
        return Failure("sanitizer", "UBSan in the generated C:\n" + err)
    try:
        return json.loads(data.decode() or "null")
    except ValueError:
        return Failure("exec-crash", "no result from the child\n" + err)


def exec_batch(so, cfile, progs, seeds, emu_so=None):
    """Checks every program of a built batch; returns {index: failure text}."""
    def body():
        mod = C.Module(so, cfile)
        if emu_so:
            attach_emu(mod, emu_so)
        if RT.get("kinds"):
            rtpaths().begin(RT, cfile[:-2] + ".nnk", progs, list(RT.get("extra", ())), seeds)
        res = {}
        np.seterr(all="ignore")
        for i, (p, s) in enumerate(zip(progs, seeds)):
            try:
                check_program(mod, p, s, emu=bool(emu_so))
            except Failure as f:
                res[str(i)] = [f.kind, f.msg]
            except Exception as e:  # noqa: BLE001 - a harness error is reported too
                res[str(i)] = ["harness", "%s\n%s" % (e, traceback.format_exc())]
            EMU_SEEN.clear()
        if RT.get("kinds"):
            res["rt"] = rtpaths().counts()
        return res
    res = run_child(body, TIMEOUT * (1 + len(progs) // 4) * (4 if RT.get("kinds") else 1))
    rt = res.pop("rt", {}) if isinstance(res, dict) else {}
    for k, n in rt.get("programs", {}).items():
        RT_COUNT[k] = RT_COUNT.get(k, 0) + n
    for k, n in rt.get("calls", {}).items():
        RT_CALLS[k] = RT_CALLS.get(k, 0) + n
    for k, why in rt.get("skipped", {}).items():
        if k not in RT_SKIPPED:
            RT_SKIPPED[k] = why
            print("# nnkfuzz: the runtime path %s: SKIP: %s" % (k, why), flush=True)
    return res


def attach_emu(mod, emu_so):
    import emu_conformance as E
    emu = E.EmuLib(emu_so)
    orig_compare = E.compare

    def capture(k, outs, emu_outs, *a, **kw):
        EMU_SEEN.append([np.array(x) for x in emu_outs])
    E.compare = capture
    orig_get = mod.__class__.__getattr__

    def getattr_(self, name):
        kern = orig_get(self, name)
        if not isinstance(kern.strided, E.EmuStrided):
            kern.strided = E.EmuStrided(kern, kern.strided, emu)
        return kern
    mod.__class__ = type("EmuModule", (mod.__class__,), {"__getattr__": getattr_})
    return orig_compare


def _rename(x, old, new):
    if isinstance(x, str):
        return new + x[len(old):] if x.startswith(old) else x
    if isinstance(x, tuple):
        return tuple(_rename(i, old, new) for i in x)
    if isinstance(x, list):
        return [_rename(i, old, new) for i in x]
    if isinstance(x, dict):
        return {_rename(k, old, new): _rename(v, old, new) for k, v in x.items()}
    return x


def const_literal(v, t):
    """A constant expression with the value v (a Python value of type t)."""
    if M.is_complex(t):
        v = complex(v)
        return ("call", t, [const_literal(v.real, M.PART[t]), const_literal(v.imag, M.PART[t])])
    if t == "bool":
        return ("bool", bool(v))
    if M.is_int(t):
        v = int(v)
        if v > 2 ** 63 - 1:
            return ("u64lit", v, 0)
        return ("lit", v, 0) if v >= 0 else ("un", "-", ("lit", -v, 0))
    v = float(v)
    if v != v:
        return ("bin", "/", ("lit", 0.0, 0), ("lit", 0.0, 0))
    if v in (float("inf"), float("-inf")):
        one = ("lit", 1.0, 0) if v > 0 else ("un", "-", ("lit", 1.0, 0))
        return ("bin", "/", one, ("lit", 0.0, 0))
    if v < 0 or (v == 0 and str(v).startswith("-")):
        return ("un", "-", ("lit", -v, 0))
    return ("lit", v, 0)


def const_variant(prog, seed):
    """An all-constant copy of a non-generic elementwise program: every
    tensor and scalar parameter and idx replaced by typed consts of one
    element's values, so that sema's constant folder computes every output;
    checked against the oracle like any program."""
    k = prog.kernel
    if k.kind != "elementwise" or k.generics or any(p.mode for p in k.params):
        return None
    rng = np.random.default_rng(seed)
    d = _rename(gen.to_json(prog), prog.prefix, prog.prefix[:-1] + "c_")
    q = gen.from_json(d)
    subst = {}
    for p in q.kernel.params:
        sv, _ = scalar_value(p.ty, rng)
        cname = "%sP%s" % (q.prefix, p.name)
        q.consts[cname] = gen.Const(cname, p.ty, const_literal(sv, p.ty))
        subst[("param", p.name)] = ("name", "const", cname)
    iname = q.prefix + "IDX"
    q.consts[iname] = gen.Const(iname, "i64", ("lit", int(rng.integers(0, 1 << 40)), 0))
    subst["idx"] = ("name", "const", iname)

    def sub(e):
        if e[0] == "name" and (e[1], e[2]) in subst:
            return subst[(e[1], e[2])]
        if e[0] == "idx":
            return subst["idx"]
        for step, c in gen.children(e):
            e = gen.replace_child(e, step, sub(c))
        return e
    for st in q.kernel.body:
        st.expr = sub(st.expr)
    return q


class Batch:
    def __init__(self, base_seed, index, n, avoid, size, consts=0.3):
        self.seeds = [hash_seed(base_seed, index, i) for i in range(n)]
        # one batch in four is compiled with nnkc -T (two or three types)
        h = hash_seed(base_seed, index, "T")
        self.tlist = []
        if h % 4 == 0:
            types = list(M.SCALARS)
            for j in range(2 + (h >> 3) % 2):
                self.tlist.append(types.pop((h >> (5 + 4 * j)) % len(types)))
            # one -T batch in three lists a complex type too (a hash of its
            # own: the other batches keep their types)
            hc = hash_seed(base_seed, index, "Tcx")
            if hc % 3 == 0 and "complex" not in avoid:
                self.tlist.append(M.COMPLEX[(hc >> 2) % 2])
        self.extra = ["-T", ",".join(self.tlist)] if self.tlist else []
        # one batch in six with nnkc -O3 (its rewrites: gen.py's o3)
        if hash_seed(base_seed, index, "O3") % 6 == 0:
            self.extra.append("-O3")
        self.progs = [gen.generate(s, "p%d_" % i, avoid, size, tlist=self.tlist) for i, s in enumerate(self.seeds)]
        extra, eseeds = [], []
        for p, s in zip(self.progs, self.seeds):
            if (s >> 7) % 1000 < consts * 1000:
                q = const_variant(p, s + 1)
                if q is not None:
                    extra.append(q)
                    eseeds.append(s + 1)
        self.progs += extra
        self.seeds += eseeds


def hash_seed(*parts):
    return int(hashlib.sha1(repr(parts).encode()).hexdigest()[:15], 16)


def write_file(path, progs):
    """The programs in one file; an imported program's consts and funcs in
    a file of their own beside it (PATH-PREFIXlib.nnk), which it imports."""
    with open(path, "w") as f:
        for p in progs:
            lib = None
            if p.imported:
                lib = os.path.basename(path)[:-4] + "-" + p.prefix + "lib.nnk"
                with open(os.path.join(os.path.dirname(path), lib), "w") as g:
                    g.write(p.render_lib())
            f.write(p.render(lib))


def check_batch(progs, seeds, path, opt="-O2", emu=False, extra=()):
    """Returns [(index or None, kind, message)]."""
    # (the oracle models -O3's one-pass variance: oracle.ONE_PASS)
    oracle.ONE_PASS = "-O3" in extra
    write_file(path, progs)
    try:
        so, cfile = build_c(path, opt, extra)
    except Failure as f:
        if len(progs) == 1:
            if f.ice and NATIVE in opt:
                # the JIT compiles a source whose build with the host flags
                # ends in an internal compiler error again without them
                # (docs/runtime.md): so does the fuzzer, and the program is
                # checked as the JIT runs it; the C compiler's bug is noted
                portable = opt.replace(NATIVE, "").strip()
                print("# note: %s: the C compiler's internal error with %s (%s); built with %s as the JIT does" % (
                    progs[0].kernel.name, NATIVE, seeds[0], portable), flush=True)
                NOTES.append(("cc-ice", seeds[0]))
                return check_batch(progs, seeds, path, portable, emu, extra)
            return [(0, f.kind, f.msg)]
        # the programs whose functions the compiler's messages name are
        # built alone, the others together again (a batch of 48 built one by
        # one cost 48 builds at -O2); with none named, each alone
        named = sorted({i for i, p in enumerate(progs) for n in f.names if n.startswith(p.prefix)})
        if not named or len(named) == len(progs):
            named = range(len(progs))
        out, notes = [], len(NOTES)
        rest = [i for i in range(len(progs)) if i not in named]
        if rest:
            for j, k, m in check_batch([progs[i] for i in rest], [seeds[i] for i in rest], path[:-4] + "-r.nnk",
                                       opt, emu, extra):
                out.append((rest[j] if j is not None else None, k, m))
        for i in named:
            for j, k, m in check_batch([progs[i]], [seeds[i]], path[:-4] + "-%d.nnk" % i, opt, emu, extra):
                out.append((i, k, m))
        # (a batch that fails while none of its programs does, but for the
        # C compiler's internal errors they were built past, is a failure)
        return out or ([] if len(NOTES) > notes else [(None, f.kind, f.msg)])
    folded = unfolded_variants(path, progs)
    emu_so = None
    if emu:
        import emu_conformance as E
        try:
            emu_so = E.build_emu(path, list(extra), cfile, so)
        except RuntimeError as e:
            if len(progs) == 1:
                return [(0, "cuda-build", str(e)[-3000:])]
            out = []
            for i, (p, s) in enumerate(zip(progs, seeds)):
                for j, k, m in check_batch([p], [s], path[:-4] + "-%d.nnk" % i, opt, emu, extra):
                    out.append((i, k, m))
            return out
    res = exec_batch(so, cfile, progs, seeds, emu_so)
    if isinstance(res, Failure):
        if len(progs) == 1:
            return [(0, res.kind, res.msg)]
        # a crash or a hang: each program in a child of its own, on the
        # objects already built (not built again)
        res = {}
        for i, (p, s) in enumerate(zip(progs, seeds)):
            r = exec_batch(so, cfile, [p], [s], emu_so)
            if isinstance(r, Failure):
                res[str(i)] = [r.kind, r.msg]
            elif "error" in (r or {}):
                res[str(i)] = ["harness", r["error"]]
            elif r:
                res[str(i)] = r["0"]
    if "error" in (res or {}):
        return [(None, "harness", res["error"])]
    for i in folded:
        res.setdefault(str(i), ["not-folded", "%s: an all-constant output is not a constant in --emit=ir" %
                                progs[i].kernel.name])
    return [(int(i), k, m) for i, (k, m) in sorted(res.items(), key=lambda kv: int(kv[0]))]


def unfolded_variants(path, progs):
    """Indexes of the all-constant variants whose outputs --emit=ir does not
    show as constants (the constant folder left something)."""
    # (of complex values the folder computes + - *, conj, real, imag, the
    # comparisons and conversions, not /, abs, arg and the functions:
    # language.md; an output whose value needs one of those, by the
    # oracle, is checked against the oracle only)
    want = {p.kernel.name: i for i, p in enumerate(progs) if p.prefix.endswith("c_")}
    if not want:
        return []
    left = {i: left_to_code(progs[i]) for i in want.values()}
    ir = nnkc(["--emit=ir", path]).stdout
    bad, cur, consts = set(), None, set()
    for line in ir.splitlines():
        if line.startswith("kernel "):
            cur = line.split()[1]
            consts = set()
        elif cur in want:
            t = line.strip()
            if t.startswith("%") and t.endswith("[const]"):
                consts.add(t.split()[0])
            elif t.startswith("out ") and t.split("=")[1].split()[0] not in consts and \
                    t.split()[1].rstrip("[]") not in left[want[cur]]:
                bad.add(want[cur])
    return sorted(bad)


def left_to_code(prog):
    """The outputs of an all-constant variant whose value needs a complex
    operation the folder leaves to the generated code (all of them where the
    oracle fails: the program's check reports that)."""
    if not any(w in prog.render() for w in ("j", "c64", "c128", "complex(")):
        return set()
    try:
        _, oin, shape, raxes, _, _ = make_call(prog, {}, np.random.default_rng(0))
        return oracle.run(prog, {}, oin, shape, raxes, 0)["nofold"]
    except Exception:  # noqa: BLE001
        return {o.name for o in prog.kernel.outs}


def minimize_failure(prog, seed, kind, opt, emu, budget, extra=()):
    import minimize
    path = os.path.join(WORK, "min%d.nnk" % os.getpid())

    def fails(q):
        return any(k == kind for _, k, _ in check_batch([q], [seed], path, opt, emu, extra))
    small, tries = minimize.minimize(prog, fails, budget, log=lambda m: print(m, flush=True))
    return small


# the flags of the JIT on this machine (api.c: -march=native); the rest of
# the batches keep the portable build of nnkc -c, whose loops gcc compiles
# twice (target_clones: baseline and AVX2) and which runs the AVX2 clone here
NATIVE = " ".join(C.NATIVE_CFLAGS if "clang" not in os.path.basename(C.CC) else C.NATIVE_CFLAGS[:1])


# clang, where it is installed beside a gcc C compiler: it builds the
# plain -O0 batches of the JIT's flags (NNKFUZZ_CLANG=0: none).  A batch of
# 48 programs takes clang -O0 1.2 CPU-s against gcc -O0's 2.4 (4.3 with the
# AVX2 clones), and the generated C meets a second compiler; gcc keeps the
# portable, -O2, UBSan and warning batches
CLANG = shutil.which("clang") if "clang" not in os.path.basename(C.CC) and \
    os.environ.get("NNKFUZZ_CLANG") != "0" else None


def batch_opt(bi, warnings=False):
    """The C compiler's flags for batch bi: mostly -O0 (the compile is most
    of a batch's time), every 4th batch at the JIT's -O2, where the C
    compiler exploits undefined behaviour and restrict, and every 6th under
    UBSan (at -O0: gcc inserts its checks before optimizing, so -O1 finds
    nothing more but takes 2.3 times as long to compile; only
    -fsanitize=object-size needs optimization, and a kernel's buffers come
    from its caller, out of its sight); four batches in five as the JIT builds them on this machine
    (-march=native, a third cheaper to compile than the two clones), every
    5th (which meets every -O choice in turn) portable."""
    opt = "-O2" if bi % 4 == 3 else "-O0 " + " ".join(UBSAN) if bi % 6 == 5 else "-O0"
    if opt == "-O0" and bi % 5 != 2 and CLANG and not warnings:
        return "CC=%s -O0 -march=native" % CLANG
    return opt if bi % 5 == 2 else opt + " " + NATIVE


def run_cases(files, a):
    """The regression cases: each must now pass (C at -O0, -O2 portable and
    native, -O0 with UBSan, and the CUDA emulation when the case says so).
    The cases of the same nnkc arguments and warning setting go in one file
    per build (each renamed apart), as a campaign's batches do: one build
    of nine cases costs about what one case alone does."""
    global WARNINGS
    os.makedirs(WORK, exist_ok=True)
    t0 = time.time()
    groups = {}
    for fn in files:
        with open(fn) as f:
            case = json.load(f)
        warn = bool(case.get("warnings")) or os.environ.get("NNKFUZZ_WARNINGS") == "1"
        rt = case.get("rt") or {}
        # "clang": also built by clang at -O0 (a bug of that build's)
        groups.setdefault((warn, tuple(case.get("nnkc_args", [])), tuple(rt.get("kinds", ())),
                           bool(rt.get("cl_O0")), bool(case.get("clang"))), []).append((fn, case))
    failed = {}
    for gi, ((warn, extra, kinds, cl_o0, clang), cases) in enumerate(sorted(groups.items())):
        WARNINGS = warn
        progs, seeds = [], []
        for ci, (fn, case) in enumerate(cases):
            d = case["tree"]
            progs.append(gen.from_json(_rename(d, d["prefix"], "r%d_" % ci)))
            seeds.append(case["seed"])
        cuda = any(case.get("cuda") for _, case in cases)
        path = os.path.join(WORK, "case%d-%d.nnk" % (os.getpid(), gi))
        opts = ["-O0", "-O2", "-O2 " + NATIVE, "-O0 " + " ".join(UBSAN) + " " + NATIVE]
        if clang and CLANG:
            opts.append("CC=%s -O0 -march=native" % CLANG)
        for opt in opts:
            # the runtime paths (rtpaths.py) once, with the first build
            RT.clear()
            # (a sanitizer build: as fuzz.sh, they run in the plain build)
            if kinds and opt == "-O0" and "sanitize=" not in os.environ.get("SAN_FLAGS", ""):
                RT.update(kinds=list(kinds), cl_O0=cl_o0, extra=list(extra))
            for i, k, m in check_batch(progs, seeds, path, opt, emu=cuda and opt == "-O0", extra=list(extra)):
                names = [os.path.basename(cases[i][0])] if i is not None else [os.path.basename(c[0]) for c in cases]
                for name in names:
                    failed.setdefault(name, []).append("%s: %s: %s" % (opt, k, m.replace("\n", "\n  ")))
    for fn in files:
        name = os.path.basename(fn)
        for m in failed.get(name, []):
            print("FAIL: %s: %s" % (name, m), flush=True)
        if name not in failed:
            print("PASS: %s" % name, flush=True)
    print("# nnkfuzz: %d regression cases, %d failed, %.1fs" % (len(files), len(failed), time.time() - t0), flush=True)
    return 1 if failed else 0


def campaign(a):
    global WARNINGS
    os.makedirs(WORK, exist_ok=True)
    avoid = [x for x in a.avoid.split(",") if x] if a.avoid is not None else list(gen.AVOID_DEFAULT)
    AVOID.clear()
    AVOID.update(avoid)
    t0 = time.time()
    nprog = nfail = nconst = 0
    bi = 0
    failures = []
    stop = []
    # SIGTERM ends a campaign after its batch, with the summary line
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        if a.count and nprog >= a.count:
            break
        if a.seconds and time.time() - t0 >= a.seconds:
            break
        n = a.batch if not a.count else min(a.batch, a.count - nprog)
        emu = a.cuda_every > 0 and bi % a.cuda_every == a.cuda_every - 1
        # raw parameters and index(d) in every --cuda-raw-every'th CUDA batch
        raw = CUDA_RAW or (a.cuda_raw_every > 0 and (bi // max(a.cuda_every, 1)) % a.cuda_raw_every == 0)
        b = Batch(a.seed, bi, n, avoid + (["raw"] if emu and not raw else []), a.size)
        set_rt(a, bi, b.extra)
        if emu and raw:
            RT_COUNT["cuda-raw"] = RT_COUNT.get("cuda-raw", 0) + sum(
                any(p.mode == "raw" for p in q.kernel.params) for q in b.progs)
        path = os.path.join(WORK, "b%d-%d.nnk" % (os.getpid(), bi % 4))
        WARNINGS = WARN_ENV == "1" or (WARN_ENV != "0" and bi % WARN_EVERY == 0)
        opt = a.opt if a.opt else batch_opt(bi, WARNINGS)
        for i, kind, msg in check_batch(b.progs, b.seeds, path, opt, emu, b.extra):
            nfail += 1
            seed = b.seeds[i] if i is not None else None
            rec = {"batch": bi, "seed": seed, "kind": kind, "msg": msg,
                   "program": b.progs[i].render() if i is not None else None}
            failures.append(rec)
            print("FAIL %s (seed %s, batch %d%s):\n  %s" % (kind, seed, bi, ", cuda" if emu else "",
                                                          msg.replace("\n", "\n  ")), flush=True)
            if rec["program"] and not a.quiet:
                print(rec["program"], flush=True)
            if i is not None:
                rec["tree"] = gen.to_json(b.progs[i])
                rec["cuda"] = emu
                rec["rt"] = {k: v for k, v in RT.items() if k != "extra"}
                rec["opt"] = opt
                rec["nnkc_args"] = b.extra
            if a.minimize and i is not None:
                small = minimize_failure(b.progs[i], seed, kind, opt, emu, a.minimize_seconds, b.extra)
                rec["tree"] = gen.to_json(small)
                rec["program"] = small.render()
                print("# minimized:\n" + rec["program"], flush=True)
            if a.out:
                os.makedirs(a.out, exist_ok=True)
                with open(os.path.join(a.out, "fail-%s-%s.json" % (kind, seed)), "w") as f:
                    json.dump(rec, f, indent=1)
        nprog += n
        nconst += len(b.progs) - n
        bi += 1
        el = time.time() - t0
        if not a.quiet or bi % 20 == 0:
            print("# %d programs, %d failures, %.1fs, %.2f programs/s" % (nprog, nfail, el, nprog / el), flush=True)
    el = time.time() - t0
    print("# nnkfuzz: seed %d: %d programs (and %d all-constant variants) in %.1fs (%.2f programs/s), %d failures" % (
        a.seed, nprog, nconst, el, nprog / max(el, 1e-9), nfail), flush=True)
    ru = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(r.ru_utime + r.ru_stime for r in ru)
    print("# nnkfuzz: %.1f CPU seconds (%.2f programs a CPU second), the C compiler's host builds %.1f" % (
        cpu, nprog / max(cpu, 1e-9), CC_CPU[0]), flush=True)
    if NOTES:
        print("# nnkfuzz: notes (not failures of nnk): %s" % ", ".join("%s %s" % n for n in NOTES), flush=True)
    if RT_COUNT:
        print("# nnkfuzz: runtime paths (rtpaths.py): %s" % ", ".join(
            "%s %d programs" % kv for kv in sorted(RT_COUNT.items())), flush=True)
    if RT_CALLS:
        print("# nnkfuzz: runtime paths' calls: %s" % ", ".join(
            "%s %d" % (rtpaths().CALL_WHAT[k], n) for k, n in sorted(RT_CALLS.items())), flush=True)
    return 1 if nfail else 0


def set_rt(a, bi, extra):
    """The runtime paths of batch bi (rtpaths.py): the cpu runtime's
    (module and jitfn) every --jit-every'th batch, opencl every
    --opencl-every'th, half of those with -cl-opt-disable."""
    kinds = []
    if a.jit_every > 0 and bi % a.jit_every == a.jit_every // 2:
        kinds += ["module", "jitfn"]
    if a.opencl_every > 0 and bi % a.opencl_every == a.opencl_every // 3:
        kinds.append("opencl")
    RT.clear()
    if kinds:
        RT.update(kinds=kinds, cl_O0=(bi // max(a.opencl_every, 1)) % 2 == 0, extra=list(extra))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--batch", type=int, default=24)
    ap.add_argument("--cuda-every", type=int, default=0)
    ap.add_argument("--cuda-raw-every", type=int, default=2,
                    help="every Kth CUDA batch with raw parameters (NNKFUZZ_CUDA_RAW=1: every one)")
    ap.add_argument("--jit-every", type=int, default=6,
                    help="every Kth batch also through the cpu runtime: nnk.compile/nnk_launch and jit functions")
    ap.add_argument("--opencl-every", type=int, default=12, help="every Kth batch also on OpenCL (PoCL)")
    ap.add_argument("--avoid", default=None)
    ap.add_argument("--opt", default=None)
    ap.add_argument("--size", type=float, default=1.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--show", type=int, default=None)
    ap.add_argument("--case", nargs="*")
    ap.add_argument("-T", default="", help="with --show: the types of nnkc -T")
    ap.add_argument("--minimize", action="store_true")
    ap.add_argument("--minimize-seconds", type=float, default=300)
    a = ap.parse_args()
    if a.case is not None:
        return run_cases(a.case, a)
    if a.show is not None:
        avoid = [x for x in a.avoid.split(",") if x] if a.avoid is not None else list(gen.AVOID_DEFAULT)
        sys.stdout.write(gen.generate(a.show, "p0_", avoid, a.size, tlist=a.T.split(",") if a.T else ()).render())
        return 0
    if not a.count and not a.seconds:
        a.count = 200
    return campaign(a)


if __name__ == "__main__":
    sys.exit(main())
