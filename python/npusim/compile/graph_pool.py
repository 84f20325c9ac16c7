"""The memory pool of an NPUGraph capture: the one place that decides where captured
allocations live.

As on the chip (and in CUDA), ``capture_begin`` routes the capture stream's allocations, from
any thread (autograd's device thread included), to a private pool of the caching allocator
(``beginAllocateToPool``), ``capture_end`` stops routing (``endAllocateToPool``) and ``reset``
gives the pool back (``releasePool``); a block of the pool serves only later allocations into
the same pool, and ``empty_cache()`` leaves a live pool's segments alone. Replay runs on that
memory and allocates nothing. The graph holds the pool memory its kernels use by address only
(its temporaries are free blocks of the pool after capture, for later captures into the same
pool); the pool keeps its segments while the graph uses it, so those addresses stay valid until
``reset()``. Memory from outside the pool stays referenced by the graph.
"""

from __future__ import annotations

from npusim import _C


def new_pool_handle() -> tuple[int, int]:
    """A pool id as ``graph_pool_handle()`` returns it, from the allocator's id counter (shared
    with ``torch.npu.MemPool``, so the two never collide)."""
    return tuple(_C._npu_mempool_new_id(True))


def new_graph_pool() -> tuple[int, int]:
    """The id of a graph's own pool (when capture_begin is given none)."""
    return tuple(_C._npu_mempool_new_id(False))


def begin_allocate_to_pool(device: int, pool: tuple[int, int], stream_id: int) -> None:
    """Route the allocations on ``device`` made on stream ``stream_id`` to ``pool``."""
    _C._npu_beginAllocateStreamToPool(device, pool, stream_id)


def end_allocate_to_pool(device: int, pool: tuple[int, int]) -> None:
    """Stop routing allocations to ``pool`` (the end or abort of a capture)."""
    _C._npu_endAllocateToPool(device, pool)


def release_pool(device: int, pool: tuple[int, int]) -> None:
    """Give this graph's use of ``pool`` back; its memory returns to the caching allocator
    when no graph or MemPool uses the pool and its blocks are free."""
    _C._npu_releasePool(device, pool)
