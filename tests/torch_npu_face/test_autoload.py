"""``import torch`` loads npusim through the ``torch.backends`` entry point (contract §2)."""

from npusim_testing.fresh_process import run_python


def test_import_torch_alone_gives_torch_npu(autoload_folder):
    result = run_python(
        """
        import sys
        import torch
        print("npusim" in sys.modules, hasattr(torch, "npu"), torch.npu.is_available())
        print(torch.npu.is_initialized())
        print(torch.ones(2, device="npu").device)
        """,
        autoload_folder=autoload_folder,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "True True True"
    # Loading does not start the runtime; the first tensor does.
    assert lines[1] == "False"
    assert lines[2] == "npu:0"


def test_autoload_disabled(autoload_folder):
    result = run_python(
        """
        import sys
        import torch
        print("npusim" in sys.modules, hasattr(torch, "npu"))
        import npusim
        print(torch.npu.device_count() > 0)
        """,
        {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        autoload_folder=autoload_folder,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["False False", "True"]


def test_transfer_env_value_checked(autoload_folder):
    result = run_python("import torch", {"TORCH_TRANSFER_TO_NPU": "yes"}, autoload_folder=autoload_folder)
    assert result.returncode != 0
    assert "Invalid value for TORCH_TRANSFER_TO_NPU: yes. Only '0' or '1' is supported." in result.stderr
