"""gen - random valid .nnk programs over the language of docs/language.md.

A program is one kernel (elementwise or reduction, generic or not) with
the consts and funcs it uses, as a tree (tuples; see oracle.ev) that
renders as .nnk text.  Every expression is typed while it is made, under
every binding of the kernel's type variables, by model.py's rules; an
operator whose operands break a rule (an integer-only operator on floats,
'-' on a bool) gets its operands converted, so the program stays valid.

AVOID (the --avoid option) names features the generator leaves out while
a known bug in them is open, so that a campaign can look for others:
  weak-select   a select/where of two literals (issue 11 part 1; fixed, no
                longer avoided by default)
  half-round    explicit f32 -> f16/bf16 conversions, typed lets and func
                parameters of f16/bf16, reading an f16/bf16 output back
                (issue 11 part 6; fixed, no longer avoided by default)
  bool-minmax   max/min reducers of bool (issue 11 part 4; fixed, no longer
                avoided by default)
  inplace       (nnkfuzz.py) calls with an output in an input's memory
                (issue 11 part 5)
The constructs added to the language after the generator was written
(EXT: each can be avoided by name too) are chosen from a random stream of
their own, decided once per program, so that a seed's program without
them is the program it always was:
  tuple         let (a, b, ...) = reduce((...), (...), |(..), (..)| (...))
  raw           raw x: T[] read by x[i], x[i, j], with shape(x, d) and
                index(d), in range (clamped) and out of range (NNK_ERANGE)
  inout         inout y: T[] (elementwise), read before and after it is
                assigned
  nextafter     nextafter(x, y) and signbit(x)
and, from a stream of its own again (CxGen):
  complex       c64/c128 parameters, imaginary literals, complex operations
                and built-ins, sum/prod/mean of complex values
"""
import contextlib
import random

from model import (BINOPS, BUILTINS, CX_FUNCS, EXT_BUILTINS, CLASS_DEFAULT, CLASSES, CLASSES_CX, COMPARE, COMPLEX, FLOATS,
                   INTS, PREC, REDUCERS, SCALARS, SIGNED, UNSIGNED, Invalid, binop_types, builtin_types, concrete,
                   is_complex, is_float, is_int, is_weak, promote, reducer_type, unop_type)

LEVEL = {"c": 0, "u": 1, "r": 2, "e": 3}
AVOID_ALL = ("weak-select", "half-round", "bool-minmax", "inplace", "tuple", "raw", "inout", "nextafter", "complex")
EXT = ("tuple", "raw", "inout", "nextafter")
# per program: the chance of each construct of EXT
EXT_CHANCE = {"tuple": 0.4, "raw": 0.2, "inout": 0.2, "nextafter": 0.2}
# Added later again, from a stream of their own (gen2: a seed's program
# without them is unchanged), each decided once per program:
#   cxreal     real(x), imag(x), conj(x), arg(x) of real values (literals and
#              consts too: arg(-1) crashed the constant folder)
#   cxgeneric  a generic kernel's type variable of class complex, or num or
#              any bound to c64/c128 (complex values then meet every
#              construct of the main generator, which keeps them valid:
#              an operator complex numbers lack converts its operands)
#   cxfunc     funcs with complex parameters (typed c64/c128, untyped, or
#              generic <V: complex|num|any>) and results, in complex
#              expressions and as typed parameters of the main generator's
#   cxmode     raw and inout parameters of c64/c128
#   o3         (reductions) the shapes nnkc -O3 rewrites (language.md, tuple
#              state): sum(exp(E - max(E))), one pass as an online softmax,
#              and mean or sum of (E - mean(E))^2, Welford's variance; one
#              batch in six is compiled with nnkc -O3 (nnkfuzz.py)
GEN2 = ("cxreal", "cxgeneric", "cxfunc", "cxmode", "o3")
GEN2_CHANCE = {"cxreal": 0.25, "cxgeneric": 0.5, "cxfunc": 0.3, "cxmode": 0.4, "o3": 0.3}
# the default: what is still open (weak-select was fixed by cb2bc58,
# half-round by 4160367, bool-minmax by a3ee6cc, inplace by 97c1404)
AVOID_DEFAULT = ()


class Param:
    def __init__(self, name, ty, tensor, default=None, mode=None, rank=0):
        self.name, self.ty, self.tensor, self.default = name, ty, tensor, default
        self.mode = mode            # None, "raw" (rank: its number of dimensions) or "inout"
        self.rank = rank


class Out:
    def __init__(self, name, ty, reduced, inout=False):
        self.name, self.ty, self.reduced = name, ty, reduced
        self.inout = inout          # an inout parameter's output (after the declared ones)


class Stmt:
    def __init__(self, kind, name, expr, ty=None):
        self.kind, self.name, self.expr, self.ty = kind, name, expr, ty


class Kernel:
    def __init__(self, name, kind):
        self.name, self.kind = name, kind
        self.generics = []          # (name, class)
        self.params, self.outs, self.body = [], [], []

    def out(self, name):
        return next(o for o in self.outs if o.name == name)


class Func:
    def __init__(self, name, params, result, body, generics=()):
        self.name, self.params, self.result, self.body = name, params, result, body
        self.generics = [tuple(g) for g in generics]   # (name, class): bound from the arguments


class Const:
    def __init__(self, name, ty, expr):
        self.name, self.ty, self.expr = name, ty, expr


class Program:
    def __init__(self, prefix):
        self.prefix = prefix
        self.consts = {}
        self.funcs = {}
        self.kernel = None
        self.bindings = [{}]        # the instances to test
        self.inst_lines = []        # instantiate lines (bindings)
        self.imported = False       # consts and funcs in a file of their own, imported

    def instance_name(self, b):
        k = self.kernel
        if not k.generics:
            return k.name
        return k.name + "_" + "_".join(b[g] for g, _ in k.generics)

    def render(self, lib=None):
        """The program's text; with lib (a file name) and self.imported, the
        kernel's file only, which imports lib (render_lib's text)."""
        if lib and self.imported:
            return 'import "%s";\n' % lib + self.render_kernel()
        return self.render_lib() + self.render_kernel()

    def render_lib(self):
        out = []
        for c in self.consts.values():
            out.append("const %s%s = %s;" % (c.name, ": " + c.ty if c.ty else "", expr_text(c.expr)))
        for f in self.funcs.values():
            ps = ", ".join(n + (": " + t if t else "") for n, t in f.params)
            gs = "<%s>" % ", ".join("%s: %s" % g for g in f.generics) if f.generics else ""
            out.append("func %s%s(%s)%s = %s;" % (f.name, gs, ps, " -> " + f.result if f.result else "",
                                                  expr_text(f.body)))
        return "".join(x + "\n" for x in out)

    def render_kernel(self):
        out = []
        k = self.kernel
        gens = "<%s>" % ", ".join("%s: %s" % g for g in k.generics) if k.generics else ""
        ps = []
        for p in k.params:
            s = "%s%s: %s%s" % (p.mode + " " if p.mode else "", p.name, p.ty, "[]" if p.tensor else "")
            if p.default is not None:
                s += " = " + expr_text(p.default)
            ps.append(s)
        os_ = ", ".join("%s: %s%s" % (o.name, o.ty, "" if o.reduced else "[]") for o in k.outs if not o.inout)
        body = []
        for st in k.body:
            if st.kind == "tlet":
                body.append("    let (%s) = %s;" % (", ".join(st.name), expr_text(st.expr)))
            elif st.kind == "let":
                body.append("    let %s%s = %s;" % (st.name, ": " + st.ty if st.ty else "", expr_text(st.expr)))
            else:
                body.append("    %s = %s;" % (st.name, expr_text(st.expr)))
        out.append("%s %s%s(%s) -> (%s) {\n%s\n}" % (k.kind, k.name, gens, ", ".join(ps), os_, "\n".join(body)))
        if self.inst_lines:
            out.append("instantiate %s;" % ", ".join(
                "%s<%s>" % (k.name, ", ".join(b[g] for g, _ in k.generics)) for b in self.inst_lines))
        return "\n".join(out) + "\n"


# ---- printing -----------------------------------------------------------------------

