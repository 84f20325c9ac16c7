"""NPUGraph updates: task groups and their updates, ExternalEvent, automatic dispatch capture
with NPUGraph.update, the graph operator handlers and the ACLGraph update plans."""

import json

import pytest
import torch

import npusim  # noqa: F401
import torch_npu
from npusim import _C


def decode_inputs():
    g = torch.Generator().manual_seed(11)
    q = torch.randn(2, 4, 1, 8, generator=g).npu()
    k = torch.randn(2, 2, 6, 8, generator=g).npu()
    v = torch.randn(2, 2, 6, 8, generator=g).npu()
    return q, k, v


FIA = dict(num_heads=4, num_key_value_heads=2, scale=0.35, input_layout="BNSD")


def eager(q, k, v, lengths):
    return torch_npu.npu_fused_infer_attention_score(q, k, v, actual_seq_lengths_kv=lengths, **FIA)[0].cpu()


def test_task_group_update_changes_what_replays_compute():
    q, k, v = decode_inputs()
    graph, event, update_stream = torch.npu.NPUGraph(), torch.npu.ExternalEvent(), torch.npu.Stream()
    workspace = torch_npu._npu_fused_infer_attention_score_get_max_workspace(q, k, v, actual_seq_lengths_kv=[2, 3],
                                                                             **FIA)
    with torch.npu.graph(graph):
        stream = torch.npu.current_stream()
        out = torch.empty(2, 4, 1, 8, device="npu")
        lse = torch.empty(1, device="npu")
        event.wait(stream)
        event.reset(stream)
        torch.npu.graph_task_group_begin(stream)
        torch_npu.npu_fused_infer_attention_score.out(q, k, v, actual_seq_lengths_kv=[2, 3], workspace=workspace,
                                                      out=[out, lse], **FIA)
        handle = torch.npu.graph_task_group_end(stream)
    assert any(plan == "task group" for _, plan in graph.replay_plan)
    for lengths in ([6, 1], [4, 5]):
        with torch.npu.stream(update_stream):
            torch.npu.graph_task_update_begin(update_stream, handle)
            torch_npu.npu_fused_infer_attention_score.out(q, k, v, actual_seq_lengths_kv=lengths, workspace=workspace,
                                                          out=[out, lse], **FIA)
            torch.npu.graph_task_update_end(update_stream)
            event.record(update_stream)
        # The update itself computes nothing: the replay does.
        graph.replay()
        torch.testing.assert_close(out.cpu(), eager(q, k, v, lengths))
    # The graph reset the event: a replay without a new record would wait forever on the chip.
    with pytest.raises(RuntimeError, match="ExternalEvent that was not recorded"):
        graph.replay()


def test_update_region_must_issue_the_captured_operators():
    q, k, v = decode_inputs()
    graph, update_stream = torch.npu.NPUGraph(), torch.npu.Stream()
    with torch.npu.graph(graph):
        stream = torch.npu.current_stream()
        out, lse = torch.empty(2, 4, 1, 8, device="npu"), torch.empty(1, device="npu")
        torch.npu.graph_task_group_begin(stream)
        torch_npu.npu_fused_infer_attention_score.out(q, k, v, out=[out, lse], **FIA)
        handle = torch.npu.graph_task_group_end(stream)
    with torch.npu.stream(update_stream):
        torch.npu.graph_task_update_begin(update_stream, handle)
        with pytest.raises(RuntimeError, match="operator 0 of the task group is"):
            torch.add(q, 1)
        # An incomplete update is refused as a whole: the group keeps its captured call.
        with pytest.raises(RuntimeError, match="the update issued 0 operators, the task group holds 1"):
            torch.npu.graph_task_update_end(update_stream)
    graph.replay()
    torch.testing.assert_close(out.cpu(), eager(q, k, v, None))
    with pytest.raises(RuntimeError, match="needs a stream that is capturing"):
        torch.npu.graph_task_group_begin(update_stream)


def test_auto_dispatch_capture_and_update_functional_form():
    q, k, v = decode_inputs()
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph, auto_dispatch_capture=True):
        out, lse = torch_npu.npu_fused_infer_attention_score(q, k, v, actual_seq_lengths_kv=[1, 1], **FIA)
    records = graph.graph_dispatch_mode.graph_dispatch_records
    assert [r.op_cache_entry.__name__ for r in records] == ["npu_fused_infer_attention_score.out"]
    for lengths in ([6, 2], [3, 6], [6, 2]):
        host_before = _C._timeline_info(0)["host_ns"]
        graph.update(cpu_update_input=[{"actual_seq_lengths_kv": lengths}])
        assert _C._timeline_info(0)["host_ns"] > host_before  # one launch from the host per updated task
        graph.replay()
        torch.testing.assert_close(out.cpu(), eager(q, k, v, lengths))
    with pytest.raises(RuntimeError, match="only 2 elements"):
        graph.update(cpu_update_input=[{}, {}])
    plain = torch.npu.NPUGraph()
    with torch.npu.graph(plain):
        torch.add(q, 1)
    with pytest.raises(RuntimeError, match="does not support update"):
        plain.update(cpu_update_input=[{"actual_seq_lengths_kv": [1, 1]}])
    assert graph.graph_dispatch_mode.update_stream == plain.graph_dispatch_mode.update_stream


