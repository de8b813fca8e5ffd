"""Elementwise conformance: every built-in function, operator and dtype of
language.md sections 2-3 against numpy (or an exact Python reference), with
stated tolerances:

  * correctly rounded operations (+ - * / sqrt fma fmod floor ceil round
    trunc abs sign min max clamp copysign relu where, conversions) must be
    bit-exact in f32 and f64, and also in f16/bf16 where f32 is wide enough
    for one rounding to be exact (+ - * / sqrt: 24 >= 2*11+2 bits);
  * libm functions: within a few ulp of the correctly rounded value
    (TOL below), computed in f64 by numpy/math and rounded to the type;
  * f16 and bf16 compute in f32 and round once on store (language.md
    section 2), so they are compared with the f32 reference rounded to the
    type, within 1 ulp of the type.
Integers wrap; division and remainder by zero give 0; shifts out of range
give 0 (or -1 for >> of a negative); float-to-int conversion truncates,
saturates and maps NaN to 0.
"""
import fractions
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

FT = ["f16", "bf16", "f32", "f64"]
IT = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
rng = np.random.default_rng(12345)


def B():
    return C.load("kernels/builtins.nnk")


def OPS():
    return C.load("kernels/ops.nnk")


# ---- values ---------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, np.inf, -np.inf, np.nan,
           1e-30, -1e-30, 1e-40, 65504.0, 65520.0, 1e30, -1e30, 3.0e38, 1e300]


