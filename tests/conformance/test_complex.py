"""Complex conformance: c64 and c128 (language.md, "Complex numbers")
against references that are the same on every machine, with stated
tolerances:

  * + - * / == != and conj, real, imag, the constructor and conversions
    are bit-exact: the reference is numpy's formula written out here in
    float32/float64 array operations (each one IEEE-rounded; numpy's own
    complex loops may contract to FMA on some CPUs, so they are not the
    reference), NaNs equal;
  * functions (exp log sqrt sin cos tan sinh cosh tanh pow abs arg): within
    TOL (normwise: |got - want| <= TOL * eps * |want|, eps of the part
    type) of Python's cmath in double precision (C99 Annex G, scalar libm),
    rounded to the type; abs and arg, real results, within 4 ulp;
  * reductions: sum and mean within eps * (n + 16) * max|z| of math.fsum of
    the parts; prod within 8 * n * eps normwise of a sequential product in
    Fraction-free double (c64) or the same formula in long double order
    (c128: values of modulus near 1, so it is well conditioned).
The special values that are kept (exp of a real argument stays real,
sqrt's branch cut and infinite parts, division by zero) are checked bit
for bit against numpy's documented results.
"""
import cmath
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

CT = ["c64", "c128"]
NPT = {"c64": np.complex64, "c128": np.complex128}
PT = {"c64": np.float32, "c128": np.float64}
EPS = {"c64": 2.0 ** -24, "c128": 2.0 ** -53}
TOL = 32
rng = np.random.default_rng(20261201)


def K():
    return C.load("kernels/complex.nnk")


def cz(t, n=400, lo=-3.0, hi=3.0):
    z = rng.uniform(lo, hi, n) + 1j * rng.uniform(lo, hi, n)
    edge = [0, 1, -1, 1j, -1j, 0.5 - 2j, -0.0 + 0j, complex(0.0, -0.0), 1e-3 + 1e3j]
    return np.concatenate([z, np.array(edge)]).astype(NPT[t])


def parts(a):
    return np.real(a), np.imag(a)


def same_bits(got, want, what):
    """Part by part, bit for bit, any NaN equal to any NaN."""
    g = np.asarray(got).view(PT["c64"] if got.dtype == np.complex64 else PT["c128"])
    w = np.asarray(want).astype(got.dtype).view(g.dtype)
    u = np.uint32 if g.dtype == np.float32 else np.uint64
    bad = (g.view(u) != w.view(u)) & ~(np.isnan(g) & np.isnan(w))
    C.check(not bad.any(), "%s: %d parts differ, first at %s: got %s, want %s" % (
        what, int(bad.sum()), np.argwhere(bad)[:1].tolist(), g[bad][:3], w[bad][:3]))


def close_norm(got, want, t, tol, what):
    g, w = np.asarray(got).astype(np.complex128), np.asarray(want).astype(np.complex128)
    with np.errstate(all="ignore"):
        err = np.abs(g - w)
        bound = tol * EPS[t] * np.maximum(np.abs(w), np.finfo(PT[t]).tiny)
        ok = (err <= bound) | ((g == w) | (np.isnan(g) & np.isnan(w)))
    C.check(ok.all(), "%s: %d of %d values beyond %d eps normwise, e.g. got %s want %s" % (
        what, int((~ok).sum()), ok.size, tol, g[~ok][:3], w[~ok][:3]))


# ---- numpy's arithmetic, operation by operation ---------------------------------------

def ref_mul(a, b):
    ar, ai = parts(a)
    br, bi = parts(b)
    return (ar * br - ai * bi) + 1j * (ar * bi + ai * br), (ar * br - ai * bi, ar * bi + ai * br)


