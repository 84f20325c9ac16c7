"""``torch_npu._C``: the functions of torch_npu's extension module that user code and
torch_npu's own Python layer call directly (``torch_npu._C._npu_getDeviceCount()``, ...).

Each one does what the torch_npu binding of that name does, through npusim's ``torch.npu``.
"""

from __future__ import annotations

import types
from typing import Any

import torch

from npusim import _C as _npusim_C
from npusim.npu import devices as _devices
from npusim.npu import memory as _memory
from npusim.npu import options as _options
from npusim.npu import streams as _streams
from npusim.npu import versions as _versions
from npusim.npu._lazy import _lazy_init


def _npu_init() -> None:
    _lazy_init()


def _npu_getDeviceCount() -> int:
    return _devices.device_count()


def _npu_setDevice(device: int) -> None:
    _devices.set_device(device)


def _npu_getDevice() -> int:
    return _devices.current_device()


def _npu_getLocalDevice() -> int:
    """The device this thread selected, or -1 before the runtime is up (does not start it)."""
    from npusim.npu._lazy import is_initialized

    return int(_npusim_C._get_device()) if is_initialized() else -1


_npu_getDeviceWithoutSet = _npu_getLocalDevice


def _npu_maybeExchangeDevice(device: int) -> int:
    previous = _npu_getLocalDevice()
    if device >= 0 and device != previous:
        _devices.set_device(device)
    return previous


def _npu_synchronize() -> None:
    _devices.synchronize()


def _npu_getDeviceName() -> str:
    return _devices.get_device_name()


def _npu_getDeviceProperties(device: int):
    return _devices.get_device_properties(device)


def _npu_getDeviceUtilizationRate(device: int) -> int:
    return _devices.utilization(device)


def _npu_canDeviceAccessPeer(device: int, peer: int) -> bool:
    return _devices.can_device_access_peer(device, peer)


def _npu_getDeviceMemories(device: int):
    """An object with ``free_memory`` and ``total_memory`` (bytes), as torch_npu's binding."""
    free, total = _memory.mem_get_info(device)
    return types.SimpleNamespace(free_memory=free, total_memory=total)


def _npu_emptyCache() -> None:
    _memory.empty_cache()


def _npu_emptyVirtAddrCache() -> None:
    _memory.empty_virt_addr_cache()


def _npu_memoryStats(device: int):
    return _memory.memory_stats_as_nested_dict(device)


def _npu_resetPeakMemoryStats(device: int) -> None:
    _memory.reset_peak_memory_stats(device)


def _npu_resetAccumulatedMemoryStats(device: int) -> None:
    _memory.reset_accumulated_memory_stats(device)


def _npu_setMemoryFraction(fraction: float, device: int) -> None:
    _memory.set_per_process_memory_fraction(fraction, device)


def _stream_tuple(stream: torch.Stream) -> tuple[int, int, int]:
    return (stream.stream_id, stream.device_index, stream.device_type)


def _npu_getCurrentStream(device: int) -> tuple[int, int, int]:
    return _stream_tuple(_streams.current_stream(device))


def _npu_getDefaultStream(device: int) -> tuple[int, int, int]:
    return _stream_tuple(_streams.default_stream(device))


def _npu_getCurrentRawStream(device: int) -> int:
    """The handle of the current stream of ``device`` (``Stream.npu_stream``), as compiled code
    passes it to kernels."""
    return int(_streams.current_stream(device).npu_stream)


# npusim's streams have no launch queue to drain before the handle is read.
_npu_getCurrentRawStreamNoWait = _npu_getCurrentRawStream


def _npu_setStream(stream_id: int = 0, device_index: int = 0, device_type: int = 0) -> None:
    _streams.set_stream(_streams.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))


def _npu_setOption(option: dict) -> None:
    if not isinstance(option, dict):
        raise TypeError("npu option must be a dict." + _options.pta_error(_options.ErrCode.TYPE))
    for name, value in option.items():
        if not isinstance(name, str):
            raise TypeError("option name is nullptr or is not string." + _options.pta_error(_options.ErrCode.TYPE))
        if not isinstance(value, str):
            raise TypeError("option value is nullptr or is not string." + _options.pta_error(_options.ErrCode.TYPE))
    _options._set_options(dict(option))


def _npu_getOption(name: str) -> bytes | None:
    return _options._get_option(name)


def _npu_is_jit_compile_false() -> bool:
    return _options.is_jit_compile_false()


def _npu_set_sync_debug_mode(mode: int) -> None:
    _options.set_sync_debug_mode(mode)


def _npu_get_sync_debug_mode() -> int:
    return _options.get_sync_debug_mode()


def _get_cann_version(module: str) -> str:
    return _versions.get_cann_version(module)


def _is_gte_cann_version(version: str, module: str) -> bool:
    return _versions._is_gte_cann_version(version, module)