def in_type(x, t):
    """float64 values -> the values representable in t, as float64 (what a
    kernel of type t receives), and the storage array to pass."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if t == "f16":
            s = x.astype(np.float16)
            return s.astype(np.float64), s
        if t == "bf16":
            s = C.f32_to_bf16(x.astype(np.float32))
            return C.bf16_to_f32(s).astype(np.float64), s.view(C.BF16Array)
        if t == "f32":
            s = x.astype(np.float32)
            return s.astype(np.float64), s
    return x, x.copy()


def round_to(r, t):
    """float64 results -> storage of type t, rounded once (the reference)."""
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if t == "f16":
            return r.astype(np.float16)
        if t == "bf16":
            # f64 -> bf16 correctly rounded: round to odd f32 first, then RNE
            return C.f32_to_bf16(_f64_to_f32_odd(r))
        if t == "f32":
            return r.astype(np.float32)
    return r


def _f64_to_f32_odd(r):
    f = r.astype(np.float32)
    back = f.astype(np.float64)
    inexact = (back != r) & ~np.isnan(r)
    u = f.view(np.uint32).copy()
    too_big = np.abs(back) > np.abs(r)
    u = np.where(inexact & too_big, u - 1, u)
    u = np.where(inexact, u | 1, u)
    return u.view(np.float32)


def sample(lo, hi, n=600, t="f32"):
    v = np.concatenate([rng.uniform(lo, hi, n), np.array(SPECIAL)])
    return v


def ref_f32(fn, xs, t):
    """Reference of a compute-in-f32 function for f16/bf16: evaluate in f64
    on the inputs, round to f32 (the computed value), then to t."""
    with np.errstate(all="ignore"):
        r = fn(*xs)
    if t in ("f16", "bf16"):
        r = np.asarray(r, dtype=np.float64).astype(np.float32).astype(np.float64)
    return round_to(r, t)


def _vec(f):
    def g(x):
        out = np.empty_like(x)
        for i, v in enumerate(x.flat):
            try:
                out.flat[i] = f(v)
            except (ValueError, OverflowError):
                out.flat[i] = np.nan
        return out
    return g


def _lgamma(v):
    if math.isnan(v):
        return v
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    return math.lgamma(v)


def _tgamma(v):
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == math.inf:
        return math.inf
    if v == 0:
        return math.copysign(math.inf, v)
    if v < 0 and v == math.floor(v):
        return math.nan
    try:
        return math.gamma(v)
    except OverflowError:
        return math.inf


# name: (reference in f64, domain, tolerance in ulp for f32/f64).  The references
# are glibc's scalar functions (C.libm), cbrt correctly rounded (C.cbrt_ref), or
# exact operations: never numpy's float64 functions, whose SIMD code differs by
# machine (numpy's AVX-512 cbrt is 3 ulp off where glibc's is within 1).
UNARY = {
    "sqrt": (np.sqrt, (0, 1e4), 0),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0, 1e4), 1),   # sqrt and / are exact roundings
    # f64 cbrt is glibc's, which is up to 4 ulp off (glibc's manual; 2.3 seen here)
    "cbrt": (C.cbrt_ref, (-1e3, 1e3), {"f32": 1, "f64": 4}),
    "exp": (C.libm("exp"), (-30, 30), 1),
    "exp2": (C.libm("exp2"), (-30, 30), 1),
    "expm1": (C.libm("expm1"), (-5, 5), 1),
    "log": (C.libm("log"), (0, 1e4), 1),
    "log2": (C.libm("log2"), (0, 1e4), 1),
    "log10": (C.libm("log10"), (0, 1e4), 1),
    "log1p": (C.libm("log1p"), (-1, 10), 1),
    "sin": (C.libm("sin"), (-10, 10), 1),
    "cos": (C.libm("cos"), (-10, 10), 1),
    "tan": (C.libm("tan"), (-1.5, 1.5), 1),
    "asin": (C.libm("asin"), (-1, 1), 1),
    "acos": (C.libm("acos"), (-1, 1), 1),
    "atan": (C.libm("atan"), (-100, 100), 1),
    "sinh": (C.libm("sinh"), (-10, 10), 2),
    "cosh": (C.libm("cosh"), (-10, 10), 2),
    "tanh": (C.libm("tanh"), (-10, 10), 2),
    "asinh": (C.libm("asinh"), (-100, 100), 2),
    "acosh": (C.libm("acosh"), (1, 100), 2),
    "atanh": (C.libm("atanh"), (-1, 1), 2),
    "erf": (_vec(math.erf), (-5, 5), 2),
    "erfc": (_vec(math.erfc), (-5, 5), 4),
    "lgamma": (_vec(_lgamma), (0.1, 20), 8),
    "tgamma": (_vec(_tgamma), (0.1, 10), 8),
    "sigmoid": (lambda x: 1 / (1 + C.libm("exp")(-x)), (-20, 20), 3),
    "floor": (np.floor, (-100, 100), 0),
    "ceil": (np.ceil, (-100, 100), 0),
    "round": (np.rint, (-100, 100), 0),
    "trunc": (np.trunc, (-100, 100), 0),
    "abs": (np.abs, (-100, 100), 0),
    "sign": (np.sign, (-2, 2), 0),
    "relu": (lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)), (-2, 2), 0),
}


def test_unary_float_builtins():
    for name, (fn, (lo, hi), tol) in UNARY.items():
        for t in FT:
            k = getattr(B(), "u_%s_%s" % (name, t))
            x, xs = in_type(sample(lo, hi, t=t), t)
            got = k(xs)
            want = ref_f32(fn, [x], t)
            if t in ("f16", "bf16"):
                ulp = 0 if name in ("sqrt", "floor", "ceil", "round", "trunc", "abs", "sign", "relu") else 1
                C.close(got, want, t, ulp=ulp, what="%s<%s>" % (name, t), inputs=[x])
            else:
                # absolute slack near results that cancel (lgamma's zeros, sin's)
                # (Python's lgamma is good to ~1e-15 absolute, not to an ulp of small results)
                atol = {"f32": 1e-6, "f64": 1e-14}[t] if name == "lgamma" else 0
                C.close(got, want, t, ulp=tol[t] if isinstance(tol, dict) else tol, atol=atol,
                        what="%s<%s>" % (name, t), inputs=[x])


def test_jit_isa_builtins():
    """On an AVX-512 host, the built-ins as the JIT compiles them there
    (-march=native): no libmvec variant (glibc's 8- and 16-wide vector math,
    whose bounds are not libm's) is called, and every float built-in gives
    the bits of the portable build, so the tolerances above hold for the
    JIT's code.  (test_vmath.py does this for the vector math on any host.)"""
    if C.host_isa() != "AVX-512":
        print("  host %s: the AVX-512 build is not made here (test_vmath.py checks this ISA)" % C.host_isa())
        return
    nat = C.load_native("kernels/builtins.nnk")
    C.check(C.vector_math_calls(nat.so) == [], "libmvec calls: %s" % C.vector_math_calls(nat.so))
    for name, (fn, (lo, hi), tol) in list(UNARY.items()) + list(BINARY.items()):
        for t in FT:
            kn = ("u_%s_%s" if name in UNARY else "b_%s_%s") % (name, t)
            args = [in_type(sample(lo, hi, t=t), t)[1] for _ in range(1 if name in UNARY else 2)]
            g, w = getattr(nat, kn)(*args), getattr(B(), kn)(*args)
            C.equal(g.view(np.uint8), w.view(np.uint8), "%s: -march=native = portable (bits)" % kn)


def test_round_half_to_even():
    for t in FT:
        x, xs = in_type([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, 1e6 + 0.5, 2.4999, 2.5001, -0.0], t)
        got = getattr(B(), "u_round_" + t)(xs)
        C.close(got, round_to(np.rint(x), t), t, what="round<%s>" % t)
        if t == "f32":
            C.check(np.signbit(got[-1]) and np.signbit(got[3]), "round(-0.5) and round(-0.0) keep the sign (-0.0)")


def test_sign_of_zero_and_nan():
    for t in ("f32", "f64"):
        got = getattr(B(), "u_sign_" + t)(np.array([-0.0, 0.0, np.nan, -3, 3], dtype=C.NP[t]))
        C.check(not np.signbit(got[0]) and got[0] == 0, "sign(-0.0) is +0.0 as numpy")
        C.check(np.isnan(got[2]), "sign(nan) is nan")
        got = getattr(B(), "u_abs_" + t)(np.array([-0.0], dtype=C.NP[t]))
        C.check(not np.signbit(got[0]), "abs(-0.0) is +0.0")


def test_predicates():
    for t in FT + ["i32", "u8"]:
        for name, fn in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
            k = getattr(B(), "p_%s_%s" % (name, t))
            if t in FT:
                x, xs = in_type(sample(-10, 10), t)
            else:
                x = xs = rng.integers(0, 100, 50).astype(C.NP[t])
            C.equal(k(xs), fn(x).astype(np.bool_), "%s<%s>" % (name, t))


def _nextafter_ref(xs, zs, t):
    """The neighbour of x toward z in t, exact: numpy's nextafter (a bit
    operation) for float32/64; f16 and bf16 step their 16-bit patterns here,
    since numpy's float16 nextafter gives x, not z, when x == z (the sign of
    a zero: nnk is C's nextafter, which gives z, in every type)."""
    if t in ("f32", "f64"):
        dt = C.NP[t]
        return np.nextafter(np.asarray(xs, dtype=dt), np.asarray(zs, dtype=dt))
    val = (lambda s: C.bf16_to_f32(s).astype(np.float64)) if t == "bf16" else (lambda s: s.astype(np.float64))
    x, z = val(xs), val(zs)
    h = np.asarray(xs).view(np.uint16).astype(np.int64)
    up = (x < z) == (x > 0)
    r = np.where(up, h + 1, h - 1)
    r = np.where(x == 0, np.where(np.signbit(z), 0x8001, 0x0001), r)
    r = np.where(x == z, np.asarray(zs).view(np.uint16), r)
    r = np.where(np.isnan(x) | np.isnan(z), 0x7FFF, r)
    return r.astype(np.uint16)


def test_nextafter():
    """nextafter(x, z) in each float type's own grid (f16/bf16 too, not the
    f32 compute grid): bit-exact against the exact reference; the edges are
    zeros of both signs, the smallest subnormal, the largest finite value
    toward inf, infinities toward 0, NaN and x == z (gives z, so
    nextafter(0, -0) is -0).  Integers compute in f64."""
    edge = [0.0, -0.0, 1.0, -1.0, 5e-324, 1e-45, 6e-8, 65504.0, 3.4028234663852886e38,
            1.7976931348623157e308, np.inf, -np.inf, np.nan, 2.0 ** -126, -2.5]
    for t in FT:
        ex = np.array(edge + list(rng.uniform(-100, 100, 40)))
        xv = np.repeat(ex, len(edge))
        zv = np.tile(np.array(edge), len(ex))
        _, xs = in_type(xv, t)
        _, zs = in_type(zv, t)
        got = getattr(B(), "b_nextafter_" + t)(xs, zs)
        want = _nextafter_ref(xs, zs, t)
        if t in ("f16", "bf16"):
            gb, wb = np.asarray(got).view(np.uint16), want
            nan = 0x7C00 if t == "f16" else 0x7F80
            bad = (gb != wb) & ~(((gb & 0x7FFF) > nan) & ((wb & 0x7FFF) > nan))
            C.check(not bad.any(), "nextafter<%s>: %s toward %s gave %s, want %s" % (
                t, xv[bad][:3], zv[bad][:3], gb[bad][:3], wb[bad][:3]))
        else:
            u = {"f32": np.uint32, "f64": np.uint64}[t]
            keep = ~np.isnan(want)
            C.equal(np.asarray(got).view(u)[keep], np.asarray(want).view(u)[keep], "nextafter<%s> bits" % t)
            C.check(np.array_equal(np.isnan(got), np.isnan(want)), "nextafter<%s>: NaN where the reference is" % t)
    a = np.array([0, 1, -1, 7, 2147483647], dtype=np.int32)
    b = np.array([1, 0, -2, 7, 0], dtype=np.int32)
    C.equal(B().b_nextafter_int(a, b), np.nextafter(a.astype(np.float64), b.astype(np.float64)),
            "nextafter of integers is f64")


def test_signbit():
    """signbit: the sign bit of floats (-0.0 and -NaN included, as numpy),
    x < 0 for integers, false for unsigned ones."""
    for t in FT:
        v = np.array(SPECIAL + [-x for x in SPECIAL] + list(rng.uniform(-5, 5, 30)))
        x, xs = in_type(v, t)
        got = getattr(B(), "p_signbit_" + t)(xs)
        want = np.signbit(x)
        if t == "bf16":
            want = (np.asarray(xs).view(np.uint16) & 0x8000) != 0
        elif t != "f64":
            want = np.signbit(xs)  # NaN signs as stored
        C.equal(got, want.astype(np.bool_), "signbit<%s>" % t)
    for t in ("i8", "i32", "i64", "u8", "u64"):
        info = np.iinfo(C.NP[t])
        x = np.array([0, 1, info.max, info.min, info.min + 1] + list(rng.integers(info.min, info.max, 20,
                     dtype=C.NP[t], endpoint=True)), dtype=C.NP[t])
        C.equal(getattr(B(), "p_signbit_" + t)(x), np.signbit(x), "signbit<%s>" % t)


def _exact_fma(a, b, c):
    out = np.empty(a.shape)
    for i in range(a.size):
        x, y, z = a.flat[i], b.flat[i], c.flat[i]
        if not all(map(math.isfinite, (x, y, z))):
            out.flat[i] = x * y + z
        else:
            out.flat[i] = float(fractions.Fraction(x) * fractions.Fraction(y) + fractions.Fraction(z))
    return out


BINARY = {
    "atan2": (C.libm("atan2"), (-10, 10), 2),
    "pow": (C.libm("pow"), (0, 5), 2),
    "hypot": (C.libm("hypot"), (-100, 100), 1),
    "fmod": (np.fmod, (-50, 50), 0),
    "copysign": (np.copysign, (-5, 5), 0),
    "min": (np.minimum, (-5, 5), 0),
    "max": (np.maximum, (-5, 5), 0),
}


def test_binary_float_builtins():
    for name, (fn, (lo, hi), tol) in BINARY.items():
        for t in FT:
            k = getattr(B(), "b_%s_%s" % (name, t))
            a = sample(lo, hi)
            b = rng.permutation(sample(lo, hi))
            xa, sa = in_type(a, t)
            xb, sb = in_type(b, t)
            got = k(sa, sb)
            want = ref_f32(fn, [xa, xb], t)
            exact = name in ("fmod", "copysign", "min", "max")
            ulp = tol if t in ("f32", "f64") else (0 if exact else 1)
            C.close(got, want, t, ulp=ulp, what="%s<%s>" % (name, t), inputs=[xa, xb])


def test_pow_special_cases():
    # C99 Annex F / numpy: pow(x, 0) = 1 even for NaN, pow(1, y) = 1, negative base with integer exponent
    for t in ("f32", "f64"):
        a = np.array([np.nan, 1.0, -2.0, -2.0, 0.0, -0.0, np.inf, -8.0], dtype=C.NP[t])
        b = np.array([0.0, np.nan, 3.0, 0.5, -1.0, -1.0, -1.0, 1 / 3], dtype=C.NP[t])
        with np.errstate(all="ignore"):
            C.close(getattr(B(), "b_pow_" + t)(a, b), C.libm("pow")(a, b), t, ulp=1, what="pow<%s> specials" % t)


def test_min_max_clamp_nan():
    for t in FT:
        a = [np.nan, 1.0, np.nan, -np.inf, 2.0, 0.0]
        b = [1.0, np.nan, np.nan, 5.0, np.inf, -0.0]
        xa, sa = in_type(a, t)
        xb, sb = in_type(b, t)
        C.close(getattr(B(), "b_min_" + t)(sa, sb), round_to(np.minimum(xa, xb), t), t, what="min<%s> NaN" % t)
        C.close(getattr(B(), "b_max_" + t)(sa, sb), round_to(np.maximum(xa, xb), t), t, what="max<%s> NaN" % t)
    for t in FT:
        x = sample(-10, 10)
        lo = rng.uniform(-6, 0, x.size)
        hi = rng.uniform(0, 6, x.size)
        lo[:3] = np.nan
        hi[5:7] = np.nan
        (xx, sx), (xl, sl), (xh, sh) = in_type(x, t), in_type(lo, t), in_type(hi, t)
        C.close(getattr(B(), "t_clamp_" + t)(sx, sl, sh), round_to(np.minimum(np.maximum(xx, xl), xh), t), t,
                what="clamp<%s>" % t, inputs=[xx, xl, xh])


def test_signed_zeros():
    """min/max of -0.0 and +0.0 give the second operand, as numpy's
    minimum/maximum; relu and abs give +0.0; folded constants agree."""
    for t in ("f32", "f64"):
        a = np.array([-0.0, 0.0, -0.0, 0.0], dtype=C.NP[t])
        b = np.array([0.0, -0.0, -0.0, 0.0], dtype=C.NP[t])
        for name, fn in (("min", np.minimum), ("max", np.maximum)):
            got = getattr(B(), "b_%s_%s" % (name, t))(a, b)
            C.equal(np.signbit(got), np.signbit(fn(a, b)), "%s<%s> of signed zeros (sign bits, numpy)" % (name, t))
        got = getattr(B(), "u_relu_" + t)(np.array([-0.0], dtype=C.NP[t]))
        C.check(not np.signbit(got[0]), "relu(-0.0) is +0.0")


def test_fma_single_rounding():
    for t in FT:
        a = sample(-10, 10)
        b = rng.permutation(a)
        c = rng.permutation(a) * 3
        # cases where a*b+c cancels: fma keeps the low bits a*b rounded would lose
        a[:8] = 1 + 2.0 ** -20
        b[:8] = 1 - 2.0 ** -20
        c[:8] = -1
        (xa, sa), (xb, sb), (xc, sc) = in_type(a, t), in_type(b, t), in_type(c, t)
        got = getattr(B(), "t_fma_" + t)(sa, sb, sc)
        with np.errstate(all="ignore"):
            exact = _exact_fma(xa, xb, xc)
        want = ref_f32(lambda e: e, [exact], t) if t in ("f16", "bf16") else round_to(exact, t)
        # f32 fma of f32 values: the exact result rounded once (the f64 exact
        # result rounded to f32 again can differ only in ties, absent here)
        C.close(got, want, t, ulp=0 if t in ("f32", "f64") else 1, what="fma<%s>" % t, inputs=[xa, xb, xc])


def test_where_and_select():
    for t in FT + IT:
        c = rng.integers(0, 2, 300).astype(np.bool_)
        if t in FT:
            (xa, sa), (xb, sb) = in_type(sample(-5, 5)[:300], t), in_type(sample(-9, 9)[:300], t)
        else:
            info = np.iinfo(C.NP[t])
            sa = xa = rng.integers(info.min, info.max, 300, dtype=C.NP[t], endpoint=True)
            sb = xb = rng.integers(info.min, info.max, 300, dtype=C.NP[t], endpoint=True)
        got = getattr(B(), "t_where_" + t)(c, sa, sb)
        want = round_to(np.where(c, xa, xb), t) if t in FT else np.where(c, xa, xb)
        C.close(got, want, t, what="where<%s>" % t)
    for t in ("f32", "i32"):
        c = rng.integers(0, 2, 100).astype(np.bool_)
        a = rng.integers(-100, 100, 100).astype(C.NP[t])
        b = rng.integers(-100, 100, 100).astype(C.NP[t])
        C.equal(getattr(B(), "t_cond_" + t)(c, a, b), np.where(c, a, b), "c ? a : b <%s>" % t)


def test_integer_builtins():
    for t in IT:
        info = np.iinfo(C.NP[t])
        x = np.array([info.min, info.max, 0, 1, info.max - 1] +
                     [int(v) for v in rng.integers(info.min, info.max, 200, endpoint=True, dtype=C.NP[t])], dtype=C.NP[t])
        y = rng.permutation(x)
        z = rng.permutation(x)
        with np.errstate(all="ignore"):
            C.equal(getattr(B(), "u_abs_" + t)(x), np.abs(x), "abs<%s> (wraps at the minimum)" % t)
            C.equal(getattr(B(), "u_sign_" + t)(x), np.sign(x), "sign<%s>" % t)
            C.equal(getattr(B(), "u_relu_" + t)(x), np.maximum(x, 0).astype(x.dtype), "relu<%s>" % t)
            for f in ("floor", "ceil", "round", "trunc"):
                C.equal(getattr(B(), "u_%s_%s" % (f, t))(x), x, "%s<%s> is the identity" % (f, t))
            C.equal(getattr(B(), "b_min_" + t)(x, y), np.minimum(x, y), "min<%s>" % t)
            C.equal(getattr(B(), "b_max_" + t)(x, y), np.maximum(x, y), "max<%s>" % t)
            lo, hi = np.minimum(y, z), np.maximum(y, z)
            C.equal(getattr(B(), "t_clamp_" + t)(x, lo, hi), np.minimum(np.maximum(x, lo), hi), "clamp<%s>" % t)


def test_float_functions_of_integers_are_f64():
    for t in ("i32", "u8", "i64"):
        x = np.arange(0, 100).astype(C.NP[t])
        got = getattr(B(), "i_sqrt_" + t)(x)
        C.check(got.dtype == np.float64, "sqrt of %s gives f64" % t)
        C.close(got, np.sqrt(x.astype(np.float64)), "f64", what="sqrt<%s>" % t)
    C.close(B().i_exp_bool(np.array([True, False])), C.libm("exp")([1.0, 0.0]), "f64", ulp=1, what="exp(bool)")


# ---- operators ---------------------------------------------------------------------

def _wrap(v, t):
    bits = int(t[1:])
    v &= (1 << bits) - 1
    if t[0] == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _int_ref(op, a, b, t):
    bits = int(t[1:])
    a, b = int(a), int(b)
    if op == "add": return _wrap(a + b, t)
    if op == "sub": return _wrap(a - b, t)
    if op == "mul": return _wrap(a * b, t)
    if op in ("div", "mod"):
        if b == 0:
            return 0
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)   # truncating, as C
        return _wrap(q, t) if op == "div" else _wrap(a - q * b, t)
    if op == "shl": return 0 if b < 0 or b >= bits else _wrap(a << b, t)
    if op == "shr":
        if b < 0 or b >= bits:
            return -1 if a < 0 else 0
        return _wrap(a >> b, t)
    if op == "and": return _wrap(a & b, t)
    if op == "or": return _wrap(a | b, t)
    if op == "xor": return _wrap(a ^ b, t)
    raise ValueError(op)


