"""The f32 vector math of the C back end (templates/c/vmath.h: exp, expm1,
log, log1p, sin, cos, tanh, sigmoid), which f16 and bf16 use too.

Each function runs through a generated kernel over a dense sweep of float
bit patterns (every STRIDE-th float, both signs, all exponents: about 2.2
million values per function) plus the special values, and is compared
with the double-precision result (glibc's scalar double functions, within
1 ulp of double; not numpy's, whose SIMD code differs by machine) in units in the last place of the float result:
|got - exact| / ulp(exact), where ulp(v) is the spacing of floats in v's
binade (2^-149 below the normal range).  A correctly rounded function is
within 0.5.  The bounds this test enforces (BOUND) are the ones
docs/c-backend.md states, with the maxima measured over every 13th float
(330 million a function).

Special values are exact: NaN gives NaN, +-Inf, overflow to +Inf,
underflow to 0 (through the subnormals), the sign of zero where the
function keeps it (exp(-0) = 1, sin(-0) = -0, ...).  sin and cos beyond
their fast range (|x| > 2^19), and Inf, take the exact path; the
contiguous loop's flag-and-recompute gives the bits of the strided loop
for any mix of arguments, also in place."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

STRIDE = int(os.environ.get("NNK_VMATH_STRIDE", "1931"))  # 2^32 / 1931: 2.2 million floats

BOUND = {"exp": 1.5, "expm1": 2.0, "log": 1.0, "log1p": 1.5, "sin": 1.0, "cos": 1.0, "tanh": 2.0, "sigmoid": 2.5}


def V():
    return C.load("kernels/vmath.nnk")


def sweep():
    bits = np.arange(0, 1 << 32, STRIDE, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    return x[np.isfinite(x)]


def ref(name, x):
    """In double precision with glibc's scalar functions (C.libm): the same
    on every machine, unlike numpy's SIMD float64 functions."""
    d = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            e = C.libm("exp")(-np.abs(d))
            return np.where(d < 0, e / (1 + e), 1 / (1 + e))
        return C.libm(name)(d)


def ulp_err(got, exact):
    """|got - exact| in units of the float spacing at exact (inf where they
    disagree on NaN, infinity or overflow)."""
    g = got.astype(np.float64)
    with np.errstate(all="ignore"):
        m, e = np.frexp(np.abs(exact))
        ulp = np.ldexp(1.0, np.maximum(e - 24, -149))
        err = np.abs(g - exact) / ulp
        big = np.abs(exact) >= np.float64(np.finfo(np.float32).max) * (1 + 2.0 ** -25)   # rounds to inf
        err = np.where(big, np.where(np.isinf(g) & (np.sign(g) == np.sign(exact)), 0, np.inf), err)
        err = np.where(np.isnan(exact) | np.isnan(g), np.where(np.isnan(exact) & np.isnan(g), 0, np.inf), err)
    return err


def check_fn(name):
    x = sweep()
    k = getattr(V(), "v_" + name)
    got = k(x)
    err = ulp_err(got, ref(name, x))
    worst = int(np.argmax(err))
    C.check(err[worst] <= BOUND[name], "%s: %.3f ulp at x = %r (%s), got %r, exact %r; bound %g" % (
        name, err[worst], float(x[worst]), float(x[worst]).hex(), float(got[worst]), float(ref(name, x[worst:worst + 1])[0]),
        BOUND[name]))
    print("  %s: max %.3f ulp (bound %g) over %d floats, at %r" % (name, err[worst], BOUND[name], x.size,
                                                                  float(x[worst])))
    # the strided loop (exact forms, no fix-up) gives the same bits
    xs = np.repeat(x[:200000], 2)[::2]
    C.equal(k(xs).view(np.uint32), got[:200000].view(np.uint32), "%s: strided = contiguous" % name)


def test_exp():
    check_fn("exp")


def test_expm1():
    check_fn("expm1")


def test_log():
    check_fn("log")


def test_log1p():
    check_fn("log1p")


def test_sin():
    check_fn("sin")


