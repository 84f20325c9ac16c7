"""Shared helpers of npusim's Python tests (a module of its own, not conftest: every test folder
has a conftest, and `from conftest import` picks whichever folder's conftest pytest loaded first).

The tests import npusim from ``python/`` of the checkout when the extension is built there (so
they test the sources, not an older installed copy), else the installed npusim. They run the
cases that change process-wide state (autoload, transfer_to_npu, fork, OOM, device counts) in
subprocesses, through :func:`run_python`, with the same npusim first on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


REPOSITORY = Path(__file__).resolve().parents[2]
PYTHON_SOURCE = REPOSITORY / "python"

# Before anything imports torch: with npusim installed, `import torch` autoloads the npusim
# found first on sys.path.
if any((PYTHON_SOURCE / "npusim").glob("_C*.so")):
    sys.path.insert(0, str(PYTHON_SOURCE))


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


def subprocess_env(extra: dict[str, str] | None = None, *, autoload_folder: Path | None = None) -> dict[str, str]:
    """The environment of a test subprocess: npusim importable, npusim's variables cleared,
    ``extra`` added (a ``PYTHONPATH`` in it goes in front of the others)."""
    env = dict(os.environ)
    extra = dict(extra or {})
    paths = [extra.pop("PYTHONPATH")] if "PYTHONPATH" in extra else []  # added, not replacing
    paths.append(npusim_path())
    if autoload_folder is not None:
        paths.append(str(autoload_folder))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    for name in ("TORCH_TRANSFER_TO_NPU", "NPUSIM_DEVICE_COUNT", "NPUSIM_HBM_SIZE", "ASCEND_RT_VISIBLE_DEVICES"):
        env.pop(name, None)
    if extra:
        env.update(extra)
    return env


def run_python(
    code: str,
    extra_env: dict[str, str] | None = None,
    *,
    autoload_folder: Path | None = None,
    args: list[str] | None = None,
    timeout: float = 120,
    cwd: str | os.PathLike | None = None,
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; return the completed process (text output)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *(args or [])],
        env=subprocess_env(extra_env, autoload_folder=autoload_folder),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
