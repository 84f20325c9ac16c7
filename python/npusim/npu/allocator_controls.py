"""Allocator controls of torch_npu beyond the statistics and the settings (``memory.py``):
``MemPool`` / ``use_mem_pool``, ``erase_stream`` and ``empty_with_swapped_memory``."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error
from npusim.npu._lazy import _runtime_initialized, is_initialized

__all__ = ["MemPool", "use_mem_pool", "erase_stream", "empty_with_swapped_memory"]


class MemPool:
    r"""A private pool of the NPU caching allocator (``torch.npu.MemPool``, as
    ``torch.cuda.MemPool``).

    Allocations made under :func:`use_mem_pool` come only from the pool's own segments, and
    memory they free is reused only by later allocations into the pool. ``empty_cache()``
    leaves the segments of a live pool alone; when the pool object dies its cached segments
    go back to the device, and the others as soon as their tensors are freed.

    Args:
        allocator: must be ``None``: npusim's pools live in its caching allocator (a
            pluggable allocator is not supported).
        use_on_oom (bool): an allocation outside the pool that finds no device memory may
            take a cached block of this pool.
        no_split (bool): blocks of the pool are never split.
    """

    def __init__(self, allocator: Any = None, use_on_oom: bool = False, no_split: bool = False):
        if allocator is not None:
            raise RuntimeError(
                "torch.npu.MemPool: npusim pools live in its caching allocator; a pluggable allocator "
                "is not supported, pass allocator=None" + pta_error(ErrCode.NOT_SUPPORT)
            )
        from npusim.npu.devices import current_device

        self._device = current_device()  # initialises the runtime, as torch.cuda.MemPool does
        self._id = tuple(_C._npu_mempool_new_id(True))
        self._allocator = allocator
        self.use_on_oom = bool(use_on_oom)
        self.no_split = bool(no_split)
        _C._npu_createOrIncrefPool(self._device, self._id, self.no_split, self.use_on_oom)

    def __del__(self) -> None:
        device, pool_id = getattr(self, "_device", None), getattr(self, "_id", None)
        if device is None or pool_id is None:
            return
        try:
            _C._npu_releasePool(device, pool_id)
            _C._npu_emptyCachePool(device, pool_id)
        except Exception:  # interpreter shutdown or a forked child: nothing left to give back
            pass

    @property
    def id(self) -> tuple[int, int]:
        r"""The id of this pool as a tuple of two ints (``(0, n)`` for pools made here)."""
        return self._id

    @property
    def allocator(self) -> Any:
        return self._allocator

    def use_count(self) -> int:
        r"""The reference count of this pool: 1, plus one for each ``use_mem_pool`` active on it."""
        return int(_C._npu_getPoolUseCount(self._device, self._id))

    def snapshot(self, include_traces: bool = True) -> list[dict[str, Any]]:
        r"""The segments of this pool, as :func:`torch.npu.memory_snapshot` gives them."""
        return _segments(self._id)


def _segments(mempool_id: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    """The segments of the caching allocators of all devices (CUDA snapshot format), only those
    of the pool ``mempool_id`` if given; none while the runtime is not up (reading them does not
    start it). ``torch.npu.memory_snapshot`` (:mod:`.memory`) and ``MemPool.snapshot`` answer
    with this."""
    if not (is_initialized() or _runtime_initialized()):
        return []
    segments = list(_C._memory_snapshot())
    if mempool_id is not None:
        wanted = tuple(mempool_id)
        segments = [segment for segment in segments if segment["segment_pool_id"] == wanted]
    return segments


@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device: Any = None):
    r"""Route the allocations of the current thread in the ``with`` block to ``pool``.

    Args:
        pool (torch.npu.MemPool): the pool to allocate from.
        device (torch.device or int, optional): the device whose allocator routes; the current
            device if ``None``.

    Threads started inside the block (autograd's device threads among them) allocate outside
    the pool, as with ``torch.cuda.use_mem_pool``.
    """
    if not isinstance(pool, MemPool):
        raise TypeError(f"pool must be a torch.npu.MemPool, but got {type(pool)}" + pta_error(ErrCode.TYPE))
    from npusim.npu.devices import _get_device_index, current_device

    device_index = current_device() if device is None else _get_device_index(device)
    _C._npu_beginAllocateCurrentThreadToPool(device_index, pool.id)
    try:
        yield
    finally:
        _C._npu_endAllocateToPool(device_index, pool.id)
        _C._npu_releasePool(device_index, pool.id)


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
    tensor = _C._npu_tensor_over_host_memory(host, index)
    if torch.are_deterministic_algorithms_enabled() and torch.utils.deterministic.fill_uninitialized_memory:
        # As every empty factory in deterministic mode: NaN, or the largest value of the dtype.
        if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
            tensor.fill_(float("nan"))
        elif tensor.dtype == torch.bool:
            tensor.fill_(True)
        else:
            tensor.fill_(torch.iinfo(tensor.dtype).max)
    return tensor
