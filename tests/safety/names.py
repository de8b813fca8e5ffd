#!/usr/bin/python3
"""names.py - names the generated code cannot carry (issue: kernel names
such as expf, NULL or constexpr, parameter names such as HUGE_VALF).

Candidates: every row of compiler/names.def, every name the C headers of
this machine declare (header_names.py), examples of the reserved patterns
and a few ordinary names.  For each candidate:
  - as a kernel name: nnkc --check gives a located error on its line, or
    the kernel compiles (gcc -Werror as C, the header as C and as C++,
    nvcc when present) and runs;
  - as a scalar parameter, a tensor parameter and an output name: the
    same.  Parameter names are renamed in C where they would clash, so
    every candidate that the language accepts must compile and run.
Every row of names.def itself must be rejected as a kernel name.

Run by names.sh with the build's nnkc; about 10 s (one nnkc --check per 40
names, one C compile of the accepted kernels at -O0)."""
import os
import re
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
top_srcdir = os.environ.get("top_srcdir") or os.path.join(here, "..", "..")
top_builddir = os.environ.get("top_builddir") or top_srcdir
nnkc = os.path.join(top_builddir, "nnkc")
cc = os.environ.get("CC") or "cc"
cxx = os.environ.get("CXX") or "c++"
nvcc = os.environ.get("NVCC") or ""
sys.path.insert(0, here)
import header_names  # noqa: E402

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def table():
    with open(os.path.join(top_srcdir, "compiler", "names.def")) as f:
        return re.findall(r"NAME\((\w+), (C|CXX|CUDA|OPENCL|GENERATED|HEADER)\)", f.read())


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def error_lines(path):
    """nnkc --check: the set of lines with an error (file:line:col: error)."""
    r = run([nnkc, "--check", "--color=never", path])
    lines = set()
    for m in re.finditer(r"^%s:(\d+):(\d+): error:" % re.escape(path), r.stderr, re.M):
        lines.add(int(m.group(1)))
    return r, lines


def accepted(tmp, names, make_line, what):
    """The names whose line gets no error; checks that each error is located."""
    ok = []
    for c0 in range(0, len(names), 40):
        chunk = names[c0:c0 + 40]
        path = os.path.join(tmp, "%s%d.nnk" % (what, c0))
        with open(path, "w") as f:
            f.write("".join(make_line(n, i) + "\n" for i, n in enumerate(chunk)))
        r, lines = error_lines(path)
        if r.returncode not in (0, 1) or "internal error" in r.stderr:
            fail("%s: nnkc --check crashed (status %d): %s" % (what, r.returncode, r.stderr[-300:]))
            continue
        if r.returncode == 1 and not lines:
            fail("%s: an error without a location: %s" % (what, r.stderr[:300]))
        ok += [n for i, n in enumerate(chunk) if i + 1 not in lines]
    return ok


