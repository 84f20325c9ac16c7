"""``import torch_npu`` as a program's first line, detection before torch, versions (issue 10)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import npusim_path, run_python

REPOSITORY = Path(__file__).resolve().parents[2]
HOOK = REPOSITORY / "python" / "_npusim_torch_npu_hook.py"
PTH = REPOSITORY / "python" / "npusim-torch_npu.pth"

# transformers' is_torch_npu_available() asks importlib.util.find_spec("torch_npu") before torch is
# imported; then the program's first import is torch_npu, which imports torch itself.
FIRST_LINE = """
import importlib.util, sys
print("found", importlib.util.find_spec("torch_npu") is not None, "torch" in sys.modules)
import torch_npu
import torch
print(torch_npu.npu is torch.npu, torch.ones(2).npu().device, torch_npu.__name__, torch.npu.is_available())
"""
EXPECTED = ["found True False", "True npu:0 torch_npu True"]


def _pip_layout(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A pip-installed layout: npusim and npusim_tools (one wheel) in a plain folder (no torch_npu
    shim there), the hook and the .pth file in a site-packages that Python reads at start-up (the
    user site)."""
    packages = tmp_path / "packages"
    packages.mkdir()
    for package in ("npusim", "npusim_tools"):
        (packages / package).symlink_to(Path(npusim_path()) / package, target_is_directory=True)
    user_base = tmp_path / "userbase"
    site = user_base / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    shutil.copy(HOOK, site / HOOK.name)
    shutil.copy(PTH, site / PTH.name)
    return [str(packages)], {"PYTHONUSERBASE": str(user_base)}


@pytest.mark.parametrize("autoload", ["1", "0"])
def test_first_line_and_detection_in_source_checkout(autoload):
    result = run_python(FIRST_LINE, {"TORCH_DEVICE_BACKEND_AUTOLOAD": autoload})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == EXPECTED


@pytest.mark.parametrize("order", ["import torch\nimport torch_npu", "from torch_npu.contrib import transfer_to_npu"])
def test_other_orders(order):
    result = run_python(order + "\nimport torch\nprint(torch.ones(1).npu().device)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "npu:0"


def test_pip_layout_first_line_and_detection(tmp_path):
    paths, env = _pip_layout(tmp_path)
    result = run_python(FIRST_LINE, env, python_path=paths)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == EXPECTED


def test_pip_layout_start_up_imports_nothing_heavy(tmp_path):
    # The .pth line runs at every interpreter start: it must not import torch or npusim.
    paths, env = _pip_layout(tmp_path)
    result = run_python(
        "import sys; print(sorted(m for m in ('torch', 'npusim', 'importlib.metadata', '_npusim_torch_npu_hook')"
        " if m in sys.modules))",
        env,
        python_path=paths,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['_npusim_torch_npu_hook']"


def _fake_real_torch_npu(folder: Path) -> Path:
    package = folder / "torch_npu"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("REAL = True\n")
    return folder


def test_finder_steps_aside_for_a_real_torch_npu(tmp_path):
    real = _fake_real_torch_npu(tmp_path / "real")
    paths, env = _pip_layout(tmp_path)
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    result = run_python(
        """
        import torch_npu
        print(getattr(torch_npu, "REAL", False))
        try:
            import npusim
        except ImportError as error:
            print("refused:", str(error).split(":")[0])
        """,
        env,
        python_path=[str(real), *paths],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["True", "refused: npusim cannot run next to a real torch_npu"]


def test_torch_version_cann_and_versions():
    import torch_npu
    from torch_npu.npu import utils

    assert torch.version.cann == "9.1.0"
    assert torch_npu.__version__ == torch.__version__.split("+")[0] + "+npusim"
    assert torch_npu.version.__version__ == torch_npu.__version__
    assert torch_npu.version.git_version == "Unknown"
    assert utils.get_cann_version() == "9.1.0"
    assert utils.get_cann_version("RUNTIME") == "9.1.0"
    assert utils.get_cann_version(module="DRIVER") == "25.5.2"
    with pytest.raises(ValueError, match="module of get_cann_version should be in"):
        utils.get_cann_version("GPU")
    assert utils._is_gte_cann_version("8.0.RC1")
    assert utils._is_gte_cann_version("9.1.0")
    assert utils._is_gte_cann_version("9.1.RC1")
    assert not utils._is_gte_cann_version("9.1.1")
    assert not utils._is_gte_cann_version("10.0.0", module="COMPILER")
    assert torch_npu.utils.get_cann_version() == "9.1.0"
    assert torch_npu.npu.get_soc_version() == 221  # Ascend910B2
    assert torch_npu.npu.utils.get_soc_version() == 221


def test_cann_version_from_an_install_info(tmp_path):
    (tmp_path / "x86_64-linux").mkdir()
    (tmp_path / "x86_64-linux" / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.3.RC1\n")
    result = run_python(
        "import torch, npusim, torch_npu.utils.collect_env as c; print(torch.version.cann, c.get_cann_version())",
        {"ASCEND_HOME_PATH": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["8.3.RC1", "8.3.RC1"]


def test_collect_env_module():
    from torch_npu.utils import collect_env

    text = collect_env.get_pretty_env_info()
    assert "Torch-npu version: " + torch.__version__.split("+")[0] + "+npusim" in text
    assert "\nCANN:\n9.1.0\n\nVersions of relevant libraries:\n" in text
    assert "PyTorch version:" in text
    assert collect_env.get_cann_version() == "9.1.0"
