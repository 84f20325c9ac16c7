"""``torch.npu.npurt()``: the runtime-API module of torch_npu (as ``torch.cuda.cudart()``).

It exposes the host-memory registration that DeepSpeed and others call on natively pinned
buffers: ``npuHostRegister(address, num_bytes, flags)`` and ``npuHostUnregister(address)``,
which return an ACL error code (0 on success). npusim records the registered ranges, and copies
from or to them are priced as copies of pinned memory.
"""

from __future__ import annotations

import types

from npusim import _C

__all__ = ["npurt"]

ACL_SUCCESS = 0
ACL_ERROR_RT_PARAM_INVALID = 107000
# aclrtHostRegisterV2 flags: default, device-mapped, read-only ... (bit mask)
_KNOWN_FLAGS = 0x7


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


_MODULE = types.ModuleType("torch_npu._C._npurt", "torch_npu's runtime-API bindings (npusim)")
_MODULE.npuHostRegister = _host_register
_MODULE.npuHostUnregister = _host_unregister


def npurt() -> types.ModuleType:
    r"""The runtime-API module (``npuHostRegister``, ``npuHostUnregister``); starts the runtime."""
    from npusim.npu._lazy import _lazy_init

    _lazy_init()
    return _MODULE
