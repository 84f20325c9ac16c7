"""Allocator controls of torch_npu beyond the statistics and the settings (``memory.py``):
``MemPool`` / ``use_mem_pool``, ``erase_stream`` and ``empty_with_swapped_memory``."""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error

__all__ = ["MemPool", "use_mem_pool", "erase_stream", "empty_with_swapped_memory"]

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