def lit_text(v, style):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if style == 1 and v >= 0:
            return hex(v)
        if style == 2 and v >= 10000:
            s = str(v)
            parts = []
            while len(s) > 3:
                parts.insert(0, s[-3:])
                s = s[:-3]
            return "_".join([s] + parts)
        return str(v)
    r = repr(float(v))
    if "inf" in r or "nan" in r:
        raise ValueError(r)
    if style == 1 and r.endswith(".0"):
        return r[:-1]                           # 1.
    if style == 2 and r.startswith("0."):
        return r[1:]                            # .5
    if style == 3 and "e" in r:
        return r.replace("e", "E")
    return r


def expr_text(e, parent=0, right=False):
    k = e[0]
    if k in ("lit", "u64lit"):
        return lit_text(e[1], e[2] if len(e) > 2 else 0)
    if k == "ilit":                             # an imaginary literal: 2.5j, 1j
        return (str(e[1]) if isinstance(e[1], int) else lit_text(e[1], e[2])) + "j"
    if k == "bool":
        return "true" if e[1] else "false"
    if k == "name":
        return e[2]
    if k == "idx":
        return "idx"
    if k == "n":
        return "n"
    if k == "un":
        a = e[2]
        s = expr_text(a, 11)
        if a[0] in ("un", "sel"):
            s = "(" + s + ")"
        return e[1] + s
    if k == "bin":
        p = PREC[e[1]]
        s = "%s %s %s" % (expr_text(e[2], p, False), e[1], expr_text(e[3], p, True))
        if p < parent or (p == parent and right):
            s = "(" + s + ")"
        return s
    if k == "sel":
        if e[1] == "where":
            return "where(%s, %s, %s)" % (expr_text(e[2]), expr_text(e[3]), expr_text(e[4]))
        s = "%s ? %s : %s" % (expr_text(e[2], 1), expr_text(e[3], 0), expr_text(e[4], 0))
        return "(" + s + ")" if parent > 0 else s
    if k == "cast":
        return "%s(%s)" % (e[1], expr_text(e[2]))
    if k in ("call", "fcall"):
        return "%s(%s)" % (e[1], ", ".join(expr_text(a) for a in e[2]))
    if k == "red":
        return "%s(%s)" % (e[1], expr_text(e[2]))
    if k == "reduce":
        c = "max(a, b)" if e[3] == "max" else "min(a, b)" if e[3] == "min" else "a %s b" % e[3]
        return "reduce(%s, %s, |a, b| %s)" % (expr_text(e[1]), expr_text(e[2]), c)
    if k == "treduce":
        nv = len(e[1])
        cs = [None] * nv
        for j, sp in enumerate(e[3]):
            a, b = "a%d" % j, "b%d" % j
            if sp[0] == "op":
                cs[j] = "%s(%s, %s)" % (sp[1], a, b) if sp[1] in ("max", "min") else "%s %s %s" % (a, sp[1], b)
            elif sp[0] == "sel":
                # (value, index) pairs: the larger (smaller) value, ties to the smaller index
                _, cmp, q = sp
                take = "b{v} {c} a{v} || (b{v} == a{v} && b{i} < a{i})".format(v=j, i=q, c=cmp)
                cs[j] = "%s ? b%d : a%d" % (take, j, j)
                cs[q] = "%s ? b%d : a%d" % (take, q, q)
        return "reduce((%s), (%s), |(%s), (%s)| (%s))" % (
            ", ".join(expr_text(x) for x in e[1]), ", ".join(expr_text(x) for x in e[2]),
            ", ".join("a%d" % j for j in range(nv)), ", ".join("b%d" % j for j in range(nv)), ", ".join(cs))
    if k == "raw":
        return "%s[%s]" % (e[1], ", ".join(expr_text(x) for x in e[2]))
    if k == "shape":
        return "shape(%s, %d)" % (e[1], e[2])
    if k == "index":
        return "index(%d)" % e[1]
    raise AssertionError(k)


# ---- the generator -----------------------------------------------------------------------

INT_LITS = [0, 1, 2, 3, 4, 5, 7, 8, 10, 15, 16, 31, 32, 33, 63, 64, 65, 100, 127, 128, 200, 255, 256, 1000,
            32767, 32768, 65535, 65536, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 53 + 1, 2 ** 63 - 1]
FLOAT_LITS = [0.0, 0.5, 1.0, 1.5, 2.0, 0.1, 0.25, 1e-3, 3.14159, 2.718281828459045, 10.0, 100.0, 1e10, 65504.0,
              65520.0, 1e30, 1e-30, 2.5e10, 0.044715, 7.0, 1e300, 3.4028235677973366e+38, 1e-45]


class Typed:
    """An expression being made: node, types (one per binding), level."""
    __slots__ = ("e", "ts", "lv")

    def __init__(self, e, ts, lv):
        self.e, self.ts, self.lv = e, ts, lv

    @property
    def weak(self):
        return is_weak(self.ts[0])


def lmax(*ls):
    return max(ls, key=lambda l: LEVEL[l])


def any_cx(x):
    """Whether the Typed x is complex under some binding."""
    return any(is_complex(t) for t in x.ts)


def weighted(rng, opts):
    """One of opts, [(choice, weight)], drawn from rng by weight."""
    x = rng.random() * sum(w for _, w in opts)
    for k, w in opts:
        x -= w
        if x < 0:
            break
    return k


