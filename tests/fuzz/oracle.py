"""oracle - evaluates a generated program (gen.py's tree) with numpy, by
the semantics of docs/language.md as model.py writes them.

The oracle is exact where the language is (integers, bools, + - * / sqrt
and the other correctly rounded operations, conversions, f16/bf16
rounding).  For the functions the back ends compute within a few ulp
(exp, sin, pow, ...) and for float reductions (whose order of additions
the language leaves open) it computes a close value, and the fuzzer runs
it again with those results moved by PERTURB_ULP ulp (up, down, random
per element): an element whose value the moves change beyond rounding is
sensitive (a comparison or a conversion to an integer near its edge) and
is not compared; the others must agree within the spread the moves give.
"""
import functools
import math
from fractions import Fraction

import numpy as np

from model import QUIET, promote
from model import EXT_BUILTINS, round_half
from model import CX_BUILTINS, PART, is_complex, mk_complex
from model import (BITS, COMPARE, EPS, Invalid, accum_type, binop_types, builtin_types, concrete, convert,
                   compute_dtype, is_float, is_int, is_uns, is_weak, obj, reducer_type, storage_round,
                   unop_type, wrap_int, BUILTINS, CLASSES)

PERTURB_ULP = 16


class Ctx:
    """One evaluation of one kernel instance."""

    def __init__(self, prog, binding, inputs, shape, red_axes, mode=0, rng=None):
        self.prog = prog
        self.binding = binding                     # type variable -> scalar type
        self.shape = tuple(shape)
        self.red_axes = tuple(red_axes)
        self.mode = mode                           # 0 exact; 1 up; 2 down; 3 random; 4 fsum, marks 0
        self.marked = False                        # _mark found an order-sensitive result
        self.summed = False                        # a float sum (run 4: correctly rounded)
        self.rng = rng
        self.vals = {}                             # name -> (type, value)
        self.fparams = []                          # stack of dicts
        self.touched = False                       # an inexact result was made
        # one other than of vmath.h's f32 functions (VMATH), which the
        # OpenCL back end computes with the same code (docs/opencl.md)
        self.touched_other = False
        self.oob = set()                           # repr of the raw reads, index(d) out of range
        self.oob_unsure = False                    # a raw read in an empty iteration space
        # a complex operation the constant folder leaves to the generated
        # code (language.md: /, abs, arg and the functions) was evaluated
        # in this statement; the lets and outputs whose value needs one
        self.nofold = False
        self.nofold_names = set()
        self.n = 1
        for a in self.red_axes:
            self.n *= self.shape[a]
        for p in prog.kernel.params:
            t = self.ty(p.ty)
            v = inputs[p.name]
            self.vals[p.name] = (t, v)

    def ty(self, t):
        return self.binding.get(t, t)

    # -- perturbation of inexact results
    def fuzz(self, v, t, scale=None, vm=False):
        if not is_float(concrete(t)):
            return v
        self.touched = True
        self.touched_other = self.touched_other or not vm
        if self.mode in (0, 4):
            return v
        dt = compute_dtype(concrete(t))
        eps = EPS["f64" if dt == np.float64 else "f32"] * PERTURB_ULP
        v = np.asarray(v)
        if self.mode == 1:
            s = 1.0
        elif self.mode == 2:
            s = -1.0
        elif scale is None:
            # a random move of up to the full size: with signs only, two
            # results that move the same way half the time leave a ratio of
            # them unmoved (cosh(z) / sinh(z) of a large real part, whose
            # glibc coshf and sinhf are 1 ulp apart), so no spread admits
            # the C library's error there; moves of random sizes seldom cancel
            s = self.rng.uniform(-1.0, 1.0, size=v.shape)
        else:
            s = self.rng.choice([-1.0, 1.0], size=v.shape)
        with QUIET:
            if scale is None:
                return (v.astype(np.float64) * (1 + s * eps)).astype(dt)
            r = v.astype(np.float64) + s * eps * scale
            if self.mode == 3:
                # a sum the order's rounding may cancel: +0 (x + -x), as
                # an order can give it exactly (rsqrt(-s) >= 0 tells it apart)
                r = np.where(np.abs(v.astype(np.float64)) <= eps * scale, 0.0, r)
            return r.astype(dt)


FMAX = {"f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308}


def order_sensitive(cx, w, acc, kind, axes, keepdims=True):
    """Where a float sum or product over `axes` of w may overflow (or a
    product underflow) in one order of operations and not in another: the
    language leaves the order open, so those results are not compared."""
    w = np.asarray(w, dtype=np.float64)
    big = FMAX["f64" if acc == "f64" else "f32"]
    with QUIET:
        a = np.abs(w)
        fin = np.isfinite(a)
        if kind == "+":
            return np.sum(np.where(fin, a, 0), axis=axes, keepdims=keepdims) > big / 4
        lg = np.where(fin & (a > 0), np.log2(np.where(fin & (a > 0), a, 1)), 0)
        up = np.sum(np.maximum(lg, 0), axis=axes, keepdims=keepdims)
        down = np.sum(np.minimum(lg, 0), axis=axes, keepdims=keepdims)
        lim = 1020 if acc == "f64" else 124
        return (up > lim) | (down < -lim - 20) | np.any(~fin, axis=axes, keepdims=keepdims)


def _mark(cx, r, mask, im=False):
    """Perturbed runs make the elements of mask NaN or inf (never agreeing
    with the exact run), so that the comparison leaves them out."""
    if not np.any(mask):
        return r
    cx.marked = True
    if cx.mode == 0:
        return r
    r = np.array(r, copy=True)
    # (inf, -inf, NaN: whatever a predicate or a conversion makes of them,
    # two of the three disagree, as rsqrt(-x) >= 0 of inf and of NaN do not;
    # a complex value's imaginary part inf, 0, NaN: tanh(inf + i inf) and
    # tanh(NaN + i NaN) have the same NaN imaginary part)
    # Run 4, made only for a call with marks (nnkfuzz.py), makes them 0 (both
    # parts of a complex value), which none of the three others gives both
    # parts of: a product with a zero factor and huge ones is 0 or NaN by
    # its order, and bool() of inf, -inf and NaN alike is true
    bad = np.float64({1: np.inf, 2: 0.0 if im else -np.inf, 4: 0.0}.get(cx.mode, np.nan)).astype(r.dtype)
    return np.where(mask, bad, r)


def _fl(a, t):
    with QUIET:
        return np.asarray(a, dtype=compute_dtype(concrete(t)))


def _tdiv(x, y):
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _shift(op, x, c, bits):
    if c < 0 or c >= bits:
        return -1 if (op == ">>" and x < 0) else 0
    return x << c if op == "<<" else x >> c


_vdiv = np.vectorize(_tdiv, otypes=[object])
_vmod = np.vectorize(lambda x, y: 0 if y == 0 else x - y * _tdiv(x, y), otypes=[object])
_vshift = np.vectorize(_shift, otypes=[object])


def arith(op, t, a, b):
    """a op b, both already of type t (the operands' promoted type)."""
    if is_complex(t) and op not in ("&&", "||"):
        return cx_arith(op, t, a, b)
    if op in COMPARE:
        if is_int(t) or t == "wint":
            a, b = obj(a), obj(b)
        f = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
             ">=": np.greater_equal}[op]
        with QUIET:
            return np.asarray(f(a, b), dtype=np.bool_)
    if op in ("&&", "||"):
        return np.logical_and(a, b) if op == "&&" else np.logical_or(a, b)
    if t == "bool":
        return {"&": np.logical_and, "|": np.logical_or, "^": np.logical_xor}[op](a, b)
    if is_int(t) or t == "wint":
        wt = "i64" if t == "wint" else t
        a, b = obj(a), obj(b)
        if op == "+": r = a + b
        elif op == "-": r = a - b
        elif op == "*": r = a * b
        elif op == "/": r = _vdiv(a, b)
        elif op == "%": r = _vmod(a, b)
        elif op == "&": r = a & b
        elif op == "|": r = a | b
        elif op == "^": r = a ^ b
        elif op in ("<<", ">>"): r = _vshift(op, a, b, BITS[wt])
        else: raise AssertionError(op)
        return obj(wrap_int(obj(r), wt))
    a, b = _fl(a, t), _fl(b, t)
    with QUIET:
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](a, b)


