"""model - the semantics of the .nnk language (docs/language.md) written
once more, in Python and numpy, independently of the compiler's code: the
type rules the program generator uses to stay valid, and the evaluator the
fuzzer's oracle is made of.

Values: a typed value is a numpy array (broadcastable to the iteration
shape): bool as np.bool_, integers as arrays of Python ints (object dtype,
already wrapped to the type's width), f16/bf16/f32 as np.float32 (their
compute type: f16 and bf16 values compute in f32), f64 as np.float64.  A
weak (literal) value is a Python int ('wint') or float ('wfloat').
"""
import math

import numpy as np

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
SIGNED = ["i8", "i16", "i32", "i64"]
UNSIGNED = ["u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
SCALARS = ["bool"] + INTS + FLOATS
WEAK = ("wint", "wfloat")
BITS = {"bool": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
        "f16": 16, "bf16": 16, "f32": 32, "f64": 64}
CLASSES = {"float": FLOATS, "int": SIGNED, "uint": UNSIGNED, "num": INTS + FLOATS, "any": SCALARS}
CLASS_DEFAULT = {"float": "f32", "int": "i32", "uint": "u32", "num": "f32", "any": "f32"}
EPS = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f32": 2.0 ** -23, "f64": 2.0 ** -52}


def is_int(t): return t in INTS
def is_float(t): return t in FLOATS
def is_uns(t): return t in UNSIGNED
def is_weak(t): return t in WEAK


class Invalid(Exception):
    """The program breaks a rule of the language (the generator repairs it)."""


# ---- type rules (language.md section 3, Promotion) -----------------------------

def promote(a, b):
    if a == b:
        return a
    if is_weak(a) and is_weak(b):
        return "wfloat"
    if is_weak(b):
        a, b = b, a
    if a == "wint":
        return "i64" if b == "bool" else b
    if a == "wfloat":
        return b if is_float(b) else "f64"
    if a == "bool":
        return b
    if b == "bool":
        return a
    if is_float(a) and is_float(b):
        if BITS[a] != BITS[b]:
            return a if BITS[a] > BITS[b] else b
        return "f32"                              # f16 with bf16
    if is_float(a):
        return a
    if is_float(b):
        return b
    if is_uns(a) == is_uns(b):
        return a if BITS[a] >= BITS[b] else b
    s, u = (a, b) if not is_uns(a) else (b, a)
    if BITS[s] > BITS[u]:
        return s
    return {8: "i16", 16: "i32", 32: "i64"}.get(BITS[u], "f64")


def concrete(t):
    return {"wint": "i64", "wfloat": "f64"}.get(t, t)


def compute_dtype(t):
    return np.float64 if t in ("f64", "wfloat") else np.float32


UNOPS = ["-", "!", "~", "+"]
BINOPS = ["||", "&&", "|", "^", "&", "==", "!=", "<", "<=", ">", ">=", "<<", ">>", "+", "-", "*", "/", "%"]
PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
        "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
COMPARE = ("==", "!=", "<", "<=", ">", ">=")


def unop_type(op, t):
    if op == "-" and t == "bool":
        raise Invalid("neg bool")
    if op == "!":
        return "bool"
    if op == "~" and not (is_int(t) or t in ("wint", "bool")):
        raise Invalid("~ float")
    return t


def binop_types(op, ta, tb):
    """(operand type, result type) of a binary operator."""
    if op in ("&&", "||"):
        return "bool", "bool"
    t = promote(ta, tb)
    if op in ("%", "<<", ">>") and not (is_int(t) or t == "wint"):
        raise Invalid(op)
    if op in ("&", "|", "^") and not (is_int(t) or t in ("wint", "bool")):
        raise Invalid(op)
    if op in ("+", "-", "*", "/") and t == "bool":
        t = "i64"
    return t, ("bool" if op in COMPARE else t)


# name: (nargs, rule, exact)   rules as language.md's table; exact: the
# generated code must give the correctly rounded (or exact) result
BUILTINS = {
    "sqrt": (1, "float", True), "rsqrt": (1, "float", False), "cbrt": (1, "float", False),
    "exp": (1, "float", False), "exp2": (1, "float", False), "expm1": (1, "float", False),
    "log": (1, "float", False), "log2": (1, "float", False), "log10": (1, "float", False),
    "log1p": (1, "float", False), "sin": (1, "float", False), "cos": (1, "float", False),
    "tan": (1, "float", False), "asin": (1, "float", False), "acos": (1, "float", False),
    "atan": (1, "float", False), "sinh": (1, "float", False), "cosh": (1, "float", False),
    "tanh": (1, "float", False), "asinh": (1, "float", False), "acosh": (1, "float", False),
    "atanh": (1, "float", False), "erf": (1, "float", False), "erfc": (1, "float", False),
    "lgamma": (1, "float", False), "tgamma": (1, "float", False), "sigmoid": (1, "float", False),
    "atan2": (2, "float", False), "pow": (2, "float", False), "hypot": (2, "float", False),
    "fmod": (2, "float", True), "copysign": (2, "float", True), "fma": (3, "float", False),
    "floor": (1, "round", True), "ceil": (1, "round", True), "round": (1, "round", True),
    "trunc": (1, "round", True), "abs": (1, "num", True), "sign": (1, "num", True), "relu": (1, "num", True),
    "min": (2, "num", True), "max": (2, "num", True), "clamp": (3, "num", True),
    "where": (3, "select", True), "isnan": (1, "pred", True), "isinf": (1, "pred", True),
    "isfinite": (1, "pred", True),
}


# built-ins added to the language after the generator was written: drawn
# from gen.py's EXT stream, so that older seeds keep their programs
EXT_BUILTINS = {"nextafter": (2, "float", True), "signbit": (1, "pred", True)}


def builtin_types(name, tys):
    """(argument type, result type) of a built-in call; where is handled apart."""
    nargs, rule, _ = BUILTINS[name] if name in BUILTINS else EXT_BUILTINS[name]
    t = tys[0]
    for u in tys[1:]:
        t = promote(t, u)
    if rule == "float":
        if t == "wint":
            t = "wfloat"
        elif not (is_float(t) or t == "wfloat"):
            t = "f64"
        return t, t
    if rule in ("num", "round"):
        if t == "bool":
            raise Invalid(name + " bool")
        return t, t
    if rule == "pred":
        return t, "bool"
    raise AssertionError(name)


REDUCERS = ["sum", "prod", "mean", "max", "min", "any", "all", "argmax", "argmin"]


def reducer_type(name, t):
    t = concrete(t)
    if name in ("sum", "prod"):
        return t if is_float(t) else ("u64" if is_uns(t) else "i64")
    if name == "mean":
        return t if is_float(t) else "f64"
    if name in ("max", "min"):
        return t
    if name in ("any", "all"):
        return "bool"
    return "i64"


def accum_type(t):
    t = concrete(t)
    if is_float(t):
        return "f64" if t == "f64" else "f32"
    return "u64" if is_uns(t) else "i64"


# ---- values ----------------------------------------------------------------------

def wrap_int(v, t):
    """Python ints (scalar or object array) wrapped to integer type t."""
    b = BITS[t]
    m = 1 << b
    if is_uns(t):
        return v % m
    h = 1 << (b - 1)
    return (v + h) % m - h


def obj(a):
    """An array of Python ints (numpy integers would overflow)."""
    if isinstance(a, (list, tuple)):
        return np.array(a, dtype=object)
    a = np.asarray(a)
    return a if a.dtype == object else a.astype(object)


def _f64_odd(d):
    """f64 array -> f32 rounded to odd (exact values stay; others truncated
    toward zero with the last bit set): then rounding that to f16/bf16 is
    the correct rounding of the f64."""
    d = np.asarray(d, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = d.astype(np.float32)
        u = f.view(np.uint32).copy()
        inexact = (f.astype(np.float64) != d) & ~np.isnan(d)
        away = np.abs(f.astype(np.float64)) > np.abs(d)
        u = np.where(inexact & away, u - 1, u)
        u = np.where(inexact, u | 1, u)
    return u.astype(np.uint32).view(np.float32)


def int_to_f64_odd(v):
    """Python int -> float, rounded to odd at 53 bits (so a later rounding to
    fewer bits is correct)."""
    a = abs(v)
    if a >> 53:
        sh = a.bit_length() - 53
        a = ((a >> sh) | (1 if a & ((1 << sh) - 1) else 0)) << sh
    return float(a) if v >= 0 else -float(a)


def f32_to_bf16_value(f):
    """f32 array -> the bf16 value nearest (ties to even), as f32."""
    f = np.asarray(f, dtype=np.float32)
    shape = f.shape
    f = np.atleast_1d(f)
    u = f.view(np.uint32).astype(np.int64)
    nan = np.isnan(f)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    r = np.where(nan, ((u >> 16) | 0x40) & 0xFFFF, r)
    return (r.astype(np.uint32) << 16).view(np.float32).reshape(shape)


def round_half(f, t, from64=False):
    """Rounds compute values to storage precision: f16 or bf16 (as f32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if from64:
            f = _f64_odd(f)
        f = np.asarray(f, dtype=np.float32)
        if t == "f16":
            return f.astype(np.float16).astype(np.float32)
        return f32_to_bf16_value(f)


def int_to_float(v, t):
    """Object array of ints -> float type t (one rounding from the exact value)."""
    v = obj(v)
    if t == "f64":
        return np.vectorize(float, otypes=[np.float64])(v) if v.size else np.zeros(v.shape)
    odd = np.vectorize(int_to_f64_odd, otypes=[np.float64])(v) if v.size else np.zeros(v.shape)
    if t == "f32":
        return _round_f32(odd)
    return round_half(odd, t, from64=True)


def _round_f32(d):
    # an odd-rounded f64 (<= 53 bits) to f32: a plain RNE conversion is right
    with np.errstate(over="ignore"):
        return np.asarray(d, dtype=np.float64).astype(np.float32)


def float_to_int(f, t):
    """Truncate toward zero, saturate at t's range, NaN -> 0."""
    f = np.asarray(f, dtype=np.float64)
    b = BITS[t]
    lo, hi = (0, (1 << b) - 1) if is_uns(t) else (-(1 << (b - 1)), (1 << (b - 1)) - 1)

    def one(x):
        if x != x:
            return 0
        if x >= hi:
            return hi
        if x <= lo:
            return lo
        return int(x)            # truncates toward zero
    return np.vectorize(one, otypes=[object])(f) if f.size else obj(np.zeros(f.shape, dtype=np.int64))


def to_bool(v, t):
    if t == "bool":
        return np.asarray(v, dtype=np.bool_)
    if is_weak(t):
        return np.asarray(v != 0)
    if is_int(t):
        return np.asarray(obj(v) != 0, dtype=np.bool_)
    return np.asarray(v) != 0


def convert(v, frm, to, explicit=False):
    """The value v of type frm as type to.  Weak values: adopt (promotion)
    keeps f32 precision for f16/bf16, an explicit conversion rounds."""
    if frm == to:
        # f16(x) of an f16 value held in f32 rounds it (language.md section 3)
        return round_half(v, to) if explicit and to in ("f16", "bf16") else v
    if to == "bool":
        return to_bool(v, frm)
    if frm in WEAK:
        if to == "wfloat":
            return int_to_float(v, "f64") if frm == "wint" else v
        if to in ("f16", "bf16") and not explicit:
            # a literal meeting f16/bf16 keeps f32 precision (the compute type)
            return convert(v, "i64" if frm == "wint" else "f64", "f32")
        return convert(v, "i64" if frm == "wint" else "f64", to, explicit)
    if frm == "bool":
        b = np.asarray(v, dtype=np.bool_)
        if is_int(to):
            return obj(b.astype(np.int64))
        return b.astype(compute_dtype(to))
    if is_int(frm):
        if is_int(to):
            return obj(wrap_int(obj(v), to))
        return int_to_float(v, to)
    # frm is a float type
    if is_int(to):
        return float_to_int(v, to)
    if to in ("f16", "bf16"):
        if explicit or frm == "f64":
            return round_half(v, to, from64=(frm == "f64"))
        return np.asarray(v, dtype=np.float32)
    with np.errstate(over="ignore"):
        return np.asarray(v, dtype=compute_dtype(to))


def storage_round(v, t):
    """A value stored to (and read back from) type t."""
    if t in ("f16", "bf16"):
        return round_half(v, t)
    return v
