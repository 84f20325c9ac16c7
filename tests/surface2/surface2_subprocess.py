"""Runs a snippet in a fresh interpreter with npusim importable, for the cases that depend on
process-wide state (environment read at start, crashes, several processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"
_CLEARED = (
    "TORCH_TRANSFER_TO_NPU",
    "NPUSIM_DEVICE_COUNT",
    "NPUSIM_HBM_SIZE",
    "ASCEND_RT_VISIBLE_DEVICES",
    "PYTORCH_NPU_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TORCH_NPU_DEVICE_CAPABILITY",
)


def run_python(
    code: str, extra_env: dict[str, str] | None = None, timeout: float = 120, script: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) in a new interpreter; a hang fails the test after ``timeout``.

    With ``script``, the code is written there and run as a file (multiprocessing's spawn start
    method needs a main module it can import again)."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    # The checkout's npusim when its extension is built there, else the installed one.
    if any((PYTHON_SOURCE / "npusim").glob("_C*.so")):
        paths = [str(PYTHON_SOURCE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra_env or {})
    if script is not None:
        script.write_text(textwrap.dedent(code))
        command = [sys.executable, str(script)]
    else:
        command = [sys.executable, "-c", textwrap.dedent(code)]
    return subprocess.run(
        command,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
