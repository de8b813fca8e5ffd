#!/bin/sh
# The C library functions that are not correctly rounded (cosh, cbrt, tan,
# pow, f64 exp and sin, ...) give the same bits at -O0 and -O2 when a kernel
# reaches them with constants: gcc folds coshf(10.0f) with MPFR, correctly
# rounded, where glibc's call is 1 ulp away, so sinh(c64(10 - 2j)) gave
# another imaginary part at -O2 than at -O0 and than the JIT's run-time
# value (docs/c-backend.md, "The same bits"; found by tests/fuzz on the
# jit-function path).  The prelude hides such an argument from the
# folding (NNK_OPAQUE).  Each function of a constant and of a run-time
# value equal to it, at -O0 and -O2: one set of bits.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
NNKC=$nnkc CC=$cc TMP=$tmp exec "${PYTHON:-python3}" - <<'EOF'
import ctypes, os, struct, subprocess, sys

nnkc, cc, tmp = os.environ["NNKC"], os.environ["CC"].split(), os.environ["TMP"]
# the complex functions of constants: nnk's folder takes real functions
# of constants, not complex ones, so gcc was the one to fold these
CASES = [("sinh", "10.0", "-2.0"), ("cosh", "10.0", "-2.0"), ("tanh", "0.4", "1.3"), ("tan", "1.2", "0.3"),
         ("exp", "0.7", "2.9"), ("log", "3.3", "-0.2"), ("sin", "1.1", "4.0"), ("cos", "2.1", "-1.5"),
         ("sqrt", "-3.3", "0.4")]
lines = []
for t, p in (("c64", "f32"), ("c128", "f64")):
    for i, (f, a, b) in enumerate(CASES):
        c = "%s(%s(%s, %s))" % (f, t, a, b)
        v = "%s(%s(x + %s, %s))" % (f, t, a, b)
        lines.append("elementwise k%s_%d(x: %s[]) -> (cr: %s[], ci: %s[], vr: %s[], vi: %s[]) "
                     "{ cr = real(%s); ci = imag(%s); vr = real(%s); vi = imag(%s); }" % (
                         t, i, p, p, p, p, p, c, c, v, v))
src = os.path.join(tmp, "k.nnk")
open(src, "w").write("\n".join(lines) + "\n")
csrc = os.path.join(tmp, "k.c")
subprocess.run([nnkc, "-S", "--target=c", src, "-o", csrc], check=True)
bits = {}
for opt in ("-O0", "-O2"):
    so = os.path.join(tmp, "k%s.so" % opt)
    subprocess.run(cc + ["-std=c11", opt, "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-shared",
                         csrc, "-o", so, "-lm"], check=True)
    lib = ctypes.CDLL(so)
    for t, T, fmt in (("c64", ctypes.c_float, "I"), ("c128", ctypes.c_double, "Q")):
        for i, (f, a, b) in enumerate(CASES):
            x, outs = (T * 1)(0), [(T * 1)() for _ in range(4)]
            getattr(lib, "k%s_%d" % (t, i))(ctypes.c_int64(1), x, *outs)
            got = [struct.unpack(fmt, bytes(o))[0] for o in outs]
            bits.setdefault((t, f), []).append((opt, got))
fail = 0
for (t, f), runs in sorted(bits.items()):
    seen = {(g[0], g[1]) for _, g in runs} | {(g[2], g[3]) for _, g in runs}
    if len(seen) != 1:
        print("FAIL: %s of a %s constant: %s" % (f, t, ", ".join(
            "%s constant %#x %#x run-time %#x %#x" % ((o,) + tuple(g)) for o, g in runs)))
        fail = 1
print("libm-constants: %d complex functions x 2 types, %s" % (len(CASES), "FAIL" if fail else "one set of bits each"))
sys.exit(fail)
EOF
