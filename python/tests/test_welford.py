"""The Welford rewrite (docs/language.md, "Tuple state") through the
runtime: at opt_level=3 the variance after a mean is one pass whose state
merges along the same tree for every thread count of the pool, so the
results have the same bits with NNK_NUM_THREADS=1, 2 and 3 (the pool's
size is read once per process: one process each), and match the two-pass
form (opt_level=2) within its accuracy."""
import os
import subprocess
import sys

import numpy as np

PROG = r"""
import sys
import numpy as np
import nnk
m = nnk.compile('''
reduction variance(x: f32[]) -> (m: f32, v: f32) {
    let mu = mean(x);
    m = mu;
    v = mean((x - mu) * (x - mu));
}''', opt_level=int(sys.argv[1]))
x = (1e3 + np.random.default_rng(5).uniform(-50, 50, (4, 300007))).astype(np.float32)
out = [r for axis in (1, 0) for r in m.variance(x, axis=axis)]
np.savez(sys.argv[2], *out)
"""


def run(tmp_path, threads, opt):
    f = str(tmp_path / ("t%s-O%d.npz" % (threads, opt)))
    env = dict(os.environ, NNK_NUM_THREADS=threads)
    subprocess.run([sys.executable, "-c", PROG, str(opt), f], check=True, env=env)
    with np.load(f) as z:
        return [z["arr_%d" % i] for i in range(4)]


def test_same_bits_for_every_thread_count(tmp_path):
    first = run(tmp_path, "1", 3)
    for nt in ("2", "3"):
        for a, b in zip(first, run(tmp_path, nt, 3)):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    two = run(tmp_path, "2", 2)
    x = (1e3 + np.random.default_rng(5).uniform(-50, 50, (4, 300007))).astype(np.float32).astype(np.float64)
    for axis, (m1, v1), (m2, v2) in ((1, first[:2], two[:2]), (0, first[2:], two[2:])):
        np.testing.assert_array_equal(m1, m2)   # the mean's reducer is untouched
        np.testing.assert_allclose(v1, x.var(axis=axis), rtol=1e-5)
        np.testing.assert_allclose(v2, x.var(axis=axis), rtol=1e-5)
