"""The ResNet-50 validation example: torchvision's v1.5 network, priced on the simulated chip as a whole
AMP O2 training step with no CPU fallback, and computing on npu what it computes on the CPU."""

import importlib.util
import pathlib
import sys

import torch

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _example():
    name = "resnet50_estimate_under_test"
    if name not in sys.modules:
        sys.path.insert(0, str(EXAMPLES))  # it shares megatron_estimate's event timing
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "resnet50_estimate.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_network_is_torchvisions_resnet50():
    model = _example().ResNet50()
    assert sum(p.numel() for p in model.parameters()) == 25_557_032  # torchvision.models.resnet50
    convolutions = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convolutions) == 53
    # v1.5: the stride of a downsampling bottleneck sits on its 3x3 convolution
    assert model.blocks[3].conv2.stride == (2, 2) and model.blocks[3].conv1.stride == (1, 1)


def test_step_is_priced_without_cpu_fallback():
    from npusim import _C

    example = _example()
    _C._reset_placement_report()
    seconds = example.step_seconds(batch=8)
    operators = _C._placement_report()["operators"]
    assert seconds > 0
    assert sum(entry["cpu_fallback"] for entry in operators.values()) == 0
    # warm-up and timed step: 53 convolutions forward and 53 backward in each
    assert operators["aten::convolution_overrideable"]["ai_core"] == 2 * 53
    assert operators["aten::convolution_backward_overrideable"]["ai_core"] == 2 * 53
    assert operators["aten::_fused_sgd_"]["ai_core"] == 2


def test_network_computes_on_npu_what_it_computes_on_cpu():
    example = _example()
    torch.manual_seed(0)
    model = example.ResNet50(classes=10).eval()
    images = torch.randn(2, 3, 64, 64)
    expected = model(images)
    got = model.to("npu")(images.to("npu")).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