class Gen:
    def __init__(self, rng, prefix, avoid=(), size=1.0, tlist=(), xrng=None):
        self.r = rng
        # the stream of the EXT constructs (see the top of the file)
        self.xr = xrng or random.Random(0)
        self.ext_on = set()
        # the stream of the GEN2 constructs, and those of this program
        self.nr = random.Random(1)
        self.gen2_on = set()
        self.raws, self.inouts = [], []
        self.tlist = list(tlist)
        self.avoid = set(avoid)
        self.size = size
        self.p = Program(prefix)
        self.prefix = prefix
        self.nfunc = 0
        self.nconst = 0

    # -- helpers
    @contextlib.contextmanager
    def ext(self, stream=None):
        """Draws from the EXT stream (or stream) while an EXT construct is made."""
        saved = self.r
        self.r = stream or self.xr
        try:
            yield
        finally:
            self.r = saved

    def chance(self, x):
        return self.r.random() < x

    def pick(self, xs):
        return self.r.choice(xs)

    def types_of(self, f, *args):
        """f applied per binding; Invalid if any binding breaks a rule."""
        return tuple(f(*a) for a in zip(*args))

    def binding_types(self, ty):
        return tuple(b.get(ty, ty) for b in self.check_bindings)

    def cast(self, x, ty):
        ts = self.binding_types(ty)
        if "half-round" in self.avoid and any(t in ("f16", "bf16") for t in ts) and \
                any(is_float(u) for u in x.ts):
            ty = "f32"
            ts = self.binding_types(ty)
        return Typed(("cast", ty, x.e), ts, x.lv)

    def int_type(self):
        return self.pick(INTS)

    def scalar_type(self, allow_vars=True):
        if allow_vars and self.p.kernel is not None and self.p.kernel.generics and self.chance(0.4):
            return self.pick(self.p.kernel.generics)[0]
        return self.pick(SCALARS)

    # -- leaves
    def literal(self):
        x = self.r.random()
        if x < 0.05:
            return Typed(("bool", self.chance(0.5)), ("bool",) * self.nb, "c")
        if x < 0.5:
            v = self.pick(INT_LITS) if self.chance(0.7) else self.r.randrange(0, 300)
            e = ("lit", v, self.r.randrange(3))
            t = Typed(e, ("wint",) * self.nb, "c")
        elif x < 0.52 and "u64" not in self.avoid:
            v = self.pick([2 ** 64 - 1, 2 ** 63, 2 ** 63 + 5])
            return Typed(("u64lit", v, self.r.randrange(2)), ("u64",) * self.nb, "c")
        else:
            v = self.pick(FLOAT_LITS) if self.chance(0.7) else round(self.r.uniform(0, 10), self.r.randrange(1, 6))
            t = Typed(("lit", v, self.r.randrange(4)), ("wfloat",) * self.nb, "c")
        if self.chance(0.25):
            t = Typed(("un", "-", t.e), t.ts, "c")
        return t

    def leaf(self, maxlv, scope):
        if scope is None and LEVEL[maxlv] >= LEVEL["e"] and (self.raws or self.inouts) and \
                self.xr.random() < 0.25:
            with self.ext():
                return self.ext_leaf()
        opts = [("lit", 3)]
        if self.p.consts:
            opts.append(("const", 1))
        if scope is not None:
            fps = [f for f in scope["fparams"] if LEVEL[f[2]] <= LEVEL[maxlv]]
            if fps:
                opts.append(("fparam", 4))
        else:
            if LEVEL[maxlv] >= LEVEL["u"]:
                if self.scalars:
                    opts.append(("scalar", 2))
                if self.kern.kind == "reduction":
                    opts.append(("n", 1))
            if LEVEL[maxlv] >= LEVEL["e"]:
                opts.append(("tensor", 8))
                opts.append(("idx", 1))
            lets = [v for v in self.visible if LEVEL[v[2]] <= LEVEL[maxlv]]
            if lets:
                opts.append(("let", 5))
        k = weighted(self.r, opts)
        if k == "lit":
            return self.literal()
        if k == "const":
            c = self.p.consts[self.pick(list(self.p.consts))]
            ts = (c.ty,) * self.nb if c.ty else self.const_types[c.name]
            return Typed(("name", "const", c.name), ts, "c")
        if k == "fparam":
            n, ts, lv = self.pick(fps)
            return Typed(("name", "fparam", n), ts, lv)
        if k == "scalar":
            p = self.pick(self.scalars)
            return Typed(("name", "param", p.name), self.binding_types(p.ty), "u")
        if k == "n":
            return Typed(("n",), ("i64",) * self.nb, "u")
        if k == "tensor":
            p = self.pick(self.tensors)
            return Typed(("name", "param", p.name), self.binding_types(p.ty), "e")
        if k == "idx":
            return Typed(("idx",), ("i64",) * self.nb, "e")
        name, ts, lv, kind = self.pick(lets)
        return Typed(("name", kind, name), ts, lv)

    def ext_leaf(self):
        """A read of a raw or inout parameter, shape(x, d) or index(d)."""
        i64 = ("i64",) * self.nb
        if self.inouts and (not self.raws or self.chance(0.5)):
            p = self.pick(self.inouts)
            return Typed(("name", "param", p.name), self.binding_types(p.ty), "e")
        p = self.pick(self.raws)
        x = self.r.random()
        if x < 0.12:
            return Typed(("shape", p.name, self.r.randrange(p.rank)), i64, "e")
        if x < 0.22:
            # index(d) beyond the iteration space's rank is NNK_ERANGE
            return Typed(("index", 0 if self.chance(0.6) else self.r.randrange(1, 4)), i64, "e")
        multi = p.rank > 1 and self.chance(0.5)
        n = p.rank if multi else 1
        if self.chance(0.03):
            n = n + 1 if n == 1 or self.chance(0.5) else n - 1      # the wrong number of indices
        idxs = []
        for d in range(n):
            e = self.expr(self.r.randrange(0, 3), "e", None, in_red=True)
            if not all(is_int(t) for t in e.ts):
                e = self.cast(e, "i64")
            if self.chance(0.9):
                # clamped into range, as docs/language.md's gather
                if multi:
                    bound = ("shape", p.name, d)
                else:
                    bound = ("shape", p.name, 0)
                    for k in range(1, p.rank):
                        bound = ("bin", "*", bound, ("shape", p.name, k))
                e = Typed(("call", "clamp", [("cast", "i64", e.e), ("lit", 0, 0), ("bin", "-", bound, ("lit", 1, 0))]),
                          i64, "e")
            idxs.append(e.e)
        return Typed(("raw", p.name, tuple(idxs)), self.binding_types(p.ty), "e")

    # -- expressions
    def expr(self, depth, maxlv="e", scope=None, in_red=False):
        if depth <= 0 or self.chance(0.25):
            return self.leaf(maxlv, scope)
        x = self.r.random()
        red_ok = self.kern.kind == "reduction" and not in_red and LEVEL[maxlv] >= LEVEL["r"] and \
            (scope is None or scope.get("red_ok"))
        if red_ok and x < 0.22:
            return self.reducer(depth, scope)
        if x < 0.30:
            return self.unop(depth, maxlv, scope, in_red)
        if x < 0.62:
            return self.binop(depth, maxlv, scope, in_red)
        if x < 0.70:
            return self.select(depth, maxlv, scope, in_red)
        if x < 0.77:
            a = self.expr(depth - 1, maxlv, scope, in_red)
            return self.cast(a, self.scalar_type(scope is None))
        if x < 0.92:
            return self.call(depth, maxlv, scope, in_red)
        if scope is None and x < 0.97 and self.nfunc < 3:
            return self.fcall(depth, maxlv, in_red)
        return self.binop(depth, maxlv, scope, in_red)

    def sub(self, depth, maxlv, scope, in_red):
        return self.expr(depth - 1, maxlv, scope, in_red)

    def unop(self, depth, maxlv, scope, in_red):
        op = self.pick(["-", "-", "!", "~", "+"])
        a = self.sub(depth, maxlv, scope, in_red)
        if op in ("-", "+") and "bool" in a.ts:
            a = self.cast(a, self.pick(SIGNED + ["f32", "f64"]))
        if op == "~" and any(not (is_int(t) or t in ("wint", "bool")) for t in a.ts):
            a = self.cast(a, self.int_type())
        ts = tuple(unop_type(op, t) for t in a.ts)
        return Typed(("un", op, a.e), ts, a.lv)

    def binop(self, depth, maxlv, scope, in_red):
        op = self.pick(BINOPS + ["+", "-", "*", "/", "<<", ">>", "%", "<", "=="])
        a = self.sub(depth, maxlv, scope, in_red)
        b = self.sub(depth, maxlv, scope, in_red)
        if op in ("<<", ">>") and self.chance(0.5):
            b = Typed(("lit", self.pick([0, 1, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100]), 0),
                      ("wint",) * self.nb, "c")
            if self.chance(0.2):
                b = Typed(("un", "-", b.e), b.ts, "c")
        for _ in range(3):
            try:
                ts = tuple(binop_types(op, x, y) for x, y in zip(a.ts, b.ts))
                break
            except Invalid:
                it = self.int_type()
                if op in ("&", "|", "^") and self.chance(0.2):
                    it = "bool"
                if not (a.weak and a.ts[0] == "wint"):
                    a = self.cast(a, it)
                if not (b.weak and b.ts[0] == "wint"):
                    b = self.cast(b, it)
        else:
            raise Invalid("binop repair")
        return Typed(("bin", op, a.e, b.e), tuple(r for _, r in ts), lmax(a.lv, b.lv))

    def select(self, depth, maxlv, scope, in_red):
        c = self.sub(depth, maxlv, scope, in_red)
        a = self.sub(depth, maxlv, scope, in_red)
        b = self.sub(depth, maxlv, scope, in_red)
        if "weak-select" in self.avoid and a.weak and b.weak and c.lv != "c":
            a = self.cast(a, self.scalar_type(scope is None))
        ts = tuple(promote(x, y) for x, y in zip(a.ts, b.ts))
        form = "where" if self.chance(0.5) else "?"
        return Typed(("sel", form, c.e, a.e, b.e), ts, lmax(c.lv, a.lv, b.lv))

    def call(self, depth, maxlv, scope, in_red):
        if "nextafter" in self.ext_on and self.xr.random() < 0.25:
            with self.ext():
                return self.call_ext(depth, maxlv, scope, in_red)
        if "cxreal" in self.gen2_on and self.nr.random() < 0.2:
            with self.ext(self.nr):
                return self.call_part(depth, maxlv, scope, in_red)
        name = self.pick(list(BUILTINS))
        if name == "where":
            return self.select(depth, maxlv, scope, in_red)
        nargs, rule, _ = BUILTINS[name]
        args = [self.sub(depth, maxlv, scope, in_red) for _ in range(nargs)]
        for _ in range(2):
            try:
                ts = tuple(builtin_types(name, list(x)) for x in zip(*[a.ts for a in args]))
                break
            except Invalid:
                # (a complex argument of a function complex numbers lack: its real part)
                args = [self.cast(a, self.pick(INTS + FLOATS)) if "bool" in a.ts or any_cx(a) else a for a in args]
        else:
            raise Invalid("call repair")
        return Typed(("call", name, [a.e for a in args]), tuple(r for _, r in ts), lmax(*[a.lv for a in args]))

    def call_part(self, depth, maxlv, scope, in_red):
        """real(x), imag(x), conj(x), arg(x): of a real value (a literal or
        a const too), or of a complex one where there are."""
        name = self.pick(["real", "imag", "conj", "arg"])
        a = self.sub(depth, maxlv, scope, in_red)
        if "bool" in a.ts:
            a = self.cast(a, self.pick(INTS + FLOATS))
        ts = tuple(builtin_types(name, [t]) for t in a.ts)
        return Typed(("call", name, [a.e]), tuple(r for _, r in ts), a.lv)

    def call_ext(self, depth, maxlv, scope, in_red):
        name = self.pick(list(EXT_BUILTINS))
        nargs = EXT_BUILTINS[name][0]
        args = [self.sub(depth, maxlv, scope, in_red) for _ in range(nargs)]
        if name == "signbit":
            args = [self.cast(a, self.pick(INTS + FLOATS)) if "bool" in a.ts else a for a in args]
        # (nextafter and signbit of complex values: of their real parts)
        args = [self.cast(a, self.pick(FLOATS)) if any_cx(a) else a for a in args]
        ts = tuple(builtin_types(name, list(x)) for x in zip(*[a.ts for a in args]))
        return Typed(("call", name, [a.e for a in args]), tuple(r for _, r in ts), lmax(*[a.lv for a in args]))

    def custom(self, arg, scope):
        """reduce(arg, identity, op): (arg, identity, op, result types)."""
        ident = self.expr(1, "u", scope, in_red=True)
        rts = tuple(concrete(promote(x, y)) for x, y in zip(arg.ts, ident.ts))
        ops = ["+", "max", "min", "*"]
        if all(is_int(t) for t in rts):
            ops += ["|", "&", "^", "+", "*"]
        if any(t == "bool" for t in rts):
            ops = ["|", "&", "^"] if all(t == "bool" for t in rts) else ["max"]
            if ops == ["max"]:
                arg = self.cast(arg, "i32")
                rts = tuple(concrete(promote(x, y)) for x, y in zip(arg.ts, ident.ts))
        if any(is_complex(t) for t in rts):
            # a complex state: + from 0, * from 1 (no order for max and min)
            if not all(is_complex(t) for t in rts):
                arg = self.cast(arg, self.pick(COMPLEX))
            ops = ["+", "*"]
        op = self.pick(ops)
        if op in ("+", "^"):
            # the identity must be one: the back ends start every lane
            # and every block from it (max, min, |, & absorb any value)
            ident = Typed(("lit", 0, 0), ("wint",) * self.nb, "c")
        elif op == "*":
            ident = Typed(("lit", 1, 0), ("wint",) * self.nb, "c")
        rts = tuple(concrete(promote(x, y)) for x, y in zip(arg.ts, ident.ts))
        return arg, ident, op, rts

    def reducer(self, depth, scope):
        arg = self.expr(depth - 1, "e", scope, in_red=False)
        if self.chance(0.15):
            arg, ident, op, rts = self.custom(arg, scope)
            return Typed(("reduce", arg.e, ident.e, op), rts, "r")
        name = self.pick(REDUCERS)
        if name in ("max", "min", "argmax", "argmin") and "bool-minmax" in self.avoid and "bool" in arg.ts:
            arg = self.cast(arg, "i16")
        if name in ("max", "min", "argmax", "argmin") and any_cx(arg):
            arg = self.cast(arg, self.pick(FLOATS))
        ts = tuple(reducer_type(name, t) for t in arg.ts)
        return Typed(("red", name, arg.e), ts, "r")

    def fcall(self, depth, maxlv, in_red):
        nargs = self.r.randrange(1, 4)
        args = [self.sub(depth, maxlv, None, in_red) for _ in range(nargs)]
        params, fps = [], []
        generics = []
        typed = [i for i, a in enumerate(args) if not a.weak]
        gset = set()
        if typed and self.chance(0.3):
            # func f<V: class>(x: V, y: V): V is the promoted type of those arguments
            gset = {i for i in range(nargs) if i in typed[:1] or self.chance(0.5)}
            tv = args[min(gset)].ts
            for i in gset:
                tv = tuple(promote(x, y) for x, y in zip(tv, args[i].ts))
            tv = tuple(concrete(t) for t in tv)
            classes = CLASSES_CX if any(is_complex(t) for t in tv) else CLASSES
            cls = self.pick([c for c, ms in classes.items() if all(t in ms for t in tv)])
            if "half-round" in self.avoid and any(t in ("f16", "bf16") for t in tv):
                gset = set()
            else:
                generics = [("V", cls)]
        for i, a in enumerate(args):
            pn = "p%d" % i
            pty = None
            if i in gset:
                params.append((pn, "V"))
                fps.append((pn, tv, a.lv))
                continue
            if self.chance(0.35):
                pty = self.pick(SCALARS)
                if "half-round" in self.avoid and pty in ("f16", "bf16"):
                    pty = "f32"
                if "cxfunc" in self.gen2_on and self.nr.random() < 0.3:
                    pty = self.nr.choice(COMPLEX)
            params.append((pn, pty))
            fps.append((pn, (pty,) * self.nb if pty else a.ts, a.lv))
        scope = {"fparams": fps, "red_ok": self.kern.kind == "reduction" and not in_red and
                 LEVEL[maxlv] >= LEVEL["r"]}
        body = self.expr(max(depth - 1, 1), "e", scope, in_red)
        res = None
        ts = body.ts
        if self.chance(0.3):
            res = self.pick(SCALARS)
            if "half-round" in self.avoid and res in ("f16", "bf16"):
                res = "f64"
            if "cxfunc" in self.gen2_on and self.nr.random() < 0.2:
                res = self.nr.choice(COMPLEX)
            ts = (res,) * self.nb
        name = "%sf%d" % (self.prefix, self.nfunc)
        self.nfunc += 1
        self.p.funcs[name] = Func(name, params, res, body.e, generics)
        lv = lmax(*[a.lv for a in args] + [body.lv if body.lv == "r" else "c"])
        return Typed(("fcall", name, [a.e for a in args]), ts, lv)

    def tuple_reduce(self, depth):
        """let (v...) = reduce((e...), (i...), |(a...), (b...)| (c...)): values
        combined one by one as reduce()'s ops, or a (value, index) pair of
        integers (the larger or smaller value, ties to the smaller index: a
        total order, so the result does not depend on the order either)."""
        nv = self.r.randrange(2, 5)
        specs, es, ids, rts = [None] * nv, [None] * nv, [None] * nv, [None] * nv
        if self.chance(0.5):
            v, q = self.r.sample(range(nv), 2)
            specs[v], specs[q] = ("sel", self.pick([">", "<"]), q), ("pair", v)
            for j in (v, q):
                it = self.int_type()
                a = self.expr(depth - 1, "e", None, in_red=False)
                a = a if all(t == it for t in a.ts) else self.cast(a, it)
                ident = self.cast(self.expr(1, "u", None, in_red=True), it)
                es[j], ids[j], rts[j] = a.e, ident.e, a.ts
        for j in range(nv):
            if specs[j] is None:
                arg = self.expr(depth - 1, "e", None, in_red=False)
                arg, ident, op, ts = self.custom(arg, None)
                specs[j], es[j], ids[j], rts[j] = ("op", op), arg.e, ident.e, ts
        return ("treduce", tuple(es), tuple(ids), tuple(specs)), rts

    def ext_params(self, k):
        """The raw and inout parameters of a program that has them (after
        the others were made: the main stream is not disturbed)."""
        with self.ext():
            if "raw" in self.ext_on:
                for i in range(self.r.randrange(1, 3)):
                    p = Param("r%d" % i, self.mode_type(), True, mode="raw", rank=self.r.randrange(1, 4))
                    k.params.insert(self.r.randrange(len(k.params) + 1), p)
                    self.raws.append(p)
            if "inout" in self.ext_on and k.kind == "elementwise":
                for i in range(self.r.randrange(1, 3)):
                    p = Param("w%d" % i, self.mode_type(), True, mode="inout")
                    k.params.insert(self.r.randrange(len(k.params) + 1), p)
                    self.inouts.append(p)
            self.inouts.sort(key=lambda p: k.params.index(p))

    def o3_outs(self, k):
        """Outputs zo0 = sum(exp(E - max(E))), zo1 = mean((E - mean(E)) * (E -
        mean(E))) (or sum, or pow(E - mean(E), 2)): E a float expression of
        the elements, the same text each time (so one node).  Last; now and
        then one more output reads them (o3_use)."""
        uses = []
        for i in range(self.r.randrange(1, 3)):
            t = self.pick(["f32", "f64", "f32", "f16"])
            e = self.cast(self.expr(self.r.randrange(0, 3), "e", None, in_red=True), t)
            m = ("red", "max" if self.chance(0.5) else "mean", e.e)
            if m[1] == "max":
                body = ("red", "sum", ("call", "exp", [("bin", "-", e.e, m)]))
            else:
                d = ("bin", "-", e.e, m) if self.chance(0.7) else ("bin", "-", m, e.e)
                sq = ("bin", "*", d, d) if self.chance(0.7) else ("call", "pow", [d, ("lit", 2, 0)])
                body = ("red", self.pick(["mean", "sum"]), sq)
            name = "zo%d" % i
            ot = self.pick([t, "f32", "f64"])
            k.outs.append(Out(name, ot, True))
            k.body.append(Stmt("out", name, body))
            uses.append((name, self.binding_types(ot)))
        if self.chance(0.5):
            self.o3_use(k, uses)

    def o3_use(self, k, uses):
        """An output zq0 that reads one of the o3 outputs: a comparison,
        bool(), an integer conversion or arithmetic with another expression,
        per element or reduced.  Where a slice's E are all equal, Welford's
        variance is 0 and the two passes' the rounding error of the mean
        squared, which a comparison tells apart: the oracle models the one
        pass (oracle.py, ONE_PASS)."""
        name, ts = self.pick(uses)
        x = Typed(("name", "out", name), ts, "r")
        lv = "r" if self.chance(0.5) else "e"
        f = self.r.random()
        if f < 0.2:
            e = self.cast(x, "bool")
        elif f < 0.35:
            e = self.cast(x, self.int_type())
        else:
            op = self.pick(["<", ">", "==", "!=", "<=", ">=", "+", "-", "*", "/"])
            b = self.expr(self.r.randrange(0, 3), lv)
            try:
                tts = tuple(binop_types(op, u, v)[1] for u, v in zip(x.ts, b.ts))
            except Invalid:
                b = self.cast(b, "f64")
                tts = tuple(binop_types(op, u, v)[1] for u, v in zip(x.ts, b.ts))
            e = Typed(("bin", op, x.e, b.e), tts, lmax(x.lv, b.lv))
            if op in ("<", ">", "==", "!=", "<=", ">=") and self.chance(0.4):
                a, c = self.expr(1, lv), self.expr(1, lv)
                e = Typed(("sel", "where", e.e, a.e, c.e), tuple(promote(u, v) for u, v in zip(a.ts, c.ts)),
                          lmax(e.lv, a.lv, c.lv))
        if any_cx(e):
            e = self.cast(e, "f64")
        k.outs.append(Out("zq0", self.pick(["bool", "i32", "f32", "f64", "u8"]), e.lv != "e"))
        k.body.append(Stmt("out", "zq0", e.e))

    def mode_type(self):
        """The type of a raw or inout parameter (drawn from the EXT stream)."""
        ty = self.scalar_type()
        if "cxmode" in self.gen2_on and self.nr.random() < 0.4:
            ty = self.nr.choice(COMPLEX)
        return ty

    def ext_assign(self, k, depth):
        """The assignment of each inout parameter, at a place of its own in
        the body: reads before it give the value it came with, after it the
        value it stores."""
        # the outputs: the declared ones, then one per inout parameter
        k.outs += [Out(p.name, p.ty, False, inout=True) for p in self.inouts]
        with self.ext():
            for p in self.inouts:
                pos = self.r.randrange(len(k.body) + 1)
                before = {st.name for st in k.body[:pos] if st.kind != "tlet"} | \
                    {n for st in k.body[:pos] if st.kind == "tlet" for n in st.name}
                saved = self.visible
                self.visible = [v for v in saved if v[0] in before]
                try:
                    e = self.expr(depth, "e")
                finally:
                    self.visible = saved
                k.body.insert(pos, Stmt("out", p.name, e.e))

    # -- a program
    def program(self, kind=None):
        r = self.r
        p = self.p
        kind = kind or ("reduction" if self.chance(0.45) else "elementwise")
        k = Kernel(self.prefix + "k", kind)
        p.kernel = k
        self.kern = k
        if self.chance(0.3):
            ng = 1 if self.chance(0.75) else 2
            for i in range(ng):
                k.generics.append(("T" if i == 0 else "U", self.pick(list(CLASSES))))
        self.classes = CLASSES
        if k.generics and "cxgeneric" in self.gen2_on:
            # one type variable of class complex, or num or any with complex
            # types among theirs (language.md: num and any include them)
            self.classes = CLASSES_CX
            i = self.nr.randrange(len(k.generics))
            k.generics[i] = (k.generics[i][0], self.nr.choice(["complex", "complex", "num", "any"]))
        if any(t in COMPLEX for t in self.tlist):
            # nnkc -T with a complex type instantiates num and any with it too
            self.classes = CLASSES_CX
        # instances to test; the default one is checked too (an eager front end)
        if k.generics:
            default = {g: CLASS_DEFAULT[c] for g, c in k.generics}
            combos = [{}]
            for g, c in k.generics:
                combos = [dict(b, **{g: t}) for b in combos for t in self.tlist if t in self.classes[c]]
            if self.tlist and combos:
                # nnkc -T: every assignment of the listed types that fits
                p.bindings = combos
                if self.chance(0.3):
                    b = {g: self.pick(self.classes[c]) for g, c in k.generics}
                    p.inst_lines = [b]
                    if b not in p.bindings:
                        p.bindings = p.bindings + [b]
            elif self.chance(0.4) and not self.tlist:
                p.bindings = [default]
            else:
                bs = []
                for _ in range(r.randrange(1, 4)):
                    b = {g: self.pick(self.classes[c]) for g, c in k.generics}
                    if b not in bs:
                        bs.append(b)
                p.bindings = bs
                p.inst_lines = bs
            self.check_bindings = p.bindings + ([default] if default not in p.bindings else [])
        else:
            self.check_bindings = [{}]
        self.nb = len(self.check_bindings)
        # consts
        self.kern_saved = k
        self.const_types = {}
        self.visible = []
        self.scalars, self.tensors = [], []
        for i in range(r.randrange(0, 3)):
            e = self.expr(2, "c", {"fparams": [], "red_ok": False})
            name = "%sC%d" % (self.prefix, i)
            ty = None
            if self.chance(0.4):
                ty = self.pick(SCALARS)
                if "half-round" in self.avoid and ty in ("f16", "bf16") and any(is_float(t) for t in e.ts):
                    ty = "f32"
            p.consts[name] = Const(name, ty, e.e)
            self.const_types[name] = (ty,) * self.nb if ty else e.ts
        # parameters
        nt = r.randrange(1, 4)
        ns = r.randrange(0, 3)
        params = []
        for i in range(nt):
            params.append(Param("x%d" % i, self.scalar_type(), True))
        for i in range(ns):
            ty = self.scalar_type()
            d = None
            if self.chance(0.5):
                ts = self.binding_types(ty)
                if all(t == "bool" for t in ts):
                    d = ("bool", self.chance(0.5))
                elif all(is_float(t) for t in ts) and self.chance(0.5):
                    d = ("lit", self.pick([0.5, 1.5, 0.1, 2.0, 1e-3]), 0)
                elif "bool" not in ts:
                    d = ("lit", self.pick([0, 1, 2, 3, 7, 100]), 0)
            params.append(Param("s%d" % i, ty, False, d))
        r.shuffle(params)
        k.params = params
        self.tensors = [q for q in params if q.tensor]
        self.scalars = [q for q in params if not q.tensor]
        self.ext_params(k)
        # outputs and body
        no = r.randrange(1, 4)
        for i in range(no):
            red = kind == "reduction" and self.chance(0.6)
            k.outs.append(Out("z%d" % i, self.scalar_type(), red))
        todo = [o for o in k.outs if not o.inout]
        r.shuffle(todo)
        nlet = 0
        depth = max(1, int(round(r.randrange(2, 6) * self.size)))
        while todo:
            if self.chance(0.35) and nlet < 5:
                maxlv = "r" if kind == "reduction" and self.chance(0.3) else "e"
                if "tuple" in self.ext_on and kind == "reduction" and self.xr.random() < 0.6:
                    with self.ext():
                        te, rts = self.tuple_reduce(depth)
                    names = tuple("v%d_%d" % (nlet, j) for j in range(len(rts)))
                    nlet += 1
                    k.body.append(Stmt("tlet", names, te))
                    for n, ts in zip(names, rts):
                        self.visible.append((n, ts, "r", "let"))
                    continue
                e = self.expr(depth, maxlv)
                ty = None
                if self.chance(0.3):
                    ty = self.scalar_type()
                    if "half-round" in self.avoid and any(t in ("f16", "bf16") for t in self.binding_types(ty)) \
                            and any(is_float(t) for t in e.ts):
                        ty = None
                name = "u%d" % nlet
                nlet += 1
                k.body.append(Stmt("let", name, e.e, ty))
                self.visible.append((name, self.binding_types(ty) if ty else e.ts, e.lv, "let"))
                continue
            o = todo.pop()
            maxlv = "r" if o.reduced else "e"
            e = self.expr(depth, maxlv)
            if kind == "reduction" and o.reduced and e.lv == "e":
                raise Invalid("level")
            k.body.append(Stmt("out", o.name, e.e))
            ots = self.binding_types(o.ty)
            if not ("half-round" in self.avoid and any(t in ("f16", "bf16") for t in ots)):
                self.visible.append((o.name, ots, "r" if o.reduced else "e", "out"))
        if kind == "reduction" and "o3" in self.gen2_on:
            with self.ext(self.nr):
                self.o3_outs(k)
        self.ext_assign(k, depth)
        return p


