"""An out= tensor on another device is rejected, even a zero-dimensional CPU one.

A zero-dimensional CPU tensor that an operator only reads is a scalar and may join npu tensors,
as on CUDA. One that it writes would receive an npu operator's result in host memory; CUDA and
torch_npu reject that with a same-device error, and so must npusim.
"""

import pytest
import torch

import npusim  # noqa: F401


def test_nonzero_rejects_zero_dim_cpu_out():
    x = torch.tensor([1.0, 0.0, 2.0], device="npu")
    out = torch.empty([], dtype=torch.long)
    with pytest.raises(RuntimeError, match="on the same device"):
        torch.nonzero(x, out=out)
    assert out.shape == torch.Size([])  # untouched


def test_binary_out_rejects_zero_dim_cpu_out():
    a = torch.ones(3, device="npu")
    with pytest.raises(RuntimeError, match="on the same device"):
        torch.add(a, a, out=torch.empty([]))


def test_inplace_on_zero_dim_cpu_self_rejected():
    target = torch.zeros([])
    with pytest.raises(RuntimeError, match="on the same device"):
        target.add_(torch.ones(3, device="npu").sum())
    assert target.item() == 0.0


def test_zero_dim_cpu_tensor_read_as_scalar_still_allowed():
    a = torch.arange(3.0, device="npu")
    result = a * torch.tensor(2.0)
    assert result.device.type == "npu"
    torch.testing.assert_close(result.cpu(), torch.tensor([0.0, 2.0, 4.0]))


def test_nonzero_out_on_npu_still_written_in_place():
    x = torch.tensor([[0, 3], [4, 0]], device="npu")
    out = torch.empty(0, dtype=torch.long, device="npu")
    result = torch.nonzero(x, out=out)
    assert result is out
    torch.testing.assert_close(out.cpu(), torch.tensor([[0, 1], [1, 0]]))
