"""``npusim collect-env``: PyTorch's environment report (``python -m torch.utils.collect_env``)
with torch_npu's additions, as ``python -m torch_npu.utils.collect_env`` prints them on Ascend
(contract §4): a ``Torch-npu version`` line after ``PyTorch version``, and a ``CANN:`` section
with the toolkit's ``ascend_toolkit_install.info``. Under npusim the torch-npu version is
npusim's (``<torch>+npusim``) and the CANN section says which versions npusim simulates.

torch is imported with backend autoload off, so that the report also comes out when npusim or
torch_npu cannot load (the situations bug reports are about)."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys
from pathlib import Path
from typing import Mapping, Sequence

from npusim_tools import simulated_stack

__all__ = ["torch_npu_lines", "cann_section", "add_torch_npu_sections", "main"]

MAX_INFO_BYTES = 64 * 1024


def _real_torch_npu_version() -> str | None:
    try:
        dist = importlib.metadata.distribution("torch-npu")
    except importlib.metadata.PackageNotFoundError:
        return None
    return None if "npusim" in (dist.version or "") else dist.version


def _npusim_version() -> str | None:
    try:
        return importlib.metadata.version("npusim")
    except importlib.metadata.PackageNotFoundError:
        return None


def _toolkit_info_file(env: Mapping[str, str]) -> Path | None:
    homes = [env.get("ASCEND_HOME_PATH"), env.get("ASCEND_TOOLKIT_HOME"), "/usr/local/Ascend/ascend-toolkit/latest"]
    for home in filter(None, homes):
        for candidate in (Path(home) / f"{platform.machine()}-linux" / "ascend_toolkit_install.info",
                          Path(home) / "ascend_toolkit_install.info"):
            try:
                if candidate.is_file():
                    return candidate
            except OSError:  # a symbolic-link loop, a permission problem
                continue
    return None


def cann_section(env: Mapping[str, str]) -> str:
    """``CANN:`` and the install info of the real toolkit, else npusim's simulated versions."""
    info = _toolkit_info_file(env)
    if info is not None:
        try:
            with open(info, "rb") as handle:
                data = handle.read(MAX_INFO_BYTES)
            return "CANN:\n" + data.decode("utf-8", "replace").rstrip("\n")
        except OSError as error:
            return f"CANN:\nCould not read {info}: {error}"
    stack = simulated_stack()
    count = env.get("NPUSIM_DEVICE_COUNT") or "8"
    soc = env.get("NPUSIM_SOC") or "Ascend910B2"
    return (
        "CANN:\n"
        f"version={stack.get('cann_version', '?')} (simulated by npusim; no CANN toolkit is installed)\n"
        f"driver_version={stack.get('driver_version', '?')} (simulated)\n"
        f"devices={count} x {soc} (simulated: NPUSIM_DEVICE_COUNT, NPUSIM_SOC)"
    )


def torch_npu_lines(torch_version: str | None) -> str:
    real = _real_torch_npu_version()
    if real is not None:
        return f"Torch-npu version: {real}"
    npusim = _npusim_version()
    base = (torch_version or "?").split("+")[0]
    return f"Torch-npu version: {base}+npusim (npusim {npusim or 'from a source checkout'}, a simulated NPU)"


def add_torch_npu_sections(report: str, torch_version: str | None, env: Mapping[str, str]) -> str:
    lines = report.rstrip("\n").split("\n")
    addition = torch_npu_lines(torch_version)
    for index, line in enumerate(lines):
        if line.startswith("PyTorch version:"):
            lines.insert(index + 1, addition)
            break
    else:
        lines.insert(0, addition)
    return "\n".join(lines) + "\n\n" + cann_section(env) + "\n"


def _pytorch_report() -> tuple[str, str | None]:
    saved = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
    if "torch" not in sys.modules:
        os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import torch
        from torch.utils import collect_env

        return collect_env.get_pretty_env_info(), torch.__version__
    except Exception as error:  # noqa: BLE001 - the report must come out anyway
        return (f"PyTorch version: could not collect ({type(error).__name__}: {error})\n"
                f"Python version: {platform.python_version()}\nOS: {platform.platform()}"), None
    finally:
        if saved is None:
            os.environ.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
        else:
            os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = saved


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="npusim collect-env",
        description="Print PyTorch's environment report with torch_npu's additions (torch-npu and CANN versions), "
        "to paste into a bug report.",
    )
    parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    print("Collecting environment information...")
    report, torch_version = _pytorch_report()
    sys.stdout.write(add_torch_npu_sections(report, torch_version, os.environ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
