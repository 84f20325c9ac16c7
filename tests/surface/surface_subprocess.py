"""Fresh interpreters for the cases that depend on import order or process-wide state."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def npusim_folder() -> Path:
    """The folder holding the npusim package this test process uses (``python/`` of a checkout)."""
    import npusim

    return Path(npusim.__file__).resolve().parents[1]


def run_python(
    code: str,
    extra_env: dict[str, str] | None = None,
    *,
    python_path: list[str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter. ``PYTHONPATH`` is ``python_path`` (default: the folder
    of this process's npusim); npusim's variables are cleared, then ``extra_env`` added."""
    env = dict(os.environ)
    for name in ("TORCH_TRANSFER_TO_NPU", "NPUSIM_DEVICE_COUNT", "ASCEND_RT_VISIBLE_DEVICES", "PYTORCH_NPU_ALLOC_CONF",
                 "ASCEND_HOME_PATH", "TORCH_NPU_WARNING_DISABLE", "PYTHONUSERBASE"):
        env.pop(name, None)
    paths = python_path if python_path is not None else [str(npusim_folder())]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=timeout
    )
