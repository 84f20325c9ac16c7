"""``torch_npu.utils._npu_trace``: the callbacks of the NPU trace (torch_npu's sanitizer).

Once ``torch_npu._C._activate_npu_trace(mode)`` is called, the backend reports the device's
activity here: in stream mode the creation, recording, waiting, synchronization and deletion of
events, the creation and synchronization of streams, device synchronizations, every allocation
and free of device memory and every ``record_stream`` / ``erase_stream``; in kernel mode the
start and end of each kernel. Each report runs the callbacks registered for it, in order; a
callback that raises is logged and the others still run. Streams are named by their id
(``Stream.npu_stream``), events by ``Event.event_id``, memory by its address.
"""

from __future__ import annotations

import os
from typing import Callable

from npusim.npu._console_log import _print_error_log

__all__: list[str] = []


def print_check_msg(msg: str) -> None:
    print(f"[sanitizer]({os.getpid()}) {msg}")


class CallbackRegistry:
    def __init__(self, name: str):
        self.name = name
        self.callback_list = []

    def add_callback(self, cb: Callable, cb_name: str) -> None:
        self.callback_list.append((cb, cb_name))

    def fire_callbacks(self, *args, **kwargs) -> None:
        for cb, cb_name in self.callback_list:
            try:
                cb(*args, **kwargs)
            except Exception:
                _print_error_log(f"Exception in callback {cb_name} for {self.name} registered with NPU trace")


NPUACLStartExecuteCallbacks = CallbackRegistry("[kernel check] NPU acl start execution")
NPUACLFinishExecuteCallbacks = CallbackRegistry("[kernel check] NPU acl finish execution")
NPUEventCreationCallbacks = CallbackRegistry("[stream check] NPU event creation")
NPUEventDeletionCallbacks = CallbackRegistry("[stream check] NPU event deletion")
NPUEventRecordCallbacks = CallbackRegistry("[stream check] NPU event record")
NPUEventWaitCallbacks = CallbackRegistry("[stream check] NPU event wait")
NPUMemoryAllocationCallbacks = CallbackRegistry("[stream check] NPU memory allocation")
NPUMemoryDeallocationCallbacks = CallbackRegistry("[stream check] NPU memory deallocation")
NPUStreamCreationCallbacks = CallbackRegistry("[stream check] NPU stream creation")
NPUDeviceSynchronizationCallbacks = CallbackRegistry("[stream check] NPU device synchronization")
NPUStreamSynchronizationCallbacks = CallbackRegistry("[stream check] NPU stream synchronization")
NPUEventSynchronizationCallbacks = CallbackRegistry("[stream check] NPU event synchronization")
NPURecordStreamCallbacks = CallbackRegistry("[stream check] NPU record_stream")
NPUEraseStreamCallbacks = CallbackRegistry("[stream check] NPU erase_stream")


def register_callback_for_acl_start_execution(cb: Callable[[str], None], cb_name: str) -> None:
    NPUACLStartExecuteCallbacks.add_callback(cb, cb_name)


def register_callback_for_acl_finish_execution(cb: Callable[[str], None], cb_name: str) -> None:
    NPUACLFinishExecuteCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_event_creation(cb: Callable[[int], None], cb_name: str) -> None:
    NPUEventCreationCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_event_deletion(cb: Callable[[int], None], cb_name: str) -> None:
    NPUEventDeletionCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_event_record(cb: Callable[[int, int], None], cb_name: str) -> None:
    NPUEventRecordCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_event_wait(cb: Callable[[int, int], None], cb_name: str) -> None:
    NPUEventWaitCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_memory_allocation(cb: Callable[[int], None], cb_name: str) -> None:
    NPUMemoryAllocationCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_memory_deallocation(cb: Callable[[int], None], cb_name: str) -> None:
    NPUMemoryDeallocationCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_stream_creation(cb: Callable[[int], None], cb_name: str) -> None:
    NPUStreamCreationCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_device_synchronization(cb: Callable[[], None], cb_name: str) -> None:
    NPUDeviceSynchronizationCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_stream_synchronization(cb: Callable[[int], None], cb_name: str) -> None:
    NPUStreamSynchronizationCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_event_synchronization(cb: Callable[[int], None], cb_name: str) -> None:
    NPUEventSynchronizationCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_record_stream(cb: Callable[[int, int], None], cb_name: str) -> None:
    """Callbacks of ``record_stream``: (data pointer, stream id)."""
    NPURecordStreamCallbacks.add_callback(cb, cb_name)


def register_callback_for_npu_erase_stream(cb: Callable[[int, int], None], cb_name: str) -> None:
    """Callbacks of ``erase_stream``: (data pointer, stream id)."""
    NPUEraseStreamCallbacks.add_callback(cb, cb_name)


# The backend's report kinds (backend/device/NpuTrace.h, TraceKind), in order, with the number of
# arguments each passes on.
_REPORTS = (
    (NPUEventCreationCallbacks, 1),
    (NPUEventDeletionCallbacks, 1),
    (NPUEventRecordCallbacks, 2),
    (NPUEventWaitCallbacks, 2),
    (NPUMemoryAllocationCallbacks, 1),
    (NPUMemoryDeallocationCallbacks, 1),
    (NPUStreamCreationCallbacks, 1),
    (NPUDeviceSynchronizationCallbacks, 0),
    (NPUStreamSynchronizationCallbacks, 1),
    (NPUEventSynchronizationCallbacks, 1),
    (NPURecordStreamCallbacks, 2),
    (NPUEraseStreamCallbacks, 2),
    (NPUACLStartExecuteCallbacks, "name"),
    (NPUACLFinishExecuteCallbacks, "name"),
)


def _fire(kind: int, first: int, second: int, name: str | None) -> None:
    """Called by the backend for each report (under the GIL)."""
    registry, arguments = _REPORTS[kind]
    if not registry.callback_list:
        return
    if arguments == "name":
        registry.fire_callbacks(name)
    else:
        registry.fire_callbacks(*(first, second)[:arguments])
