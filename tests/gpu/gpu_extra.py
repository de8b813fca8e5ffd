"""gpu_extra - what tests/gpu/run.sh checks beyond the conformance suite,
through the cuda extension (nnkrt, libnnk):

  big      arrays of over 2^31 elements: an elementwise kernel (ew_c64) and
           a sum over all of them (the split path), against numpy;
  views    unaligned (offset 1), offset, negative-stride and broadcast
           device views, elementwise and reductions, against numpy;
  threads  launches from several threads at once on one context, each
           result checked;
  ptx      the PTX JIT fallback (NNK_CUDA_PTX=1 in a child process: the
           driver compiles NVRTC's PTX), and the status says so;
  cudnn    a plain sum through the cudnn extension, and its status counts
           it as run by cuDNN;
  rows     softmax and layer norm over 600 rows on each side of the
           kernels' boundaries (rd_row's registers to 4096, rd_srow's shared
           memory to 48 KB and to the opt-in limit, rd_block past it),
           f16 and bf16 rows (kept as floats), against numpy;
  levels   the same module at opt_level 0 and 2 compiled by two threads at
           once (the NVRTC settings gate), identical results, and the
           extension's status asked from several threads.

    gpu_extra.py [--ext cuda|cpu] [PART...]     (default: big to cudnn)

--ext cpu runs the parts on the cpu extension with small sizes (a dry run
of this script without a GPU; ptx and cudnn are skipped there).  Exit 0
when every part passed."""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import nnkrt  # noqa: E402

SRC = """
elementwise inc(x: i8[]) -> (y: i8[]) { y = x + 1; }
reduction isum(x: i8[]) -> (r: i64) { r = sum(i64(x)); }
elementwise scale<T: float>(x: T[], a: T) -> (y: T[]) { y = a * x; }
reduction rsum<T: float>(x: T[]) -> (r: T) { r = sum(x); }
reduction softmax<T: float>(x: T[]) -> (y: T[]) { let m = max(x); let s = sum(exp(x - m)); y = exp(x - m) / s; }
reduction layernorm(x: f32[], g: f32[], b: f32[]) -> (y: f32[]) {
    let m = mean(x); let v = mean((x - m) * (x - m)); y = (x - m) * rsqrt(v + 1e-5) * g + b; }
"""

EXT = "cuda"
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)


