"""lists.py - the lists written outside compiler/types.def and ops.def agree with them.

The C compiler checks the C side (types.c: every NNK_<ID> of nnk/abi.h at
its row); this checks what no C compiler sees: tests/nnkabi.py's ctypes
mirrors of nnk/abi.h and nnk/nnk.h (member names in order, sizes), the
types' element sizes against their ctypes storage, and the Python
extension's dtype list (python/src/nnkmodule.c, built also where
compiler/ is absent, so it cannot include types.def), and the precedence
lines of grammar/parser.y against ops.def's column (lemon reads no
includes).  Well under a second.
"""
import ctypes
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import nnkabi  # noqa: E402

SRC = nnkabi.SRCDIR
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


def read(*parts):
    with open(os.path.join(SRC, *parts)) as f:
        return re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)


def members(text, kind, name):
    """Member names of `typedef KIND NAME {...} NAME;`, in order."""
    m = re.search(r"typedef %s %s \{(.*?)\} %s;" % (kind, name, name), text, flags=re.S)
    check(m is not None, "%s %s is in the header" % (kind, name))
    out = []
    # a member of an unnamed struct type (nnk_scalar's c64) is one member
    body = re.sub(r"\{[^{}]*\}", "", m.group(1)) if m else ""
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        fp = re.match(r"[^(]*\(\*\s*(\w+)\)", decl)
        if fp:
            out.append(fp.group(1))
            continue
        first, *rest = [d.strip() for d in decl.split(",")]
        out.append(re.sub(r"\[.*", "", first).split()[-1].lstrip("*"))
        out += [re.sub(r"\[.*", "", r).lstrip("*") for r in rest]
    return out


abi = read("runtime", "include", "nnk", "abi.h")
nnk_h = read("runtime", "include", "nnk", "nnk.h")

# nnk_dtype: NNK_<ID> in types.def's order, then the count
enum = re.search(r"typedef enum nnk_dtype \{(.*?)\} nnk_dtype;", abi, flags=re.S).group(1)
check(re.findall(r"NNK_\w+", enum) == ["NNK_" + t["id"] for t in nnkabi.TYPES] + ["NNK_DTYPE_COUNT"],
      "nnk/abi.h's nnk_dtype lists types.def's rows")

# the ctypes mirrors, member by member
for cls, kind, name, prefix in [(nnkabi.View, "struct", "nnk_view", False),
                                (nnkabi.Scalar, "union", "nnk_scalar", False),
                                (nnkabi.ParamDesc, "struct", "nnk_param_desc", False),
                                (nnkabi.KernelDesc, "struct", "nnk_kernel_desc", True)]:
    want = members(abi, kind, name)
    got = [f[0] for f in cls._fields_]
    check((want[:len(got)] if prefix else want) == got, "%s mirrors %s %s: %s, header %s" % (cls.__name__, kind, name,
                                                                                           got, want))
for cls, name in [(nnkabi.MemoryStats, "nnk_memory_stats"), (nnkabi.DeviceInfo, "nnk_device_info"),
                  (nnkabi.DeviceProps, "nnk_device_props"),
                  (nnkabi.Slice, "nnk_slice")]:
    want = members(nnk_h, "struct", name)
    got = [f[0] for f in cls._fields_]
    check(want == got, "%s mirrors struct %s: %s, header %s" % (cls.__name__, name, got, want))

scalar = dict(nnkabi.Scalar._fields_)
for t in nnkabi.DTYPES:
    check(ctypes.sizeof(nnkabi.CT[t]) == nnkabi.SIZE[t], "%s: ctypes storage of %d bytes" % (t, nnkabi.SIZE[t]))
    m = nnkabi.MEMBER[t]
    check(m in scalar and ctypes.sizeof(scalar[m]) == nnkabi.SIZE[t],
          "%s: nnk_scalar member '%s' has the element's size" % (t, m))

check(nnkabi.STATUS[0] == "NNK_OK" and "NNK_STATUS_COUNT" not in nnkabi.STATUS and len(nnkabi.STATUS) > 10,
      "status names from nnk/nnk.h: %s" % nnkabi.STATUS)

# the Python extension's table: one row per type, in order
py = read("python", "src", "nnkmodule.c")
rows = re.findall(r"X\((NNK_\w+),", re.search(r"#define NNK_PY_DTYPES\(X\)(.*?)\n\n", py, flags=re.S).group(1))
check(rows == ["NNK_" + t["id"] for t in nnkabi.TYPES], "nnkmodule.c's NNK_PY_DTYPES lists types.def's rows")

# ops.def's precedence column is grammar/parser.y's %left lines (lemon cannot include ops.def)
binops = nnkabi._rows(os.path.join(SRC, "compiler", "ops.def"), "BINOP")
levels = {}
for r in binops:
    levels.setdefault(int(r[3]), []).append(r[2])
levels = [levels[p] for p in sorted(levels)]
grammar = read("grammar", "parser.y")
left = [line.split() for line in re.findall(r"^%left ([^.]*)\.", grammar, flags=re.M)]
check(left == levels, "parser.y's %%left lines are ops.def's precedence levels: %s, ops.def %s" % (left, levels))
unary = [r[2] for r in nnkabi._rows(os.path.join(SRC, "compiler", "ops.def"), "UNOP")]
tightest = re.findall(r"^%right ([^.]*)\.", grammar, flags=re.M)[-1].split() + levels[-2]
check(all(t in tightest for t in unary), "ops.def's unary tokens are %%right after the binary ones in parser.y")

print("%d types, %d checks failed" % (len(nnkabi.DTYPES), len(failures)))
sys.exit(1 if failures else 0)
