"""``torch.compile(model, backend="npu")``: the Dynamo backend torch_npu registers under the name
"npu" (TorchAir's default backend), registered by npusim when Dynamo's backend registry loads."""


import torch
import torch.nn as nn

import npusim  # noqa: F401
from npusim.compile import _native, dynamo_backend


def test_npu_is_a_registered_backend():
    from torch._dynamo.backends.registry import lookup_backend

    assert "npu" in torch._dynamo.list_backends()
    assert lookup_backend("npu") is dynamo_backend.npu_backend


def test_backend_npu_compiles_into_fused_npu_kernels_and_trains_equal_to_eager():
    torch._dynamo.reset()
    _native.reset_kernel_totals()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).to("npu")
    x = torch.randn(8, 16, device="npu")
    compiled = torch.compile(model, backend="npu")
    loss = compiled(x).square().mean()
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    expected = model(x).square().mean()
    expected.backward()
    torch.testing.assert_close(loss.cpu(), expected.cpu(), rtol=1e-4, atol=1e-4)
    for got, parameter in zip(grads, model.parameters()):
        torch.testing.assert_close(got.cpu(), parameter.grad.cpu(), rtol=1e-4, atol=1e-4)
    # TorchAir's default mode compiles the whole graph: the elementwise work runs fused.
    assert _native.kernel_totals, "no fused npu kernel ran"


def test_dynamo_optimize_npu_on_an_aten_operator():
    """torch_npu's own test of its backend (test/dynamo/test_npu_backend.py)."""
    function = torch.ops.aten.relu.default
    optimized = torch._dynamo.optimize("npu")(function)
    x = torch.randn(10).npu()
    torch.testing.assert_close(optimized(x).cpu(), function(x).cpu())


def test_registered_as_soon_as_dynamo_loads_in_a_fresh_process():
    """Nothing of Dynamo is imported by npusim; backend="npu" works in a program that never
    imported Dynamo itself."""
    code = (
        "import sys, torch, npusim\n"
        "assert 'torch._dynamo' not in sys.modules\n"
        "f = torch.compile(lambda x: (x * 2).sin(), backend='npu')\n"
        "x = torch.randn(4, device='npu')\n"
        "torch.testing.assert_close(f(x).cpu(), (x * 2).sin().cpu())\n"
        "print('ok')\n"
    )
    from npusim_testing.fresh_process import run_python

    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")