def ref_div(a, b):
    """numpy's loops.c.src complex division (Smith's, its zero-divisor branch)."""
    ar, ai = parts(a)
    br, bi = parts(b)
    one = br.dtype.type(1)
    with np.errstate(all="ignore"):
        abr, abi = np.abs(br), np.abs(bi)
        rat1 = bi / br
        scl1 = one / (br + bi * rat1)
        r1 = ((ar + ai * rat1) * scl1, (ai - ar * rat1) * scl1)
        r0 = (ar / abr, ai / abr)
        rat2 = br / bi
        scl2 = one / (bi + br * rat2)
        r2 = ((ar * rat2 + ai) * scl2, (ai * rat2 - ar) * scl2)
        first = abr >= abi
        zero = (abr == 0) & (abi == 0)
        re = np.where(first, np.where(zero, r0[0], r1[0]), r2[0])
        im = np.where(first, np.where(zero, r0[1], r1[1]), r2[1])
    return re, im


def pack(re, im, t):
    out = np.empty(re.shape, NPT[t])
    v = out.view(PT[t]).reshape(re.shape + (2,))
    v[..., 0], v[..., 1] = re, im
    return out


def test_arithmetic_bit_exact():
    for t in CT:
        a, b = cz(t), cz(t)[::-1].copy()
        b[:5] = [0, 0j, complex(0, 0), 1e-30, 3]          # zero divisors: numpy's inf/NaN branch
        ar, ai = parts(a)
        br, bi = parts(b)
        same_bits(K().__getattr__("c_add_" + t)(a, b), pack(ar + br, ai + bi, t), "c64 + " if t == "c64" else "c128 +")
        same_bits(K().__getattr__("c_sub_" + t)(a, b), pack(ar - br, ai - bi, t), "%s -" % t)
        _, (mr, mi) = ref_mul(a, b)
        same_bits(K().__getattr__("c_mul_" + t)(a, b), pack(mr, mi, t), "%s *" % t)
        dr, di = ref_div(a, b)
        same_bits(K().__getattr__("c_div_" + t)(a, b), pack(dr, di, t), "%s /" % t)
        same_bits(K().__getattr__("c_neg_" + t)(a), pack(-ar, -ai, t), "%s unary -" % t)
        # numpy's own results agree where they are well conditioned
        with np.errstate(all="ignore"):
            close_norm(K().__getattr__("c_mul_" + t)(a, b), a * b, t, 4, "%s * against numpy" % t)
        eq, ne, tr, nt = K().__getattr__("c_cmp_" + t)(a, np.where(np.arange(a.size) % 3 == 0, a, b))
        want = a == np.where(np.arange(a.size) % 3 == 0, a, b)
        C.equal(eq, want, "%s ==" % t)
        C.equal(ne, ~want, "%s !=" % t)
        C.equal(tr, a != 0, "%s bool()" % t)
        C.equal(nt, a == 0, "%s !" % t)


def cmath_ref(fn, zs, t):
    out = np.empty(zs.shape, np.complex128)
    for i, z in enumerate(zs.astype(np.complex128).flat):
        try:
            out.flat[i] = fn(complex(z))
        except (ValueError, OverflowError):
            out.flat[i] = complex(math.nan, math.nan)
    return out.astype(NPT[t]) if t == "c64" else out


