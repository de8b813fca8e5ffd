#!/usr/bin/env python3
"""bench/perf/online.py: the one-pass softmax and Welford rewrites
(docs/language.md, "Tuple state") against the same kernels in two passes, through the runtime
(nnk.compile: the JIT, the thread pool), on rows that do not fit in the
cache: ROWS x 2^LOG2 f32 (default 64 x 2^20, 256 MiB in).

    PYTHONPATH=BUILDDIR/python/stage /usr/bin/python3 bench/perf/online.py [--rows 64] [--log2 20] [--reps 7]

The rewrites are made at -O3 (docs/language.md says why not at -O2); the
two-pass kernels write the sum as sum(exp(-(m - x))) and the squares as
abs(x - mu) * abs(x - mu), the same values, which they do not match; both at -O3 (the same C flags).  Before each run the caches are evicted (a 96 MiB write).
Prints the median time of each and the ratio; numpy's two-pass softmax as a
reference.  No timing is asserted anywhere.
"""
import argparse
import statistics
import time

import numpy as np

import nnk

SRC = """
reduction softmax(x: f32[]) -> (y: f32[]) {
    let m = max(x);
    let s = sum(exp(x - m));
    y = exp(x - m) / s;
}
reduction logsumexp(x: f32[]) -> (r: f32) {
    let m = max(x);
    r = m + log(sum(exp(x - m)));
}
reduction variance(x: f32[]) -> (m: f32, v: f32) {
    let mu = mean(x);
    m = mu;
    v = mean((x - mu) * (x - mu));
}
reduction layernorm(x: f32[], gamma: f32[], beta: f32[], eps: f32 = 1e-5) -> (y: f32[]) {
    let mu = mean(x);
    let v = mean((x - mu) * (x - mu));
    y = (x - mu) * rsqrt(v + eps) * gamma + beta;
}
"""
# the same values in two passes: -(m - x) is x - m and |d| * |d| is d * d,
# bit for bit, but not the patterns the rewrites look for (the C compiled
# with the same flags)
SRC2 = SRC.replace("exp(x - m));", "exp(-(m - x)));").replace(
    "mean((x - mu) * (x - mu))", "mean(abs(x - mu) * abs(x - mu))")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--log2", type=int, default=20)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    x = np.random.default_rng(0).uniform(-20, 20, (a.rows, 1 << a.log2)).astype(np.float32)
    y = np.empty_like(x)
    r = np.empty(a.rows, np.float32)
    flush = np.empty(96 << 18, np.float32)
    mods = {0: nnk.compile(SRC2, opt_level=3), 2: nnk.compile(SRC, opt_level=3)}
    def timed(f):
        ts = []
        for _ in range(a.reps + 1):
            flush.fill(1.0)
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts[1:])
    print("# %d rows of 2^%d f32 (%d MiB), median of %d runs" % (a.rows, a.log2, x.nbytes >> 20, a.reps))
    res = {}
    r2 = np.empty(a.rows, np.float32)
    g = np.ones(1 << a.log2, np.float32)
    b = np.zeros(1 << a.log2, np.float32)
    cases = (("softmax", (x,), y), ("logsumexp", (x,), r), ("variance", (x,), (r, r2)), ("layernorm", (x, g, b), y))
    for k, args, out in cases:
        for opt in (0, 2):
            f = getattr(mods[opt], k)
            res[k, opt] = timed(lambda: f(*args, axis=1, out=out))
        print("%-10s two passes %8.2f ms   one pass %8.2f ms   two / one %.2f"
              % (k, res[k, 0] * 1e3, res[k, 2] * 1e3, res[k, 0] / res[k, 2]))
    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
    print("%-10s numpy %8.2f ms" % ("softmax", timed(np_softmax) * 1e3))
    print("%-10s numpy %8.2f ms" % ("variance", timed(lambda: x.var(axis=1)) * 1e3))


if __name__ == "__main__":
    main()
