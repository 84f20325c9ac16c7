"""Memory management of ``torch.npu``: the simulated caching allocator's statistics and controls.

The allocator lives in the C++ runtime (one per simulated device, modelled on torch_npu's
NPUCachingAllocator); this module gives it torch_npu's Python face, with the statistic keys,
the ``memory_summary`` table and the snapshot format of the CUDA allocator.
"""

from __future__ import annotations

import collections
import warnings
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error
from npusim.npu._lazy import _lazy_init, _runtime_initialized, is_initialized
from npusim.npu.devices import _get_device_index, device as _device_context, device_count as _device_count

# torch_npu's allocator controls, reached as torch.npu.memory.<name> too (as torch.cuda.memory's).
from npusim.npu.allocator_controls import MemPool, _segments, use_mem_pool  # noqa: F401
# The allocation history (torch_npu's private API, as torch.cuda.memory's).
from npusim.npu.memory_history import (  # noqa: F401
    _dump_snapshot,
    _record_memory_history,
    _record_memory_history_impl,
    _save_memory_usage,
    _save_segment_usage,
    _snapshot,
)

__all__ = [
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "empty_cache",
    "empty_virt_addr_cache",
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
    "reset_peak_host_memory_stats",
    "reset_accumulated_host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "get_allocator_backend",
]


def get_allocator_backend() -> str:
    r"""The allocator backend chosen by ``PYTORCH_NPU_ALLOC_CONF``: ``native``, the caching
    allocator (the only one torch_npu has)."""
    return "native"

# The order of the per-pool lists that _C._memory_stats returns.
_POOLS = ("all", "small_pool", "large_pool")
_STAT_FIELDS = ("current", "peak", "allocated", "freed")


def _device_index(device: Any) -> int:
    _lazy_init()
    return _get_device_index(device, optional=True)


def caching_allocator_alloc(size: int, device: Any = None, stream: Any = None) -> int:
    r"""Allocate ``size`` bytes from the NPU caching allocator and return the address.

    Args:
        size (int): number of bytes.
        device (torch.device, str or int, optional): the device; the current one if ``None``.
        stream (torch.npu.Stream or int, optional): the stream the memory is used on (a stream
            or its id); the device's current stream if ``None``.

    Free the memory with :func:`caching_allocator_delete`.
    """
    from npusim.npu.streams import current_stream

    index = _device_index(device)
    if stream is None:
        stream = current_stream(index)
    if isinstance(stream, torch.Stream):
        stream = stream.stream_id
    if not isinstance(stream, int) or isinstance(stream, bool):
        raise TypeError(
            "Invalid type for stream argument, must be `torch.npu.Stream` or `int` representing "
            "a pointer to a existing stream" + pta_error(ErrCode.TYPE)
        )
    with _device_context(index):
        return int(_C._caching_allocator_alloc(int(size), index, stream))


def caching_allocator_delete(mem_ptr: int) -> None:
    r"""Free memory obtained from :func:`caching_allocator_alloc`."""
    _C._caching_allocator_delete(int(mem_ptr))


def empty_cache() -> None:
    r"""Release the cached, unused device memory of the caching allocator.

    It does not make more memory available to PyTorch, but the released memory no longer
    counts as reserved (and no longer shows in ``npu-smi``).
    """
    if _runtime_up():
        _C._empty_cache()


def empty_virt_addr_cache() -> None:
    r"""With ``expandable_segments:True``: release the virtual address ranges of the cached, unused
    segments (reserved memory drops as with :func:`empty_cache`) while their physical memory stays
    taken on the device, to be mapped again by the next segment, until :func:`empty_cache`."""
    if _runtime_up():
        _C._empty_virt_addr_cache()


def _runtime_up() -> bool:
    return is_initialized() or _runtime_initialized()


def _index_if_up(device: Any) -> int | None:
    """The device index, or None while the runtime is not initialized (statistics are then
    empty, as in torch.cuda; reading them does not initialize the runtime)."""
    if not _runtime_up():
        if device is not None:
            _check_device_argument(device)
        return None
    index = _get_device_index(device, optional=True)
    # The caching allocator's own check (torch_npu's assertValidDevice), before any device call.
    if not 0 <= index < _device_count():
        raise RuntimeError(f"Invalid device argument {index}: did you call init?" + pta_error(ErrCode.PARAM))
    return index


def _check_device_argument(device: Any) -> None:
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"Expected a npu device, but got: {device}")
    else:
        _get_device_index(device)


def memory_stats_as_nested_dict(device: Any = None) -> dict[str, Any]:
    r"""Return :func:`memory_stats` as a nested dictionary."""
    index = _index_if_up(device)
    if index is None:
        return {}
    raw = _C._memory_stats(index)
    nested: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, (list, tuple)):
            nested[key] = {pool: dict(stat) for pool, stat in zip(_POOLS, value)}
        elif isinstance(value, dict):
            nested[key] = dict(value)
        else:
            nested[key] = value
    return nested


