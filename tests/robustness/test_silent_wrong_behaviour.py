"""Cases that computed silently on npu where PyTorch or torch_npu raise."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import npusim  # noqa: F401

from robustness_support import child_environment

OVERLAP = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location"


@pytest.mark.parametrize("device", ["cpu", "npu"])
def test_copy_from_transposed_self_raises_overlap(device):
    x = torch.arange(9.0, device=device).reshape(3, 3)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        x.copy_(x.t())


@pytest.mark.parametrize("device", ["cpu", "npu"])
def test_shifted_slice_assignment_raises_overlap(device):
    x = torch.arange(6.0, device=device)
    with pytest.raises(RuntimeError) as error:
        x[1:] = x[:-1]
    assert OVERLAP in str(error.value)
    assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_copies_between_disjoint_views_still_work():
    x = torch.arange(6.0, device="npu")
    x[:3] = x[3:]
    assert x.cpu().tolist() == [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]
    y = torch.arange(4.0, device="npu")
    y.copy_(y)  # the same tensor: nothing to do, as on the CPU
    assert y.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_bad_set_rng_state_does_not_poison_initialization():
    code = r"""
import torch, npusim
try:
    torch.npu.set_rng_state(torch.zeros(3, dtype=torch.float32))
    print("accepted")
except TypeError as e:
    print("refused:", "ByteTensor" in str(e))
try:
    torch.npu.set_rng_state(torch.zeros(3, dtype=torch.uint8))  # wrong size: fails at init
except Exception as e:
    print("queued error:", type(e).__name__)
for attempt in range(2):
    try:
        print("works", torch.ones(2, device="npu").sum().item())
    except Exception as e:
        print("failed", type(e).__name__)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], env=child_environment(), capture_output=True, text=True, timeout=60
    )
    assert "refused: True" in result.stdout, result.stdout + result.stderr
    # The bad state fails once (at initialization, or at once), then the device works.
    assert result.stdout.count("works 2.0") >= 1, result.stdout + result.stderr
    assert result.stdout.strip().endswith("works 2.0"), result.stdout + result.stderr


def test_npusim_run_refuses_non_positive_steps(tmp_path):
    script = tmp_path / "p.py"
    script.write_text("print('ran')\n")
    for steps in ("-1", "0", "x"):
        result = subprocess.run(
            [sys.executable, "-m", "npusim", "run", "--steps", steps, str(script)],
            env=child_environment(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, (steps, result.stdout, result.stderr)
        assert "--steps" in result.stderr and "ran" not in result.stdout


def test_conv2d_with_cpu_weight_raises_device_mismatch():
    x = torch.randn(1, 3, 8, 8, device="npu")
    # torch_npu's words for a CPU tensor among an npu operator's tensors (op-plugin's aclnn conversion).
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device. Expected NPU tensor, "
                       "please check whether the input tensor device is correct.[\\s\\S]*ERR01002 OPS invalid type"):
        torch.nn.functional.conv2d(x, torch.randn(4, 3, 3, 3))
    assert torch.nn.functional.conv2d(x, torch.randn(4, 3, 3, 3, device="npu")).device.type == "npu"


def test_set_storage_of_another_npu_raises():
    if torch.npu.device_count() < 2:
        pytest.skip("needs two simulated devices")
    x = torch.zeros(4, device="npu:0")
    with pytest.raises(RuntimeError, match='to a storage on different device "npu:1"'):
        x.set_(torch.ones(4, device="npu:1").untyped_storage())
    x.set_(torch.ones(4, device="npu:0").untyped_storage())
    assert x.cpu().tolist() == [1.0, 1.0, 1.0, 1.0]
