"""Python call overhead of a 1,000-element f32 jit function call (make bench-python).

Side by side in one run: nnk through the Python package (numpy in and out,
nnk.Array in and out, out= given), numexpr and torch eager when importable,
numpy itself for scale, and libnnk's own C launch (bench/runtime_bench) when
the build tree has it.  Each figure is the median of 7 rounds of N calls,
rounds interleaved between the contenders so that machine noise hits all;
the process's CPU time per call is printed next to the wall time (on a
loaded machine the wall time counts other jobs' time slices, the CPU time
does not).
Not a test: nothing is asserted (docs/python.md quotes the figures).
"""
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import nnk

N = int(os.environ.get("NNK_BENCH_CALLS", "20000"))
ROUNDS = 7

x = np.random.default_rng(0).random(1000, dtype=np.float32)
y = np.random.default_rng(1).random(1000, dtype=np.float32)
out = np.empty_like(x)
axpy = nnk.jiterator._create_jit_fn(
    "elementwise axpy(x: f32[], y: f32[], a: f32 = 2) -> (z: f32[]) { z = a * x + y; }")
ax, ay = nnk.asarray(x), nnk.asarray(y)
axpy(x, y)
axpy(ax, ay)

cases = {
    "nnk: numpy in, numpy out": lambda: axpy(x, y),
    "nnk: numpy in, out= given": lambda: axpy(x, y, out=out),
    "nnk: nnk.Array in and out": lambda: axpy(ax, ay),
    "numpy: 2 * x + y (two ufuncs)": lambda: 2 * x + y,
}
try:
    import numexpr

    numexpr.set_num_threads(1)
    numexpr.evaluate("2 * x + y", local_dict={"x": x, "y": y})
    cases["numexpr: evaluate('2 * x + y')"] = lambda: numexpr.evaluate("2 * x + y", local_dict={"x": x, "y": y})
except ImportError:
    print("(numexpr not installed: no numexpr figure)")
try:
    import torch

    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    cases["torch eager: torch.add(ty, tx, alpha=2)"] = lambda: torch.add(ty, tx, alpha=2)
except ImportError:
    print("(torch not installed: no torch figure)")

times = {k: [] for k in cases}
cpu = {k: [] for k in cases}
for _ in range(ROUNDS):
    for name, f in cases.items():
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(N):
            f()
        times[name].append((time.perf_counter() - t0) / N)
        cpu[name].append((time.process_time() - c0) / N)

print("1,000-element f32 call, median of %d rounds of %d calls (python %s, numpy %s, load average %s)"
      % (ROUNDS, N, sys.version.split()[0], np.__version__, " ".join(open("/proc/loadavg").read().split()[:3])
         if os.path.exists("/proc/loadavg") else "?"))
print("  %-42s %10s %10s" % ("", "wall", "CPU time"))
for name, ts in times.items():
    print("  %-42s %7.2f us %7.2f us" % (name, statistics.median(ts) * 1e6, statistics.median(cpu[name]) * 1e6))

bench = os.path.join(os.path.dirname(nnk.__file__), "..", "..", "..", "bench", "runtime_bench")
if os.path.exists(bench):
    r = subprocess.run([bench], capture_output=True, text=True, timeout=300)
    for line in r.stdout.splitlines():
        if line.startswith("launch"):
            print("  C (bench/runtime_bench): " + line)