# ---- complex numbers (language.md, "Complex numbers") -------------------------------------
# A program with complex (its own random stream, decided once per program,
# so that a seed's program without complex stays as it was) gets, after
# the rest is made: complex tensor and scalar parameters (c64, c128; a
# scalar with a complex default now and then), complex lets, and outputs
# computed by complex expressions: imaginary literals (1j, 2.5j, 0.5 - 2j),
# c64(re, im), c128(re, im), complex(re, im) of real expressions, c64(z),
# + - * / and unary - with complex or real operands, == and !=, where, the
# functions language.md allows (exp log sqrt pow sin cos tan sinh cosh tanh
# conj), real/imag/abs/arg/isnan/isinf/isfinite, bool(z), !z, conversions
# to real types (the real part), sum/prod/mean/any/all of complex values;
# assigned to complex outputs, or to real ones (the real part, implicitly).

CX_TYPES = ("c64", "c128")
CX_CHANCE = 0.2
CX_FLOAT_LITS = [0.5, 1.0, 2.0, 1.5, 0.25, 3.0, 0.1, 1e-3, 10.0, 2.5, 1e30, 7.0]


class CxGen:
    """The complex part of a program (Gen's state: the kernel made, its
    real leaves), drawn from rng."""

    def __init__(self, g, rng):
        self.g, self.r = g, rng
        self.nb = g.nb
        self.tens, self.scal, self.vis = [], [], []
        self.consts = []            # (name, types): complex consts
        self.fscope = None          # in a func's body: its parameters [(name, types)]

    def chance(self, x):
        return self.r.random() < x

    def pick(self, xs):
        return self.r.choice(xs)

    def T(self, t):
        return (t,) * self.nb

    def real(self, depth, maxlv, in_red):
        """A real expression of the main generator, drawn from this stream."""
        g = self.g
        saved = g.r
        g.r = self.r
        try:
            if self.fscope is not None:
                # in a func's body: its real parameters, literals and consts
                fps = [(n, ts, "c") for n, ts in self.fscope if not any(is_complex(t) for t in ts)]
                e = g.expr(depth, "e", {"fparams": fps, "red_ok": False}, True)
            else:
                e = g.expr(depth, maxlv, None, in_red)
            if any_cx(e):
                # (a complex value of the main generator's: cxgeneric, cxmode)
                e = g.cast(e, self.pick(["f32", "f64"]))
            return e
        finally:
            g.r = saved

    def ilit(self):
        v = self.pick(CX_FLOAT_LITS + [1, 2, 3, 0, 5])
        e = ("ilit", v, self.r.randrange(2))
        if self.chance(0.3):
            e = ("bin", self.pick(["+", "-"]), ("lit", self.pick(CX_FLOAT_LITS + [1, 2]), 0), e)
        elif self.chance(0.15):
            e = ("un", "-", e)
        return Typed(e, self.T("wcomplex"), "c")

    def leaf(self, maxlv):
        if self.fscope is not None:
            fps = [f for f in self.fscope if any(is_complex(t) for t in f[1])]
            if fps and self.chance(0.7):
                n, ts = self.pick(fps)
                return Typed(("name", "fparam", n), ts, "c")
            if self.consts and self.chance(0.2):
                name, ts = self.pick(self.consts)
                return Typed(("name", "const", name), ts, "c")
            return self.ilit()
        opts = [("lit", 2)]
        if LEVEL[maxlv] >= LEVEL["u"] and self.scal:
            opts.append(("scalar", 2))
        if LEVEL[maxlv] >= LEVEL["e"] and self.tens:
            opts.append(("tensor", 6))
        vis = [v for v in self.vis if LEVEL[v[2]] <= LEVEL[maxlv]]
        if vis:
            opts.append(("let", 3))
        if self.consts:
            opts.append(("const", 1))
        k = weighted(self.r, opts)
        if k == "lit":
            return self.ilit()
        if k == "const":
            name, ts = self.pick(self.consts)
            return Typed(("name", "const", name), ts, "c")
        if k == "scalar":
            p = self.pick(self.scal)
            return Typed(("name", "param", p.name), self.T(p.ty), "u")
        if k == "tensor":
            p = self.pick(self.tens)
            return Typed(("name", "param", p.name), self.T(p.ty), "e")
        name, ts, lv, kind = self.pick(vis)
        return Typed(("name", kind, name), ts, lv)

    def typed(self, a):
        """a, converted to a complex type where it is a literal (a function
        of a literal alone is not said, but for conj and exp)."""
        if not a.weak:
            return a
        t = self.pick(CX_TYPES)
        return Typed(("cast", t, a.e), self.T(t), a.lv)

    def cexpr(self, depth, maxlv="e", in_red=False):
        """A complex expression."""
        g = self.g
        if depth <= 0 or self.chance(0.2):
            return self.leaf(maxlv)
        red_ok = g.kern.kind == "reduction" and not in_red and LEVEL[maxlv] >= LEVEL["r"]
        if "cxfunc" in g.gen2_on and self.fscope is None and g.nfunc < 3 and g.nr.random() < 0.12:
            return self.cfcall(depth, maxlv, in_red)
        x = self.r.random()
        if red_ok and x < 0.15:
            a = self.cexpr(depth - 1, "e", True)
            a = self.typed(a)
            if self.chance(0.25):
                # reduce() with a complex state: + from 0, * from 1
                op = self.pick(["+", "*"])
                ident = ("lit", 0 if op == "+" else 1, 0)
                return Typed(("reduce", a.e, ident, op), a.ts, "r")
            name = self.pick(["sum", "sum", "prod", "mean"])
            return Typed(("red", name, a.e), tuple(reducer_type(name, t) for t in a.ts), "r")
        if x < 0.45:
            op = self.pick(["+", "-", "*", "/", "*", "+"])
            a = self.cexpr(depth - 1, maxlv, in_red)
            if self.chance(0.35):
                b = self.real(self.r.randrange(0, 2), maxlv, in_red)
                if "bool" in b.ts and self.chance(0.7):
                    b = g.cast(b, self.pick(["f32", "f64", "i32"]))
            else:
                b = self.cexpr(depth - 1, maxlv, in_red)
            if self.chance(0.5):
                a, b = b, a
            if a.weak and b.weak and op == "/":
                op = "*"            # (language.md: + - * of literals fold bit for bit)
            ts = tuple(binop_types(op, u, v)[1] for u, v in zip(a.ts, b.ts))
            return Typed(("bin", op, a.e, b.e), ts, lmax(a.lv, b.lv))
        if x < 0.55:
            a = self.cexpr(depth - 1, maxlv, in_red)
            return Typed(("un", "-", a.e), a.ts, a.lv)
        if x < 0.70:
            name = self.pick(list(CX_FUNCS) + ["conj", "conj", "exp", "sqrt", "pow"])
            a = self.cexpr(depth - 1, maxlv, in_red)
            if name not in ("conj", "exp") or self.chance(0.5):
                a = self.typed(a)
            args = [a]
            if name == "pow":
                w = self.pick(["int", "int", "real", "cx"])
                if w == "int":
                    b = Typed(("lit", self.pick([0, 1, 2, 3, 4, 5, 7, 12, 99, 100]), 0), self.T("wint"), "c")
                    if self.chance(0.3):
                        b = Typed(("un", "-", b.e), b.ts, "c")
                elif w == "real":
                    b = Typed(("lit", self.pick([0.5, 1.5, 2.0, 0.25, 3.0]), 0), self.T("wfloat"), "c")
                else:
                    b = self.cexpr(depth - 1, maxlv, in_red)
                args.append(b)
            ts = tuple(builtin_types(name, list(u))[1] for u in zip(*[q.ts for q in args]))
            return Typed(("call", name, [q.e for q in args]), ts, lmax(*[q.lv for q in args]))
        if x < 0.82:
            # c64(re, im), c128(re, im), complex(re, im)
            name = self.pick(["c64", "c128", "complex"])
            re = self.real(depth - 1, maxlv, in_red)
            im = self.real(depth - 1, maxlv, in_red) if self.chance(0.8) else \
                Typed(("lit", self.pick(CX_FLOAT_LITS), 0), self.T("wfloat"), "c")
            re, im = [q if not ("bool" in q.ts) else g.cast(q, self.pick(["f32", "f16", "f64", "i16"]))
                      for q in (re, im)]
            if name == "complex":
                if re.weak and im.weak:
                    re = g.cast(re, self.pick(["f32", "f64", "bf16"]))
            ts = tuple(builtin_types(name, list(u))[1] for u in zip(re.ts, im.ts))
            return Typed(("call", name, [re.e, im.e]), ts, lmax(re.lv, im.lv))
        if x < 0.90:
            # where(c, z, w): a real condition, or z == w
            c = self.real(self.r.randrange(0, 2), maxlv, in_red) if self.chance(0.6) else self.cpred(depth - 1, maxlv,
                                                                                                      in_red)
            a = self.cexpr(depth - 1, maxlv, in_red)
            b = self.cexpr(depth - 1, maxlv, in_red) if self.chance(0.7) else self.real(0, maxlv, in_red)
            ts = tuple(promote(u, v) for u, v in zip(a.ts, b.ts))
            form = "where" if self.chance(0.5) else "?"
            return Typed(("sel", form, c.e, a.e, b.e), ts, lmax(c.lv, a.lv, b.lv))
        # c64(z), c128(z) of a complex or real value
        a = self.cexpr(depth - 1, maxlv, in_red) if self.chance(0.7) else self.real(depth - 1, maxlv, in_red)
        t = self.pick(CX_TYPES)
        return Typed(("cast", t, a.e), self.T(t), a.lv)

    def cfcall(self, depth, maxlv, in_red):
        """A call of a func with complex parameters: typed c64/c128,
        untyped, or of a type variable <V: complex|num|any> bound from
        complex arguments; the body a complex expression of them."""
        g = self.g
        nargs = self.r.randrange(1, 4)
        args = [self.cexpr(depth - 1, maxlv, in_red) if self.chance(0.7) else self.real(depth - 1, maxlv, in_red)
                for _ in range(nargs)]
        typed = [i for i, a in enumerate(args) if not a.weak]
        gset, generics, tv = set(), [], None
        cx_typed = [i for i in typed if any_cx(args[i])]
        if cx_typed and self.chance(0.35):
            gset = {i for i in typed if i == cx_typed[0] or self.chance(0.5)}
            tv = args[cx_typed[0]].ts
            for i in gset:
                tv = tuple(promote(x, y) for x, y in zip(tv, args[i].ts))
            tv = tuple(concrete(t) for t in tv)
            generics = [("V", self.pick(["complex", "complex", "num", "any"]))]
        params, fps = [], []
        for i, a in enumerate(args):
            pn = "p%d" % i
            if i in gset:
                params.append((pn, "V"))
                fps.append((pn, tv))
                continue
            pty = self.pick(list(CX_TYPES) + [None, None]) if self.chance(0.6) else None
            if pty is None and a.weak:
                pty = self.pick(CX_TYPES)   # (an untyped parameter of a literal: its weak type not worked out here)
            params.append((pn, pty))
            fps.append((pn, self.T(pty) if pty else a.ts))
        self.fscope = fps
        try:
            body = self.cexpr(max(depth - 1, 1), "e", True)
        finally:
            self.fscope = None
        res, ts = None, body.ts
        if self.chance(0.3):
            res = self.pick(CX_TYPES)
            ts = self.T(res)
        name = "%sf%d" % (g.prefix, g.nfunc)
        g.nfunc += 1
        g.p.funcs[name] = Func(name, params, res, body.e, generics)
        return Typed(("fcall", name, [a.e for a in args]), ts, lmax(*[a.lv for a in args]))

    def cconst(self, depth):
        """A complex constant expression the folder computes (language.md:
        + - *, unary -, conj, real/imag, the conversions, c64(re, im) of
        constants; not / abs arg or the functions, which make a const an
        error)."""
        x = self.r.random()
        if depth <= 0 or x < 0.3:
            if self.consts and self.chance(0.3):
                name, ts = self.pick(self.consts)
                return Typed(("name", "const", name), ts, "c")
            return self.ilit()
        if x < 0.6:
            op = self.pick(["+", "-", "*"])
            a, b = self.cconst(depth - 1), self.cconst(depth - 1)
            if self.chance(0.3):
                b = Typed(("lit", self.pick(CX_FLOAT_LITS + [2, 3]), 0), self.T("wfloat"), "c")
            ts = tuple(binop_types(op, u, v)[1] for u, v in zip(a.ts, b.ts))
            return Typed(("bin", op, a.e, b.e), ts, "c")
        if x < 0.7:
            a = self.cconst(depth - 1)
            return Typed(("un", "-", a.e), a.ts, "c")
        if x < 0.8:
            a = self.cconst(depth - 1)
            return Typed(("call", "conj", [a.e]), a.ts, "c")
        if x < 0.9:
            t = self.pick(CX_TYPES)
            return Typed(("call", t, [("lit", self.pick(CX_FLOAT_LITS), 0), ("lit", self.pick(CX_FLOAT_LITS), 0)]),
                         self.T(t), "c")
        a = self.cconst(depth - 1)
        t = self.pick(CX_TYPES)
        return Typed(("cast", t, a.e), self.T(t), "c")

    def cpred(self, depth, maxlv, in_red):
        """A bool of complex values: == !=, isnan isinf isfinite, bool(z), !z."""
        a = self.cexpr(depth, maxlv, in_red)
        x = self.r.random()
        if x < 0.4:
            b = self.cexpr(depth, maxlv, in_red) if self.chance(0.6) else self.real(0, maxlv, in_red)
            return Typed(("bin", self.pick(["==", "!="]), a.e, b.e), self.T("bool"), lmax(a.lv, b.lv))
        if x < 0.7:
            a = self.typed(a)
            return Typed(("call", self.pick(["isnan", "isinf", "isfinite"]), [a.e]), self.T("bool"), a.lv)
        if x < 0.85:
            return Typed(("un", "!", a.e), self.T("bool"), a.lv)
        return Typed(("cast", "bool", a.e), self.T("bool"), a.lv)

    def rexpr(self, depth, maxlv, in_red=False):
        """A real value of complex ones: real imag abs arg, a predicate, a
        conversion (the real part), any/all, or real arithmetic on those."""
        g = self.g
        red_ok = g.kern.kind == "reduction" and not in_red and LEVEL[maxlv] >= LEVEL["r"]
        x = self.r.random()
        if red_ok and x < 0.15:
            a = self.cexpr(depth - 1, "e", True)
            return Typed(("red", self.pick(["any", "all"]), a.e), self.T("bool"), "r")
        if x < 0.6:
            a = self.typed(self.cexpr(depth - 1, maxlv, in_red))
            name = self.pick(["real", "imag", "abs", "arg", "real", "imag"])
            r = Typed(("call", name, [a.e]), tuple(builtin_types(name, [t])[1] for t in a.ts), a.lv)
        elif x < 0.75:
            r = self.cpred(depth - 1, maxlv, in_red)
        else:
            a = self.cexpr(depth - 1, maxlv, in_red)
            t = self.pick(["f32", "f64", "i32", "u8", "i64", "f16", "bf16"])
            r = Typed(("cast", t, a.e), self.T(t), a.lv)
        if self.chance(0.3) and "bool" not in r.ts:
            b = self.real(self.r.randrange(0, 2), maxlv, in_red)
            op = self.pick(["+", "*", "-"])
            try:
                ts = tuple(binop_types(op, u, v)[1] for u, v in zip(r.ts, b.ts))
                r = Typed(("bin", op, r.e, b.e), ts, lmax(r.lv, b.lv))
            except Invalid:
                pass
        return r

    def make(self):
        """Adds the complex part to the kernel; Invalid leaves it unchanged."""
        g, k = self.g, self.g.kern
        params = list(k.params)
        consts = {}
        for i in range(self.r.randrange(0, 3) if self.chance(0.3) else 0):
            # const NAME: c64 = 1.5 - 2j; or an untyped one (a literal)
            e = self.cconst(self.r.randrange(0, 3))
            ty = self.pick(CX_TYPES) if self.chance(0.6) or not e.weak else None
            name = "%sCX%d" % (g.prefix, i)
            consts[name] = Const(name, ty, e.e)
            self.consts.append((name, self.T(ty) if ty else e.ts))
        for i in range(self.r.randrange(1, 3)):
            p = Param("c%d" % i, self.pick(CX_TYPES), True)
            params.insert(self.r.randrange(len(params) + 1), p)
            self.tens.append(p)
        if self.chance(0.5):
            d = None
            if self.chance(0.6):
                d = self.ilit().e if self.chance(0.8) else ("lit", self.pick(CX_FLOAT_LITS), 0)
            p = Param("cs0", self.pick(CX_TYPES), False, d)
            params.insert(self.r.randrange(len(params) + 1), p)
            self.scal.append(p)
        # the real outputs read back and lets are there to be used too
        body, outs = [], []
        depth = self.r.randrange(2, 5)
        for i in range(self.r.randrange(0, 3)):
            maxlv = "r" if k.kind == "reduction" and self.chance(0.3) else "e"
            e = self.cexpr(depth, maxlv)
            ty = self.pick(CX_TYPES) if self.chance(0.3) else None
            name = "uc%d" % i
            body.append(Stmt("let", name, e.e, ty))
            self.vis.append((name, self.T(ty) if ty else e.ts, e.lv, "let"))
        for i in range(self.r.randrange(1, 3)):
            red = k.kind == "reduction" and self.chance(0.6)
            maxlv = "r" if red else "e"
            if self.chance(0.6):
                ty = self.pick(CX_TYPES)
                e = self.cexpr(depth, maxlv)
            else:
                # a real output: of real values of complex ones, or (a float
                # output) a complex value's real part, converted implicitly
                ty = self.pick(["f32", "f64", "i32", "bool", "f16", "u16"])
                e = self.rexpr(depth, maxlv) if self.chance(0.8) or not is_float(ty) else self.cexpr(depth, maxlv)
            if red and e.lv == "e":
                raise Invalid("level")
            name = "zc%d" % i
            outs.append(Out(name, ty, red))
            body.append(Stmt("out", name, e.e))
            if ty in CX_TYPES:
                self.vis.append((name, self.T(ty), "r" if red else "e", "out"))
        k.params = params
        g.p.consts.update(consts)
        first_inout = next((i for i, o in enumerate(k.outs) if o.inout), len(k.outs))
        k.outs[first_inout:first_inout] = outs
        k.body += body


