"""``torch.npu.utils`` / ``torch_npu.npu.utils``: where torch_npu code reaches the Inf/NaN-mode
helpers (``is_support_inf_nan``, ``npu_check_overflow``, the overflow flag) and the device
helpers it re-exports, the CANN and SoC versions, the sync debug mode, the stream context
class and ``current_blas_handle``."""

import warnings

from npusim.npu.inf_nan_mode import (  # noqa: F401
    clear_npu_overflow_flag,
    get_npu_overflow_flag,
    is_support_inf_nan,
    npu_check_overflow,
)
from npusim.npu.options import get_sync_debug_mode, set_sync_debug_mode  # noqa: F401
from npusim.npu.versions import _is_gte_cann_version, get_cann_version, get_soc_version  # noqa: F401
from npusim.npu.streams import StreamContext  # noqa: F401
from npusim.npu._recovery import _get_uce_addr, check_uce_in_memory  # noqa: F401
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
    "get_cann_version",
    "get_soc_version",
    "get_sync_debug_mode",
    "set_sync_debug_mode",
    "current_blas_handle",
]


def current_blas_handle():
    r"""CUDA's cuBLAS handle has no NPU counterpart: warns and returns None, as torch_npu."""
    warnings.warn("NPU does not use blas handle.")
    return None