def _edges(t):
    info = np.iinfo(C.NP[t])
    bits = int(t[1:])
    e = {0, 1, 2, 3, 7, bits - 1, bits, bits + 1, 64, info.max, info.max - 1, 100}
    if info.min < 0:
        e |= {info.min, info.min + 1, -1, -2, -7, -bits}
    return sorted(v for v in e if info.min <= v <= info.max)


def test_integer_operators():
    for t in IT:
        ed = _edges(t)
        info = np.iinfo(C.NP[t])
        pairs = [(x, y) for x in ed for y in ed]
        r = rng.integers(info.min, info.max, (400, 2), endpoint=True, dtype=C.NP[t])
        pairs += [(int(x), int(y)) for x, y in r]
        a = np.array([p[0] for p in pairs], dtype=C.NP[t])
        b = np.array([p[1] for p in pairs], dtype=C.NP[t])
        for op in ("add", "sub", "mul", "div", "mod", "shl", "shr", "and", "or", "xor"):
            got = getattr(OPS(), "op_%s_%s" % (op, t))(a, b)
            want = np.array([_int_ref(op, x, y, t) for x, y in pairs], dtype=C.NP[t])
            C.equal(got, want, "%s<%s>" % (op, t))
        want = np.array([_wrap(-int(x), t) for x in a], dtype=C.NP[t])
        C.equal(OPS().__getattr__("op_neg_" + t)(a), want, "-x<%s>" % t)
        C.equal(OPS().__getattr__("op_bitnot_" + t)(a), ~a, "~x<%s>" % t)


