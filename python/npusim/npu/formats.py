"""NPU storage formats: ``torch_npu.Format``, ``npu_format_cast`` (and ``_``), ``get_npu_format``,
``empty_with_format``, ``get_storage_size``, ``npu_change_data_ptr``.

On the chip a storage can hold its data in a private layout (FRACTAL_NZ for matmul weights,
NC1HWC0 for convolution activations); TransData kernels convert. npusim keeps every tensor's
data in the base (ND) layout, so results are exact, and records the format torch_npu would have
given each **storage** (as torch_npu keeps it in the storage descriptor): code that casts to NZ
or 5HD and back runs unchanged, ``get_npu_format`` answers what the real stack would, and
:func:`storage_format` exposes the record so that the cost model can price the TransData a
real cast would run.
"""

from __future__ import annotations

import enum
import math
import weakref
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error

__all__ = [
    "Format",
    "npu_format_cast",
    "npu_format_cast_",
    "get_npu_format",
    "empty_with_format",
    "get_storage_size",
    "npu_change_data_ptr",
    "storage_format",
]


class Format(enum.IntEnum):
    """The ACL storage formats (``aclFormat``) as ``torch_npu.Format`` lists them."""

    UNDEFINED = -1
    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1HWC0_C04 = 12
    HWCN = 16
    NDHWC = 27
    FRACTAL_NZ = 29
    NCDHW = 30
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33
    NC = 35
    NCL = 47
    FRACTAL_NZ_C0_16 = 50
    FRACTAL_NZ_C0_32 = 51
    FRACTAL_NZ_C0_2 = 52
    FRACTAL_NZ_C0_4 = 53
    FRACTAL_NZ_C0_8 = 54

    def __str__(self) -> str:
        return self.name


_BASE_FORMATS = {Format.ND, Format.NCHW, Format.NHWC, Format.NCDHW, Format.NDHWC, Format.NC, Format.NCL}
# The base format that a private format stands on (torch_npu FormatHelper).
_BASE_OF = {
    Format.NC1HWC0: Format.NCHW,
    Format.NC1HWC0_C04: Format.NCHW,
    Format.FRACTAL_Z: Format.NCHW,
    Format.FRACTAL_NZ: Format.ND,
    Format.FRACTAL_NZ_C0_16: Format.ND,
    Format.FRACTAL_NZ_C0_32: Format.ND,
    Format.FRACTAL_NZ_C0_2: Format.ND,
    Format.FRACTAL_NZ_C0_4: Format.ND,
    Format.FRACTAL_NZ_C0_8: Format.ND,
    Format.NDC1HWC0: Format.NCDHW,
    Format.FRACTAL_Z_3D: Format.NCDHW,
}

# Recorded formats by StorageImpl (its address); the entry goes when the storage dies. A
# storage keeps its Python object while it lives, so the finalizer runs exactly then.
_RECORDED: dict[int, tuple[Format, tuple[int, ...]]] = {}


def _guess_base_format(dim: int) -> Format:
    """torch_npu's base format for a new tensor of ``dim`` dimensions."""
    if dim == 4:
        return Format.NCHW
    if dim == 5:
        return Format.NCDHW
    return Format.ND


def _check_npu(tensor: Any, name: str) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} expects a torch.Tensor, but got {type(tensor)}" + pta_error(ErrCode.TYPE))
    if tensor.device.type != "npu":
        raise RuntimeError(
            f"{name} expects an npu tensor, but got a tensor on {tensor.device}" + pta_error(ErrCode.PARAM)
        )


def _as_format(acl_format: Any) -> Format:
    try:
        return Format(int(acl_format))
    except (TypeError, ValueError):
        raise RuntimeError(f"Unsupported format: {acl_format}" + pta_error(ErrCode.PARAM)) from None


def _record(tensor: torch.Tensor, fmt: Format, shape: tuple[int, ...] | None = None) -> None:
    storage = tensor.untyped_storage()
    key = storage._cdata
    if key not in _RECORDED:
        weakref.finalize(storage, _RECORDED.pop, key, None)
    _RECORDED[key] = (fmt, tuple(tensor.shape) if shape is None else tuple(shape))


def _copy_record(source: torch.Tensor, target: torch.Tensor) -> None:
    """``target``'s storage takes the format record of ``source``'s (a copy of the storage)."""
    recorded = storage_format(source)
    if recorded is not None:
        _record(target, recorded[0], recorded[1])


