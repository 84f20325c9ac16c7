"""``torch.npu.amp.autocast`` and the custom-function decorators bound to the ``npu`` device."""

from __future__ import annotations

import functools
from typing import Any

import torch

__all__ = ["autocast", "custom_fwd", "custom_bwd"]


class autocast(torch.amp.autocast_mode.autocast):
    r"""``torch.autocast("npu", ...)``; the default lower-precision dtype is float16, as in
    torch_npu.

    Args:
        enabled (bool): whether autocasting is on in the region (default ``True``).
        dtype (torch.dtype): the lower-precision dtype (default ``torch.float16``).
        cache_enabled (bool): whether the weight cast cache is on (default ``True``).
    """

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("npu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    def __enter__(self):
        return super().__enter__()

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any):
        return super().__exit__(exc_type, exc_val, exc_tb)

    def __call__(self, func):
        return super().__call__(func)


def custom_fwd(fwd=None, *, cast_inputs=None):
    r"""``torch.amp.custom_fwd(device_type="npu")`` for the ``forward`` of a custom autograd
    function."""
    if fwd is None:
        return functools.partial(torch.amp.custom_fwd, device_type="npu", cast_inputs=cast_inputs)
    return torch.amp.custom_fwd(fwd, device_type="npu", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    r"""``torch.amp.custom_bwd(device_type="npu")`` for the ``backward`` of a custom autograd
    function."""
    if bwd is None:
        return functools.partial(torch.amp.custom_bwd, device_type="npu")
    return torch.amp.custom_bwd(bwd, device_type="npu")