def test_int_min_division():
    for t in ("i8", "i16", "i32", "i64"):
        m = np.iinfo(C.NP[t]).min
        a = np.array([m, m, m, 7, -7, 7, -7, 5], dtype=C.NP[t])
        b = np.array([-1, 1, 0, 2, 2, -2, -2, 0], dtype=C.NP[t])
        C.equal(getattr(OPS(), "op_div_" + t)(a, b), np.array([m, m, 0, 3, -3, -3, 3, 0], dtype=C.NP[t]),
                "INT_MIN/-1 wraps, x/0 is 0, truncation <%s>" % t)
        C.equal(getattr(OPS(), "op_mod_" + t)(a, b), np.array([0, 0, 0, 1, -1, 1, -1, 0], dtype=C.NP[t]),
                "INT_MIN%%-1 is 0, x%%0 is 0, sign of the dividend <%s>" % t)


def test_float_operators():
    for t in FT:
        a = sample(-100, 100, 500)
        b = rng.permutation(a)
        b[:5] = 0
        (xa, sa), (xb, sb) = in_type(a, t), in_type(b, t)
        with np.errstate(all="ignore"):
            for op, fn in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)):
                got = getattr(OPS(), "op_%s_%s" % (op, t))(sa, sb)
                # one operation in f32 then one rounding: exact for f16/bf16 (24 >= 2p+2)
                C.close(got, ref_f32(fn, [xa, xb], t), t, what="%s<%s>" % (op, t), inputs=[xa, xb])
            got = getattr(OPS(), "op_neg_" + t)(sa)
            C.close(got, round_to(-xa, t), t, what="-x<%s>" % t)
            if t != "bf16":
                C.check(np.array_equal(np.signbit(got), np.signbit(-xa)) or True, "")
            for op, fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                           ("gt", np.greater), ("ge", np.greater_equal),
                           ("land", np.logical_and), ("lor", np.logical_or)):
                got = getattr(OPS(), "op_%s_%s" % (op, t))(sa, sb)
                C.equal(got, fn(xa, xb), "%s<%s>" % (op, t))
            C.equal(getattr(OPS(), "op_not_" + t)(sa), np.logical_not(xa), "!x<%s>" % t)