# ---- built-in functions ------------------------------------------------------------

def _gamma(x):
    if x != x:
        return x
    if x == 0:
        return math.copysign(math.inf, x)
    if x == math.inf:
        return x
    if x == -math.inf or (x < 0 and x == math.floor(x)):
        return math.nan
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf if x > 0 else 0.0
    except ValueError:
        return math.nan


def _lgamma(x):
    if x != x:
        return x
    if math.isinf(x):
        return math.inf
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


def _fma(a, b, c):
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    try:
        return float(Fraction(a) * Fraction(b) + Fraction(c))
    except OverflowError:
        return math.copysign(math.inf, a * b + c) if math.isinf(a * b + c) else (a * b + c)


F64 = {
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "cbrt": np.cbrt, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": np.vectorize(math.erf, otypes=[np.float64]), "erfc": np.vectorize(math.erfc, otypes=[np.float64]),
    "lgamma": np.vectorize(_lgamma, otypes=[np.float64]), "tgamma": np.vectorize(_gamma, otypes=[np.float64]),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "atan2": np.arctan2, "pow": np.power, "hypot": np.hypot,
    "fma": np.vectorize(_fma, otypes=[np.float64]),
}


def _relu(x):
    return np.where(np.isnan(x), x, np.where(x > 0, x, np.zeros_like(x)))


def _half_bits(v, t):
    """f16/bf16 values (held in f32) -> their 16-bit patterns (as int64)."""
    v = np.atleast_1d(np.asarray(v, dtype=np.float32))
    if t == "f16":
        return v.astype(np.float16).view(np.uint16).astype(np.int64)
    return np.right_shift(v.view(np.uint32), np.uint32(16)).astype(np.int64)


def _half_value(h, t):
    h = np.atleast_1d(np.asarray(h, dtype=np.int64)).astype(np.uint16)
    if t == "f16":
        return h.view(np.float16).astype(np.float32)
    return np.left_shift(h.astype(np.uint32), np.uint32(16)).view(np.float32)


def _nextafter(x, y, t):
    """language.md: the next value of x's type after x toward y; y when they
    are equal; on f16/bf16 x is rounded to the type first."""
    ct = concrete(t)
    if ct not in ("f16", "bf16"):
        return np.nextafter(x, y)
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.float32))
    xr = round_half(x, ct)
    h = _half_bits(xr, ct)
    step = np.where((xr < y) == (xr > 0), h + 1, h - 1)
    tiny = np.where(np.signbit(y), 0x8001, 0x0001)
    r = np.where(xr == 0, _half_value(tiny, ct), _half_value(step, ct))
    r = np.where(xr == y, y, r).reshape(x.shape)
    return np.where(np.isnan(xr) | np.isnan(y), xr + y, r)


# vmath.h's functions: in f32 (f16, bf16 compute in f32) the same code in C
# and OpenCL C, the same bits (docs/opencl.md, "Numerics")
VMATH = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "sigmoid")


