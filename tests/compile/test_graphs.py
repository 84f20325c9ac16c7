"""torch.npu.NPUGraph: capture and replay equality, capture restrictions, replay pricing."""

import os
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import npusim  # noqa: F401
from npusim import _C


def _host_ns() -> int:
    return int(_C._timeline_info(0)["host_ns"])


def test_capture_then_replay_on_new_inputs_equals_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("npu")
    static_input = torch.randn(3, 8, device="npu")
    npu_graph = torch.npu.NPUGraph()
    with torch.no_grad():
        with torch.npu.graph(npu_graph):
            assert torch.npu.is_current_stream_capturing()
            static_output = model(static_input)
    assert not torch.npu.is_current_stream_capturing()
    assert any("addmm" in op for op in npu_graph.operators)
    for _ in range(2):
        fresh = torch.randn(3, 8, device="npu")
        static_input.copy_(fresh)
        npu_graph.replay()
        with torch.no_grad():
            expected = model(fresh)
        torch.testing.assert_close(static_output.cpu(), expected.cpu())


def test_in_place_updates_replay():
    counter = torch.zeros(4, device="npu")
    npu_graph = torch.npu.NPUGraph()
    with torch.npu.graph(npu_graph):
        counter.add_(1)
    for _ in range(3):
        npu_graph.replay()
    torch.testing.assert_close(counter.cpu(), torch.full((4,), 4.0))


@pytest.mark.parametrize(
    "violation, what",
    [
        (lambda x: x.sum().item(), "aten::_local_scalar_dense"),
        (lambda x: x.cpu(), "between host and device"),
        (lambda x: torch.npu.synchronize(), "torch.npu.synchronize()"),
        (lambda x: x.nonzero(), "aten::nonzero"),
    ],
    ids=["item", "cpu", "synchronize", "nonzero"],
)
def test_capture_violations_raise_and_end_the_capture(violation, what):
    x = torch.ones(4, device="npu")
    npu_graph = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="not permitted when stream is capturing") as error:
        with torch.npu.graph(npu_graph):
            violation(x)
    assert what in str(error.value)
    assert "ERR03007 GRAPH feature not supported" in str(error.value) or "ERR" not in str(error.value)
    assert not torch.npu.is_current_stream_capturing()
    torch.npu.synchronize()  # usable again after the failed capture
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        npu_graph.replay()


def test_replay_pays_one_launch_instead_of_per_kernel_dispatch():
    x = torch.randn(64, device="npu")

    def region():
        y = x
        for _ in range(20):
            y = y * 1.0001 + 0.5
        return y

    torch.npu.synchronize()
    start = _host_ns()
    region()
    eager_host = _host_ns() - start
    npu_graph = torch.npu.NPUGraph()
    with torch.npu.graph(npu_graph):
        static = region()
    start = _host_ns()
    npu_graph.replay()
    replay_host = _host_ns() - start
    torch.testing.assert_close(static.cpu(), region().cpu())
    # 40 dispatched kernels against one graph launch.
    assert replay_host * 10 < eager_host


def test_make_graphed_callables_inference_and_pools():
    torch.manual_seed(0)
    model = nn.Linear(4, 4).to("npu")
    sample = torch.randn(2, 4, device="npu")
    with torch.no_grad():
        graphed = torch.npu.make_graphed_callables(model, (sample,))
        fresh = torch.randn(2, 4, device="npu")
        torch.testing.assert_close(graphed(fresh).cpu(), nn.functional.linear(fresh, model.weight, model.bias).cpu())
    assert graphed is model
    assert graphed.forward.forward_graph.pool() != torch.npu.graph_pool_handle()


