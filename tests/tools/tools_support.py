"""Helpers of the triage tools' tests (npu-smi, doctor, collect-env).

Every test builds its fixtures (fake Ascend installs, shared libraries compiled with the system
compiler, plog trees, status registries) in temporary directories, and runs the tools in
subprocesses with a controlled environment: nothing depends on this machine's files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


REPOSITORY = Path(__file__).resolve().parents[2]
PYTHON_SOURCE = REPOSITORY / "python"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The checkout's python/ when its extension is built there (scripts/dev-build.sh), else the
# installed npusim and npusim_tools (scripts/run-tests.sh installs them), as tests/conftest.py does.
USE_SOURCE = any((PYTHON_SOURCE / "npusim").glob("_C*.so"))
if USE_SOURCE:
    sys.path.insert(0, str(PYTHON_SOURCE))

from npusim_tools import native_program  # noqa: E402


def tool_env(extra: dict[str, str] | None = None, *, drop_ascend: bool = True) -> dict[str, str]:
    """The tools' environment: this checkout's python/ first, the machine's Ascend and npusim
    variables removed (unless the test sets them)."""
    env = dict(os.environ)
    for name in list(env):
        if drop_ascend and (name.startswith(("ASCEND_", "NPUSIM_", "HCCL_", "TORCH_NPU_", "PYTORCH_NPU")) or
                            name in ("LD_LIBRARY_PATH", "TASK_QUEUE_ENABLE", "TORCH_DEVICE_BACKEND_AUTOLOAD")):
            del env[name]
    extra = dict(extra or {})
    paths = [str(PYTHON_SOURCE) if USE_SOURCE else None, extra.pop("PYTHONPATH", None)]
    env.pop("PYTHONPATH", None)
    if any(paths):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    env.update(extra)
    return env


def run_tool(arguments: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """``npusim ARGUMENTS`` through the console-script launcher."""
    return subprocess.run([sys.executable, "-m", "npusim_tools.launcher", *arguments], env=env, capture_output=True,
                          text=True, errors="replace", timeout=timeout)


def compile_library(path: Path, soname: str, symbol: str = "f") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    source = path.with_suffix(".c")
    source.write_text(f"int {symbol}(void) {{ return 1; }}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(path), str(source), f"-Wl,-soname,{soname}"], check=True)
    source.unlink()
    return path
