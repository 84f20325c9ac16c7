"""``nn.DataParallel`` on npu.

PyTorch's DataParallel scatters, replicates and gathers with CUDA-only collectives
(``torch._C._scatter``, ``_broadcast_coalesced``), and torch_npu has no multi-device
DataParallel: with an npu module it fails inside PyTorch with ``module 'torch._C' has no
attribute '_scatter'``, even on one device. npusim makes one device work (scattering to one
device is a move to it, then the module runs as is) and refuses several devices with a clear
error that names the alternative. CUDA modules are left to PyTorch.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import torch

_ORIGINAL = "__npusim_original__"


def not_supported_error() -> RuntimeError:
    from npusim._error_code import ErrCode, pta_error

    return RuntimeError(
        "DataParallel over more than one NPU is not supported: torch_npu has no multi-device "
        "DataParallel (its replicate, scatter and gather use CUDA-only collectives). Use "
        "DistributedDataParallel with the hccl backend, or DataParallel(module, device_ids=[0]) for "
        "one device." + pta_error(ErrCode.NOT_SUPPORT)
    )


def _move_to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_move_to_device(item, device) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_move_to_device(item, device) for item in value)
    if isinstance(value, dict):
        return type(value)((key, _move_to_device(item, device)) for key, item in value.items())
    return value


def install() -> None:
    """Patch ``DataParallel.forward`` and ``data_parallel`` for npu modules (idempotent)."""
    module = importlib.import_module("torch.nn.parallel.data_parallel")
    parallel_class = module.DataParallel
    forward = parallel_class.forward
    if getattr(forward, _ORIGINAL, None) is not None:
        return

    @functools.wraps(forward)
    def npu_forward(self, *inputs, **kwargs):
        device_ids = getattr(self, "device_ids", ())
        source = getattr(self, "src_device_obj", None)
        if not device_ids or source is None or source.type != "npu":
            return forward(self, *inputs, **kwargs)
        if len(device_ids) > 1:
            raise not_supported_error()
        for tensor in (*self.module.parameters(), *self.module.buffers()):
            if tensor.device != source:
                return forward(self, *inputs, **kwargs)  # PyTorch's own error for this case
        with torch.autograd.profiler.record_function("DataParallel.forward"):
            inputs, kwargs = _move_to_device((inputs, kwargs), source)
            return self.module(*inputs, **kwargs)

    setattr(npu_forward, _ORIGINAL, forward)
    parallel_class.forward = npu_forward

    function = module.data_parallel

    @functools.wraps(function)
    def npu_data_parallel(module_, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
        if module.__dict__["_get_available_device_type"]() == "npu":
            ids = device_ids if device_ids is not None else list(range(torch.npu.device_count()))
            if len(ids) > 1:
                raise not_supported_error()
        return function(module_, inputs, device_ids, output_device, dim, module_kwargs)

    setattr(npu_data_parallel, _ORIGINAL, function)
    module.data_parallel = npu_data_parallel
    torch.nn.parallel.data_parallel = npu_data_parallel
