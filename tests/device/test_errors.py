"""torch_npu's error texts: bad device ids, out of memory, fork (contract §2, §6.4, §6.5)."""

import pytest
import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import run_python


def test_set_device_out_of_range():
    before = torch.npu.current_device()
    with pytest.raises(RuntimeError) as caught:
        torch.npu.set_device(99)
    message = str(caught.value)
    assert "107001" in message
    # torch_npu's table (NPUErrorCodes.h): the text, then what to check on an indented line.
    assert "[Error]: Invalid device ID.\n        Check whether the device ID is valid." in message
    assert "ERR00100 PTA call acl api failed" in message
    # The device state stays usable.
    assert torch.npu.current_device() == before
    assert torch.ones(1, device="npu").is_npu


def test_tensor_on_missing_device():
    with pytest.raises(RuntimeError, match="107001"):
        torch.ones(1, device="npu:99")


def test_out_of_memory_and_recovery():
    result = run_python(
        """
        import torch, npusim
        big = torch.empty(600 * 2**20, dtype=torch.uint8, device="npu")
        try:
            torch.empty(600 * 2**20, dtype=torch.uint8, device="npu")
        except torch.OutOfMemoryError as error:
            print("OOM:", str(error).split("\\n")[0])
        print(torch.npu.memory_stats()["num_ooms"])
        del big
        again = torch.empty(600 * 2**20, dtype=torch.uint8, device="npu")
        print("continued", again.numel())
        """,
        {"NPUSIM_HBM_SIZE": "1G"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0].startswith("OOM: NPU out of memory. Tried to allocate")
    assert "(NPU 0;" in lines[0]
    assert lines[1] == "1"
    assert lines[2] == f"continued {600 * 2**20}"


def test_fork_after_initialization():
    result = run_python(
        """
        import os, torch, npusim
        torch.zeros(1, device="npu")
        pid = os.fork()
        if pid == 0:
            try:
                torch.zeros(1, device="npu")
                print("child: no error")
            except RuntimeError as error:
                print("child:", error)
            print("child initialized:", torch.npu.is_initialized(), torch.npu._is_in_bad_fork())
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent:", torch.zeros(1, device="npu").device)
        """
    )
    assert result.returncode == 0, result.stderr
    assert (
        "child: Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, "
        "you must use the 'spawn' start method" in result.stdout
    )
    assert "child initialized: False True" in result.stdout
    assert "parent: npu:0" in result.stdout


def test_fork_before_initialization_is_fine():
    result = run_python(
        """
        import os, torch, npusim
        pid = os.fork()
        if pid == 0:
            print("child:", torch.zeros(1, device="npu").device)
            os._exit(0)
        os.waitpid(pid, 0)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "child: npu:0" in result.stdout


def test_accelerator_conflict_text(monkeypatch):
    monkeypatch.setattr(torch._C, "_get_accelerator", lambda: torch.device("cuda"))
    with pytest.raises(RuntimeError) as caught:
        npusim._check_device_conflict()
    message = str(caught.value)
    assert message.startswith(
        "Two accelerators cannot be used at the same time in PyTorch: npu and cuda. You can install the cpu "
        "version of PyTorch to use your npu device, or use the cuda device with "
        "'export TORCH_DEVICE_BACKEND_AUTOLOAD=0'."
    )
    assert "ERR00007 PTA feature not supported" in message


def test_error_suffix_format():
    from npusim._error_code import ErrCode, SubModule, error_suffix

    suffix = error_suffix(SubModule.PTA, ErrCode.NOT_SUPPORT)
    assert suffix.startswith("\n[ERROR] ")
    assert suffix.endswith(") ERR00007 PTA feature not supported")
    assert "(PID:" in suffix and "RankID:-1" in suffix
