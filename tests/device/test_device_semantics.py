"""Deterministic fill of new memory, nonzero into a CPU out, set_ without strides, back-to-back
events, .item() of an empty tensor (issue 10)."""

from __future__ import annotations

import math

import pytest
import torch

import npusim  # noqa: F401


@pytest.fixture()
def deterministic():
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)


def test_new_memory_is_filled_when_deterministic(deterministic):
    assert all(math.isnan(v) for v in torch.empty(5, device="npu").cpu().tolist())
    assert torch.empty(3, dtype=torch.int32, device="npu").cpu().tolist() == [2**31 - 1] * 3
    assert torch.empty(2, dtype=torch.int64, device="npu").cpu().tolist() == [2**63 - 1] * 2
    assert torch.empty_strided((2, 2), (1, 2), device="npu").isnan().all().item()
    assert torch.empty(2, dtype=torch.bool, device="npu").cpu().tolist() == [True, True]


def test_resize_fills_only_the_new_part(deterministic):
    t = torch.zeros(3, device="npu")
    t.resize_(6)
    values = t.cpu().tolist()
    assert values[:3] == [0.0, 0.0, 0.0] and all(math.isnan(v) for v in values[3:])


def test_no_fill_without_the_flag(deterministic):
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        t = torch.empty(4, device="npu")
        t.fill_(1.0)
        assert t.sum().item() == 4.0
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = True


def test_nonzero_into_a_cpu_out_raises():
    x = torch.tensor([0.0, 1.0, 2.0], device="npu")
    out = torch.empty(0, dtype=torch.long)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.nonzero(x, out=out)
    npu_out = torch.empty(0, dtype=torch.long, device="npu")
    torch.nonzero(x, out=npu_out)
    assert npu_out.cpu().tolist() == [[1], [2]]


def test_set_without_strides():
    ref = torch.arange(8.0).npu()
    s = torch.empty(0, device="npu")
    s.set_(ref.untyped_storage(), 2, (2, 3))
    assert s.stride() == (3, 1) and s.cpu().tolist() == [[2, 3, 4], [5, 6, 7]]
    s.set_(ref.untyped_storage(), 0, torch.Size([4]))
    assert s.cpu().tolist() == [0, 1, 2, 3]


def test_back_to_back_events_are_not_zero_apart():
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    end.record()
    end.synchronize()
    elapsed = start.elapsed_time(end)
    assert 0 < elapsed < 0.01


def test_item_of_an_empty_tensor():
    with pytest.raises(RuntimeError, match="a Tensor with 0 elements cannot be converted to Scalar"):
        torch.empty(0, device="npu").item()
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        torch.ones(2, device="npu").item()
