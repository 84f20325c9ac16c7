"""torch_npu's float64 rule applies to dtype conversions of npu tensors only (issue 10)."""

from __future__ import annotations

import warnings

import pytest
import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import run_python

CAST_WARNING = "Device do not support double dtype now, dtype cast replace with float."


def test_host_to_device_keeps_float64():
    data = torch.arange(16, dtype=torch.float64)
    assert data.npu().dtype == torch.float64
    assert data.to("npu").dtype == torch.float64
    assert data.to("npu", torch.float64).dtype == torch.float64
    assert torch.equal(data.npu().cpu(), data)


def test_factories_keep_float64():
    assert torch.zeros(3, dtype=torch.float64, device="npu").dtype == torch.float64
    assert torch.tensor([0.1], dtype=torch.float64, device="npu").item() == 0.1
    assert torch.ones(2, device="npu").to("npu", torch.float64).dtype == torch.float64


def test_set_storage_example_reads_right_values():
    ref = torch.arange(16, dtype=torch.float64).npu()
    s = torch.empty(0, dtype=torch.float64, device="npu")
    s.set_(ref.untyped_storage(), 1, size=(2, 4), stride=(8, 2))
    assert s.cpu().tolist() == [[1, 3, 5, 7], [9, 11, 13, 15]]


def test_dtype_conversion_on_npu_gives_float32_with_one_warning():
    result = run_python(
        """
        import warnings, torch, npusim
        warnings.simplefilter("always")
        x = torch.ones(3, device="npu")
        with warnings.catch_warnings(record=True) as caught:
            a = x.double(); b = x.to(torch.float64); c = x.to(dtype=torch.float64); d = x.type(torch.float64)
        print(a.dtype, b.dtype, c.dtype, d.dtype)
        print(sum("Device do not support double dtype now" in str(w.message) for w in caught))
        print(torch.ones(3, dtype=torch.float64, device="npu").to(torch.float64).dtype)
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "torch.float32 torch.float32 torch.float32 torch.float32"
    assert lines[1] == "1"
    assert lines[2] == "torch.float64"


def test_gradcheck_with_float64_inputs():
    x = torch.randn(3, 4, dtype=torch.float64).npu().requires_grad_()
    w = torch.randn(4, 2, dtype=torch.float64).npu().requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: torch.tanh(a @ b).sum(dim=0), (x, w))


def test_float64_kernels_are_placed_on_the_ai_cpu():
    npusim.reset_placement_report()
    x = torch.randn(8, 8, dtype=torch.float64, device="npu")
    torch.mm(x, x)
    torch.add(x, x)
    y = torch.randn(8, 8, device="npu")
    torch.mm(y, y)
    operators = npusim.placement_report()["operators"]
    assert operators["aten::mm"]["ai_cpu"] == 1 and operators["aten::mm"]["ai_core"] == 1
    assert operators["aten::add.Tensor"]["ai_cpu"] == 1
