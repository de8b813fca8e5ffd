"""samples/indexed: the stencil, the gather, the two matrix multiplies and
axpy of indexed.nnk through the nnk Python module, checked against numpy;
then the matrix multiplies timed against numpy's matmul (best of 5).

    PYTHONPATH=build/python/stage /usr/bin/python3 samples/indexed/indexed_demo.py [N]
"""
import os
import sys
import time

import numpy as np

import nnk

HERE = os.path.dirname(os.path.abspath(__file__))


def best(f, reps=5):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    m = nnk.load(os.path.join(HERE, "indexed.nnk"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    xp = np.concatenate([x[:1], x, x[-1:]])
    y = m.stencil3(x, out=np.empty_like(x))
    assert np.allclose(y, 0.25 * xp[:-2] + 0.5 * xp[1:-1] + 0.25 * xp[2:], rtol=1e-6)
    table = rng.standard_normal(50).astype(np.float32)
    k = rng.integers(-10, 60, size=200).astype(np.int32)
    assert np.array_equal(m.gather(table, k), table[np.clip(k, 0, 49)])
    yy = np.ones(1000, np.float32)
    m.axpy(2.0, x, yy)
    assert np.array_equal(yy, np.float32(1) + np.float32(2) * x)

    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    space = np.broadcast_to(np.float32(0), (n, n, n))
    ref = a @ b
    c1 = m.mm(a[:, :, None], b[None, :, :], axis=1)
    c2 = m.mm_raw(a, b, space, axis=1)
    tol = 1e-4 * n
    assert np.abs(c1 - ref).max() < tol and np.abs(c2 - ref).max() < tol
    t_np = best(lambda: a @ b)
    t1 = best(lambda: m.mm(a[:, :, None], b[None, :, :], axis=1))
    t2 = best(lambda: m.mm_raw(a, b, space, axis=1))
    print("matmul %dx%dx%d f32: numpy %.3f ms, mm (broadcast product) %.3f ms (%.0fx numpy), "
          "mm_raw %.3f ms (%.0fx numpy)" % (n, n, n, t_np * 1e3, t1 * 1e3, t1 / t_np, t2 * 1e3, t2 / t_np))
    print("indexed samples: OK")


if __name__ == "__main__":
    main()