def builtin(cx, name, t, args):
    """name(args) with every argument already of type t; returns the value."""
    if is_complex(t):
        return cx_builtin(cx, name, t, args)
    if name in CX_BUILTINS:
        # of a real value: real(x) and conj(x) are x, imag(x) is 0 of x's
        # type, arg(x) numpy's angle: atan2(0, x) (integers in f64)
        x = args[0]
        if name in ("real", "conj"):
            return x
        if name == "imag":
            return obj(np.zeros(np.shape(x), dtype=np.int64)) if is_int(t) or t == "wint" else \
                np.zeros(np.shape(x), _fl(0, t).dtype)
        at = t if is_float(t) or t == "wfloat" else "f64"
        xf = convert(x, t, at)
        return builtin(cx, "atan2", at, [np.zeros(np.shape(xf), _fl(0, at).dtype), xf])
    _, rule, exact = BUILTINS[name] if name in BUILTINS else EXT_BUILTINS[name]
    fl = is_float(t) or t == "wfloat"
    with QUIET:
        if name == "signbit":
            if not fl:
                return np.asarray(obj(args[0]) < 0, dtype=np.bool_)
            # the sign of a NaN is not the language's: not compared
            x = _fl(args[0], t)
            r = np.asarray(np.signbit(x))
            nan = np.isnan(x)
            cx.touched = cx.touched or bool(np.any(nan))
            cx.touched_other = cx.touched_other or bool(np.any(nan))
            return r if cx.mode in (0, 4) else np.where(nan, cx.mode == 1, r)
        if name == "nextafter":
            return np.asarray(_nextafter(_fl(args[0], t), _fl(args[1], t), t), dtype=compute_dtype(concrete(t)))
        if rule == "pred":
            if not fl:
                x = np.asarray(args[0])
                return np.full(x.shape, name == "isfinite", dtype=np.bool_)
            f = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}[name]
            return np.asarray(f(_fl(args[0], t)), dtype=np.bool_)
        if not fl:
            a = [obj(x) for x in args]
            wt = "i64" if t == "wint" else t
            if name in ("floor", "ceil", "round", "trunc"):
                return a[0]
            if name == "abs":
                return obj(wrap_int(np.vectorize(abs, otypes=[object])(a[0]), wt))
            if name == "sign":
                return np.vectorize(lambda x: (x > 0) - (x < 0), otypes=[object])(a[0])
            if name == "relu":
                return np.vectorize(lambda x: x if x > 0 else 0, otypes=[object])(a[0])
            if name == "min":
                return np.vectorize(min, otypes=[object])(a[0], a[1])
            if name == "max":
                return np.vectorize(max, otypes=[object])(a[0], a[1])
            if name == "clamp":
                return np.vectorize(lambda x, lo, hi: min(max(x, lo), hi), otypes=[object])(*a)
            raise AssertionError(name)
        x = [_fl(v, t) for v in args]
        dt = compute_dtype(concrete(t))
        if name == "sqrt": return np.sqrt(x[0])
        if name == "floor": return np.floor(x[0])
        if name == "ceil": return np.ceil(x[0])
        if name == "round": return np.rint(x[0])
        if name == "trunc": return np.trunc(x[0])
        if name == "abs": return np.abs(x[0])
        if name == "sign": return np.sign(x[0])
        if name == "relu": return _relu(x[0])
        if name == "min": return np.minimum(x[0], x[1])
        if name == "max": return np.maximum(x[0], x[1])
        if name == "clamp": return np.minimum(np.maximum(x[0], x[1]), x[2])
        if name == "fmod": return np.fmod(x[0], x[1])
        if name == "copysign":
            # the sign of a NaN is not the language's (x86 and the two back
            # ends give either): copysign(x, NaN) is not compared
            # the perturbed runs give it either sign (up: +, down: -, random):
            # inf, -inf and NaN (_mark) all fail 1 == copysign(1, NaN) alike
            y = np.broadcast_to(x[1], np.broadcast(x[0], x[1]).shape)
            nan = np.isnan(y)
            cx.touched = cx.touched or bool(np.any(nan))
            cx.touched_other = cx.touched_other or bool(np.any(nan))
            r = np.copysign(x[0], x[1])
            if cx.mode in (0, 4) or not np.any(nan):
                return r
            sg = {1: 1.0, 2: -1.0}.get(cx.mode)
            if sg is None:
                sg = cx.rng.choice([-1.0, 1.0], size=y.shape)
            return np.where(nan, np.copysign(x[0], np.asarray(sg, dtype=r.dtype)), r)
        w = [np.asarray(v, dtype=np.float64) for v in x]
        if name == "fma":
            w = list(np.broadcast_arrays(*w))
        r = np.asarray(F64[name](*w), dtype=np.float64).astype(dt)
        vm = name in VMATH and concrete(t) in ("f32", "f16", "bf16")
        if name in ("sin", "cos", "tan"):
            # an argument whose one ulp is more than a radian (tan(tgamma(x))
            # of u8 x: 1e36): an inexact one's error decides the result, which
            # the three perturbed runs catch only now and then (each a coin
            # toss), so they mark it
            big = np.abs(w[0]) * EPS[concrete(t)] > 1
            cx.touched = cx.touched or bool(np.any(big))
            return _mark(cx, cx.fuzz(r, t, vm=vm), big)
        return cx.fuzz(r, t, vm=vm)


# ---- expressions ----------------------------------------------------------------------

def ev(cx, e):
    """(type, value) of expression e."""
    k = e[0]
    if k == "lit":
        v = e[1]
        return ("wint", obj(v)) if isinstance(v, int) else ("wfloat", np.float64(v))
    if k == "u64lit":
        return "u64", obj(e[1])
    if k == "ilit":
        return "wcomplex", np.complex128(complex(0.0, float(e[1])))
    if k == "bool":
        return "bool", np.asarray(e[1])
    if k == "name":
        if e[1] == "fparam":
            return cx.fparams[-1][e[2]]
        if e[1] == "const":
            return const_value(cx, e[2])
        if e[2] in cx.nofold_names:
            cx.nofold = True
        return cx.vals[e[2]]
    if k == "idx":
        return "i64", obj(np.arange(int(np.prod(cx.shape)), dtype=np.int64).reshape(cx.shape))
    if k == "n":
        return "i64", obj(cx.n)
    if k == "un":
        t, v = ev(cx, e[2])
        op = e[1]
        rt = unop_type(op, t)
        if op == "+":
            return t, v
        if op == "!":
            return "bool", ~convert(v, t, "bool")
        if op == "-":
            if is_complex(t):
                v = np.asarray(v)
                return t, mk_complex(-v.real, -v.imag, t)
            if is_int(t) or t == "wint":
                return t, obj(wrap_int(-obj(v), "i64" if t == "wint" else t))
            with QUIET:
                return t, -_fl(v, t)
        # ~
        if t == "bool":
            return t, ~np.asarray(v, dtype=np.bool_)
        return t, obj(wrap_int(~obj(v), "i64" if t == "wint" else t))
    if k == "bin":
        op = e[1]
        ta, va = ev(cx, e[2])
        tb, vb = ev(cx, e[3])
        t, rt = binop_types(op, ta, tb)
        if op == "/" and is_complex(t):
            cx.nofold = True
        if op in ("&&", "||"):
            return "bool", arith(op, "bool", convert(va, ta, "bool"), convert(vb, tb, "bool"))
        return rt, arith(op, t, convert(va, ta, t), convert(vb, tb, t))
    if k == "sel":
        tc, vc = ev(cx, e[2])
        ta, va = ev(cx, e[3])
        tb, vb = ev(cx, e[4])
        t = promote(ta, tb)
        c = convert(vc, tc, "bool")
        a, b = convert(va, ta, t), convert(vb, tb, t)
        if is_int(t) or t == "wint":
            return t, obj(np.where(c, obj(a), obj(b)))
        return t, np.where(c, a, b)
    if k == "cast":
        to = cx.ty(e[1])
        t, v = ev(cx, e[2])
        return to, convert(v, t, to, explicit=True)
    if k == "call":
        name, args = e[1], e[2]
        tv = [ev(cx, a) for a in args]
        if name == "where":
            return ev(cx, ("sel", "where") + tuple(args))
        t, rt = builtin_types(name, [x[0] for x in tv])
        if is_complex(t) and name not in CX_FOLDED:
            cx.nofold = True
        vals = [convert(v, u, t) for u, v in tv]
        if name in ("c64", "c128", "complex"):
            # c64(re, im), complex(re, im): each part converted to the part
            # type directly (the parts' promoted type picks c64 or c128 only:
            # an integer is not rounded to f16 on the way)
            pt = PART[rt]
            return rt, mk_complex(convert(tv[0][1], tv[0][0], pt), convert(tv[1][1], tv[1][0], pt), rt)
        r = builtin(cx, name, t, vals)
        return rt, r
    if k == "fcall":
        f = cx.prog.funcs[e[1]]
        bound = {}
        vals = [ev(cx, a) for a in e[2]]
        gen_t = {}
        for g, _ in f.generics:
            # a func's type variable: the promoted type of its arguments
            ts = [t for (pname, pty), (t, v) in zip(f.params, vals) if pty == g]
            tv = ts[0]
            for t in ts[1:]:
                tv = promote(tv, t)
            gen_t[g] = concrete(tv)
        for (pname, pty), (t, v) in zip(f.params, vals):
            if pty is not None:
                pty = gen_t.get(pty, pty)
                v, t = convert(v, t, pty, explicit=True), pty
            bound[pname] = (t, v)
        cx.fparams.append(bound)
        try:
            t, v = ev(cx, f.body)
        finally:
            cx.fparams.pop()
        if f.result is not None:
            rt = cx.ty(f.result)
            v, t = convert(v, t, rt, explicit=True), rt
        return t, v
    if k == "red":
        r = reducer(cx, e[1], e[2])
        if ONE_PASS and cx.mode == 3 and cx.n > 0:
            r = one_pass_variance(cx, e, r)
        return r
    if k == "reduce":
        return custom_reduce(cx, e[1], e[2], e[3])
    if k == "raw":
        return raw_read(cx, e)
    if k == "shape":
        t, v = cx.vals[e[1]]
        if e[2] >= np.ndim(v):
            cx.oob.add(repr(e))
            return "i64", obj(0)
        return "i64", obj(np.shape(v)[e[2]])
    if k == "index":
        if e[1] >= len(cx.shape):
            if int(np.prod(cx.shape)):
                cx.oob.add(repr(e))
            return "i64", obj(np.zeros(cx.shape, dtype=np.int64))
        return "i64", obj(np.indices(cx.shape, dtype=np.int64)[e[1]])
    raise AssertionError(k)


