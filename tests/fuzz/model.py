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
import contextlib
import math

import numpy as np

# the language's values include overflows, NaNs and divisions by zero, of
# which numpy's warnings say nothing: ignored once for all the fuzzer's
# modules (an np.errstate around each operation was a tenth of the
# oracle's time); QUIET stands where one was
np.seterr(all="ignore")
QUIET = contextlib.nullcontext()

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
SIGNED = ["i8", "i16", "i32", "i64"]
UNSIGNED = ["u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
SCALARS = ["bool"] + INTS + FLOATS
WEAK = ("wint", "wfloat", "wcomplex")
# complex numbers (language.md, "Complex numbers"): pairs of their part
# type; an imaginary literal (2.5j) is the weak "wcomplex"
COMPLEX = ["c64", "c128"]
PART = {"c64": "f32", "c128": "f64", "wcomplex": "wfloat"}
BITS = {"bool": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
        "f16": 16, "bf16": 16, "f32": 32, "f64": 64}
CLASSES = {"float": FLOATS, "int": SIGNED, "uint": UNSIGNED, "num": INTS + FLOATS, "any": SCALARS}
# the classes with the complex types (language.md: num and any include them)
CLASSES_CX = {"float": FLOATS, "int": SIGNED, "uint": UNSIGNED, "num": INTS + FLOATS + COMPLEX,
              "any": SCALARS + COMPLEX, "complex": COMPLEX}
CLASS_DEFAULT = {"float": "f32", "int": "i32", "uint": "u32", "num": "f32", "any": "f32", "complex": "c64"}
EPS = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f32": 2.0 ** -23, "f64": 2.0 ** -52}


def is_int(t): return t in INTS
def is_float(t): return t in FLOATS
def is_uns(t): return t in UNSIGNED
def is_weak(t): return t in WEAK
def is_complex(t): return t in COMPLEX or t == "wcomplex"


class Invalid(Exception):
    """The program breaks a rule of the language (the generator repairs it)."""


# ---- type rules (language.md section 3, Promotion) -----------------------------

def promote(a, b):
    if a == b:
        return a
    if is_complex(a) or is_complex(b):
        return promote_complex(a, b)
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


def promote_complex(a, b):
    """language.md: the complex type whose part holds both (c64 + f64 is
    c128); an integer meets a complex type as it meets a float (c64 + i32
    is c64, a decision: numpy says c128); an imaginary literal takes the
    complex type of the other operand's precision (c64 for f16, bf16 and
    f32, c128 for f64, integers and bools), a real literal the complex
    type it meets."""
    if is_weak(a) and is_weak(b):
        return "wcomplex"
    if is_weak(b):
        a, b = b, a
    if is_weak(a):
        if is_complex(b):
            return b
        return "c64" if b in ("f16", "bf16", "f32") else "c128"
    return "c128" if "c128" in (a, b) or "f64" in (a, b) else "c64"


def concrete(t):
    return {"wint": "i64", "wfloat": "f64", "wcomplex": "c128"}.get(t, t)


def compute_dtype(t):
    if is_complex(t):
        return np.complex64 if t == "c64" else np.complex128
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
    if is_complex(t) and op not in ("+", "-", "*", "/", "==", "!="):
        raise Invalid(op + " complex")          # complex numbers have no order
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


# the functions of complex values (language.md, "Complex numbers"): those
# giving the complex type, and real/imag/conj/arg/complex (also of reals)
CX_FUNCS = ("exp", "log", "sqrt", "pow", "sin", "cos", "tan", "sinh", "cosh", "tanh")
CX_BUILTINS = {"real": (1, "part", True), "imag": (1, "part", True), "conj": (1, "conj", True),
               "arg": (1, "arg", False), "complex": (2, "complex", True)}


def builtin_types(name, tys):
    """(argument type, result type) of a built-in call; where is handled apart."""
    if name in ("c64", "c128"):                 # c64(re, im)
        return PART[name], name
    nargs, rule, _ = BUILTINS.get(name) or EXT_BUILTINS.get(name) or CX_BUILTINS[name]
    t = tys[0]
    for u in tys[1:]:
        t = promote(t, u)
    if rule == "complex":
        if is_complex(t) or t == "bool":
            raise Invalid("complex() of " + t)
        if is_weak(t):
            raise Invalid("complex() of literals")  # (typed c128 or a literal: not said)
        return t, "c64" if t in ("f16", "bf16", "f32") else "c128"
    if is_complex(t):
        if is_weak(t) and name not in ("conj", "exp"):
            raise Invalid(name + " of a complex literal")   # language.md names conj(3j), exp(0.5j)
        if name in CX_FUNCS or rule == "conj":
            return t, t
        if name == "abs" or rule in ("part", "arg"):
            return t, PART[t]
        if rule == "pred" and name != "signbit":
            return t, "bool"
        raise Invalid(name + " complex")
    if rule in ("part", "conj"):
        # (of a literal: the literal, and imag a 0 literal of its kind)
        if t == "bool":
            raise Invalid(name + " " + t)
        return t, t
    if rule == "arg":
        # numpy's angle: integers give f64, a literal a float literal
        if t == "bool":
            raise Invalid(name + " " + t)
        return t, t if is_float(t) or t == "wfloat" else "wfloat" if t == "wint" else "f64"
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
    if t in COMPLEX and name in ("sum", "prod", "mean"):
        return t                                # no wider accumulator
    if t in COMPLEX and name not in ("any", "all"):
        raise Invalid(name + " of complex values")
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
    with QUIET:
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
    with QUIET:
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
    with QUIET:
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
    if is_complex(to):
        if is_complex(frm):
            # c64 <-> c128: each part converted (rounded to nearest)
            v = np.asarray(v)
            return mk_complex(np.asarray(v.real), np.asarray(v.imag), to)
        # a real value: imaginary part 0
        return mk_complex(convert(v, frm, PART[to], explicit), 0.0, to)
    if is_complex(frm):
        # to a real type: the real part (numpy's astype)
        return convert(np.asarray(np.asarray(v).real), PART[frm], to, explicit)
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
    with QUIET:
        return np.asarray(v, dtype=compute_dtype(to))


def mk_complex(re, im, t):
    """The complex value of type t (c64, c128; wcomplex computes in c128)
    whose parts are re and im, each converted to the part type."""
    dt = compute_dtype("c128" if t == "wcomplex" else t)
    with QUIET:
        re = np.asarray(re).astype(dt(0).real.dtype)
        im = np.asarray(im).astype(dt(0).real.dtype)
        re, im = np.broadcast_arrays(re, im)
        r = np.empty(re.shape, dtype=dt)
        r.real = re
        r.imag = im
    return r


def storage_round(v, t):
    """A value stored to (and read back from) type t."""
    if t in ("f16", "bf16"):
        return round_half(v, t)
    return v
