"""The smaller fidelity items of issue 18: channels_last contiguous, error codes in messages,
legacy torch.save (torch_npu 2.13 refuses npu storages), and fp16 binary_cross_entropy_with_logits with fp32 internal precision."""

from __future__ import annotations

import io
import zipfile

import pytest
import torch
import torch.nn.functional as F
from npusim_testing.fresh_process import run_python


def test_contiguous_only_to_the_contiguous_format():
    x = torch.randn(2, 3, 4, 5, device="npu", requires_grad=True)
    assert x.contiguous() is x
    with pytest.raises(RuntimeError, match=r"NPU contiguous operator only supported contiguous memory format\.\n.*ERR01007"):
        x.contiguous(memory_format=torch.channels_last)
    transposed = x.transpose(1, 2)
    made = transposed.contiguous()  # still differentiable
    assert made.is_contiguous() and made.grad_fn is not None
    made.sum().backward()
    assert torch.equal(x.grad.cpu(), torch.ones(2, 3, 4, 5))
    # A tensor already in channels_last is returned as it is.
    already = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last).npu()
    assert already.contiguous(memory_format=torch.channels_last) is already


def test_error_codes_in_memory_messages():
    with pytest.raises(TypeError, match=r"Invalid type for fraction argument, must be `float`\n.*ERR00002 PTA invalid type"):
        torch.npu.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match=r"Allowed range: 0~1\n.*ERR00003 PTA invalid value"):
        torch.npu.set_per_process_memory_fraction(1.5)
    with pytest.raises(TypeError, match=r"Invalid type for stream argument.*\n.*ERR00002"):
        torch.npu.caching_allocator_alloc(16, stream="s")


def test_division_rounding_mode_is_checked_with_torch_npu_error_code():
    x, y = torch.tensor(7).npu(), torch.tensor(2).npu()
    text = r"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'test'\n.*ERR01001 OPS invalid parameter"
    with pytest.raises(RuntimeError, match=text):
        torch.div(x, y, rounding_mode="test")
    with pytest.raises(RuntimeError, match=text):
        torch.div(x.float(), 2.0, rounding_mode="test")
    with pytest.raises(RuntimeError, match=text):
        x.clone().div_(y, rounding_mode="test")
    with pytest.raises(RuntimeError, match=text):
        torch.div(x, y, rounding_mode="test", out=torch.empty((), dtype=torch.long, device="npu"))
    assert torch.div(x, y, rounding_mode="floor").item() == 3
    assert torch.div(-x, y, rounding_mode="trunc").item() == -3
    assert torch.div(x, y, rounding_mode=None).item() == 3.5


def test_legacy_save_warns_once_and_refuses_npu_storages_as_torch_npu_2_13():
    result = run_python(
        """
        import io, torch, npusim
        for _ in range(2):
            buffer = io.BytesIO()
            torch.save({"w": torch.arange(4.0)}, buffer, _use_new_zipfile_serialization=False)
            buffer.seek(0)
            print(torch.load(buffer)["w"].tolist())
            try:
                torch.save({"w": torch.arange(4.0, device="npu")}, io.BytesIO(), _use_new_zipfile_serialization=False)
            except RuntimeError as error:
                print(error)
        buffer = io.BytesIO()
        torch.save({"w": torch.arange(4.0, device="npu")}, buffer)  # the zipfile format keeps npu tensors
        buffer.seek(0)
        loaded = torch.load(buffer)
        print(loaded["w"].device, loaded["w"].cpu().tolist())
        """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    warning = (
        'Warning: torch.save with "_use_new_zipfile_serialization = False" is not recommended for NPU tensors, '
        'which may cause unexpected errors. It is better to set "_use_new_zipfile_serialization = True". If it is '
        "necessary to use this, please convert the NPU tensors to CPU tensors for saving."
    )
    refused = "The npu storage desc is unavailable: the tensor's storage is not an NPUStorageImpl."
    assert lines.count(warning) == 1  # once per process
    assert [line for line in lines if line != warning] == ["[0.0, 1.0, 2.0, 3.0]", refused] * 2 + [
        "npu:0 [0.0, 1.0, 2.0, 3.0]"
    ]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_reduced_precision_bce_with_logits_uses_fp32_inside(dtype, reduction):
    generator = torch.Generator().manual_seed(0)
    logits = (torch.randn(4096, generator=generator) * 8).to(dtype)
    target = torch.rand(4096, generator=generator).to(dtype)
    weight = torch.rand(4096, generator=generator).to(dtype)
    pos_weight = (torch.rand(4096, generator=generator) * 3).to(dtype)
    expected = F.binary_cross_entropy_with_logits(
        logits.float(), target.float(), weight=weight.float(), pos_weight=pos_weight.float(), reduction=reduction
    ).to(dtype)
    result = F.binary_cross_entropy_with_logits(
        logits.npu(), target.npu(), weight=weight.npu(), pos_weight=pos_weight.npu(), reduction=reduction
    )
    assert result.dtype == dtype and torch.equal(result.cpu(), expected)
    if reduction == "none":
        # PyTorch's CPU composite rounds each step in reduced precision: it differs.
        assert not torch.equal(
            F.binary_cross_entropy_with_logits(logits, target, weight=weight, pos_weight=pos_weight, reduction=reduction),
            expected,
        )


def test_bce_with_logits_gradient_flows():
    logits = torch.randn(8, dtype=torch.float16, device="npu", requires_grad=True)
    F.binary_cross_entropy_with_logits(logits, torch.rand(8, device="npu").half()).backward()
    assert logits.grad.dtype == torch.float16 and torch.isfinite(logits.grad.cpu()).all()
