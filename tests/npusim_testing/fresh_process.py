"""Fresh interpreters for the cases that depend on import order or process-wide state
(autoload, transfer_to_npu, fork, OOM, device counts, variables read once at start-up).

The child imports the same npusim as the test process: its folder goes first on ``PYTHONPATH``.
npusim's own variables are cleared so that a developer's shell cannot change a result; a test
adds what it needs through ``extra_env``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

# Variables that change what npusim does; a child starts without them.
CLEARED_VARIABLES = (
    "TORCH_TRANSFER_TO_NPU",
    "NPUSIM_DEVICE_COUNT",
    "NPUSIM_HBM_SIZE",
    "ASCEND_RT_VISIBLE_DEVICES",
    "ASCEND_HOME_PATH",
    "PYTORCH_NPU_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TORCH_NPU_DEVICE_CAPABILITY",
    "TORCH_NPU_WARNING_DISABLE",
    "PYTHONUSERBASE",
)


def npusim_path() -> str:
    """The folder that holds the npusim package imported by this test process."""
    import npusim

    return str(Path(npusim.__file__).resolve().parents[1])


def make_entry_point_folder(folder: Path) -> Path:
    """A folder with a distribution that declares npusim's ``torch.backends`` entry point, so
    that ``import torch`` autoloads npusim from a checkout that is not pip-installed."""
    dist_info = folder / "npusim_autoload_test-0.0.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: npusim-autoload-test\nVersion: 0.0\n")
    (dist_info / "entry_points.txt").write_text("[torch.backends]\nnpusim = npusim:_autoload\n")
    return folder


def subprocess_env(
    extra: dict[str, str] | None = None,
    *,
    autoload_folder: Path | None = None,
    python_path: list[str] | None = None,
) -> dict[str, str]:
    """The environment of a test subprocess: npusim importable, npusim's variables cleared,
    ``extra`` added (a ``PYTHONPATH`` in it goes in front of the others). With ``python_path``,
    ``PYTHONPATH`` is exactly that list."""
    env = {name: value for name, value in os.environ.items() if name not in CLEARED_VARIABLES}
    extra = dict(extra or {})
    if python_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(python_path)
    else:
        paths = [extra.pop("PYTHONPATH")] if "PYTHONPATH" in extra else []  # added, not replacing
        paths.append(npusim_path())
        if autoload_folder is not None:
            paths.append(str(autoload_folder))
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def run_python(
    code: str,
    extra_env: dict[str, str] | None = None,
    *,
    autoload_folder: Path | None = None,
    python_path: list[str] | None = None,
    args: list[str] | None = None,
    script: Path | None = None,
    timeout: float = 180,
    cwd: str | os.PathLike | None = None,
) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) in a fresh interpreter and return the completed process (text
    output); a hang fails the test after ``timeout``. With ``script``, the code is written there
    and run as a file (multiprocessing's spawn start method needs a main module it can import)."""
    source = textwrap.dedent(code)
    if script is not None:
        script.write_text(source)
        command = [sys.executable, str(script), *(args or [])]
    else:
        command = [sys.executable, "-c", source, *(args or [])]
    return subprocess.run(
        command,
        env=subprocess_env(extra_env, autoload_folder=autoload_folder, python_path=python_path),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def free_port() -> int:
    """A TCP port nobody listens on now (for a rendezvous or store of a test's own): fixed ports
    collide when test files run side by side."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
