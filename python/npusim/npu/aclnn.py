"""``torch.npu.aclnn``: ``allow_hf32`` (the convolution HF32 switch, as torch_npu's aclnn backend
exposes it), ``flags(allow_hf32=...)`` and ``version()``."""

from __future__ import annotations

import contextlib
import sys
import types
import warnings

from npusim.npu import options as _options

__all__ = ["flags", "version"]


class _AclnnModule(types.ModuleType):
    @property
    def allow_hf32(self) -> bool:
        return _options.conv.allow_hf32

    @allow_hf32.setter
    def allow_hf32(self, value: bool) -> None:
        _options.conv.allow_hf32 = value


@contextlib.contextmanager
def flags(allow_hf32: bool | None = None):
    r"""Set ``allow_hf32`` inside the ``with`` block; the previous value comes back after it."""
    previous = _options.conv.allow_hf32
    if allow_hf32 is not None:
        _options.conv.allow_hf32 = allow_hf32
    try:
        yield
    finally:
        _options.conv.allow_hf32 = previous


def version() -> None:
    warnings.warn("torch.npu.aclnn.version isn't implemented!")
    return None


sys.modules[__name__].__class__ = _AclnnModule
