"""Helpers of the robustness tests: fresh interpreters with the checkout's npusim and a timeout.

A module of its own (not conftest): every test folder has a conftest, and `from conftest import`
would find whichever was imported first in a run of the whole suite.

npusim is imported from ``python/`` of the checkout when the extension is built there, else the
installed one; the subprocesses get the same path through PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"
USE_SOURCE = any((PYTHON_SOURCE / "npusim").glob("_C*.so"))

if USE_SOURCE and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))


def child_environment(**overrides: str) -> dict[str, str]:
    env = dict(os.environ)
    if USE_SOURCE:
        env["PYTHONPATH"] = str(PYTHON_SOURCE) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for key in ("NPUSIM_CHIP_DIR", "NPUSIM_PLACEMENT_OVERRIDES", "NPUSIM_HBM_SIZE"):
        env.pop(key, None)
    env.update(overrides)
    return env


def run_python(code: str, timeout: float = 60, **environment: str) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter; a hang fails the test instead of blocking it."""
    try:
        return subprocess.run(
            [sys.executable, "-c", code],
            env=child_environment(**environment),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the process hung (killed after {timeout} s); output: {expired.stdout!r} {expired.stderr!r}")

