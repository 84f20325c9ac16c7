"""The torchair shim: TorchAir code compiles npu graphs through npusim's Inductor backend."""

import pytest
import torch

import npusim  # noqa: F401


def test_torchair_backend_compiles_npu_graphs():
    import torchair
    from npusim.compile import _native

    assert torchair.__file__.endswith("npusim/compile/_torchair/__init__.py")
    config = torchair.CompilerConfig()
    config.mode = "reduce-overhead"
    config.experimental_config.frozen_parameter = True
    with pytest.raises(ValueError, match="CompilerConfig.mode must be one of"):
        config.mode = "fastest"
    backend = torchair.get_npu_backend(compiler_config=config)
    torch._dynamo.reset()
    _native.reset_kernel_totals()

    def gelu_scale(x):
        return torch.nn.functional.gelu(x) * 3 + 1

    x = torch.randn(64, device="npu")
    result = torch.compile(gelu_scale, backend=backend)(x)
    torch.testing.assert_close(result.cpu(), gelu_scale(x.cpu()), atol=1e-4, rtol=1e-4)
    assert sum(launches for launches, _ in _native.kernel_totals.values()) == 1  # one fused kernel


def test_torchair_reduce_overhead_replays_an_npu_graph():
    import torchair
    from npusim.compile import npu_graph_trees

    config = torchair.CompilerConfig()
    config.mode = "reduce-overhead"
    torch._dynamo.reset()
    npu_graph_trees.reset_stats()

    def scale_shift(x):
        return torch.nn.functional.gelu(x) * 3 + 1

    compiled = torch.compile(scale_shift, backend=torchair.get_npu_backend(compiler_config=config))
    for _ in range(3):
        x = torch.randn(64, device="npu")
        torch.testing.assert_close(compiled(x).cpu(), scale_shift(x.cpu()), atol=1e-4, rtol=1e-4)
    assert npu_graph_trees.stats == {"captured": 1, "replayed": 1, "warmups": 1, "eager": 0}
