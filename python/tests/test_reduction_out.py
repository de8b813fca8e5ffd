"""out= of a reduction has exactly the shape numpy's reductions require:
the reduced axes dropped, or kept as 1 with keepdims=True; any other shape
(the keepdims shape without keepdims, and the reverse) is a ShapeError, a
ValueError as numpy's."""
import numpy as np
import pytest

import nnk


@pytest.mark.parametrize("kw, shape", [
    ({"axis": 1}, (2, 1, 4)),                       # keepdims' shape without keepdims
    ({"axis": 1, "keepdims": True}, (2, 4)),        # and the reverse
    ({"axis": (0, -1)}, (1, 3, 1)),
    ({"axis": (-1, 0), "keepdims": True}, (3,)),
    ({}, (1, 1, 1)),                                # every axis: a 0-d result
    ({"keepdims": True}, ()),
    ({"axis": -2}, (4,)),                           # right rank, wrong extents
    ({"axis": 1}, (1, 2, 4)),
])
def test_wrong_out_shape(norms, x32, kw, shape):
    with pytest.raises(ValueError):                 # numpy's error for the same out=
        np.sum(x32, out=np.empty(shape, np.float32), **kw)
    with pytest.raises(nnk.ShapeError, match="output 'r' has shape .* but the reduction of shape \\(2, 3, 4\\)"):
        norms.l2norm(x32, out=np.empty(shape, np.float32), **kw)


@pytest.mark.parametrize("kw", [{"axis": 1}, {"axis": 1, "keepdims": True}, {"axis": (0, -1)},
                                {"axis": (-1, 0), "keepdims": True}, {}, {"keepdims": True}, {"axis": -2}])
def test_right_out_shape(norms, x32, kw):
    want = np.sqrt((x32.astype(np.float64) ** 2).sum(**kw))
    out = np.empty(want.shape, np.float32)
    assert norms.l2norm(x32, out=out, **kw) is out
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_message_names_axes_and_keepdims(norms, x32):
    with pytest.raises(nnk.ShapeError) as e:
        norms.l2norm(x32, axis=1, out=np.empty((2, 1, 4), np.float32))
    assert str(e.value) == ("kernel 'l2norm': output 'r' has shape (2, 1, 4), but the reduction of shape (2, 3, 4) "
                            "over axis=(1,) without keepdims gives (2, 4)")
    with pytest.raises(nnk.ShapeError, match="over all axes with keepdims gives \\(1, 1, 1\\)"):
        norms.l2norm(x32, keepdims=True, out=np.empty((), np.float32))


def test_full_shape_output_of_a_reduction(norms, x32):
    y = np.empty_like(x32)                          # softmax's y is not reduced: the input's shape
    assert norms.softmax(x32, axis=-1, out=y) is y
    with pytest.raises(nnk.ShapeError):
        norms.softmax(x32, axis=-1, out=np.empty((2, 3, 1), np.float32))