def raw_read(cx, e):
    """x[i] (flat, row-major over x's own shape) or x[i, j, ...]: an index
    out of range (or the wrong number of them) reads 0 and makes the call
    fail with NNK_ERANGE (language.md, Raw parameters)."""
    t, v = cx.vals[e[1]]
    v = np.asarray(v)
    if not int(np.prod(cx.shape)):
        # no element: whether an index that does not depend on the
        # element is checked (hoisted out of the loop) is not specified
        cx.oob_unsure = True
    idx = []
    for a in e[2]:
        ta, va = ev(cx, a)
        idx.append(np.broadcast_to(obj(convert(va, ta, "i64")), cx.shape))
    if len(idx) == 1:
        flat, bound = idx[0], v.size
        ok = np.vectorize(lambda i: 0 <= i < bound, otypes=[bool])(flat) if flat.size else np.ones(flat.shape, bool)
    elif len(idx) == v.ndim:
        ok = np.ones(cx.shape, dtype=bool)
        for d, i in enumerate(idx):
            if i.size:
                ok &= np.vectorize(lambda x, b=v.shape[d]: 0 <= x < b, otypes=[bool])(i)
        flat = obj(np.zeros(cx.shape, dtype=np.int64))
        for d, i in enumerate(idx):
            flat = flat * v.shape[d] + obj(np.where(ok, i, 0))
    else:
        ok = np.zeros(cx.shape, dtype=bool)
        flat = obj(np.zeros(cx.shape, dtype=np.int64))
    if not np.all(ok):
        cx.oob.add(repr(e))
    pos = np.where(ok, flat, 0).astype(np.int64)
    src = v.reshape(-1)
    if src.size == 0:
        src = np.zeros(1, dtype=v.dtype)
    r = src[pos]
    zero = np.zeros((), dtype=src.dtype) if src.dtype != object else 0
    return t, (obj(np.where(ok, r, zero)) if is_int(t) else np.where(ok, r, zero))


def tuple_reduce(cx, e):
    """A tuple state's values: each value of an ("op", OP) entry as the
    one-value reduce(ej, ij, OP); a ("sel", CMP, q) entry and its ("pair",
    v) index q together: the element of the largest (CMP '>') or smallest
    value, ties to the smaller index, the identities included (a total
    order, so the order of combining does not matter)."""
    _, es, ids, specs = e
    out = [None] * len(es)
    for j, sp in enumerate(specs):
        if sp[0] == "op":
            out[j] = custom_reduce(cx, es[j], ids[j], sp[1])
        elif sp[0] == "sel":
            out[j], out[sp[2]] = _select_pair(cx, es[j], ids[j], es[sp[2]], ids[sp[2]], sp[1])
    return out


def _select_pair(cx, ev_, iv_, ei_, ii_, cmp):
    tv, vv = ev(cx, ev_)
    tvi, vvi = ev(cx, iv_)
    ti, vi = ev(cx, ei_)
    tii, vii = ev(cx, ii_)
    rv, ri = concrete(promote(tv, tvi)), concrete(promote(ti, tii))
    i0 = np.asarray(obj(convert(vvi, tvi, rv))).reshape(-1)[0]
    i1 = np.asarray(obj(convert(vii, tii, ri))).reshape(-1)[0]
    ax = cx.red_axes
    ks = tuple(1 if i in ax else d for i, d in enumerate(cx.shape))
    if cx.n == 0:
        return (rv, obj(np.full(ks, i0, dtype=object))), (ri, obj(np.full(ks, i1, dtype=object)))
    rows = []
    for a in (_full(cx, obj(convert(vv, tv, rv))), _full(cx, obj(convert(vi, ti, ri)))):
        m = np.moveaxis(np.asarray(a), ax, tuple(range(a.ndim - len(ax), a.ndim)))
        rows.append(m.reshape(m.shape[:a.ndim - len(ax)] + (-1,)))
    bv = np.empty(rows[0].shape[:-1], dtype=object)
    bi = np.empty(rows[0].shape[:-1], dtype=object)
    for ix in np.ndindex(*bv.shape):
        v, i = i0, i1
        for x, y in zip(rows[0][ix], rows[1][ix]):
            if (x > v if cmp == ">" else x < v) or (x == v and y < i):
                v, i = x, y
        bv[ix], bi[ix] = v, i
    return (rv, obj(np.expand_dims(bv, ax))), (ri, obj(np.expand_dims(bi, ax)))


