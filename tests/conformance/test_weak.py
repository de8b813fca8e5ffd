"""Weak literals that are not constants: every choice (`c ? a : b`,
`where(c, a, b)`) of two literals or untyped consts, integer and float,
with a condition that varies per element, per call (a scalar parameter)
or per reduced row (`n`), in every position that resolves a weak type:
an output, an operand of a typed value, weak arithmetic, a typed and an
untyped let, a typed and an untyped func parameter, nested choices, the
argument of each reducer, reduce()'s argument and identity, a per-element
epilogue.  These once crashed `nnkc -S` (the choice kept the type "float
literal" into the IR).

The cases are generated (a kernel per type, pair and condition, an output
per position) into one .nnk file, compiled by nnkconf with gcc -Werror, run, and compared with the values language.md
documents, computed here with numpy: a weak value computes like the
constant folder computes literals (integers in i64, floats in f64) and
converts to the type it meets (f16/bf16: to their f32 compute precision,
as a literal does; language.md §3).  tests/cuda/emu-weak.sh runs the same
module with every call also executed by the generated CUDA.
"""
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

# branch pairs: source text and value (int: a weak integer, float: a weak float)
CONSTS = "const C1 = 5;\nconst CH = 0.5;\n"
PAIRS = [("6.0", "1.0"), ("6.0", "1"), ("2", "C1"), ("1", "0"), ("2.5", "CH"), ("0.1", "0.3")]
VALUE = {"6.0": 6.0, "1.0": 1.0, "1": 1, "2": 2, "C1": 5, "0": 0, "2.5": 2.5, "CH": 0.5, "0.1": 0.1, "0.3": 0.3}
TYPES = ["f64", "f32", "f16", "i32", "i64"]
NPT = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64}
# conditions: source, and its value from (a, b, s, idx)
CONDS = {
    "elem": ("a < b", lambda a, b, s, i: a < b),
    "scalar": ("s > 1", lambda a, b, s, i: np.full(a.shape, s > 1)),
    "idx": ("idx % 3 == 0", lambda a, b, s, i: i % 3 == 0),
}


def weak(x, y):
    """The branch values as numpy arrays of their concrete type: f64 if
    either is a float literal, else i64."""
    fl = isinstance(VALUE[x], float) or isinstance(VALUE[y], float)
    t = np.float64 if fl else np.int64
    return t(VALUE[x]), t(VALUE[y]), fl


def meet(v, fl, t, other, fn):
    """A weak value v (fl: a float one) meeting a typed operand `other` of
    type t in fn(v, other): the weak value takes t (f16: its f32 compute
    precision, as a literal does), except that a float meeting an integer
    type computes in f64 (language.md §3)."""
    ct = np.float64 if fl and t[0] == "i" else np.float32 if t == "f16" else NPT[t]
    return fn(np.asarray(v).astype(ct), np.asarray(other).astype(ct))


def store(v, t):
    """An output's value: the language's conversion to t (float to int
    truncates; the cases stay in range)."""
    v = np.asarray(v)
    if t in ("i32", "i64") and v.dtype.kind == "f":
        return np.trunc(v).astype(NPT[t])
    return v.astype(NPT[t])


def compute(v, t):
    """A value of type t as computed: f16 in f32."""
    return v.astype(np.float32) if t == "f16" else v.astype(NPT[t])


