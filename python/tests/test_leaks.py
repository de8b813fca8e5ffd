"""Reference counts and memory stay flat over 100k calls.  Under ASan
(tests/python/run.sh sets NNK_PY_SANITIZED) the loop is shorter and the RSS
bound is not checked: the quarantine keeps freed blocks; the refcounts and
nnk's own bytes in use still are."""
import sys

import numpy as np
import pytest

import nnk
from nnk import ext_utils

from conftest import SANITIZED


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_calls_do_not_leak(add):
    n = 20_000 if SANITIZED else 100_000
    x = np.ones(1000, np.float32)
    out = np.empty(1000, np.float32)
    a = nnk.asarray(x)
    cpu = ext_utils.import_extension_module("cpu")

    def loop(k):
        for _ in range(k):
            add(x, x)
            add(a, x, alpha=2.0, out=out)
            add(a, a)

    loop(2000)
    refs = (sys.getrefcount(x), sys.getrefcount(out), sys.getrefcount(a))
    in_use = cpu.memory_stats()["bytes_in_use"]
    rss = rss_kib()
    loop(n)
    grown = rss_kib() - rss
    assert (sys.getrefcount(x), sys.getrefcount(out), sys.getrefcount(a)) == refs
    assert cpu.memory_stats()["bytes_in_use"] == in_use
    if not SANITIZED:   # ASan's quarantine holds freed blocks: RSS grows without a leak
        assert grown < 2048, "RSS grew by %d KiB over %d calls" % (grown, 3 * n)


def test_exports_do_not_leak():
    x = np.ones(100, np.float32)
    a = nnk.asarray(x)
    for _ in range(2000):
        np.from_dlpack(a)
        a.__dlpack__(max_version=(1, 0))
        nnk.asarray(x)
        memoryview(a)
    refs = (sys.getrefcount(x), sys.getrefcount(a))
    rss = rss_kib()
    for _ in range(20_000):
        np.from_dlpack(a)
        a.__dlpack__(max_version=(1, 0))
        nnk.asarray(x)
        memoryview(a)
    assert (sys.getrefcount(x), sys.getrefcount(a)) == refs
    if not SANITIZED:
        assert rss_kib() - rss < 1024
