"""Exit stress: short npu training steps must always exit with status 0.

An autograd device worker releases its last reference to a finished graph task after backward()
returned; that graph task owns Python objects (the ``torch.device("npu")`` mode, and in PyTorch
2.13 the contextvars context every Python backward stashes), so a release during interpreter
finalization aborted the process with "terminate called without an active exception" (see
npusim/npu/_shutdown.py). Measured here before the C++ drain: 6 of 30 runs of PLAIN_STEP aborted
with two busy cores (estimate-only runs about one in thirty); after it, 0 of 30.
Each program runs 12 times, two processes at a time (about 20-40 s per program).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from robustness_support import child_environment

ESTIMATE_STEP = r"""
import torch, npusim
with npusim.estimate():
    with torch.device("npu"):
        m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)])
        x = torch.randn(64, 1024)
        m(x).sum().backward()
"""

# Real numerics: backward runs on the npu:0 autograd worker, and is the last thing the program does.
PLAIN_STEP = r"""
import torch, npusim
m = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(4)]).to("npu")
x = torch.randn(64, 256, device="npu")
for _ in range(3):
    m(x).sum().backward()
"""

PROCESSES = 12
AT_ONCE = 2


@pytest.mark.parametrize("program", [ESTIMATE_STEP, PLAIN_STEP], ids=["estimate", "plain"])
def test_many_short_processes_exit_normally(program):
    failures = []
    for start in range(0, PROCESSES, AT_ONCE):
        running = [
            subprocess.Popen(
                [sys.executable, "-c", program],
                env=child_environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(AT_ONCE)
        ]
        for process in running:
            try:
                out, err = process.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate()
                failures.append(("hang", err[-2000:]))
                continue
            if process.returncode != 0:
                failures.append((process.returncode, err[-2000:]))
    assert not failures, f"{len(failures)} of {PROCESSES} processes exited abnormally: {failures[:3]}"