def test_paged_attention_takes_context_lens_by_value_until_updated():
    g = torch.Generator().manual_seed(5)
    query = torch.randn(2, 4, 8, generator=g).npu()
    key_cache = torch.randn(4, 4, 2, 8, generator=g).npu()
    value_cache = torch.randn(4, 4, 2, 8, generator=g).npu()
    block_table = torch.tensor([[0, 1], [2, 3]], dtype=torch.int32).npu()
    context_lens = torch.tensor([3, 8], dtype=torch.int32)
    out = torch.zeros(2, 4, 8, device="npu")

    def run(lengths, into):
        torch_npu._npu_paged_attention(query, key_cache, value_cache, 2, 4, 0.3, block_table, lengths, into)
        return into.cpu()

    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph, auto_dispatch_capture=True):
        torch_npu._npu_paged_attention(query, key_cache, value_cache, 2, 4, 0.3, block_table, context_lens, out)
    graph.update(cpu_update_input=[{"context_lens": context_lens}])
    graph.replay()
    torch.testing.assert_close(out.cpu(), run(context_lens, torch.zeros_like(out)))
    # Changing the host tensor changes nothing the graph runs; an update does.
    context_lens.fill_(1)
    graph.update(cpu_update_input=[{"context_lens": torch.tensor([3, 8], dtype=torch.int32)}])
    graph.replay()
    torch.testing.assert_close(out.cpu(), run(torch.tensor([3, 8], dtype=torch.int32), torch.zeros_like(out)))
    graph.update(cpu_update_input=[{"context_lens": torch.tensor([8, 2], dtype=torch.int32)}])
    graph.replay()
    torch.testing.assert_close(out.cpu(), run(torch.tensor([8, 2], dtype=torch.int32), torch.zeros_like(out)))


def test_handlers_and_update_plans():
    from torch_npu.npu import NpuGraphOpHandler, register_npu_graph_handler
    from torch_npu.npu._npugraph_handlers.npugraph_handler import _NPU_GRAPH_OP_HANDLERS
    from torch_npu.npu._aclgraph_update_plan import build_cpu_update_input_for_graph

    assert _NPU_GRAPH_OP_HANDLERS["_npu_paged_attention.default"].get_update_specs(
        "_npu_paged_attention.default") == [("arg", 7, "context_lens")]
    saved = dict(_NPU_GRAPH_OP_HANDLERS)
    try:
        @register_npu_graph_handler(["my_op", "my_op.default"])
        class Handler(NpuGraphOpHandler):
            UPDATE_SPECS = {"my_op.default": [("kwarg", "lengths", "lengths")]}

        assert _NPU_GRAPH_OP_HANDLERS["my_op"] is Handler
    finally:
        _NPU_GRAPH_OP_HANDLERS.clear()
        _NPU_GRAPH_OP_HANDLERS.update(saved)

    q, k, v = decode_inputs()
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph, auto_dispatch_capture=True):
        out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, actual_seq_lengths_kv=[1, 1], **FIA)
    plan = [{"op": "npu_fused_infer_attention_score.default",
             "updates": {"actual_seq_lengths_kv": {"kind": "list", "items": [
                 {"kind": "input", "index": 1}, {"kind": "constant", "value": 6}]}}}]
    update = build_cpu_update_input_for_graph(plan, [q, 4], graph.graph_dispatch_mode.graph_dispatch_records)
    assert update == [{"actual_seq_lengths_kv": [4, 6]}]
    graph.update(update)
    graph.replay()
    torch.testing.assert_close(out.cpu(), eager(q, k, v, [4, 6]))
    with pytest.raises(RuntimeError, match="op mismatch"):
        build_cpu_update_input_for_graph([{"op": "other.out", "updates": {"x": {"kind": "none"}}}], [],
                                         graph.graph_dispatch_mode.graph_dispatch_records)


def test_debug_dump_writes_a_trace_and_its_aligned_view(tmp_path):
    x = torch.randn(4, 4, device="npu")
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        y = torch.mm(x, x).relu()
    path = tmp_path / "graph.json"
    assert graph.debug_dump(str(path)) is None
    events = json.loads(path.read_text())["traceEvents"]
    assert [e["name"] for e in events] == graph.operators
    aligned = json.loads((tmp_path / "graph.aligned.json").read_text())
    assert len(aligned) == len(events)
    starts = [e["ts"] for e in aligned]
    assert starts == sorted(starts)
    untouched = tmp_path / "none.json"
    torch.npu.NPUGraph().debug_dump(str(untouched))  # no capture: nothing written
    assert not untouched.exists()
    del y


def test_deleting_an_updated_graph_gives_its_memory_back():
    import gc

    q, k, v = decode_inputs()

    def capture_update_replay():
        graph = torch.npu.NPUGraph()
        with torch.npu.graph(graph, auto_dispatch_capture=True):
            out, lse = torch_npu.npu_fused_infer_attention_score(q, k, v, actual_seq_lengths_kv=[1, 1], **FIA)
        graph.update(cpu_update_input=[{"actual_seq_lengths_kv": [3, 4]}])
        graph.replay()

    capture_update_replay()  # the first run may leave cycles of PyTorch's lazy imports behind
    gc.collect()
    before = torch.npu.memory_allocated()
    gc.disable()
    try:
        capture_update_replay()
        # No reference cycle holds the graph, its records or its workspace.
        assert torch.npu.memory_allocated() == before
    finally:
        gc.enable()
