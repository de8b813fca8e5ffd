"""smoke - the first GPU step of tests/gpu/run.sh: the cuda and cudnn
extensions see the GPU, a kernel compiles with NVRTC, runs and gives the
right values, sums in f16/f32/f64, the allocator works."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import nnkrt  # noqa: E402

rt = nnkrt.Runtime(os.environ.get("NNK_LIBNNK") or nnkrt.find_libnnk(os.environ.get("top_builddir", ".")))
for name in ("cuda", "cudnn"):
    e = rt.extension(name)
    print("%s: %d devices: %s" % (name, rt.device_count(e), rt.status(e)))
    for d in rt.devices(e):
        print("  device %d: %s, %.1f GiB" % (d[0], d[1], d[2] / 2 ** 30))
e = rt.extension("cuda")
if rt.device_count(e) == 0:
    sys.exit("the cuda extension sees no GPU: " + rt.status(e))
ctx = rt.context("cuda", "device_id=0")
print(rt.context_str(ctx))
m = rt.module(ctx, "elementwise saxpy(a: f32, x: f32[], y: f32[]) -> (z: f32[]) { z = a * x + y; }\n"
                   "reduction total<T: float>(x: T[]) -> (r: T) { r = sum(x); }\n")
n = 1 << 20
x = np.arange(n, dtype=np.float32) % 97
y = np.ones(n, dtype=np.float32)
dx, dy = rt.from_numpy(ctx, x), rt.from_numpy(ctx, y)
t0 = time.time()
z = rt.launch(m.kernel("saxpy"), [2.0, dx, dy])[0]
print("first launch (code generation, NVRTC, load, run, copy back): %.1f ms" % (1e3 * (time.time() - t0)))
if not np.array_equal(rt.to_numpy(z), 2 * x + y):
    sys.exit("saxpy gives wrong values")
for dt in (np.float32, np.float16, np.float64):
    xs = (x % 8).astype(dt)
    d = rt.from_numpy(ctx, xs)
    r = rt.launch(m.kernel("total"), [d])[0]
    got, want = float(rt.to_numpy(r)), float(xs.astype(np.float64).sum())
    print("sum of %d %s: %r (expected %r)" % (n, np.dtype(dt).name, got, want))
    if abs(got - want) > 1e-3 * want:
        sys.exit("wrong sum")
    rt.free(d)
    rt.free(r)
rt.sync(e, 0)
st = rt.memory_stats(e, 0)
print("allocator: %d bytes in use, %d cached, %d hits, %d misses" % (st.bytes_in_use, st.bytes_cached, st.hits,
                                                                     st.misses))
print("smoke: ok")
