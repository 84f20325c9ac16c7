"""A real Ascend installation, read-only: the driver and toolkit version files, set_env.sh and
the variables it sets, the installed torch / torch-npu against the compatibility table, and a
CUDA build of torch next to torch_npu. Files are read through npusim-inspect (bounded reads,
symbolic-link loops and unreadable files reported) and installed packages through their
metadata: nothing is imported, sourced or written."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from npusim_tools.compatibility import base_version, load_table, python_in_range, releases_for_torch_npu
from npusim_tools.doctor.report import FAIL, INFO, PASS, WARN, Check
from npusim_tools.native import InspectError, inspect

__all__ = ["AscendInstall", "discover", "check_install", "installed_distributions"]

SECTION = "Ascend installation (read-only)"
DEFAULT_ROOT = "/usr/local/Ascend"
_DRIVER_VERSION = re.compile(r"\d+\.\d+(\.(\d+|rc\d+|RC\d+))?(\.\w+)*")
_CANN_VERSION = re.compile(r"\d+\.\d+(\.(\d+|RC\d+|rc\d+))?([.-]\w+)*")


@dataclass
class AscendInstall:
    root: str
    driver_version_file: str
    toolkit_link: str                  # <root>/ascend-toolkit/latest
    toolkit: str | None = None         # its real path
    toolkit_error: str = ""
    set_env: str = ""
    cann_version: str | None = None
    driver_version: str | None = None
    checks: list[Check] = field(default_factory=list)


def installed_distributions() -> dict[str, importlib.metadata.Distribution]:
    found = {}
    for name in ("torch", "torch-npu", "npusim"):
        try:
            found[name] = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def _is_npusim_alias(dist: importlib.metadata.Distribution) -> bool:
    return "npusim" in (dist.version or "") or "npusim" in (dist.metadata.get("Summary") or "").lower()


def _realpaths(paths: list[str]) -> dict[str, Any]:
    return inspect(["realpath", *paths]) if paths else {}


def discover(root: str | None, env: Mapping[str, str]) -> AscendInstall | None:
    """The installation to check, or None when this machine has no trace of one."""
    explicit = root is not None
    root = root or DEFAULT_ROOT
    install = AscendInstall(
        root=root,
        driver_version_file=os.path.join(root, "driver", "version.info"),
        toolkit_link=os.path.join(root, "ascend-toolkit", "latest"),
        set_env=os.path.join(root, "ascend-toolkit", "set_env.sh"),
    )
    traces = explicit or os.path.lexists(root) or any(env.get(v) for v in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"))
    dists = installed_distributions()
    real_torch_npu = "torch-npu" in dists and not _is_npusim_alias(dists["torch-npu"])
    if not traces and not real_torch_npu:
        return None
    return install


def _version_file(path: str, key_names: tuple[str, ...]) -> tuple[str | None, dict[str, Any]]:
    data = inspect(["keyvalue", path])[path]
    if not data["readable"]:
        return None, data
    entries = dict((k, v) for k, v in reversed(data["entries"]))  # first occurrence wins
    for key in key_names:
        if entries.get(key):
            return entries[key], data
    return None, data


def _under(path: str | None, directory: str | None) -> bool:
    if not path or not directory:
        return False
    directory = directory.rstrip("/")
    return path == directory or path.startswith(directory + "/")


def check_install(install: AscendInstall, env: Mapping[str, str], python_version: str | None = None) -> list[Check]:
    checks: list[Check] = []
    python_version = python_version or platform.python_version()
    try:
        checks.extend(_check_files(install, env))
    except InspectError as error:
        checks.append(Check(SECTION, "version files", FAIL, str(error), "rebuild npusim's native tools (scripts/dev-build.sh)"))
    checks.extend(_check_packages(install, python_version))
    return checks


def _check_files(install: AscendInstall, env: Mapping[str, str]) -> list[Check]:
    checks: list[Check] = []
    # Driver.
    if not os.path.lexists(install.driver_version_file):
        checks.append(Check(SECTION, "driver", WARN, f"no driver: {install.driver_version_file} does not exist",
                            "install the Ascend driver (or mount /usr/local/Ascend/driver into the container); "
                            "without it the toolkit can compile but no NPU runs"))
    else:
        version, data = _version_file(install.driver_version_file, ("Version", "version"))
        if not data["readable"]:
            checks.append(Check(SECTION, "driver", FAIL, f"{install.driver_version_file}: {data['error']}",
                                "repair or reinstall the driver (the file must be a readable text file)"))
        elif version is None or not _DRIVER_VERSION.fullmatch(version):
            checks.append(Check(SECTION, "driver", FAIL,
                                f"{install.driver_version_file} has no valid Version= line" + (f" (Version='{version}')" if version else ""),
                                "reinstall the driver package", details=data["problems"]))
        else:
            install.driver_version = version
            status = WARN if data["problems"] else PASS
            checks.append(Check(SECTION, "driver", status, f"driver {version} ({install.driver_version_file})",
                                "the version file is damaged: reinstall the driver", details=data["problems"]))

    # Toolkit: latest -> a version directory.
    resolved = _realpaths([install.toolkit_link])[install.toolkit_link]
    if resolved["path"] is None:
        install.toolkit_error = resolved.get("error", "")
        if os.path.lexists(install.toolkit_link):
            checks.append(Check(SECTION, "CANN toolkit", FAIL, f"{install.toolkit_link}: {install.toolkit_error}",
                                "reinstall the toolkit, or point the latest link at an installed version directory"))
        else:
            checks.append(Check(SECTION, "CANN toolkit", FAIL if env.get("ASCEND_HOME_PATH") else WARN,
                                f"no toolkit at {install.toolkit_link}",
                                "install the CANN toolkit (Ascend-cann-toolkit_<version>_linux-<arch>.run --install)"))
    else:
        install.toolkit = resolved["path"]
        arch = platform.machine()
        info_paths = [os.path.join(install.toolkit, f"{arch}-linux", "ascend_toolkit_install.info"),
                      os.path.join(install.toolkit, "ascend_toolkit_install.info")]
        info_path = next((p for p in info_paths if os.path.lexists(p)), info_paths[0])
        version, data = _version_file(info_path, ("version",))
        if not data["readable"]:
            checks.append(Check(SECTION, "CANN toolkit", FAIL, f"{info_path}: {data['error']}",
                                "the toolkit install is incomplete: reinstall the CANN toolkit"))
        elif version is None or not _CANN_VERSION.fullmatch(version):
            checks.append(Check(SECTION, "CANN toolkit", FAIL,
                                f"{info_path} has no valid version= line" + (f" (version='{version}')" if version else ""),
                                "reinstall the CANN toolkit", details=data["problems"]))
        else:
            install.cann_version = version
            details = list(data["problems"])
            recorded = dict(data["entries"]).get("path")
            status = WARN if details else PASS
            if recorded and not (_under(install.toolkit, recorded) or _under(recorded, install.toolkit)):
                status = WARN
                details.append(f"the install info records path={recorded}, but {install.toolkit_link} leads to {install.toolkit}")
            checks.append(Check(SECTION, "CANN toolkit", status, f"CANN {version} at {install.toolkit}",
                                "reinstall the toolkit or fix the latest link so that both agree", details=details))

    checks.extend(_check_set_env(install, env))
    return checks


def _check_set_env(install: AscendInstall, env: Mapping[str, str]) -> list[Check]:
    checks: list[Check] = []
    fix_source = f"source {install.set_env} in a fresh shell (not after another toolkit's set_env.sh)"
    home = env.get("ASCEND_HOME_PATH") or env.get("ASCEND_TOOLKIT_HOME")
    if not home:
        checks.append(Check(SECTION, "set_env.sh", FAIL,
                            "the CANN environment is not sourced: ASCEND_HOME_PATH is unset "
                            "(torch_npu then fails with 'libhccl.so: cannot open shared object file')",
                            fix_source))
        return checks
    names = [v for v in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH") if env.get(v)]
    resolved = _realpaths([env[v] for v in names])
    real = {v: resolved[env[v]]["path"] for v in names}
    details = []
    status = PASS
    home_real = real.get("ASCEND_HOME_PATH") or real.get("ASCEND_TOOLKIT_HOME")
    if home_real is None:
        status = FAIL
        details.append(f"ASCEND_HOME_PATH={home} does not exist ({resolved[home]['error'] if home in resolved else ''})")
    elif install.toolkit and home_real != install.toolkit:
        status = FAIL
        details.append(f"ASCEND_HOME_PATH={home} is {home_real}, but the installed toolkit ({install.toolkit_link}) is {install.toolkit}: "
                       "a set_env.sh of another toolkit was sourced")
    for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_AICPU_PATH"):
        if name in real and home_real and real[name] != home_real:
            status = FAIL
            details.append(f"{name}={env[name]} differs from ASCEND_HOME_PATH ({home_real}): two toolkits' variables are mixed")
    opp = env.get("ASCEND_OPP_PATH")
    if not opp:
        status = FAIL
        details.append("ASCEND_OPP_PATH is unset: torch_npu raises 'ASCEND_OPP_PATH environment variable is not set'")
    elif home_real and real.get("ASCEND_OPP_PATH") != os.path.join(home_real, "opp"):
        status = FAIL
        details.append(f"ASCEND_OPP_PATH={opp} is not {home_real}/opp: operators would come from another toolkit")
    library_path = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    if home_real and not any(os.path.realpath(p) == os.path.join(home_real, "lib64") for p in library_path):
        status = FAIL if status == FAIL else WARN
        details.append(f"LD_LIBRARY_PATH does not contain {home}/lib64")
    python_path = [p for p in env.get("PYTHONPATH", "").split(":") if p]
    if home_real and not any(os.path.realpath(p).startswith(os.path.join(home_real, "python", "site-packages")) for p in python_path):
        status = FAIL if status == FAIL else WARN
        details.append(f"PYTHONPATH does not contain {home}/python/site-packages (te, tbe and op_compile_tool live there)")
    if not os.path.lexists(install.set_env):
        details.append(f"{install.set_env} does not exist")
    summary = {PASS: f"sourced, for the installed toolkit ({home_real})",
               WARN: "sourced, but some variables are incomplete",
               FAIL: "the CANN environment does not match the installed toolkit"}[status]
    checks.append(Check(SECTION, "set_env.sh", status, summary, fix_source, details=details))
    return checks


def _torch_cuda_build(dist: importlib.metadata.Distribution) -> str | None:
    """``cu121`` / CUDA version when the installed torch is a CUDA build (read from its files)."""
    local = dist.version.split("+", 1)[1] if "+" in dist.version else ""
    if re.match(r"(cu|rocm)\d", local):
        return local
    try:
        text = dist.locate_file("torch/version.py").read_text(encoding="utf-8", errors="replace")
    except (OSError, AttributeError):
        return None
    match = re.search(r"^cuda\s*(?::\s*\w+)?\s*=\s*'([^']+)'", text, re.MULTILINE)
    return f"CUDA {match.group(1)}" if match else None


def _check_packages(install: AscendInstall, python_version: str) -> list[Check]:
    checks: list[Check] = []
    dists = installed_distributions()
    torch_dist = dists.get("torch")
    npu_dist = dists.get("torch-npu")
    if npu_dist is not None and _is_npusim_alias(npu_dist):
        npu_dist = None
    if npu_dist is None:
        checks.append(Check(SECTION, "torch-npu", INFO, "no real torch-npu installed in this Python"))
        return checks
    table = load_table()
    rows = releases_for_torch_npu(npu_dist.version, table)
    if not rows:
        checks.append(Check(SECTION, "torch-npu", WARN, f"torch-npu {npu_dist.version} is not in the compatibility table",
                            "install a torch-npu release listed in COMPATIBILITY.en.md"))
        return checks
    row = rows[0]
    if torch_dist is None:
        checks.append(Check(SECTION, "torch-npu", FAIL, f"torch-npu {npu_dist.version} is installed without torch",
                            f"pip install torch=={row.pytorch}"))
    elif base_version(torch_dist.version) != row.pytorch:
        checks.append(Check(SECTION, "torch-npu", FAIL,
                            f"torch-npu {npu_dist.version} is built for PyTorch {row.pytorch}, torch {torch_dist.version} is installed "
                            "(import fails with 'libtorch_npu.so: undefined symbol: _ZN5torch...')",
                            f"pip install torch=={row.pytorch}, or the torch-npu wheel of torch {base_version(torch_dist.version)}"))
    else:
        status = WARN if row.status == "eol" else PASS
        checks.append(Check(SECTION, "torch-npu", status,
                            f"torch-npu {npu_dist.version} with torch {torch_dist.version}" + (" (end of life)" if row.status == "eol" else ""),
                            "upgrade to an active release (see the compatibility table)"))
    if install.cann_version:
        if install.cann_version.upper() != row.cann.upper() and not install.cann_version.startswith(row.cann + "."):
            checks.append(Check(SECTION, "CANN vs torch-npu", FAIL,
                                f"torch-npu {npu_dist.version} goes with CANN {row.cann}, CANN {install.cann_version} is installed "
                                "(typical symptom: undefined symbol errors at import, or kernels missing)",
                                f"install CANN {row.cann}, or the torch-npu release listed for CANN {install.cann_version}"))
        else:
            checks.append(Check(SECTION, "CANN vs torch-npu", PASS, f"CANN {install.cann_version} matches torch-npu {row.torch_npu}"))
    in_range = python_in_range(python_version, row)
    if in_range is False:
        checks.append(Check(SECTION, "Python vs torch-npu", FAIL,
                            f"Python {python_version} is outside {row.python_min}-{row.python_max}, the range of torch-npu {row.torch_npu}",
                            f"use Python {row.python_min}-{row.python_max}"))
    elif in_range:
        checks.append(Check(SECTION, "Python vs torch-npu", PASS, f"Python {python_version} is in {row.python_min}-{row.python_max}"))
    if torch_dist is not None:
        cuda = _torch_cuda_build(torch_dist)
        if cuda:
            checks.append(Check(SECTION, "CUDA torch", FAIL,
                                f"torch {torch_dist.version} is a GPU build ({cuda}) next to torch_npu: import fails with "
                                "'Two accelerators cannot be used at the same time in PyTorch: npu and cuda'",
                                f"pip install torch=={base_version(torch_dist.version)} --index-url https://download.pytorch.org/whl/cpu"))
    return checks
