"""Device memory is host memory: an allocation that fits the simulated HBM but not the host raises
a clear error (both limits, NPUSIM_HBM_SIZE, estimate-only mode) instead of an OOM kill later."""

from __future__ import annotations

import pytest
import torch

import npusim


def _mem_available() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def test_allocation_beyond_host_memory_raises_and_process_stays_usable():
    capacity = torch.npu.get_device_properties(0).total_memory
    request = int(_mem_available() * 1.3)
    if not request or request >= capacity:
        pytest.skip("the host has more memory than the simulated device")
    with pytest.raises(RuntimeError) as error:
        torch.empty(request, dtype=torch.uint8, device="npu")
    text = str(error.value)
    assert "host cannot give" in text and "MemAvailable" in text and "device capacity" in text
    assert "NPUSIM_HBM_SIZE" in text and "estimate-only" in text
    assert torch.ones(3, device="npu").sum().item() == 3.0
    with npusim.estimate():  # estimate-only mode commits no host memory
        assert torch.empty(request, dtype=torch.uint8, device="npu").numel() == request
