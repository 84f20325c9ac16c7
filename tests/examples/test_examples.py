"""The examples train on npu exactly as on CPU: same losses, bit for bit."""

import pathlib
import sys

import pytest
import torch

import npusim  # noqa: F401  (registers the npu device when autoload is off)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import gpt_transformer  # noqa: E402
import lstm_language_model  # noqa: E402
import resnet_cnn  # noqa: E402


@pytest.fixture()
def exact_convolutions():
    """The CPU has no HF32: with torch_npu's default (conv.allow_hf32 = True) fp32 convolutions
    round their operands as the chip does, so the bit-for-bit comparison turns that off."""
    torch.npu.conv.allow_hf32 = False
    try:
        yield
    finally:
        torch.npu.conv.allow_hf32 = True


@pytest.mark.parametrize("example", [resnet_cnn, gpt_transformer, lstm_language_model],
                         ids=["resnet_cnn", "gpt_transformer", "lstm_language_model"])
def test_losses_equal_cpu(example, exact_convolutions):
    cpu = example.train("cpu", steps=3)
    npu = example.train("npu", steps=3)
    assert npu == cpu
    assert all(torch.isfinite(torch.tensor(npu)))


def test_cnn_with_hf32_convolutions_stays_close_to_cpu():
    cpu = resnet_cnn.train("cpu", steps=2)
    npu = resnet_cnn.train("npu", steps=2)  # torch_npu's default: HF32 convolutions
    assert npu != cpu
    assert torch.allclose(torch.tensor(npu), torch.tensor(cpu), rtol=1e-2)


def test_tied_weights_stay_tied_after_module_to_npu():
    model = gpt_transformer.SmallGPT().to("npu")
    assert model.head.weight is model.token.weight
    assert model.token.weight.device.type == "npu"
