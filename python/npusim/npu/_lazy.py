"""Lazy initialization of the simulated NPU runtime, as ``torch.cuda`` does it.

Importing npusim (or ``import torch`` with autoload) never starts the runtime. The first call
that needs a device runs :func:`_lazy_init`, which calls ``npusim._C._init()`` (reads the
configuration, registers the fork handler) and then the calls queued by :func:`_lazy_call`
(for example seeds set before initialization). A child forked from an initialized process is in
a "bad fork": initializing there raises the torch_npu error.
"""

from __future__ import annotations

import os
import threading
import traceback

from npusim import _C
from npusim._error_code import ErrCode, pta_error, register_current_device_query

__all__ = ["init", "is_initialized"]

_initialized = False
_original_pid: int | None = None
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls: list = []  # (callable, stack) pairs run once initialization happens


class DeferredNpuCallError(Exception):
    """A call queued by :func:`_lazy_call` failed when the runtime initialized."""


def _is_in_bad_fork() -> bool:
    return bool(_C._is_in_bad_fork()) or bool(_C._runtime_in_forked_child())


def is_initialized() -> bool:
    r"""Return whether PyTorch's NPU state has been initialized."""
    return _initialized and not _is_in_bad_fork()


def _runtime_initialized() -> bool:
    """Whether the C++ runtime is up in this process (also when C++ code started it without
    going through :func:`_lazy_init`)."""
    # npusim._C._is_initialized is part of the contract with the backend; until the extension
    # provides it, the Python flag answers (C++ factories call _lazy_init, so it is set then).
    probe = getattr(_C, "_is_initialized", None)
    if probe is not None:
        return bool(probe()) and not _is_in_bad_fork()
    return is_initialized()


def _current_device_if_initialized() -> int:
    """The current NPU for the error-code suffix, -1 while the runtime is not up (never starts it)."""
    if not _runtime_initialized():
        return -1
    return int(_C._get_device())


register_current_device_query(_current_device_if_initialized)


# Registered by the modules above this one (npusim.npu's package module): checks that run before the
# runtime starts (they may refuse to start it) and steps that run once it has started. The runtime's
# start-up configuration reads the device module's version queries, which import this module.
_before_runtime_start: list = []
_after_runtime_start: list = []


def register_initialization_steps(before_start=None, after_start=None) -> None:
    """Adds a check run before the runtime starts and/or a step run right after it started."""
    if before_start is not None:
        _before_runtime_start.append(before_start)
    if after_start is not None:
        _after_runtime_start.append(after_start)


def _lazy_call(callable, **kwargs):
    """Run ``callable`` now if the runtime is up, else when it initializes."""
    if is_initialized():
        callable()
    else:
        # Keep the formatted stack, not the frames: frames would form reference cycles.
        _queued_calls.append((callable, traceback.format_stack()))


def init() -> None:
    r"""Initialize PyTorch's NPU state.

    Ordinary programs never need it: every NPU function initializes on demand. Does nothing
    if the state is already initialized.
    """
    _lazy_init()


def _lazy_init() -> None:
    global _initialized, _original_pid
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        # Checked again under the lock: another thread may have finished meanwhile.
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize NPU in forked subprocess. To use NPU with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        for check in _before_runtime_start:
            check()  # e.g. TORCH_ACL_INIT_CONFIG_PATH, before aclInit as torch_npu
        _C._init()
        _original_pid = os.getpid()
        # Queued calls may call _lazy_init() again; let this thread through, nobody else.
        _tls.is_initializing = True
        try:
            # Each queued call runs once: a failing one (a bad set_rng_state argument) is
            # reported here and dropped, so that it does not fail every later NPU call.
            calls = list(_queued_calls)
            _queued_calls.clear()
            failure = None
            for queued_call, orig_traceback in calls:
                try:
                    queued_call()
                except Exception as e:
                    if failure is None:
                        msg = (
                            f"NPU call failed lazily at initialization with error: {str(e)}\n\n"
                            f"NPU call was originally invoked at:\n\n{''.join(orig_traceback)}"
                        )
                        failure = (DeferredNpuCallError(msg + pta_error(ErrCode.INTERNAL)), e)
            for step in _after_runtime_start:
                step()  # e.g. ACL_OP_INIT_MODE, read once at start-up
            if failure is not None:
                _initialized = True
                raise failure[0] from failure[1]
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True


def _after_fork_in_child() -> None:
    # The C++ fork handler marks the child as a bad fork; the Python flag follows it so that
    # is_initialized() answers False there and _lazy_init() raises.
    global _initialized
    if _initialized and _original_pid != os.getpid():
        _initialized = False


os.register_at_fork(after_in_child=_after_fork_in_child)
