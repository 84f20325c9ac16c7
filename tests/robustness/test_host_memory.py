"""Device memory is host memory: an allocation that fits the simulated HBM but not the host is
granted as the chip would, its pages committed only as they are written; estimate-only mode
commits none."""

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


def test_allocation_beyond_host_memory_is_granted_lazily_as_the_chip_would():
    """A request the chip has room for is granted even when the host could not back it in full:
    its pages take host memory only as they are written (the refusal once they are written is
    tested with a simulated small host in test_host_memory_budget)."""
    capacity = torch.npu.get_device_properties(0).total_memory
    request = int(_mem_available() * 1.3)
    if not request or request >= capacity:
        pytest.skip("the host has more memory than the simulated device")
    before = _resident_bytes()
    big = torch.empty(request, dtype=torch.uint8, device="npu")
    assert big.numel() == request
    big[:4096].fill_(7)  # a few pages written, the rest never touched
    assert big[:4].cpu().tolist() == [7, 7, 7, 7]
    assert _resident_bytes() - before < 256 * 1024 * 1024
    del big
    torch.npu.empty_cache()
    assert torch.ones(3, device="npu").sum().item() == 3.0
    with npusim.estimate():  # estimate-only mode commits no host memory
        assert torch.empty(request, dtype=torch.uint8, device="npu").numel() == request


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_estimate_only_grad_scaler_commits_no_host_memory():
    """GradScaler's non-finite check in estimate-only mode is priced but touches no gradient: before,
    it ran on the host over the gradients' pages and committed a whole model's worth of them."""
    from npusim import _C

    elements = 256 * 1024 * 1024  # a 1 GiB fp32 gradient
    with npusim.estimate(), torch.device("npu"):
        weight = torch.nn.Parameter(torch.empty(elements))
        weight.grad = torch.empty(elements)
        optimizer = torch.optim.SGD([weight], lr=0.1)
        scaler = torch.amp.GradScaler("npu")
        scaler._lazy_init_scale_growth_tracker(weight.device)
        torch.npu.synchronize()
        launches = int(dict(_C._timing_totals())["launches"])
        before = _resident_bytes()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        torch.npu.synchronize()
        grown = _resident_bytes() - before
        priced = int(dict(_C._timing_totals())["launches"]) - launches
    assert grown < 64 * 1024 * 1024, f"estimate-only unscale committed {grown / 2**20:.0f} MiB of host memory"
    assert priced >= 2  # the check-and-unscale kernel and the optimizer step are still launched and priced
