"""The environment report of torch_npu: ``python -m torch_npu.utils.collect_env`` and
``npusim collect-env`` print the same text from this one implementation.

The layout is torch_npu's (``torch_npu/utils/collect_env.py``, contract §4): PyTorch's
collectors, a ``Torch-npu version`` line after ``PyTorch version``, a ``CPU`` section, a
``CANN`` section with the version of the installed toolkit, then the pip and conda packages.
Under npusim the torch-npu version reads ``<torch version>+npusim`` (a real torch_npu install
reports its own), and without ``ASCEND_HOME_PATH`` the CANN version is the one npusim simulates.

torch is imported with backend autoload off when nothing imported it yet, so that the report
also comes out when npusim or torch_npu cannot load (the situations bug reports are about)."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import sys
from collections import namedtuple
from typing import Sequence

from npusim_tools import simulated_stack

__all__ = ["SystemEnv", "get_cann_version", "get_torch_npu_version", "get_env_info", "pretty_str",
           "get_pretty_env_info", "main"]

# The fields of torch_npu's report, in its order.
SystemEnv = namedtuple("SystemEnv", [
    "torch_version", "torch_npu_version", "is_debug_build", "gcc_version", "clang_version", "cmake_version", "os",
    "libc_version", "python_version", "python_platform", "pip_version", "pip_packages", "conda_packages",
    "caching_allocator_config", "is_xnnpack_available", "cpu_info", "cann_version",
])

_ENV_INFO_FORMAT = """
PyTorch version: {torch_version}
Torch-npu version: {torch_npu_version}
Is debug build: {is_debug_build}
OS: {os}
GCC version: {gcc_version}
Clang version: {clang_version}
CMake version: {cmake_version}
Libc version: {libc_version}

Python version: {python_version}
Python platform: {python_platform}
Is XNNPACK available: {is_xnnpack_available}

CPU:
{cpu_info}

CANN:
{cann_version}

Versions of relevant libraries:
{pip_packages}
{conda_packages}
""".strip()

_INSTALL_INFO = re.compile(r"ascend_.*_install\.info")
# An install-info file is a few lines; a larger one is not one.
_MAX_INFO_BYTES = 64 * 1024


def get_cann_version() -> str:
    """The ``version=`` of the first ``ascend_*_install.info`` under ``$ASCEND_HOME_PATH``, as
    torch_npu reads it (``"not known"`` when there is none); without that variable, the CANN
    version npusim simulates (``torch.version.cann`` under npusim)."""
    home = os.environ.get("ASCEND_HOME_PATH", "")
    if not home:
        return simulated_stack().get("cann_version", "not known")
    for folder, _, files in os.walk(os.path.realpath(home)):
        found = sorted(name for name in files if _INSTALL_INFO.fullmatch(name))
        if not found:
            continue
        try:
            with open(os.path.join(folder, found[0]), "rb") as handle:
                text = handle.read(_MAX_INFO_BYTES).decode("utf-8", "replace")
        except OSError:
            return "not known"
        for line in text.splitlines():
            if "version" in line:
                return line.strip().split("=")[-1]
        return "not known"
    return "not known"


def get_torch_npu_version(torch_version: str | None) -> str:
    """A real torch_npu's version when one is installed, else ``<torch version>+npusim``."""
    try:
        installed = importlib.metadata.version("torch-npu")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed and "npusim" not in installed:
        return installed
    return (torch_version or "N/A").split("+")[0] + "+npusim"


def _import_torch():
    saved = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
    if "torch" not in sys.modules:
        os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import torch
        from torch.utils import collect_env

        return torch, collect_env
    finally:
        if saved is None:
            os.environ.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
        else:
            os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = saved


def get_env_info() -> SystemEnv:
    torch, collectors = _import_torch()
    run = collectors.run
    pip_version, pip_packages = collectors.get_pip_packages(run)
    return SystemEnv(
        torch_version=torch.__version__,
        torch_npu_version=get_torch_npu_version(torch.__version__),
        is_debug_build=str(torch.version.debug),
        python_version="{} ({}-bit runtime)".format(sys.version.replace("\n", " "), sys.maxsize.bit_length() + 1),
        python_platform=collectors.get_python_platform(),
        pip_version=pip_version,
        pip_packages=pip_packages,
        conda_packages=collectors.get_conda_packages(run),
        os=collectors.get_os(run),
        libc_version=collectors.get_libc_version(),
        gcc_version=collectors.get_gcc_version(run),
        clang_version=collectors.get_clang_version(run),
        cmake_version=collectors.get_cmake_version(run),
        caching_allocator_config=collectors.get_cachingallocator_config(),
        is_xnnpack_available=collectors.is_xnnpack_available(),
        cpu_info=collectors.get_cpu_info(run),
        cann_version=get_cann_version(),
    )


def pretty_str(info: SystemEnv) -> str:
    fields = info._asdict()
    for key, value in fields.items():
        if value is True:
            fields[key] = "Yes"
        elif value is False:
            fields[key] = "No"
        elif value is None:
            fields[key] = "Could not collect"
    for key in ("pip_packages", "conda_packages"):
        if fields[key] == "":
            fields[key] = "No relevant packages"
    if fields["pip_packages"]:
        fields["pip_packages"] = "\n".join(f"[{info.pip_version}] {line}" for line in fields["pip_packages"].split("\n"))
    if fields["conda_packages"]:
        fields["conda_packages"] = "\n".join(f"[conda] {line}" for line in fields["conda_packages"].split("\n"))
    return _ENV_INFO_FORMAT.format(**fields)


def get_pretty_env_info() -> str:
    return pretty_str(get_env_info())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="npusim collect-env",
        description="Print torch_npu's environment report (PyTorch's collectors with the torch-npu and CANN "
        "versions), to paste into a bug report.",
    )
    parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    print("Collecting environment information...")
    try:
        print(get_pretty_env_info())
    except Exception as error:  # noqa: BLE001 - the report must come out anyway
        import platform

        print(f"PyTorch version: could not collect ({type(error).__name__}: {error})\n"
              f"Python version: {platform.python_version()}\nOS: {platform.platform()}\n\n"
              f"CANN:\n{get_cann_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
