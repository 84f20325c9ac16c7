"""An NPUGraph's captured memory lives in a private pool of the caching allocator: allocations on
the capture stream (backward included) come from the pool's segments, the pool is shared through
``pool()`` / ``graph_pool_handle()``, and ``reset()`` gives the memory back."""

import gc

import torch
import torch.nn as nn

import npusim  # noqa: F401


def _pool_segments(pool_id):
    return [s for s in torch.npu.memory_snapshot() if s["segment_pool_id"] == tuple(pool_id)]


def _inside(tensor, segments) -> bool:
    address = tensor.untyped_storage().data_ptr()
    return any(s["address"] <= address < s["address"] + s["total_size"] for s in segments)


def test_captured_training_step_allocates_from_the_graph_pool_and_reset_frees_it():
    gc.collect()
    torch.npu.empty_cache()
    base = torch.npu.memory_reserved()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)).to("npu")
    x = torch.randn(16, 64, device="npu")
    stream = torch.npu.Stream()
    stream.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(stream):  # warm-up outside the capture, as with CUDA graphs
        model(x).sum().backward()
    torch.npu.current_stream().wait_stream(stream)
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        out = model(x)
        out.sum().backward()
    segments = _pool_segments(graph.pool())
    assert segments, "the capture allocated no memory in its pool"
    assert _inside(out, segments)
    assert all(s["segment_pool_id"] != (0, 0) for s in segments)
    torch.npu.empty_cache()  # a live graph's pool keeps its segments
    assert _pool_segments(graph.pool()) == segments

    second = torch.npu.NPUGraph()
    with torch.npu.graph(second, pool=graph.pool()):
        shared = model(x) * 2
    assert _inside(shared, _pool_segments(graph.pool()))

    pool = graph.pool()
    del out, shared
    graph.reset()
    second.reset()
    gc.collect()
    torch.npu.empty_cache()
    assert _pool_segments(pool) == []
    del model, x
    gc.collect()
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() == base


def test_graph_pool_handles_and_mempool_ids_never_collide():
    handles = {torch.npu.graph_pool_handle() for _ in range(3)}
    pools = {torch.npu.MemPool().id for _ in range(3)}
    assert len(handles) == 3 and len(pools) == 3 and not handles & pools
