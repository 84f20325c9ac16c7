"""``torch.npu``: the device module of the simulated Ascend NPU.

npusim registers this package with ``torch._register_device_module("npu", ...)``, so it is
``torch.npu`` (and, through the torch_npu compatibility layer, ``torch_npu.npu``). It behaves
as torch_npu's ``torch.npu``; it is split by concern:

- :mod:`._lazy`: lazy initialization and the fork check,
- :mod:`.devices`: counting, selecting and describing devices,
- :mod:`.streams`: streams and events,
- :mod:`.memory`: the caching allocator,
- :mod:`.random`: the default generators,
- :mod:`.amp`: automatic mixed precision.

Nothing here starts the runtime at import; the first call that needs a device does.
"""

from __future__ import annotations

import torch

from npusim.npu import amp
from npusim.npu._lazy import (
    DeferredNpuCallError,
    _is_in_bad_fork,
    _lazy_call,
    _lazy_init,
    init,
    is_initialized,
)
from npusim.npu.devices import (
    _get_device_index,
    _NPUDeviceProperties,
    can_device_access_peer,
    current_device,
    device,
    device_count,
    device_of,
    get_device_capability,
    get_device_name,
    get_device_properties,
    is_available,
    set_device,
    synchronize,
    utilization,
)
from npusim.npu.memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    empty_cache,
    get_per_process_memory_fraction,
    host_empty_cache,
    host_memory_stats,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from npusim.npu.random import (
    default_generators,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from npusim.npu.streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    # device
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
    "init",
    "is_initialized",
    "utilization",
    # streams and events
    "Stream",
    "Event",
    "ExternalStream",
    "StreamContext",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
    # memory
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "empty_cache",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "memory_snapshot",
    "memory_summary",
    "set_per_process_memory_fraction",
    "get_per_process_memory_fraction",
    "mem_get_info",
    "host_empty_cache",
    "host_memory_stats",
    # random
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    # amp (the subpackage torch.npu.amp is an attribute, not in __all__)
    "get_amp_supported_dtype",
    "is_bf16_supported",
    "is_autocast_enabled",
    "set_autocast_enabled",
    "get_autocast_dtype",
    "set_autocast_dtype",
]


def get_amp_supported_dtype() -> list[torch.dtype]:
    r"""Return the dtypes autocast may use on the NPU."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    r"""Return whether the NPU supports bfloat16 (the 910B family does)."""
    return True


def is_autocast_enabled() -> bool:
    r"""Return whether autocast is on for ``npu`` in the current thread."""
    return torch.is_autocast_enabled("npu")


def set_autocast_enabled(enabled: bool) -> None:
    r"""Turn autocast for ``npu`` on or off in the current thread."""
    torch.set_autocast_enabled("npu", enabled)


def get_autocast_dtype() -> torch.dtype:
    r"""Return the lower-precision dtype of autocast for ``npu``."""
    return torch.get_autocast_dtype("npu")


def set_autocast_dtype(dtype: torch.dtype) -> None:
    r"""Set the lower-precision dtype of autocast for ``npu``."""
    torch.set_autocast_dtype("npu", dtype)
