"""NNabla's ``nnabla.ext_utils`` over nnk's extensions.

>>> from nnk import ext_utils
>>> 'cpu' in ext_utils.list_extensions()
True
>>> ctx = ext_utils.get_extension_context('cpu', device_id='0', type_config='float')
>>> ctx.backend
['cpu:float']
"""
import threading as _threading

from . import _nnk

__all__ = ["DeviceInfo", "ExtensionModule", "ExtensionNotFoundError", "get_extension_context", "import_extension_module",
           "list_extensions"]


class ExtensionNotFoundError(_nnk.NotFoundError, ImportError):
    """No such extension: an :class:`nnk.NotFoundError` that is also an
    ``ImportError``, as NNabla's ``import_extension_module`` raises (it
    imports ``nnabla_ext.NAME``), so ``except ImportError`` works for both."""


def list_extensions():
    """Names of the available extensions: 'cpu', registered ones, then the
    ``libnnk_ext_NAME.so`` files of NNK_EXTENSION_PATH and the installed
    extension directory."""
    return _nnk.list_extensions()


class DeviceInfo(str):
    """A device id as NNabla's ``get_devices()`` gives it (the string ``'0'``,
    usable as ``device_id=``), with libnnk's description: ``id``, ``name``,
    ``total_memory`` (bytes, 0 when unknown), ``host_accessible`` (nnk uses
    its memory in place), ``vendor`` and ``driver_version`` ('' when
    unknown), ``unified_memory`` (whether the device works in the host's
    physical memory: True, False, or None when unknown)."""

    def __new__(cls, id, name, total_memory, host_accessible, vendor="", driver_version="", unified_memory=None):
        self = super().__new__(cls, str(id))
        self.id, self.name, self.total_memory, self.host_accessible = id, name, total_memory, host_accessible
        self.vendor, self.driver_version, self.unified_memory = vendor, driver_version, unified_memory
        return self


class ExtensionModule(_nnk.Extension):
    """What :func:`import_extension_module` returns: NNabla's extension module
    functions as methods -- ``context(**kw)``, ``device_synchronize(device)``,
    ``get_device_count()``, ``get_devices()``, ``clear_memory_cache()`` -- and
    nnk's ``memory_stats(device)``, ``name``, ``status``."""

    def get_devices(self):
        """The devices, in id order, as :class:`DeviceInfo` strings."""
        return [DeviceInfo(*d) for d in self._device_info()]


_modules = {}
_lock = _threading.Lock()


def import_extension_module(ext_name):
    """Loads extension ``ext_name`` (once per process) and returns its module-like
    object; :class:`nnk.NotFoundError` names the directories searched."""
    with _lock:
        m = _modules.get(ext_name)
        if m is None:
            try:
                m = ExtensionModule(ext_name)
            except _nnk.NotFoundError as e:
                err = ExtensionNotFoundError(str(e))
                err.status, err.name = e.status, ext_name
                raise err from None
            _modules[ext_name] = m
        return m


def get_extension_context(ext_name, **kw):
    """A :class:`nnk.Context` of extension ``ext_name`` (NNabla's
    ``get_extension_context(ext_name, **kw)``): ``device_id`` (int or str,
    default 0; ``ctx.device_id`` is a str), ``type_config`` ('float', 'half'
    or 'mixed_half'), and the keys the extension adds.  Unknown keys raise
    :class:`nnk.ArgumentError`.  As NNabla's, it asks nothing of the
    device: ``cuda`` without a GPU gives a context, and its first use (a
    launch, an array on it) raises :class:`nnk.DeviceError`."""
    if ext_name == "cuda.cudnn":   # NNabla's old name, which it still takes with a warning
        import warnings
        warnings.warn('extension name "cuda.cudnn" is deprecated: use "cudnn"', DeprecationWarning, stacklevel=2)
        ext_name = "cudnn"
    import_extension_module(ext_name)   # NNabla's order: the module, then its context()
    return _nnk.get_extension_context(ext_name, kw)