def part_big(rt, ctx, m):
    n = (1 << 31) + 4099 if EXT != "cpu" else (1 << 20) + 3
    x = (np.arange(n, dtype=np.int64) % 7 - 3).astype(np.int8)
    d = rt.from_numpy(ctx, x)
    y = rt.launch(m.kernel("inc"), [d])[0]
    yh = rt.to_numpy(y)
    idx = np.array([0, 1, n // 2, (1 << 31) - 1 if n > 1 << 31 else n - 2, n - 1])
    check(yh.shape == (n,) and np.array_equal(yh[idx], x[idx] + 1) and int(yh[-4099:].astype(np.int64).sum()) ==
          int(x[-4099:].astype(np.int64).sum()) + 4099, "elementwise over %d i8 elements" % n)
    rt.free(y)
    r = rt.launch(m.kernel("isum"), [d])[0]
    got, want = int(rt.to_numpy(r)), int(x.astype(np.int64).sum())
    check(got == want, "sum of %d i8 elements: %d (expected %d)" % (n, got, want))
    rt.free(r)
    rt.free(d)


def part_views(rt, ctx, m):
    rng = np.random.default_rng(3)
    for n in (1025, 100003):
        x = rng.standard_normal(n + 8).astype(np.float32)
        d = rt.from_numpy(ctx, x)
        for name, (a, b, st) in (("unaligned (offset 1)", (1, n + 1, 1)), ("offset 5", (5, n + 5, 1)),
                                 ("step 3", (2, n + 2, 3)), ("negative step", (n + 4, 3, -1))):
            v = rt.slice(d, a, b, st)
            xv = x[a:b:st]
            y = rt.launch(m.kernel("scale"), [v, 2.5])[0]
            check(np.array_equal(rt.to_numpy(y), (np.float32(2.5) * xv).astype(np.float32)),
                  "scale of a %s view of %d" % (name, n))
            r = rt.launch(m.kernel("rsum"), [v])[0]
            want = xv.astype(np.float64).sum()
            check(abs(float(rt.to_numpy(r)) - want) <= 1e-5 * np.abs(xv).sum() + 1e-6,
                  "sum of a %s view of %d" % (name, n))
            rt.free(y)
            rt.free(r)
            rt.free(v)
        rt.free(d)
    # broadcast: a row against many rows (stride 0), softmax over the rows
    row = rng.standard_normal((1, 4097)).astype(np.float32)
    d = rt.from_numpy(ctx, row)
    b = rt.broadcast_to(d, (300, 4097))
    s = rt.launch(m.kernel("softmax"), [b], axes=[1])[0]
    e = np.exp(row.astype(np.float64) - row.max())
    want = np.broadcast_to(e / e.sum(), (300, 4097)).astype(np.float32)
    got = rt.to_numpy(s)
    check(np.allclose(got, want, rtol=1e-5, atol=1e-7), "softmax of a broadcast (stride 0) 300 x 4097 view")
    r = rt.launch(m.kernel("rsum"), [b], axes=[0])[0]
    check(np.allclose(rt.to_numpy(r), 300 * row[0].astype(np.float64), rtol=1e-5, atol=1e-4),
          "column sums of a broadcast view")
    for a in (s, r, b, d):
        rt.free(a)


def part_threads(rt, ctx, m):
    n, nthreads, rounds = 1 << 18, 6, 20
    errors = []

    def work(k):
        try:
            x = (np.arange(n, dtype=np.float32) % (k + 3)).astype(np.float32)
            d = rt.from_numpy(ctx, x)
            for _ in range(rounds):
                y = rt.launch(m.kernel("scale"), [d, float(k + 1)])[0]
                r = rt.launch(m.kernel("rsum"), [y])[0]
                got, want = float(rt.to_numpy(r)), float(x.astype(np.float64).sum() * (k + 1))
                if abs(got - want) > 1e-4 * want:
                    errors.append("thread %d: %r, expected %r" % (k, got, want))
                rt.free(y)
                rt.free(r)
            rt.free(d)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("thread %d: %s" % (k, e))

    th = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    check(not errors, "%d threads x %d launches pairs on one context%s" % (nthreads, rounds,
                                                                          ": " + "; ".join(errors[:3]) if errors else ""))


def part_ptx():
    code = ("import os, sys, numpy as np; sys.path.insert(0, %r); import nnkrt\n"
            "rt = nnkrt.Runtime(os.environ.get('NNK_LIBNNK'))\n"
            "ctx = rt.context('cuda', 'device_id=0')\n"
            "m = rt.module(ctx, %r, 'name=ptx.nnk')\n"
            "x = np.arange(100003, dtype=np.float32) %% 11\n"
            "r = rt.launch(m.kernel('rsum'), [rt.from_numpy(ctx, x)])[0]\n"
            "print('sum', float(rt.to_numpy(r)), float(x.astype(np.float64).sum()))\n"
            "print('status', rt.status(rt.extension('cuda')))\n" % (os.path.dirname(os.path.abspath(__file__)), SRC))
    env = dict(os.environ, NNK_CUDA_PTX="1", NNK_CACHE="0")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    print(out.strip())
    line = [ln for ln in out.splitlines() if ln.startswith("sum ")]
    ok = p.returncode == 0 and line and abs(float(line[0].split()[1]) - float(line[0].split()[2])) < 1
    check(bool(ok), "the PTX JIT path (NNK_CUDA_PTX=1) gives the right sum")
    check("PTX JIT by the driver" in out, "the status says the driver JIT-compiles PTX")


def part_cudnn(rt):
    e = rt.extension("cudnn")
    if rt.device_count(e) == 0:
        check(False, "cudnn has no devices: %s" % rt.status(e))
        return
    ctx = rt.context("cudnn", "device_id=0")
    m = rt.module(ctx, "reduction total(x: f32[]) -> (r: f32) { r = sum(x); }\n", "name=dnn.nnk")
    x = np.arange(1 << 20, dtype=np.float32) % 13
    before = rt.status(e)
    r = rt.launch(m.kernel("total"), [rt.from_numpy(ctx, x)])[0]
    got = float(rt.to_numpy(r))
    after = rt.status(e)
    print("cudnn status: %s" % after)

    def count(s):
        w = s.split(" reduction")[0].split()
        return int(w[-1]) if w and w[-1].isdigit() else -1
    check(abs(got - float(x.astype(np.float64).sum())) < 1e-3 * got, "cudnn sum value")
    check("cuDNN" in after and count(after) == count(before) + 1,
          "cuDNN ran the sum (status: %d -> %d reductions by cuDNN)" % (count(before), count(after)))


def part_rows(rt, ctx, m):
    rng = np.random.default_rng(5)
    rows = 600 if EXT != "cpu" else 2
    # (4097: past the registers; 12285: past 48 KB; 57000 and 60000: either
    # side of an H200's opt-in 227 KB)
    for n in ((4096, 4097, 12285, 57000, 60000) if EXT != "cpu" else (4097, 12285)):
        x = rng.standard_normal((rows, n)).astype(np.float32)
        d = rt.from_numpy(ctx, x)
        y = rt.launch(m.kernel("softmax"), [d], axes=[1])[0]
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        check(np.allclose(rt.to_numpy(y), want, rtol=1e-4, atol=1e-9), "softmax of %d rows of %d" % (rows, n))
        g = rt.from_numpy(ctx, np.full(n, 1.5, np.float32))
        b = rt.from_numpy(ctx, np.full(n, 0.25, np.float32))
        z = rt.launch(m.kernel("layernorm"), [d, g, b], axes=[1])[0]
        x64 = x.astype(np.float64)
        mu = x64.mean(axis=1, keepdims=True)
        ln = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5) * 1.5 + 0.25
        check(np.allclose(rt.to_numpy(z), ln, rtol=1e-4, atol=1e-4), "layer norm of %d rows of %d" % (rows, n))
        for a in (y, z, g, b, d):
            rt.free(a)
    for dt, n in (("f16", 3000), ("f16", 12285)):
        x = rng.standard_normal((rows, n)).astype(np.float16)
        d = rt.from_numpy(ctx, x)
        y = rt.launch(m.kernel("softmax"), [d], axes=[1])[0]
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True).astype(np.float64))
        want = e / e.sum(axis=1, keepdims=True)
        check(np.allclose(rt.to_numpy(y).astype(np.float64), want, rtol=2e-3, atol=1e-7),
              "softmax<%s> of %d rows of %d" % (dt, rows, n))
        rt.free(y)
        rt.free(d)


