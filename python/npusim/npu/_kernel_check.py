"""``torch.npu._kernel_check``: the kernel mode of torch_npu's sanitizer.

With ``ASCEND_OPP_DEBUG_PATH`` naming a folder of debug kernels, the sanitizer makes a private
copy of the operator package (``$ASCEND_OPP_PATH``) in ``./opp_debug_path`` whose AI Core kernel
folder links to the debug kernels, points ``ASCEND_OPP_PATH`` at it, makes launches blocking
(``ASCEND_LAUNCH_BLOCKING=1``) and prints the name and Python stack of every operator it runs.
The copy is made and removed under a file lock (``./opp_debug.lock``), so that several processes
of a job share one. npusim runs its own kernels whatever the package holds; the printed
operators are the kernels it launches.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import traceback
from typing import Callable

import npusim.npu._npu_trace as npu_trace
from npusim.npu._console_log import _print_error_log, _print_info_log, _print_warn_log

__all__: list[str] = []

# Where a package keeps its AI Core kernels.
_KERNEL_FOLDER = "built-in/op_impl/ai_core/tbe/kernel"


class EventHandler:
    """Prints each operator as it starts, and its Python stack once it has run."""

    def _handle_acl_start_execution(self, acl_name: str):
        npu_trace.print_check_msg(f"====== Start acl operator {acl_name}")

    def _handle_acl_finish_execution(self, acl_name: str):
        stack = traceback.StackSummary.extract(traceback.walk_stack(None), lookup_lines=False)
        stack.reverse()  # walk_stack goes from the innermost frame outwards
        npu_trace.print_check_msg(f"====== {acl_name} python stack info:\n{''.join(stack.format())}")


class KernelPathManager:
    """The private operator package of the kernel check (see the module docstring)."""

    def __init__(self):
        self.folder_permission = 0o750
        self.ascend_opp_path = os.getenv("ASCEND_OPP_PATH")
        self.opp_debug_path = os.path.join(os.getcwd(), "opp_debug_path")
        self.opp_debug_kernel_path = os.getenv("ASCEND_OPP_DEBUG_PATH")
        self.func_with_lock(self.make_opp_debug_path)
        os.environ["ASCEND_LAUNCH_BLOCKING"] = "1"
        os.environ["ASCEND_OPP_PATH"] = self.opp_debug_path

    def func_with_lock(self, func: Callable):
        """Runs ``func`` holding ``./opp_debug.lock``; another process holding it wins."""
        lock_file = os.path.join(os.getcwd(), "opp_debug.lock")
        with os.fdopen(os.open(lock_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode=0o600), "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                func()
            except IOError:
                _print_warn_log(f"Permission denied to execute {func}")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def make_opp_debug_path(self):
        if not os.path.exists(self.ascend_opp_path):
            _print_error_log("ASCEND_OPP_PATH is not exists.")
            return
        if not os.path.exists(self.opp_debug_kernel_path):
            _print_error_log("ASCEND_OPP_DEBUG_PATH is not exists.")
            return
        debug_kernels = os.path.join(self.opp_debug_kernel_path, _KERNEL_FOLDER)
        if not os.path.exists(debug_kernels):
            _print_warn_log("ASCEND_OPP_DEBUG_PATH is not valid kernel path.")
            return
        kernel_path = os.path.join(self.opp_debug_path, _KERNEL_FOLDER)
        if os.path.exists(kernel_path) and os.path.islink(kernel_path):
            os.unlink(kernel_path)
        if os.path.exists(self.opp_debug_path):
            shutil.rmtree(self.opp_debug_path)
        shutil.copytree(self.ascend_opp_path, self.opp_debug_path)
        os.chmod(self.opp_debug_path, self.folder_permission)
        if os.path.exists(kernel_path):
            if os.path.islink(kernel_path):
                os.unlink(kernel_path)
            else:
                shutil.rmtree(kernel_path)
        os.symlink(debug_kernels, kernel_path)

    def remove_debug_files(self):
        os.unlink(os.path.join(self.opp_debug_path, _KERNEL_FOLDER))
        shutil.rmtree(self.opp_debug_path)

    def clear_debug_env(self):
        if not os.path.exists(self.opp_debug_path):
            return
        self.func_with_lock(self.remove_debug_files)
        try:
            os.remove(os.path.join(os.getcwd(), "opp_debug.lock"))
        except FileNotFoundError as error:
            _print_info_log(error)
