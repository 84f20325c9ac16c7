"""Legacy typed tensor and storage classes of the npu device, as torch_npu registers them:
``torch.npu.FloatTensor``, ``DoubleTensor``, ..., ``BFloat16Tensor`` and ``torch.npu.FloatStorage``,
....

As with ``torch.cuda.FloatTensor``: calling a class makes an npu tensor (``FloatTensor(2, 3)``
uninitialised, ``FloatTensor([1, 2])`` from data, ``FloatTensor(size=...)``), and
``isinstance(t, torch.npu.FloatTensor)`` is true for every float32 npu tensor. The storage
classes make typed npu storages and recognise them the same way.
"""

from __future__ import annotations

from typing import Any

import torch

from npusim._error_code import ErrCode, pta_error

__all__ = [
    "BoolTensor", "ByteTensor", "CharTensor", "ShortTensor", "IntTensor", "LongTensor",
    "HalfTensor", "BFloat16Tensor", "FloatTensor", "DoubleTensor",
    "BoolStorage", "ByteStorage", "CharStorage", "ShortStorage", "IntStorage", "LongStorage",
    "HalfStorage", "BFloat16Storage", "FloatStorage", "DoubleStorage",
]  # fmt: skip

_TYPES = {
    "Bool": torch.bool,
    "Byte": torch.uint8,
    "Char": torch.int8,
    "Short": torch.int16,
    "Int": torch.int32,
    "Long": torch.int64,
    "Half": torch.float16,
    "BFloat16": torch.bfloat16,
    "Float": torch.float32,
    "Double": torch.float64,
}


class _TensorTypeMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return (
            isinstance(instance, torch.Tensor)
            and instance.device.type == "npu"
            and instance.dtype == cls.dtype
            and instance.layout == torch.strided
        )

    def __call__(cls, *args: Any, **kwargs: Any) -> torch.Tensor:
        device = kwargs.pop("device", None)
        target = torch.device("npu") if device is None else torch.device(device)
        if target.type != "npu":
            raise RuntimeError(
                f"legacy constructor expects device type: npu but device type: {target.type} was passed"
                + pta_error(ErrCode.PARAM)
            )
        if "size" in kwargs:
            return torch.empty(tuple(kwargs.pop("size")), dtype=cls.dtype, device=target, **kwargs)
        if len(args) == 1 and isinstance(args[0], torch.Tensor):
            source = args[0]
            if source.dtype != cls.dtype or source.device.type != "npu":
                raise TypeError(f"expected {cls.__name__} (got {source.type()})" + pta_error(ErrCode.TYPE))
            return source.view_as(source)
        if len(args) == 1 and isinstance(args[0], torch.UntypedStorage):
            return torch.empty(0, dtype=cls.dtype, device=target).set_(args[0])
        if len(args) == 1 and not isinstance(args[0], (int, torch.Size)):
            return torch.tensor(args[0], dtype=cls.dtype, device=target)
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], torch.Size) else args
        return torch.empty(sizes, dtype=cls.dtype, device=target)


class _StorageTypeMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, torch.TypedStorage) and instance.device.type == "npu" and instance.dtype == cls.dtype

    def __call__(cls, *args: Any, **kwargs: Any) -> torch.TypedStorage:
        kwargs.pop("device", None)
        if len(args) == 1 and not isinstance(args[0], int):
            on_device = torch.tensor(list(args[0]), dtype=cls.dtype).to("npu")
            return torch.TypedStorage(wrap_storage=on_device.untyped_storage(), dtype=cls.dtype, _internal=True)
        return torch.TypedStorage(*args, dtype=cls.dtype, device="npu", **kwargs)


def _make(name: str, dtype: torch.dtype, meta: type, suffix: str) -> type:
    cls = meta(f"{name}{suffix}", (), {"dtype": dtype, "is_npu": True, "is_cuda": False})
    # PyTorch's Tensor.type(cls) reads the type's full name, as the C-defined legacy types carry
    # it ("torch.cuda.HalfTensor"); repr(cls) then reads <class 'torch.npu.HalfTensor'> as for them.
    cls.__name__ = cls.__qualname__ = f"torch.npu.{name}{suffix}"
    cls.__module__ = "builtins"
    return cls


for _name, _dtype in _TYPES.items():
    globals()[f"{_name}Tensor"] = _make(_name, _dtype, _TensorTypeMeta, "Tensor")
    globals()[f"{_name}Storage"] = _make(_name, _dtype, _StorageTypeMeta, "Storage")
del _name, _dtype