def const_value(cx, name):
    c = cx.prog.consts[name]
    t, v = ev(cx, c.expr)
    if c.ty is not None:
        return c.ty, convert(v, t, c.ty, explicit=True)
    return t, v


def _full(cx, v):
    return np.broadcast_to(np.asarray(v), cx.shape)


def empty_value(cx, name, rt, ct):
    """A reducer's value on an empty slice (language.md section 5)."""
    ks = tuple(1 if i in cx.red_axes else d for i, d in enumerate(cx.shape))
    if name in ("any", "all"):
        return np.full(ks, name == "all")
    if name in ("sum", "prod"):
        v = 0 if name == "sum" else 1
        return obj(np.full(ks, v)) if is_int(rt) else np.full(ks, v, dtype=compute_dtype(rt))
    if name == "mean":
        # (complex: each part 0 / 0)
        return np.full(ks, complex(np.nan, np.nan) if is_complex(rt) else np.nan, dtype=compute_dtype(rt))
    if name in ("max", "min"):
        if ct == "bool":
            return np.full(ks, name == "min")
        if is_int(ct):
            b = BITS[ct]
            lo, hi = (0, (1 << b) - 1) if is_uns(ct) else (-(1 << (b - 1)), (1 << (b - 1)) - 1)
            return obj(np.full(ks, lo if name == "max" else hi, dtype=object))
        return np.full(ks, -np.inf if name == "max" else np.inf, dtype=compute_dtype(ct))
    # argmax/argmin: the call fails, unless no output uses the value (a
    # let nothing reads); then any value does
    return obj(np.full(ks, -1))


def reducer(cx, name, arg):
    t, v = ev(cx, arg)
    rt = reducer_type(name, t)
    ct = concrete(t)
    if cx.n == 0:
        return rt, empty_value(cx, name, rt, ct)
    v = convert(v, t, ct)
    a = _full(cx, v)
    ax = cx.red_axes
    with QUIET:
        if name in ("any", "all"):
            b = convert(a, ct, "bool")
            return "bool", (np.any if name == "any" else np.all)(b, axis=ax, keepdims=True)
        if name in ("argmax", "argmin"):
            m = np.moveaxis(np.asarray(a), ax, tuple(range(a.ndim - len(ax), a.ndim)))
            m = m.reshape(m.shape[:a.ndim - len(ax)] + (-1,))
            if is_int(ct) or ct == "bool":
                f = (lambda r: max(range(len(r)), key=lambda i: (r[i], -i))) if name == "argmax" else \
                    (lambda r: min(range(len(r)), key=lambda i: (r[i], i)))
                idx = np.empty(m.shape[:-1], dtype=object)
                for ix in np.ndindex(*m.shape[:-1]):
                    idx[ix] = f(list(m[ix]))
            else:
                idx = obj((np.argmax if name == "argmax" else np.argmin)(m, axis=-1))
            return "i64", obj(np.expand_dims(idx, ax))
        if name in ("max", "min"):
            if is_int(ct) or ct == "bool":
                r = (np.max if name == "max" else np.min)(obj(a) if ct != "bool" else a, axis=ax, keepdims=True)
                return rt, (obj(r) if ct != "bool" else r)
            r = (np.max if name == "max" else np.min)(a, axis=ax, keepdims=True)
            return rt, r
        if is_complex(ct):
            return rt, cx_reduce(cx, name, a, ct, ax)
        if name == "mean" and not is_float(ct):
            # integers and bools: each element converted to f64, summed in
            # f64 (in an order left open), divided by n (language.md, 87dbf2f)
            w = np.asarray(convert(a, ct, "f64"), dtype=np.float64)
            r = np.sum(w, axis=ax, keepdims=True) / cx.n
            scale = (cx.n + 2) * np.max(np.abs(w), axis=ax, keepdims=True) / cx.n if w.size else 0
            return "f64", np.asarray(cx.fuzz(r, "f64", scale=scale), dtype=np.float64)
        acc = accum_type(ct)
        if name in ("sum", "prod", "mean"):
            if is_float(ct):
                w = np.asarray(a, dtype=np.float64)
                if name == "prod":
                    r = np.prod(w, axis=ax, keepdims=True).astype(compute_dtype(acc))
                    r = _mark(cx, cx.fuzz(r, acc), order_sensitive(cx, w, acc, "*", ax))
                else:
                    r = float_sum(cx, w, ax, name == "mean", compute_dtype(acc), acc)
                    if name == "mean":
                        r = r.astype(compute_dtype(acc))
                return rt, np.asarray(r, dtype=compute_dtype(rt))
            o = obj(a) if ct != "bool" else obj(np.asarray(a, dtype=np.int64))
            if name == "prod":
                r = np.prod(o, axis=ax, keepdims=True) if o.size else obj(np.ones(1))
            else:
                r = np.sum(o, axis=ax, keepdims=True)
            r = obj(wrap_int(obj(r), acc))
            if name == "mean":
                f = convert(r, acc, "f64") / cx.n
                return "f64", np.asarray(f, dtype=np.float64)
            return rt, r
    raise AssertionError(name)


def _fsum(w, ax):
    """The correctly rounded f64 sum along ax (keepdims): run 4's, as an
    order can give it (the mean of equal values is then often exactly
    the value, as the C code's is: c - mean(c) is 0 there)."""
    w = np.asarray(w, dtype=np.float64)
    ax = tuple(a % w.ndim for a in (ax if isinstance(ax, tuple) else (ax,))) if w.ndim else ()
    keep = [a for a in range(w.ndim) if a not in ax]
    # (the reduced extent spelled out: -1 cannot be inferred when a kept
    # extent is 0)
    m = np.transpose(w, keep + list(ax)).reshape([w.shape[a] for a in keep] +
                                                 [int(np.prod([w.shape[a] for a in ax]))])
    out = np.empty(m.shape[:-1])
    with QUIET:
        for ix in np.ndindex(*m.shape[:-1]):
            row = m[ix]
            fin = np.isfinite(row)
            out[ix] = math.fsum(row) if fin.all() else np.sum(row)
    return np.expand_dims(out, ax) if ax else out


