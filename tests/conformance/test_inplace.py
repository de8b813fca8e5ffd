"""In-place calls (docs/c-backend.md, "In place"): an output that is exactly
an input gives the bits of a call with separate outputs.

The contiguous loops of the generated C take restrict pointers; a call
whose outputs share memory with an operand must take the loops without
them, or the compiler (gcc -O2 with and without the AVX2 clones, clang)
moves an output's store ahead of another output's load of the same input.
This test generates kernels with several inputs and outputs (fixed seed),
builds them with each compiler, and calls every kernel once per (output,
input) pair of one dtype with the output given as that input, through
NAME_strided (contiguous, column order, strided views) and, for
elementwise kernels, the contiguous entry point; the result must equal a
call with fresh outputs, byte for byte.
"""
import ctypes
import os
import random
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

SEED = 11
DTYPES = ["i8", "i16", "i32", "u8", "f32", "f64"]
# the two kernels of the issue that found it, one with the ranged sin/cos
# loops (their block buffers), then generated ones
FIXED = """
elementwise k0(c: i16[], a: i16[]) -> (z0: i16[], z1: i8[]) { z0 = a; z1 = c; }
reduction k1(b: f32[]) -> (z0: f32[], z1: f32[]) { z1 = b; z0 = 1; }
elementwise ks(x: f32[], y: f32[]) -> (z0: f32[], z1: f32[]) { z0 = sin(x * 1000) + y; z1 = cos(y) * x; }
"""


def expr(rng, names, t):
    """A small expression of the inputs, converted to the output type t."""
    a, b = rng.choice(names), rng.choice(names)
    forms = ["{a}", "{a} + {b}", "{a} * 2 + {b}", "{b} - {a}", "{a} * {b}", "max({a}, {b})", "-{a} + 3"]
    return "%s(%s)" % (t, rng.choice(forms).format(a=a, b=b))


def generate(rng, n):
    src, kernels = [FIXED], [("k0", False), ("k1", True), ("ks", False)]
    for i in range(n):
        red = i % 3 == 2
        nin, nout = rng.randint(1, 3), rng.randint(2, 3)
        ins = [("x%d" % j, rng.choice(DTYPES)) for j in range(nin)]
        outs = []
        for j in range(nout):
            # an output of an input's dtype, so that it can be that input
            t = rng.choice(ins)[1] if j < 2 else rng.choice(DTYPES)
            outs.append(("z%d" % j, t))
        names = [nm for nm, _ in ins]
        body = []
        if red:
            s = rng.choice(names)
            body.append("let s = sum(f64(%s));" % s)
            outs.append(("r", "f64"))
        for nm, t in outs:
            if nm == "r":
                body.append("r = s;")
            elif red and rng.random() < 0.5:
                body.append("%s = %s(f64(%s) - s);" % (nm, t, rng.choice(names)))
            else:
                body.append("%s = %s;" % (nm, expr(rng, names, t)))
        sig = ", ".join("%s: %s[]" % p for p in ins)
        osig = ", ".join(("%s: %s" if nm == "r" else "%s: %s[]") % (nm, t) for nm, t in outs)
        kind = "reduction" if red else "elementwise"
        src.append("%s g%d(%s) -> (%s) {\n    %s\n}\n" % (kind, i, sig, osig, "\n    ".join(body)))
        kernels.append(("g%d" % i, red))
    return "\n".join(src), kernels


def variants():
    """(tag, compiler, extra flags): gcc with the AVX2 clones, gcc for one
    target (no clones), clang."""
    out = [("cc", C.CC, []), ("noclones", C.CC, ["-DNNK_NO_CLONES"])]
    if shutil.which("clang") and os.path.basename(C.CC) != "clang":
        out.append(("clang", "clang", []))
    return out


def build(path, tag, cc, extra):
    os.makedirs(C.WORK, exist_ok=True)
    cfile = os.path.join(C.WORK, "inplace.c")
    if not os.path.exists(cfile) or os.path.getmtime(cfile) < os.path.getmtime(path):
        C.run([C.NNKC, "-S", "--target=c", path, "-o", cfile])
    so = os.path.join(C.WORK, "inplace-%s.so" % tag)
    C.run([cc] + C.CFLAGS + extra + [cfile, "-o", so, "-lm"])
    return C.Module(so, cfile)


