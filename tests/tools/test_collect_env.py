"""npusim collect-env: torch_npu's environment report (the layout of torch_npu/utils/collect_env.py)."""

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
    # torch_npu's order: CPU, then CANN with the version alone, then the packages.
    cpu, cann, packages = lines.index("CPU:"), lines.index("CANN:"), lines.index("Versions of relevant libraries:")
    assert cpu < cann < packages
    assert lines[cann + 1] == "9.1.0"  # the simulated CANN (npusim/data/simulated_stack.ini)
    assert lines[cann + 2] == ""


def test_cann_section_shows_the_real_toolkit_version(tmp_path):
    home = tmp_path / "ascend-toolkit" / "latest"
    info = home / f"{ARCH}-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC2\ninnerversion=V100R001C18SPC001B232\n")
    done = run_tool(["collect-env"], tool_env({"ASCEND_HOME_PATH": str(home)}))
    assert done.returncode == 0, done.stderr
    # torch_npu takes the first line that contains "version" (here version=, not innerversion=).
    assert "\nCANN:\n8.0.RC2\n\nVersions of relevant libraries:\n" in done.stdout


def test_torch_npu_module_prints_the_same_report(tmp_path):
    import subprocess
    import sys

    env = tool_env({"NPUSIM_DEVICE_COUNT": "2"})
    tool = run_tool(["collect-env"], env)
    module = subprocess.run([sys.executable, "-m", "torch_npu.utils.collect_env"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert module.returncode == 0, module.stderr
    assert module.stdout == tool.stdout
