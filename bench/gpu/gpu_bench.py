"""gpu_bench - nnk's generated CUDA on a GPU against the device's copy
bandwidth, PyTorch and CuPy (each peer only when it imports), and the
NVRTC JIT's cold compile and cache hits.  Prints one line per
measurement and a summary of the ratios against their goals:

  elementwise bandwidth / device-to-device copy bandwidth   goal >= 0.9
  torch.sum time / nnk sum time                               goal >= 1.0
  torch softmax, layer_norm (rows) time / nnk time            goal >= 1.2
  rd_warp / rd_block time / rd_row time (the row on chip)      reported
  torch.sum(dim=1) of rows (1e6 x 64: a warp per row) / nnk  goal >= 1.0
  torch broadcast add time / nnk (the strided path)          goal >= 1.0

    gpu_bench.py [--ext cuda|cudnn|cpu] [--scale S] [--quick] [--rows-only]

--scale multiplies the problem sizes (default 1: 2^28 floats for the
bandwidth and sum tests); --ext cpu --scale 0.001 checks this script on a
machine without a GPU.  Environment: top_builddir or NNK_LIBNNK (libnnk),
NNK_EXTENSION_PATH.  Exit 0 when every measurement ran (goals are
reported, not enforced), 1 on an error.  --rows-only times the rows of
softmax and layer norm only, one line each (the child that runs the
per-phase kernels under NNK_CUDA_FORCE).
"""
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("top_srcdir") or os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "gpu"))

import numpy as np  # noqa: E402

import nnkrt  # noqa: E402

SOURCE = """
elementwise scale(x: f32[], a: f32) -> (y: f32[]) { y = a * x; }
elementwise badd(x: f32[], y: f32[]) -> (z: f32[]) { z = x + y; }
reduction total(x: f32[]) -> (r: f32) { r = sum(x); }
reduction softmax(x: f32[]) -> (y: f32[]) {
    let m = max(x);
    let s = sum(exp(x - m));
    y = exp(x - m) / s;
}
reduction layernorm(x: f32[], eps: f32 = 1e-5) -> (y: f32[]) {
    let mu = mean(x);
    let var = mean((x - mu) * (x - mu));
    y = (x - mu) * rsqrt(var + eps);
}
"""

results = []      # (name, value, goal or None, unit)


def report(name, value, goal=None, unit="x"):
    results.append((name, value, goal, unit))
    mark = "" if goal is None else ("  (goal >= %.2f: %s)" % (goal, "met" if value >= goal else "BELOW GOAL"))
    print("bench: %-58s %10.3f %s%s" % (name, value, unit, mark), flush=True)


def best_time(fn, sync, iters, reps=5):
    """The best per-iteration time of `iters` calls, over `reps` repetitions."""
    fn()
    sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / iters)
    return min(ts)


def peers():
    out = {}
    try:
        import torch
        if torch.cuda.is_available():
            out["torch"] = torch
            print("bench: PyTorch %s (CUDA %s) on %s" % (torch.__version__, torch.version.cuda,
                                                      torch.cuda.get_device_name(0)), flush=True)
        else:
            print("bench: PyTorch %s has no CUDA device: skipped" % torch.__version__, flush=True)
    except Exception as e:  # noqa: BLE001 - any import problem means: no peer
        print("bench: no PyTorch (%s): skipped" % str(e).splitlines()[0][:100], flush=True)
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        out["cupy"] = cupy
        print("bench: CuPy %s" % cupy.__version__, flush=True)
    except Exception as e:  # noqa: BLE001
        print("bench: no CuPy (%s): skipped" % str(e).splitlines()[0][:100], flush=True)
    return out


# Rows of softmax and layer norm, with the kernel dispatch.c gives each on
# 132 SMs (docs/cuda-backend.md): rd_row keeps the row on chip (16 slots a
# thread for these f32 kernels: rows of up to 512 in a warp, 4096 in a
# block) and reads it once; rd_warp and rd_block read it once per phase.
ROW_SHAPES = [((1 << 20, 32), "row on chip, a warp a row"), ((65536, 512), "row on chip, a warp a row"),
              ((16384, 4096), "row on chip, a block a row"), ((65536, 1024), "rd_warp, read per phase"),
              ((8192, 8192), "rd_block, read per phase")]
