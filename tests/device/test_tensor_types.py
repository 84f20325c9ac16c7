"""Legacy typed tensor and storage classes of torch.npu (issue 10)."""

from __future__ import annotations

import pytest
import torch

import npusim  # noqa: F401


@pytest.mark.parametrize(
    "name, dtype",
    [("Float", torch.float32), ("Double", torch.float64), ("Half", torch.float16), ("BFloat16", torch.bfloat16),
     ("Bool", torch.bool), ("Byte", torch.uint8), ("Char", torch.int8), ("Short", torch.int16),
     ("Int", torch.int32), ("Long", torch.int64)],
)
def test_tensor_types(name, dtype):
    cls = getattr(torch.npu, f"{name}Tensor")
    t = cls(2, 3)
    assert t.shape == (2, 3) and t.dtype == dtype and t.device.type == "npu"
    assert isinstance(t, cls)
    assert not isinstance(t.cpu(), cls)
    assert cls.dtype == dtype and cls.is_npu
    storage_cls = getattr(torch.npu, f"{name}Storage")
    storage = storage_cls(4)
    assert isinstance(storage, storage_cls) and storage.device.type == "npu" and storage.dtype == dtype
    assert len(storage) == 4


def test_constructors_from_data_and_size():
    assert torch.npu.FloatTensor([1, 2]).cpu().tolist() == [1.0, 2.0]
    assert torch.npu.LongTensor(torch.Size([3])).shape == (3,)
    assert torch.npu.IntTensor(size=(2, 2)).dtype == torch.int32
    assert not isinstance(torch.ones(2, device="npu"), torch.npu.DoubleTensor)
    assert torch.npu.FloatStorage([1, 2, 3]).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: npu"):
        torch.npu.FloatTensor(2, device="cpu")
    import torch_npu

    assert torch_npu.npu.FloatTensor is torch.npu.FloatTensor


def test_type_names_and_conversion():
    t = torch.ones(2, device="npu")
    assert t.type() == "torch.npu.FloatTensor"
    assert repr(torch.npu.HalfTensor) == "<class 'torch.npu.HalfTensor'>"
    half = t.type(torch.npu.HalfTensor)
    assert half.dtype == torch.float16 and half.device.type == "npu"
    moved = torch.ones(2, dtype=torch.int32).type(torch.npu.LongTensor)
    assert moved.dtype == torch.int64 and moved.device.type == "npu"
    assert t.type("torch.npu.BFloat16Tensor").dtype == torch.bfloat16