def part_levels(rt, ctx):
    out, errors = {}, []

    def work(level):
        try:
            mod = rt.module(ctx, SRC, "name=levels%d.nnk opt_level=%d" % (level, level))
            x = np.random.default_rng(9).standard_normal((700, 2000)).astype(np.float32)
            d = rt.from_numpy(ctx, x)
            y = rt.launch(mod.kernel("softmax"), [d], axes=[1])[0]
            out[level] = rt.to_numpy(y)
            rt.free(y)
            rt.free(d)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("opt_level %d: %s" % (level, e))

    th = [threading.Thread(target=work, args=(lv,)) for lv in (0, 2)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    check(not errors and 0 in out and 2 in out and out[0].tobytes() == out[2].tobytes(),
          "softmax compiled at opt_level 0 and 2 at once: the same bits%s" % (": " + "; ".join(errors) if errors else ""))
    e = rt.extension(EXT)
    lines = []
    th = [threading.Thread(target=lambda: lines.append(rt.status(e))) for _ in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    check(len(lines) == 4 and len(set(lines)) == 1 and (lines[0] or EXT == "cpu"),
          "the status from 4 threads: %s" % lines[0][:120])


def main():
    global EXT
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "--ext":
        EXT = argv[1]
        argv = argv[2:]
    parts = argv or ["big", "views", "threads", "ptx", "cudnn"]  # run.sh runs rows and levels as a step of their own
    rt = nnkrt.Runtime(os.environ.get("NNK_LIBNNK") or nnkrt.find_libnnk(os.environ.get("top_builddir", ".")))
    ctx = rt.context(EXT, "device_id=0" if EXT != "cpu" else "")
    m = rt.module(ctx, SRC, "name=extra.nnk")

    k = m
    for p in parts:
        t0 = time.time()
        if p in ("ptx", "cudnn") and EXT == "cpu":
            print("skip %s (needs a GPU)" % p)
            continue
        try:
            if p == "big":
                part_big(rt, ctx, k)
            elif p == "views":
                part_views(rt, ctx, k)
            elif p == "threads":
                part_threads(rt, ctx, k)
            elif p == "ptx":
                part_ptx()
            elif p == "cudnn":
                part_cudnn(rt)
            elif p == "rows":
                part_rows(rt, ctx, k)
            elif p == "levels":
                part_levels(rt, ctx)
            else:
                check(False, "unknown part %s" % p)
        except Exception as e:  # noqa: BLE001 - every part runs
            check(False, "%s: %s" % (p, e))
        print("# %s: %.1fs" % (p, time.time() - t0), flush=True)
    print("gpu_extra: %s" % ("ok" if not failures else "%d failed: %s" % (len(failures), "; ".join(failures[:5]))))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
