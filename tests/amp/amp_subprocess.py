"""Running a case in a fresh interpreter: the INF_NAN mode variables and NPUSIM_SOC are read once
per process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def run_python(code: str, extra_env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with the npusim of this process first on ``PYTHONPATH``
    and npusim's mode variables cleared, then ``extra_env`` added."""
    import npusim

    env = dict(os.environ)
    for name in ("INF_NAN_MODE_ENABLE", "INF_NAN_MODE_FORCE_DISABLE", "NPUSIM_SOC", "TORCH_TRANSFER_TO_NPU",
                 "TORCH_NPU_WARNING_DISABLE"):
        env.pop(name, None)
    paths = [str(Path(npusim.__file__).resolve().parents[1])]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=timeout
    )