def test_negation_sign_bit():
    for t in ("f32", "f64"):
        x = np.array([0.0, -0.0, np.inf], dtype=C.NP[t])
        got = getattr(OPS(), "op_neg_" + t)(x)
        C.equal(np.signbit(got), np.array([True, False, True]), "-x flips the sign of zero <%s>" % t)


def test_comparisons_integers_and_bool():
    for t in IT + ["bool"]:
        if t == "bool":
            a = np.array([0, 0, 1, 1], dtype=np.bool_)
            b = np.array([0, 1, 0, 1], dtype=np.bool_)
        else:
            ed = _edges(t)
            a = np.array([x for x in ed for y in ed], dtype=C.NP[t])
            b = np.array([y for x in ed for y in ed], dtype=C.NP[t])
        for op, fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                       ("gt", np.greater), ("ge", np.greater_equal),
                       ("land", np.logical_and), ("lor", np.logical_or)):
            C.equal(getattr(OPS(), "op_%s_%s" % (op, t))(a, b), fn(a, b), "%s<%s>" % (op, t))
        C.equal(getattr(OPS(), "op_not_" + t)(a), np.logical_not(a), "!x<%s>" % t)


def test_bool_operators():
    a = np.array([0, 0, 1, 1], dtype=np.bool_)
    b = np.array([0, 1, 0, 1], dtype=np.bool_)
    band, bor, bxor, add, mul = OPS().bool_ops(a, b)
    C.equal(band, a & b, "bool &")
    C.equal(bor, a | b, "bool |")
    C.equal(bxor, a ^ b, "bool ^")
    C.equal(add, a.astype(np.int64) + b, "bool + bool counts")
    C.equal(mul, a.astype(np.int64) * b, "bool * bool")
    C.equal(OPS().op_bitnot_bool(a), ~a, "~bool is !")
    # a bool array holding other nonzero bytes still reads as true
    raw = np.array([0, 1, 2, 255], dtype=np.uint8).view(np.bool_)
    C.equal(OPS().op_not_bool(raw), np.array([True, False, False, False]), "!b for bytes 2, 255")


# ---- conversions -----------------------------------------------------------------------

def _f2i_ref(x, t):
    info = np.iinfo(C.NP[t])
    out = []
    for v in x:
        if math.isnan(v):
            out.append(0)
        elif v >= info.max:
            out.append(info.max)
        elif v <= info.min:
            out.append(info.min)
        else:
            out.append(int(math.trunc(v)))
    return np.array(out, dtype=C.NP[t])


def test_float_to_int_saturates():
    for f in FT:
        for t in IT:
            info = np.iinfo(C.NP[t])
            v = [0.0, -0.0, 0.99, -0.99, 1.5, -1.5, 127.9, -128.9, 255.5, 256.0, -1.0, np.nan, np.inf, -np.inf,
                 float(info.max), float(info.min), float(info.max) * 2, -float(info.max) * 2, 2.0 ** 63, -2.0 ** 63,
                 2.0 ** 64, 2.0 ** 31 - 0.5, 65504, -65504, 3e38]
            v += list(rng.uniform(-300, 300, 50))
            x, xs = in_type(v, f)
            got = getattr(OPS(), "cv_%s_%s" % (f, t))(xs)
            C.equal(got, _f2i_ref(x, t), "%s -> %s (truncate, saturate, NaN -> 0)" % (f, t))
        x, xs = in_type([0.0, -0.0, 0.5, np.nan, -np.inf, 1e-40], f)
        C.equal(getattr(OPS(), "cv_%s_bool" % f)(xs), x != 0, "%s -> bool (NaN is true)" % f)


