"""The ``npusim`` and ``npu-smi`` console scripts.

``npusim doctor``, ``npusim collect-env``, ``npusim smi`` and ``npusim cann-home`` run from here
without importing npusim (which imports torch and refuses to load next to a real torch_npu or a
CUDA torch: the very installations the doctor must diagnose; :mod:`npusim_tools.commands` runs
them). Every other subcommand goes to :func:`npusim.cli.main`.
"""

from __future__ import annotations

import sys
from typing import Sequence

from npusim_tools.commands import TOOL_COMMANDS, run_tool_command

__all__ = ["main", "npu_smi_main", "TOOL_COMMANDS", "run_tool_command"]


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] in TOOL_COMMANDS:
        return run_tool_command(arguments[0], arguments[1:])
    from npusim.cli import main as npusim_main

    return npusim_main(arguments)


def npu_smi_main() -> int:
    from npusim_tools.smi import console_main

    return console_main()


if __name__ == "__main__":
    sys.exit(main())
