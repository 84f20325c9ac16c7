"""The examples train on npu exactly as on CPU: same losses, bit for bit."""

import pathlib
import sys

import pytest
import torch

import npusim  # noqa: F401  (registers the npu device when autoload is off)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import gpt_transformer  # noqa: E402
import resnet_cnn  # noqa: E402


@pytest.mark.parametrize("example", [resnet_cnn, gpt_transformer], ids=["resnet_cnn", "gpt_transformer"])
def test_losses_equal_cpu(example):
    cpu = example.train("cpu", steps=3)
    npu = example.train("npu", steps=3)
    assert npu == cpu
    assert all(torch.isfinite(torch.tensor(npu)))


def test_tied_weights_stay_tied_after_module_to_npu():
    model = gpt_transformer.SmallGPT().to("npu")
    assert model.head.weight is model.token.weight
    assert model.token.weight.device.type == "npu"
