"""The device group of torch.npu (contract §4)."""

import re

import pytest
import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import run_python


def test_availability_and_count():
    assert torch.npu.is_available()
    assert torch.npu.device_count() == 8  # one 910B2 server by default


def test_device_count_follows_configuration():
    result = run_python("import torch, npusim; print(torch.npu.device_count())", {"NPUSIM_DEVICE_COUNT": "2"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"


@pytest.fixture()
def restore_device():
    before = torch.npu.current_device()
    yield
    torch.npu.set_device(before)


@pytest.mark.parametrize("spec", [1, "npu:2", torch.device("npu", 3)])
def test_set_device(restore_device, spec):
    torch.npu.set_device(spec)
    expected = spec if isinstance(spec, int) else torch.device(spec).index
    assert torch.npu.current_device() == expected
    assert torch.ones(1, device="npu").device.index == expected


def test_set_device_rejects_other_device_types(restore_device):
    with pytest.raises(ValueError, match="Expected a npu device, but got: cuda:0"):
        torch.npu.set_device("cuda:0")
    with pytest.raises(TypeError):
        torch.npu.set_device(1.5)


def test_negative_set_device_is_ignored(restore_device):
    torch.npu.set_device(1)
    torch.npu.set_device(-1)
    assert torch.npu.current_device() == 1


def test_device_context_manager(restore_device):
    torch.npu.set_device(0)
    with torch.npu.device(2):
        assert torch.npu.current_device() == 2
        with torch.npu.device("npu:3"):
            assert torch.npu.current_device() == 3
        assert torch.npu.current_device() == 2
    assert torch.npu.current_device() == 0
    with torch.npu.device(None):
        assert torch.npu.current_device() == 0


def test_device_of(restore_device):
    torch.npu.set_device(0)
    tensor = torch.zeros(1, device="npu:4")
    with torch.npu.device_of(tensor):
        assert torch.npu.current_device() == 4
    with torch.npu.device_of(torch.zeros(1)):
        assert torch.npu.current_device() == 0
    assert torch.npu.current_device() == 0


def test_device_name_and_properties():
    assert torch.npu.get_device_name() == "Ascend910B2"
    assert torch.npu.get_device_name(1) == "Ascend910B2"
    properties = torch.npu.get_device_properties(0)
    assert properties.name == "Ascend910B2"
    assert properties.total_memory == 62432 * 1024 * 1024
    assert properties.cube_core_num == 24
    assert properties.vector_core_num == 48
    assert properties.L2_cache_size == 192 * 1024 * 1024
    # CUDA-only fields are empty on torch_npu.
    assert properties.major is None and properties.minor is None
    assert properties.multi_processor_count is None and properties.warp_size is None
    assert properties.gcnArchName is None
    assert re.fullmatch(
        r"_NPUDeviceProperties\(name='Ascend910B2', total_memory=62432MB, cube_core_num=24, "
        r"vector_core_num=48, uuid=[0-9a-f-]{36}, L2_cache_size=192MB\)",
        repr(properties),
    )
    assert torch.npu.get_device_properties("npu:1").uuid != properties.uuid


def test_device_capability(monkeypatch):
    monkeypatch.delenv("TORCH_NPU_DEVICE_CAPABILITY", raising=False)
    with pytest.warns(UserWarning, match="TORCH_NPU_DEVICE_CAPABILITY"):
        assert torch.npu.get_device_capability() is None
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "8.6")
    with pytest.warns(UserWarning, match="only for compatibility"):
        assert torch.npu.get_device_capability(0) == (8, 6)
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "eight")
    with pytest.warns(UserWarning, match="can't parse TORCH_NPU_DEVICE_CAPABILITY"):
        assert torch.npu.get_device_capability() is None


def test_synchronize_and_utilization():
    x = torch.randn(64, 64, device="npu")
    y = x @ x
    torch.npu.synchronize()
    torch.npu.synchronize("npu:0")
    assert y.shape == (64, 64)
    utilization = torch.npu.utilization()
    assert isinstance(utilization, int) and 0 <= utilization <= 100
    assert 0 <= torch.npu.utilization(1) <= 100


def test_init_and_lazy_call():
    torch.npu.init()
    assert torch.npu.is_initialized()
    torch.npu._lazy_init()
    called = []
    torch.npu._lazy_call(lambda: called.append(True))
    assert called == [True]  # runs at once when initialized
    assert torch.npu._is_in_bad_fork() is False


def test_lazy_initialization_on_first_use():
    result = run_python(
        """
        import torch, npusim
        calls = []
        print(torch.npu.is_initialized(), torch.npu.device_count())
        torch.npu._lazy_call(lambda: calls.append(torch.npu.is_initialized()))
        print(calls)
        torch.zeros(1, device="npu")
        print(torch.npu.is_initialized(), calls)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["False 8", "[]", "True [False]"]


def test_can_device_access_peer():
    assert torch.npu.can_device_access_peer(0, 1)
    assert not torch.npu.can_device_access_peer(0, 0)
    # torch_npu checks the ids in Python: AssertionError with ERR00003.
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        torch.npu.can_device_access_peer(0, 99)


def test_amp_support():
    assert torch.npu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16, torch.float32]  # as torch_npu
    assert torch.npu.is_bf16_supported()
    with torch.npu.amp.autocast():
        assert torch.npu.is_autocast_enabled()
        assert torch.npu.get_autocast_dtype() == torch.float16
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("npu")
    assert not torch.npu.is_autocast_enabled()
    scaler = torch.npu.amp.GradScaler()
    assert scaler.is_enabled()
