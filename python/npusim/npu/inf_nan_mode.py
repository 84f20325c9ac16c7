"""INF_NAN mode and saturation mode (contract §13), as torch_npu's ``torch_npu/npu/utils.py``
shows them: ``is_support_inf_nan``, ``get_npu_overflow_flag``, ``clear_npu_overflow_flag`` and
``npu_check_overflow``.

The mode is decided once per process in C++ (``csrc/backend/numerics/InfNanMode.cpp``) from the chip
(``NPUSIM_SOC``), ``INF_NAN_MODE_ENABLE`` and ``INF_NAN_MODE_FORCE_DISABLE``:

- A2/A3 chips (the default Ascend910B2): INF_NAN mode, IEEE 754 results. ``INF_NAN_MODE_FORCE_DISABLE=1``
  selects saturation mode; ``INF_NAN_MODE_ENABLE=0`` alone is refused with torch_npu's error.
- Atlas training series (Ascend910A): saturation mode only.

In saturation mode the float results of npu kernels have Inf replaced by the dtype's largest
finite value (with its sign) and NaN by 0, and each replacement raises the device's overflow
flag, which ``get_npu_overflow_flag`` reads. The gradient scaler's non-finite check uses that
flag in saturation mode, as torch_npu's does.
"""

from __future__ import annotations

import math
import warnings

import torch

__all__ = ["is_support_inf_nan", "get_npu_overflow_flag", "clear_npu_overflow_flag", "npu_check_overflow"]

_INF_NAN_MODE = 1  # aclrtFloatOverflowMode: 0 saturation, 1 INF_NAN


def _current_device() -> int:
    from npusim.npu.devices import current_device

    return current_device()


def is_support_inf_nan() -> bool:
    r"""Return whether the simulated NPU runs in INF_NAN (IEEE 754) mode rather than saturation
    mode."""
    from npusim.npu._lazy import _lazy_init

    _lazy_init()
    return int(torch.ops.npusim._float_overflow_mode()) == _INF_NAN_MODE


def get_npu_overflow_flag() -> bool:
    r"""Return whether a kernel overflowed (saturated an Inf or a NaN) on the current device since
    the flag was last cleared. Saturation mode only, as on torch_npu."""
    if is_support_inf_nan():
        raise RuntimeError("Unsupported api when soc_version >= Ascend910B1, please use npu_check_overflow")
    device = _current_device()
    torch.npu.synchronize(device)  # reading the float status register waits for the device
    return bool(torch.ops.npusim._overflow_flag(device))


def clear_npu_overflow_flag() -> None:
    r"""Clear the overflow flag of the current device (saturation mode; a warning and nothing else in
    INF_NAN mode, as on torch_npu)."""
    if is_support_inf_nan():
        warnings.warn("When soc_version >= Ascend910B1, clear_npu_overflow_flag is useless, please remove it.")
        return
    torch.ops.npusim._clear_overflow_flag(_current_device())


def npu_check_overflow(grad: float | torch.Tensor) -> bool:
    r"""Return whether ``grad`` overflowed: in INF_NAN mode whether its sum is not finite, in
    saturation mode whether the overflow flag is raised (which it then clears)."""
    if is_support_inf_nan():
        if isinstance(grad, float):
            total = grad
        elif isinstance(grad, torch.Tensor):
            total = float(grad.float().sum())
        else:
            raise RuntimeError("Unsupported type.")
        return not math.isfinite(total)
    overflowed = get_npu_overflow_flag()
    if overflowed:
        clear_npu_overflow_flag()
    return overflowed
