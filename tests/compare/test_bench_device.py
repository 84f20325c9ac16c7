"""The benchmark run's device: what the program places on the npu lands on the CPU, random
numbers of npu operators come from the npu generator's state, torch_npu's operators run as their composites."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from npusim_testing.fresh_process import subprocess_env

PROGRAM = """
import torch, torch_npu
from npusim.compare.bench_device import install_benchmark_device

torch.manual_seed(7)
on_npu = torch.randn(5, device="npu").cpu()
x = torch.randn(4, 8)
g = torch.rand(8)
fused = torch_npu.npu_rms_norm(x.npu(), g.npu())[0].cpu()

install_benchmark_device()
torch.manual_seed(7)
mapped = torch.randn(5, device="npu")
print("factory", mapped.device.type, torch.equal(mapped, on_npu))
moved = x.npu()
print("move", moved.device.type, moved is x, moved.data_ptr() != x.data_ptr(), moved.npu() is moved,
      moved.to("npu:0") is moved, x.to(torch.device("npu")).device.type)
print("module", torch.nn.Linear(2, 2).npu().weight.device.type)
print("rms_norm", torch.equal(torch_npu.npu_rms_norm(moved, g.npu())[0], fused))
torch.manual_seed(3)
torch.rand(10)  # advances the CPU generator only: the tensor is a CPU one
routed = torch.nn.functional.dropout(torch.ones(64, device="npu"), 0.5)
torch.manual_seed(3)
print("dropout", torch.equal(routed, torch.nn.functional.dropout(torch.ones(64), 0.5)))
try:
    torch_npu.npu_grouped_matmul([x], [x])
except NotImplementedError as error:
    print("grouped", str(error)[:80])
"""


def test_benchmark_device_mapping(tmp_path):
    env = subprocess_env()
    run = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300, env=env,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.strip().splitlines())
    assert lines["factory"] == "cpu True"
    assert lines["move"] == "cpu False True True True cpu"
    assert lines["module"] == "cpu"
    assert lines["rms_norm"] == "True"
    assert lines["grouped"].startswith("npusim compare: torch_npu.npu_grouped_matmul has no fp32 composite")
    # Dropout of an "npu" tensor draws from the npu generator (seeded 3, untouched by the CPU draw).
    assert lines["dropout"] == "True"
