#!/bin/sh
# Every nesting construct of the grammar at the documented limits
# (docs/language.md section 7, "Limits": 256 levels as written, 512 after
# lets and functions are expanded, 64 inlined calls): at the limit the
# program compiles (nnkc -S --target=c, and the C compiles with $CC); one
# level past it, and far past it (deeper than the parser's stack), nnkc
# exits 1 with one file:line:col error, the line and a caret, never a
# signal.  A `?:` else-if chain of 254 (nested 256 deep) was "nesting too
# deep (the parser's limit is 1000 levels)" before: the parser's stack ran
# out before the language's limit.  Run under --enable-sanitizers too.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
NNKC=$nnkc CC=$cc TMP=$tmp exec "${PYTHON:-python3}" - <<'EOF'
import os, re, subprocess, sys

nnkc, cc, tmp = os.environ["NNKC"], os.environ["CC"].split(), os.environ["TMP"]
LIMIT, EXPANDED, INLINE = 256, 512, 64

EW = "elementwise k(a: f32[], b: bool[], i: i32[]) -> (z: %s[]) {\n%s    z = %s;\n}\n"

def ew(expr, out="f32", lets=""):
    return EW % (out, lets, expr)

# name -> (limit, a function of the nesting depth d giving the program)
def cond_chain(d):      # the else-if chain: a < 1 ? 1 : a < 2 ? 2 : ... : 0 (each condition is 2 deep)
    k = d - 2
    return ew(" : ".join("a < %d ? %d" % (j, j) for j in range(1, k + 1)) + " : 0")

def cond_then(d):       # b ? b ? ... ? a : a : a
    k = d - 1
    return ew("b ? " * k + "a" + " : a" * k)

def lets(d):            # let t1 = -t0; ... each one deeper after expansion
    body = "    let t0 = a;\n" + "".join("    let t%d = -t%d;\n" % (j, j - 1) for j in range(1, d))
    return ew("t%d" % (d - 1), lets=body)

def funcs(d):           # f1 calls f0, f2 calls f1, ...: d calls inlined inside each other
    fs = "func g0(x) = x + 1;\n" + "".join("func g%d(x) = g%d(x) * 2;\n" % (j, j - 1) for j in range(1, d))
    return fs + ew("g%d(a)" % (d - 1))

def right_operands(d):  # each a - ( is two levels: the right operand and the parenthesis
    r = (d - 1) // 2
    return ew("a - (" * r + ("a" if (d - 1) % 2 == 0 else "-a") + ")" * r)

def reduce_body(d):     # the combine's body: reduce( | | p + - - - q )
    k = d - 4
    return ("reduction r(a: f32[]) -> (s: f32) {\n    s = reduce(a, 0, |p, q| p + " + "- " * k + "q);\n}\n")

CASES = {
    "negation":   (LIMIT, lambda d: ew("- " * (d - 1) + "a")),
    "unary_plus": (LIMIT, lambda d: ew("+ " * (d - 1) + "a")),
    "not":        (LIMIT, lambda d: ew("!" * (d - 1) + "b", out="bool")),
    "bitnot":     (LIMIT, lambda d: ew("~" * (d - 1) + "i", out="i32")),
    "parens":     (LIMIT, lambda d: ew("(" * (d - 1) + "a" + ")" * (d - 1))),
    "calls":      (LIMIT, lambda d: ew("abs(" * (d - 1) + "a" + ")" * (d - 1))),
    "conversions": (LIMIT, lambda d: ew("f32(" * (d - 1) + "a" + ")" * (d - 1))),
    "where_else": (LIMIT, lambda d: ew("where(b, a, " * (d - 1) + "a" + ")" * (d - 1))),
    "where_then": (LIMIT, lambda d: ew("where(b, " * (d - 1) + "a" + ", a)" * (d - 1))),
    "cond_chain": (LIMIT, cond_chain),
    "cond_then":  (LIMIT, cond_then),
    "right_operands": (LIMIT, right_operands),
    "reduce_body": (LIMIT, reduce_body),
    "let_chain":  (EXPANDED, lets),
    "func_chain": (INLINE, funcs),
}
FAR = 3000   # past the parser's stack for the constructs written in one expression
ERROR = re.compile(r"^t\.nnk:(\d+):(\d+): error: .*(nested too deeply|too deep|deeper than|limit)")

fail = 0
def bad(name, what, out=""):
    global fail
    fail = 1
    print("FAIL %s: %s" % (name, what))
    if out:
        print(out[:2000])

def run(args):
    p = subprocess.run(args, cwd=tmp, capture_output=True, timeout=120)
    return p.returncode, p.stderr.decode("utf-8", "replace")

for name, (limit, gen) in CASES.items():
    src = os.path.join(tmp, "t.nnk")
    with open(src, "w") as f:
        f.write(gen(limit))
    rc, err = run([nnkc, "-S", "--target=c", "t.nnk", "-o", "t.c"])
    if rc != 0 or err:
        bad(name, "nested %d deep (the limit): exit status %d" % (limit, rc), err)
        continue
    rc, err = run(cc + ["-std=c11", "-c", "t.c", "-o", "t.o"])
    if rc != 0:
        bad(name, "the C of the program at the limit does not compile", err)
        continue
    depths = [limit + 1] + ([FAR] if limit == LIMIT else [])
    for d in depths:
        with open(src, "w") as f:
            f.write(gen(d))
        rc, err = run([nnkc, "-S", "--target=c", "t.nnk", "-o", "t.c"])
        lines = err.splitlines()
        if rc != 1:
            bad(name, "nested %d deep: exit status %d, expected 1" % (d, rc), err)
        elif len(lines) < 3 or not ERROR.match(lines[0]) or not re.match(r"^ *\^~*$", lines[2]) \
                or sum(": error:" in l for l in lines) != 1:
            bad(name, "nested %d deep: not one error with its line and caret" % d, err)
        else:
            print("ok   %s: %d compiles, %d is %s" % (name, limit, d, lines[0].split(": ", 1)[1][:60]))
sys.exit(fail)
EOF