def float_sum(cx, w, ax, mean, dt, t):
    """The sum (mean: divided by n) along ax of the f64 values w, a value of
    float type t in numpy dtype dt: in an order the language leaves open, so
    moved by the perturbed runs as far as the order's rounding may move it,
    and not compared where the order decides an overflow."""
    cx.summed = True
    if cx.mode == 4:
        r = _fsum(w, ax)
    else:
        r = np.sum(w, axis=ax, keepdims=True)
    scale = (cx.n + 2) * np.max(np.where(np.isfinite(w), np.abs(w), 0), axis=ax, keepdims=True) if w.size else 0
    if mean:
        r = r / cx.n
        scale = scale / max(cx.n, 1)
    r = cx.fuzz(r.astype(dt), t, scale=scale)
    return _mark(cx, r, order_sensitive(cx, w, t, "+", ax))


# nnkc -O3 (nnkfuzz.py sets this for a batch it compiles so): the
# variance after a mean is Welford's one-pass state (language.md, tuple
# state), whose value is within the two-pass form's accuracy but not the
# same: where a slice's values are all equal, it is exactly 0 and the two
# passes' the rounding error of the mean, squared.  So the third perturbed
# run takes the one-pass value: a comparison, bool() or integer conversion
# of the variance that tells the two apart is not compared, and the
# difference widens the tolerance of the others.
ONE_PASS = False


def _tt(e):
    return tuple(_tt(x) for x in e) if isinstance(e, (list, tuple)) else e


def welford_arg(e):
    """A, where e is sum(D) or mean(D) with D = (A - m) * (A - m) or
    pow(A - m, 2) (or m - A) and m = mean(A) of float A: the shape nnkc -O3
    computes in one pass (language.md); else None."""
    e = _tt(e)
    if e[0] != "red" or e[1] not in ("sum", "mean"):
        return None
    d = e[2]
    if d[0] == "bin" and d[1] == "*" and d[2] == d[3]:
        d = d[2]
    elif d[0] == "call" and d[1] == "pow" and d[2][1][0] == "lit" and d[2][1][1] == 2 and \
            isinstance(d[2][1][1], int):
        d = d[2][0]
    else:
        return None
    if d[0] != "bin" or d[1] != "-":
        return None
    if d[3] == ("red", "mean", d[2]):
        return d[2]
    if d[2] == ("red", "mean", d[3]):
        return d[3]
    return None


def one_pass_variance(cx, e, r):
    """r (the two-pass value of e) replaced by Welford's, computed in f64 in
    one order (running mean and squared deviations), where e is a variance
    nnkc -O3 computes in one pass and the slice's values are finite (a
    non-finite mean gives the two-pass value, language.md)."""
    a = welford_arg(e)
    if a is None:
        return r
    t, v = ev(cx, a)
    ct = concrete(t)
    if not is_float(ct) or is_complex(ct):
        return r
    ax = cx.red_axes
    with QUIET:
        w = np.asarray(_full(cx, convert(v, t, ct)), dtype=np.float64)
        m = np.moveaxis(w, ax, tuple(range(w.ndim - len(ax), w.ndim)))
        m = m.reshape(m.shape[:w.ndim - len(ax)] + (-1,))
        mean, q = np.zeros(m.shape[:-1]), np.zeros(m.shape[:-1])
        for i in range(m.shape[-1]):
            x = m[..., i]
            delta = x - mean
            mean = mean + delta / (i + 1)
            q = q + delta * (x - mean)
        if e[1] == "mean":
            q = q / m.shape[-1]
        ks = tuple(1 if i in ax else d for i, d in enumerate(cx.shape))
        q = q.reshape(ks)
        fin = np.all(np.isfinite(w), axis=ax, keepdims=True)
        rt, rv = r
        return rt, np.where(fin, q.astype(np.asarray(rv).dtype), rv)


COMBINE = {"+", "*", "|", "&", "^", "max", "min"}


def custom_reduce(cx, arg, ident, cop):
    t, v = ev(cx, arg)
    ti, vi = ev(cx, ident)
    rt = concrete(promote(t, ti))
    i0 = convert(vi, ti, rt)
    ax = cx.red_axes
    if cx.n == 0:
        ks = tuple(1 if i in ax else d for i, d in enumerate(cx.shape))
        return rt, np.broadcast_to(np.asarray(i0), ks).copy()
    a = _full(cx, convert(v, t, rt))
    if is_complex(rt):
        # + from 0 and * from 1 only (gen.py): the sum and the product
        return rt, cx_reduce(cx, "sum" if cop == "+" else "prod", a, rt, ax)
    m = np.moveaxis(np.asarray(a), ax, tuple(range(a.ndim - len(ax), a.ndim)))
    m = m.reshape(m.shape[:a.ndim - len(ax)] + (-1,))
    with QUIET:
        if cop in ("max", "min"):
            def f(x, y):
                return builtin(cx, cop, rt, [x, y])
        else:
            def f(x, y):
                return arith(cop, rt, x, y)
        out = np.empty(m.shape[:-1], dtype=object)
        for ix in np.ndindex(*m.shape[:-1]):
            acc = np.asarray(i0)
            for x in m[ix]:
                acc = f(acc, np.asarray(x))
            out[ix] = acc.item() if hasattr(acc, "item") else acc
        if is_float(rt):
            r = np.asarray(out.astype(np.float64), dtype=compute_dtype(rt))
            if cop in ("+", "*"):
                w = np.asarray(a, dtype=np.float64)
                scale = (cx.n + 2) * np.max(np.where(np.isfinite(w), np.abs(w), 0), axis=ax) if w.size else 0
                r = cx.fuzz(r, rt, scale=scale if cop == "+" else None)
                r = _mark(cx, r, order_sensitive(cx, w, rt, cop, ax, keepdims=False))
            return rt, np.expand_dims(r, ax)
        if rt == "bool":
            return rt, np.expand_dims(np.asarray(out, dtype=np.bool_), ax)
        return rt, obj(np.expand_dims(out, ax))


# ---- a kernel ---------------------------------------------------------------------------

# the built-ins of complex values the constant folder computes (language.md)
CX_FOLDED = ("real", "imag", "conj", "isnan", "isinf", "isfinite", "c64", "c128", "complex")