def values(rng, t, shape):
    if t in ("f32", "f64"):
        return (rng.standard_normal(shape) * 8).astype(C.NP[t])
    info = np.iinfo(C.NP[t])
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(C.NP[t])


def layouts(red):
    """(shape, axes, view maker): contiguous, transposed (column order for
    reductions over axis 0), strided."""
    out = [((1, 33, 1), None if not red else (1,), lambda a: a),
           ((37, 5), None if not red else (0,), lambda a: a),
           ((6, 21), None if not red else (1,), lambda a: a)]
    out.append(((9, 14), None if not red else (0,), lambda a: a.T.copy().T))
    out.append(((7, 11), None if not red else (1,), lambda a: a))
    return out


def inputs_for(k, nrng, shape, make):
    arrs = []
    for p in k.inputs:
        base = values(nrng, p.dtype, shape)
        arrs.append(make(base))
    return arrs


def raw(a):
    """The bytes of an array, in its logical order."""
    return np.ascontiguousarray(np.asarray(a)).view(np.uint8)


def call(k, arrs, axes, out):
    if k.reduction:
        return k(*arrs, axes=axes, out=out)
    return k(*arrs, out=out)


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def contig_inplace(k, arrs, o, i):
    """The contiguous entry point with output o given as input i."""
    n = arrs[0].size
    flat = [np.ascontiguousarray(a).reshape(-1).copy() for a in arrs]
    outs = [np.zeros(n, C.NP[p.dtype]) for p in k.outputs]
    ref_outs = [x.copy() for x in outs]
    args = [ctypes.c_int64(n)] + [ctypes.c_void_p(f.ctypes.data) for f in flat] + \
        [ctypes.c_void_p(x.ctypes.data) for x in ref_outs]
    ref_in = [f.copy() for f in flat]
    k.contig_fn(*args)
    flat = [f.copy() for f in ref_in]
    outs[o] = flat[i]
    args = [ctypes.c_int64(n)] + [ctypes.c_void_p(f.ctypes.data) for f in flat] + \
        [ctypes.c_void_p(x.ctypes.data) for x in outs]
    k.contig_fn(*args)
    for j in range(len(outs)):
        C.equal(raw(outs[j]), raw(ref_outs[j]),
                "%s contiguous entry, output %d = input %d: output %d" % (k.name, o, i, j))


def check_module(m, kernels):
    nrng = np.random.default_rng(SEED)
    npairs = 0
    for name, red in kernels:
        k = getattr(m, name)
        ins = [j for j, p in enumerate(k.inputs) if p.tensor]
        for shape, axes, make in layouts(red):
            arrs = inputs_for(k, nrng, shape, make)
            ref = as_tuple(call(k, [np.array(a, order="K") for a in arrs], axes, None))
            for o, po in enumerate(k.outputs):
                if po.reduced:
                    continue
                for i in ins:
                    if k.inputs[i].dtype != po.dtype:
                        continue
                    npairs += 1
                    a2 = [np.array(a, order="K") for a in arrs]
                    outs = [a2[i] if j == o else np.zeros(r.shape, r.dtype) for j, r in enumerate(ref)]
                    got = as_tuple(call(k, a2, axes, outs))
                    for j in range(len(ref)):
                        C.equal(raw(got[j]), raw(ref[j]),
                                "%s %s axes=%s, output %s = input %s: output %s" %
                                (name, shape, axes, po.name, k.inputs[i].name, k.outputs[j].name))
                    if not red and shape == (1, 33, 1):
                        contig_inplace(k, arrs, o, i)
    C.check(npairs > 50, "only %d in-place pairs" % npairs)


_src = {}


def source():
    if "path" not in _src:
        text, kernels = generate(random.Random(SEED), 12)
        os.makedirs(C.WORK, exist_ok=True)
        path = os.path.join(C.WORK, "inplace.nnk")
        with open(path, "w") as f:
            f.write(text)
        _src["path"], _src["kernels"] = path, kernels
    return _src["path"], _src["kernels"]


def make_test(tag, cc, extra):
    def t():
        path, kernels = source()
        check_module(build(path, tag, cc, extra), kernels)
    return t


for _tag, _cc, _extra in variants():
    globals()["test_inplace_" + _tag] = make_test(_tag, _cc, _extra)

if __name__ == "__main__":
    sys.exit(C.main(globals()))