# ---------------------------------------------------------------------------------------------
# The format in torch.save / torch.load and deepcopy

# torch_npu's names of the formats in a checkpoint (FormatHelper::GetFormatName, FORMAT_INFO).
def _format_name(fmt: Format) -> str:
    return fmt.name


def _serialization_entries(tensor: torch.Tensor) -> list[str]:
    """The keys torch_npu writes into an npu tensor's metadata (all set to True): the base sizes,
    base strides and storage sizes of its storage, its origin (base) format and NPU format, as
    ``name/value/.../``. torch.load restores the format from them."""
    from torch._subclasses.fake_tensor import is_fake
    from torch._subclasses.functional_tensor import FunctionalTensor

    if is_fake(tensor) or isinstance(tensor, FunctionalTensor):
        return []  # traced (Inductor's graph repro reads metadata): no storage, no format
    storage = tensor.untyped_storage()
    if storage.data_ptr() == 0:
        return []
    fmt = get_npu_format(tensor)
    recorded = storage_format(tensor)
    base = tuple(recorded[1]) if recorded is not None else tuple(tensor.shape)
    strides, step = [], 1
    for size in reversed(base):
        strides.insert(0, step)
        step *= size

    def vector(name: str, values) -> str:
        return name + "".join(f"/{int(v)}" for v in values) + "/"

    origin = _BASE_OF.get(fmt, fmt)
    return [
        vector("base_sizes_", base),
        vector("base_strides_", strides),
        vector("storage_sizes_", base),
        f"origin_format_/{_format_name(origin)}",
        f"npu_format_/{_format_name(fmt)}",
    ]


def _restore_serialized_format(tensor: torch.Tensor, keys: list[str]) -> None:
    """torch.load: the loaded npu tensor takes the NPU format its metadata names."""
    for key in keys:
        if key.startswith("npu_format_/"):
            name = key[len("npu_format_/"):]
            if name in Format.__members__ and tensor.device.type == "npu":
                requires_grad = tensor.requires_grad
                if tensor.is_leaf and requires_grad:
                    tensor.requires_grad_(False)  # the cast is an operator on a leaf
                try:
                    npu_format_cast_(tensor, Format[name])
                finally:
                    if tensor.is_leaf and requires_grad:
                        tensor.requires_grad_(True)
            return


def _install_storage_deepcopy() -> None:
    """``copy.deepcopy`` of an npu tensor keeps its storage format (torch_npu patches
    TypedStorage._deepcopy so)."""
    original = torch.storage.TypedStorage._deepcopy
    if getattr(original, "_npusim_keeps_format", False):
        return

    def _deepcopy(self, memo):
        copied = original(self, memo)
        if self.device.type == "npu":
            key = self._untyped_storage._cdata
            if key in _RECORDED:
                storage = copied._untyped_storage
                if storage._cdata not in _RECORDED:
                    weakref.finalize(storage, _RECORDED.pop, storage._cdata, None)
                _RECORDED[storage._cdata] = _RECORDED[key]
        return copied

    _deepcopy._npusim_keeps_format = True
    torch.storage.TypedStorage._deepcopy = _deepcopy


def storage_format(tensor: torch.Tensor) -> tuple[Format, tuple[int, ...]] | None:
    """The recorded (format, shape at the cast) of the tensor's storage, or None for a storage
    in its base format. For the cost model: a kernel reading such a storage on the real chip
    may first run a TransData."""
    return _RECORDED.get(tensor.untyped_storage()._cdata)


def get_npu_format(tensor: torch.Tensor) -> Format:
    r"""The NPU storage format of an npu tensor (``torch_npu.Format``)."""
    _check_npu(tensor, "get_npu_format")
    recorded = storage_format(tensor)
    if recorded is not None:
        return recorded[0]
    return _guess_base_format(tensor.dim())


