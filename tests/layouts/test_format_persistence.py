"""The NPU storage format across torch.save / torch.load, copy.deepcopy and weak references, the
base-format relabel, and torch_npu's rule that a scalar or 1-D storage has no NZ form."""

from __future__ import annotations

import copy

import pytest
import torch

import torch_npu
from torch_npu import Format


@pytest.fixture(autouse=True)
def internal_format():
    torch_npu.npu.config.allow_internal_format = True
    yield


@pytest.mark.parametrize("fmt", [Format.NCHW, Format.ND, Format.NC1HWC0, Format.FRACTAL_NZ, Format.FRACTAL_Z])
def test_format_survives_save_and_load(tmp_path, fmt):
    x = torch_npu.npu_format_cast(torch.randn(2, 3, 8, 8).npu(), fmt)
    assert torch_npu.get_npu_format(x) == fmt
    torch.save({"x": x}, tmp_path / "x.pt")
    loaded = torch.load(tmp_path / "x.pt")["x"]
    assert torch_npu.get_npu_format(loaded) == fmt
    assert torch.equal(loaded.cpu(), x.cpu())


def test_checkpoint_metadata_has_torch_npu_keys():
    x = torch_npu.npu_format_cast(torch.randn(2, 3, 4, 4).npu(), Format.NC1HWC0)
    metadata = torch._utils.get_tensor_metadata(x)
    assert metadata["npu_format_/NC1HWC0"] and metadata["origin_format_/NCHW"]
    assert metadata["base_sizes_/2/3/4/4/"] and metadata["base_strides_/48/16/4/1/"]


def test_deepcopy_keeps_the_format_and_copies_the_memory():
    x = torch_npu.npu_format_cast(torch.rand(3, 3).npu(), Format.FRACTAL_NZ)
    y = copy.deepcopy(x)
    assert torch_npu.get_npu_format(y) == Format.FRACTAL_NZ
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert torch.equal(x.cpu(), y.cpu())


def test_base_formats_relabel_in_place_and_one_dimensional_nz_stays_nd():
    x = torch.randn(2, 3, 4, 5).npu()
    assert torch_npu.get_npu_format(x) == Format.NCHW
    assert torch_npu.npu_format_cast(x, Format.ND) is x and torch_npu.get_npu_format(x) == Format.ND
    vector = torch.randn(7).npu()
    assert torch_npu.get_npu_format(torch_npu.npu_format_cast(vector, Format.FRACTAL_NZ)) == Format.ND
    scalar = torch.tensor(1.0).npu()
    assert torch_npu.get_npu_format(torch_npu.npu_format_cast(scalar, Format.FRACTAL_NZ)) == Format.ND
    matrix = torch.randn(3, 5).npu()
    assert torch_npu.get_npu_format(torch_npu.npu_format_cast(matrix, Format.FRACTAL_NZ)) == Format.FRACTAL_NZ


def test_weak_ref_tensor_shares_memory_geometry_and_format():
    x = torch_npu.npu_format_cast(torch.ones(4, 4).npu(), Format.FRACTAL_NZ)
    weak = torch_npu._C._weak_ref_tensor(x)
    assert weak.data_ptr() == x.data_ptr() and torch_npu.get_npu_format(weak) == Format.FRACTAL_NZ
    base = torch.arange(64.0).npu()
    view = base.as_strided((2, 3), (8, 2), 5)
    weak_view = torch_npu._C._weak_ref_tensor(view)
    assert (weak_view.shape, weak_view.stride(), weak_view.storage_offset()) == ((2, 3), (8, 2), 5)
    assert weak_view.untyped_storage().nbytes() == base.untyped_storage().nbytes()
    assert torch.equal(weak_view.cpu(), view.cpu())
    base.add_(1)  # the same memory
    assert torch.equal(weak_view.cpu(), view.cpu())
