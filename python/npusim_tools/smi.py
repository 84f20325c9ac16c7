"""Starting ``npu-smi``: the simulated one, or the real driver's when there is one.

``npusim smi ARGS`` always runs npusim's ``npu-smi`` (the native program in
``npusim_tools/bin``). The ``npu-smi`` console script that the wheel installs first looks for a
real driver's ``npu-smi`` (another ``npu-smi`` on ``PATH``, or the driver's usual locations) and
runs that one instead, so installing npusim on an Ascend server never changes what ``npu-smi``
shows there. ``NPUSIM_SMI=1`` makes the console script use the simulated one anyway.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

from npusim_tools import NativeToolMissing, native_program

__all__ = ["run_simulated", "console_main", "find_real_npu_smi"]

# Where the Ascend driver installs npu-smi, and where containers mount it (contract §5.3).
DRIVER_LOCATIONS = ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi", "/usr/local/Ascend/driver/tools/npu-smi")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _is_npusim_launcher(path: str) -> bool:
    """A console script of npusim (any environment's): a Python file naming npusim_tools."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return head.startswith(b"#!") and b"npusim_tools" in head


def find_real_npu_smi(path_variable: str | None = None, driver_locations: Sequence[str] = DRIVER_LOCATIONS) -> str | None:
    """A real driver's npu-smi: the first executable ``npu-smi`` on PATH or at the driver's
    locations that is neither this launcher nor npusim's native program."""
    ours = []
    try:
        ours.append(native_program("npu-smi"))
    except NativeToolMissing:
        pass
    if sys.argv and sys.argv[0]:
        ours.append(sys.argv[0])
    search = (path_variable if path_variable is not None else os.environ.get("PATH", "")).split(os.pathsep)
    candidates = [os.path.join(d or ".", "npu-smi") for d in search] + list(driver_locations)
    for candidate in candidates:
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        if any(_same_file(candidate, mine) for mine in ours) or _is_npusim_launcher(candidate):
            continue
        return candidate
    return None


def run_simulated(arguments: Sequence[str]) -> int:
    """Replaces this process with npusim's npu-smi (returns only on failure)."""
    try:
        program = native_program("npu-smi")
    except NativeToolMissing as error:
        print(f"npusim smi: {error}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, [program, *arguments])
    return 1  # not reached


def console_main(arguments: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if arguments is None else arguments)
    if os.environ.get("NPUSIM_SMI") != "1":
        real = find_real_npu_smi()
        if real is not None:
            sys.stdout.flush()
            os.execv(real, [real, *arguments])
    return run_simulated(arguments)