def generate(seed, prefix, avoid=AVOID_DEFAULT, size=1.0, kind=None, tlist=()):
    """A program from seed (the same seed gives the same program); tlist:
    the types of nnkc -T for the file it goes in."""
    rng = random.Random(seed)
    xrng = random.Random(repr(seed) + "ext")
    for attempt in range(50):
        try:
            g = Gen(rng, prefix, avoid, size, tlist, xrng)
            # the EXT constructs of this program (decided first, from their own stream)
            g.ext_on = {x for x in EXT if xrng.random() < EXT_CHANCE[x] and x not in avoid}
            g.nr = random.Random(repr(seed) + "gen2-%d" % attempt)
            g.gen2_on = {x for x in GEN2 if g.nr.random() < GEN2_CHANCE[x] and x not in avoid and
                         not (x.startswith("cx") and "complex" in avoid)}
            p = g.program(kind)
            if "complex" not in avoid and random.Random(repr(seed) + "complex").random() < CX_CHANCE:
                # complex values (a stream of their own: see CxGen)
                crng = random.Random(repr(seed) + "complex-gen")
                for _ in range(20):
                    try:
                        CxGen(g, crng).make()
                        break
                    except Invalid:
                        continue
            # one program in six with consts or funcs has them imported
            # from a file of its own (a stream of its own: the programs of
            # a seed stay as they were)
            p.imported = bool(p.consts or p.funcs) and random.Random(repr(seed) + "import").random() < 1 / 6
            p.gen2_on = g.gen2_on
            return p
        except (Invalid, RecursionError):
            continue
    raise RuntimeError("no valid program from seed %r" % (seed,))


