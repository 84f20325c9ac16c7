"""Fake Ascend installations for the doctor's tests: driver and toolkit trees of several CANN
versions, with shared libraries compiled by the test, set_env.sh, fake torch-npu metadata and
plog trees."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

from tools_support import compile_library

ARCH = platform.machine()
TOOLKIT_LIBRARIES = ("libascendcl.so", "libhccl.so", "libruntime.so")


class LibraryCache:
    """Compiles each library once per session; installs copies."""

    def __init__(self, directory: Path):
        self.directory = directory

    def install(self, name: str, destination: Path) -> None:
        compiled = self.directory / name
        if not compiled.exists():
            compile_library(compiled, name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(compiled, destination)


def make_toolkit(root: Path, version: str, libraries: LibraryCache) -> Path:
    toolkit = root / "ascend-toolkit" / version
    info = toolkit / f"{ARCH}-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_text(f"package_name=Ascend-cann-toolkit\nversion={version}\ninnerversion=V100R001C00\narch={ARCH}\n"
                    f"os=linux\npath={toolkit}/{ARCH}-linux\n")
    for name in TOOLKIT_LIBRARIES:
        libraries.install(name, toolkit / "lib64" / name)
    (toolkit / "opp").mkdir()
    (toolkit / "python" / "site-packages").mkdir(parents=True)
    return toolkit


def make_install(base: Path, libraries: LibraryCache, versions=("8.0.RC2",), latest="8.0.RC2",
                 driver_version_text="Version=24.1.rc3\nascendhal_version=7.35.23\n") -> Path:
    root = base / "Ascend"
    driver = root / "driver"
    (driver / "lib64" / "driver").mkdir(parents=True)
    libraries.install("libascend_hal.so", driver / "lib64" / "driver" / "libascend_hal.so")
    if driver_version_text is not None:
        (driver / "version.info").write_bytes(driver_version_text.encode("latin-1") if isinstance(driver_version_text, str)
                                              else driver_version_text)
    for version in versions:
        make_toolkit(root, version, libraries)
    (root / "ascend-toolkit" / "latest").symlink_to(latest)
    (root / "ascend-toolkit" / "set_env.sh").write_text(
        "export ASCEND_TOOLKIT_HOME=${ASCEND_TOOLKIT_HOME:-$(dirname $BASH_SOURCE)/latest}\n"
        "export ASCEND_HOME_PATH=$ASCEND_TOOLKIT_HOME\nexport ASCEND_OPP_PATH=$ASCEND_TOOLKIT_HOME/opp\n")
    return root


def sourced_env(root: Path, toolkit: str = "latest") -> dict[str, str]:
    """The variables set_env.sh sets for ``toolkit`` (a version directory or ``latest``)."""
    home = str(root / "ascend-toolkit" / toolkit)
    return {
        "ASCEND_TOOLKIT_HOME": home,
        "ASCEND_HOME_PATH": home,
        "ASCEND_OPP_PATH": f"{home}/opp",
        "ASCEND_AICPU_PATH": home,
        "LD_LIBRARY_PATH": f"{home}/lib64:{root}/driver/lib64/driver",
        "PYTHONPATH": f"{home}/python/site-packages",
    }


def fake_distribution(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


PLOG_LINES = [
    "[INFO] RUNTIME(144,python3):2025-12-23-02:13:20.000.000 [runtime.cc:10]144 device 0 opened",
    "[ERROR] RUNTIME(144,python3):2025-12-23-02:13:21.089.239 [api_impl.cc:7817] 144 PeekLastErr: level=0 err=507899.",
    '[ERROR] APP(144,python3):2025-12-23-02:13:21.089.282 [log_inner.cpp:77]144 build/CMakeFiles/torch_npu.dir/'
    'compiler_depend.ts:device_count:41: "[PTA]:"get device count of NPU failed""',
    "[ERROR] RUNTIME(144,python3):2025-12-23-02:13:22.000.000 [api_impl.cc:7817] 144 PeekLastErr: level=0 err=507899.",
]


def make_plogs(root: Path) -> Path:
    plog = root / "debug" / "plog"
    plog.mkdir(parents=True)
    (plog / "plog-144_20251223021320000.log").write_text("\n".join(PLOG_LINES) + "\n")
    (plog / "plog-200_20251224000000000.log").write_bytes(
        b"[ERROR] ASCENDCL(200,python3):2025-12-24-00:00:01.000.000 [op.cpp:1]200 aclnnAdds failed EZ9999: Inner Error! "
        b"Cannot find bin of op Range \xff\xfe ERR01100 OPS call acl api failed\n")
    return root
