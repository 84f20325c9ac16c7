"""The subcommands served by npusim_tools: ``doctor``, ``collect-env``, ``smi`` and ``cann-home``.

Both commands that offer them dispatch here: the ``npusim`` console script
(:mod:`npusim_tools.launcher`, without importing npusim) and ``python -m npusim``
(:mod:`npusim.cli`). Each tool is imported only when it runs.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["TOOL_COMMANDS", "run_tool_command"]

TOOL_COMMANDS = ("doctor", "collect-env", "smi", "cann-home")


def run_tool_command(command: str, arguments: Sequence[str]) -> int:
    if command == "doctor":
        from npusim_tools.doctor.command import main as doctor_main

        return doctor_main(arguments)
    if command == "collect-env":
        from npusim_tools.collect_env import main as collect_env_main

        return collect_env_main(arguments)
    if command == "smi":
        from npusim_tools.smi import run_simulated

        return run_simulated(arguments)
    if command == "cann-home":
        from npusim_tools.cann_home import main as cann_home_main

        return cann_home_main(arguments)
    raise ValueError(command)
