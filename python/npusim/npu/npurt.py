"""``torch.npu.npurt()``: the runtime-API module of torch_npu (as ``torch.cuda.cudart()``).

It exposes the host-memory registration that DeepSpeed and others call on natively pinned
buffers: ``npuHostRegister(address, num_bytes, flags)`` and ``npuHostUnregister(address)``,
which return an ACL error code (0 on success). npusim records the registered ranges, and copies
from or to them are priced as copies of pinned memory.

``npuStreamCreate(address)`` creates a stream of the current device outside PyTorch's stream
handling (aclrtCreateStream) and writes its handle (an ``aclrtStream``) to the pointer-sized
memory at ``address``; ``npuStreamDestroy(handle)`` waits for its work and destroys it. Programs
hand such handles to ``torch.npu.ExternalStream``. As npusim's AscendCL, a handle is the id of
a simulated stream of the device's pool.
"""

from __future__ import annotations

import ctypes
import threading
import types
from collections import Counter

from npusim import _C

__all__ = ["npurt"]

ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_RT_PARAM_INVALID = 107000
# aclrtHostRegisterV2 flags (bit mask): ACL_HOST_REG_MAPPED 0x2 and ACL_HOST_REG_PINNED 0x10000000
# (acl_rt.h), with the low bits of the default and read-only registrations.
ACL_HOST_REG_MAPPED = 0x2
ACL_HOST_REG_PINNED = 0x10000000
_KNOWN_FLAGS = 0x7 | ACL_HOST_REG_PINNED


def _host_register(address: int, num_bytes: int, flags: int = 0) -> int:
    if not isinstance(address, int) or not isinstance(num_bytes, int) or not isinstance(flags, int):
        return ACL_ERROR_RT_PARAM_INVALID
    if address <= 0 or num_bytes <= 0 or flags & ~_KNOWN_FLAGS:
        return ACL_ERROR_RT_PARAM_INVALID
    return int(_C._host_register(address, num_bytes))


def _host_unregister(address: int) -> int:
    if not isinstance(address, int) or address <= 0:
        return ACL_ERROR_RT_PARAM_INVALID
    return int(_C._host_unregister(address))


# Handles npuStreamCreate gave out and not yet destroyed (pool streams are shared round-robin, so
# one id can be out more than once).
_created_streams: Counter = Counter()
_created_lock = threading.Lock()


def _stream_create(address: int) -> int:
    if not isinstance(address, int) or address == 0:
        return ACL_ERROR_INVALID_PARAM
    from npusim.npu.devices import current_device

    device = current_device()
    stream = int(_C._stream_from_pool(device, False))
    with _created_lock:
        _created_streams[(device, stream)] += 1
    ctypes.c_void_p.from_address(address).value = stream
    return ACL_SUCCESS


def _stream_destroy(handle: int) -> int:
    if not isinstance(handle, int) or handle == 0:
        return ACL_ERROR_INVALID_PARAM
    import torch

    from npusim.npu.devices import current_device

    key = (current_device(), handle)
    with _created_lock:
        if _created_streams[key] <= 0:
            return ACL_ERROR_RT_PARAM_INVALID  # not a live stream of npuStreamCreate
        _created_streams[key] -= 1
    # aclrtDestroyStream returns once the stream's work has completed.
    torch.Stream(stream_id=handle, device_index=key[0], device_type=int(torch._C._autograd.DeviceType.PrivateUse1)).synchronize()
    return ACL_SUCCESS


_MODULE = types.ModuleType("torch_npu._C._npurt", "torch_npu's runtime-API bindings (npusim)")
_MODULE.npuHostRegister = _host_register
_MODULE.npuHostUnregister = _host_unregister
_MODULE.npuStreamCreate = _stream_create
_MODULE.npuStreamDestroy = _stream_destroy


def npurt() -> types.ModuleType:
    r"""The runtime-API module (``npuHostRegister``, ``npuHostUnregister``, ``npuStreamCreate``,
    ``npuStreamDestroy``); starts the runtime."""
    from npusim.npu._lazy import _lazy_init

    _lazy_init()
    return _MODULE
