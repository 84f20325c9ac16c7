"""torch_npu.npu._graph_tree (npusim.compile.graph_tree): the NPU graph trees that
reduce-overhead and the npugraphs backend run through, and the torch_npu._C bindings they use.

A compiled function warms up in the graphs' pool, is recorded into an NPUGraph node of the
device's tree, and replays it; the pool's allocated blocks are exactly the memory the nodes keep
and the outputs of the current path (check_memory_pool); a new generation invalidates the
outputs of a recording or warm-up path and gives a warm-up's memory back to the pool."""

import re

import pytest
import torch

import npusim  # noqa: F401
import torch_npu
from npusim.compile import graph_tree
from npusim.compile.graph_run_stats import stats

OVERWRITTEN = re.escape("Error: accessing tensor output of NPUGraphs that has been overwritten by a subsequent run.")

pytestmark = pytest.mark.usefixtures("fresh_npu_graphs")


def _step(x, w):
    return torch.tanh(x @ w) * 2 + 1


def _inputs(count):
    generator = torch.Generator().manual_seed(7)
    w = torch.randn(16, 16, generator=generator).to("npu") * 0.25
    return w, [torch.randn(8, 16, generator=generator).to("npu") for _ in range(count)]


def test_the_module_is_served_as_torch_npus_graph_tree():
    import torch_npu.npu._graph_tree as served

    assert served is graph_tree
    assert torch_npu.npu._graph_tree is graph_tree


def test_reduce_overhead_warms_up_records_then_replays_one_tree_node():
    compiled = torch.compile(_step, mode="reduce-overhead")
    w, xs = _inputs(4)
    outputs = []
    for x in xs:
        outputs.append(compiled(x, w).clone())
    manager = graph_tree.get_manager(0, create_if_none_exists=False)
    assert manager is not None
    roots = list(manager.get_roots())
    assert len(roots) == 1 and isinstance(roots[0], graph_tree.NPUGraphNode)
    assert roots[0].num_descendants() == 0
    assert manager.path_state == graph_tree.ExecutionState.EXECUTION
    assert stats == {"captured": 1, "replayed": 2, "warmups": 1, "eager": 0}
    for x, out in zip(xs, outputs):
        torch.testing.assert_close(out.cpu(), _step(x, w).cpu(), rtol=1e-4, atol=1e-5)


def test_replays_hand_out_the_nodes_cached_output_over_its_memory():
    compiled = torch.compile(_step, mode="reduce-overhead")
    w, xs = _inputs(4)
    for x in xs[:2]:
        compiled(x, w)
    first = compiled(xs[2], w)
    node = next(graph_tree.get_manager(0).get_roots())
    assert first is node.cached_tensor_outputs[0]
    assert first.untyped_storage().data_ptr() in node.output_memory
    second = compiled(xs[3], w)
    assert second is first  # the same tensor, run after run (torch_npu's cached outputs)
    torch.testing.assert_close(second.cpu(), _step(xs[3], w).cpu(), rtol=1e-4, atol=1e-5)


def test_a_new_generation_invalidates_a_warm_up_output_and_frees_its_memory():
    compiled = torch.compile(_step, mode="reduce-overhead")
    w, xs = _inputs(2)
    warm = compiled(xs[0], w)
    manager = graph_tree.get_manager(0)
    pool = manager.npu_graphs_thread_pool
    address = warm.untyped_storage().data_ptr()
    assert address in graph_tree.get_block_addrs(pool)  # warm-up allocates in the graphs' pool
    captured = compiled(xs[1], w)  # a new generation: records, after freeing the warm-up's output
    with pytest.raises(RuntimeError, match=OVERWRITTEN):
        warm.sum()
    torch.testing.assert_close(captured.cpu(), _step(xs[1], w).cpu(), rtol=1e-4, atol=1e-5)
    # The pool's live blocks: the node's input copy and output memory, nothing of the warm-up.
    node = next(manager.get_roots())
    expected = {s.data_ptr() for s in node.output_memory.values()}
    expected |= {t.untyped_storage().data_ptr() for i, t in enumerate(node.reconstructed_inputs)
                 if i in node.non_static_input_idx}
    assert set(graph_tree.get_block_addrs(pool)) == expected
    graph_tree.check_memory_pool(0, pool, graph_tree.pool_live_weakrefs(0, pool, []))


