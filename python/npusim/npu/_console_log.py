"""torch_npu's console log lines: ``<YYYY-mm-dd HH:MM:SS>(<pid>)-[<LEVEL>] <message>`` on stdout,
which its tools print (the sanitizer, the kernel check); ``torch_npu.utils.utils`` exports them."""

from __future__ import annotations

import os
import time

__all__: list[str] = []


def _print_log(level: str, message: str) -> None:
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(time.time())))
    print(f"{now}({os.getpid()})-[{level}] {message}")


def _print_info_log(message: str) -> None:
    _print_log("INFO", message)


def _print_warn_log(message: str) -> None:
    _print_log("WARNING", message)


def _print_error_log(message: str) -> None:
    _print_log("ERROR", message)
