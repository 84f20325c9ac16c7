"""torch_npu's NPUGraph debugging operators: ``torch.ops.npu.print_npugraph_tensor`` and
``torch.ops.npu.save_npugraph_tensor`` (also ``.tensor_list``).

Inside a capture they record a host function (npusim.compile.host_functions) that prints or
saves the tensor's contents *as they are at each replay* (on the chip: a device-to-host copy on
a side stream and a host function, both in the graph). Outside a capture they print or save
now. The file name is fixed when the operator is issued (captured): ``<stem>_device_<i>_<n>.pt``
with ``n`` counting per name, or ``<stem>_device_<i>.pt`` with ``overwrite=True``; a CPU tensor
drops the ``_device_<i>`` part; no ``save_path`` means ``tensor_<timestamp>.pt``.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime
from typing import Any, Callable, Sequence

import torch

from npusim.compile import graphs, host_functions

__all__ = ["register", "print_npugraph_tensor", "save_npugraph_tensor"]

_OPERATORS = ("npu::print_npugraph_tensor", "npu::save_npugraph_tensor")
_counters: dict[str, int] = {}
_counters_lock = threading.Lock()
_library: torch.library.Library | None = None


def save_path_for(save_path: str | None, device_index: int | None, overwrite: bool) -> str:
    """The file a save writes (torch_npu's naming, counted per name in this process)."""
    if save_path is None:
        save_path = f"tensor_{datetime.now().strftime('%Y%m%d_%H%M%S_%f')}.pt"
    if not isinstance(save_path, str):
        raise TypeError(f"save_path must be str or None, but got {type(save_path).__name__}")
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be bool, but got {type(overwrite).__name__}")
    directory, filename = os.path.split(save_path)
    stem, suffix = os.path.splitext(filename)
    if not stem:
        raise ValueError("save_path must include a file name")
    suffix = suffix or ".pt"
    if device_index is not None:
        stem = f"{stem}_device_{device_index}"
    if overwrite:
        name = f"{stem}{suffix}"
    else:
        key = os.path.join(directory, f"{stem}{suffix}")
        with _counters_lock:
            index = _counters.get(key, 0)
            _counters[key] = index + 1
        name = f"{stem}_{index}{suffix}"
    return os.path.join(directory, name) if directory else name


def _host_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy of the tensor's contents now (npu memory is host memory)."""
    if tensor.device.type == "npu":
        tensor = graphs._host_alias(tensor)
    return tensor.contiguous().clone()


def _as_task(tensors: Sequence[torch.Tensor], action: Callable[[list[torch.Tensor]], None]) -> None:
    """``action`` on copies of ``tensors`` taken when the task runs: now, or at every replay of
    the capture that the current stream records."""
    stream = torch.npu.current_stream(tensors[0].device) if tensors[0].device.type == "npu" else None
    if stream is None:
        action([t.contiguous() for t in tensors])
        return
    host_functions.launch_host_func(stream, lambda _: action([_host_copy(t) for t in tensors]), None)


def _print(tensor_name: str | None, tensor: torch.Tensor) -> None:
    text = str(tensor)
    if tensor_name is not None:
        text = f"{tensor_name}={text}"
    print(f"{text}, shape={tuple(tensor.shape)}, dtype={tensor.dtype}", flush=True)


def print_npugraph_tensor(input: torch.Tensor, *, tensor_name: str | None = None) -> None:
    if input.device.type not in ("cpu", "npu"):
        return
    _as_task([input], lambda copies: _print(tensor_name, copies[0]))


def save_npugraph_tensor(input: torch.Tensor, *, save_path: str | None = None, overwrite: bool = False) -> None:
    if input.device.type not in ("cpu", "npu"):
        return
    index = input.device.index if input.device.type == "npu" else None
    path = save_path_for(save_path, index, overwrite)
    _as_task([input], lambda copies: torch.save(copies[0], path))


def _tensor_list_device(inputs: Any) -> torch.device:
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"input must be Tensor or TensorList, but got {type(inputs).__name__}")
    if len(inputs) == 0:
        raise ValueError("input tensor list must not be empty")
    if not all(isinstance(t, torch.Tensor) for t in inputs):
        raise TypeError("all elements in input tensor list must be Tensor")
    if any(t.device != inputs[0].device for t in inputs[1:]):
        raise ValueError("all tensors in input tensor list must be on the same device")
    return inputs[0].device


def save_npugraph_tensor_list(input: Sequence[torch.Tensor], *, save_path: str | None = None,
                              overwrite: bool = False) -> None:
    device = _tensor_list_device(input)
    if device.type not in ("cpu", "npu"):
        return
    path = save_path_for(save_path, device.index if device.type == "npu" else None, overwrite)
    _as_task(list(input), lambda copies: torch.save(copies, path))


def register() -> None:
    """Define the operators in torch's ``npu`` namespace (once), with their fake kernels, as side
    effects that graph capture and compilation keep."""
    global _library
    if _library is not None or hasattr(torch.ops.npu, "print_npugraph_tensor"):
        return
    from torch.fx.node import has_side_effect

    library = torch.library.Library("npu", "FRAGMENT")
    library.define("print_npugraph_tensor(Tensor input, *, str? tensor_name=None) -> ()")
    library.define("save_npugraph_tensor(Tensor input, *, str? save_path=None, bool overwrite=False) -> ()")
    library.define("save_npugraph_tensor.tensor_list(Tensor[] input, *, str? save_path=None, "
                   "bool overwrite=False) -> ()")
    for key in ("PrivateUse1", "CPU"):
        library.impl("print_npugraph_tensor", print_npugraph_tensor, key)
        library.impl("save_npugraph_tensor", save_npugraph_tensor, key)
        library.impl("save_npugraph_tensor.tensor_list", save_npugraph_tensor_list, key)
    for name in ("npu::print_npugraph_tensor", "npu::save_npugraph_tensor", "npu::save_npugraph_tensor.tensor_list"):
        torch.library.register_fake(name, lambda *args, **kwargs: None, lib=library)
    _library = library
    for overload in (torch.ops.npu.print_npugraph_tensor.default, torch.ops.npu.save_npugraph_tensor.default,
                     torch.ops.npu.save_npugraph_tensor.tensor_list):
        has_side_effect(overload)
    for name in _OPERATORS:
        graphs.records_itself(name)
