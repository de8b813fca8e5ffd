"""torch CPU tensors through DLPack (skipped, visibly, without torch)."""
import numpy as np
import pytest

import nnk

torch = pytest.importorskip("torch", reason="torch is not installed: DLPack interop with torch untested")


def test_torch_in_nnk_array_out(add):
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = add(t, t, alpha=2.0)
    assert isinstance(y, nnk.Array) and y.shape == (2, 3)
    ty = torch.from_dlpack(y)
    assert torch.equal(ty, 3 * t)
    assert ty.data_ptr() == torch.from_dlpack(y).data_ptr()      # no copy


def test_torch_views_and_out(add):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    v = t.T[1:]
    np.testing.assert_array_equal(add(v, v).numpy(), 2 * v.numpy())
    out = torch.empty(3, 4)
    assert add(t, t, out=out) is out
    assert torch.equal(out, 2 * t)
    a = nnk.asarray(t)
    t[0, 0] = 100
    assert a.numpy()[0, 0] == 100


def test_torch_half_and_bf16(add):
    t = torch.ones(4, dtype=torch.float16)
    assert add(t, t).dtype == "float16"
    b = torch.ones(4, dtype=torch.bfloat16)
    assert add(b, b).dtype == "bfloat16"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for torch")
def test_torch_cuda_refused(add):
    t = torch.ones(4, device="cuda")
    with pytest.raises(nnk.UnsupportedError):
        add(t, t)
