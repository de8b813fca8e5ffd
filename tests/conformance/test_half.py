"""f16 and bf16: conversions bit-exact against numpy's float16 and against
an independent bf16 reference (nearest binary value found in float64
arithmetic), exhaustively where the domain is 16 bits; compute in f32 with
one rounding per store; constants folded by nnkc round the same way.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

rng = np.random.default_rng(7)


def H():
    return C.load("kernels/half.nnk")


ALL16 = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def ref_round(d, mant, emin, emax_val):
    """float64 values -> the nearest value with `mant` significant bits
    (round half to even), exponent >= emin (subnormals below), inf above
    emax_val plus half a step.  Computed with float64 arithmetic only."""
    d = np.asarray(d, dtype=np.float64)
    out = np.empty_like(d)
    for i, v in enumerate(d.flat):
        if np.isnan(v) or np.isinf(v) or v == 0:
            out.flat[i] = v
            continue
        a = abs(v)
        e = max(int(np.floor(np.log2(a))), emin)
        # guard log2 rounding at powers of two
        while 2.0 ** e > a and e > emin:
            e -= 1
        while 2.0 ** (e + 1) <= a:
            e += 1
        step = 2.0 ** (e - mant + 1)
        q = np.floor(a / step)
        lo = q * step
        rem = a - lo
        if rem > step / 2 or (rem == step / 2 and q % 2 == 1):
            lo += step
        top = emax_val + 2.0 ** (int(np.floor(np.log2(emax_val))) - mant + 1) / 2   # halfway to the next
        r = np.inf if (lo > emax_val or a >= top) else lo
        out.flat[i] = np.copysign(r, v)
    return out


BF16_MAX = float(C.bf16_to_f32(np.uint16(0x7F7F)))


def bf16_bits_of(vals64):
    """Exactly representable float64 values (or inf/nan) -> bf16 bits."""
    f = np.asarray(vals64, dtype=np.float64).astype(np.float32)
    return (f.view(np.uint32) >> 16).astype(np.uint16)


def test_f16_to_f32_exhaustive():
    h = ALL16.view(np.float16)
    got = H().f16_to_f32(h)
    want = h.astype(np.float32)
    C.equal(got.view(np.uint32), want.view(np.uint32), "all 65536 f16 -> f32 (bits)")


def test_bf16_to_f32_exhaustive():
    got = H().bf16_to_f32(ALL16.view(C.BF16Array))
    C.equal(got.view(np.uint32), ALL16.astype(np.uint32) << 16, "all 65536 bf16 -> f32 (bits)")


def _f32_cases():
    """f32 values around every f16 and bf16 value and midpoint, plus random bits."""
    h = ALL16.view(np.float16)
    fin = h[np.isfinite(h)].astype(np.float32)
    srt = np.unique(fin.astype(np.float64))
    mids = ((srt[1:] + srt[:-1]) / 2).astype(np.float32)          # exact in f32 (f16 has 11 bits)
    b = C.bf16_to_f32(ALL16)
    bfin = np.unique(b[np.isfinite(b)].astype(np.float64))
    bmid = (bfin[1:] + bfin[:-1]) / 2                                # exact in f64; in f32 too (9 bits)
    bmid = bmid.astype(np.float32)
    base = np.concatenate([fin, mids, bmid, b[np.isfinite(b)]])
    u = base.view(np.uint32)
    near = np.concatenate([u, u + 1, u - 1]).view(np.float32)
    rnd = rng.integers(0, 2 ** 32, 3_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.array([np.inf, -np.inf, 65504, 65519.996, 65520, 65536, 1e-8, 2 ** -24, 2 ** -25, 2 ** -25 * 1.0000001,
                        3 * 2 ** -26, 3.3895314e38, 3.3961e38, 3.3962e38, 3.4028235e38], dtype=np.float32)
    return np.concatenate([near, rnd, special, -special])


def test_f32_to_f16_bits():
    x = _f32_cases()
    got = H().f32_to_f16(x).view(np.uint16)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    C.equal(got[~nan], want[~nan], "f32 -> f16, %d values (bits, numpy)" % (~nan).sum())
    C.check(np.all((got[nan] & 0x7C00) == 0x7C00) and np.all(got[nan] & 0x3FF), "NaN stays NaN")
    C.equal(got[nan] >> 15, (x[nan].view(np.uint32) >> 31).astype(np.uint16), "NaN keeps its sign")


def test_f32_to_bf16_bits():
    x = _f32_cases()
    got = np.asarray(H().f32_to_bf16(x)).view(np.uint16)
    nan = np.isnan(x)
    want = C.f32_to_bf16(x)
    C.equal(got[~nan], want[~nan], "f32 -> bf16, %d values (bits)" % (~nan).sum())
    C.check(np.all(np.isnan(C.bf16_to_f32(got[nan]))), "NaN stays NaN in bf16")
    # and an independent check of the reference on a sample: nearest in float64 arithmetic
    sample = x[~nan][:: max(1, x.size // 20000)]
    r = ref_round(sample.astype(np.float64), 8, -126, BF16_MAX)
    C.equal(np.asarray(H().f32_to_bf16(sample)).view(np.uint16), bf16_bits_of(r), "f32 -> bf16 vs float64 reference")


def _f64_cases():
    h = ALL16.view(np.float16)
    srt = np.unique(h[np.isfinite(h)].astype(np.float64))
    mids = (srt[1:] + srt[:-1]) / 2
    tiny = np.abs(mids) * 2.0 ** -40 + 2.0 ** -1074
    v = np.concatenate([mids, mids + tiny, mids - tiny, rng.normal(0, 1000, 200_000), rng.normal(0, 1e-5, 50_000),
                        [1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -11 - 2 ** -40, 65519.99999, 65520.0, 2 ** -25 + 2 ** -70,
                         2 ** -25, 1e300, -1e300, 3.4e38, 3.3962e38, 1 + 2 ** -8 + 2 ** -60, 1 + 2 ** -8]])
    return v


def test_f64_to_f16_one_rounding():
    v = _f64_cases()
    got = H().f64_to_f16(v).view(np.uint16)
    with np.errstate(over="ignore"):
        want = v.astype(np.float16).view(np.uint16)          # numpy rounds float64 -> float16 directly
    C.equal(got, want, "f64 -> f16, %d values (one rounding, numpy)" % v.size)
    via_f32 = v.astype(np.float32).astype(np.float16).view(np.uint16)
    C.check(np.any(via_f32 != want), "(the cases include some where rounding through f32 is wrong)")


def test_f64_to_bf16_one_rounding():
    v = _f64_cases()
    sample = np.concatenate([v[:3000], v[-30:], v[::97]])
    got = np.asarray(H().f64_to_bf16(sample)).view(np.uint16)
    want = bf16_bits_of(ref_round(sample, 8, -126, BF16_MAX))
    C.equal(got, want, "f64 -> bf16, %d values (float64 reference)" % sample.size)


def test_other_half_conversions():
    h = ALL16.view(np.float16)
    got = np.asarray(H().f16_to_bf16(h)).view(np.uint16)
    fin = ~np.isnan(h)
    C.equal(got[fin], C.f32_to_bf16(h[fin].astype(np.float32)), "f16 -> bf16 (all finite and infinite f16)")
    x = np.array([16842753, -16842753, 2 ** 60 + 2 ** 52 + 1, 2 ** 60 + 2 ** 52, -(2 ** 63), 2 ** 63 - 1, 255, 257, 0],
                 dtype=np.int64)
    want = bf16_bits_of(ref_round(np.array([float(int(v)) if abs(int(v)) < 2 ** 53 else 0.0 for v in x]), 8, -126, BF16_MAX))
    exact = []
    for v in x:
        v = int(v)
        # exact integer rounding to 8 significant bits
        m, s = abs(v), (-1 if v < 0 else 1)
        n = m.bit_length()
        if n > 8:
            sh = n - 8
            q, r = m >> sh, m & ((1 << sh) - 1)
            if r > 1 << (sh - 1) or (r == 1 << (sh - 1) and q & 1):
                q += 1
            m = q << sh
        exact.append(s * float(m))
    want = bf16_bits_of(np.array(exact))
    C.equal(np.asarray(H().i64_to_bf16(x)).view(np.uint16), want, "i64 -> bf16 (one rounding, also above 2^53)")


def test_compute_in_f32_round_once():
    a = rng.uniform(-4, 4, 100_000).astype(np.float16)
    b = rng.uniform(-4, 4, 100_000).astype(np.float16)
    got = H().f16_fma_like(a, b)
    want = (a.astype(np.float32) * b.astype(np.float32) + a.astype(np.float32)).astype(np.float16)
    C.equal(got.view(np.uint16), want.view(np.uint16), "f16 a * b + a: f32 arithmetic, one rounding")
    per_op = (a * b + a)                                     # numpy rounds every f16 operation
    C.check(np.any(per_op.view(np.uint16) != want.view(np.uint16)), "(rounding per operation would differ)")
    ab, bb = C.bf16(a.astype(np.float32)), C.bf16(b.astype(np.float32))
    got = np.asarray(H().bf16_fma_like(ab, bb)).view(np.uint16)
    af, bf = C.bf16_to_f32(ab), C.bf16_to_f32(bb)
    C.equal(got, C.f32_to_bf16(af * bf + af), "bf16 a * b + a: f32 arithmetic, one rounding")
    x = rng.uniform(-100, 100, 10000).astype(np.float16)
    want = (np.float32(0.1) * x.astype(np.float32)).astype(np.float16)
    C.equal(H().f16_literal(x).view(np.uint16), want.view(np.uint16), "0.1 * x (f16): the literal is f32 0.1")
    C.equal(H().f16_scale(x).view(np.uint16), (np.float32(0.5) * x.astype(np.float32)).astype(np.float16).view(np.uint16),
            "f16 scalar default")
    C.equal(H().f16_scale(x, 3.0).view(np.uint16), (np.float32(3) * x.astype(np.float32)).astype(np.float16).view(np.uint16),
            "f16 scalar given")


def test_folded_constants():
    a, b, c, d, e = H().folded(np.zeros(2, dtype=np.float32))
    C.equal(a.view(np.uint16), np.full(2, np.float16(1 + 2 ** -10)).view(np.uint16), "f16(1 + 2^-11 + 2^-40) folds up")
    C.equal(np.asarray(b).view(np.uint16), np.full(2, 0x4B81, dtype=np.uint16), "bf16(16842753) folds up")
    C.equal(c.view(np.uint16), np.full(2, np.float16(65504)).view(np.uint16), "f16(65519.99) is 65504")
    C.equal(np.asarray(d).view(np.uint16), np.full(2, 0x3F80, dtype=np.uint16), "bf16(1 + 2^-8): tie to even")
    C.equal(e, np.full(2, np.float32(2 ** 53 + 2 ** 30)), "f32 of a 64-bit integer literal: one rounding")


def RD():
    return C.load("kernels/rounding.nnk")


def f16r(v):
    """float32 values rounded to f16 (numpy's float32 -> float16 is
    correctly rounded), back as float32."""
    return np.asarray(v, dtype=np.float32).astype(np.float16).astype(np.float32)


def test_where_f16_rounds():
    """Every value given the type f16 by name is rounded (language.md §3):
    f16(x), a typed let, a typed func parameter and result, an output read
    back; intermediates and untyped lets are not.
    Bit for bit (tests/cuda/emu-half-extra.sh runs the same on the CUDA)."""
    h = np.float16(1.0009765625)        # 1 + 2^-10: h * h = 1 + 2^-9 + 2^-20
    C.check(float(f16r(np.float32(h) * np.float32(h))) == 1.001953125, "(the example of language.md)")
    hs = np.concatenate([[h], rng.uniform(-8, 8, 5000)]).astype(np.float16)
    gs = np.concatenate([[h], rng.uniform(-8, 8, 5000)]).astype(np.float16)
    prod = hs.astype(np.float32) * gs.astype(np.float32)     # exact: 11 x 11 bits
    conv, tlet, param, result, inner, ulet, twice, folded = RD().rd_f16(hs, gs)
    bits = lambda a: np.asarray(a, dtype=np.float32).view(np.uint32)   # noqa: E731
    C.check(float(conv[0]) == 1.001953125, "f16(h * h) with h = 1.0009765625 is 1.001953125, got %r" % float(conv[0]))
    C.equal(bits(conv), bits(f16r(prod)), "f16(h * g) rounds")
    C.equal(bits(tlet), bits(f16r(prod)), "let u: f16 = h * g rounds")
    C.equal(bits(param), bits(f16r(prod)), "a typed func parameter rounds")
    sq = hs.astype(np.float32) * hs.astype(np.float32)
    C.equal(bits(result), bits(f16r(sq)), "a func's -> f16 rounds")
    C.equal(bits(inner), bits(prod), "f32(h * g): the f32 product, not rounded")
    C.equal(bits(ulet), bits(prod), "an untyped let is the expression, not rounded")
    C.check(np.any(bits(prod) != bits(f16r(prod))), "(the products need rounding)")
    C.equal(bits(twice), bits(f16r(f16r(prod) + gs.astype(np.float32))), "f16(f16(h * g) + g): two roundings")
    C.equal(bits(folded), bits(np.full(hs.shape, 1.001953125, np.float32)), "a folded f16(h * h) rounds the same way")
    p, a, b, c = RD().rd_back(hs, gs)
    C.equal(bits(a), bits(p.astype(np.float32)), "an output read back is the f16 it stores")
    C.equal(bits(a), bits(f16r(prod)), "an output read back is rounded")
    C.equal(bits(c), bits(C.bf16_to_f32(np.asarray(b).view(np.uint16))), "a bf16 output read back is what it stores")
    i = np.array([2049, 1, -3, 4097, 65519, 70000, 0, 2051], dtype=np.int32)
    hh = np.array([0.5, 0.1, 1.0009765625, 0.25, 1, 1, -0.0, 0.5], dtype=np.float16)
    want = i.astype(np.float16).astype(np.float32) + hh.astype(np.float32)
    C.equal(bits(RD().rd_mixed(i, hh)), bits(want), "i32 + f16: the integer rounded to f16 (2049 -> 2048), added in f32")
    bh = C.bf16(rng.uniform(-8, 8, 3000).astype(np.float32))
    bg = C.bf16(rng.uniform(-8, 8, 3000).astype(np.float32))
    bp = C.bf16_to_f32(bh) * C.bf16_to_f32(bg)
    bconv, bparam, binner = RD().rd_bf16(bh, bg)
    bfr = C.bf16_to_f32(C.f32_to_bf16(bp))
    C.equal(bits(bconv), bits(bfr), "bf16(h * g) rounds")
    C.equal(bits(bparam), bits(bfr), "a typed bf16 func parameter rounds")
    C.equal(bits(binner), bits(bp), "f32(h * g) of bf16: the f32 product")


def test_reduction_epilogue_reads_back_rounded():
    """A reduced f16 output read back in the epilogue is the f16 it stores
    (y = x / s); the reducer's own value is the f32 accumulator wherever it
    is not given the type (t: f32 = sum(x), x / sum(x): no f16 overflow of
    a sum of squares in sqrt(sum(x * x))); f16(mean(x)) rounds."""
    x = np.full((3, 7), 1.0009765625, dtype=np.float16)        # sums exact in f32: 7 + 7 * 2^-10
    x[1] = np.float16(0.3)
    x[2, :3] = np.float16(-2.5)
    s, t, m, y, w = RD().rd_sum(x, axes=(1,))
    acc = x.astype(np.float32).sum(axis=1)                      # exact here
    C.check(np.any(f16r(acc) != acc), "(the sums need rounding)")
    C.equal(s.view(np.uint16), acc.astype(np.float16).view(np.uint16), "sum(x) stored as f16")
    C.equal(t, acc, "t: f32 = sum(x): the f32 accumulator")
    C.equal(m, f16r(acc / np.float32(7)), "f16(mean(x)) rounds")
    C.equal(y, x.astype(np.float32) / f16r(acc)[:, None], "y = x / s: s read back is the rounded sum")
    C.equal(w, x.astype(np.float32) / acc[:, None], "x / sum(x): the f32 sum")


if __name__ == "__main__":
    sys.exit(C.main(globals()))