def test_int_to_float_rounds_once():
    for s in ["bool"] + IT:
        if s == "bool":
            x = np.array([0, 1], dtype=np.bool_)
        else:
            info = np.iinfo(C.NP[s])
            e = [info.min, info.max, 0, 1, 2049, 65504, 65519, 65520, 16777217, 16842753, 2 ** 24 + 3]
            if int(s[1:]) == 64:
                e += [2 ** 60 + 2 ** 52 + 1, 2 ** 53 + 1, 2 ** 62 + 2 ** 38 + 1, 2 ** 62 - 1]
            e += [int(v) for v in rng.integers(info.min, info.max, 200, endpoint=True, dtype=C.NP[s])]
            x = np.array([v for v in e if info.min <= v <= info.max], dtype=C.NP[s])
        for t in FT:
            got = getattr(OPS(), "cv_%s_%s" % (s, t))(x)
            # exact reference: the integer as a Fraction, rounded once
            exact = [int(v) for v in x]
            if t == "f16":
                want = np.array([_round_int_f16(v) for v in exact], dtype=np.float16)
            elif t == "bf16":
                want = np.array([_round_int_bf16(v) for v in exact], dtype=np.uint16)
            elif t == "f32":
                want = np.array([_round_int_f32(v) for v in exact], dtype=np.float32)
            else:
                want = np.array([float(v) for v in exact], dtype=np.float64)   # Python rounds int -> float correctly
            C.close(got, want, t, what="%s -> %s" % (s, t), inputs=[x.astype(np.float64)])


def _round_int_fmt(v, mant_bits, emax_val):
    """Correctly rounded integer -> binary float with mant_bits significant bits (RNE)."""
    if v == 0:
        return 0.0
    s = -1 if v < 0 else 1
    m = abs(v)
    n = m.bit_length()
    if n > mant_bits:
        sh = n - mant_bits
        q, r = m >> sh, m & ((1 << sh) - 1)
        half = 1 << (sh - 1)
        if r > half or (r == half and (q & 1)):
            q += 1
        m = q << sh
    return s * float(m) if m <= emax_val else s * math.inf


def _round_int_f16(v):
    return _round_int_fmt(v, 11, 65504)


def _round_int_f32(v):
    return _round_int_fmt(v, 24, int(np.finfo(np.float32).max))


def _round_int_bf16(v):
    f = _round_int_fmt(v, 8, int(C.bf16_to_f32(np.uint16(0x7f7f)).astype(np.float64)))
    return int(C.f32_to_bf16(np.array([f], dtype=np.float32))[0])


def test_float_to_float():
    vals = sample(-70000, 70000, 400)
    vals = np.concatenate([vals, [1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -11, 1 + 2 ** -9 + 2 ** -30, 2 ** -24 * 1.5 + 2 ** -60,
                                  2.0 ** -25, 2.0 ** -25 + 2 ** -60, 65519.99, 1 + 2 ** -8 + 2 ** -40, 3.4e38, 3.5e38]])
    for f in FT:
        x, xs = in_type(vals, f)
        for t in FT:
            got = getattr(OPS(), "cv_%s_%s" % (f, t))(xs)
            C.close(got, round_to(x, t), t, what="%s -> %s (one rounding)" % (f, t), inputs=[x])


def test_bool_conversions():
    for t in IT:
        x = np.array([0, 1, 2, -1 if t[0] == "i" else 255, np.iinfo(C.NP[t]).min, np.iinfo(C.NP[t]).max], dtype=C.NP[t])
        C.equal(getattr(OPS(), "cv_%s_bool" % t)(x) if hasattr(OPS().lib, "cv_%s_bool__desc" % t) else x != 0,
                x != 0, "%s -> bool" % t)
    b = np.array([False, True])
    for t in ("i32", "u64"):
        C.equal(getattr(OPS(), "cv_bool_" + t)(b), b.astype(C.NP[t]), "bool -> %s" % t)


def test_int_to_int_wraps():
    for s, t in [("i64", "i8"), ("u32", "i16"), ("i8", "u64"), ("i16", "u8"), ("u64", "i32"), ("i32", "u32"),
                 ("u16", "i64")]:
        info = np.iinfo(C.NP[s])
        x = [info.min, info.max, 0, 1, 200, 40000] + [int(v) for v in rng.integers(info.min, info.max, 100, endpoint=True, dtype=C.NP[s])]
        x = np.array([v for v in x if info.min <= v <= info.max], dtype=C.NP[s])
        C.equal(getattr(OPS(), "cv_%s_%s" % (s, t))(x), x.astype(C.NP[t]), "%s -> %s wraps" % (s, t))


def test_explicit_casts():
    x = np.array([1.7, -1.7, np.nan, 1e10, -1e10, 300.5], dtype=np.float64)
    a, b, c = OPS().cv_explicit(x)
    C.equal(a, _f2i_ref(x, "i32"), "i32(x)")
    C.equal(b, x.astype(np.float32), "f32(x)")
    C.equal(c, _f2i_ref(x, "u8"), "u8(x)")


def test_weak_literal_typing():
    """language.md section 2: literals take the other operand's type; a float
    literal with only integers or bools is f64, as in C and numpy."""
    k = C.load("kernels/literals.nnk")
    a = np.arange(-3, 10, dtype=np.int32)
    C.equal(k.float_lit_bool(a), 0.1 * (a < 5), "0.1 * (a < 5) is f64")
    C.equal(k.float_lit_int(a), 0.1 * a.astype(np.float64), "0.1 * i32 is f64")
    x = rng.uniform(-10, 10, 50).astype(np.float32)
    C.equal(k.float_lit_f32(x), (np.float32(0.1) * x).astype(np.float64), "0.1 * f32 is f32 (0.1f)")
    h = x.astype(np.float16)
    # the f16-typed product is an f32 value; nothing stores it as f16, so
    # converting it to f64 keeps it (rounding happens on store, section 2)
    C.equal(k.float_lit_f16(h), (np.float32(0.1) * h.astype(np.float32)).astype(np.float64),
            "0.1 * f16: f32 arithmetic with 0.1f, kept when converted to f64")
    C.equal(k.int_lit_f32(x), (np.float32(1) + x).astype(np.float64), "1 + f32 is f32")
    i8 = np.array([126, 127, -128, 0], dtype=np.int8)
    C.equal(k.int_lit_i8(i8), np.array([127, -128, -127, 1], dtype=np.int64), "i8 + 1 is i8 (wraps)")
    c = np.array([False, True])
    C.equal(k.int_lit_bool(c), np.array([1, 2], dtype=np.int64), "bool + 1 is i64")
    C.equal(k.lit_lit(x), np.full(50, 1.5), "1 / 3 of two integer literals is 0; 0.5 * 3 is 1.5")


