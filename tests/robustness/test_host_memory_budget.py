"""Device memory larger than the host: every device segment (all devices) and pinned block
counts as committed host memory; a new segment that would take the host past its limit less
a safety margin is refused, after the cached segments were freed, with torch_npu's OOM text
naming both limits, NPUSIM_HBM_SIZE and estimate-only mode, as torch.OutOfMemoryError. The
host is simulated with the testing knob NPUSIM_TESTING_CGROUP_DIR (a cgroup of 1 GiB)."""

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
try:
    npu(300)                   # 700 + 300 MiB > 1 GiB less the margin
except torch.OutOfMemoryError as error:
    print("OOM", str(error).splitlines()[0])
print("ooms", torch.npu.memory_stats()["num_ooms"])
third = npu(100)               # what fits is still given
print("sum", torch.ones(3, device="npu").sum().item())
with npusim.estimate():       # estimate-only mode commits no host memory
    print("estimate", torch.empty(8 * 2**30, dtype=torch.uint8, device="npu").numel())
del second
fourth = npu(700)
print("after free", fourth.numel() + 32 == 700 * MIB)
"""


def test_committed_device_memory_is_refused_past_the_host_limit(tmp_path):
    (tmp_path / "memory.max").write_text(str(2**30))
    (tmp_path / "memory.current").write_text("0")
    result = run_python(textwrap.dedent(SCRIPT), timeout=120, NPUSIM_TESTING_CGROUP_DIR=str(tmp_path),
                        NPUSIM_HBM_SIZE="8G")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "retried 1"
    oom = lines[1]
    assert oom.startswith("OOM NPU out of memory. Tried to allocate 300.00 MiB (NPU 0; 8.00 GiB total capacity;")
    assert "memory is host memory, and the host cannot give 300.00 MiB more" in oom
    assert "memory.max 1.00 GiB" in oom and "MemAvailable" in oom
    assert "NPUSIM_HBM_SIZE" in oom and "estimate-only mode" in oom
    assert lines[2:] == ["ooms 1", "sum 3.0", f"estimate {8 * 2**30}", "after free True"]
