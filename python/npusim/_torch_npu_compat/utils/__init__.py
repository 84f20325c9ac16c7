"""``torch_npu.utils``: the helpers torch_npu exports there (tensor combination for fused
optimisers, storage sizes, the CANN version, asynchronous checkpoint saving, the environment
report)."""

from __future__ import annotations

import torch

from npusim._error_code import ErrCode, pta_error
from npusim.npu.formats import get_storage_size as _get_storage_size
from npusim.npu.formats import npu_change_data_ptr
from npusim.npu.versions import get_cann_version

import sys

import npusim.npu._npu_trace as _npu_trace

from . import collect_env, utils  # noqa: F401
from ._async_save import save_async
from .._public_names import expose as _expose

# torch_npu.utils._npu_trace is the registry the backend's trace reports to: one module object,
# so that a callback registered (or a function patched) under either name is the one used.
sys.modules[__name__ + "._npu_trace"] = _npu_trace

__all__ = [
    "npu_combine_tensors",
    "get_part_combined_tensor",
    "is_combined_tensor_valid",
    "get_storage_size",
    "get_cann_version",
    "save_async",
]


def npu_combine_tensors(list_of_tensor, require_copy_value=True):
    r"""One npu tensor holding all of ``list_of_tensor``, each of which then uses its part of it
    (the fused optimisers of ``torch_npu.optim`` update the combined tensor in one kernel)."""
    if len(list_of_tensor) == 0:
        return None
    if any(tensor is None for tensor in list_of_tensor):
        raise RuntimeError("Tensors to combine must not have `None`." + pta_error(ErrCode.PARAM))
    dtype = list_of_tensor[0].dtype
    total = 0
    for tensor in list_of_tensor:
        if tensor.dtype != dtype:
            raise RuntimeError("Tensors to combine must have the same dtype." + pta_error(ErrCode.TYPE))
        if tensor.device.type != "npu":
            raise RuntimeError(f"Tensors to combine must be on NPU, got {tensor.device.type}." + pta_error(ErrCode.VALUE))
        total += get_storage_size(tensor)
    if total == 0:
        return None
    combined = torch.zeros(total, dtype=dtype).npu()
    index = 0
    for tensor in list_of_tensor:
        saved = tensor.clone() if require_copy_value else None
        npu_change_data_ptr(tensor, combined, index)
        if saved is not None:
            with torch.no_grad():
                tensor.copy_(saved)
        index += get_storage_size(tensor)
    return combined


def get_part_combined_tensor(combined_tensor, index, size):
    r"""A tensor of ``size`` elements over ``combined_tensor`` from element ``index`` on."""
    if combined_tensor is None or size == 0:
        return None
    if index + size > get_storage_size(combined_tensor):
        raise RuntimeError(
            f"(index + size) ({index + size}) > torch_npu.get_storage_size(combined_tensor) "
            f"({get_storage_size(combined_tensor)})" + pta_error(ErrCode.VALUE)
        )
    part = torch.zeros(size, dtype=combined_tensor.dtype).npu()
    npu_change_data_ptr(part, combined_tensor, index)
    return part


def is_combined_tensor_valid(combined_tensor, list_of_tensor):
    r"""Whether every tensor of ``list_of_tensor`` still lies inside ``combined_tensor``."""
    if len(list_of_tensor) == 0:
        return True
    if combined_tensor is None:
        return False
    start = combined_tensor.data_ptr()
    end = start + get_storage_size(combined_tensor) * combined_tensor.element_size()
    return all(tensor is not None and start <= tensor.data_ptr() < end for tensor in list_of_tensor)


# Public names report this module (PyTorch's public-API rule, which torch_npu tests).
get_storage_size = _expose(_get_storage_size, __name__)
save_async = _expose(save_async, __name__)
