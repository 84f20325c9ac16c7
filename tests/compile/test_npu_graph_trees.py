"""reduce-overhead's outputs are guarded as torch_npu's NPU graph trees (torch_npu.npu._graph_tree)
guard them: when a new generation begins, the outputs of the warm-up or recording path that
the program still holds are invalidated, and reading one (through any view too) raises
torch_npu's "accessing tensor output of NPUGraphs that has been overwritten by a subsequent
run"; a forward whose outputs are still in use is recorded again as a child instead of
replaying over them; npugraph_mark_step_begin() starts a generation even while forwards wait
for their backward."""

import re

import pytest
import torch
import torch.nn as nn

import npusim  # noqa: F401
from npusim.compile import npu_graph_trees

OVERWRITTEN = re.escape("Error: accessing tensor output of NPUGraphs that has been overwritten by a subsequent run.")
ADVICE = re.escape("To prevent overwriting, clone the tensor outside of torch.compile() or call "
                   "torch.compiler.npugraph_mark_step_begin() before each model invocation.")


pytestmark = pytest.mark.usefixtures("fresh_npu_graphs")


def _step(x, w):
    return torch.relu(x @ w).sin() * 0.5 + 1


def _inputs(count):
    generator = torch.Generator().manual_seed(3)
    w = (torch.randn(16, 16, generator=generator) * 0.25).to("npu")
    return w, [torch.randn(8, 16, generator=generator).to("npu") for _ in range(count)]