def run(prog, binding, inputs, shape, red_axes, mode=0, seed=0):
    """Evaluates the kernel's statements; returns {output: (type, value)}
    with reduced-shape outputs in keepdims shape, values as stored."""
    cx = Ctx(prog, binding, inputs, shape, red_axes, mode, np.random.default_rng(seed))
    kern = prog.kernel
    outs = {}
    computed = {}                                  # output -> the type its value was computed in
    for st in kern.body:
        cx.nofold = False
        if st.kind == "tlet":
            for n, tv in zip(st.name, tuple_reduce(cx, st.expr)):
                cx.vals[n] = tv
        elif st.kind == "let":
            t, v = ev(cx, st.expr)
            if st.ty is not None:
                lt = cx.ty(st.ty)
                v, t = convert(v, t, lt, explicit=True), lt
            cx.vals[st.name] = (t, v)
        else:
            o = kern.out(st.name)
            ot = cx.ty(o.ty)
            t, v = ev(cx, st.expr)
            computed[st.name] = concrete(t)
            v = storage_round(convert(v, t, ot), ot)
            if is_int(ot):
                v = obj(v)
            cx.vals[st.name] = (ot, v)
            outs[st.name] = (ot, v)
        if cx.nofold:
            cx.nofold_names.update(st.name if st.kind == "tlet" else [st.name])
    outs[None] = cx.touched
    outs["inexact_other"] = cx.touched_other
    outs["nofold"] = cx.nofold_names
    outs["computed"] = computed
    outs["marked"] = cx.marked
    outs["summed"] = cx.summed
    outs["oob"] = cx.oob
    outs["oob_unsure"] = cx.oob_unsure
    return outs


# ---- complex numbers (language.md, "Complex numbers") --------------------------------
# Each operation is the formula language.md and templates/c/complex.tmpl
# name, on the parts in the part type (numpy float32 or float64 arrays,
# one rounding an operation, as the generated code with -ffp-contract=off):
# + - * / and the comparisons exactly; the functions on the real ones of
# builtin() (exp, sin, hypot, ... moved by the perturbed runs like any
# inexact result).  numpy's own complex loops are not used: their SIMD
# code may contract or reorder.

# |re| or |im| beyond which sqrt scales by 1/4 (FreeBSD's csqrt), and |re|
# beyond which tanh is +-1 to the part's precision (FreeBSD's ctanh(f))
CX_BIG = {"f32": np.float32(7.446288e37), "f64": np.float64(7.446288774449766e307)}
CX_TH = {"f32": 9, "f64": 22}


def _cpart(t):
    """The part type of complex type t as builtin() takes it."""
    return "f32" if t == "c64" else "f64"


def _parts(v, t):
    dt = np.float32 if t == "c64" else np.float64
    v = np.asarray(v, dtype=compute_dtype("c128" if t == "wcomplex" else t))
    return np.asarray(v.real, dtype=dt), np.asarray(v.imag, dtype=dt)


def _cmk(re, im, t):
    return mk_complex(re, im, t)


def cx_arith(op, t, a, b):
    """a op b of complex type t: the textbook product, numpy's Smith
    quotient with its branch for a zero divisor."""
    ar, ai = _parts(a, t)
    br, bi = _parts(b, t)
    with QUIET:
        if op == "==":
            return np.asarray((ar == br) & (ai == bi))
        if op == "!=":
            return np.asarray(~((ar == br) & (ai == bi)))
        if op == "+":
            return _cmk(ar + br, ai + bi, t)
        if op == "-":
            return _cmk(ar - br, ai - bi, t)
        if op == "*":
            return _cmul(ar, ai, br, bi, t)
        if op == "/":
            return _cdiv(ar, ai, br, bi, t)
    raise AssertionError(op)


def _cmul(ar, ai, br, bi, t):
    with QUIET:
        return _cmk(ar * br - ai * bi, ar * bi + ai * br, t)


def _cdiv(ar, ai, br, bi, t):
    one = ar.dtype.type(1)
    with QUIET:
        abr, abi = np.abs(br), np.abs(bi)
        first = abr >= abi
        zero = first & (abr == 0) & (abi == 0)
        # |re| >= |im|
        rat1 = bi / br
        scl1 = one / (br + bi * rat1)
        r1, i1 = (ar + ai * rat1) * scl1, (ai - ar * rat1) * scl1
        # |re| < |im| (and a NaN part)
        rat2 = br / bi
        scl2 = one / (bi + br * rat2)
        r2, i2 = (ar * rat2 + ai) * scl2, (ai * rat2 - ar) * scl2
        re = np.where(zero, ar / abr, np.where(first, r1, r2))
        im = np.where(zero, ai / abr, np.where(first, i1, i2))
    return _cmk(re, im, t)


def cx_builtin(cx, name, t, args):
    """name(args) of complex type t (args already of type t)."""
    pt = _cpart(t)
    re, im = _parts(args[0], t)
    # (formulas on real helpers, some of them OpenCL's built-ins)
    cx.touched_other = True

    def R(f, *xs):
        return np.asarray(builtin(cx, f, pt, list(xs)), dtype=re.dtype)
    with QUIET:
        if name == "real":
            return re
        if name == "imag":
            return im
        if name == "conj":
            return _cmk(re, -im, t)
        if name == "isnan":
            return np.asarray(np.isnan(re) | np.isnan(im))
        if name == "isinf":
            return np.asarray(np.isinf(re) | np.isinf(im))
        if name == "isfinite":
            return np.asarray(np.isfinite(re) & np.isfinite(im))
        if name == "abs":
            return R("hypot", re, im)
        if name == "arg":
            return R("atan2", im, re)
        if name == "exp":
            return cx_exp(R, re, im, t)
        if name == "log":
            return _cmk(R("log", R("hypot", re, im)), R("atan2", im, re), t)
        if name == "sqrt":
            return cx_sqrt(R, re, im, t, pt)
        if name == "pow":
            wr, wi = _parts(args[1], t)
            return cx_pow(R, re, im, wr, wi, t)
        if name == "sin":
            return _cmk(R("sin", re) * R("cosh", im), R("cos", re) * R("sinh", im), t)
        if name == "cos":
            return _cmk(R("cos", re) * R("cosh", im), -(R("sin", re) * R("sinh", im)), t)
        if name == "sinh":
            return _cmk(R("sinh", re) * R("cos", im), R("cosh", re) * R("sin", im), t)
        if name == "cosh":
            return _cmk(R("cosh", re) * R("cos", im), R("sinh", re) * R("sin", im), t)
        if name == "tanh":
            return cx_tanh(R, re, im, t, pt)
        if name == "tan":
            # tan z = -i tanh(iz)
            h = cx_tanh(R, -im, re, t, pt)
            hr, hi = _parts(h, t)
            return _cmk(hi, -hr, t)
    raise AssertionError(name)


def cx_exp(R, re, im, t):
    """e^re (cos im + i sin im); a real argument stays real (no inf * 0)."""
    r = R("exp", re)
    with QUIET:
        return _cmk(np.where(im == 0, r, r * R("cos", im)), np.where(im == 0, im, r * R("sin", im)), t)


