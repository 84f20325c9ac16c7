"""``torch.npu._sanitizer``: torch_npu's NPU sanitizer (``TORCH_NPU_SANITIZER`` turns it on when
torch_npu is imported; ``enable_npu_sanitizer()`` at any time).

Stream mode (the default): every operator is checked for data races between streams, and the
memory a tensor used on another stream is checked for a missing ``record_stream`` when it is
freed (:mod:`npusim.npu._stream_check`, over the device's trace of streams, events and memory).
Kernel mode (with ``ASCEND_OPP_DEBUG_PATH``): every operator prints its name and Python stack
(:mod:`npusim.npu._kernel_check`).
"""

from __future__ import annotations

import atexit
import os

import npusim.npu._kernel_check as kernel_check
import npusim.npu._npu_trace as npu_trace
import npusim.npu._stream_check as stream_check
from npusim import _C
from npusim.npu._console_log import _print_warn_log

__all__: list[str] = []


class SanitizerMode:
    STREAM = 0
    KERNEL = 1


class NPUSanitizer:
    def __init__(self):
        self.event_handler = None
        self.dispatch = None
        self.kernel_path_manager = None
        self.mode = SanitizerMode.STREAM
        self.opp_debug_path = os.path.join(os.getcwd(), "opp_debug_path")
        self.opp_debug_kernel_path = os.getenv("ASCEND_OPP_DEBUG_PATH")
        self.enabled = False
        # The missing-record_stream check is part of the stream mode under TORCH_NPU_SANITIZER=1.
        self.check_record_stream = os.getenv("TORCH_NPU_SANITIZER", "0") == "1"

    def enable(self):
        if self.opp_debug_kernel_path:
            success = self.enable_kernel_check()
            self.mode = SanitizerMode.KERNEL
        else:
            success = self.enable_stream_check()
            self.mode = SanitizerMode.STREAM
        if not self.enabled and success:
            _C._activate_npu_trace(self.mode)
            self.enabled = True

    def enable_kernel_check(self) -> bool:
        if not self.opp_debug_kernel_path:
            _print_warn_log("ASCEND_OPP_DEBUG_PATH is not set! TORCH_NPU_SANITIZER takes no effect!")
            return False
        self.kernel_path_manager = kernel_check.KernelPathManager()
        if not os.path.exists(self.opp_debug_path):
            return False
        self.event_handler = kernel_check.EventHandler()
        npu_trace.register_callback_for_acl_start_execution(
            self.event_handler._handle_acl_start_execution, "handle_acl_start_execution")
        npu_trace.register_callback_for_acl_finish_execution(
            self.event_handler._handle_acl_finish_execution, "handle_acl_finish_execution")
        return True

    def enable_stream_check(self) -> bool:
        self.event_handler = stream_check.NPURecordStreamHandler()
        self.dispatch = stream_check.NPUSanitizerDispatchMode(self.event_handler)
        self.dispatch.__enter__()
        handler = self.event_handler
        for register, callback, name in (
            (npu_trace.register_callback_for_npu_event_creation, handler._handle_event_creation, "handle_event_creation"),
            (npu_trace.register_callback_for_npu_event_deletion, handler._handle_event_deletion, "handle_event_deletion"),
            (npu_trace.register_callback_for_npu_event_record, handler._handle_event_record, "handle_event_record"),
            (npu_trace.register_callback_for_npu_event_wait, handler._handle_event_wait, "handle_event_wait"),
            (npu_trace.register_callback_for_npu_memory_allocation, handler._handle_memory_allocation,
             "handle_memory_allocation"),
            (npu_trace.register_callback_for_npu_memory_deallocation, handler._handle_memory_deallocation,
             "handle_memory_deallocation"),
            (npu_trace.register_callback_for_npu_stream_creation, handler._handle_stream_creation,
             "handle_stream_creation"),
            (npu_trace.register_callback_for_npu_device_synchronization, handler._handle_device_synchronization,
             "handle_device_synchronization"),
            (npu_trace.register_callback_for_npu_stream_synchronization, handler._handle_stream_synchronization,
             "handle_stream_synchronization"),
            (npu_trace.register_callback_for_npu_event_synchronization, handler._handle_event_synchronization,
             "handle_event_synchronization"),
            (npu_trace.register_callback_for_npu_record_stream, handler._handle_record_stream, "handle_record_stream"),
            (npu_trace.register_callback_for_npu_erase_stream, handler._handle_erase_stream, "handle_erase_stream"),
        ):
            register(callback, name)
        return True

    def __del__(self):
        try:
            if self.dispatch:
                self.dispatch.__exit__(None, None, None)
        except Exception:
            pass

    def clear_debug_env(self):
        if self.kernel_path_manager:
            self.kernel_path_manager.clear_debug_env()


def enable_npu_sanitizer():
    npu_sanitizer.enable()


npu_sanitizer = NPUSanitizer()

atexit.register(npu_sanitizer.clear_debug_env)