def test_check_memory_pool_names_an_allocation_no_graph_accounts_for():
    manager = graph_tree.get_manager(0)
    pool = manager.npu_graphs_thread_pool
    with graph_tree._use_npu_memory_pool_manager(0, pool, manager.stream):
        stray = torch.empty(256, device="npu")
    with pytest.raises(RuntimeError, match="These live storage data ptrs are in the npugraph pool but not accounted for"):
        graph_tree.check_memory_pool(0, pool, [])
    graph_tree.check_memory_pool(0, pool, [graph_tree.StorageWeakRefWrapper(stray)])
    outside = torch.empty(4, device="npu")  # live, but in the default pool
    with pytest.raises(RuntimeError, match=r"not allocated in pool .* but should be"):
        graph_tree.check_memory_pool(0, pool, [graph_tree.StorageWeakRefWrapper(stray),
                                               graph_tree.StorageWeakRefWrapper(outside)])


def test_storage_weak_ref_wrapper_tracks_liveness_and_keeps_the_address():
    tensor = torch.ones(4, device="npu")
    wrapper = graph_tree.StorageWeakRefWrapper(tensor)
    address = tensor.untyped_storage().data_ptr()
    assert graph_tree.is_live(wrapper) and graph_tree.maybe_deref(wrapper)[1] == address
    del tensor
    assert wrapper.expired() and wrapper() is None and not graph_tree.is_live(wrapper)
    assert wrapper.data_ptr() == address
    assert "dead" in repr(wrapper)


def test_torch_npu_c_bindings_of_the_trees():
    C = torch_npu._C
    a, b = torch.ones(3, device="npu"), torch.zeros(3, device="npu")
    assert C._tensors_data_ptrs_at_indices_equal([a, b], [a.data_ptr(), 0], [0])
    assert not C._tensors_data_ptrs_at_indices_equal([a, b], [a.data_ptr(), 0], [0, 1])
    metadata = {"size": (2,), "stride": (1,), "dtype": torch.float32, "device": a.device, "storage_offset": 1}
    view = C._construct_NPU_Tensor_From_Storage_And_Metadata(metadata, a.untyped_storage())
    assert view.data_ptr() == a.data_ptr() + 4 and view.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    nz = torch.zeros(16, 16, device="npu")
    formatted = C._construct_NPU_Tensor_From_Storage_And_Metadata(
        {"size": (16, 16), "stride": (16, 1), "dtype": torch.float32, "device": nz.device, "storage_offset": 0,
         "npu_format": 29}, nz.untyped_storage())
    assert torch_npu.get_npu_format(formatted) == torch_npu.Format.FRACTAL_NZ
    pool = torch.npu.graph_pool_handle()
    C._npu_beginAllocateCurrentThreadToPool(0, pool)
    try:
        inside = torch.empty(64, device="npu")
    finally:
        C._npu_endAllocateToPool(0, pool)
    address = inside.untyped_storage().data_ptr()
    assert C._npu_checkPoolLiveAllocations(0, pool, {address})
    state = C._npu_getCheckpointState(0, pool)
    assert [addr for addr, _ in state.allocated_blocks()] == [address]
    # Freed while the storage lives on: the block goes back, the storage raises when set to.
    C._free_And_Remove_DeleterFn(inside.untyped_storage()._cdata)
    assert C._npu_checkPoolLiveAllocations(0, pool, set())
    C._npu_releasePool(0, pool)


def test_a_busy_forward_is_recorded_as_a_child_and_a_repeated_pattern_warns_once():
    model = torch.nn.Linear(8, 8).to("npu")
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(4, 8).to("npu")
    for _ in range(3):  # warm-up, record, replay of forward and backward
        model.zero_grad(set_to_none=True)
        compiled(x).sum().backward()
    model.zero_grad(set_to_none=True)
    manager = graph_tree.get_manager(0)
    forward_root = next(manager.get_roots())
    kept = [compiled(x) for _ in range(2)]  # the first forward's outputs wait for a backward
    assert forward_root.num_descendants() >= 2  # its backward, and the second forward
    with pytest.warns(UserWarning, match="Unable to hit fast path of NPUGraphs because of pending, uninvoked backwards"):
        kept.append(compiled(x))
        kept.append(compiled(x))
    sum(k.sum() for k in kept).backward()


def test_a_cached_output_is_live_while_the_program_holds_it_or_a_view_of_it():
    compiled = torch.compile(_step, mode="reduce-overhead")
    w, xs = _inputs(4)
    for x in xs[:3]:
        compiled(x, w)
    out = compiled(xs[3], w)  # a replay: the node's cached output
    node = next(graph_tree.get_manager(0).get_roots())
    ref = node.outputs_weakrefs[0]
    assert graph_tree.is_live(ref) and not node.all_outputs_are_dead()
    view = out[1:]
    del out
    assert graph_tree.is_live(ref)  # the tree's own references do not count, a view does
    del view
    assert not graph_tree.is_live(ref) and node.all_outputs_are_dead()
