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
