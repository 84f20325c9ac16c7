"""Exit stress: short estimate-only training steps must always exit with status 0.

Before the fix about one process in thirty aborted at interpreter exit with "terminate called
without an active exception" (an autograd device worker released a graph task holding the
``torch.device("npu")`` mode while the interpreter finalized; see npusim/npu/_shutdown.py).
Runs two processes at a time, 12 in all (about 20-40 s here; the loop of 120 processes used to find the abort is in the commit message).
"""

from __future__ import annotations

import subprocess
import sys

from robustness_support import child_environment

PROGRAM = r"""
import torch, npusim
with npusim.estimate():
    with torch.device("npu"):
        m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)])
        x = torch.randn(64, 1024)
        m(x).sum().backward()
"""

PROCESSES = 12
AT_ONCE = 2


def test_many_short_processes_exit_normally():
    failures = []
    for start in range(0, PROCESSES, AT_ONCE):
        running = [
            subprocess.Popen(
                [sys.executable, "-c", PROGRAM],
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