# ---- (de)serializing: regression cases keep the tree ----------------------------------

def _tup(x):
    return tuple(_tup(i) for i in x) if isinstance(x, list) else x


def to_json(p):
    k = p.kernel
    return {"prefix": p.prefix,
            "consts": [[c.name, c.ty, c.expr] for c in p.consts.values()],
            "funcs": [[f.name, f.params, f.result, f.body, f.generics] for f in p.funcs.values()],
            "kernel": {"name": k.name, "kind": k.kind, "generics": k.generics,
                       "params": [[q.name, q.ty, q.tensor, q.default] + ([q.mode, q.rank] if q.mode else [])
                                  for q in k.params],
                       "outs": [[o.name, o.ty, o.reduced] + ([True] if o.inout else []) for o in k.outs],
                       "body": [[s.kind, s.name, s.expr, s.ty] for s in k.body]},
            "bindings": p.bindings, "inst_lines": p.inst_lines, "imported": p.imported}


def from_json(d):
    p = Program(d["prefix"])
    for n, t, e in d["consts"]:
        p.consts[n] = Const(n, t, _tup(e))
    for f in d["funcs"]:
        n, ps, r, b = f[:4]
        p.funcs[n] = Func(n, [tuple(x) for x in ps], r, _tup(b), f[4] if len(f) > 4 else ())
    kd = d["kernel"]
    k = Kernel(kd["name"], kd["kind"])
    k.generics = [tuple(g) for g in kd["generics"]]
    k.params = [Param(x[0], x[1], x[2], _tup(x[3]) if x[3] else None, *x[4:]) for x in kd["params"]]
    k.outs = [Out(*x) for x in kd["outs"]]
    k.body = [Stmt(kind, tuple(n) if kind == "tlet" else n, _tup(e), t) for kind, n, e, t in kd["body"]]
    p.kernel = k
    p.bindings = d["bindings"]
    p.inst_lines = d["inst_lines"]
    p.imported = bool(d.get("imported"))
    return p