def _npu_get_soc_version() -> int:
    return _versions.get_soc_version()


def _npu_is_support_inf_nan() -> bool:
    from npusim.npu.inf_nan_mode import is_support_inf_nan

    return is_support_inf_nan()


def _npu_is_bf16_supported() -> bool:
    return bool(torch.npu.is_bf16_supported())


# torch_npu._C's child modules of the runtime API and the mstx markers (npusim's Python
# bindings; torch.npu.npurt() returns the first).
from npusim.npu.mstx import native as _mstx  # noqa: E402
from npusim.npu.npurt import _MODULE as _npurt  # noqa: E402

def _weak_ref_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """An npu tensor over ``tensor``'s memory, with its geometry and storage format, that does not
    keep the memory alive."""
    from npusim.npu.formats import _copy_record

    weak = _npusim_C._weak_ref_tensor(tensor)
    _copy_record(tensor, weak)
    return weak


# The sanitizer's trace switch: 0 streams, events and memory; 1 kernels.
_activate_npu_trace = _npusim_C._activate_npu_trace

# The allocation of Inductor's generated wrappers, without the argument parser and the
# dispatcher: (sizes, strides, dtype) -> an uninitialised npu tensor on the current device.
_empty_strided_npu = _npusim_C._empty_strided_npu


# The bindings of NPU graph trees (torch_npu.npu._graph_tree).
from npusim.compile.graph_tree_bindings import *  # noqa: E402,F401,F403


# Recovery from device faults (torch_npu.npu._recovery calls these).
def _check_npu_data_ptr(storage) -> bool:
    from npusim.npu import _recovery

    return _recovery.check_npu_storage_is_safe(storage)


def _mark_all_npu_data_ptr_unsafe(device: int) -> None:
    from npusim.npu import _recovery

    _recovery.mark_all_npu_tensor_unsafe(device)


def _update_npu_data_ptr(storage) -> None:
    from npusim.npu import _recovery

    _recovery.update_npu_storage_to_safe(storage)


_set_npu_data_unsafe_flag = _npusim_C._set_npu_data_unsafe_flag
_get_npu_data_unsafe_flag = _npusim_C._get_npu_data_unsafe_flag


def _recovery_all_npu_stream(device: int) -> None:
    from npusim.npu import _recovery

    _recovery._recovery_all_npu_stream(device)


def _npu_stopDevice(device: int) -> int:
    _lazy_init()
    _npusim_C._npu_stop_device(int(device))
    return 0


def _npu_restart_device(device: int) -> None:
    _lazy_init()
    _npusim_C._npu_restart_device(int(device))


def _npu_check_uce_in_memory(device: int) -> int:
    from npusim.npu import _recovery

    return _recovery.check_uce_in_memory(device)


def _npu_get_uce_addr() -> list:
    from npusim.npu import _recovery

    return _recovery._get_uce_addr()


# The allocator's snapshot and allocation history (torch.npu.memory._record_memory_history,
# _snapshot and torch_npu's graph trees call these).
_npu_record_memory_history = _npusim_C._npu_record_memory_history
_npu_isHistoryEnabled = _npusim_C._npu_isHistoryEnabled
_npu_memorySnapshot = _npusim_C._npu_memorySnapshot


def __getattr__(name: str) -> Any:
    raise AttributeError(
        f"module 'torch_npu._C' has no attribute '{name}' (npusim does not provide this torch_npu binding)"
    )


# NPUGraph task groups (torch_npu.npu.graphs calls these bindings).
def _graph_task_group_begin(stream) -> None:
    from npusim.compile.graph_updates import task_groups

    task_groups.graph_task_group_begin(stream)


def _graph_task_group_end(stream):
    from npusim.compile.graph_updates import task_groups

    return task_groups.graph_task_group_end(stream)


def _graph_task_update_begin(stream, handle) -> None:
    from npusim.compile.graph_updates import task_groups

    task_groups.graph_task_update_begin(stream, handle)


def _graph_task_update_end(stream) -> None:
    from npusim.compile.graph_updates import task_groups

    task_groups.graph_task_update_end(stream)


def _npu_fused_infer_attention_score_out_graph(stream, handle, event, *args, **kwargs):
    """torch_npu's one-call update of a captured npu_fused_infer_attention_score.out: on
    ``stream``, updates task group ``handle`` with the call's new arguments and records ``event``
    (which the graph waits on); returns the call's ``out`` tensors."""
    from npusim.compile.graph_updates import task_groups

    task_groups.graph_task_update_begin(stream, handle)
    try:
        torch.ops.npu.npu_fused_infer_attention_score.out(*args, **kwargs)
    except BaseException:
        task_groups.abort_task_update(stream)
        raise
    task_groups.graph_task_update_end(stream)
    event.record(stream)
    out = kwargs["out"]
    return out[0], out[1]
