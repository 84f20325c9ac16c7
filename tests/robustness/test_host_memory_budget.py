"""Device memory larger than the host: every device segment (all devices) and pinned block the
host can back counts as committed host memory. A segment the host cannot back in full but the
chip has room for is granted as the chip would (lazily committed pages: the kernel commits them
as they are written, and later checks count what is resident), with a note once. A request is
refused, after the cached segments were freed, only when what the process holds now leaves the
host no room, with torch_npu's OOM text naming both limits, NPUSIM_HBM_SIZE and estimate-only
mode, as torch.OutOfMemoryError. The host is simulated with the testing knob
NPUSIM_TESTING_CGROUP_DIR (a cgroup of 1 GiB)."""

from __future__ import annotations

import textwrap

from robustness_support import run_python

SCRIPT = r"""
import torch, npusim
MIB = 2**20
def npu(mib):
    return torch.empty(mib * MIB - 32, dtype=torch.uint8, device="npu")

first = npu(500)
del first                      # cached: still committed
second = npu(700)              # refused at first, the cache is freed, then given
print("retried", torch.npu.memory_stats()["num_alloc_retries"])
lazy = npu(300)                # 700 + 300 MiB > 1 GiB less the margin, but the chip has room
print("granted", torch.npu.memory_allocated() >= 1000 * MIB)
lazy.fill_(1)                  # written: 300 MiB now resident in the lazily granted segment
try:
    npu(100)                   # 700 committed + 300 written: the host has no room left
except torch.OutOfMemoryError as error:
    print("OOM", str(error).splitlines()[0])
print("ooms", torch.npu.memory_stats()["num_ooms"])
print("sum", lazy[:3].cpu().sum().item())  # no device memory needed
with npusim.estimate():       # estimate-only mode commits no host memory
    print("estimate", torch.empty(8 * 2**30, dtype=torch.uint8, device="npu").numel())
del lazy
small = npu(100)               # the written segment is gone: room again
print("after free", small.numel() + 32 == 100 * MIB)
"""


def test_device_memory_beyond_the_host_is_granted_lazily_and_refused_once_written(tmp_path):
    (tmp_path / "memory.max").write_text(str(2**30))
    (tmp_path / "memory.current").write_text("0")
    result = run_python(textwrap.dedent(SCRIPT), timeout=120, NPUSIM_TESTING_CGROUP_DIR=str(tmp_path),
                        NPUSIM_HBM_SIZE="8G")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["retried 1", "granted True"]
    assert result.stderr.count("that the host cannot back in full, as the chip would") == 1
    oom = lines[2]
    assert oom.startswith("OOM NPU out of memory. Tried to allocate 100.00 MiB (NPU 0; 8.00 GiB total capacity;")
    assert "the host has no room left" in oom and "written into lazily granted device memory" in oom
    assert "memory.max 1.00 GiB" in oom and "MemAvailable" in oom
    assert "NPUSIM_HBM_SIZE" in oom and "estimate-only mode" in oom
    assert lines[3:] == ["ooms 1", "sum 3", f"estimate {8 * 2**30}", "after free True"]


def test_a_memory_fraction_allocation_that_fits_the_chip_is_granted_on_a_small_host(tmp_path):
    """torch_npu's test: set_per_process_memory_fraction(0.5), an allocation of 0.499 of the chip
    is granted (on a host of 1 GiB), one of 0.5 is refused by the fraction."""
    (tmp_path / "memory.max").write_text(str(2**30))
    (tmp_path / "memory.current").write_text("0")
    result = run_python(textwrap.dedent("""
        import torch
        total = torch.npu.get_device_properties(0).total_memory
        torch.npu.set_per_process_memory_fraction(0.5, 0)
        x = torch.empty(int(total * 0.499), dtype=torch.int8, device="npu")
        print("allocated", x.numel() > 3 * 2**30)
        del x
        torch.npu.empty_cache()
        try:
            torch.empty(int(total * 0.5), dtype=torch.int8, device="npu")
        except torch.OutOfMemoryError as error:
            print("fraction", "allowed;" in str(error))
    """), timeout=120, NPUSIM_TESTING_CGROUP_DIR=str(tmp_path), NPUSIM_HBM_SIZE="8G")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["allocated True", "fraction True"]
