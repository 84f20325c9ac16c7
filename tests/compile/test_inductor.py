"""Inductor on npu: the C++ generator's fused kernels on npu memory, equal to eager
(tolerances of upstream Inductor tests), backward included, priced as fused kernels."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import npusim  # noqa: F401
from npusim.compile import _native, inductor_backend
from npusim_testing.fresh_process import run_python

# Upstream Inductor's default tolerances for float32 training checks.
TOLERANCE = dict(atol=1e-4, rtol=1e-4)


def _compare_training(model, loss_fn, *inputs):
    """Loss and gradients of the compiled and the eager model (same parameters)."""
    compiled = torch.compile(loss_fn)
    loss = compiled(model, *inputs)
    loss.backward()
    grads = [p.grad.detach().clone() for p in model.parameters()]
    model.zero_grad()
    expected = loss_fn(model, *inputs)
    expected.backward()
    assert loss.device.type == "npu"
    torch.testing.assert_close(loss.cpu(), expected.cpu(), **TOLERANCE)
    for got, parameter in zip(grads, model.parameters()):
        assert got.device.type == "npu"
        torch.testing.assert_close(got.cpu(), parameter.grad.cpu(), **TOLERANCE)


def test_mlp_fused_kernels_on_npu_memory_and_timeline():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 8)).to("npu")
    x = torch.randn(16, 32, device="npu")
    target = torch.randint(0, 8, (16,)).to("npu")

    def loss_fn(model, x, target):
        return F.cross_entropy(model(x), target)

    _native.reset_kernel_totals()
    before = torch.npu.memory_stats()["allocation.all.allocated"]
    _compare_training(model, loss_fn, x, target)
    # The compiled graphs' buffers came from the npu caching allocator...
    assert torch.npu.memory_stats()["allocation.all.allocated"] > before
    # ...and every generated kernel was charged on the timeline as one fused launch.
    totals = dict(_native.kernel_totals)
    assert totals, "no generated kernel ran"
    assert all(name.startswith("cpp_fused_") for name in totals)
    assert all(launches >= 1 and device_ns > 0 for launches, device_ns in totals.values())


def test_gpt_example_compiled_equals_eager():
    import gpt_transformer

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = gpt_transformer.SmallGPT(vocab=128, width=32, layers=1, heads=2, context=16).to("npu")
    tokens = torch.randint(0, 128, (2, 17)).to("npu")

    def loss_fn(model, tokens):
        logits = model(tokens[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))

    _compare_training(model, loss_fn, tokens)


def test_resnet_example_compiled_equals_eager():
    import resnet_cnn

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = resnet_cnn.SmallResNet().to("npu").eval()  # eval: batch norm uses running stats
    images = torch.randn(2, 3, 16, 16, device="npu")

    def loss_fn(model, images):
        return model(images).square().mean()

    _compare_training(model, loss_fn, images)


def test_fallback_list_keeps_operators_out_of_fused_kernels(monkeypatch):
    from torch._inductor import lowering

    monkeypatch.setenv("NPU_INDUCTOR_FALLBACK_LIST", "aten.erfinv, special_ndtri")
    assert inductor_backend.fallback_operators() == ["aten.erfinv", "special_ndtri"]
    inductor_backend._apply_fallback_list()
    assert torch.ops.aten.erfinv.default in lowering.fallbacks
    assert torch.ops.aten.special_ndtri.default in lowering.fallbacks
    monkeypatch.setenv("NPU_INDUCTOR_FALLBACK_LIST", "aten.not_an_operator")
    with pytest.raises(RuntimeError, match="not an aten operator"):
        inductor_backend._apply_fallback_list()


def test_npu_backend_switch(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_NPU_BACKEND", "mlir")
    with pytest.warns(UserWarning, match="Inductor's C\\+\\+ generator"):
        assert inductor_backend.selected_backend() == "mlir"
    monkeypatch.setenv("TORCHINDUCTOR_NPU_BACKEND", "bogus")
    with pytest.raises(RuntimeError, match="not a known npu Inductor backend"):
        inductor_backend.selected_backend()


def test_a_fused_kernel_is_one_launch_priced_by_its_own_bytes():
    from torch._inductor.utils import run_and_get_code

    from npusim import _C

    def pointwise(x):
        return (x.sin() * 2 + 1).relu()

    torch._dynamo.reset()
    x = torch.randn(1024, device="npu")
    compiled = torch.compile(pointwise)
    _, codes = run_and_get_code(compiled, x)
    # One kernel reading x once (4096 bytes) and writing the result once (4096 bytes).
    assert "= npu_kernel_launcher(0, 'cpp_fused_" in codes[0]  # bound once per kernel
    assert "    launch_cpp_fused_" in codes[0]  # runs, charges and records each launch
    assert ", 4096, 4096, 1024)" in codes[0]
    torch.npu.synchronize()
    before = _C._timing_totals()["launches"]
    pointwise(x)
    eager_launches = _C._timing_totals()["launches"] - before
    before = _C._timing_totals()["launches"]
    result = compiled(x)
    compiled_launches = _C._timing_totals()["launches"] - before
    assert eager_launches == 4 and compiled_launches == 1
    torch.testing.assert_close(result.cpu(), pointwise(x.cpu()), **TOLERANCE)


def test_estimate_only_mode_prices_fused_kernels_without_running_them():
    from npusim import _C

    def pointwise(x):
        return (x.sin() * 2 + 1).relu()

    compiled = torch.compile(pointwise)
    with npusim.estimate():
        x = torch.empty(1024, device="npu")
        torch.npu.synchronize()
        before = _C._timing_totals()["launches"]
        result = compiled(x)
        assert _C._timing_totals()["launches"] - before == 1
    assert result.shape == (1024,) and result.device.type == "npu"


def test_dynamic_shapes_price_kernels_from_their_tensors():
    from torch._inductor.utils import run_and_get_code

    def column_sum(x):
        return (x.cos() * 3).sum(0)

    torch._dynamo.reset()
    _native.reset_kernel_totals()
    compiled = torch.compile(column_sum, dynamic=True)
    _, codes = run_and_get_code(compiled, torch.randn(37, 5, device="npu"))
    assert "npu_launch_counted(cpp_fused_" in codes[0]  # sizes are symbols: counted at run time
    for rows in (50, 8):
        x = torch.randn(rows, 5, device="npu")
        torch.testing.assert_close(compiled(x).cpu(), column_sum(x.cpu()), **TOLERANCE)
    assert sum(launches for launches, _ in _native.kernel_totals.values()) == 3


def test_inductor_codegen_read_first_in_a_fresh_process():
    """Reading ``torch.npu.Scheduling`` before anything loaded Dynamo (Inductor's own lookup
    order) registers the device interface and the tracing rules without an import cycle."""
    result = run_python(
        "import sys, torch\n"
        "assert 'torch._dynamo' not in sys.modules\n"
        "print(torch.npu.Scheduling.__name__)\n"
        "def f(x):\n"
        "    with torch.npu.device(0):\n"
        "        return x.sin() * 2\n"
        "print(torch.compile(f, fullgraph=True)(torch.zeros(2, device='npu')).cpu().tolist())\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-3:-1] == ["CppScheduling", "[0.0, 0.0]"]
