"""Random numbers inside an NPUGraph (npusim.compile.graph_rng): a capture does not move the
generator, a replay draws what eager mode draws from the generator's state at replay and then
advances it, seeds may not change while capturing, and a state read in the capture and written
back (torch.utils.checkpoint's recompute) makes the replay draw the same numbers again."""

import warnings

import pytest
import torch

import npusim  # noqa: F401


def _capture(function):
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        result = function()
    return graph, result


@pytest.mark.parametrize(
    "draw",
    [
        lambda: torch.empty(64, device="npu").uniform_(-1.0, 1.0),
        lambda: torch.empty(64, device="npu").normal_(0.0, 1.0),
        lambda: torch.rand(64, device="npu"),
        lambda: torch.multinomial(torch.tensor([1.0, 2.0, 3.0], device="npu"), 50, replacement=True),
        lambda: torch.nn.functional.dropout(torch.ones(64, device="npu"), p=0.5, training=True),
    ],
    ids=["uniform_", "normal_", "rand", "multinomial", "dropout"],
)
def test_replay_after_seed_draws_what_eager_draws(draw):
    torch.npu.manual_seed(7)
    eager = draw()
    eager_next = torch.rand(4, device="npu")
    torch.npu.manual_seed(7)
    graph, captured = _capture(draw)
    torch.npu.manual_seed(7)
    graph.replay()
    assert torch.equal(captured.cpu(), eager.cpu())
    # The replay advanced the generator by what the graph drew.
    assert torch.equal(torch.rand(4, device="npu").cpu(), eager_next.cpu())


def test_capture_leaves_the_generator_and_replays_differ():
    torch.npu.manual_seed(3)
    state = torch.npu.get_rng_state()
    graph, captured = _capture(lambda: torch.randn(32, device="npu"))
    assert torch.equal(torch.npu.get_rng_state(), state)
    graph.replay()
    first = captured.cpu().clone()
    graph.replay()
    assert not torch.equal(captured.cpu(), first)


def test_seed_change_while_capturing_is_refused_and_same_seed_is_a_no_op():
    torch.npu.manual_seed(0)
    graph = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="set_current_seed can be called during stream capture only if new seed"):
        with torch.npu.graph(graph):
            torch.npu.manual_seed(1)
    torch.npu.manual_seed(1)
    other_seed = torch.npu.get_rng_state()
    torch.npu.manual_seed(0)
    with pytest.raises(RuntimeError, match="only if new seed is the same as the original seed"):
        with torch.npu.graph(torch.npu.NPUGraph()):
            torch.npu.set_rng_state(other_seed)
    # The same seed is accepted and does not rewind the draws.
    torch.npu.manual_seed(0)
    expected_first, expected_second = torch.rand(4, device="npu"), torch.rand(4, device="npu")
    torch.npu.manual_seed(0)

    def draws():
        first = torch.rand(4, device="npu")
        torch.npu.manual_seed(0)
        return first, torch.rand(4, device="npu")

    graph, (first, second) = _capture(draws)
    torch.npu.manual_seed(0)
    graph.replay()
    assert torch.equal(first.cpu(), expected_first.cpu()) and torch.equal(second.cpu(), expected_second.cpu())


def test_state_read_and_written_in_capture_replays_the_same_draws():
    torch.npu.manual_seed(11)

    def draws():
        state = torch.npu.get_rng_state()
        first = torch.rand(8, device="npu")
        torch.npu.set_rng_state(state)
        return first, torch.rand(8, device="npu")

    graph, (first, second) = _capture(draws)
    plans = [plan for _, plan in graph.replay_plan]
    assert any(plan.startswith("remember the generator state") for plan in plans)
    assert any(plan.startswith("restore the generator state") for plan in plans)
    for _ in range(2):
        graph.replay()
        assert torch.equal(first.cpu(), second.cpu())


def test_checkpoint_recompute_in_a_graph_matches_eager():
    def function(x):
        return x * torch.sigmoid(torch.randn(1, device="npu"))

    torch.npu.manual_seed(42)
    x = torch.ones(1, device="npu", requires_grad=True)
    out = torch.utils.checkpoint.checkpoint(function, x, use_reentrant=False, preserve_rng_state=True)
    (eager_grad,) = torch.autograd.grad(out, x)

    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        graph_x = torch.ones(1, device="npu", requires_grad=True)
        graph_out = torch.utils.checkpoint.checkpoint(function, graph_x, use_reentrant=False,
                                                      preserve_rng_state=True)
        (graph_grad,) = torch.autograd.grad(graph_out, graph_x)
    torch.npu.manual_seed(42)
    graph.replay()
    assert torch.equal(graph_grad.cpu(), eager_grad.cpu())


def test_own_generator_is_registered_by_its_first_draw():
    generator = torch.Generator(device="npu")
    generator.manual_seed(5)
    graph = torch.npu.NPUGraph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph.register_generator_state(generator)
    assert any("register_generator_state() is deprecated" in str(w.message) for w in caught)
    with torch.npu.graph(graph):
        captured = torch.rand(8, device="npu", generator=generator)
    reference = torch.Generator(device="npu")
    reference.manual_seed(5)
    expected = torch.rand(8, device="npu", generator=reference)
    generator.manual_seed(5)
    graph.replay()
    assert torch.equal(captured.cpu(), expected.cpu())


def test_dropout_follows_the_npu_seed_and_draws_what_the_cpu_draws():
    x = torch.ones(1000)
    torch.npu.manual_seed(21)
    first = torch.nn.functional.dropout(x.npu(), p=0.3, training=True)
    torch.npu.manual_seed(21)
    again = torch.nn.functional.dropout(x.npu(), p=0.3, training=True)
    assert torch.equal(first.cpu(), again.cpu())
    torch.manual_seed(21)
    on_cpu = torch.nn.functional.dropout(x, p=0.3, training=True)
    assert torch.equal(first.cpu(), on_cpu)
    out, mask = torch.ops.aten.native_dropout(x.npu(), 0.3, False)
    assert torch.equal(out.cpu(), x) and mask.dtype == torch.bool and bool(mask.all())