def tdiv(p, q):
    """Weak arithmetic: i64 division truncates, f64 divides."""
    if p.dtype.kind == "i":
        return (np.sign(p) * (np.abs(p) // abs(q))).astype(np.int64)
    return p / q


class Case:
    """One kernel: outputs z0, z1, ... each one position of the choice; refs
    give each output's documented value."""
    def __init__(self, name, src, refs, bodies, reduction=False):
        self.name, self.src, self.refs, self.bodies, self.reduction = name, src, refs, bodies, reduction


def kernel(kind, name, params, t, positions, reduced=False):
    """positions: (body with {z} for the output and {u} for a let, ref, skip_s0)."""
    outs, stmts, refs, bodies = [], [], [], []
    for k, (body, ref, *rest) in enumerate(positions):
        otype = rest[1] if len(rest) > 1 else t
        outs.append("z%d: %s%s" % (k, otype, "" if reduced and not (rest and rest[0] == "full") else "[]"))
        text = body.format(z="z%d" % k, u="u%d" % k)
        stmts.append(text)
        refs.append(ref)
        bodies.append(text)
    src = "%s %s(%s) -> (%s) {\n    %s\n}\n" % (kind, name, params, ", ".join(outs), "\n    ".join(stmts))
    return Case(name, src, refs, bodies, reduction=kind == "reduction")


def elementwise_cases():
    cases = []
    for t, (pi, (x, y)), (cname, (csrc, cf)) in itertools.product(TYPES, enumerate(PAIRS), CONDS.items()):
        vx, vy, fl = weak(x, y)

        def choice(a, b, s, i, cf=cf, vx=vx, vy=vy):
            return np.where(cf(a, b, s, i), vx, vy)
        ps = []
        for form, sel in (("q", "%s ? %s : %s" % (csrc, x, y)), ("w", "where(%s, %s, %s)" % (csrc, x, y))):
            ps += [
                ("{z} = %s;" % sel, lambda a, b, s, i, ch=choice, t=t: store(ch(a, b, s, i), t)),
                ("{z} = (%s) * a;" % sel,
                 lambda a, b, s, i, ch=choice, t=t, fl=fl: store(meet(ch(a, b, s, i), fl, t, a, np.multiply), t)),
            ]
            if form == "w":
                break
            ps += [
                ("{z} = (%s) / 2 + a;" % sel,
                 lambda a, b, s, i, ch=choice, t=t, fl=fl: store(meet(tdiv(ch(a, b, s, i), 2), fl, t, a, np.add), t)),
                ("let {u} = %s; {z} = {u} + b;" % sel,
                 lambda a, b, s, i, ch=choice, t=t, fl=fl: store(meet(ch(a, b, s, i), fl, t, b, np.add), t)),
                ("let {u}: %s = %s; {z} = {u} - b;" % (t, sel),
                 lambda a, b, s, i, ch=choice, t=t: store(compute(store(ch(a, b, s, i), t), t) - compute(b, t), t)),
                ("{z} = pick(%s, %s, %s);" % (csrc, x, y),
                 lambda a, b, s, i, ch=choice, t=t: store(ch(a, b, s, i), t)),
                ("{z} = pick2(%s, %s, %s, a);" % (csrc, x, y),
                 lambda a, b, s, i, ch=choice, t=t, fl=fl: store(meet(ch(a, b, s, i), fl, t, a, np.add), t)),
                ("{z} = twice_%s(%s);" % (t, sel),
                 lambda a, b, s, i, ch=choice, t=t: store(compute(store(ch(a, b, s, i), t), t) * 2, t)),
                ("{z} = a > 0 ? (%s) : %s;" % (sel, y),
                 lambda a, b, s, i, ch=choice, t=t, vy=vy: store(np.where(a > 0, ch(a, b, s, i), vy), t)),
            ]
        name = "e_%s_%d_%s" % (t, pi, cname)
        cases.append(kernel("elementwise", name, "a: %s[], b: %s[], s: i32" % (t, t), t, ps))
    return cases


RED_TYPES = ["f64", "f32", "i64", "i32"]


def total(xv, t):
    """sum(x): f32 accumulates in f32, f64 in f64, integers in i64 (exact here)."""
    return xv.astype(NPT[t] if t[0] == "f" else np.int64).sum(axis=-1)


def reduction_cases():
    cases = []
    for t, (pi, (x, y)) in itertools.product(RED_TYPES, enumerate(PAIRS)):
        vx, vy, fl = weak(x, y)
        sel = "x > 0 ? %s : %s" % (x, y)

        def choice(xv, vx=vx, vy=vy):
            return np.where(xv > 0, vx, vy)

        def epi(xv, s, t=t, vx=vx, vy=vy):
            return store(np.where(xv == xv.max(axis=-1, keepdims=True), vx, vy), t)
        ps = [
            ("{z} = sum(%s);" % sel, lambda xv, s, ch=choice, t=t: store(ch(xv).sum(axis=-1), t)),
            ("{z} = max(%s);" % sel, lambda xv, s, ch=choice, t=t: store(ch(xv).max(axis=-1), t)),
            ("{z} = min(where(x > 0, %s, %s));" % (x, y),
             lambda xv, s, ch=choice, t=t: store(ch(xv).min(axis=-1), t)),
            ("{z} = reduce(%s, 0, |p, q| p + q);" % sel,
             lambda xv, s, ch=choice, t=t: store(ch(xv).sum(axis=-1), t)),
            # the identity: a choice on a scalar parameter
            ("{z} = reduce(x, s > 1 ? -100 : -200, |p, q| max(p, q));",
             lambda xv, s, t=t: store(compute(xv, t).max(axis=-1), t)),
            # the combine: a choice on a scalar (s > 1: the sum; s = 0 is not checked)
            ("{z} = reduce(%s, 0, |p, q| s > 1 ? p + q : p);" % sel,
             lambda xv, s, ch=choice, t=t: store(ch(xv).sum(axis=-1), t) if s > 1 else None),
            # n: the same in every row (7)
            ("{z} = n > 3 ? %s : %s;" % (x, y), lambda xv, s, t=t, vx=vx: store(np.full(xv.shape[:-1], vx), t)),
            ("{z} = sum(x) * (n > 30 ? %s : %s);" % (x, y),
             lambda xv, s, t=t, vy=vy, fl=fl: store(meet(vy, fl, t if t[0] == "f" else "i64", total(xv, t),
                                                         np.multiply), t)),
            # a per-element epilogue: a choice after a reducer
            ("{z} = x == max(x) ? %s : %s;" % (x, y), epi, "full"),
        ]
        name = "r_%s_%d" % (t, pi)
        cases.append(kernel("reduction", name, "x: %s[], s: i32" % t, t, ps, reduced=True))
    return cases


FUNCS = "func pick(c, x, y) = c ? x : y;\nfunc pick2(c, x, y, v) = where(c, x, y) + v;\n" + \
    "".join("func twice_%s(v: %s) = v * 2;\n" % (t, t) for t in TYPES)

CASES = elementwise_cases() + reduction_cases()


def module():
    path = os.path.join(C.WORK, "weak_cases.nnk")
    os.makedirs(C.WORK, exist_ok=True)
    text = "// generated by tests/conformance/test_weak.py\n" + CONSTS + FUNCS + "".join(c.src for c in CASES)
    old = open(path).read() if os.path.exists(path) else None
    if old != text:
        with open(path, "w") as f:
            f.write(text)
    # -O0: the C is large (a kernel a case) and what is tested is what the
    # front end and the emitters make of it; -O2 builds are the other suites'
    return C.load(path, cflags=[f if f != "-O2" else "-O0" for f in C.CFLAGS])


rng = np.random.default_rng(11)


def _inputs(t, shape):
    # halves in [-3, 3] (integers for integer types): exact in every type, so
    # the reference's products and sums are exact too
    v = rng.integers(-6, 7, size=shape)
    return (v / 2.0).astype(NPT[t]) if t[0] == "f" else v.astype(NPT[t])


def test_cuda_target_compiles():
    """nnkc -S --target=cuda takes every case (the emulated run is emu-weak.sh)."""
    module()
    out = os.path.join(C.WORK, "weak_cases.cu")
    C.run([C.NNKC, "-S", "--target=cuda", os.path.join(C.WORK, "weak_cases.nnk"), "-o", out])
    C.check(os.path.getsize(out) > 0, "no CUDA written")


def test_elementwise():
    m = module()
    n = 0
    idx = np.arange(35).reshape(5, 7)
    for c in CASES:
        if c.reduction:
            continue
        t = c.name.split("_")[1]
        a, b = _inputs(t, (5, 7)), _inputs(t, (5, 7))
        for s in (0, 2):
            got = getattr(m, c.name)(a, b, s)
            for g, ref, body in zip(got, c.refs, c.bodies):
                C.equal(np.asarray(g).view(np.uint8), np.asarray(ref(a, b, s, idx)).view(np.uint8),
                        "%s (s=%d): bits of %s" % (c.name, s, body))
                n += 1
    C.check(n > 900, "only %d elementwise cases" % n)


def test_reductions():
    m = module()
    n = 0
    for c in CASES:
        if not c.reduction:
            continue
        t = c.name.split("_")[1]
        x = _inputs(t, (4, 7))
        for s in (0, 2):
            got = getattr(m, c.name)(x, s, axes=(1,))
            for g, ref, body in zip(got, c.refs, c.bodies):
                w = ref(x, s)
                if w is None:
                    continue
                # sums of 0.1 and 0.3 depend on the order of the additions
                C.close(np.asarray(g), np.asarray(w), t, ulp=2 if t[0] == "f" else 0,
                        what="%s (s=%d): %s" % (c.name, s, body))
                n += 1
    C.check(n > 300, "only %d reduction cases" % n)


if __name__ == "__main__":
    sys.exit(C.main(globals()))