def test_capturing_a_compiled_function_records_its_operators():
    # Dynamo runs a frame eagerly under a dispatch mode, so the capture sees the operators
    # (reduce-overhead captures the compiled kernels themselves: test_npu_graph_training).
    def pointwise(x):
        return (x.sin() * 2 + 1).relu()

    x = torch.randn(1024, device="npu")
    compiled = torch.compile(pointwise)  # the same graph as test_inductor's: cached kernel
    compiled(x)
    npu_graph = torch.npu.NPUGraph()
    with torch.npu.graph(npu_graph):
        static = compiled(x)
    assert [op.rsplit(".", 1)[0] for op in npu_graph.operators] == ["aten.sin", "aten.mul", "aten.add", "aten.relu"]
    x.copy_(torch.randn(1024, device="npu"))
    npu_graph.replay()
    torch.testing.assert_close(static.cpu(), pointwise(x).cpu())


def test_cuda_graph_code_runs_on_npu_after_transfer_to_npu():
    import os
    import subprocess
    import sys
    import textwrap


    program = textwrap.dedent(
        """
        import torch
        import torch_npu
        from torch_npu.contrib import transfer_to_npu
        x = torch.ones(4, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = x * 2
        x.fill_(3)
        g.replay()
        print(type(g).__name__, torch.cuda.graph is torch.npu.graph, y.device.type, y.cpu().tolist())
        """
    )
    env = _child_environment()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "NPUGraph True npu [6.0, 6.0, 6.0, 6.0]"


def _child_environment() -> dict[str, str]:
    """This checkout's npusim when its extension is built in python/ (as conftest picks it), else
    the installed one. (conftest is not imported: every test folder has one of that name.)"""
    source = Path(__file__).resolve().parents[2] / "python"
    env = dict(os.environ)
    if any((source / "npusim").glob("_C*.so")):
        env["PYTHONPATH"] = str(source) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_npu_only_operators_replay_into_their_captured_outputs():
    """SDPA's fused kernel (whose CPU registration only says it is for accelerators) replays
    through the CPU flash kernels, torch_npu's own operators through their npu kernels; the
    results land in the captured outputs, in their layouts, forward and backward."""
    import torch.nn.functional as F

    import torch_npu

    generator = torch.Generator().manual_seed(5)
    shape = (2, 2, 8, 16)
    static = [torch.randn(*shape, generator=generator).to("npu").requires_grad_() for _ in range(3)]
    static_bsh = [torch.randn(2, 8, 32, generator=generator).to("npu") for _ in range(3)]
    npu_graph = torch.npu.NPUGraph()
    with torch.npu.graph(npu_graph):
        attended = F.scaled_dot_product_attention(*static, is_causal=True)
        grads = torch.autograd.grad(attended.square().sum(), static)
        fused = torch_npu.npu_fusion_attention(*static_bsh, 2, "BSH", scale=0.25)[0]
    plans = dict(npu_graph.replay_plan)
    assert plans["aten._scaled_dot_product_fused_attention_overrideable.default"] == "host twin"
    assert plans["aten._scaled_dot_product_fused_attention_overrideable_backward.default"] == "host twin"
    assert plans["npu.npu_fusion_attention.default"] == "npu kernel"
    for _ in range(2):
        fresh = [torch.randn(*shape, generator=generator) for _ in range(3)]
        fresh_bsh = [torch.randn(2, 8, 32, generator=generator) for _ in range(3)]
        with torch.no_grad():
            for target, source in zip(static + static_bsh, fresh + fresh_bsh):
                target.copy_(source)
        npu_graph.replay()
        leaves = [t.detach().npu().requires_grad_() for t in fresh]
        expected = F.scaled_dot_product_attention(*leaves, is_causal=True)
        expected_grads = torch.autograd.grad(expected.square().sum(), leaves)
        torch.testing.assert_close(attended.detach().cpu(), expected.detach().cpu())
        for got, want in zip(grads, expected_grads):
            assert got.stride() == want.stride()
            torch.testing.assert_close(got.cpu(), want.cpu())
        expected_fused = torch_npu.npu_fusion_attention(*[t.npu() for t in fresh_bsh], 2, "BSH", scale=0.25)[0]
        torch.testing.assert_close(fused.cpu(), expected_fused.cpu())
