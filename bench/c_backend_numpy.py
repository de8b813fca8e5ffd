"""The kernels of c_backend.nnk written with numpy (one thread), for
bench/c_backend.sh: prints `kernel<TAB>seconds` (best of BENCH_REPS runs).
Each is the fastest plain numpy form we know (in-place where it helps)."""
import os
import sys
import time

import numpy as np

reps = int(os.environ.get("BENCH_REPS", "5"))
n, rows, cols = 1 << 25, 4096, 4096
rng = np.random.default_rng(1)
x = (rng.random(n, dtype=np.float32) * 8 - 4)
y = rng.random(n, dtype=np.float32)
z = np.empty_like(x)
b = np.arange(cols, dtype=np.float32) / cols


def best(fn):
    t = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def triad():
    np.multiply(x, np.float32(2.5), out=z)
    np.add(z, y, out=z)


def gelu():
    t = z
    np.multiply(x, x, out=t)
    t *= x
    t *= np.float32(0.044715)
    t += x
    t *= np.float32(0.7978845608028654)
    np.tanh(t, out=t)
    t += np.float32(1)
    t *= x
    t *= np.float32(0.5)


x2 = x[:rows * cols].reshape(rows, cols)
z2 = z[:rows * cols].reshape(rows, cols)


def softmax():
    m = x2.max(axis=1, keepdims=True)
    np.subtract(x2, m, out=z2)
    np.exp(z2, out=z2)
    np.divide(z2, z2.sum(axis=1, keepdims=True), out=z2)


out = sys.stdout
out.write("triad\t%.6f\n" % best(triad))
out.write("sum\t%.6f\n" % best(lambda: np.sum(x)))
out.write("gelu\t%.6f\n" % best(gelu))
out.write("softmax rows\t%.6f\n" % best(softmax))
out.write("sum over axis 0\t%.6f\n" % best(lambda: x2.sum(axis=0)))
out.write("x + bias[None, :]\t%.6f\n" % best(lambda: np.add(x2, b, out=z2)))
