"""What the native runtime says about this process, asked without starting it.

The error-code suffix (:mod:`npusim._error_code`) names the current device only when the
runtime is up, and the device module's lazy initialization (:mod:`npusim.npu._lazy`) refuses to
start in a forked child of an initialized process; both ask here, below either of them.
"""

from __future__ import annotations

from npusim import _C

__all__ = ["in_bad_fork", "runtime_initialized", "current_device_if_initialized"]


def in_bad_fork() -> bool:
    """Whether this process is a child forked from one whose runtime was up (PyTorch's device
    fork flag, or the runtime's own pid check for C++ code that started it directly)."""
    return bool(_C._is_in_bad_fork()) or bool(_C._runtime_in_forked_child())


def runtime_initialized() -> bool:
    """Whether the C++ runtime is up in this process, also when C++ code started it without
    going through ``torch.npu``'s lazy initialization."""
    return bool(_C._is_initialized()) and not in_bad_fork()


def current_device_if_initialized() -> int:
    """The current NPU of this thread, or -1 when the runtime is not up (never starts it)."""
    if not runtime_initialized():
        return -1
    return int(_C._get_device())
