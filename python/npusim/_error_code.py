"""The torch_npu error-code suffix for errors raised on the Python side.

torch_npu appends a line to the messages of its exceptions (contract §6.5)::

    \\n[ERROR] %Y-%m-%d-%H:%M:%S (PID:<pid>, Device:<device or -1>, RankID:<rank or -1>) ERR<mm><ccc> <MODULE> <text>

Errors raised by the C++ backend already carry it; this module builds the same suffix for the
few errors that the Python layer raises itself (the accelerator conflict on import, for example).
"""

from __future__ import annotations

import enum
import os
import sys
import time

__all__ = [
    "SubModule",
    "ErrCode",
    "error_suffix",
    "pta_error",
    "ops_error",
    "dist_error",
    "graph_error",
    "prof_error",
    "is_interactive_session",
    "register_current_device_query",
]


class SubModule(enum.Enum):
    """The module part (``mm``) of an error code."""

    PTA = 0
    OPS = 1
    DIST = 2
    GRAPH = 3
    PROF = 4
    UNKNOWN = 99


class ErrCode(enum.Enum):
    """The error part (``ccc``) of an error code and its text."""

    SUCCESS = (0, "success")
    PARAM = (1, "invalid parameter")
    TYPE = (2, "invalid type")
    VALUE = (3, "invalid value")
    PTR = (4, "invalid pointer")
    INTERNAL = (5, "internal error")
    MEMORY = (6, "memory error")
    NOT_SUPPORT = (7, "feature not supported")
    NOT_FOUND = (8, "resource not found")
    UNAVAIL = (9, "resource unavailable")
    SYSCALL = (10, "system call failed")
    TIMEOUT = (11, "timeout error")
    PERMISSION = (12, "permission error")
    ACL = (100, "call acl api failed")
    HCCL = (200, "call hccl api failed")
    GE = (300, "call ge api failed")
    EXCEPT = (999, "application exception")

    @property
    def code(self) -> int:
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]

    @property
    def msg(self) -> str:  # torch_npu's name for the text
        return self.value[1]


# Who answers "the current NPU of this thread, or -1 while the runtime is not up" (never starting
# it): the device module's lazy initialization (npusim.npu._lazy) registers its query when it
# loads, so that this module, below it, needs nothing of it. Until then the suffix says -1.
_current_device_query = None


def register_current_device_query(query) -> None:
    """Set the function that names the current device in the suffix (``npusim.npu._lazy`` calls it)."""
    global _current_device_query
    _current_device_query = query


def _current_device() -> int:
    """The current NPU of this thread, or -1 when the runtime is not up (never initializes it)."""
    query = _current_device_query
    if query is None:
        return -1
    try:
        return int(query())
    except Exception:
        return -1


def _rank() -> int:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        pass
    return -1


def is_interactive_session() -> bool:
    """Whether Python runs interactively (REPL, ``python -i``, IPython or Jupyter), where
    torch_npu leaves the suffix out."""
    if hasattr(sys, "ps1") or sys.flags.interactive:
        return True
    import builtins

    if hasattr(builtins, "__IPYTHON__"):
        return True
    return "ipykernel" in sys.modules


def _suffix_is_shown() -> bool:
    # torch_npu also moves the suffix to the plog when TORCH_NPU_COMPACT_ERROR_OUTPUT=1.
    if is_interactive_session():
        return False
    return os.environ.get("TORCH_NPU_COMPACT_ERROR_OUTPUT", "0") != "1"


def error_suffix(submodule: SubModule, error: ErrCode) -> str:
    """The suffix line for ``error`` in ``submodule`` (empty where torch_npu omits it)."""
    if not _suffix_is_shown():
        return ""
    return "\n[ERROR] {time} (PID:{pid}, Device:{device}, RankID:{rank}) ERR{mm:02d}{ccc:03d} {module} {text}".format(
        time=time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime()),
        pid=os.getpid(),
        device=_current_device(),
        rank=_rank(),
        mm=submodule.value,
        ccc=error.code,
        module=submodule.name,
        text=error.text,
    )


def pta_error(error: ErrCode) -> str:
    return error_suffix(SubModule.PTA, error)


def ops_error(error: ErrCode) -> str:
    return error_suffix(SubModule.OPS, error)


def dist_error(error: ErrCode) -> str:
    return error_suffix(SubModule.DIST, error)


def graph_error(error: ErrCode) -> str:
    return error_suffix(SubModule.GRAPH, error)


def prof_error(error: ErrCode) -> str:
    return error_suffix(SubModule.PROF, error)


class _NPUExceptionHandler:
    """torch_npu's ``_except_handler``: after ``torch_npu.npu.stop_device`` an uncaught exception
    is reported as ``FORCE STOP.`` (the device's tasks were aborted; whatever failed after that
    is a consequence), until ``restart_device`` clears the flag. npusim installs the hook when a
    device is first stopped, so that no other run's uncaught exceptions pass through it."""

    def __init__(self) -> None:
        self.exception = None
        self.force_stop_flag = False
        self._origin_excepthook = None

    def set_force_stop_exception(self, flag: bool) -> None:
        self.force_stop_flag = bool(flag)
        if self.force_stop_flag:
            self.patch_excepthook()

    def patch_excepthook(self) -> None:
        if self._origin_excepthook is None:
            self._origin_excepthook = sys.excepthook
            sys.excepthook = self._excepthook

    def _excepthook(self, exc_type, exc, *args) -> None:
        if self.force_stop_flag:
            exc_type = RuntimeError
            exc = RuntimeError("FORCE STOP." + pta_error(ErrCode.ACL))
        self.exception = str(exc)
        self._origin_excepthook(exc_type, exc, *args)


_except_handler = _NPUExceptionHandler()
