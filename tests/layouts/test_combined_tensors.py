"""torch_npu.npu_change_data_ptr and npu_combine_tensors: a tensor's storage pointed into another
tensor's device memory keeps its own size, as torch_npu changes only the storage's data pointer."""

from __future__ import annotations

import gc

import pytest
import torch

import torch_npu
from torch_npu.utils import npu_combine_tensors


def test_change_data_ptr_keeps_the_storage_size_of_a_resized_storage():
    x = torch.randn(2, 2, 2, 2, device="npu")
    y = torch.randn(4, 4, device="npu")
    x_head, y_head = x.view(-1)[:4].clone(), y.view(-1)[:4].clone()
    x.untyped_storage().resize_(4 * 4)
    y.untyped_storage().resize_(4 * 4)
    combined = torch.zeros(8, device="npu")
    index = 0
    for tensor in (x, y):
        torch_npu.npu_change_data_ptr(tensor, combined, index)
        index += torch_npu.get_storage_size(tensor)
    assert torch_npu.get_storage_size(x) == torch_npu.get_storage_size(y) == 4
    assert x.untyped_storage().data_ptr() == combined.data_ptr()
    assert y.untyped_storage().data_ptr() == combined.data_ptr() + 4 * 4
    x.untyped_storage().copy_(x_head.untyped_storage())
    y.untyped_storage().copy_(y_head.untyped_storage())
    assert torch.equal(combined.cpu(), torch.cat([x_head, y_head]).cpu())


def test_change_data_ptr_checks_as_torch_npu():
    src = torch.zeros(8, device="npu")
    with pytest.raises(RuntimeError, match=r"Expect offset\(index\) equal or greater than zero, got: -1\n.*ERR00003"):
        torch_npu.npu_change_data_ptr(torch.zeros(2, device="npu"), src, -1)
    with pytest.raises(RuntimeError, match="Expect src and dst tensors having the same dtype, got: src with dtype "
                                           "Float, dst with dtype Half"):
        torch_npu.npu_change_data_ptr(torch.zeros(2, dtype=torch.half, device="npu"), src, 0)
    with pytest.raises(RuntimeError, match="Only supports src and dst tensors with dtype float32, float16 or "
                                           r"bfloat16, got: Int\n.*ERR00002"):
        torch_npu.npu_change_data_ptr(torch.zeros(2, dtype=torch.int32, device="npu"),
                                      torch.zeros(8, dtype=torch.int32, device="npu"), 0)
    # torch_npu compares index + dst bytes with src bytes.
    with pytest.raises(RuntimeError, match=r"Offsets overflow, got: offset\(index\) 1, dst storage size 8, src storage "
                                           r"size 8\n.*ERR00001"):
        torch_npu.npu_change_data_ptr(torch.zeros(8, device="npu"), src, 1)


def test_combined_tensors_share_one_buffer_that_outlives_its_name():
    parts = [torch.full((3, 2), float(i), device="npu") for i in range(3)]
    combined = npu_combine_tensors(parts)
    assert combined.numel() == 18 and combined.data_ptr() == parts[0].data_ptr()
    assert torch.equal(combined.cpu(), torch.repeat_interleave(torch.arange(3.0), 6))
    combined.mul_(2)
    assert torch.equal(parts[2].cpu(), torch.full((3, 2), 4.0))
    del combined
    gc.collect()
    parts[1].add_(1)  # the parts keep the combined memory alive
    assert torch.equal(parts[1].cpu(), torch.full((3, 2), 3.0))
