"""npusim's triage tools: ``npu-smi``, ``npusim doctor`` and ``npusim collect-env``.

This package sits next to :mod:`npusim` rather than inside it on purpose: importing anything
under ``npusim`` runs ``npusim/__init__.py``, which imports torch and registers the simulated
device, and refuses to load next to a real torch_npu or a CUDA build of torch. The tools must
work exactly in those broken situations (and start fast), so nothing here imports torch or
npusim at module level; the checks that need them run in subprocesses.

The native parts are two programs built from ``csrc/tools`` (no PyTorch): ``npu-smi`` and
``npusim-inspect`` (library resolution, ELF and version files, plog scan, printed as JSON).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

__all__ = ["native_program", "npusim_data_dir", "NativeToolMissing"]

_HERE = Path(__file__).resolve().parent


class NativeToolMissing(RuntimeError):
    """A program of csrc/tools is not built or not installed."""


def native_program(name: str) -> str:
    """The path of the native program ``name`` (``npu-smi`` or ``npusim-inspect``).

    Looked up in ``$NPUSIM_TOOLS_BIN_DIR``, then in this package's ``bin/`` (the wheel installs
    them there; ``scripts/dev-build.sh`` copies them there in a checkout), then in the build
    folders of a checkout. Never on ``PATH``: a real driver's ``npu-smi`` must not be mistaken
    for npusim's, nor the reverse.
    """
    candidates = []
    override = os.environ.get("NPUSIM_TOOLS_BIN_DIR")
    if override:
        candidates.append(Path(override) / name)
    candidates.append(_HERE / "bin" / name)
    repository = _HERE.parents[1]
    for build in ("build/dev/csrc/tools", "build/tools-tests"):
        candidates.append(repository / build / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise NativeToolMissing(
        f"npusim's native program {name} is not built (looked in: {', '.join(str(c.parent) for c in candidates)}). "
        "In a checkout run `bash scripts/dev-build.sh`; otherwise reinstall npusim."
    )


def npusim_data_dir() -> Path:
    """``npusim/data`` without importing npusim (find_spec does not run ``__init__``)."""
    spec = importlib.util.find_spec("npusim")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            data = Path(location) / "data"
            if data.is_dir():
                return data
    return _HERE.parent / "npusim" / "data"


def read_simple_ini(path: Path) -> dict[str, str]:
    """``key = value`` lines with ``#`` comments, as npusim's data files are written."""
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def simulated_stack() -> dict[str, str]:
    """The driver and CANN versions npusim's simulated stack reports."""
    return read_simple_ini(npusim_data_dir() / "simulated_stack.ini")


def python_executable() -> str:
    return sys.executable or "python3"
