"""``torch.npu.utils`` / ``torch_npu.npu.utils``: where torch_npu code reaches the Inf/NaN-mode
helpers (``is_support_inf_nan``, ``npu_check_overflow``, the overflow flag) and the device
helpers it re-exports."""

from npusim.npu.amp.inf_nan_mode import (  # noqa: F401
    clear_npu_overflow_flag,
    get_npu_overflow_flag,
    is_support_inf_nan,
    npu_check_overflow,
)
from npusim.npu.devices import (  # noqa: F401
    current_device,
    device_count,
    get_device_name,
    get_device_properties,
    set_device,
    synchronize,
)

__all__ = [
    "is_support_inf_nan",
    "npu_check_overflow",
    "get_npu_overflow_flag",
    "clear_npu_overflow_flag",
    "current_device",
    "device_count",
    "get_device_name",
    "get_device_properties",
    "set_device",
    "synchronize",
]
