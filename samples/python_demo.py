"""python_demo.py - the Python half of the README demo: NNabla's ext_utils
and a jiterator-style function on numpy arrays, then a reduction module.
Checks its results against numpy; exit status 0 when they match."""
import sys

import numpy as np

import nnk
from nnk import ext_utils

# extensions and contexts, as in NNabla's documentation
print("extensions:", ext_utils.list_extensions())
ext = ext_utils.import_extension_module("cpu")
print("cpu devices:", [(d, d.name) for d in ext.get_devices()])
ctx = ext_utils.get_extension_context("cpu", device_id="0", type_config="float")
nnk.set_default_context(ctx)
print("context:", ctx)

# a kernel from a string, compiled at its first call (PyTorch's jiterator)
gelu = nnk.jiterator._create_jit_fn("""
elementwise gelu<T: float>(x: T[], scale: T = 1) -> (y: T[]) {
    y = scale * 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}""", scale=1.0)
x = np.linspace(-3, 3, 1000, dtype=np.float32)
y = gelu(x)                                              # numpy in, numpy out
ref = 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
ok = np.allclose(y, ref, rtol=1e-5, atol=1e-6)
buf = np.empty(1000, np.float16)
gelu(x.astype(np.float16), scale=2.0, out=buf)           # f16 storage, per-call scale, out=
ok &= np.allclose(buf, 2 * ref, rtol=2e-3, atol=2e-3)
print("gelu(x)[:4] =", y[:4], "| 2*gelu(x) in f16:", buf[:4], "| instances:", gelu.cache_size)

# a module: softmax over the last axis
mod = nnk.compile("""
reduction softmax<T: float>(x: T[]) -> (y: T[]) {
    let m = max(x);
    y = exp(x - m) / sum(exp(x - m));
}""", name="softmax.nnk")
s = mod.softmax(x.reshape(10, 100), axis=-1)
ok &= np.allclose(s.sum(axis=-1), 1, rtol=1e-5)
print("softmax rows sum to", s.sum(axis=-1)[:3], "...")
print("python demo:", "all results match numpy" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
