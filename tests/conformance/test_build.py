"""Properties of the generated C that are not numbers:
  * it compiles without a warning under -std=c11 -Wall -Wextra -Werror
    (and the project's stricter set) with gcc at -O0/-O2/-O3 and with clang,
    and so does each of the three parts nnkc -c compiles (-DNNK_PART=1..3);
  * the header from `nnkc --emit-header` compiles alone as C11 and as C++17;
  * gcc vectorizes the contiguous loops (-fopt-info-vec): the loop of
    saxpy__contig and the group-of-lanes loop of a sum reduction, at -O3
    and at plain -O2 (no -ffast-math);
  * `nnkc -S` twice gives the same bytes;
  * with gcc on x86-64 the loops have an AVX2 clone (target_clones), and
    every kernel of the test files gives the same bits with the clones as
    compiled for the baseline alone (-DNNK_NO_CLONES), and the same as the
    object of nnkc -c, which compiles the C in three parts;
  * parameter names that are C/C++ keywords or that the entry points use
    themselves still give working code.
"""
import ctypes
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnkconf as C  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "kernels")
SAMPLES = os.path.join(C.SRCDIR, "samples")
STRICT = ["-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes",
          "-Wpointer-arith", "-Wwrite-strings", "-Wpedantic"]


def work(name):
    d = os.path.join(C.WORK, "build")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def nnkc(*args):
    return C.run([C.NNKC] + list(args))


def sources():
    """Small and medium .nnk files: the samples and a few test kernels."""
    out = [os.path.join(KERNELS, f) for f in ("abi.nnk", "half.nnk", "names.nnk", "vector.nnk")]
    if os.path.isdir(SAMPLES):
        for f in sorted(os.listdir(SAMPLES)):
            if f.endswith(".nnk"):
                out.append(os.path.join(SAMPLES, f))
        for d in sorted(os.listdir(SAMPLES)):
            sub = os.path.join(SAMPLES, d)
            if os.path.isdir(sub):
                out += [os.path.join(sub, f) for f in sorted(os.listdir(sub)) if f.endswith(".nnk")]
    return out


def compilers():
    cc = [(C.CC, "cc")]
    if shutil.which("clang") and C.CC != "clang":
        cc.append(("clang", "clang"))
    return cc


def test_warning_free_c():
    for src in sources():
        base = os.path.splitext(os.path.basename(src))[0]
        cfile = work(base + ".c")
        nnkc("-S", "--target=c", "-I", os.path.dirname(src), src, "-o", cfile)
        for cc, tag in compilers():
            for opt in (["-O0"], ["-O2"], ["-O3"]) if tag == "cc" else (["-O2"],):
                cmd = [cc, "-std=c11"] + opt + STRICT + ["-c", cfile, "-o", work(base + ".o")]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
                C.check(p.returncode == 0, "%s %s: warnings or errors:\n%s" % (tag, " ".join(opt), p.stdout[:3000]))
            # the three parts nnkc -c compiles (templates/c/prelude.tmpl NNK_PART); gcc warns of
            # unused functions only when it compiles, clang when it parses
            for part in (1, 2, 3):
                opt = ["-O0", "-fPIC", "-c", "-o", work(base + ".o")] if tag == "cc" else ["-fsyntax-only"]
                cmd = [cc, "-std=c11", "-DNNK_PART=%d" % part] + STRICT + opt + [cfile]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
                C.check(p.returncode == 0, "%s part %d: warnings or errors:\n%s" % (tag, part, p.stdout[:3000]))


def test_header_compiles_alone():
    # another generated header in the same translation unit (both embed nnk/abi.h)
    nnkc("--emit-header", os.path.join(KERNELS, "abi.nnk"), "-o", work("abi.h"))
    for src in sources():
        base = os.path.splitext(os.path.basename(src))[0]
        h = work(base + ".h")
        nnkc("--emit-header", "-I", os.path.dirname(src), src, "-o", h)
        main = work(base + "_main.c")
        with open(main, "w") as f:
            f.write('#include "%s"\n#include "%s"\n#include "%s"\nint main(void) { return 0; }\n' % (h, h, work("abi.h")))
        for lang, std, cc in (("c", "-std=c11", C.CC), ("c++", "-std=c++17", os.environ.get("CXX") or "g++")):
            if not shutil.which(cc.split()[0]):
                continue
            cmd = [cc, std, "-x", lang, "-Wall", "-Wextra", "-Werror", "-Wpedantic", main, "-o", work(base + "_main")]
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            C.check(p.returncode == 0, "header of %s as %s:\n%s" % (base, lang, p.stdout[:3000]))


