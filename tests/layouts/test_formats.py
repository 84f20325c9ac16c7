"""NPU storage formats: recorded per storage, data kept in ND (issue 10)."""

from __future__ import annotations

import pytest
import torch

import npusim  # noqa: F401
import torch_npu
from npusim.npu.formats import storage_format


def test_format_enum():
    assert torch_npu.Format.FRACTAL_NZ == 29 and torch_npu.Format.NC1HWC0 == 3 and torch_npu.Format.ND == 2
    assert torch_npu.Format(-1).name == "UNDEFINED"
    assert str(torch_npu.Format.NCHW) == "NCHW"


def test_base_formats_of_new_tensors():
    assert torch_npu.get_npu_format(torch.ones(2, 3, device="npu")) == torch_npu.Format.ND
    assert torch_npu.get_npu_format(torch.ones(1, 2, 3, 4, device="npu")) == torch_npu.Format.NCHW
    assert torch_npu.get_npu_format(torch.ones(1, 2, 3, 4, 5, device="npu")) == 30
    with pytest.raises(RuntimeError, match="expects an npu tensor"):
        torch_npu.get_npu_format(torch.ones(2))


def test_cast_to_nz_and_back_keeps_values():
    weight = torch.randn(40, 24).npu()
    nz = torch_npu.npu_format_cast(weight, 29)
    assert torch_npu.get_npu_format(nz) == torch_npu.Format.FRACTAL_NZ
    assert torch_npu.get_npu_format(weight) == torch_npu.Format.ND
    assert torch.equal(nz.cpu(), weight.cpu())
    assert torch_npu.npu_format_cast(nz, torch_npu.Format.FRACTAL_NZ) is nz  # already in that format
    back = torch_npu.npu_format_cast(nz, 2)
    assert torch_npu.get_npu_format(back) == 2 and torch.equal(back.cpu(), weight.cpu())
    # Computing with an NZ weight gives the ND result.
    x = torch.randn(3, 24).npu()
    assert torch.equal((x @ nz.t()).cpu(), (x @ weight.t()).cpu())
    # The recorded format and the padded storage size (40 x 24 -> 48 x 32 in 16 x 16 fractals).
    assert storage_format(nz) == (torch_npu.Format.FRACTAL_NZ, (40, 24))
    assert torch_npu.get_storage_size(nz) == 48 * 32
    assert torch_npu.get_storage_size(weight) == 40 * 24


def test_cast_tensor_overload_and_views_share_the_format():
    source = torch_npu.npu_format_cast(torch.ones(1, 16, 4, 4, device="npu"), 3)
    other = torch.randn(2, 3, 4, 4).npu()
    cast = torch_npu.npu_format_cast(other, source)  # takes source's format (5HD)
    assert torch_npu.get_npu_format(cast) == torch_npu.Format.NC1HWC0
    assert torch_npu.get_npu_format(cast[0]) == torch_npu.Format.NC1HWC0  # a view shares the storage
    assert torch_npu.get_storage_size(cast) == 2 * 16 * 4 * 4  # C padded to C0 = 16


def test_cast_in_place_and_empty_with_format():
    t = torch.randn(32, 32).npu()
    values = t.cpu()
    assert torch_npu.npu_format_cast_(t, 29) is t
    assert torch_npu.get_npu_format(t) == 29 and torch.equal(t.cpu(), values)
    torch_npu.npu_format_cast_(t, torch.ones(2, device="npu"))
    assert torch_npu.get_npu_format(t) == 2
    e = torch_npu.empty_with_format((4, 16, 8, 8), dtype=torch.float16, device="npu", acl_format=3)
    assert e.dtype == torch.float16 and torch_npu.get_npu_format(e) == 3
    assert torch_npu.get_npu_format(torch_npu.empty_with_format((2, 3), device="npu")) == 2


def test_format_cast_gradient_is_identity():
    x = torch.randn(16, 16).npu().requires_grad_()
    y = torch_npu.npu_format_cast(x, 29)
    (y * 2).sum().backward()
    assert torch.equal(x.grad.cpu(), torch.full((16, 16), 2.0))


def test_bad_formats():
    with pytest.raises(RuntimeError, match="Unsupported format: 7"):
        torch_npu.npu_format_cast(torch.ones(2, device="npu"), 7)
    with pytest.raises(RuntimeError, match="needs a 5-dimensional tensor"):
        torch_npu.npu_format_cast(torch.ones(2, 2, device="npu"), torch_npu.Format.NDC1HWC0)
    with pytest.raises(RuntimeError, match="customize_dtype is not supported by the current soc version."):
        torch_npu.npu_format_cast(torch.ones(2, 2, device="npu"), 29, customize_dtype=torch.float16)


def test_record_goes_with_the_storage():
    import gc

    from npusim.npu import formats

    before = len(formats._RECORDED)
    t = torch_npu.npu_format_cast(torch.ones(16, 16, device="npu"), 29)
    assert len(formats._RECORDED) == before + 1
    del t
    gc.collect()
    assert len(formats._RECORDED) == before