# the per-phase kernel with the same bits as each rd_row shape (NNK_CUDA_FORCE)
ROW_TWIN = {"a warp a row": ("4", "rd_warp"), "a block a row": ("1", "rd_block")}


def row_shapes(scale):
    return [((max(int(r * scale), 8), c), path) for (r, c), path in ROW_SHAPES]


def rows_bench(rt, ctx, m, sync, P, iters, scale, quiet):
    """Softmax and layer norm over the rows of ROW_SHAPES: GB/s (a read and
    a write of every element), a check of the first rows, the time against
    PyTorch's; returns {(kernel, rows, cols): seconds}."""
    rng = np.random.default_rng(1)
    times = {}
    for (rows, cols), path in row_shapes(scale):
        xr = rng.standard_normal((rows, cols), dtype=np.float32)
        d = rt.from_numpy(ctx, xr)
        o = rt.new(ctx, "f32", [rows, cols])
        for kname in ("softmax", "layernorm"):
            a = rt.args()
            rt.fill_args(a, [d], [o], axes=[1])
            kern = m.kernel(kname)
            t = best_time(lambda: rt.launch_args(kern, a), sync, iters)
            rt.lib.nnk_args_free(a)
            times[(kname, rows, cols)] = t
            got = rt.to_numpy(o)[:4]
            if kname == "softmax":
                e = np.exp(xr[:4].astype(np.float64) - xr[:4].max(axis=1, keepdims=True))
                ref = e / e.sum(axis=1, keepdims=True)
            else:
                mu = xr[:4].astype(np.float64).mean(axis=1, keepdims=True)
                ref = (xr[:4] - mu) / np.sqrt(((xr[:4] - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
            if not np.allclose(got, ref, rtol=1e-3, atol=1e-5):
                raise SystemExit("bench: wrong %s result (%d x %d)" % (kname, rows, cols))
            if quiet:
                continue
            report("%s of %d rows x %d (%s): nnk" % (kname, rows, cols, path), 2 * 4 * rows * cols / t / 1e9,
                   unit="GB/s")
            if "torch" in P:
                torch = P["torch"]
                tx = torch.from_numpy(xr).cuda()
                if kname == "softmax":
                    tt = best_time(lambda: torch.softmax(tx, dim=-1), torch.cuda.synchronize, iters)
                else:
                    tt = best_time(lambda: torch.nn.functional.layer_norm(tx, (cols,), eps=1e-5),
                                   torch.cuda.synchronize, iters)
                report("torch %s time / nnk time (%d x %d)" % (kname, rows, cols), tt / t, 1.2)
                del tx
        rt.free(d)
        rt.free(o)
    return times


def per_phase_twins(times, scale):
    """The rd_row shapes once more in a child forced onto the per-phase twin
    (rd_warp, rd_block: the same bits, the row read per phase), reported as
    twin time / rd_row time (above 1: keeping the row on chip pays)."""
    import subprocess
    for tag, (force, kernel) in sorted(ROW_TWIN.items()):
        env = dict(os.environ, NNK_CUDA_FORCE=force)
        try:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--ext", "cuda", "--scale", repr(scale),
                                  "--rows-only", "--quick"], env=env, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            print("bench: the per-phase twin (%s) took over 30 s: not measured" % kernel, flush=True)
            continue
        twin = {}
        for line in out.stdout.splitlines():
            f = line.split()
            if len(f) == 6 and f[1] == "rows-time":
                twin[(f[2], int(f[3]), int(f[4]))] = float(f[5])
        if out.returncode != 0 or not twin:
            print("bench: the per-phase twin (%s) failed: %s" % (kernel, (out.stdout + out.stderr)[-400:]), flush=True)
            continue
        for (rows, cols), path in row_shapes(scale):
            if not path.endswith(tag):
                continue
            for kname in ("softmax", "layernorm"):
                key = (kname, rows, cols)
                if key in twin and key in times:
                    report("%s time / rd_row time, %s (%d x %d)" % (kernel, kname, rows, cols), twin[key] / times[key])


def main():
    argv = sys.argv[1:]
    ext_name, scale, quick, rows_only = "cuda", 1.0, False, False
    while argv:
        a = argv.pop(0)
        if a == "--ext":
            ext_name = argv.pop(0)
        elif a == "--scale":
            scale = float(argv.pop(0))
        elif a == "--quick":
            quick = True
        elif a == "--rows-only":
            rows_only = True
        else:
            print(__doc__)
            return 2
    # a fresh disk cache: the first compile below is cold (the rows-only
    # child shares its parent's)
    if not (rows_only and os.environ.get("NNK_CACHE_DIR")):
        os.environ["NNK_CACHE_DIR"] = tempfile.mkdtemp(prefix="nnk-bench-cache-")
    build = os.environ.get("top_builddir") or os.getcwd()
    rt = nnkrt.Runtime(os.environ.get("NNK_LIBNNK") or nnkrt.find_libnnk(build))
    ext = rt.extension(ext_name)
    if rt.device_count(ext) == 0:
        print("bench: extension %s has no devices: %s" % (ext_name, rt.status(ext)))
        return 1
    print("bench: %s: %s" % (ext_name, ", ".join("%s (%.0f GiB)" % (d[1], d[2] / 2 ** 30) for d in rt.devices(ext))),
          flush=True)
    ctx = rt.context(ext_name, "device_id=0")
    sync = lambda: rt.sync(ext, 0)  # noqa: E731
    P = peers() if ext_name != "cpu" else {}
    iters = 3 if quick else 10
    if rows_only:
        times = rows_bench(rt, ctx, rt.module(ctx, SOURCE), sync, P, iters, scale, True)
        for (kname, rows, cols), t in sorted(times.items()):
            print("bench: rows-time %s %d %d %.9g" % (kname, rows, cols, t), flush=True)
        rt.lib.nnk_context_free(ctx)
        return 0

    # ---- the JIT: cold compile, disk hit, memory hit ----
    tag = "%d_%d" % (os.getpid(), int(time.time()))
    src = SOURCE.replace("scale(", "scale_%s(" % tag)
    x_small = rt.from_numpy(ctx, np.ones(1024, np.float32))

    def first_launch(mod):
        t0 = time.perf_counter()
        ys = rt.launch(mod.kernel("scale_%s" % tag), [x_small, 2.0])
        sync()
        t = time.perf_counter() - t0
        for y in ys:
            rt.free(y)
        return t

    m1 = rt.module(ctx, src)
    t_cold = first_launch(m1)
    t_warm = best_time(lambda: [rt.free(y) for y in rt.launch(m1.kernel("scale_%s" % tag), [x_small, 2.0])], sync, 20)
    m2 = rt.module(ctx, src)
    t_mem = first_launch(m2)
    rt.lib.nnk_module_free(m1.m)
    rt.lib.nnk_module_free(m2.m)
    rt.clear_cache(ext)
    m3 = rt.module(ctx, src)
    t_disk = first_launch(m3)
    rt.lib.nnk_module_free(m3.m)
    report("JIT: cold compile (NVRTC + load) of a new kernel", 1e3 * (t_cold - t_warm), unit="ms")
    report("JIT: disk cache hit (another process, or after clear)", 1e3 * (t_disk - t_warm), unit="ms")
    report("JIT: memory cache hit (another module, same code)", 1e3 * (t_mem - t_warm), unit="ms")
    report("launch overhead, 1024-element scale (launch + sync)", 1e6 * t_warm, unit="us")
    rt.free(x_small)

    m = rt.module(ctx, SOURCE)
    n = max(1024, int((1 << 28) * scale))
    rng = np.random.default_rng(0)
    xh = rng.random(n, dtype=np.float32)
    x = rt.from_numpy(ctx, xh)
    y = rt.new(ctx, "f32", [n])
    nbytes = 4 * n

    # ---- bandwidth ----
    t_copy = best_time(lambda: rt.copy(y, x), sync, iters)
    bw_copy = 2 * nbytes / t_copy
    report("device-to-device copy, %d MiB (nnk_array_copy)" % (nbytes >> 20), bw_copy / 1e9, unit="GB/s")
    args = rt.args()
    rt.fill_args(args, [x, 1.5], [y])
    k_scale = m.kernel("scale")
    t_ew = best_time(lambda: rt.launch_args(k_scale, args), sync, iters)
    bw_ew = 2 * nbytes / t_ew
    report("elementwise y = a * x, f32, %d MiB in and out" % (nbytes >> 20), bw_ew / 1e9, unit="GB/s")
    report("elementwise bandwidth / copy bandwidth", bw_ew / bw_copy, 0.9)
    got = rt.to_numpy(y)[:4096]
    if not np.allclose(got, 1.5 * xh[:4096]):
        raise SystemExit("bench: wrong elementwise result")
    if "torch" in P:
        torch = P["torch"]
        tx = torch.from_numpy(xh).cuda()
        ty = torch.empty_like(tx)
        tc = best_time(lambda: ty.copy_(tx), torch.cuda.synchronize, iters)
        tm = best_time(lambda: torch.mul(tx, 1.5, out=ty), torch.cuda.synchronize, iters)
        report("torch copy_ bandwidth", 2 * nbytes / tc / 1e9, unit="GB/s")
        report("torch.mul time / nnk elementwise time", tm / t_ew)
    if "cupy" in P:
        cp = P["cupy"]
        cx = cp.asarray(xh)
        cy = cp.empty_like(cx)
        tm = best_time(lambda: cp.multiply(cx, np.float32(1.5), out=cy), cp.cuda.runtime.deviceSynchronize, iters)
        report("cupy.multiply time / nnk elementwise time", tm / t_ew)

    # ---- sum ----
    r = rt.new(ctx, "f32", [])
    sargs = rt.args()
    rt.fill_args(sargs, [x], [r])
    k_total = m.kernel("total")
    t_sum = best_time(lambda: rt.launch_args(k_total, sargs), sync, iters)
    report("sum of %d f32 (%d MiB): nnk" % (n, nbytes >> 20), nbytes / t_sum / 1e9, unit="GB/s")
    s_nnk = float(rt.to_numpy(r))
    s_ref = float(xh.astype(np.float64).sum())
    if abs(s_nnk - s_ref) > 1e-4 * abs(s_ref) + 1e-3:
        raise SystemExit("bench: wrong sum: %r, expected %r" % (s_nnk, s_ref))
    if "torch" in P:
        torch = P["torch"]
        ts = best_time(lambda: torch.sum(tx), torch.cuda.synchronize, iters)
        report("torch.sum time / nnk sum time", ts / t_sum, 1.0)
    if "cupy" in P:
        cp = P["cupy"]
        ts = best_time(lambda: cp.sum(cx), cp.cuda.runtime.deviceSynchronize, iters)
        report("cupy.sum time / nnk sum time", ts / t_sum)
    if ext_name == "cuda":
        try:
            dctx = rt.context("cudnn", "device_id=0")
            dm = rt.module(dctx, SOURCE)
            dx = rt.from_numpy(dctx, xh)
            dr = rt.new(dctx, "f32", [])
            dargs = rt.args()
            rt.fill_args(dargs, [dx], [dr])
            dext = rt.extension("cudnn")
            td = best_time(lambda: rt.launch_args(dm.kernel("total"), dargs), lambda: rt.sync(dext, 0), iters)
            report("sum through the cudnn extension: nnk cuda time / cudnn time", t_sum / td)
            print("bench: cudnn status: %s" % rt.status(dext), flush=True)
            for a in (dx, dr):
                rt.free(a)
            rt.lib.nnk_args_free(dargs)
            rt.lib.nnk_context_free(dctx)
        except nnkrt.NnkError as e:
            print("bench: cudnn extension not measured: %s" % e, flush=True)
    rt.lib.nnk_args_free(args)
    rt.lib.nnk_args_free(sargs)
    for a in (x, y, r):
        rt.free(a)

    # ---- rows: softmax and layer norm ----
    times = rows_bench(rt, ctx, m, sync, P, iters, scale, False)
    if ext_name == "cuda":
        per_phase_twins(times, scale)
    # ---- row sums (short rows: a warp per row) and split sums of several sizes ----
    sum_cases = [("rows", int(1000000 * scale) or 64, 64), ("rows", int(65536 * scale) or 8, 1024)]
    sum_cases += [("split", 1, int(n * scale) or 4096) for n in (1 << 20, 1 << 24)]
    for kind, rows, cols in sum_cases:
        xr = rng.standard_normal((rows, cols), dtype=np.float32)
        d = rt.from_numpy(ctx, xr)
        o = rt.new(ctx, "f32", [rows])
        a = rt.args()
        rt.fill_args(a, [d], [o], axes=[1])
        t = best_time(lambda: rt.launch_args(k_total, a), sync, iters)
        rt.lib.nnk_args_free(a)
        report("sum of %d rows x %d (%s): nnk" % (rows, cols, kind), 4 * rows * cols / t / 1e9, unit="GB/s")
        got = rt.to_numpy(o)
        if not np.allclose(got, xr.astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-3):
            raise SystemExit("bench: wrong row sums (%d x %d)" % (rows, cols))
        if "torch" in P:
            torch = P["torch"]
            tx = torch.from_numpy(xr).cuda()
            ts = best_time(lambda: torch.sum(tx, dim=1), torch.cuda.synchronize, iters)
            report("torch.sum time / nnk sum time (%d x %d)" % (rows, cols), ts / t, 1.0)
            del tx
        rt.free(d)
        rt.free(o)

    # ---- broadcast elementwise (NAME__ew_s, 32-bit offsets) against the copy ----
    rows, cols = int(16384 * scale) or 8, 4096
    col = rt.from_numpy(ctx, rng.standard_normal((rows, 1), dtype=np.float32))
    row = rt.from_numpy(ctx, rng.standard_normal((1, cols), dtype=np.float32))
    o = rt.new(ctx, "f32", [rows, cols])
    a = rt.args()
    rt.fill_args(a, [col, row], [o])
    k_badd = m.kernel("badd")
    t = best_time(lambda: rt.launch_args(k_badd, a), sync, iters)
    rt.lib.nnk_args_free(a)
    report("broadcast add %d x %d (strided path): nnk" % (rows, cols), 4 * rows * cols / t / 1e9, unit="GB/s")
    if "torch" in P:
        torch = P["torch"]
        tc, tr = torch.randn(rows, 1, device="cuda"), torch.randn(1, cols, device="cuda")
        to = torch.empty(rows, cols, device="cuda")
        tt = best_time(lambda: torch.add(tc, tr, out=to), torch.cuda.synchronize, iters)
        report("torch broadcast add time / nnk time", tt / t, 1.0)
        del tc, tr, to
    for arr in (col, row, o):
        rt.free(arr)

    st = rt.memory_stats(ext, 0)
    print("bench: allocator: %d MiB cached, peak %d MiB in use, %d hits, %d misses" % (
        st.bytes_cached >> 20, st.peak_bytes_in_use >> 20, st.hits, st.misses), flush=True)
    rt.lib.nnk_context_free(ctx)

    print("bench: summary (ratio, goal):")
    for name, value, goal, unit in results:
        if goal is not None:
            print("bench:   %-56s %8.3f  >= %.2f  %s" % (name, value, goal, "met" if value >= goal else "BELOW GOAL"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
