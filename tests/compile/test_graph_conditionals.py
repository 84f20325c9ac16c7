"""Conditional nodes: torch.cond captured in an NPUGraph follows its predicate at every replay."""

import torch

import npusim  # noqa: F401
from torch_npu.npu._npugraph_conditional_nodes import NPUGraphCaptureControlFlowOpDispatchMode


def test_cond_in_a_graph_follows_the_predicate_at_each_replay():
    pred = torch.tensor(True, device="npu")
    x = torch.arange(4.0, device="npu")
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph), NPUGraphCaptureControlFlowOpDispatchMode():
        out = torch.cond(pred, lambda t: t * 2, lambda t: t - 1, (x,))
    assert any(plan == "conditional" for _, plan in graph.replay_plan)
    graph.replay()
    assert torch.equal(out.cpu(), torch.arange(4.0) * 2)
    pred.fill_(False)
    x.add_(10)
    graph.replay()
    assert torch.equal(out.cpu(), torch.arange(4.0) + 9)


def test_if_node_api_and_its_checks():
    graph = torch.npu.NPUGraph()
    flag = torch.zeros(1, device="npu")
    y = torch.zeros(2, device="npu")
    with torch.npu.graph(graph):
        assert torch.npu.NPUGraph.get_currently_capturing_graph() is graph
        graph.begin_capture_to_if_node(flag)
        y.add_(1)
        graph.end_capture_to_conditional_node()
    y.zero_()
    graph.replay()
    assert torch.equal(y.cpu(), torch.zeros(2))
    flag.fill_(1)
    graph.replay()
    assert torch.equal(y.cpu(), torch.ones(2))
    try:
        torch.npu.NPUGraph.get_currently_capturing_graph()
    except RuntimeError as error:
        assert "not capturing" in str(error)
    else:
        raise AssertionError("no error outside a capture")