def memory_stats(device: Any = None) -> "collections.OrderedDict[str, int]":
    r"""Return the statistics of the NPU caching allocator for a device.

    Keys are flat, as in ``torch.cuda.memory_stats``:
    ``"<stat>.<pool>.<metric>"`` for the core statistics (``allocation``, ``segment``,
    ``active``, ``inactive_split``, ``allocated_bytes``, ``reserved_bytes``, ``active_bytes``,
    ``inactive_split_bytes``, ``requested_bytes``; pools ``all``, ``small_pool``, ``large_pool``;
    metrics ``current``, ``peak``, ``allocated``, ``freed``), ``"oversize_allocations.<metric>"``,
    ``"oversize_segments.<metric>"`` and the counters ``num_alloc_retries``, ``num_ooms``,
    ``num_sync_all_streams``, ``num_device_alloc``, ``num_device_free``, ``max_split_size``.

    Args:
        device (torch.device, str or int, optional): the device; the current one if ``None``.
    """
    result: list[tuple[str, Any]] = []

    def flatten(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                flatten(f"{prefix}.{key}" if prefix else key, inner)
        else:
            result.append((prefix, value))

    flatten("", memory_stats_as_nested_dict(device))
    result.sort()
    return collections.OrderedDict(result)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    r"""Reset the accumulated statistics ("allocated", "freed", retries and OOMs) of a device."""
    index = _index_if_up(device)
    if index is not None:
        _C._reset_accumulated_memory_stats(index)


def reset_peak_memory_stats(device: Any = None) -> None:
    r"""Reset the "peak" statistics of a device."""
    index = _index_if_up(device)
    if index is not None:
        _C._reset_peak_memory_stats(index)


def reset_max_memory_allocated(device: Any = None) -> None:
    r"""Reset the peak of allocated memory; this resets all peak statistics."""
    warnings.warn(
        "torch.npu.reset_max_memory_allocated now calls torch.npu.reset_peak_memory_stats, "
        "which resets /all/ peak memory stats.",
        FutureWarning,
    )
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device: Any = None) -> None:
    r"""Reset the peak of reserved memory; this resets all peak statistics."""
    warnings.warn(
        "torch.npu.reset_max_memory_cached now calls torch.npu.reset_peak_memory_stats, "
        "which resets /all/ peak memory stats.",
        FutureWarning,
    )
    reset_peak_memory_stats(device)


def _stat(device: Any, key: str) -> int:
    index = _index_if_up(device)
    if index is None:
        return 0
    name, pool, metric = key.split(".")
    return int(_C._memory_stats(index)[name][_POOLS.index(pool)][metric])


def memory_allocated(device: Any = None) -> int:
    r"""Return the device memory occupied by tensors, in bytes."""
    return _stat(device, "allocated_bytes.all.current")


def max_memory_allocated(device: Any = None) -> int:
    r"""Return the peak of device memory occupied by tensors, in bytes."""
    return _stat(device, "allocated_bytes.all.peak")


def memory_reserved(device: Any = None) -> int:
    r"""Return the device memory held by the caching allocator, in bytes."""
    return _stat(device, "reserved_bytes.all.current")


def max_memory_reserved(device: Any = None) -> int:
    r"""Return the peak of device memory held by the caching allocator, in bytes."""
    return _stat(device, "reserved_bytes.all.peak")


def memory_cached(device: Any = None) -> int:
    r"""Deprecated; see :func:`memory_reserved`."""
    warnings.warn("torch.npu.memory_cached has been renamed to torch.npu.memory_reserved", FutureWarning)
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    r"""Deprecated; see :func:`max_memory_reserved`."""
    warnings.warn(
        "torch.npu.max_memory_cached has been renamed to torch.npu.max_memory_reserved", FutureWarning
    )
    return max_memory_reserved(device)


