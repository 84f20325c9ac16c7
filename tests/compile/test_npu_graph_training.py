"""NPUGraph with autograd: a whole training step captured (forward, backward, optimizer) and
replayed without allocating, make_graphed_callables forward and backward graphs,
torch.compile(mode="reduce-overhead") replaying NPUGraphs, and the capture restrictions."""

import gc

import pytest
import torch
import torch.nn as nn

import npusim  # noqa: F401
from npusim import _C


def _host_ns() -> int:
    return int(_C._timeline_info(0)["host_ns"])


def _allocations() -> tuple[int, int]:
    gc.collect()  # objects of earlier tests must not be freed inside a measured replay
    stats = torch.npu.memory_stats()
    return stats["allocation.all.allocated"], torch.npu.memory_allocated()


def _model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4)).to("npu")


def _eager_step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _batches(count: int):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(5, 8, generator=generator).to("npu"), torch.randn(5, 4, generator=generator).to("npu"))
            for _ in range(count)]


def test_captured_training_step_equals_eager_and_replay_allocates_nothing():
    graphed, reference = _model(), _model()
    optimizer = torch.optim.SGD(graphed.parameters(), lr=0.1, momentum=0.9)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    batches = _batches(7)
    static_x, static_y = batches[0][0].clone(), batches[0][1].clone()
    # Warm-up on a side stream (as on CUDA): the momentum buffers exist before the capture.
    side = torch.npu.Stream()
    side.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(side):
        for x, y in batches[:2]:
            _eager_step(graphed, optimizer, x, y)
    torch.npu.current_stream().wait_stream(side)
    for x, y in batches[:2]:
        _eager_step(reference, reference_optimizer, x, y)

    npu_graph = torch.npu.NPUGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.npu.graph(npu_graph):
        static_loss = nn.functional.mse_loss(graphed(static_x), static_y)
        static_loss.backward()
        optimizer.step()
    # The capture ran the step once (on batch 0), as on CUDA.
    _eager_step(reference, reference_optimizer, static_x, static_y)
    operators = npu_graph.operators
    assert any("mm" in op for op in operators) and any("native_layer_norm_backward" in op for op in operators)
    plans = dict(npu_graph.replay_plan)
    assert plans["aten.addmm.default"] == "functional" and plans["aten._foreach_add_.List"] == "in place"

    for x, y in batches[2:]:
        static_x.copy_(x)
        static_y.copy_(y)
        before = _allocations()
        npu_graph.replay()
        assert _allocations() == before  # no allocation at all: every result lands in captured memory
        expected = _eager_step(reference, reference_optimizer, x, y)
        torch.testing.assert_close(static_loss.cpu(), expected.cpu())
        for mine, theirs in zip(graphed.parameters(), reference.parameters()):
            torch.testing.assert_close(mine.cpu(), theirs.cpu(), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(mine.grad.cpu(), theirs.grad.cpu(), rtol=1e-5, atol=1e-6)


def test_make_graphed_callables_captures_forward_and_backward():
    module, reference = _model(3), _model(3)
    sample = torch.randn(5, 8, device="npu", requires_grad=True)
    graphed = torch.npu.make_graphed_callables(module, (sample,))
    assert graphed is module
    forward_graph, backward_graph = module.forward.forward_graph, module.forward.backward_graph
    assert any("addmm" in op for op in forward_graph.operators)
    assert any(op.startswith("aten.mm") for op in backward_graph.operators)
    for x, y in _batches(3):
        x = x.requires_grad_()
        x_reference = x.detach().clone().requires_grad_()
        before = _allocations()[0]
        out = module(x)
        loss = nn.functional.mse_loss(out, y)
        loss.backward()
        expected = nn.functional.mse_loss(reference(x_reference), y)
        expected.backward()
        torch.testing.assert_close(loss.cpu(), expected.cpu())
        torch.testing.assert_close(x.grad.cpu(), x_reference.grad.cpu())
        for mine, theirs in zip(module.parameters(), reference.parameters()):
            torch.testing.assert_close(mine.grad.cpu(), theirs.grad.cpu(), rtol=1e-5, atol=1e-6)
        assert _allocations()[0] > before  # the loss and grad accumulation outside the graphs allocate
    # Eval mode was not graphed: the original forward runs.
    module.eval()
    with torch.no_grad():
        x = torch.randn(2, 8, device="npu")
        torch.testing.assert_close(module(x).cpu(), reference.eval()(x).cpu())


def test_graphed_callable_replays_allocate_nothing():
    module = _model(5)
    sample = torch.randn(5, 8, device="npu", requires_grad=True)
    torch.npu.make_graphed_callables(module, (sample,))
    forward_graph, backward_graph = module.forward.forward_graph, module.forward.backward_graph
    before = _allocations()
    forward_graph.replay()
    backward_graph.replay()
    assert _allocations() == before


def test_reduce_overhead_replays_npu_graphs_and_equals_eager():
    from npusim.compile import npu_graph_trees

    def step(x, w):
        for _ in range(4):
            x = torch.relu(x @ w).sin() * 0.5 + 1
        return x

    compiled = torch.compile(step, mode="reduce-overhead")
    w = torch.randn(16, 16, device="npu") * 0.25
    npu_graph_trees.reset_stats()
    results = []
    for i in range(5):
        x = torch.randn(8, 16, device="npu")
        out = compiled(x, w)
        torch.testing.assert_close(out.cpu(), step(x, w).cpu(), rtol=1e-4, atol=1e-5)
        results.append(out.clone())
    assert npu_graph_trees.stats == {"captured": 1, "replayed": 3, "warmups": 1, "eager": 0}
    # A replay pays one graph launch (and the copy of the new input into the captured one)
    # instead of a host dispatch per kernel (4 matrix products, 4 fused kernels).
    x = torch.randn(8, 16, device="npu")
    torch.npu.synchronize()
    start = _host_ns()
    compiled(x, w)
    replay_host = _host_ns() - start
    plain = torch.compile(step)
    plain(x, w)
    torch.npu.synchronize()
    start = _host_ns()
    plain(x, w)
    compiled_host = _host_ns() - start
    assert replay_host * 2 < compiled_host


def test_reduce_overhead_training_step_equals_eager():
    from npusim.compile import npu_graph_trees

    model, reference = _model(7), _model(7)
    compiled = torch.compile(model, mode="reduce-overhead")
    npu_graph_trees.reset_stats()
    replayed = []
    for x, y in _batches(6):
        # Fresh gradients each step (zero_grad's set_to_none): a .grad kept from a graph run is
        # overwritten by the next (test_npu_graph_trees covers accumulating into one).
        model.zero_grad(set_to_none=True)
        reference.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(compiled(x), y)
        loss.backward()
        expected = nn.functional.mse_loss(reference(x), y)
        expected.backward()
        torch.testing.assert_close(loss.cpu(), expected.cpu(), rtol=1e-4, atol=1e-5)
        for mine, theirs in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(mine.grad.cpu(), theirs.grad.cpu(), rtol=1e-4, atol=1e-5)
        replayed.append(npu_graph_trees.stats["replayed"])
    # The forward graph and the backward graph, each captured once (the backward's saved
    # activations are static inputs: it is captured once the forward replays, a step later).
    assert npu_graph_trees.stats["captured"] == 2
    assert replayed[-1] - replayed[-3] == 4  # the last two steps replay forward and backward


def test_capture_on_the_default_stream_is_refused():
    npu_graph = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match=r"NPU graphs must be captured on a non-default stream\. \(However, after "
                                           r"capture, it's ok to replay them on the default stream\.\)"):
        npu_graph.capture_begin()
    assert not torch.npu.is_current_stream_capturing()