def test_cos():
    check_fn("cos")


def test_tanh():
    check_fn("tanh")


def test_sigmoid():
    check_fn("sigmoid")


F32MAX = float(np.finfo(np.float32).max)
TINY = 2.0 ** -149
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 2.0 ** -126, -(2.0 ** -126), 1.0, -1.0, 0.5, -0.5,
           F32MAX, -F32MAX, 1e-30, -1e-30, 88.72283, 88.72284, 88.8, 89.0, 100.0, -87.33654, -103.97, -103.98,
           -104.0, -200.0, 9.0, 9.1, 9.2, 20.0, -20.0, -16.6, -17.4, -18.0, 2.0 ** 19, -(2.0 ** 19),
           float(np.nextafter(np.float32(2.0 ** 19), np.float32(np.inf))), 1e6, 1e10, 1e30, -1e30, 3.0e38,
           1.5707964, 3.1415927, 4.712389, 6.2831855, 105414350.0, 0.1, 0.55, -0.55, 0.5493, -0.2929, 0.41421357]


def test_special_values():
    """NaN, +-Inf, +-0, subnormals, the overflow and underflow thresholds,
    huge arguments of sin and cos: the correctly rounded value within the
    bound, infinities and NaN exactly, and the sign of zero."""
    x = np.array(SPECIAL, dtype=np.float32)
    for name in BOUND:
        got = getattr(V(), "v_" + name)(x)
        exact = ref(name, x)
        err = ulp_err(got, exact)
        for i in range(x.size):
            C.check(err[i] <= BOUND[name], "%s(%r) = %r, exact %r" % (name, float(x[i]), float(got[i]), float(exact[i])))
            if exact[i] == 0 and got[i] == 0:
                C.check(math.copysign(1, got[i]) == math.copysign(1, exact[i]),
                        "%s(%r) = %r: the sign of zero" % (name, float(x[i]), float(got[i])))
    # the exact ones
    v = V()
    e = v.v_exp(np.array([np.inf, -np.inf, 89.0, -104.0, np.nan, -0.0], np.float32))
    C.equal(e[:4], np.array([np.inf, 0, np.inf, 0], np.float32), "exp(+-inf), overflow, underflow")
    C.check(np.isnan(e[4]) and e[5] == 1, "exp(NaN) is NaN, exp(-0) is 1")
    lg = v.v_log(np.array([0.0, -0.0, -1.0, np.inf, np.nan, 1.0], np.float32))
    C.check(lg[0] == -np.inf and lg[1] == -np.inf and np.isnan(lg[2]) and lg[3] == np.inf and np.isnan(lg[4])
            and lg[5] == 0 and not math.copysign(1, lg[5]) < 0, "log(+-0) = -inf, log(-1) = NaN, log(inf), log(1) = +0")
    lp = v.v_log1p(np.array([-1.0, -2.0, np.inf, -0.0], np.float32))
    C.check(lp[0] == -np.inf and np.isnan(lp[1]) and lp[2] == np.inf and math.copysign(1, lp[3]) < 0,
            "log1p(-1) = -inf, log1p(-2) = NaN, log1p(inf) = inf, log1p(-0) = -0")
    em = v.v_expm1(np.array([-np.inf, np.inf, -0.0, -100.0], np.float32))
    C.check(em[0] == -1 and em[1] == np.inf and math.copysign(1, em[2]) < 0 and em[3] == -1,
            "expm1(-inf) = -1, expm1(inf) = inf, expm1(-0) = -0")
    s = v.v_sin(np.array([np.inf, -np.inf, np.nan, -0.0], np.float32))
    C.check(np.isnan(s[0]) and np.isnan(s[1]) and np.isnan(s[2]) and math.copysign(1, s[3]) < 0,
            "sin(+-inf) = NaN, sin(-0) = -0")
    t = v.v_tanh(np.array([np.inf, -np.inf, -0.0, 1e-30], np.float32))
    C.check(t[0] == 1 and t[1] == -1 and math.copysign(1, t[2]) < 0 and t[3] == np.float32(1e-30),
            "tanh(+-inf) = +-1, tanh(-0) = -0, tanh(tiny) = tiny")