def memory_snapshot(mempool_id: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    r"""Return the segments of the caching allocators of all devices (CUDA snapshot format).

    Each segment carries ``segment_pool_id``: ``(0, 0)`` for the default pools, otherwise the
    id of the private pool (:class:`torch.npu.MemPool`, graph pool) it belongs to. With
    ``mempool_id`` only that pool's segments are returned.
    """
    return _segments(mempool_id)


def _format_size(size: int, reference: int) -> str:
    units = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
    unit = units[0]
    for next_unit in units[1:]:
        if reference < 768 * 1024:
            break
        unit = next_unit
        size //= 1024
        reference /= 1024
    return f"{size:6d} {unit}"


def _format_count(count: int, reference: int) -> str:
    units = [" ", "K", "M"]
    unit = units[0]
    for next_unit in units[1:]:
        if reference < 750 * 1000:
            break
        unit = next_unit
        count //= 1000
        reference /= 1000
    return f"{count:7d} {unit} "


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    r"""Return a readable table of the caching allocator's statistics for a device.

    Args:
        device (torch.device, str or int, optional): the device; the current one if ``None``.
        abbreviated (bool, optional): leave out the per-pool rows (default: ``False``).
    """
    index = _device_index(device)
    stats = memory_stats(index)
    rule = "-" * 75
    double_rule = "=" * 75
    lines = [
        double_rule,
        f" {'':16} PyTorch NPU memory summary, device ID {index:<18d} ",
        rule,
        f"  {'':9} NPU OOMs: {stats['num_ooms']:<13d} | {'':6} npuMalloc retries: {stats['num_alloc_retries']:<9d}  ",
        double_rule,
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
    ]
    metrics = [
        ("allocated_bytes", "Allocated memory", _format_size),
        ("active_bytes", "Active memory", _format_size),
        ("requested_bytes", "Requested memory", _format_size),
        ("reserved_bytes", "NPU reserved memory", _format_size),
        ("inactive_split_bytes", "Non-releasable memory", _format_size),
        ("allocation", "Allocations", _format_count),
        ("active", "Active allocs", _format_count),
        ("segment", "NPU reserved segments", _format_count),
        ("inactive_split", "Non-releasable allocs", _format_count),
    ]
    for key, title, formatter in metrics:
        lines.append(rule)
        rows = [("all", title)]
        if not abbreviated:
            rows += [("large_pool", "      from large pool"), ("small_pool", "      from small pool")]
        references = None
        for pool, row_title in rows:
            values = [int(stats.get(f"{key}.{pool}.{field}", 0)) for field in _STAT_FIELDS]
            if references is None:
                references = values
            cells = " | ".join(formatter(v, r) for v, r in zip(values, references))
            lines.append(f" {row_title:<21} | {cells} ")
    for key, title in (("oversize_allocations", "Oversize allocations"), ("oversize_segments", "Oversize NPU segments")):
        lines.append(rule)
        values = [int(stats.get(f"{key}.{field}", 0)) for field in _STAT_FIELDS]
        cells = " | ".join(_format_count(v, v) for v in values)
        lines.append(f" {title:<21} | {cells} ")
    lines.append(double_rule)
    return "|" + "|\n|".join(lines) + "|\n"


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    r"""Limit the caching allocator of a device to ``fraction`` of the device memory.

    Allocations beyond the limit raise the out-of-memory error.

    Args:
        fraction (float): in the range 0 to 1.
        device (torch.device, str or int, optional): the device; the current one if ``None``.
    """
    index = _device_index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`" + pta_error(ErrCode.TYPE))
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1" + pta_error(ErrCode.VALUE))
    _C._set_memory_fraction(fraction, index)


def get_per_process_memory_fraction(device: Any = None) -> float:
    r"""Return the memory fraction set for a device (1.0 when none was set)."""
    return float(_C._get_memory_fraction(_device_index(device)))


def mem_get_info(device: Any = None) -> tuple[int, int]:
    r"""Return ``(free, total)`` device memory in bytes, as the runtime sees it."""
    free, total = _C._mem_get_info(_device_index(device))
    return int(free), int(total)


def host_empty_cache() -> None:
    r"""Release the cached, unused pinned host memory."""
    _C._host_empty_cache()


def reset_peak_host_memory_stats() -> None:
    r"""Reset the peaks of the pinned host memory allocator's statistics to their current values."""
    _C._host_reset_peak_stats()


def reset_accumulated_host_memory_stats() -> None:
    r"""Reset the pinned host memory allocator's accumulated statistics (allocated / freed counts,
    ``num_host_alloc``, ``num_host_free``)."""
    _C._host_reset_accumulated_stats()


def host_memory_stats_as_nested_dict() -> dict[str, Any]:
    r"""Return the pinned host memory allocator's statistics as a nested dict."""
    return dict(_C._host_memory_stats())


def host_memory_stats() -> dict[str, Any]:
    r"""Return the pinned host memory allocator's statistics, flat as ``torch.cuda.host_memory_stats``.

    Keys such as ``allocations.current``, ``allocated_bytes.peak``, ``reserved_bytes.allocated``,
    ``num_host_alloc`` and ``num_host_free``.
    """
    flat: dict[str, Any] = {}
    for name, value in host_memory_stats_as_nested_dict().items():
        if isinstance(value, dict):
            for metric, number in value.items():
                flat[f"{name}.{metric}"] = number
        else:
            flat[name] = value
    return dict(sorted(flat.items()))



def _set_allocator_settings(env: str) -> None:
    r"""Change the caching allocator's settings at run time.

    ``env`` has the form of ``PYTORCH_NPU_ALLOC_CONF`` (``"key:value,..."``). As in torch_npu,
    ``max_split_size_mb``, ``garbage_collection_threshold`` and ``roundup_power2_divisions``
    restart from their defaults unless ``env`` sets them; other settings keep their values. The
    new settings apply to every device, including blocks requested later from memory already
    cached.
    """
    if not isinstance(env, str):
        raise TypeError(f"_set_allocator_settings expects a str, but got {type(env).__name__}")
    _C._set_allocator_settings(env)