def _storage_elements(shape: tuple[int, ...], fmt: Format, dtype: torch.dtype) -> int:
    """Elements the chip stores for ``shape`` in ``fmt``, padding included."""
    numel = math.prod(shape)
    if fmt in _BASE_FORMATS or fmt == Format.UNDEFINED or numel == 0:
        return numel
    cube = 32 if dtype in (torch.int8, torch.uint8) else 16
    dims = list(shape)
    if fmt in (Format.NC1HWC0, Format.NC1HWC0_C04, Format.NDC1HWC0, Format.FRACTAL_Z, Format.FRACTAL_Z_3D):
        while len(dims) < 4:
            dims.insert(0, 1)
        n, c = dims[0], dims[1]
        rest = math.prod(dims[2:])
        c0 = 4 if fmt == Format.NC1HWC0_C04 else cube
        padded_c = -(-c // c0) * c0
        if fmt in (Format.FRACTAL_Z, Format.FRACTAL_Z_3D):
            return -(-n // 16) * 16 * padded_c * rest
        return n * padded_c * rest
    # FRACTAL_NZ: the last two dimensions padded to the fractal (16 x C0).
    if len(dims) < 2:
        dims.insert(0, 1)
    c0 = {
        Format.FRACTAL_NZ_C0_2: 2,
        Format.FRACTAL_NZ_C0_4: 4,
        Format.FRACTAL_NZ_C0_8: 8,
        Format.FRACTAL_NZ_C0_16: 16,
        Format.FRACTAL_NZ_C0_32: 32,
    }.get(fmt, cube)
    batch = math.prod(dims[:-2])
    return batch * (-(-dims[-2] // 16) * 16) * (-(-dims[-1] // c0) * c0)


def get_storage_size(tensor: torch.Tensor) -> int:
    r"""Elements of the tensor's NPU storage (for a private format, with its padding)."""
    _check_npu(tensor, "get_storage_size")
    recorded = storage_format(tensor)
    if recorded is None:
        return tensor.untyped_storage().nbytes() // tensor.element_size()
    fmt, shape = recorded
    return _storage_elements(shape, fmt, tensor.dtype)


def _check_castable(tensor: torch.Tensor, fmt: Format) -> None:
    if fmt == Format.UNDEFINED:
        raise RuntimeError("Unsupported format: UNDEFINED" + pta_error(ErrCode.PARAM))
    base = _BASE_OF.get(fmt)
    if base in (Format.NCHW,) and tensor.dim() > 4:
        raise RuntimeError(
            f"format {fmt.name} needs a tensor of at most 4 dimensions, but got {tensor.dim()}"
            + pta_error(ErrCode.PARAM)
        )
    if base == Format.NCDHW and tensor.dim() != 5:
        raise RuntimeError(
            f"format {fmt.name} needs a 5-dimensional tensor, but got {tensor.dim()}" + pta_error(ErrCode.PARAM)
        )


class _FormatCast(torch.autograd.Function):
    """The gradient of a format cast is the gradient itself (torch_npu's derivative)."""

    @staticmethod
    def forward(ctx, tensor, fmt):
        result = tensor.clone()
        _record(result, fmt)
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def npu_format_cast(
    tensor: torch.Tensor, acl_format: Any, *, customize_dtype: Any = None, input_dtype: Any = None
) -> torch.Tensor:
    r"""The tensor in NPU storage format ``acl_format`` (an int, a ``Format`` or a tensor whose
    format to take). Returns ``tensor`` itself when it is already in that format."""
    _check_npu(tensor, "npu_format_cast")
    if isinstance(acl_format, torch.Tensor):
        acl_format = get_npu_format(acl_format)
    fmt = _as_format(acl_format)
    if customize_dtype is not None:
        raise RuntimeError("customize_dtype is not supported by the current soc version." + pta_error(ErrCode.NOT_SUPPORT))
    if fmt == Format.FRACTAL_NZ and get_npu_format(tensor) == Format.ND and _base_rank(tensor) < 2:
        # A scalar or a 1-D storage has no NZ form: torch_npu keeps it ND (CANN 9.1's cast on
        # 910B/910C, as the aclop path did).
        fmt = Format.ND
    if get_npu_format(tensor) == fmt:
        return tensor
    _check_castable(tensor, fmt)
    if fmt in _BASE_FORMATS and get_npu_format(tensor) in _BASE_FORMATS:
        # Base to base only relabels the storage descriptor, in place (no data movement).
        _record(tensor, fmt)
        return tensor
    return _FormatCast.apply(tensor, fmt)


def _base_rank(tensor: torch.Tensor) -> int:
    """The rank of the shape the tensor's storage was made for (torch_npu's base_sizes_)."""
    recorded = storage_format(tensor)
    return len(recorded[1]) if recorded is not None else tensor.dim()


def npu_format_cast_(tensor: torch.Tensor, src: Any, **kwargs: Any) -> torch.Tensor:
    r"""In place: the tensor's storage takes the format ``src`` (int, ``Format`` or tensor)."""
    _check_npu(tensor, "npu_format_cast_")
    if isinstance(src, torch.Tensor):
        src = get_npu_format(src)
    fmt = _as_format(src)
    if get_npu_format(tensor) == fmt:
        return tensor
    _check_castable(tensor, fmt)
    if fmt in _BASE_FORMATS and get_npu_format(tensor) in _BASE_FORMATS:
        _record(tensor, fmt)  # relabels the storage descriptor
        return tensor
    if fmt in _BASE_FORMATS:
        # From a private format back to a base one: the data is already in base layout here.
        _record(tensor, fmt)
        return tensor
    if tensor.untyped_storage().nbytes() != tensor.numel() * tensor.element_size() or not tensor.is_contiguous():
        # A private format describes a whole storage: the tensor gets its own.
        with torch.no_grad():
            tensor.set_(tensor.contiguous().clone())
    _record(tensor, fmt)
    return tensor


def empty_with_format(
    size: Any,
    *,
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: Any = None,
    pin_memory: bool | None = None,
    acl_format: int = 2,
    base_addr_aligned_kb: int | None = None,
) -> torch.Tensor:
    r"""An uninitialised npu tensor whose storage is in ``acl_format``."""
    fmt = _as_format(acl_format)
    if device is None:
        device = torch.device("npu")
    result = torch.empty(tuple(size), dtype=dtype, layout=layout or torch.strided, device=device,
                         pin_memory=bool(pin_memory))
    if result.device.type != "npu":
        raise RuntimeError(f"empty_with_format expects an npu device, but got {result.device}" + pta_error(ErrCode.PARAM))
    _check_castable(result, fmt)
    if fmt not in _BASE_FORMATS:
        _record(result, fmt)
    return result


_COMBINABLE_DTYPES = (torch.float16, torch.float32, torch.bfloat16)


def npu_change_data_ptr(dst: torch.Tensor, src: torch.Tensor, index: int) -> int:
    r"""Make ``dst``'s storage use ``src``'s device memory from element ``index`` on
    (``npu_combine_tensors``). ``dst`` keeps its storage size and shape; its former memory is
    freed. As in torch_npu, ``index`` counts elements and the bounds check compares
    ``index + bytes of dst's storage`` with the bytes of ``src``'s storage."""
    _check_npu(dst, "npu_change_data_ptr")
    _check_npu(src, "npu_change_data_ptr")
    if index < 0:
        raise RuntimeError(f"Expect offset(index) equal or greater than zero, got: {index}" + pta_error(ErrCode.VALUE))
    if src.dtype != dst.dtype:
        raise RuntimeError(
            f"Expect src and dst tensors having the same dtype, got: src with dtype {_scalar_type_name(src.dtype)}, "
            f"dst with dtype {_scalar_type_name(dst.dtype)}" + pta_error(ErrCode.TYPE)
        )
    if src.dtype not in _COMBINABLE_DTYPES:
        raise RuntimeError(
            "Only supports src and dst tensors with dtype float32, float16 or bfloat16, got: "
            f"{_scalar_type_name(src.dtype)}" + pta_error(ErrCode.TYPE)
        )
    dst_size = get_storage_size(dst)
    src_size = get_storage_size(src)
    if index + dst_size * dst.element_size() > src_size * src.element_size():
        raise RuntimeError(
            f"Offsets overflow, got: offset(index) {index}, dst storage size {dst_size}, src storage size {src_size}"
            + pta_error(ErrCode.PARAM)
        )
    _C._redirect_storage(dst, src, index * src.element_size())
    return 0


def _scalar_type_name(dtype: torch.dtype) -> str:
    """c10's ScalarType name of ``dtype`` (Float, Half, BFloat16), as torch_npu prints it."""
    return {torch.float32: "Float", torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float64: "Double",
            torch.int32: "Int", torch.int64: "Long", torch.int8: "Char", torch.uint8: "Byte", torch.int16: "Short",
            torch.bool: "Bool"}.get(dtype, str(dtype).removeprefix("torch."))