@pytest.mark.parametrize(
    "violation, what",
    [
        (lambda x: torch.empty(4, device="npu:1"), "allocating on npu:1 while capturing on npu:0"),
        (lambda x: torch.npu.caching_allocator_alloc(64), "torch.npu.caching_allocator_alloc()"),
        (lambda x: torch.npu.empty_cache(), "torch.npu.empty_cache()"),
    ],
    ids=["other-device", "raw-alloc", "empty-cache"],
)
def test_memory_outside_the_pool_is_refused(violation, what):
    x = torch.ones(4, device="npu")
    npu_graph = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="must come from the graph's memory pool") as error:
        with torch.npu.graph(npu_graph):
            violation(x)
    assert what in str(error.value)
    assert not torch.npu.is_current_stream_capturing()
    torch.npu.empty_cache()  # restored after the capture


def test_backward_host_read_inside_capture_is_refused():
    x = torch.ones(4, device="npu", requires_grad=True)
    npu_graph = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="not permitted when stream is capturing"):
        with torch.npu.graph(npu_graph):
            loss = (x * 2).sum()
            loss.backward()
            x.grad.sum().item()


def test_a_graph_captures_once():
    npu_graph = torch.npu.NPUGraph()
    x = torch.ones(4, device="npu")
    with torch.npu.graph(npu_graph):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        with torch.npu.graph(npu_graph):
            x.mul_(2)
    npu_graph.replay()
    torch.testing.assert_close(x.cpu(), torch.full((4,), 4.0))


def test_cpu_fallback_operator_inside_capture_is_refused():
    x = torch.randn(4, 4, device="npu")
    grad_input = torch.empty_like(x)
    npu_graph = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="not permitted when stream is capturing") as error:
        with torch.npu.graph(npu_graph):
            # The out= overload of gelu_backward is not an NPU kernel in torch_npu's table.
            torch.ops.aten.gelu_backward.grad_input(x, x, grad_input=grad_input)
    assert "aten::gelu_backward (not supported on the NPU backend: a CPU fallback" in str(error.value)
    assert not torch.npu.is_current_stream_capturing()