# ---- the trees, for the minimizer ----------------------------------------------------------

CHILD = {"un": (2,), "bin": (2, 3), "sel": (2, 3, 4), "cast": (2,), "red": (2,), "reduce": (1, 2)}


def children(e):
    """[(path step, child)] of node e."""
    if e[0] in CHILD:
        return [(i, e[i]) for i in CHILD[e[0]]]
    if e[0] in ("call", "fcall", "raw"):
        return [((2, i), a) for i, a in enumerate(e[2])]
    if e[0] == "treduce":
        return [((f, i), a) for f in (1, 2) for i, a in enumerate(e[f])]
    return []


def replace_child(e, step, new):
    e = list(e)
    if isinstance(step, tuple):
        args = list(e[step[0]])
        args[step[1]] = new
        e[step[0]] = tuple(args)
    else:
        e[step] = new
    return tuple(e)


def nodes(e, path=()):
    """Every (path, node) of e, the root first."""
    yield path, e
    for step, c in children(e):
        yield from nodes(c, path + (step,))


def at_path(e, path, new):
    if not path:
        return new
    for step, c in children(e):
        if step == path[0]:
            return replace_child(e, step, at_path(c, path[1:], new))
    raise KeyError(path)


def refs(e, kind, name):
    return any(n[0] == "name" and n[1] == kind and n[2] == name for _, n in nodes(e))
