"""``import torch_npu`` is served by npusim when no real torch_npu is installed."""

import sys
from pathlib import Path

import pytest
import torch

import npusim
from npusim_testing.fresh_process import run_python


def test_import_torch_npu():
    import torch_npu

    assert torch_npu.npu is torch.npu
    assert torch_npu.__name__ == "torch_npu"
    assert torch_npu.__version__ == torch.__version__.split("+")[0] + "+npusim"
    from torch_npu.version import __version__

    assert __version__ == torch_npu.__version__


def test_torch_npu_npu_submodules_are_the_npusim_modules():
    import torch_npu.npu
    import torch_npu.npu.amp
    import torch_npu.npu.memory
    from torch_npu.npu import Stream

    assert sys.modules["torch_npu.npu"] is torch.npu
    assert torch_npu.npu.memory is npusim.npu.memory
    assert torch_npu.npu.amp is npusim.npu.amp
    assert Stream is torch.npu.Stream
    # The aliased modules keep their own identity.
    assert npusim.npu.memory.__spec__.name == "npusim.npu.memory"


def test_torch_npu_program_runs():
    import torch_npu

    x = torch.ones(4).npu()
    torch_npu.npu.synchronize()
    assert torch_npu.npu.current_device() == 0
    assert torch_npu.npu.get_device_name(0).startswith("Ascend")
    assert (x + x).sum().item() == 8.0


def test_format_functions_are_served():
    # Formats are recorded per storage (tests/layouts/test_formats.py has the details).
    import torch_npu

    x = torch_npu.npu_format_cast(torch.ones(16, 16, device="npu"), 29)
    assert torch_npu.get_npu_format(x) == 29


def test_unknown_submodule_is_missing():
    with pytest.raises(ModuleNotFoundError):
        import torch_npu.npu.no_such_module  # noqa: F401


def _fake_distribution(folder: Path, version: str, summary: str = "Ascend Extension for PyTorch") -> Path:
    dist_info = folder / f"torch_npu-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch_npu\nVersion: {version}\nSummary: {summary}\n"
    )
    return folder


def test_refuses_to_load_next_to_a_real_torch_npu(tmp_path):
    folder = _fake_distribution(tmp_path, "2.8.0.post2")
    result = run_python(
        """
        import torch
        try:
            import npusim
        except ImportError as error:
            print("refused:", error)
        import sys
        print("torch_npu" in sys.modules, hasattr(torch, "npu"))
        """,
        {"PYTHONPATH": str(folder), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert "refused: npusim cannot run next to a real torch_npu: torch-npu 2.8.0.post2 is installed" in result.stdout
    assert "npusim stays off" in result.stdout
    assert "pip uninstall torch-npu" in result.stdout
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in result.stdout
    assert "False False" in result.stdout


def test_own_alias_distribution_is_accepted(tmp_path):
    folder = _fake_distribution(tmp_path, "2.13.0+npusim", summary="npusim alias")
    result = run_python(
        "import torch, npusim, torch_npu; print(torch_npu.npu is torch.npu)",
        {"PYTHONPATH": str(folder)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_torch_npu_with_autoload(autoload_folder):
    result = run_python(
        "import torch\nimport torch_npu\nprint(torch_npu.npu is torch.npu, torch.ones(1).npu().device)",
        autoload_folder=autoload_folder,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True npu:0"


def test_autoload_next_to_a_real_torch_npu_fails_clearly(tmp_path, autoload_folder):
    folder = _fake_distribution(tmp_path, "2.8.0")
    result = run_python("import torch", {"PYTHONPATH": str(folder)}, autoload_folder=autoload_folder)
    assert result.returncode != 0
    assert "Failed to load the backend extension: npusim" in result.stderr
    assert "npusim cannot run next to a real torch_npu: torch-npu 2.8.0 is installed" in result.stderr
