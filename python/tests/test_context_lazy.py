"""get_extension_context builds a Context without asking the device, as
NNabla's nnabla.ext_utils.get_extension_context(ext_name, **kw) does (it
calls the extension module's context(device_id='0', type_config='float',
**kw), which only lists backends): an extension without devices, or a
device_id past them, is the error of the context's first use."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import nnk
from nnk import ext_utils


def test_signature_as_nnabla():
    params = list(inspect.signature(ext_utils.get_extension_context).parameters.values())
    assert [(p.name, p.kind) for p in params] == [("ext_name", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                                 ("kw", inspect.Parameter.VAR_KEYWORD)]
    ctx = ext_utils.get_extension_context(ext_name="cpu", device_id=0)
    assert isinstance(ctx, nnk.Context) and ctx.device_id == "0"      # a str, as NNabla's


def test_type_configs():
    want = {"float": ["cpu:float"], "half": ["cpu:half", "cpu:float"], "mixed_half": ["cpu:mixed_half", "cpu:float"]}
    for tc, backends in want.items():
        ctx = ext_utils.get_extension_context("cpu", type_config=tc)
        assert (ctx.backend, ctx.type_config) == (backends, tc)
        assert str(ctx).endswith("type_config=" + tc)
    mixed = ext_utils.get_extension_context("cpu", type_config="mixed_half")
    assert mixed != ext_utils.get_extension_context("cpu", type_config="half")
    with nnk.context_scope(mixed):
        assert nnk.empty(2).dtype == "float16"          # half's dtype: nnk has no float master weights
    with pytest.raises(nnk.ArgumentError, match="float, half or mixed_half"):
        ext_utils.get_extension_context("cpu", type_config="double")


def test_device_id_past_the_devices_fails_at_first_use(add):
    ctx = ext_utils.get_extension_context("cpu", device_id="3")    # made: nothing asked of the device
    assert ctx.device_id == "3" and ctx.backend == ["cpu:float"]
    x = np.ones(3, np.float32)
    msg = "device_id 3 out of range: extension 'cpu' has 1 device"
    with pytest.raises(nnk.ArgumentError, match=msg):
        nnk.empty(3, ctx=ctx)
    with pytest.raises(nnk.ArgumentError, match=msg):
        add(x, x, ctx=ctx)
    with pytest.raises(nnk.ArgumentError, match=msg):
        nnk.asarray(x, ctx=ctx, dtype="float16")
    with pytest.raises(nnk.ArgumentError, match="device_id"):
        ext_utils.get_extension_context("cpu", device_id=-1)        # not a device id at all


CUDA_CHILD = r"""
import numpy as np, nnk
from nnk import ext_utils
ext = ext_utils.import_extension_module("cuda")
if ext.get_device_count():
    print("HAS-GPU")
    raise SystemExit(0)
ctx = ext_utils.get_extension_context("cuda", device_id="0", type_config="half")
assert ctx.backend == ["cuda:half", "cuda:float", "cpu:float"], ctx.backend
assert (ctx.device_id, ctx.type_config) == ("0", "half")
assert ext_utils.get_extension_context("cudnn").backend[0] == "cudnn:float"
k = nnk.jiterator._create_jit_fn("elementwise k(x: f32[]) -> (y: f32[]) { y = x; }")
for use in (lambda: k(np.ones(3, np.float32), ctx=ctx), lambda: nnk.empty(3, ctx=ctx),
            lambda: ext.device_synchronize("0"), lambda: ext.memory_stats(0)):
    try:
        use()
    except nnk.DeviceError as e:
        assert "extension 'cuda' has no devices" in str(e) and ext.status in str(e), e
    else:
        raise AssertionError("no DeviceError")
with nnk.context_scope(ctx):
    try:
        nnk.zeros(2)
    except nnk.DeviceError:
        pass
    else:
        raise AssertionError("no DeviceError in the scope")
print("OK")
"""


def test_cuda_without_a_gpu():
    """The build tree's cuda extension (found through NNK_EXTENSION_PATH, in
    a child process: extensions load once per process) on a machine without
    a GPU: the context is made, its first use is nnk.DeviceError."""
    libs = os.path.abspath(".libs")     # tests/python/run.sh runs in the build tree
    if not os.path.exists(os.path.join(libs, "libnnk_ext_cuda.so")):
        pytest.skip("the cuda extension is not built in %s" % libs)
    env = dict(os.environ, NNK_EXTENSION_PATH=libs)
    r = subprocess.run([sys.executable, "-c", CUDA_CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    if "HAS-GPU" in r.stdout:
        pytest.skip("this machine has a GPU")
    assert r.stdout.strip().endswith("OK")