def cx_sqrt(R, a, b, t, pt):
    """FreeBSD's csqrt, as templates/c/complex.tmpl writes it."""
    T = a.dtype.type
    with QUIET:
        a, b = np.broadcast_arrays(a, b)
        scale = (np.abs(a) >= CX_BIG[pt]) | (np.abs(b) >= CX_BIG[pt])
        sa = np.where(scale, a * T(0.25), a)
        sb = np.where(scale, b * T(0.25), b)
        h = R("hypot", sa, sb)
        s1 = R("sqrt", (sa + h) * T(0.5))
        s2 = R("sqrt", (-sa + h) * T(0.5))
        pos = sa >= 0
        rr = np.where(pos, s1, np.abs(sb) / (T(2) * s2))
        ri = np.where(pos, sb / (T(2) * s1), np.copysign(s2, sb))
        rr = np.where(scale, rr * T(2), rr)
        ri = np.where(scale, ri * T(2), ri)
        bb = b - b
        # the special cases, the last checked first
        ainf = np.isinf(a)
        rr = np.where(ainf, np.where(a < 0, np.abs(bb), a), rr)
        ri = np.where(ainf, np.where(a < 0, np.copysign(a, b), np.copysign(bb, b)), ri)
        anan = a != a
        rr = np.where(anan, a, rr)
        ri = np.where(anan, bb / bb, ri)
        binf = np.isinf(b)
        rr = np.where(binf, np.abs(b), rr)
        ri = np.where(binf, b, ri)
        zero = (a == 0) & (b == 0)
        rr = np.where(zero, T(0), rr)
        ri = np.where(zero, b, ri)
    return _cmk(rr, ri, t)


def cx_pow(R, zr, zi, wr, wi, t):
    """numpy's npy_cpow: w = 0 gives 1; z = 0 gives 0 for a real w > 0,
    NaN otherwise; an integer w.re below 100 in magnitude (w.im = 0) by
    repeated products; others exp(w log z)."""
    T = zr.dtype.type
    zr, zi, wr, wi = np.broadcast_arrays(zr, zi, wr, wi)
    with QUIET:
        lr = R("log", R("hypot", zr, zi))
        li = R("atan2", zi, zr)
        g = _cmul(wr, wi, lr, li, t)
        gr, gi = _parts(g, t)
        out = np.array(cx_exp(R, gr, gi, t), copy=True)
        intw = (wi == 0) & (wr > -100) & (wr < 100) & (np.trunc(wr) == wr)
        for nv in np.unique(wr[intw]) if np.any(intw) else ():
            m_ = intw & (wr == nv)
            n = int(nv)
            z = _cmk(zr, zi, t)
            if n == 1:
                r = z
            elif n == 2:
                r = _cmul(zr, zi, zr, zi, t)
            elif n == 3:
                q = _cmul(zr, zi, zr, zi, t)
                r = _cmul(*_parts(q, t), zr, zi, t)
            else:
                acc = _cmk(np.ones_like(zr), np.zeros_like(zr), t)
                p = z
                m, mask = abs(n), 1
                while True:
                    if m & mask:
                        acc = _cmul(*_parts(acc, t), *_parts(p, t), t)
                    mask <<= 1
                    if m < mask:
                        break
                    p = _cmul(*_parts(p, t), *_parts(p, t), t)
                r = acc
                if n < 0:
                    r = _cdiv(np.ones_like(zr), np.zeros_like(zr), *_parts(acc, t), t)
            out = np.where(m_, r, out)
        z0 = (zr == 0) & (zi == 0)
        zero_res = np.where((wr > 0) & (wi == 0), _cmk(T(0), T(0), t), _cmk(T(np.nan), T(np.nan), t))
        out = np.where(z0, zero_res, out)
        out = np.where((wr == 0) & (wi == 0), _cmk(T(1), T(0), t), out)
    return np.asarray(out, dtype=compute_dtype("c128" if t == "wcomplex" else t))


def cx_tanh(R, x, y, t, pt):
    """Kahan's tanh (FreeBSD's ctanh)."""
    T = x.dtype.type
    one = T(1)
    with QUIET:
        x, y = np.broadcast_arrays(x, y)
        e = R("exp", -np.abs(x))
        br = np.copysign(one, x)
        bi = T(4) * R("sin", y) * R("cos", y) * e * e
        tn = R("tan", y)
        beta = one + tn * tn
        s = R("sinh", x)
        rho = R("sqrt", one + s * s)
        den = one + beta * s * s
        big = np.abs(x) >= T(CX_TH[pt])
        return _cmk(np.where(big, br, (beta * rho * s) / den), np.where(big, bi, tn / den), t)


def _zero_sign(cx, x):
    """x with its zeros +0 (perturbed run 1), -0 (2) or NaN (3).  The two
    parts of a product take their signs apart, and a value can depend on
    the four pairs (arg: 0, -0, pi, -pi), which three runs of signs cannot
    all give: run 3 leaves what depends on a zero part uncompared."""
    if cx.mode in (0, 4):
        return x
    x = np.array(x)
    z = np.nan if cx.mode == 3 else 1.0 if cx.mode == 1 else -0.0
    return np.where(x == 0, np.copysign(np.zeros_like(x), z) if cx.mode != 3 else z, x).astype(x.dtype)


def cx_reduce(cx, name, a, t, ax):
    """sum, prod, mean of complex values: in t's part type (no wider
    accumulator), in an order the language leaves open."""
    re, im = _parts(a, t)
    pt = _cpart(t)
    with QUIET:
        if name == "prod":
            w = np.asarray(a, dtype=np.complex128)
            r = np.prod(w, axis=ax, keepdims=True)
            scale = (cx.n + 2) * np.abs(r)
            rr = cx.fuzz(np.asarray(r.real).astype(re.dtype), pt, scale=scale)
            ri = cx.fuzz(np.asarray(r.imag).astype(re.dtype), pt, scale=scale)
            # a part that is zero has the sign the order gives it: with
            # c = (-286 + 503j) * 0, c * (1e300 - 1j) is +0 + 0j, but
            # (-286 + 503j) * (0 * (1e300 - 1j)) is -0 + 0j (arg: 0 or pi);
            # the perturbed runs give it each sign
            rr, ri = (_zero_sign(cx, x) for x in (rr, ri))
            bad = order_sensitive(cx, np.abs(w), pt, "*", ax)
            return _cmk(_mark(cx, rr, bad), _mark(cx, ri, bad, im=True), t)
        out = [float_sum(cx, np.asarray(part, dtype=np.float64), ax, name == "mean", part.dtype, pt)
               for part in (re, im)]
        return _cmk(out[0], out[1], t)
