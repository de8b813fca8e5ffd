"""PyTorch's ``torch.cuda.jiterator`` over .nnk kernels, on every device.

A function is compiled per dtype signature at its first call with it and
cached; keyword arguments of the creator replace the defaults of scalar
parameters, those of a call set them for that call.
"""
from . import _nnk

__all__ = ["_create_jit_fn", "_create_multi_output_jit_fn"]


def _create_jit_fn(code_string, **kwargs):
    """One kernel of ``code_string`` (an .nnk source) as a callable.

    ``kwargs``: defaults of the kernel's scalar parameters (``alpha=1.0``),
    and ``kernel=NAME`` when the source has several kernels, ``opt_level``.
    A call returns one array, or a tuple when the kernel has several outputs.
    """
    return _nnk.create_jit_fn(code_string, kwargs)


def _create_multi_output_jit_fn(code_string, num_outputs, **kwargs):
    """As :func:`_create_jit_fn`, for a kernel of ``num_outputs`` outputs
    (checked); a call returns a tuple of them."""
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int) or num_outputs < 1:
        raise _nnk.ArgumentError("num_outputs must be a positive int, got %r" % (num_outputs,))
    return _nnk.create_jit_fn(code_string, kwargs, num_outputs)
