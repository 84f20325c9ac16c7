"""``torch_npu.npu._recovery``: recovery from device faults, as torch_npu does it.

After a device fault (an uncorrectable memory error, a task that had to be aborted) the data in
device memory can no longer be trusted. torch_npu lets a training job carry on without a restart:

- ``stop_device(d)`` aborts the device's tasks; every later task on it fails with
  ``FORCE STOP.`` until ``restart_device(d)``;
- ``restart_device(d, rebuild_all_resources=True)`` marks every live allocation unsafe and turns
  the unsafe-data check on, so that an operator fed with data from before the fault raises
  ``There is unsafe data in the input tensor.``; memory allocated anew, or overwritten by a
  copy, is safe again (``update_npu_tensor_to_safe`` marks it by hand).

The marks live in the caching allocator's blocks (csrc/runtime/CachingAllocator) and the states
in csrc/runtime/DeviceRecovery, as on torch_npu; the simulated device itself never faults, so
``check_uce_in_memory`` finds no uncorrectable error (0) unless a program stops a device itself.
"""

from __future__ import annotations

import logging

import torch

from npusim import _C
from npusim._error_code import ErrCode, _except_handler, pta_error
from npusim.npu._lazy import _lazy_init

__all__ = [
    "check_npu_storage_is_safe",
    "check_npu_tensor_is_safe",
    "mark_all_npu_tensor_unsafe",
    "update_npu_storage_to_safe",
    "update_npu_tensor_to_safe",
    "set_npu_tensor_unsafe_check_flag",
    "get_npu_tensor_unsafe_check_flag",
    "restart_device",
    "stop_device",
]

# The watchdog states torch_npu's ProcessGroupHCCL takes from restart_device / stop_device.
WATCHDOG_STATUS_RUN = 1
WATCHDOG_STATUS_STOP = 2
logger = logging.getLogger("torch_npu.recovery")

_STORAGE_TYPES = (torch.storage.TypedStorage, torch.storage.UntypedStorage)


def _untyped(storage_obj):
    if isinstance(storage_obj, torch.storage.TypedStorage):
        return storage_obj._untyped_storage
    return storage_obj


def _require_storage(storage_obj) -> None:
    if not isinstance(storage_obj, _STORAGE_TYPES):
        raise RuntimeError(
            f"param type should be TypedStorage or UntypedStorage, could not be {type(storage_obj)}"
            + pta_error(ErrCode.TYPE)
        )


def _require_tensor(tensor_obj) -> None:
    if not isinstance(tensor_obj, torch.Tensor):
        raise RuntimeError(f"param type should be Tensor, could not be {type(tensor_obj)}" + pta_error(ErrCode.TYPE))


def _storage_data_is_safe(storage_obj) -> bool:
    storage = _untyped(storage_obj)
    if storage.device.type != "npu" or storage.data_ptr() == 0:
        return True  # memory the NPU caching allocator did not hand out is never marked
    return bool(_C._npu_data_is_safe(storage.device.index, storage.data_ptr()))


def check_npu_storage_is_safe(storage_obj) -> bool:
    _require_storage(storage_obj)
    return _storage_data_is_safe(storage_obj)


def check_npu_tensor_is_safe(tensor_obj) -> bool:
    _require_tensor(tensor_obj)
    return _storage_data_is_safe(tensor_obj.untyped_storage())


def mark_all_npu_tensor_unsafe(device: int) -> None:
    _lazy_init()
    _C._mark_all_npu_data_unsafe(int(device))


def update_npu_storage_to_safe(storage_obj) -> None:
    _require_storage(storage_obj)
    storage = _untyped(storage_obj)
    if storage.device.type == "npu" and storage.data_ptr() != 0:
        _C._mark_npu_data_safe(storage.device.index, storage.data_ptr())


def update_npu_tensor_to_safe(tensor_obj) -> None:
    _require_tensor(tensor_obj)
    update_npu_storage_to_safe(tensor_obj.untyped_storage())


def set_npu_tensor_unsafe_check_flag(flag: bool) -> None:
    _C._set_npu_data_unsafe_flag(bool(flag))


def get_npu_tensor_unsafe_check_flag() -> bool:
    return bool(_C._get_npu_data_unsafe_flag())


def _recovery_all_npu_stream(device: int) -> None:
    """torch_npu recreates the device's streams after an abort; a simulated stream keeps no
    state an abort could break (restart_device lifts the stop itself)."""
    _lazy_init()


def _npu_hccl_backends():
    """The HCCL backends of this process's process groups (restart/stop set their watchdog)."""
    import torch.distributed as dist

    if not dist.is_available():
        return []
    from torch.distributed.distributed_c10d import _pg_map

    npu_device = torch.device("npu")
    backends = []
    for pg in list(_pg_map):
        if npu_device in getattr(pg, "_device_types", ()):
            backends.append((pg, pg._get_backend(npu_device)))
    return backends


def restart_device(device_id: int, rebuild_all_resources: bool = False, disable_tensor_unsafe_check: bool = False):
    logger.info(
        "restart device start, device_id=%s, rebuild_all_resources=%s, disable_tensor_unsafe_check=%s",
        device_id,
        rebuild_all_resources,
        disable_tensor_unsafe_check,
    )
    _lazy_init()
    if rebuild_all_resources:
        if not disable_tensor_unsafe_check:
            mark_all_npu_tensor_unsafe(device_id)
            set_npu_tensor_unsafe_check_flag(True)
        _recovery_all_npu_stream(device_id)
    _C._npu_restart_device(int(device_id))
    _except_handler.set_force_stop_exception(False)
    for pg, backend in _npu_hccl_backends():
        backend.clear_workmeta_list()
        backend.set_watchdog_status(WATCHDOG_STATUS_RUN)
        logger.info("set watchdog status to run, device_id=%s, group=%s", device_id, pg)
    logger.info("restart device end, device_id=%s", device_id)


def stop_device(device_id: int) -> int:
    """Abort the device's tasks: every later task on it fails with ``FORCE STOP.`` until
    :func:`restart_device`. Returns 0 (the abort succeeded), as torch_npu does."""
    logger.info("stop device start, device_id=%s", device_id)
    _lazy_init()
    _C._npu_stop_device(int(device_id))
    _except_handler.set_force_stop_exception(True)
    for pg, backend in _npu_hccl_backends():
        backend.set_watchdog_status(WATCHDOG_STATUS_STOP)
        logger.info("set watchdog status to stop, device_id=%s, group=%s", device_id, pg)
    logger.info("stop device end, device_id=%s, result=0", device_id)
    return 0


def check_uce_in_memory(device_id: int) -> int:
    """Where torch_npu's last uncorrectable memory error (UCE) lies: 0 none, 1 outside the
    caching allocator, 2 in its temporary memory, 3 in persistent memory. The simulated HBM
    has no memory faults, so there is never one to report."""
    _lazy_init()
    return 0


def _get_uce_addr() -> list:
    """The address ranges (``{"ptr", "size"}``) of the last uncorrectable memory error: none."""
    _lazy_init()
    return []
