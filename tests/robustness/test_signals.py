"""SIGINT and SIGTERM remove the process's live-status file (npu-smi's process table); Python's
KeyboardInterrupt still happens on SIGINT. Reaping the files of dead processes is tested in
csrc/runtime/tests/StatusRegistryTest.cpp (no Python entry point reads the registry)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from robustness_support import child_environment

PROGRAM = r"""
import sys, time, torch, npusim
torch.ones(2, device="npu").sum().item()
torch.npu.synchronize()
try:  # "ready" inside the try: the parent's SIGINT may arrive while print() is still returning
    print("ready", flush=True)
    time.sleep(60)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(7)
"""


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_signal_removes_status_file(tmp_path, signal_number):
    runtime_dir = tmp_path / "rt"
    process = subprocess.Popen(
        [sys.executable, "-c", PROGRAM],
        env=child_environment(NPUSIM_RUNTIME_DIR=str(runtime_dir)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().strip() == "ready"
        status_file = runtime_dir / f"{process.pid}.status"
        deadline = time.monotonic() + 10
        while not status_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status_file.exists()
        process.send_signal(signal_number)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    if signal_number == signal.SIGTERM:
        assert process.returncode == -signal.SIGTERM
    else:
        assert "KeyboardInterrupt" in out and process.returncode == 7, (out, err)
    assert not status_file.exists()