def build_and_run(tmp, kernels, cuda_kernels, main_body):
    """kernels: .nnk text.  Compiles it every way and runs main_body.
    Only kernel names reach CUDA source (as NAME__ew_c, ...): nvcc, slow,
    compiles cuda_kernels alone."""
    src = os.path.join(tmp, "ok.nnk")
    with open(src, "w") as f:
        f.write(kernels)
    if os.environ.get("NAMES_KEEP"):
        with open(os.environ["NAMES_KEEP"], "w") as f:
            f.write(kernels)
    steps = [
        ([nnkc, "-S", "--target=c", "-O0", src, "-o", os.path.join(tmp, "ok.c")], "nnkc -S"),
        ([cc, "-std=c11", "-O0", "-DNNK_NO_CLONES", "-Wall", "-Wextra", "-Werror", "-c", os.path.join(tmp, "ok.c"), "-o",
          os.path.join(tmp, "ok_s.o")], "gcc -Werror on nnkc -S"),
        ([nnkc, "--emit-header", src, "-o", os.path.join(tmp, "ok.h")], "nnkc --emit-header"),
        ([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c", os.path.join(tmp, "ok.h")],
         "the header as C"),
        ([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c++", os.path.join(tmp, "ok.h")],
         "the header as C++"),
        ([nnkc, "-c", "--no-cuda", "-O0", src, "-o", os.path.join(tmp, "ok.o")], "nnkc -c"),
    ]
    if nvcc and nvcc != "no" and os.access(nvcc, os.X_OK):
        with open(os.path.join(tmp, "names.nnk"), "w") as f:
            f.write(cuda_kernels)
        steps += [([nnkc, "-S", "--target=cuda", os.path.join(tmp, "names.nnk"), "-o", os.path.join(tmp, "ok.cu")],
                   "nnkc -S --target=cuda"),
                  ([nvcc, "-arch=sm_80", "-c", os.path.join(tmp, "ok.cu"), "-o", os.path.join(tmp, "ok_cu.o")],
                   "nvcc on the CUDA source")]
    for cmd, what in steps:
        t0 = time.time()
        r = run(cmd)
        if os.environ.get("NAMES_TIMING"):
            print("%.2f s %s" % (time.time() - t0, what))
        if r.returncode != 0:
            fail("%s: %s" % (what, (r.stderr or r.stdout)[-1500:]))
            return
    main = os.path.join(tmp, "main.c")
    with open(main, "w") as f:
        f.write('#include <stdio.h>\n#include "ok.h"\nint main(void)\n{\n    int bad = 0;\n%s    return bad;\n}\n'
                % main_body)
    exe = os.path.join(tmp, "main")
    r = run([cc, "-std=c11", "-Wall", "-Werror", "-I", tmp, main, os.path.join(tmp, "ok.o"), "-o", exe, "-lm"])
    if r.returncode != 0:
        fail("linking the fat object: " + r.stderr[-1500:])
        return
    r = run([exe])
    if r.returncode != 0:
        fail("running the kernels (status %d): %s" % (r.returncode, r.stdout[-1500:]))


def main():
    rows = table()
    reserved = [n for n, _ in rows]
    patterns = ["k__run", "k__contig", "a__b", "_Foo", "__x", "nnk_k", "NNK_K"]
    ordinary = ["axpy", "y0_", "gamma_", "x_t", "Kernel1", "ctx_", "len2"]
    names = sorted(set(reserved) | set(header_names.names(cc)) | set(patterns) | set(ordinary))
    with tempfile.TemporaryDirectory() as tmp:
        # --- kernel names
        knames = accepted(tmp, names, lambda n, i: "elementwise %s(x: f32[]) -> (y: f32[]) { y = x + 1; }" % n, "kernel")
        for n in set(knames) & (set(reserved) | set(patterns)):
            fail("'%s' is reserved (names.def or a pattern) but nnkc accepts it as a kernel name" % n)
        # --- parameter names (scalar, tensor, output), each alone in a kernel first
        pnames = accepted(tmp, names,
                          lambda n, i: "elementwise p%d(%s: f32, x: f32[]) -> (y: f32[]) { y = x + %s; }" % (i, n, n),
                          "scalar")
        tnames = accepted(tmp, names, lambda n, i: "elementwise t%d(%s: f32[]) -> (y: f32[]) { y = %s * 2; }" % (i, n, n),
                          "tensor")
        onames = accepted(tmp, names, lambda n, i: "elementwise o%d(x: f32[]) -> (%s: f32[]) { %s = x * 3; }" % (i, n, n),
                          "output")
        for n in ordinary:
            for lst, what in ((knames, "kernel"), (pnames, "scalar"), (tnames, "tensor"), (onames, "output")):
                if n not in lst:
                    fail("the ordinary name '%s' is rejected as a %s name" % (n, what))
        # --- what is accepted compiles and runs: kernels packed 15 names at a time
        text, body = [], []
        for i, n in enumerate(knames):
            text.append("elementwise %s(x: f32[]) -> (y: f32[]) { y = x + 1; }" % n)
            body.append('    { float x[2] = {1, 2}, y[2]; %s(2, x, y); if (y[1] != 3) { puts("%s"); bad = 1; } }\n'
                        % (n, n))
        for j in range(0, len(pnames), 15):
            ps = pnames[j:j + 15]
            text.append("elementwise ps%d(%s, x: f32[]) -> (y: f32[]) { y = x + %s; }"
                        % (j, ", ".join("%s: f32" % p for p in ps), " + ".join(ps)))
            args = ", ".join(str(k + 1) for k in range(len(ps)))
            want = sum(range(1, len(ps) + 1)) + 2
            body.append('    { float x[2] = {1, 2}, y[2]; ps%d(2, %s, x, y); if (y[1] != %d) { puts("ps%d"); bad = 1; } }\n'
                        % (j, args, want, j))
        for j in range(0, len(tnames), 15):
            ts = tnames[j:j + 15]
            out = onames[(j // 15) % max(len(onames), 1)] if onames else "y"
            if out in ts:
                out = "y" if "y" not in ts else "yy"
            text.append("elementwise ts%d(%s) -> (%s: f32[]) { %s = %s; }"
                        % (j, ", ".join("%s: f32[]" % t for t in ts), out, out, " + ".join(ts)))
            decl = " ".join("float a%d[2] = {%d, %d};" % (k, k, 2 * k) for k in range(len(ts)))
            args = ", ".join("a%d" % k for k in range(len(ts)))
            want = sum(2 * k for k in range(len(ts)))
            body.append('    { %s float y[2]; ts%d(2, %s, y); if (y[1] != %d) { puts("ts%d"); bad = 1; } }\n'
                        % (decl, j, args, want, j))
        for j in range(0, len(onames), 15):
            os_ = onames[j:j + 15]
            text.append("elementwise os%d(x: f32[]) -> (%s) { %s }"
                        % (j, ", ".join("%s: f32[]" % o for o in os_),
                           " ".join("%s = x * %d;" % (o, k + 1) for k, o in enumerate(os_))))
            decl = " ".join("float y%d[2];" % k for k in range(len(os_)))
            args = ", ".join("y%d" % k for k in range(len(os_)))
            check = " || ".join("y%d[1] != %d" % (k, 2 * (k + 1)) for k in range(len(os_)))
            body.append('    { float x[2] = {1, 2}; %s os%d(2, x, %s); if (%s) { puts("os%d"); bad = 1; } }\n'
                        % (decl, j, args, check, j))
        build_and_run(tmp, "\n".join(text) + "\n", "\n".join(text[:len(knames)]) + "\n", "".join(body))
        print("%d candidate names: %d accepted as kernel names, %d as scalar, %d as tensor, %d as output names"
              % (len(names), len(knames), len(pnames), len(tnames), len(onames)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
