"""nnk for Python: .nnk kernels on numpy arrays, DLPack tensors and buffers.

The extension API follows NNabla's ``nnabla.ext_utils`` (:mod:`nnk.ext_utils`),
jit functions follow PyTorch's jiterator (:mod:`nnk.jiterator`), and
:func:`nnk.compile` / :func:`nnk.load` give modules whose kernels are
attributes.  The C extension ``nnk._nnk`` does the work over libnnk;
docs/python.md is the manual.
"""
import contextlib as _contextlib
import os as _os
import stat as _stat

from . import _nnk
from ._nnk import (  # noqa: F401  (the public names)
    ABIError,
    ArgumentError,
    Array,
    CompileError,
    Context,
    DTypeError,
    DeviceError,
    Error,
    Extension,
    IOFailureError,
    IntegerOverflowError,
    InternalError,
    RangeError,
    JitFunction,
    Kernel,
    Module,
    NotFoundError,
    OutOfMemoryError,
    ShapeError,
    UnsupportedError,
    __version__,
    asarray,
    dtypes,
    empty,
    zeros,
)
from . import ext_utils, jiterator  # noqa: E402,F401

__all__ = [
    "ABIError", "ArgumentError", "Array", "CompileError", "Context", "DTypeError", "DeviceError", "Error",
    "IOFailureError", "IntegerOverflowError", "InternalError", "JitFunction", "Kernel", "Module", "NotFoundError", "OutOfMemoryError", "RangeError",
    "ShapeError", "UnsupportedError", "asarray", "compile", "context_scope", "dtypes", "empty", "ext_utils",
    "get_current_context", "jiterator", "load", "set_default_context", "zeros",
]


def set_default_context(ctx):
    """Makes ``ctx`` the context of calls that name none (NNabla's ``nn.set_default_context``)."""
    _nnk.set_default_context(ctx)


def get_current_context():
    """A copy of the default context (NNabla's ``nn.get_current_context``)."""
    return _nnk.get_default_context()


@_contextlib.contextmanager
def context_scope(ctx):
    """``with nnk.context_scope(ctx):`` -- the default context inside the block
    (NNabla's ``nn.context_scope``); the previous one is restored on exit."""
    prev = _nnk.get_default_context()
    _nnk.set_default_context(ctx)
    try:
        yield ctx
    finally:
        _nnk.set_default_context(prev)


def _option_dirs(include_dirs):
    if include_dirs is None:
        return None
    if isinstance(include_dirs, (str, bytes, _os.PathLike)):
        include_dirs = [include_dirs]
    dirs = [_os.fsdecode(d) for d in include_dirs]
    for d in dirs:
        if ":" in d or not d:
            raise ArgumentError("include_dirs: %r is empty or holds ':' (the list separator)" % d)
    return ":".join(dirs) if dirs else None


def _option_name(name):
    # the name only labels diagnostics (the option string escapes its spaces)
    return None if name is None else str(name)


def compile(source, *, name=None, opt_level=None, include_dirs=None, ctx=None):
    """Compiles .nnk source into a :class:`Module`; its kernels are attributes.

    ``name`` labels diagnostics (file:line:col), ``include_dirs`` (a path or a
    list) is searched by ``import``, ``opt_level`` is 0..3, ``ctx`` the
    context of launches (None: the default context at each call).  Errors
    in the source raise :class:`CompileError` with ``.diagnostics``.
    """
    options = {"opt_level": opt_level, "include_dirs": _option_dirs(include_dirs), "name": _option_name(name)}
    return _nnk.compile(source, options, ctx, name)


def load(path, *, opt_level=None, include_dirs=None, ctx=None):
    """Compiles the .nnk file ``path``; its directory is searched by ``import``
    first, then ``include_dirs``."""
    path = _os.fspath(path)
    # bytes, as nnk.compile takes them (the compiler reports bytes that are not
    # ASCII where they matter); a regular file, as an import must be (a FIFO
    # or /dev/zero would block or fill the memory; O_NONBLOCK: opening a FIFO
    # does not wait for a writer)
    fd = _os.open(path, _os.O_RDONLY | getattr(_os, "O_NONBLOCK", 0))
    try:
        if not _stat.S_ISREG(_os.fstat(fd).st_mode):
            raise IOFailureError("%s: not a regular file" % _os.fsdecode(path))
        f = open(fd, "rb")
    except BaseException:
        _os.close(fd)
        raise
    with f:
        source = f.read()
    dirs = [_os.path.dirname(_os.path.abspath(path))]
    if include_dirs is not None:
        dirs += [include_dirs] if isinstance(include_dirs, (str, bytes, _os.PathLike)) else list(include_dirs)
    return compile(source, name=_os.fsdecode(path), opt_level=opt_level, include_dirs=dirs, ctx=ctx)
