"""Shared helpers of the data-loading tests (pinned memory, DataLoader worker processes).

As in ``tests/python``: npusim is imported from ``python/`` of the checkout when the extension is
built there, else the installed one; cases that need process-wide settings (the INF_NAN mode
variables, read once per process) run in subprocesses through :func:`run_python`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
PYTHON_SOURCE = REPOSITORY / "python"

if any((PYTHON_SOURCE / "npusim").glob("_C*.so")):
    sys.path.insert(0, str(PYTHON_SOURCE))


def run_python(code: str, extra_env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with the same npusim first on ``PYTHONPATH``."""
    import npusim

    env = dict(os.environ)
    for name in ("INF_NAN_MODE_ENABLE", "INF_NAN_MODE_FORCE_DISABLE", "NPUSIM_SOC", "TORCH_TRANSFER_TO_NPU"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(npusim.__file__).resolve().parents[1])] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="session")
def npu():
    import torch

    import npusim  # noqa: F401

    return torch.npu
