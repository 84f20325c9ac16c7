"""Starting ``npu-smi``: the simulated one, or the real driver's when there is one.

``npusim smi ARGS`` always runs npusim's ``npu-smi`` (the native program in
``npusim_tools/bin``). The ``npu-smi`` console script that the wheel installs first looks for a
real driver's ``npu-smi`` (another ``npu-smi`` on ``PATH``, or the driver's usual locations) and
runs that one instead, so installing npusim on an Ascend server never changes what ``npu-smi``
shows there. ``NPUSIM_SMI=1`` makes the console script use the simulated one anyway.

A real driver's ``npu-smi`` is recognised by what it is: an ELF executable that is not npusim's
own program. Launcher shims (pyenv, conda, pipx, virtualenv wrappers) are scripts that run the
console script again; taking one for the driver's program would exec in a circle. As a second
guard, the console script marks the environment before it execs another program, and a console
script started with that mark runs the simulated ``npu-smi`` instead of searching again.
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


# Set across the exec of another npu-smi: seeing it on entry means that program led back here.
HOP_MARKER = "NPUSIM_SMI_HOPPED"
# A string that npusim's native npu-smi carries (the variable it reads for its status files).
_NPUSIM_PROGRAM_SIGNATURE = b"NPUSIM_RUNTIME_DIR"
_ELF_MAGIC = b"\x7fELF"


def _is_driver_program(path: str) -> bool:
    """An ELF executable that is not npusim's own npu-smi (a copy of it anywhere included)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != _ELF_MAGIC:
                return False  # a script: a launcher shim or npusim's console script
            return _NPUSIM_PROGRAM_SIGNATURE not in handle.read()
    except OSError:
        return False


def find_real_npu_smi(path_variable: str | None = None, driver_locations: Sequence[str] = DRIVER_LOCATIONS) -> str | None:
    """A real driver's npu-smi: the first executable ``npu-smi`` on PATH or at the driver's
    locations that is an ELF program and not npusim's native one."""
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
        if any(_same_file(candidate, mine) for mine in ours) or not _is_driver_program(candidate):
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
    if os.environ.get("NPUSIM_SMI") != "1" and os.environ.get(HOP_MARKER) != "1":
        real = find_real_npu_smi()
        if real is not None:
            sys.stdout.flush()
            os.execve(real, [real, *arguments], {**os.environ, HOP_MARKER: "1"})
    return run_simulated(arguments)