def _functions(cfile):
    """line number -> name of the function defined around it."""
    names, cur = {}, None
    pat = re.compile(r"^(?:static\s+)?(?:inline\s+)?(?:const\s+)?[A-Za-z_][\w ]*?\**\s*\b([A-Za-z_]\w*)\s*\(")
    hot = re.compile(r"^NNK_HOT(?:_INLINE)?\([\w ]+\*?\s*,\s*(\w+)\)\(")   # the loops (prelude.tmpl)
    with open(cfile) as f:
        for n, line in enumerate(f, 1):
            m = hot.match(line) or pat.match(line)
            if m and not line.rstrip().endswith(";"):
                cur = m.group(1)
            names[n] = cur
    return names


def _vectorized(cfile, flags):
    cmd = [C.CC, "-std=c11"] + flags + ["-fopt-info-vec-optimized", "-c", cfile, "-o", os.devnull]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    C.check(p.returncode == 0, "compile failed: %s" % p.stdout[:2000])
    fn = _functions(cfile)
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r".*?:(\d+):\d+: optimized: loop vectorized", line)
        if m:
            n = int(m.group(1))
            out.setdefault(fn.get(n), set()).add(n)
    return out


def _is_gcc():
    v = subprocess.run([C.CC, "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout.lower()
    return "clang" not in v and ("gcc" in v or "free software" in v)


def test_vectorized_loops():
    src = os.path.join(KERNELS, "vector.nnk")
    cfile = work("vector.c")
    nnkc("-S", "--target=c", src, "-o", cfile)
    text = open(cfile).read().splitlines()
    if not _is_gcc():
        print("  (not gcc: -fopt-info-vec checks skipped)")
        return
    for flags in (["-O3"], ["-O2"]):
        v = _vectorized(cfile, flags)
        what = " ".join(flags)
        C.check("saxpy__contig" in v, "%s: the loop of saxpy__contig is vectorized (got %s)" % (what, sorted(k for k in v if k)))
        leaf = v.get("vsum__acc1", set())
        lane_loops = [n for n in leaf if "g < ng" in text[n - 1] or "j < NNK_LANES" in text[n - 1]]
        C.check(lane_loops, "%s: the lane-group loop of vsum__acc1 is vectorized (vectorized lines in it: %s)" % (what, sorted(leaf)))
        # (gelu's tanhf is a libm call: without -ffast-math and libmvec it stays scalar)
        for f in ("vsum__cleaf1", "vcenter__epirow", "vcenter__cepirow", "relu_bias__contig", "vsum_i32__acc1",
                  "vmax__acc1"):
            C.check(f in v, "%s: a loop of %s is vectorized" % (what, f))


def test_deterministic_output():
    for src in sources()[:4] + [os.path.join(KERNELS, "reductions.nnk")]:
        outs = []
        for k in range(2):
            o = work("det%d.c" % k)
            nnkc("-S", "--target=c", src, "-o", o)
            h = work("det%d.h" % k)
            nnkc("--emit-header", src, "-o", h)
            outs.append((open(o, "rb").read(), open(h, "rb").read()))
        C.check(outs[0] == outs[1], "nnkc -S / --emit-header of %s twice: different bytes" % os.path.basename(src))


def test_parameter_names():
    k = C.load("kernels/names.nnk")
    p = np.arange(5, dtype=np.float32)
    views = np.ones(5, dtype=np.float32)
    i = np.full(5, 2, dtype=np.float32)
    v_ = np.full(5, 7, dtype=np.float32)
    d, p_ = k.clash(p, 3.0, views, i, 0.5, v_)
    C.equal(d, p * 3 + views + i * 0.5, "params named p, rc, views, int, len")
    C.equal(p_, v_, "params named views_, p_")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    inner, full_ = k.rclash(x, 2.0, x, axes=1)
    C.equal(inner, (x * 2 + x).sum(axis=1), "params named axes, naxes, outer, inner")
    C.equal(full_, x, "an output named full_")
    inner2, full2 = C.contig_call(k.rclash, (3, 4, 1), x, 2.0, x)
    C.equal(inner2.ravel(), inner, "the [outer, len, inner] entry with those names")


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _instances(cfile):
    return re.findall(r"^extern const nnk_kernel_desc (\w+)__desc;", open(cfile).read(), re.M)


def _random(dtype, shape, rng):
    if dtype in ("f16", "bf16", "f32", "f64"):
        a = rng.uniform(-4, 4, shape).astype(np.float64)
        flat = a.reshape(-1)
        specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, 80.0, -80.0]
        for i in range(0, flat.size, 37):
            flat[i] = specials[(i // 37) % len(specials)]
        return a
    if dtype == "bool":
        return rng.random(shape) < 0.5
    lo = -100 if dtype.startswith("i") else 0
    return rng.integers(lo, 200, shape).astype(C.NP[dtype])


def _outcome(k, shape, axes, seed):
    rng = np.random.default_rng(seed)
    args = []
    for p in k.inputs:
        if p.tensor:
            args.append(_random(p.dtype, shape, rng))
        elif p.has_default:
            args.append(None)
        else:
            args.append(True if p.dtype == "bool" else 1.5 if p.dtype[0] in "fb" else 3)
    while args and args[-1] is None:
        args.pop()
    if any(a is None for a in args):
        return "unsupported"
    try:
        r = k(*args, axes=axes) if k.reduction else k(*args)
    except C.Error as e:
        return "error: %s" % e
    return [np.asarray(o).tobytes() for o in (r if isinstance(r, tuple) else (r,))]


def test_multiarch_clones_agree():
    files = ["vmath.nnk", "half.nnk", "vector.nnk", "abi.nnk"]   # (the big files take a minute to compile)
    x86 = os.uname().machine == "x86_64" and sys.platform.startswith("linux")
    cases = [((1,), None), ((7,), None), ((33,), None), ((1000,), None), ((4099,), None),
             ((5, 1031), None), ((5, 1031), 1), ((1031, 5), 0)]
    compared = 0
    for f in files:
        so, cfile = C.build("kernels/" + f)
        if x86 and _is_gcc():
            syms = C.run(["nm", so]).stdout
            C.check(re.search(r"__contig\.avx2|__acc1\.avx2", syms),
                    "%s: no AVX2 clones of the loops in the object (nm: no '.avx2' symbols)" % f)
        clones = C.load("kernels/" + f)
        base = C.load("kernels/" + f, cflags=C.CFLAGS + ["-DNNK_NO_CLONES"], tag="-noclones")
        for name in _instances(cfile):
            for n, (shape, axes) in enumerate(cases):
                ka, kb = getattr(clones, name), getattr(base, name)
                if not ka.reduction and axes is not None:
                    continue
                a, b = _outcome(ka, shape, axes, n), _outcome(kb, shape, axes, n)
                C.check(a == b, "%s %s shape %s axes %s: the AVX2 clones and the baseline differ" % (f, name, shape, axes))
                compared += 1
    C.check(compared > 200, "only %d kernel calls compared" % compared)
    if "avx2" not in _cpu_flags():
        print("  (this CPU has no AVX2: both builds ran the baseline code)")


def test_object_parts_agree():
    """nnkc -c compiles the C in three parts (the code but the loops, the
    loops for the baseline, for AVX2: templates/c/prelude.tmpl NNK_PART)
    linked into one object: every kernel of the files gives the same bits
    as the one-file build with target_clones."""
    files = ["vmath.nnk", "half.nnk"]   # (elementwise with vector math, f16/bf16 reductions)
    cases = [((7,), None), ((1000,), None), ((5, 1031), 1), ((1031, 5), 0)]
    compared = 0
    env = dict(os.environ, NNK_CC=C.CC)
    for f in files:
        src = os.path.join(KERNELS, f)
        obj, so = work(f + ".parts.o"), work(f + ".parts.so")
        C.run([C.NNKC, "-c", "--no-cuda", src, "-o", obj], env=env)
        C.run([C.CC, "-shared", obj, "-o", so, "-lm"])
        if os.uname().machine == "x86_64" and sys.platform.startswith("linux") and _is_gcc():
            syms = C.run(["nm", so]).stdout
            C.check(re.search(r"__avx2\b", syms) and re.search(r"__base\b", syms),
                    "%s: no NAME__base/NAME__avx2 loops in the object of nnkc -c (nm)" % f)
        _, cfile = C.build("kernels/" + f)
        parts, whole = C.Module(so, cfile), C.load("kernels/" + f)
        for name in _instances(cfile):
            for n, (shape, axes) in enumerate(cases):
                ka, kb = getattr(parts, name), getattr(whole, name)
                if not ka.reduction and axes is not None:
                    continue
                a, b = _outcome(ka, shape, axes, n), _outcome(kb, shape, axes, n)
                C.check(a == b, "%s %s shape %s axes %s: nnkc -c's object and the one-file build differ"
                        % (f, name, shape, axes))
                compared += 1
    C.check(compared > 40, "only %d kernel calls compared" % compared)


if __name__ == "__main__":
    sys.exit(C.main(globals()))
