"""The npu device is registered as torch_npu registers it (contract §2)."""

import pytest
import torch

import npusim


def test_device_string_and_backend_name():
    assert torch._C._get_privateuse1_backend_name() == "npu"
    device = torch.device("npu:1")
    assert device.type == "npu" and device.index == 1
    assert str(torch.device("npu")) == "npu"


def test_torch_npu_is_the_device_module():
    assert torch.npu is npusim.npu
    assert torch.get_device_module("npu") is npusim.npu
    assert torch.get_device_module(torch.device("npu:0")) is npusim.npu


def test_tensor_methods():
    cpu = torch.arange(6, dtype=torch.float32)
    on_npu = cpu.npu()
    assert on_npu.is_npu and not cpu.is_npu
    assert on_npu.device == torch.device("npu:0")
    assert cpu.npu(1).device == torch.device("npu:1")
    assert torch.equal(on_npu.cpu(), cpu)
    assert torch.ones(2, device="npu").is_npu


def test_module_npu():
    module = torch.nn.Linear(3, 2).npu()
    assert all(p.is_npu for p in module.parameters())
    out = module(torch.ones(1, 3, device="npu"))
    assert out.device.type == "npu"


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storage_methods():
    storage = torch.arange(4, dtype=torch.float32).untyped_storage()
    on_npu = storage.npu()
    assert on_npu.is_npu
    assert on_npu.device.type == "npu"
    typed = torch.tensor([1.0, 2.0]).storage().npu()
    assert typed.is_npu


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_quantized_storage_refused():
    quantized = torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.qint8)
    with pytest.raises(RuntimeError, match="qint8"):
        quantized.storage().npu()


def test_profiler_activity_alias():
    from torch.profiler import ProfilerActivity

    assert ProfilerActivity.NPU == ProfilerActivity.PrivateUse1


def test_accelerator_is_npu():
    assert torch.accelerator.current_accelerator() == torch.device("npu")
    assert torch.accelerator.device_count() == torch.npu.device_count()


def test_import_twice_is_harmless():
    import importlib

    npusim._load()
    npusim._autoload()
    assert importlib.import_module("npusim") is npusim
    assert torch.npu is npusim.npu