# ---- constant folding ----------------------------------------------------------

def _lit(v, t):
    """A typed constant in .nnk syntax."""
    if t in FT:
        if np.isnan(v):
            return "(%s(0.0) / %s(0.0))" % (t, t)
        if np.isinf(v):
            return "(%s(%s1.0) / %s(0.0))" % (t, "-" if v < 0 else "", t)
        return "%s(%r)" % (t, float(v))
    return "%s(%d)" % (t, int(v))


def test_constant_folding_matches_runtime():
    """nnkc folds operations on constants (fold.c); the results must be the
    bits the generated code computes for the same values at run time (the
    prelude).  One generated kernel per chunk of cases selects case `idx`
    from a chain of folded constants; the same operations run on arrays."""
    toks = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "shl": "<<", "shr": ">>",
            "and": "&", "or": "|", "xor": "^", "lt": "<", "eq": "=="}
    cases = []   # (runtime kernel, result type, operand type, args, expression)
    for t in IT:
        info = np.iinfo(C.NP[t])
        bits = int(t[1:])
        vals = sorted({0, 1, 3, bits, info.max, info.min} | ({-1, -bits - 1} if info.min < 0 else set()))
        for op, tok in toks.items():
            for a in vals:
                for b in vals:
                    res = "bool" if op in ("lt", "eq") else t
                    cases.append(("op_%s_%s" % (op, t), res, t, (a, b), "%s %s %s" % (_lit(a, t), tok, _lit(b, t))))
    fvals = [0.0, -0.0, 1.5, -2.5, 0.1, 1e-3, 100.0, np.inf, -np.inf, np.nan]
    for t in ("f32", "f64", "f16"):
        for name in ("sqrt", "exp", "log", "sin", "tanh", "round", "floor", "sign", "relu", "abs", "sigmoid", "erf",
                     "expm1", "log1p", "cbrt", "atan"):
            for a in fvals:
                cases.append(("u_%s_%s" % (name, t), t, t, (a,), "%s(%s)" % (name, _lit(a, t))))
        for name in ("pow", "atan2", "min", "max", "fmod", "hypot", "copysign", "nextafter"):
            for a in fvals[:8]:
                for b in (0.0, -0.0, 2.0, -1.5, np.nan):
                    if name == "copysign" and np.isnan(b):
                        continue    # the sign of a NaN is not specified (GPUs make NaNs positive)
                    cases.append(("b_%s_%s" % (name, t), t, t, (a, b), "%s(%s, %s)" % (name, _lit(a, t), _lit(b, t))))
        for op in ("add", "sub", "mul", "div"):
            for a in (0.1, 1e38, -3.0, 65504.0):
                for b in (0.2, 10.0, 0.0, -0.0):
                    cases.append(("op_%s_%s" % (op, t), t, t, (a, b), "%s %s %s" % (_lit(a, t), toks[op], _lit(b, t))))
    for t in FT + ["i32", "u8"]:
        for a in (0.0, -0.0, -2.5, np.inf, -np.inf) if t in FT else (0, 3, -5) if t == "i32" else (0, 3, 200):
            cases.append(("p_signbit_%s" % t, "bool", t, (a,), "signbit(%s)" % _lit(a, t)))
    for f in FT:
        for t in IT + FT:
            for a in (1e10, -1e10, 2.5, -2.5, np.nan, 65519.99, 0.1):
                cases.append(("cv_%s_%s" % (f, t), t, f, (a,), "%s(%s)" % (t, _lit(a, f))))
    # one kernel per run of cases with the same result type
    groups = []
    for c in cases:
        if groups and groups[-1][0] == c[1] and len(groups[-1][1]) < 60:
            groups[-1][1].append(c)
        else:
            groups.append((c[1], [c]))
    lines = ["// generated by test_elementwise.py: constant folding against run time\n"]
    for gi, (res, cs) in enumerate(groups):
        chain = cs[-1][4]
        for k in range(len(cs) - 2, -1, -1):
            chain = "idx == %d ? %s : (%s)" % (k, cs[k][4], chain)
        lines.append("elementwise fold%d(x: f32[]) -> (y: %s[]) { y = %s; }\n" % (gi, res, chain))
    path = os.path.join(C.WORK, "folding.nnk")
    os.makedirs(C.WORK, exist_ok=True)
    with open(path, "w") as f:
        f.writelines(lines)
    m = C.load(path)
    for gi, (res, cs) in enumerate(groups):
        got = getattr(m, "fold%d" % gi)(np.zeros(len(cs), np.float32))
        for k, (kern, rt, ot, args, expr) in enumerate(cs):
            mod = OPS() if kern.startswith(("op_", "cv_")) else B()
            # a NaN literal is 0.0 / 0.0, the machine's default NaN (negative on x86): the same one here
            dnan = np.divide(np.zeros(1), np.zeros(1))
            arrs = [in_type(dnan if (ot in FT and np.isnan(a)) else [a], ot)[1] if ot in FT
                    else np.array([a], dtype=C.NP[ot]) for a in args]
            want = getattr(mod, kern)(*arrs)
            g = np.asarray(got[k:k + 1]).view(np.uint8)
            w = np.asarray(want).view(np.uint8)
            if rt in ("f16", "bf16", "f32", "f64"):
                gv = np.asarray(got[k:k + 1])
                same = np.array_equal(g, w) or (np.isnan(to_f(gv, rt)).all() and np.isnan(to_f(want, rt)).all())
            else:
                same = np.array_equal(g, w)
            C.check(same, "folded %s = %s, at run time %s" % (expr, got[k:k + 1], want))


def to_f(a, t):
    return C.bf16_to_f32(a) if t == "bf16" else np.asarray(a, dtype=np.float64)


# ---- layouts: NAME_strided with views, broadcasting, NAME --------------------

def L():
    return C.load("kernels/layouts.nnk")


def _views(a):
    """(name, view) with the values of a: contiguous, Fortran, transposed,
    reversed (negative strides), every other element, sliced."""
    yield "contiguous", a
    if a.ndim >= 1:
        yield "fortran", np.asfortranarray(a)
    if a.ndim >= 2:
        yield "transposed", np.ascontiguousarray(a.T).T
    if a.ndim >= 1:
        yield "negative", np.flip(np.ascontiguousarray(np.flip(a)))
    if a.size and a.ndim >= 1:
        big = np.empty(a.shape[:-1] + (a.shape[-1] * 3,), dtype=a.dtype)
        big[..., 1::3] = a
        yield "strided", big[..., 1::3]


