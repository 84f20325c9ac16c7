"""Running ``npusim-inspect`` (csrc/tools) and reading its JSON.

Each call is a subprocess with a timeout: a check that crashes or hangs on a hostile
installation (a FIFO where a version file should be, a corrupt ELF file) shows up as a failed
check, never as a crashed or hung doctor.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any, Sequence

from npusim_tools import NativeToolMissing, native_program

__all__ = ["inspect", "InspectError"]

DEFAULT_TIMEOUT_S = 60.0


class InspectError(RuntimeError):
    pass


def inspect(arguments: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> Any:
    """Runs ``npusim-inspect ARGUMENTS`` and returns its parsed JSON; raises InspectError."""
    try:
        command = [native_program("npusim-inspect"), *arguments]
    except NativeToolMissing as error:
        raise InspectError(str(error)) from None
    try:
        done = subprocess.run(command, capture_output=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise InspectError(f"npusim-inspect {arguments[0]} did not finish within {timeout:.0f} s") from None
    except OSError as error:
        raise InspectError(f"cannot run npusim-inspect: {error}") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
        raise InspectError(f"npusim-inspect {arguments[0]} failed: {detail}")
    try:
        return json.loads(done.stdout.decode("utf-8", "replace"))
    except ValueError as error:
        raise InspectError(f"npusim-inspect {arguments[0]} printed invalid JSON: {error}") from None
