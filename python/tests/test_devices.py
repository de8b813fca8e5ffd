"""Arrays in device memory nnk cannot read directly: samples/extension/host2.c
(two devices, memory reached only through the extension's copies), built
here as a third party would and found through NNK_EXTENSION_PATH."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import nnk
from nnk import ext_utils

SRCDIR = os.environ.get("top_srcdir") or os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.fixture(scope="module")
def host2(tmp_path_factory):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build samples/extension/host2.c")
    d = tmp_path_factory.mktemp("ext")
    src = os.path.join(SRCDIR, "samples", "extension", "host2.c")
    inc = os.path.join(SRCDIR, "runtime", "include")
    # the extension is host code the runtime calls: no sanitizer flags (it
    # links nothing of libnnk's)
    subprocess.run(cc.split() + ["-std=c11", "-shared", "-fPIC", "-I" + inc, src, "-o",
                                 str(d / "libnnk_ext_host2.so")], check=True)
    old = os.environ.get("NNK_EXTENSION_PATH")
    os.environ["NNK_EXTENSION_PATH"] = str(d)
    try:
        yield ext_utils.import_extension_module("host2")
    finally:
        if old is None:
            del os.environ["NNK_EXTENSION_PATH"]
        else:
            os.environ["NNK_EXTENSION_PATH"] = old


def test_device_arrays(host2, add):
    assert "host2" in ext_utils.list_extensions()
    devs = host2.get_devices()
    assert devs == ["0", "1"] and not devs[1].host_accessible
    # an extension without get_device_props: what get_devices gave, the rest unknown
    assert (devs[1].vendor, devs[1].driver_version, devs[1].unified_memory) == ("", "", None)
    ctx = host2.context(device_id=1)
    assert ctx.backend == ["host2:float", "cpu:float"]
    x = np.arange(6, dtype=np.float32)
    a = nnk.asarray(x, ctx=ctx)
    assert a.device == "host2:1" and nnk.asarray(a, ctx=ctx) is a
    z = add(a, a, ctx=ctx)
    assert isinstance(z, nnk.Array) and z.device == "host2:1"
    np.testing.assert_array_equal(z.numpy(), 2 * x)                 # a copy through the host
    np.testing.assert_array_equal(z.to("cpu").numpy(), 2 * x)
    assert nnk.asarray(z, ctx="cpu").device == "cpu:0"
    with pytest.raises(BufferError):
        memoryview(z)                                               # not host memory
    with pytest.raises(BufferError):
        z.__dlpack__()                                              # no DLPack device type for it
    with pytest.raises(nnk.UnsupportedError):
        add(a, x, ctx=ctx)                                          # one array here, one there
    with pytest.raises(nnk.UnsupportedError):
        add(a, a)                                                   # the default context is cpu's
    with nnk.context_scope(ctx):
        e = nnk.zeros(3)
        assert e.device == "host2:1" and e.numpy().tolist() == [0, 0, 0]
        out = nnk.empty(6, dtype="float32")
        assert add(a, z, out=out) is out
    np.testing.assert_array_equal(out.numpy(), 3 * x)
    host2.device_synchronize(1)
    assert host2.memory_stats(1)["bytes_in_use"] > 0
    del a, z, e, out
    assert host2.clear_memory_cache() >= 0


def test_cpu_device_props():
    """The cpu device: the processor's vendor as /proc/cpuinfo names it,
    nnk as the driver, host memory."""
    d = ext_utils.import_extension_module("cpu").get_devices()[0]
    assert d.host_accessible and d.unified_memory is True
    assert d.driver_version == "nnk " + nnk.__version__
    try:
        with open("/proc/cpuinfo") as f:
            want = next((l.split(":", 1)[1].strip() for l in f
                         if l.startswith("vendor_id") or l.startswith("CPU implementer")), "")
    except OSError:
        want = ""
    assert d.vendor == want
