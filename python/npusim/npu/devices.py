"""The device group of ``torch.npu``: counting, selecting and describing the simulated NPUs.

Errors about device ids (an id out of range, for example) come from the C++ runtime with
torch_npu's text and error-code suffix; this module only raises PyTorch's usual errors for
arguments of the wrong kind.

Difference from torch_npu, on purpose:

- ``utilization()`` is the share of simulated time the device was busy, in percent.
"""

from __future__ import annotations

import operator
import os
import re
import uuid as _uuid
import warnings
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error
from npusim.npu._lazy import _lazy_init

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "device",
    "device_of",
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "can_device_access_peer",
    "synchronize",
    "utilization",
]

_DEVICE_TYPE = "npu"


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    r"""The index of ``device`` (an int, ``"npu:N"`` or a ``torch.device``).

    ``None`` or a device without an index means the current device when ``optional`` is True;
    a CPU device gives -1 when ``allow_cpu`` is True.
    """
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu:
            if device.type not in (_DEVICE_TYPE, "cpu"):
                raise ValueError(f"Expected a npu or cpu device, but got: {device}")
        elif device.type != _DEVICE_TYPE:
            raise ValueError(f"Expected a npu device, but got: {device}")
        if device.type == "cpu":
            return -1
        index = device.index
    elif device is None:
        index = None
    else:
        try:
            return operator.index(device)
        except TypeError:
            raise TypeError(
                f"Expected a torch.device, a str or an int, but got: {type(device).__name__}"
            ) from None
    if index is None:
        if optional:
            return current_device()
        raise ValueError(
            f"Expected a torch.device with a specified index or an integer, but got:{device}"
        )
    return index


def is_available() -> bool:
    r"""Return whether a simulated NPU is available (at least one device is configured)."""
    return device_count() > 0


def device_count() -> int:
    r"""Return the number of NPUs available (0 when the configuration is broken)."""
    return int(_C._device_count())


def current_device() -> int:
    r"""Return the index of the currently selected device."""
    _lazy_init()
    return int(_C._get_device())


def set_device(device: int | str | torch.device) -> None:
    r"""Set the current device.

    Args:
        device (torch.device, str or int): selected device; negative values are ignored.
    """
    index = _get_device_index(device)
    if index >= 0:
        _lazy_init()
        _C._set_device(index)


class device:
    r"""Context manager that changes the selected device.

    Args:
        device (torch.device, str or int): device index to select. It's a no-op if this
            argument is a negative integer or ``None``.
    """

    def __init__(self, device: Any):
        self.idx = _get_device_index(device, optional=True) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        if self.idx < 0:
            return self
        _lazy_init()
        self.prev_idx = int(_C._exchange_device(self.idx))
        return self

    def __exit__(self, type: Any, value: Any, traceback: Any):
        if self.idx >= 0 and self.prev_idx >= 0 and self.prev_idx != self.idx:
            _C._exchange_device(self.prev_idx)
        return False


class device_of(device):
    r"""Context manager that makes the device of the given tensor or storage current.

    A no-op for a CPU object.
    """

    def __init__(self, obj: Any):
        idx = obj.get_device() if getattr(obj, "is_npu", False) else -1
        super().__init__(idx)


def synchronize(device: Any = None) -> None:
    r"""Wait for all work on all streams of an NPU to complete (the current one by default)."""
    _lazy_init()
    _C._synchronize(_get_device_index(device, optional=True))


def _check_device_id(device_id: int) -> None:
    # torch_npu checks the id in Python before asking the runtime, with this text.
    if device_id < 0 or device_id >= device_count():
        raise AssertionError("Invalid device id" + pta_error(ErrCode.VALUE))


def get_device_name(device: Any = None) -> str:
    r"""Return the SoC name of a device, e.g. ``Ascend910B2``."""
    return get_device_properties(device).name


class _NPUuuid:
    """The ``uuid`` of a device's properties: 16 bytes, shown in the usual hyphenated form."""

    __slots__ = ("bytes",)

    def __init__(self, raw: bytes):
        self.bytes = bytes(raw)

    def __str__(self) -> str:
        return str(_uuid.UUID(bytes=self.bytes))

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NPUuuid) and other.bytes == self.bytes

    def __hash__(self) -> int:
        return hash(self.bytes)