def test_sin_cos_beyond_the_fast_range():
    """Arguments beyond 2^19 in a contiguous block: the block is computed
    again with the exact forms; the other elements of the block keep the
    bits of the fast form; in place too."""
    v = V()
    rng = np.random.default_rng(5)
    x = (rng.random(1000, dtype=np.float32) * 20 - 10)
    x[[3, 17, 18, 500, 999]] = [1e30, -3e8, np.inf, 2.0 ** 19 * 1.5, 7e5]
    a, b = v.v_sincos(x, 1.0)
    want = (ref("sin", x) + ref("cos", x)).astype(np.float32)
    finite = np.isfinite(x)
    C.check(np.all(np.abs(a[finite] - want[finite]) <= 4e-7 * (1 + np.abs(want[finite]))), "sin + cos with huge arguments")
    C.check(np.isnan(a[18]), "sin(inf) + cos(inf) is NaN")
    C.equal(b, x * np.float32(1.0), "the other output of the block")
    # the same values one at a time (strided) give the same bits
    a2, _ = v.v_sincos(np.repeat(x, 2)[::2], 1.0)
    C.equal(a2.view(np.uint32), a.view(np.uint32), "strided = contiguous with the fix-up")
    # in place: the output is the input
    y = x.copy()
    s_ref = v.v_sin(x)
    v.v_sin(y, out=[y])
    C.equal(y.view(np.uint32), s_ref.view(np.uint32), "sin in place with huge arguments")
    # in a reduction
    r = v.v_sumsin(x[finite])
    C.check(abs(float(r) - float(np.sum(ref("sin", x[finite])))) < 1e-3, "sum(sin(x)) with huge arguments")


def test_f16_storage():
    """f16 loads, f32 vector math, one rounding to f16 on store: within one
    f16 ulp of the exact value rounded to f16."""
    v = V()
    h = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    h = h[np.isfinite(h)]
    for name, k in (("sin", v.v_sin_h), ("exp", v.v_exp_h)):
        got = k(h)
        want = ref(name, h.astype(np.float32)).astype(np.float16)
        C.close(got, want, "f16", ulp=1, what="%s on f16 storage" % name)


def test_jit_isa_same_bits():
    """The code the JIT runs on this machine: the kernels built with
    -march=native (AVX-512 or AVX2 where the host has them: 16 or 8 lanes
    instead of SSE2's 4) give the bits of the portable build over the whole
    sweep, so the bounds above hold for the JIT's code too, and call no
    libmvec function."""
    nat = C.load_native("kernels/vmath.nnk")
    print("  host %s: %s" % (C.host_isa(), " ".join(C.NATIVE_CFLAGS)))
    C.check(C.vector_math_calls(nat.so) == [], "libmvec calls in %s: %s" % (nat.so, C.vector_math_calls(nat.so)))
    x = sweep()
    for name in BOUND:
        C.equal(getattr(nat, "v_" + name)(x).view(np.uint32), getattr(V(), "v_" + name)(x).view(np.uint32),
                "%s: -march=native = portable (bits)" % name)
    y = np.concatenate([x[:5000], np.array([1e30, -3e8, np.inf, 7e5], np.float32)])
    for k in ("v_sin_h", "v_exp_h"):
        h = y.astype(np.float16)
        C.equal(getattr(nat, k)(h).view(np.uint16), getattr(V(), k)(h).view(np.uint16), "%s: native = portable" % k)
    a, b = nat.v_sincos(y, 1.5)
    a2, b2 = V().v_sincos(y, 1.5)
    C.equal(a.view(np.uint32), a2.view(np.uint32), "v_sincos: native = portable")
    C.equal(nat.v_sumsin(y[:4096]).view(np.uint32), V().v_sumsin(y[:4096]).view(np.uint32), "v_sumsin: native = portable")


if __name__ == "__main__":
    sys.exit(C.main(globals()))
