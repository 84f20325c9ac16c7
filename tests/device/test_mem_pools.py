"""torch.npu.MemPool / use_mem_pool are private pools of the caching allocator, as
torch.cuda.MemPool: allocations inside come from the pool's own segments only, freed memory
is reused only by the pool, empty_cache() keeps a live pool's segments, and a dead pool gives
its segments back once their tensors are gone."""

from __future__ import annotations

import gc
import threading

import pytest
import torch

KIB = 1024
MIB = 1024 * 1024


def _segments(pool_id):
    return [s for s in torch.npu.memory_snapshot() if s["segment_pool_id"] == tuple(pool_id)]


def _in_segments(tensor, segments) -> bool:
    address = tensor.untyped_storage().data_ptr()
    return any(s["address"] <= address < s["address"] + s["total_size"] for s in segments)


def test_allocations_inside_come_only_from_the_pool():
    pool = torch.npu.MemPool()
    assert pool.id[0] == 0 and pool.id[1] > 0
    with torch.npu.use_mem_pool(pool):
        small = torch.empty(4 * KIB, dtype=torch.uint8, device="npu")
        large = torch.empty(3 * MIB, dtype=torch.uint8, device="npu")
        computed = small.float() + 1  # an operator's output is an allocation too
    outside = torch.empty(4 * KIB, dtype=torch.uint8, device="npu")
    segments = pool.snapshot()
    assert segments and all(s["segment_pool_id"] == pool.id for s in segments)
    assert _in_segments(small, segments) and _in_segments(large, segments) and _in_segments(computed, segments)
    assert not _in_segments(outside, segments)
    assert _in_segments(outside, _segments((0, 0)))
    assert all("segment_pool_id" in s for s in torch.npu.memory_snapshot())


def test_freed_memory_is_reused_only_by_the_pool():
    pool = torch.npu.MemPool()
    with torch.npu.use_mem_pool(pool):
        first = torch.empty(64 * KIB, dtype=torch.uint8, device="npu")
    address = first.data_ptr()
    del first
    outside = torch.empty(64 * KIB, dtype=torch.uint8, device="npu")
    assert outside.data_ptr() != address
    with torch.npu.use_mem_pool(pool):
        again = torch.empty(64 * KIB, dtype=torch.uint8, device="npu")
    assert again.data_ptr() == address


def test_use_count_and_device_argument():
    pool = torch.npu.MemPool()
    assert pool.use_count() == 1
    with torch.npu.use_mem_pool(pool, device="npu:0"):
        assert pool.use_count() == 2
        with pytest.raises(RuntimeError, match="already allocating to memory pool"):
            with torch.npu.use_mem_pool(pool):
                pass
    assert pool.use_count() == 1
    with torch.npu.use_mem_pool(pool, device=0):
        x = torch.ones(10, device="npu")
    assert pool.use_count() == 1 and x.sum().item() == 10


def test_other_threads_allocate_outside():
    pool = torch.npu.MemPool()
    result = {}
    with torch.npu.use_mem_pool(pool):
        mine = torch.empty(KIB, device="npu")
        worker = threading.Thread(target=lambda: result.setdefault("t", torch.empty(KIB, device="npu")))
        worker.start()
        worker.join()
    segments = pool.snapshot()
    assert _in_segments(mine, segments) and not _in_segments(result["t"], segments)


def test_empty_cache_keeps_a_live_pool_and_a_dead_pool_gives_everything_back():
    gc.collect()  # graphs and pools left by earlier tests give their memory back now, not mid-test
    torch.npu.empty_cache()
    base = torch.npu.memory_reserved()
    pool = torch.npu.MemPool()
    pool_id = pool.id
    with torch.npu.use_mem_pool(pool):
        cached = torch.empty(12 * MIB, dtype=torch.uint8, device="npu")
        live = torch.ones(1000, device="npu")
    del cached
    torch.npu.empty_cache()
    assert len(_segments(pool_id)) == 2  # the pool is alive: its cache stays
    assert torch.npu.memory_reserved() > base

    del pool
    gc.collect()
    # The cached segment went back with the pool; the one holding `live` stays while it lives.
    assert len(_segments(pool_id)) == 1
    assert live.sum().item() == 1000
    del live
    assert _segments(pool_id) == []
    torch.npu.empty_cache()  # the sum's output came from the default pool
    assert torch.npu.memory_reserved() == base


def test_pool_options_and_refused_allocator():
    pool = torch.npu.MemPool(no_split=True)
    with torch.npu.use_mem_pool(pool):
        x = torch.empty(KIB, dtype=torch.uint8, device="npu")
    (segment,) = pool.snapshot()
    assert [b["size"] for b in segment["blocks"]] == [2 * MIB]  # never split
    assert torch.npu.MemPool(use_on_oom=True).use_on_oom
    with pytest.raises(RuntimeError, match="pluggable allocator is not supported"):
        torch.npu.MemPool(allocator=object())
    del x


def test_graph_pool_ids_do_not_collide_with_mem_pools():
    from npusim import _C

    graph_id = tuple(_C._npu_mempool_new_id(False))
    assert graph_id[0] > 0 and graph_id[1] == 0
    assert torch.npu.MemPool().id != torch.npu.MemPool().id
    # A graph capture routes one stream to its pool, from any thread.
    stream = torch.npu.Stream()
    _C._npu_beginAllocateStreamToPool(0, graph_id, stream.stream_id)
    try:
        with torch.npu.stream(stream):
            captured = torch.empty(KIB, device="npu")
        default = torch.empty(KIB, device="npu")
    finally:
        _C._npu_endAllocateToPool(0, graph_id)
    assert _in_segments(captured, _segments(graph_id)) and not _in_segments(default, _segments(graph_id))
    assert _C._npu_getPoolUseCount(0, graph_id) == 1
    _C._npu_releasePool(0, graph_id)
    del captured
    assert _segments(graph_id) == []
