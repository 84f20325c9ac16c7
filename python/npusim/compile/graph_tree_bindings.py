"""The bindings that NPU graph trees (npusim.compile.graph_tree, ``torch_npu.npu._graph_tree``)
call, served as torch_npu._C's functions of the same names: routing
allocations to a graph's private pool, the pool's state, tensors rebuilt over graph memory,
cached tensors and storage invalidation.

Each does what torch_npu's binding of that name does, on npusim's caching allocator
(csrc/runtime/CachingAllocator) and PyTorch's device-generic pieces (cached tensors, storage
use counts) where torch_npu's binding is PyTorch's under an npu name.
"""

from __future__ import annotations

from typing import Any

import torch

from npusim import _C as _npusim_C

__all__ = [
    "_npu_beginAllocateCurrentThreadToPool",
    "_npu_endAllocateToPool",
    "_npu_releasePool",
    "_npu_NPUAllocator_AllocatorState",
    "_npu_getCheckpointState",
    "_npu_checkPoolLiveAllocations",
    "_construct_NPU_Tensor_From_Storage_And_Metadata",
    "_add_cached_tensor",
    "_remove_cached_tensor",
    "_is_cached_tensor",
    "_set_cached_tensors_enabled",
    "_storage_Use_Count",
    "_tensors_data_ptrs_at_indices_equal",
    "_set_storage_access_error_msg",
    "_set_storage_data_ptr_access_error_msg",
    "_free_And_Remove_DeleterFn",
]

# Routing: the calling thread's allocations on a device go to a private pool (use_mem_pool,
# graph-tree warm-up and input copies), until endAllocateToPool; releasePool drops the use.
_npu_beginAllocateCurrentThreadToPool = _npusim_C._npu_beginAllocateCurrentThreadToPool
_npu_endAllocateToPool = _npusim_C._npu_endAllocateToPool
_npu_releasePool = _npusim_C._npu_releasePool

# PyTorch's device-generic bindings, which torch_npu re-exports under its own module.
_add_cached_tensor = torch._C._add_cached_tensor
_remove_cached_tensor = torch._C._remove_cached_tensor
_is_cached_tensor = torch._C._is_cached_tensor
_set_cached_tensors_enabled = torch._C._set_cached_tensors_enabled
_storage_Use_Count = torch._C._storage_Use_Count


def _tensors_data_ptrs_at_indices_equal(tensors: list[Any], data_ptrs: list[int | None], indices: list[int]) -> bool:
    """Whether ``tensors[i].data_ptr() == data_ptrs[i]`` for every ``i`` in ``indices`` (the
    graph trees' check that inputs are where a recording saw them)."""
    return all(tensors[i].data_ptr() == data_ptrs[i] for i in indices)


def _device_index(device: Any) -> int:
    if isinstance(device, int):
        return device
    return torch.device(device).index or 0


def _pool_segments(device: int, pool: tuple[int, int]) -> list[dict[str, Any]]:
    from npusim.npu import memory

    return [segment for segment in memory.memory_snapshot()
            if segment["device"] == device and tuple(segment["segment_pool_id"]) == tuple(pool)]


class _npu_NPUAllocator_AllocatorState:
    """The state of one private pool of the caching allocator at a point in time: its segments
    and their blocks (address, size, allocated or free), as ``_npu_getCheckpointState`` took it."""

    __slots__ = ("device", "pool", "segments")

    def __init__(self, device: int, pool: tuple[int, int], segments: list[dict[str, Any]]):
        self.device = device
        self.pool = tuple(pool)
        self.segments = segments

    def allocated_blocks(self) -> list[tuple[int, int]]:
        """(address, bytes) of each block that was allocated."""
        blocks = []
        for segment in self.segments:
            address = segment["address"]
            for block in segment["blocks"]:
                if block["state"] == "active_allocated":
                    blocks.append((address, block["size"]))
                address += block["size"]
        return blocks

    def __repr__(self) -> str:
        return (f"AllocatorState(device={self.device}, pool={self.pool}, segments={len(self.segments)}, "
                f"allocated_blocks={len(self.allocated_blocks())})")


def _npu_getCheckpointState(device: Any, pool: tuple[int, int]) -> _npu_NPUAllocator_AllocatorState:
    """The state of ``pool`` on ``device`` now (its segments and blocks)."""
    index = _device_index(device)
    return _npu_NPUAllocator_AllocatorState(index, pool, _pool_segments(index, pool))


def _npu_checkPoolLiveAllocations(device: Any, pool: tuple[int, int], expected_live_allocations: set[int]) -> bool:
    """Whether the allocated blocks of ``pool`` are exactly those starting at
    ``expected_live_allocations``."""
    state = _npu_getCheckpointState(device, pool)
    return {address for address, _ in state.allocated_blocks()} == set(expected_live_allocations)


def _construct_NPU_Tensor_From_Storage_And_Metadata(metadata: dict[str, Any], storage: torch.UntypedStorage) -> torch.Tensor:
    """An npu tensor over ``storage`` with the geometry and dtype of ``metadata`` (as the graph
    trees' ``_tensor_metadata`` records them), and its storage format when ``metadata`` names
    one (``npu_format``, an ACL format number)."""
    tensor = torch.empty((0,), dtype=metadata["dtype"], device=metadata["device"])
    tensor.set_(storage, metadata["storage_offset"], metadata["size"], metadata["stride"])
    if "npu_format" in metadata:
        from npusim.npu import formats

        fmt = formats._as_format(metadata["npu_format"])
        if fmt != formats._guess_base_format(len(metadata["size"])):
            formats._record(tensor, fmt, tuple(metadata["size"]))
    return tensor


def _set_storage_access_error_msg(tensor: torch.Tensor, message: str) -> None:
    """Every later access to ``tensor``'s data (or any view's) raises RuntimeError(message)."""
    from npusim.compile import _native

    _native.invalidate_storage(tensor.untyped_storage()._cdata, message)


def _set_storage_data_ptr_access_error_msg(storage_cdata: int, message: str) -> None:
    """As ``_set_storage_access_error_msg``, for a storage given by its ``_cdata``."""
    from npusim.compile import _native

    _native.invalidate_storage(storage_cdata, message)


def _free_And_Remove_DeleterFn(storage_cdata: int) -> None:
    """Give a storage's memory back to the caching allocator now, while the storage lives on
    without data. Storages that do not own their memory (a graph's outputs handed out over
    its memory, which stays the graph's) keep it."""
    storage = torch.UntypedStorage._new_with_weak_ptr(storage_cdata)
    if storage.resizable() and storage.nbytes() != 0:
        storage.resize_(0)
