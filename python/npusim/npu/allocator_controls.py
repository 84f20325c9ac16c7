"""Allocator controls of torch_npu beyond the statistics: ``memory._set_allocator_settings``,
``MemPool`` / ``use_mem_pool``, ``erase_stream`` and ``empty_with_swapped_memory``."""

from __future__ import annotations

import contextlib
import itertools
import os
import warnings
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error

__all__ = ["MemPool", "use_mem_pool", "erase_stream", "empty_with_swapped_memory"]

_ALLOC_CONF = "PYTORCH_NPU_ALLOC_CONF"


def _items(text: str) -> dict[str, str]:
    items: dict[str, str] = {}
    depth = 0
    current = ""
    for char in text + ",":
        # Commas inside [...] (roundup_power2_divisions) belong to the value.
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            if current.strip():
                key, _, value = current.partition(":")
                items[key.strip()] = value.strip()
            current = ""
        else:
            current += char
    return items


def _set_allocator_settings(env: str) -> None:
    r"""Change caching-allocator settings (``PYTORCH_NPU_ALLOC_CONF`` syntax) from the program.

    Keys given here replace the same keys of the current settings; others stay. npusim applies
    allocator settings when a device's allocator is created (at its first use): settings made
    before that take full effect; afterwards they apply to devices initialised later, and a
    warning says so.
    """
    if not isinstance(env, str):
        raise TypeError(f"env must be a str, but got {type(env)}" + pta_error(ErrCode.TYPE))
    merged = _items(os.environ.get(_ALLOC_CONF, ""))
    merged.update(_items(env))
    os.environ[_ALLOC_CONF] = ",".join(f"{key}:{value}" for key, value in merged.items())
    from npusim.npu._lazy import is_initialized

    if is_initialized():
        warnings.warn(
            "npusim applies allocator settings when a device's allocator is created; devices already in use "
            f"keep theirs, devices initialised from now on use '{os.environ[_ALLOC_CONF]}'."
        )


_pool_ids = itertools.count(1)


class MemPool:
    r"""A memory pool handle (``torch.npu.MemPool``), as ``torch.cuda.MemPool``.

    npusim's caching allocator has one pool per device: allocations made under
    :func:`use_mem_pool` come from it, and ``snapshot()`` shows the device's segments.
    """

    def __init__(self, allocator: Any = None, use_on_oom: bool = False):
        self._id = (0, next(_pool_ids))
        self._allocator = allocator
        self._use_count = 1
        self.use_on_oom = use_on_oom

    @property
    def id(self) -> tuple[int, int]:
        return self._id

    @property
    def allocator(self) -> Any:
        return self._allocator

    def use_count(self) -> int:
        return self._use_count

    def snapshot(self) -> list[dict[str, Any]]:
        from npusim.npu.memory import memory_snapshot

        return memory_snapshot()


@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device: Any = None):
    r"""Route the allocations of the ``with`` block to ``pool`` (see :class:`MemPool`)."""
    if not isinstance(pool, MemPool):
        raise TypeError(f"pool must be a torch.npu.MemPool, but got {type(pool)}" + pta_error(ErrCode.TYPE))
    pool._use_count += 1
    try:
        yield
    finally:
        pool._use_count -= 1


def erase_stream(tensor: torch.Tensor, stream: torch.Stream) -> None:
    r"""Undo ``tensor.record_stream(stream)``: once freed, the memory no longer waits for
    ``stream`` (pair it with an event wait so that later work runs after that stream's)."""
    from npusim.npu.streams import Stream

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor should be torch.Tensor, could not be {type(tensor)}" + pta_error(ErrCode.TYPE))
    if not isinstance(stream, Stream):
        raise TypeError(
            f"stream should be torch_npu.npu.Stream, could not be {type(stream)}" + pta_error(ErrCode.TYPE)
        )
    if tensor.device.type != "npu" or tensor.untyped_storage().nbytes() == 0:
        return
    storage = tensor.untyped_storage()
    _C._erase_stream(storage.data_ptr(), tensor.device.index, stream.stream_id)


def empty_with_swapped_memory(size: Any, *, dtype: torch.dtype | None = None, device: Any = None) -> torch.Tensor:
    r"""An uninitialised npu tensor in host memory mapped to the device ("swapped" memory): it
    does not use the device's memory and kernels read it over the host link."""
    from npusim.npu.devices import _get_device_index

    index = _get_device_index(device if device is not None else torch.device("npu"), optional=True)
    host = torch.empty(tuple(size), dtype=dtype, pin_memory=True)
    return _C._npu_tensor_over_host_memory(host, index)
