"""Device properties, capability and peer access as torch_npu answers them (contract §4)."""

from __future__ import annotations

import re
import uuid

import pytest
import torch


def test_properties_fill_only_the_npu_fields():
    properties = torch.npu.get_device_properties(0)
    assert properties.name == "Ascend910B2"
    assert properties.cube_core_num == 24 and properties.vector_core_num == 48
    for field in ("major", "minor", "multi_processor_count", "warp_size", "gcnArchName",
                  "is_integrated", "is_multi_gpu_board", "max_threads_per_multi_processor"):
        assert getattr(properties, field) is None, field
    assert re.fullmatch(
        r"_NPUDeviceProperties\(name='Ascend910B2', total_memory=62432MB, cube_core_num=24, "
        r"vector_core_num=48, uuid=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}, "
        r"L2_cache_size=192MB\)",
        repr(properties),
    )


def test_uuid_is_an_object_with_bytes():
    first = torch.npu.get_device_properties(0).uuid
    second = torch.npu.get_device_properties(1).uuid
    assert isinstance(first.bytes, bytes) and len(first.bytes) == 16
    assert str(uuid.UUID(bytes=first.bytes)) == str(first)
    assert first != second and first == torch.npu.get_device_properties(0).uuid


def test_capability_is_none_unless_configured(monkeypatch):
    monkeypatch.delenv("TORCH_NPU_DEVICE_CAPABILITY", raising=False)
    with pytest.warns(UserWarning, match="You can set the device capability"):
        assert torch.npu.get_device_capability() is None
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "9.0")
    with pytest.warns(UserWarning, match="only for compatibility with PyTorch"):
        assert torch.npu.get_device_capability("npu:0") == (9, 0)
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "9")
    with pytest.warns(UserWarning, match="can't parse"):
        assert torch.npu.get_device_capability() is None


def test_invalid_ids_raise_torch_npu_assertion_errors():
    with pytest.raises(AssertionError, match=r"Invalid device id\n.*ERR00003 PTA invalid value"):
        torch.npu.can_device_access_peer(-1, 0)
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        torch.npu.can_device_access_peer(0, 8)
    with pytest.raises(AssertionError, match=r"Invalid device id\n.*ERR00003"):
        torch.npu.get_device_properties(99)
    assert torch.npu.can_device_access_peer(0, 1) and not torch.npu.can_device_access_peer(1, 1)