def test_functions_against_cmath():
    """Normwise within TOL eps of cmath (pow: 2 * TOL, its error grows with
    |w log z|), on |re|, |im| <= 3 away from the branch points."""
    fns = {"exp": cmath.exp, "log": cmath.log, "sqrt": cmath.sqrt, "sin": cmath.sin, "cos": cmath.cos,
           "tan": cmath.tan, "sinh": cmath.sinh, "cosh": cmath.cosh, "tanh": cmath.tanh}
    for t in CT:
        z = cz(t)
        z = z[(np.abs(z) > 1e-2) & (np.abs(z.imag) < 50)]  # log's singularity, cosh's overflow
        for name, fn in fns.items():
            got = getattr(K(), "f_%s_%s" % (name, t))(z)
            close_norm(got, cmath_ref(fn, z, t), t, TOL, "%s<%s>" % (name, t))
        same_bits(getattr(K(), "f_conj_" + t)(z), np.conj(z), "conj<%s>" % t)
        w = cz(t)[: z.size] * 0.5
        with np.errstate(all="ignore"):
            want = np.array([complex(a) ** complex(b) if a != 0 else (0j if b.real > 0 and b.imag == 0 else
                             complex(math.nan, math.nan)) for a, b in zip(z.astype(np.complex128), w.astype(np.complex128))])
        close_norm(getattr(K(), "f_pow_" + t)(z, w), want.astype(NPT[t]), t, 2 * TOL, "pow<%s>" % t)
    # small integer powers are repeated products (numpy's npy_cpow): exact for 1 and 2
    z = cz("c64")
    k = np.tile(np.array([0, 1, 2, 3, -1, 5, 0.5], np.float32), z.size // 7 + 1)[: z.size]
    got = K().f_powr(z, k)
    _, (r2, i2) = ref_mul(z, z)
    same_bits(got[k == 2], pack(r2, i2, "c64")[k == 2], "pow(z, 2) is z * z")
    one = (k == 1) & (z != 0)                              # pow(0, w) is +0 for w > 0 (numpy)
    same_bits(got[one], z[one], "pow(z, 1) is z")
    same_bits(got[k == 0], np.ones(int((k == 0).sum()), np.complex64), "pow(z, 0) is 1")
    want = np.array([complex(a) ** float(b) for a, b in zip(z.astype(np.complex128), k)]).astype(np.complex64)
    close_norm(got, want, "c64", 2 * TOL, "pow(c64, f32)")


def test_parts_abs_arg():
    for t, kern in (("c64", "parts64"), ("c128", "parts128")):
        z = cz(t)
        re, im, ab, ar, fr = getattr(K(), kern)(z)
        C.equal(re, np.real(z), "real<%s>" % t)
        C.equal(im, np.imag(z), "imag<%s>" % t)
        C.equal(fr, np.real(z), "%s(z) is the real part" % ("f32" if t == "c64" else "f64"))
        pt = "f32" if t == "c64" else "f64"
        want_ab = np.array([math.hypot(v.real, v.imag) for v in z.astype(np.complex128)]).astype(PT[t])
        want_ar = np.array([math.atan2(v.imag, v.real) for v in z.astype(np.complex128)]).astype(PT[t])
        C.close(ab, want_ab, pt, ulp=4, what="abs<%s>" % t)
        C.close(ar, want_ar, pt, ulp=4, what="arg<%s>" % t)
    x = np.array([1.5, -2.0, 0.0, -0.0, np.inf, -np.inf, np.nan])
    i = np.array([3, -4, 0, 0, 1, -1, 7], np.int32)
    re, im, cj, ar, ai = K().ofreal(x, i)
    C.equal(re, x, "real of a real")
    C.equal(cj, x, "conj of a real")
    C.equal(im, np.zeros_like(x), "imag of a real")
    with np.errstate(invalid="ignore"):
        C.equal(ar, np.angle(x), "arg of a real is numpy's angle")
    C.equal(ai, np.angle(i.astype(np.float64)), "arg of an integer is f64")


def test_classification():
    for t in CT:
        inf, nan = np.inf, np.nan
        z = np.array([0, complex(inf, 0), complex(0, -inf), complex(nan, 1), complex(1, nan), complex(inf, nan),
                      1 + 2j], NPT[t])
        na, isinf, fin = getattr(K(), "classify_" + t)(z)
        C.equal(na, np.isnan(z), "isnan<%s>" % t)
        C.equal(isinf, np.isinf(z), "isinf<%s>" % t)
        C.equal(fin, np.isfinite(z), "isfinite<%s>" % t)


def test_special_values_kept():
    """The special values the formulas keep, against numpy's documented ones."""
    inf = np.inf
    for t in CT:
        z = np.array([complex(700, 0), complex(-inf, 0), complex(1, 0)], NPT[t])
        got = getattr(K(), "f_exp_" + t)(z)
        C.check(np.all(np.imag(got) == 0) and np.real(got)[1] == 0, "exp of a real stays real: %s" % got)
        z = np.array([complex(-4, 0), complex(-4, -0.0), complex(0, 0), complex(4, inf), complex(-inf, 1),
                      complex(inf, -1)], NPT[t])
        got = getattr(K(), "f_sqrt_" + t)(z)
        want = np.array([2j, complex(0, -2), 0, complex(inf, inf), complex(0, inf), complex(inf, -0.0)], NPT[t])
        same_bits(got, want, "sqrt<%s> branch cut and infinities" % t)
        got = getattr(K(), "c_div_" + t)(np.array([1 + 1j, 0j], NPT[t]), np.array([0j, 0j], NPT[t]))
        C.check(np.isinf(got[0].real) and np.isinf(got[0].imag) and np.isnan(got[1].real),
                "division by zero: inf or NaN parts as numpy: %s" % got)


def test_construction_conversion_promotion():
    x = rng.uniform(-5, 5, 50).astype(np.float32)
    y = rng.uniform(-5, 5, 50).astype(np.float32)
    z, w = K().mk32(x, y)
    C.check(z.dtype == np.complex64, "complex(f32, f32) is c64")
    same_bits(z, x + 1j * y, "complex(x, y)")
    same_bits(w, x + 2.5j, "c64(x, 2.5)")
    z, w = K().mk64(x.astype(np.float64), y.astype(np.float64))
    same_bits(z, x.astype(np.float64) + 1j * y, "complex(f64, f64)")
    same_bits(w, x.astype(np.float64) - 0.5j, "c128(x, -0.5)")
    zz = cz("c128")
    a, b, c, r = K().cvt(zz)
    same_bits(a, zz.astype(np.complex64), "c64(c128) rounds each part")
    C.equal(b, zz != 0, "bool(z)")
    same_bits(c, zz.astype(np.complex64).astype(np.complex128), "c128(c64(z))")
    C.equal(r, np.real(zz).astype(np.float32), "f32(c128) is the real part, rounded")
    z = cz("c64", 60)
    d = rng.uniform(-3, 3, z.size)
    i = rng.integers(-100, 100, z.size).astype(np.int32)
    h = rng.uniform(-3, 3, z.size).astype(np.float16)
    a, b, c, e = K().promo(z, d, i, h)
    C.check(a.dtype == np.complex128 and b.dtype == np.complex64, "declared output types")
    _, (mr, mi) = ref_mul(z.astype(np.complex128), d + 0j)
    same_bits(a, pack(mr, mi, "c128"), "c64 * f64 computes in c128 (numpy)")
    same_bits(b, pack(np.real(z) + i.astype(np.float32), np.imag(z) + np.float32(0), "c64"), "c64 + i32 in c64")
    same_bits(c, pack(np.real(z) - h.astype(np.float32), np.imag(z) - np.float32(0), "c64"), "c64 - f16 in c64")
    _, (tr, ti) = ref_mul(np.full(z.size, 2, np.complex64), z)
    same_bits(e, pack(tr + np.float32(0.5), ti + np.float32(0), "c64"), "literals take the complex type")
    cnd = np.arange(8) % 2 == 0
    a8, b8 = cz("c64", 8)[:8], cz("c128", 8)[:8]
    same_bits(K().sel(cnd, a8, b8), np.where(cnd, a8.astype(np.complex128), b8), "where(c, c64, c128)")
    y, u = K().consts(z)
    _, (pr, pi) = ref_mul(z, np.full(z.size, 0.5 - 1j, np.complex64))
    same_bits(y, pack(pr + np.float32(1) - np.float32(3), pi - np.float32(2) - np.float32(0), "c64"), "constants")
    same_bits(u, np.full(z.size, (1 + 2j) * (3 - 4j) + 7, np.complex128), "folded c128 constants")


def test_promotion_types_in_ir():
    """The types sema gives (nnkc --emit=ir): numpy's for float + complex;
    integers meet complex as they meet floats (i32 + f32 is f32)."""
    src = os.path.join(C.WORK, "cpromo.nnk")
    os.makedirs(C.WORK, exist_ok=True)
    cases = [("c64", "f64", "c128"), ("c64", "f32", "c64"), ("c64", "f16", "c64"), ("c64", "i64", "c64"),
             ("c128", "f32", "c128"), ("c64", "c128", "c128"), ("c64", "bool", "c64"), ("bf16", "c64", "c64")]
    with open(src, "w") as f:
        for n, (a, b, _) in enumerate(cases):
            f.write("elementwise p%d(a: %s[], b: %s[]) -> (y: c128[]) { y = a + b; }\n" % (n, a, b))
    ir = subprocess.run([C.NNKC, "--emit=ir", src], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        universal_newlines=True)
    C.check(ir.returncode == 0, "nnkc --emit=ir: %s" % ir.stderr)
    blocks = ir.stdout.split("kernel ")[1:]
    for (a, b, want), text in zip(cases, blocks):
        add = [line for line in text.splitlines() if " + " in line]
        C.check(add and add[0].rstrip().split(": ")[-1].split()[0] == want,
                "%s + %s is %s: %s" % (a, b, want, add))


def test_imaginary_literals():
    """2.5j is a weak complex literal (Python's spelling): c128 alone, the
    other operand's precision otherwise; literal arithmetic is folded (one
    constant in the IR), the rest bit-exact against numpy's formulas."""
    src = os.path.join(C.WORK, "clits.nnk")
    os.makedirs(C.WORK, exist_ok=True)
    cases = [("f32", "c64"), ("f16", "c64"), ("bf16", "c64"), ("f64", "c128"), ("i32", "c128"), ("bool", "c128"),
             ("u8", "c128"), ("c64", "c64"), ("c128", "c128")]
    with open(src, "w") as f:
        for n, (a, _) in enumerate(cases):
            f.write("elementwise p%d(a: %s[]) -> (y: c128[]) { y = a * 1j; }\n" % (n, a))
        f.write("elementwise q(a: c64[]) -> (y: c64[]) { y = a + (2.5 * 1j - 3 + 1j * 1j); }\n")
    ir = subprocess.run([C.NNKC, "--emit=ir", src], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        universal_newlines=True)
    C.check(ir.returncode == 0, "nnkc --emit=ir: %s" % ir.stderr)
    blocks = ir.stdout.split("kernel ")[1:]
    for (a, want), text in zip(cases, blocks):
        mul = [line for line in text.splitlines() if " * " in line]
        C.check(mul and mul[0].rstrip().split(": ")[-1].split()[0] == want, "%s * 1j is %s: %s" % (a, want, mul))
    # the value's number is the lowering order's, not this test's business
    consts = [line.strip().split(" = ", 1)[-1] for line in blocks[-1].splitlines() if "[const]" in line]
    C.check(consts == ["(-4.0+2.5j) : c64  [const]"], "2.5 * 1j - 3 + 1j * 1j folded: %s" % consts)
    x = np.concatenate([rng.uniform(-3, 3, 200), [0.0, -0.0, 1e30, -1e-30]]).astype(np.float32)
    d = rng.uniform(-1e3, 1e3, x.size)
    y, w, s = K().lits(x, d)
    z32 = np.zeros_like(x)
    re, im = ref_mul(pack(x, z32, "c64"), pack(z32, np.ones_like(x), "c64"))[1]
    same_bits(y, pack(re + np.float32(2), im + np.float32(-0.5), "c64"), "x * 1j + (2 - 0.5j)")
    z64 = np.zeros_like(d)
    re, im = ref_mul(pack(d, z64, "c128"), pack(z64, np.full_like(d, 0.25), "c128"))[1]
    same_bits(w, pack(re - 0.0 + 0.0, im - 1000.0 + 0.5, "c128"), "d * 2.5e-1j - 1_000j + .5J")
    re, im = ref_mul(pack(x, x, "c64"), pack(z32, np.full_like(x, 3), "c64"))[1]
    same_bits(s, pack(re + np.float32(4), im - np.float32(0), "c64"), "c64(x, x) * (3 * 1j) - 2j * 2j")


def test_complex_scalar_parameters():
    """a: c64 / c128 scalar arguments (nnk_scalar's pair of parts), through
    NAME_strided, the contiguous entry and a default: bit-exact against
    numpy's formula for a * x + y."""
    for t in CT:
        x, y = cz(t), cz(t)
        for a in (1.5 - 2j, -0.25j, complex(3, 0), complex(-0.0, 1e30)):
            av = np.array([a] * x.size, NPT[t])
            re, im = ref_mul(av, x)[1]
            want = pack(re + np.real(y), im + np.imag(y), t)
            same_bits(getattr(K(), "zaxpy_" + t)(a, x, y), want, "zaxpy<%s> a=%s" % (t, a))
            same_bits(C.contig_call(getattr(K(), "zaxpy_" + t), x.size, a, x, y), want,
                      "zaxpy<%s> contiguous a=%s" % (t, a))
    x = rng.uniform(-3, 3, 50).astype(np.float32)
    k = K().zrot
    C.check(k.inputs[1].default == complex(np.complex64(0.5 - 2j)), "zrot: the default %s" % k.inputs[1].default)
    for w in (None, 1j, 2 + 3j):
        got = k(x) if w is None else k(x, w)
        wv = np.array([0.5 - 2j if w is None else w] * x.size, np.complex64)
        re, im = ref_mul(pack(x, np.zeros_like(x), "c64"), wv)[1]
        same_bits(got, pack(re, im, "c64"), "zrot w=%s" % w)
    z = cz("c128", 300)
    r = K().zdot(z, 0.5 + 1j, 2 - 1j, axes=None)
    close_norm(r, (z * (0.5 + 1j)).sum() + np.complex64(2 - 1j), "c128", 300, "zdot")


def test_reductions():
    for t in CT:
        n = 1000
        ang = rng.uniform(-math.pi, math.pi, (3, n))
        z = (np.exp(1j * ang) * rng.uniform(0.999, 1.001, (3, n))).astype(NPT[t])
        z[2, 5] = 0
        s, p, m, a, al = getattr(K(), "r_all_" + t)(z, axes=1)
        zd = z.astype(np.complex128)
        want_s = np.array([complex(math.fsum(r.real), math.fsum(r.imag)) for r in zd])
        tol = EPS[t] * (n + 16) * np.max(np.abs(zd))
        C.check(np.all(np.abs(s - want_s) <= tol), "sum<%s>: %s vs %s" % (t, s, want_s))
        C.check(np.all(np.abs(m - want_s / n) <= tol / n), "mean<%s>: %s vs %s" % (t, m, want_s / n))
        want_p = np.ones(3, np.complex128)
        for r in range(3):
            for v in zd[r]:
                want_p[r] *= v
        C.check(np.all(np.abs(p - want_p) <= 8 * n * EPS[t] * np.maximum(np.abs(want_p), 1e-300)),
                "prod<%s>: %s vs %s" % (t, p, want_p))
        C.equal(a, np.any(z != 0, axis=1), "any<%s>" % t)
        C.equal(al, np.all(z != 0, axis=1), "all<%s>" % t)
        # an empty slice: sum 0, prod 1, mean NaN (0 / 0)
        s, p, m, a, al = getattr(K(), "r_all_" + t)(np.zeros((2, 0), NPT[t]), axes=1)
        C.check(np.all(s == 0) and np.all(p == 1) and np.all(np.isnan(m.real)), "empty slices: %s %s %s" % (s, p, m))
    z = cz("c64", 300).reshape(3, -1)
    y, e = K().r_norm(z, axes=1)
    zd = z.astype(np.complex128)
    close_norm(y, zd / np.abs(zd).sum(axis=1, keepdims=True), "c64", 8 * z.shape[1], "z / sum(abs(z))")
    C.check(np.allclose(e, (np.abs(zd) ** 2).mean(axis=1), rtol=1e-5), "mean(real(z * conj(z)))")


def test_custom_reducers():
    """reduce() with a complex state and a tuple state holding one."""
    ang = rng.uniform(-math.pi, math.pi, (2, 300))
    z = np.exp(1j * ang)
    w = rng.uniform(0.5, 2.0, (2, 300))
    p, m = K().r_custom(z, w, axes=1)
    want_p = np.ones(2, np.complex128)
    for r in range(2):
        for v in z[r]:
            want_p[r] *= v
    close_norm(p, want_p, "c128", 8 * 300, "reduce(z, 1, a * b)")
    want_m = np.array([complex(math.fsum((z[r] * w[r]).real), math.fsum((z[r] * w[r]).imag)) / math.fsum(w[r])
                       for r in range(2)])
    close_norm(m, want_m, "c128", 8 * 300, "tuple state (sum(z * w), sum(w))")


if __name__ == "__main__":
    sys.exit(C.main(globals()))