def test_an_output_read_after_the_next_generation_raises_torch_npus_error():
    compiled = torch.compile(_step, mode="reduce-overhead")
    w, xs = _inputs(4)
    warm = compiled(xs[0], w)  # warm-up run, in the graphs' pool
    warm_kept = warm.clone()
    captured = compiled(xs[1], w)  # capture, in a new generation: the warm-up's output goes
    view = captured[2:]
    kept = captured.clone()  # the documented remedy: a clone outside torch.compile
    replayed = compiled(xs[2], w)  # a replay: a new generation overwrites the graph's memory
    assert npu_graph_trees.stats == {"captured": 1, "replayed": 1, "warmups": 1, "eager": 0}
    # The warm-up's memory went back to the pool for the capture (PyTorch's documented example).
    with pytest.raises(RuntimeError, match=OVERWRITTEN):
        warm.cpu()
    torch.testing.assert_close(warm_kept.cpu(), _step(xs[0], w).cpu(), rtol=1e-4, atol=1e-5)
    for stale in (captured, view):
        with pytest.raises(RuntimeError, match="(?s)" + OVERWRITTEN + ".*" + ADVICE):
            stale.cpu()
    with pytest.raises(RuntimeError, match=OVERWRITTEN):
        captured + 1  # any operator reading it
    torch.testing.assert_close(kept.cpu(), _step(xs[1], w).cpu(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(replayed.cpu(), _step(xs[2], w).cpu(), rtol=1e-4, atol=1e-5)
    # The message names the line of the compiled function that produced the output.
    with pytest.raises(RuntimeError, match=r"Stack trace: .*test_npu_graph_trees\.py"):
        captured.sum()
    # The compile report counts the NPUGraph runs.
    from npusim.compile.report import compile_report, format_compile_report

    report = compile_report()
    assert report["npu_graphs"] == {"captured": 1, "replayed": 1, "warmups": 1, "eager": 0}
    assert any(line.strip().startswith("NPUGraphs (reduce-overhead): 1 captured, 1 replays, 1 warm-up runs")
               for line in format_compile_report(report))


def test_outputs_are_fresh_tensors_over_the_graphs_memory():
    compiled = torch.compile(_step, mode="reduce-overhead")
    w, xs = _inputs(4)
    for x in xs[:2]:
        compiled(x, w)
    first = compiled(xs[2], w)
    pointer = first.data_ptr()
    first_result = first.clone()
    del first
    second = compiled(xs[3], w)
    assert second.data_ptr() == pointer  # the same graph memory, handed out again
    torch.testing.assert_close(first_result.cpu(), _step(xs[2], w).cpu(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(second.cpu(), _step(xs[3], w).cpu(), rtol=1e-4, atol=1e-5)
    # A handed-out output keeps the graph's memory valid after the graph itself is gone.
    torch._dynamo.reset()
    import gc

    gc.collect()
    torch.testing.assert_close(second.cpu(), _step(xs[3], w).cpu(), rtol=1e-4, atol=1e-5)


def _model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).to("npu")


def _batch(seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(5, 8, generator=generator).to("npu"), torch.randn(5, 4, generator=generator).to("npu")


def _train_steps(model, forward, steps):
    for step in range(steps):
        model.zero_grad(set_to_none=True)
        x, y = _batch(step)
        nn.functional.mse_loss(forward(x), y).backward()


def test_two_forwards_before_their_backwards_never_overwrite_saved_activations():
    model, reference = _model(), _model()
    compiled = torch.compile(model, mode="reduce-overhead")
    _train_steps(model, compiled, 3)  # warm-up, capture, replay of forward and backward
    model.zero_grad(set_to_none=True)
    (x1, y1), (x2, y2) = _batch(10), _batch(11)
    captured = npu_graph_trees.stats["captured"]
    first = nn.functional.mse_loss(compiled(x1), y1)
    # The first forward's outputs are in use: the second is recorded as its child, into other
    # memory, instead of replaying over them.
    second = nn.functional.mse_loss(compiled(x2), y2)
    assert npu_graph_trees.stats["captured"] == captured + 1
    (first + second).backward()
    expected = nn.functional.mse_loss(reference(x1), y1) + nn.functional.mse_loss(reference(x2), y2)
    expected.backward()
    torch.testing.assert_close((first + second).detach().cpu(), expected.detach().cpu(), rtol=1e-4, atol=1e-5)
    for mine, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(mine.grad.cpu(), theirs.grad.cpu(), rtol=1e-4, atol=1e-5)


def test_mark_step_begin_starts_a_generation_while_a_backward_is_pending():
    assert torch.compiler.npugraph_mark_step_begin is not None
    model = _model()
    compiled = torch.compile(model, mode="reduce-overhead")
    _train_steps(model, compiled, 3)
    x, _ = _batch(20)
    pending = compiled(x)  # a forward whose backward never runs  # noqa: F841
    counts = dict(npu_graph_trees.stats)
    torch.compiler.npugraph_mark_step_begin()
    # The program said a new iteration began: the forward replays from the root instead of
    # being recorded again as a child of the pending one.
    compiled(_batch(21)[0])
    assert npu_graph_trees.stats["replayed"] == counts["replayed"] + 1
    assert npu_graph_trees.stats["captured"] == counts["captured"]


def test_accumulating_into_preallocated_gradients_equals_eager():
    model, reference = _model(), _model()
    compiled = torch.compile(model, mode="reduce-overhead")
    _train_steps(model, compiled, 3)
    for parameters in (model.parameters(), reference.parameters()):
        for parameter in parameters:
            parameter.grad = torch.zeros_like(parameter)  # stable buffers, outside any graph
    for seed in (40, 41, 42):
        x, y = _batch(seed)
        nn.functional.mse_loss(compiled(x), y).backward()
        nn.functional.mse_loss(reference(x), y).backward()
    for mine, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(mine.grad.cpu(), theirs.grad.cpu(), rtol=1e-4, atol=1e-5)


def _temporary_heavy(x, w):
    hidden = torch.relu(x @ w)  # a 4 MiB temporary
    return (hidden * hidden).sum(0)  # a 16 KiB output


def _output_heavy(x, w):
    return torch.sigmoid(x @ w) + 1  # a 4 MiB output


def _two_graphs(trees: bool):
    """Captures a temporary-heavy graph, then an output-heavy one; returns the memory the
    captures reserved and the output-heavy graph's output."""
    from torch._inductor import config

    generator = torch.Generator().manual_seed(5)
    w = torch.randn(256, 4096, generator=generator).to("npu")
    x = torch.randn(256, 256, generator=generator).to("npu")
    with config.patch({"triton.cudagraph_trees": trees}):
        first = torch.compile(_temporary_heavy, mode="reduce-overhead")
        second = torch.compile(_output_heavy, mode="reduce-overhead")
        torch.npu.synchronize()
        before = torch.npu.memory_reserved()
        with torch.no_grad():
            for _ in range(2):  # warm-up, capture
                first(x, w)
            for _ in range(2):
                output = second(x, w)
        reserved = torch.npu.memory_reserved() - before
        expected = _output_heavy(x, w).cpu()
        torch.testing.assert_close(output.cpu(), expected)
        with torch.no_grad():
            replayed = first(x, w)  # a replay of the first graph, in a new generation
        torch.testing.assert_close(replayed.cpu(), _temporary_heavy(x, w).cpu(), rtol=1e-4, atol=1e-3)
    return reserved, output, expected


def test_graphs_share_one_pool_and_a_later_graph_reuses_the_temporaries_of_an_earlier_one():
    shared, output, _ = _two_graphs(trees=True)
    npu_graph_trees.reset_generations()
    torch._dynamo.reset()
    private, private_output, expected = _two_graphs(trees=False)
    # The output-heavy graph's 4 MiB output went into the temporary-heavy graph's freed
    # temporary instead of a segment of its own.
    assert shared + 4 * 2**20 <= private, (shared, private)
    # There, the first graph's replay overwrote it: reading it raises torch_npu's error ...
    with pytest.raises(RuntimeError, match=OVERWRITTEN):
        output.cpu()
    # ... while with private pools nothing else writes a graph's memory.
    torch.testing.assert_close(private_output.cpu(), expected)


def test_training_through_two_compiled_modules_in_one_pool_equals_eager():
    """Two compiled modules, four graphs (two forwards, two backwards) captured into the
    device's one pool, later graphs over the earlier ones' temporaries: every step equals eager
    (no saved activation or gradient is overwritten) and the graphs replay."""
    torch.manual_seed(0)
    first, second = nn.Linear(64, 256).to("npu"), nn.Sequential(nn.GELU(), nn.Linear(256, 8)).to("npu")
    reference = [nn.Linear(64, 256).to("npu"), nn.Sequential(nn.GELU(), nn.Linear(256, 8)).to("npu")]
    reference[0].load_state_dict(first.state_dict())
    reference[1].load_state_dict(second.state_dict())
    compiled = [torch.compile(first, mode="reduce-overhead"), torch.compile(second, mode="reduce-overhead")]
    parameters = [*first.parameters(), *second.parameters()]
    reference_parameters = [*reference[0].parameters(), *reference[1].parameters()]
    optimizer = torch.optim.SGD(parameters, lr=0.05)
    reference_optimizer = torch.optim.SGD(reference_parameters, lr=0.05)
    generator = torch.Generator().manual_seed(9)
    for _ in range(6):
        x = torch.randn(32, 64, generator=generator).to("npu")
        y = torch.randn(32, 8, generator=generator).to("npu")
        loss = nn.functional.mse_loss(compiled[1](compiled[0](x)), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        reference_loss = nn.functional.mse_loss(reference[1](reference[0](x)), y)
        reference_loss.backward()
        reference_optimizer.step()
        reference_optimizer.zero_grad(set_to_none=True)
        torch.testing.assert_close(loss.detach().cpu(), reference_loss.detach().cpu(), rtol=1e-4, atol=1e-5)
    for mine, theirs in zip(parameters, reference_parameters):
        torch.testing.assert_close(mine.cpu(), theirs.cpu(), rtol=1e-4, atol=1e-5)
    assert npu_graph_trees.stats["replayed"] >= 8