class _NPUDeviceProperties:
    """What ``torch.npu.get_device_properties`` returns: the attributes of torch_npu's class.

    As on torch_npu, only ``name``, ``total_memory``, ``L2_cache_size``, ``cube_core_num``,
    ``vector_core_num`` and ``uuid`` describe the NPU; the fields that only make sense on a CUDA
    GPU (``major``, ``minor``, ``multi_processor_count``, ``warp_size``, ...) are ``None``.
    """

    __slots__ = (
        "name",
        "total_memory",
        "cube_core_num",
        "vector_core_num",
        "L2_cache_size",
        "uuid",
        "major",
        "minor",
        "multi_processor_count",
        "warp_size",
        "gcnArchName",
        "is_integrated",
        "is_multi_gpu_board",
        "max_threads_per_multi_processor",
        "regs_per_multiprocessor",
        "shared_memory_per_block",
        "shared_memory_per_block_optin",
        "shared_memory_per_multiprocessor",
        "pci_bus_id",
        "pci_device_id",
        "pci_domain_id",
        "physical_id",
    )

    def __init__(self, raw: dict):
        self.name = str(raw["name"])
        self.total_memory = int(raw["total_memory"])
        self.cube_core_num = int(raw["cube_core_num"])
        self.vector_core_num = int(raw["vector_core_num"])
        self.L2_cache_size = int(raw["L2_cache_size"])
        self.uuid = _NPUuuid(_uuid.UUID(str(raw["uuid"])).bytes)
        for field in self.__slots__[6:-1]:
            setattr(self, field, None)
        # npusim's own: the physical device behind this logical one (ASCEND_RT_VISIBLE_DEVICES).
        self.physical_id = int(raw.get("physical_id", 0))

    def __repr__(self) -> str:
        mib = 1024 * 1024
        return (
            f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // mib}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, "
            f"uuid={self.uuid}, L2_cache_size={self.L2_cache_size // mib}MB)"
        )


def get_device_properties(device: Any = None) -> _NPUDeviceProperties:
    r"""Return the properties of a device (the current one by default)."""
    index = _get_device_index(device, optional=True)
    _check_device_id(index)
    _lazy_init()
    return _NPUDeviceProperties(_C._get_device_properties(index))


_CAPABILITY_PATTERN = re.compile(r"^(\d+)\.(\d+)$")
_CAPABILITY_NOTE = (
    "The return value of get_device_capability is only for compatibility with PyTorch and does not "
    "represent the actual capability of the NPU device."
)


def get_device_capability(device: Any = None) -> tuple[int, int] | None:
    r"""Return the ``(major, minor)`` compatibility value set by ``TORCH_NPU_DEVICE_CAPABILITY``.

    ``None`` when the variable is unset or not of the form ``major.minor``, as on torch_npu.
    The value only lets code written for CUDA run; it says nothing about the NPU, and ``device``
    has no effect.
    """
    configured = os.environ.get("TORCH_NPU_DEVICE_CAPABILITY")
    if not configured:
        warnings.warn(
            "You can set the device capability via the environment variable "
            f"TORCH_NPU_DEVICE_CAPABILITY. {_CAPABILITY_NOTE}"
        )
        return None
    match = _CAPABILITY_PATTERN.match(configured)
    if not match:
        warnings.warn(
            "torch.npu.get_device_capability can't parse TORCH_NPU_DEVICE_CAPABILITY environment "
            f"variable: {configured}. Expected format is 'major.minor' where major and minor are "
            "non-negative integers (e.g., '8.0')."
        )
        return None
    warnings.warn(_CAPABILITY_NOTE)
    return int(match.group(1)), int(match.group(2))


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    r"""Return whether ``device`` can access ``peer_device`` directly.

    All simulated NPUs of a process sit in one server (HCCS full mesh), so any two distinct
    valid devices can.
    """
    index = _get_device_index(device, optional=True)
    peer = _get_device_index(peer_device, optional=True)
    # torch_npu's texts.
    if index < 0 or index >= device_count():
        raise AssertionError("Invalid device id" + pta_error(ErrCode.VALUE))
    if peer < 0 or peer >= device_count():
        raise AssertionError("Invalid peer device id" + pta_error(ErrCode.VALUE))
    return index != peer


def utilization(device: Any = None) -> int:
    r"""Return the percentage of simulated time during which the device was busy."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    info = _C._timeline_info(index)
    elapsed = max(int(info.get("host_ns", 0)), int(info.get("device_ns", 0)))
    if elapsed <= 0:
        return 0
    return int(round(100.0 * min(int(info.get("busy_ns", 0)), elapsed) / elapsed))
