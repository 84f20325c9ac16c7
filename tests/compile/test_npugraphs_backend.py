"""``torch.compile(model, backend="npugraphs")``, as torch_npu registers it (PyTorch's
"cudagraphs" for npu): AOTAutograd's forward and backward run as FX graphs, captured into
NPUGraphs on their second call and replayed after; the reduce-overhead rules guard the outputs;
graphs with CPU inputs run without capture; options are refused."""

import re

import pytest
import torch
import torch.nn as nn

import npusim  # noqa: F401
from npusim.compile import npu_graph_trees
from npusim_testing.fresh_process import run_python

OVERWRITTEN = re.escape("Error: accessing tensor output of NPUGraphs that has been overwritten by a subsequent run.")


pytestmark = pytest.mark.usefixtures("fresh_npu_graphs")


def _models():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)).to("npu")
    reference = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)).to("npu")
    reference.load_state_dict(model.state_dict())
    return model, reference


def test_npugraphs_is_registered_with_npu():
    backends = torch.compiler.list_backends(exclude_tags=None)
    assert {"npu", "npugraphs"} <= set(backends)
    from torch._dynamo.backends.registry import lookup_backend

    backend = lookup_backend("npugraphs")
    assert backend.compiler_name == "npugraphs"
    assert callable(backend.reset)


def test_training_replays_the_forward_and_backward_graphs_equal_to_eager():
    model, reference = _models()
    compiled = torch.compile(model, backend="npugraphs")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(1)
    for _ in range(5):
        x = torch.randn(8, 16, generator=generator).to("npu")
        loss = compiled(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        reference_loss = reference(x).square().mean()
        reference_loss.backward()
        reference_optimizer.step()
        reference_optimizer.zero_grad()
        # The same kernels in the same order: no fusion, so the values are the eager ones.
        assert loss.item() == reference_loss.item()
    for parameter, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(parameter.cpu(), expected.cpu(), rtol=0, atol=0)
    # Forward and backward: a capture each, then replays (the backward warms up once more when its
    # saved activations move from the forward's warm-up memory into the forward graph's memory).
    stats = npu_graph_trees.stats
    assert stats["captured"] == 2 and stats["eager"] == 0 and stats["replayed"] >= 5
    assert stats["captured"] + stats["replayed"] + stats["warmups"] == 10


def test_inference_outputs_are_guarded_as_under_reduce_overhead():
    model, _ = _models()
    compiled = torch.compile(model, backend="npugraphs")
    generator = torch.Generator().manual_seed(2)
    xs = [torch.randn(8, 16, generator=generator).to("npu") for _ in range(3)]
    with torch.no_grad():
        compiled(xs[0])  # warm-up
        captured = compiled(xs[1])  # capture
        kept = captured.clone()
        replayed = compiled(xs[2])  # replay: a new generation overwrites the graph's memory
        with pytest.raises(RuntimeError, match=OVERWRITTEN):
            captured.cpu()
        torch.testing.assert_close(kept.cpu(), model(xs[1]).cpu())
        torch.testing.assert_close(replayed.cpu(), model(xs[2]).cpu())
    assert npu_graph_trees.stats["replayed"] == 1


def test_a_graph_with_cpu_inputs_runs_without_capture():
    from torch._dynamo.utils import counters

    counters.clear()

    def add_host_tensor(x, host):
        return x * 2 + host.to(x.device)

    compiled = torch.compile(add_host_tensor, backend="npugraphs")
    x = torch.ones(4, device="npu")
    host = torch.arange(4.0)
    for _ in range(3):
        torch.testing.assert_close(compiled(x, host).cpu(), torch.arange(4.0) + 2)
    assert npu_graph_trees.stats["captured"] == 0
    assert counters["inductor"]["cudagraph_skips"] >= 1


def test_options_are_refused_as_by_torch_npu():
    compiled = torch.compile(lambda x: x + 1, backend="npugraphs", options={"npu_backend": "mlir"})
    with pytest.raises(Exception, match="unexpected keyword argument 'options'"):
        compiled(torch.ones(2, device="npu"))


def test_compiler_reset_resets_the_generations():
    compiled = torch.compile(lambda x: x.sin() + 1, backend="npugraphs")
    x = torch.ones(4, device="npu")
    with torch.no_grad():
        for _ in range(3):
            compiled(x)
    from npusim.compile import graph_tree

    manager = graph_tree.get_manager(0, create_if_none_exists=False)
    assert manager is not None and list(manager.get_roots())  # the graph is a root of the tree
    torch.compiler.reset()
    assert graph_tree.get_manager(0, create_if_none_exists=False) is None


def test_registered_when_dynamo_loads_in_a_fresh_process():
    result = run_python(
        "import torch, sys\n"
        "assert 'torch._dynamo' not in sys.modules\n"
        "f = torch.compile(lambda x: torch.relu(x) * 3, backend='npugraphs')\n"
        "x = torch.tensor([-1.0, 2.0], device='npu')\n"
        "with torch.no_grad():\n"
        "    outs = [f(x).cpu() for _ in range(3)]\n"
        "from npusim.compile import npu_graph_trees as t\n"
        "print(outs[-1].tolist(), t.stats['captured'], t.stats['replayed'])\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "[0.0, 6.0] 1 1"
