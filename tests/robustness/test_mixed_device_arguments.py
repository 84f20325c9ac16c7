"""Mixed-device arguments the executor must refuse as CUDA does (found by running PyTorch's
device-generic suites, common_device_type with device ``npu``, against npusim).

An out= tensor on another device is rejected, even a zero-dimensional CPU one.

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


def test_index_put_rejects_cpu_values_on_npu_self():
    # Indices may stay on the CPU (as on CUDA); the values may not.
    target = torch.zeros(5, device="npu")
    for accumulate in (False, True):
        with pytest.raises(RuntimeError, match="on the same device"):
            target.index_put_((torch.tensor([0, 1]),), torch.tensor([1.0, 2.0]), accumulate=accumulate)
    assert target.cpu().eq(0).all()


def test_index_put_rejects_cpu_self_with_npu_operands():
    target = torch.zeros(5)
    with pytest.raises(RuntimeError, match="on the same device"):
        target.index_put_((torch.tensor([0, 1], device="npu"),), torch.ones(2, device="npu"))
    assert target.eq(0).all()


def test_index_with_cpu_indices_and_scalar_values_still_allowed():
    target = torch.zeros(5, device="npu")
    indices = torch.tensor([0, 3])
    target[indices] = torch.tensor(7.0)  # a 0-dim CPU value is a scalar
    target.index_put_((indices,), torch.tensor([1.0, 2.0], device="npu"), accumulate=True)
    torch.testing.assert_close(target.cpu(), torch.tensor([8.0, 0.0, 0.0, 9.0, 0.0]))
    torch.testing.assert_close(target[indices].cpu(), torch.tensor([8.0, 9.0]))