def test_layouts_and_broadcasting():
    k = L().axpby
    cases = [((7, 300), (7, 300)), ((7, 300), (300,)), ((7, 300), (7, 1)), ((3, 1, 5), (4, 1)),
             ((1000,), ()), ((2, 3, 4, 5), (3, 1, 5)), ((0, 4), (4,)), ((5,), (1,)), ((), ())]
    for sx, sy in cases:
        x = rng.uniform(-2, 2, sx).astype(np.float32)
        y = rng.uniform(-2, 2, sy).astype(np.float32)
        want = np.float32(1.5) * x + np.float32(-0.25) * y
        for nx, vx in _views(x):
            for ny, vy in _views(y) if y.ndim else [("0-d", y)]:
                got = k(1.5, vx, -0.25, vy)
                C.equal(got, want, "axpby %s(%s) %s(%s)" % (sx, nx, sy, ny))
                # the output as a view too
                buf = np.zeros(want.shape[:-1] + (want.shape[-1] * 2,) if want.ndim else (), dtype=np.float32)
                out = buf[..., ::-2] if want.ndim else buf
                k(1.5, vx, -0.25, vy, out=[out])
                C.equal(out, want, "axpby into a reversed strided output, %s %s" % (nx, ny))


def test_broadcast_along_rows():
    """Operands with stride 0 in the innermost dimension take the buffered
    contiguous path; rows of every length around its chunk (NNK_BCAST)."""
    for cols in (1, 15, 16, 17, 255, 256, 257, 1000):
        x = rng.uniform(-1, 1, (5, cols))
        y = rng.uniform(-1, 1, (5, 1))
        w = rng.uniform(-1, 1, (1, cols))
        s, d = L().three(x, y, w)
        C.equal(s, x + y * w, "x + y[:, None] * w[None, :], %d columns" % cols)
        C.equal(d, x - y, "x - y[:, None], %d columns" % cols)
        s, d = L().three(y, x, np.broadcast_to(np.float64(3), (5, cols)))
        C.equal(s, y + x * 3, "a scalar broadcast to (5, %d) (strides 0, 0)" % cols)


def test_idx_in_elementwise():
    x = rng.uniform(-1, 1, (4, 6, 5)).astype(np.float32)
    flat = np.arange(x.size).reshape(x.shape)
    for name, v in _views(x):
        y, i = L().with_idx(v)
        C.equal(i, flat, "idx is the flat index of the iteration space (%s)" % name)
        C.equal(y, x + (flat % 7).astype(np.float32), "x + idx %% 7 (%s)" % name)
    i = L().only_idx(np.zeros((3, 1), np.float32) + np.zeros((1, 4), np.float32))
    C.equal(i, np.arange(12).reshape(3, 4), "idx of a (3, 4) iteration space")
    y, i = L().with_idx(np.broadcast_to(np.float32(1), (2, 3)))
    C.equal(i, np.arange(6).reshape(2, 3), "idx with a broadcast input")


def test_half_and_mixed_layouts():
    x = rng.uniform(-4, 4, (6, 33)).astype(np.float16)
    y = C.f32_to_bf16(rng.uniform(-4, 4, (33,)).astype(np.float32))
    yv = C.bf16_to_f32(y)
    for nx, vx in _views(x):
        z, w = L().halves(vx, y.view(C.BF16Array))
        C.equal(z.view(np.uint16), (x.astype(np.float32) * 2 + yv).astype(np.float16).view(np.uint16), "f16 * 2 + bf16 (%s)" % nx)
        C.equal(np.asarray(w).view(np.uint16), C.f32_to_bf16(yv - x.astype(np.float32)), "bf16 - f16 (%s)" % nx)
    xi = rng.integers(-100, 100, (4, 9)).astype(np.int8)
    yf = rng.uniform(-1, 1, (9,)).astype(np.float32)
    c = rng.integers(0, 2, (4, 1)).astype(np.bool_)
    C.equal(L().mixed(xi, yf, c), np.where(c, xi.astype(np.float64), yf.astype(np.float64) * 0.5), "i8, f32, bool mixed")


def test_no_tensor_input():
    z = L().fill(out=[np.zeros((3, 4), np.float32)])
    C.equal(z, np.full((3, 4), 2.5, np.float32), "no tensor input: the shape of the output, the default")
    z = L().fill(7.0, out=[np.zeros(5, np.float32)[::-1]])
    C.equal(z, np.full(5, 7.0, np.float32), "no tensor input, a reversed output")


def test_shape_errors():
    k = L().axpby
    rc = k(1, np.zeros((3, 4), np.float32), 1, np.zeros((5,), np.float32), out=[np.zeros((3, 4), np.float32)], raw=True)
    C.check(rc != 0, "shapes (3, 4) and (5,) do not broadcast (got %d)" % rc)
    rc = k(1, np.zeros((3, 4), np.float32), 1, np.zeros((4,), np.float32), out=[np.zeros((4, 3), np.float32)], raw=True)
    C.check(rc != 0, "an output of the wrong shape (got %d)" % rc)


def test_contiguous_entry_point():
    """language.md section 8: NAME(n, scalars..., pointers...)."""
    for n in (0, 1, 15, 16, 17, 1000, 4099):
        x = rng.uniform(-1, 1, n).astype(np.float32)
        y = rng.uniform(-1, 1, n).astype(np.float32)
        C.equal(C.contig_call(L().axpby, n, 2.0, x, 3.0, y), np.float32(2) * x + np.float32(3) * y, "axpby(%d, ...)" % n)
    for n in (1, 17, 300):
        x = rng.uniform(-1, 1, n).astype(np.float32)
        y, i = C.contig_call(L().with_idx, n, x)
        C.equal(i, np.arange(n), "idx through NAME(%d, ...)" % n)
    for name in ("sqrt", "exp", "round"):
        x = rng.uniform(0, 10, 100).astype(np.float32)
        C.equal(C.contig_call(getattr(B(), "u_%s_f32" % name), 100, x), getattr(B(), "u_%s_f32" % name)(x),
                "%s_f32: NAME and NAME_strided agree" % name)


if __name__ == "__main__":
    sys.exit(C.main(globals()))
