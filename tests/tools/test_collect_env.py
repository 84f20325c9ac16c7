"""npusim collect-env: PyTorch's report with torch_npu's additions."""

from __future__ import annotations

from ascend_fixtures import ARCH
from tools_support import run_tool, tool_env


def test_report_has_pytorch_sections_and_torch_npu_additions(tmp_path):
    done = run_tool(["collect-env"], tool_env({"NPUSIM_DEVICE_COUNT": "2"}))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Collecting environment information..."
    index = next(i for i, line in enumerate(lines) if line.startswith("PyTorch version: "))
    assert lines[index + 1].startswith("Torch-npu version: ") and "+npusim" in lines[index + 1]
    for section in ("OS: ", "GCC version: ", "Python version: ", "Versions of relevant libraries:"):
        assert any(line.startswith(section) for line in lines), section
    cann = lines.index("CANN:")
    assert lines[cann + 1].startswith("version=") and "simulated by npusim" in lines[cann + 1]
    assert lines[cann + 3] == "devices=2 x Ascend910B2 (simulated: NPUSIM_DEVICE_COUNT, NPUSIM_SOC)"


def test_cann_section_shows_the_real_toolkit_install_info(tmp_path):
    home = tmp_path / "ascend-toolkit" / "latest"
    info = home / f"{ARCH}-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC2\ninnerversion=V100R001C18SPC001B232\n")
    done = run_tool(["collect-env"], tool_env({"ASCEND_HOME_PATH": str(home)}))
    assert done.returncode == 0, done.stderr
    assert "\nCANN:\npackage_name=Ascend-cann-toolkit\nversion=8.0.RC2\ninnerversion=V100R001C18SPC001B232\n" in done.stdout
